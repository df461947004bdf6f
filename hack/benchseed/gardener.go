package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// Gardener's resource managers reach the seed as this user, and their shoot as gardenlet has
// them do, as the shoot's ServiceAccount kube-system/gardener-resource-manager (oursShootUser,
// the same token ours uses): the same identity, so the same priority and fairness at the shoot's
// kube-apiserver.
const gardenerUser = "gardener-resource-manager"

// accessKubeconfig writes a kubeconfig of the shoot that authenticates with the token of the
// tenant's access Secret in the seed namespace ns, as gardenlet's generic token kubeconfig does.
func (r *run) accessKubeconfig(ctx context.Context, ns string, sh *shoot, path string) error {
	secret := &corev1.Secret{}
	if err := r.seed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenant.DefaultAccessSecret}, secret); err != nil {
		return err
	}
	kubeconfig, err := testenv.Kubeconfig("shoot", sh.env.Config, &clientcmdapi.AuthInfo{Token: string(secret.Data["token"])})
	if err != nil {
		return err
	}
	return os.WriteFile(path, kubeconfig, 0o600)
}

// gardenerConfig is a shoot's resource manager's configuration as gardenlet v1.150 writes it
// (pkg/component/gardener/resourcemanager, with the target defaults of
// pkg/component/shared/resourcemanager.go), on loopback: its namespace in the seed, its shoot
// as the target, and the benchmark's sync period for the ManagedResource and health
// controllers (gardenlet's are 1h and 1m). Leader election is off: one replica each, where
// Gardener runs two.
func gardenerConfig(seedKubeconfig, shootKubeconfig, namespace, certDir string, period time.Duration) (*rmv1alpha1.ResourceManagerConfiguration, error) {
	ports, err := benchkit.FreePorts(3)
	if err != nil {
		return nil, err
	}
	cfg := &rmv1alpha1.ResourceManagerConfiguration{
		TypeMeta:               metav1.TypeMeta{APIVersion: rmv1alpha1.SchemeGroupVersion.String(), Kind: "ResourceManagerConfiguration"},
		SourceClientConnection: rmv1alpha1.ClientConnection{Namespaces: []string{namespace}},
		TargetClientConnection: &rmv1alpha1.ClientConnection{},
		Server: rmv1alpha1.ServerConfiguration{
			Webhooks:     rmv1alpha1.HTTPSServer{Server: rmv1alpha1.Server{BindAddress: "127.0.0.1", Port: ports[0]}, TLS: rmv1alpha1.TLSServer{ServerCertDir: certDir}},
			HealthProbes: &rmv1alpha1.Server{BindAddress: "127.0.0.1", Port: ports[1]},
			Metrics:      &rmv1alpha1.Server{BindAddress: "127.0.0.1", Port: ports[2]},
		},
		LogLevel:  "error",
		LogFormat: "json",
		Controllers: rmv1alpha1.ResourceManagerControllerConfiguration{
			GarbageCollector: rmv1alpha1.GarbageCollectorControllerConfig{Enabled: true, SyncPeriod: &metav1.Duration{Duration: 12 * time.Hour}},
			Health:           rmv1alpha1.HealthControllerConfig{ConcurrentSyncs: ptr.To(10), SyncPeriod: &metav1.Duration{Duration: period}},
			ManagedResource: rmv1alpha1.ManagedResourceControllerConfig{
				ConcurrentSyncs: ptr.To(20), SyncPeriod: &metav1.Duration{Duration: period}, AlwaysUpdate: ptr.To(true),
			},
			TokenRequestor:         rmv1alpha1.TokenRequestorControllerConfig{Enabled: true, ConcurrentSyncs: ptr.To(5)},
			NodeCriticalComponents: rmv1alpha1.NodeCriticalComponentsControllerConfig{Enabled: true},
			// gardenlet's defaults for a shoot: its CSR approver (MaxConcurrentCSRApproverWorkers
			// 5, the machines in the shoot's namespace) and its node-agent reconciliation delay
			// (the shoot's OSC sync jitter, 5 minutes unless annotated).
			CSRApprover:                  rmv1alpha1.CSRApproverControllerConfig{Enabled: true, ConcurrentSyncs: ptr.To(5), MachineNamespace: &namespace},
			NodeAgentReconciliationDelay: rmv1alpha1.NodeAgentReconciliationDelayControllerConfig{Enabled: true, MaxDelay: &metav1.Duration{Duration: 5 * time.Minute}},
		},
		Webhooks: rmv1alpha1.ResourceManagerWebhookConfiguration{
			HighAvailabilityConfig: rmv1alpha1.HighAvailabilityConfigWebhookConfig{Enabled: true},
			ProjectedTokenMount:    rmv1alpha1.ProjectedTokenMountWebhookConfig{Enabled: true},
			SystemComponentsConfig: rmv1alpha1.SystemComponentsConfigWebhookConfig{Enabled: true,
				NodeSelector: map[string]string{v1beta1constants.LabelWorkerPoolSystemComponents: "true"}},
		},
	}
	cfg.LeaderElection.LeaderElect = ptr.To(false)
	cfg.SourceClientConnection.Kubeconfig = seedKubeconfig
	cfg.TargetClientConnection.Kubeconfig = shootKubeconfig
	return cfg, nil
}

