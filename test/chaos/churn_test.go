package chaos

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/pkg/localsources"
	"github.com/gardener-knative/gardener-knative/sources"
)

// Owners created and soon deleted, under duplicates, reordering and two replicas of every function
// (issue 35): ManagedResources of many objects each (their objects removed by hand in the shoot
// and their events redelivered), Extensions, all deleted a few milliseconds after they were made.
// After the faults and a sweep period, nothing of theirs is left in any cluster: the shoot holds no
// object of a deleted ManagedResource, the garden no ControllerRegistration or ControllerDeployment
// of a deleted Extension.
func TestOwnersCreatedAndSoonDeletedLeaveNothing(t *testing.T) {
	if os.Getenv("CHAOS") == "" {
		t.Skip("the whole landscape under faults takes minutes: `make chaos` runs it (CHAOS=1)")
	}
	const (
		rounds  = 12
		objects = 30
	)
	ctx := context.Background()
	dir := t.TempDir()
	logs, err := os.Create(filepath.Join(dir, "functions.log"))
	require.NoError(t, err)
	defer logs.Close()
	if binDir == "" {
		binDir = t.TempDir()
	}
	land, err := landscape.Start(ctx, landscape.Options{
		Dir: dir, BinDir: binDir, Env: settings(), FunctionOutput: func(string) io.Writer { return logs },
		Replicas: 2, Faults: localsources.Faults{MaxDuplicates: 3, Reorder: time.Second}, FaultSeed: time.Now().UnixNano(),
	})
	require.NoError(t, err)
	defer func() { _ = land.Stop() }()
	schedules := map[string]string{}
	for _, fn := range functions.All {
		for _, sw := range fn.Sweeps {
			schedules[sources.PingSourceName(fn.Name, sw.Name)] = sweepSchedule
		}
	}
	require.NoError(t, land.StartSources(ctx, schedules))
	seed, shoot := land.Env.Client, land.Shoot.Client
	ns := string(landscape.Tenant)
	targetNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "churn"}}
	require.NoError(t, client.IgnoreAlreadyExists(shoot.Create(ctx, targetNS)))

	for round := range rounds {
		name := fmt.Sprintf("churn-%d", round)
		var manifest string
		for i := range objects {
			manifest += fmt.Sprintf("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\n  namespace: churn\ndata:\n  round: %q\n", name, i, name)
		}
		require.NoError(t, seed.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"objects.yaml": []byte(manifest)}}))
		mr := &resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: name}}}}
		require.NoError(t, seed.Create(ctx, mr))
		// Applied, then its objects removed by hand (their deletions are events), then the
		// ManagedResource touched (its update is an event) and deleted a few milliseconds later.
		require.Eventually(t, func() bool {
			return shoot.Get(ctx, client.ObjectKey{Namespace: "churn", Name: fmt.Sprintf("%s-%d", name, objects-1)}, &corev1.ConfigMap{}) == nil
		}, 30*time.Second, 100*time.Millisecond, "round %d applied", round)
		for i := range objects {
			_ = shoot.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "churn", Name: fmt.Sprintf("%s-%d", name, i)}})
		}
		patch := client.MergeFrom(mr.DeepCopy())
		metav1.SetMetaDataAnnotation(&mr.ObjectMeta, "churn", "touched")
		require.NoError(t, seed.Patch(ctx, mr, patch))
		time.Sleep(time.Duration(round%4) * 5 * time.Millisecond)
		require.NoError(t, seed.Delete(ctx, mr))

		ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name}}
		ext.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: name}}
		ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
			DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{Ref: ptr.To("registry.example.com/churn:v1")}}},
		}}
		require.NoError(t, seed.Create(ctx, ext))
		time.Sleep(time.Duration(round%4) * 5 * time.Millisecond)
		require.NoError(t, seed.Delete(ctx, ext))
	}

	// The faults end; after the sweeps, every owner is gone and nothing of theirs is left.
	land.Sources().Relay.Heal()
	land.Sources().Relay.Wait()
	leftovers := func() []string {
		var left []string
		for round := range rounds {
			name := fmt.Sprintf("churn-%d", round)
			for _, obj := range []client.Object{&resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name}},
				&gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}, &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}} {
				if err := seed.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
					left = append(left, fmt.Sprintf("%T %s (%v)", obj, name, err))
				}
			}
		}
		cms := &corev1.ConfigMapList{}
		if err := shoot.List(ctx, cms, client.InNamespace("churn")); err != nil {
			return append(left, err.Error())
		}
		for _, cm := range cms.Items {
			left = append(left, "shoot ConfigMap churn/"+cm.Name)
		}
		return left
	}
	var left []string
	deadline := time.Now().Add(90 * time.Second)
	for left = leftovers(); len(left) > 0 && time.Now().Before(deadline); left = leftovers() {
		time.Sleep(time.Second)
	}
	stats := land.Sources().Relay.Stats()
	t.Logf("%d rounds of %d objects: %d events, %d duplicates, %d held back; %d owner-guard undos", rounds, objects, stats.Received, stats.Duplicates, stats.Held, ownerGuardUndos(t, land))
	assert.Empty(t, left, "what deleted owners left in the garden, seed and shoot")
}

// ownerGuardUndos sums the functions' owner-lost outcomes, from their /metrics.
func ownerGuardUndos(t *testing.T, land *landscape.Landscape) int {
	t.Helper()
	total := 0
	for _, url := range land.URLs {
		total += int(metricSum(url, "gardener_knative_owner_guard_total", `outcome="owner-lost"`))
	}
	return total
}

// metricSum sums, over both replicas behind url (the proxy takes turns), the samples of the
// counter name whose labels contain label.
func metricSum(url, name, label string) float64 {
	sum := 0.0
	for range 2 {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
				if v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64); err == nil {
					sum += v
				}
			}
		}
	}
	return sum
}
