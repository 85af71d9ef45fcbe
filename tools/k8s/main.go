// Command k8s is the Kubernetes control plane, the node agents and kubectl in one binary,
// so the six programs share one link step. It dispatches on the name it is invoked as
// (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl;
// install symlinks with those names) or, failing that, on its first argument:
// `k8s kubectl get pods`.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata" // CronJob time zones, as in the upstream kube-apiserver and controller-manager mains

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // build-info metric, as upstream
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

var commands = map[string]func() int{
	"kube-apiserver":          func() int { return cli.Run(apiserver.NewAPIServerCommand()) },
	"kube-controller-manager": func() int { return cli.Run(controllermanager.NewControllerManagerCommand()) },
	"kube-scheduler":          func() int { return cli.Run(scheduler.NewSchedulerCommand()) },
	"kubelet":                 func() int { return cli.Run(kubelet.NewKubeletCommand()) },
	"kube-proxy":              func() int { return cli.Run(proxy.NewProxyCommand()) },
	"kubectl":                 runKubectl,
}

// runKubectl mirrors upstream cmd/kubectl: errors are printed by kubectl's own handler,
// which also picks the exit code.
func runKubectl() int {
	if err := cli.RunNoErrOutput(kubectlcmd.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err)
	}
	return 0
}

func main() {
	if run, ok := commands[filepath.Base(os.Args[0])]; ok {
		os.Exit(run())
	}
	if len(os.Args) > 1 {
		if run, ok := commands[os.Args[1]]; ok {
			// Each command parses os.Args[1:] itself; drop the dispatch word.
			os.Args = append([]string{os.Args[1]}, os.Args[2:]...)
			os.Exit(run())
		}
	}
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: %s {%s} [flags]\n", filepath.Base(os.Args[0]), strings.Join(names, "|"))
	os.Exit(2)
}
