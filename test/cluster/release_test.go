package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/landscape"
)

// What runs is the release (hack/cluster.sh release and deploy: make release, then kubectl apply
// -f of its file and the documented Secret, docs/deployment.md "Releases"): every Knative Service
// of ours and every pod it runs carries the release's version, its images are the release's (tag
// and digest, under readable names, in the registry the release pushed to), the binaries say the
// version on their first log line, and the seed part's garden access (the Secret garden-access)
// holds the seed name the suite's landscape uses.
func TestReleaseInstalled(t *testing.T) {
	ctx := context.Background()
	version := os.Getenv("CLUSTER_RELEASE_VERSION")
	require.NotEmpty(t, version, "CLUSTER_RELEASE_VERSION (hack/cluster.sh env)")
	// ko's -B names an image by its import path's last element; without it a hash follows the name.
	image := regexp.MustCompile(`^` + regexp.QuoteMeta(os.Getenv("REGISTRY")+"/gardener-knative/") + `[a-z0-9-]+:` + regexp.QuoteMeta(version) + `@sha256:[0-9a-f]{64}$`)
	koHashedName := regexp.MustCompile(`-[0-9a-f]{32}@`)

	services := ourServices(t)
	for _, s := range services {
		require.Equal(t, version, s.GetLabels()[configgen.VersionLabel], "Knative Service %s", s.GetName())
		podLabels, _, _ := unstructured.NestedStringMap(s.Object, "spec", "template", "metadata", "labels")
		require.Equal(t, version, podLabels[configgen.VersionLabel], "Knative Service %s's pod template", s.GetName())
		containers, _, _ := unstructured.NestedSlice(s.Object, "spec", "template", "spec", "containers")
		for _, ct := range containers {
			ref, _ := ct.(map[string]any)["image"].(string)
			require.Regexp(t, image, ref, "Knative Service %s", s.GetName())
			require.NotRegexp(t, koHashedName, ref, "Knative Service %s: an image name with ko's hash", s.GetName())
		}
	}

	pods := 0
	for _, ns := range ourNamespaces {
		list := &corev1.PodList{}
		require.NoError(t, c.List(ctx, list, client.InNamespace(ns), client.HasLabels{"serving.knative.dev/service"}))
		require.NotEmpty(t, list.Items, "no pod of ours in %s", ns)
		pods += len(list.Items)
		for _, p := range list.Items {
			require.Equal(t, version, p.Labels[configgen.VersionLabel], "pod %s/%s", ns, p.Name)
		}
	}

	webhookPods := readyPodsOf(t, "grm-webhooks")
	require.NotEmpty(t, webhookPods)
	// The kubelet's log file of the container (CRI format: time, stream, tag, line), read on the
	// host: kube-apiserver reaches no kubelet here (its egress proxy resolves cluster names only).
	p := webhookPods[0]
	logs, err := os.Open(filepath.Join(os.Getenv("CLUSTER_DIR"), "pod-logs", p.Namespace+"_"+p.Name+"_"+string(p.UID), "webhooks", "0.log"))
	require.NoError(t, err)
	defer logs.Close()
	var started map[string]any
	for lines := bufio.NewScanner(logs); lines.Scan() && started == nil; {
		var line map[string]any
		fields := strings.SplitN(lines.Text(), " ", 4)
		if len(fields) == 4 && json.Unmarshal([]byte(fields[3]), &line) == nil && line["msg"] == "starting" {
			started = line
		}
	}
	require.NotNil(t, started, "grm-webhooks logged no starting line")
	require.Equal(t, version, started["version"], "the starting line of %s", webhookPods[0].Name)

	secret := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: function.GardenAccessSecret}, secret))
	require.Equal(t, landscape.SeedName, string(secret.Data["seedName"]), "hack/cluster.sh deploy's seed name")
	t.Logf("%d Knative Services and %d pods of release %s, images by digest under readable names", len(services), pods, version)
}
