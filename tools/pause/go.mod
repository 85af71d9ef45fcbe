// The pod sandbox process of the local node's pause image (scripts/install-node-tools).
module github.com/loadtest/tools/pause

go 1.24.0