// portAttempts is how often a resource manager is started whose ports were taken meanwhile.
const portAttempts = 3

// startGardener starts one gardener-resource-manager per shoot, each as gardenlet configures a
// shoot's, and waits until all are ready.
func (r *run) startGardener(ctx context.Context, namespaces []string) ([]*benchkit.Process, error) {
	seedKubeconfig := filepath.Join(r.dir, "gardener-seed-kubeconfig")
	if err := r.seedKubeconfig(gardenerUser, seedKubeconfig); err != nil {
		return nil, err
	}
	serving := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := serving.PrepWithoutInstalling(); err != nil {
		return nil, err
	}
	launch := func(i int, ns string) (*benchkit.Process, string, error) {
		shootKubeconfig := filepath.Join(r.dir, fmt.Sprintf("gardener-shoot-%03d-kubeconfig", i))
		if err := r.accessKubeconfig(ctx, ns, r.shoots.planes[i], shootKubeconfig); err != nil {
			return nil, "", err
		}
		cfg, err := gardenerConfig(seedKubeconfig, shootKubeconfig, ns, serving.LocalServingCertDir, r.opts.period)
		if err != nil {
			return nil, "", err
		}
		data, err := yaml.Marshal(cfg)
		if err != nil {
			return nil, "", err
		}
		path := filepath.Join(r.dir, fmt.Sprintf("gardener-%03d-config.yaml", i))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, "", err
		}
		cmd := exec.Command(r.opts.peer, "--config="+path)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+seedKubeconfig)
		p, err := benchkit.Start(fmt.Sprintf("gardener-resource-manager-%03d", i), cmd, filepath.Join(r.dir, fmt.Sprintf("gardener-%03d.log", i)))
		if err != nil {
			return nil, "", err
		}
		return p, "http://127.0.0.1:" + strconv.Itoa(cfg.Server.HealthProbes.Port) + "/readyz", nil
	}
	var procs []*benchkit.Process
	var readyz []string
	for i, ns := range namespaces {
		p, url, err := launch(i, ns)
		if err != nil {
			return procs, err
		}
		procs = append(procs, p)
		readyz = append(readyz, url)
	}
	for i, ns := range namespaces {
		// A port found free may still be taken before the process binds it (by another
		// process's listener, ports.go): such a start is repeated with other ports.
		for attempt := 1; ; attempt++ {
			err := procs[i].WaitReady(ctx, readyz[i], 3*time.Minute)
			if err == nil {
				break
			}
			// alive reports the exit again after waitReady saw it: the channel is closed then.
			exited := procs[i].Alive() != nil
			if attempt == portAttempts || !exited || !strings.Contains(benchkit.Tail(procs[i].Log), "address already in use") {
				return procs, err
			}
			p, url, err := launch(i, ns)
			if err != nil {
				return procs, err
			}
			procs[i], readyz[i] = p, url
		}
	}
	return procs, nil
}
