// Command netpol is the one-node cluster's NetworkPolicy enforcer (docs/cluster.md): the
// controller of sig-network's kube-network-policies, run as a host process beside kube-proxy.
//
// kube-network-policies' own command reads only an in-cluster configuration (it runs as a
// DaemonSet); this one takes the cluster's kubeconfig, as the cluster's kube-proxy does. The
// controller is upstream's, unchanged: it watches NetworkPolicies, Namespaces and Pods and gives a
// verdict on every packet queued to its nfqueue. Its own nftables rules need the kernel's
// nft_queue (CONFIG_NFT_QUEUE), which the machine's kernel lacks, so they fail to load (logged
// as "syncing nftables rules"); hack/cluster.sh queues the first packet of every new connection
// forwarded to or from a pod with an iptables NFQUEUE rule instead (xtables' target, which the
// kernel has), to the same queue.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the cluster's kubeconfig")
	node := flag.String("hostname-override", "", "the name of the node whose pods are enforced")
	queue := flag.Int("nfqueue-id", 100, "the nfqueue the packets are queued to")
	metrics := flag.String("metrics-bind-address", "127.0.0.1:9080", "metrics address")
	failOpen := flag.Bool("fail-open", false, "accept a packet the controller cannot parse")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer cancel()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	controller, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces(), factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{
			FailOpen: *failOpen,
			QueueID:  *queue,
			NodeName: *node,
			// Not needed on kernels 6.12+ (this one is newer); DNS is the host's anyway.
			NetfilterBug1766Fix: false,
			// containerd 1.6 (Debian's) has no NRI, so pod addresses come from the API server. Yet
			// NRI stays "enabled": v0.8.0 asks its NRI plugin for every address the pod index lacks
			// (a new pod's, the bridge's) and, with NRI disabled, the plugin is nil and the enforcer
			// crashes on the first such packet, after which --queue-bypass lets everything through.
			// Enabled, the plugin exists, its connection to the missing NRI socket fails once at
			// start (logged as "nri plugin exited"), and its empty map answers "no pod".
			NRIdisabled: false,
		})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	http.Handle("/metrics", promhttp.Handler())
	go func() { klog.Info(http.ListenAndServe(*metrics, nil)) }()
	factory.Start(ctx.Done())
	if err := controller.Run(ctx); err != nil {
		klog.ErrorS(err, "controller ended")
		os.Exit(1)
	}
}
