// Command pause is the sandbox process of every pod on the local node (the image behind the
// CRI's sandbox_image): it holds the pod's namespaces open, reaps the zombies that end up
// with it as PID 1, and exits at once on SIGINT or SIGTERM so a pod stops without waiting.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
