package project_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"knative.dev/eventing/pkg/adapter/apiserver"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/clustersource"
	"github.com/gardener-knative/gardener-knative/pkg/controller/project"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/sources"
)

func lastActivity(t *testing.T, p *gardencorev1beta1.Project) *time.Time {
	t.Helper()
	got := current(t, p)
	require.NotNil(t, got)
	return timeOf(got.Status.LastActivityTimestamp)
}

func TestActivity(t *testing.T) {
	// The function runs as its own ServiceAccount with the RBAC it declares.
	h := functiontest.New(t, env, project.Function, functiontest.WithConfig(&project.Config{Settings: gardenerDefaults}), functiontest.AsFunction())
	p := newProject(t, nil)
	ns := *p.Spec.Namespace
	require.NoError(t, testenv.LocalProvider(context.Background(), env.Client))
	shoot := testenv.WorkerlessShoot(ns, "shoot")
	create(t, shoot)
	h.Send("update", shoot) // warm up discovery, so that the counts below are the function's own

	t.Run("a Shoot's create is activity", func(t *testing.T) {
		h.Clock.Step(time.Hour)
		h.ResetRequests()
		h.Send("add", shoot)
		got := lastActivity(t, p)
		if assert.NotNil(t, got) {
			assert.True(t, h.Clock.Now().Truncate(time.Second).Equal(*got), "lastActivityTimestamp %v, now %v", got, h.Clock.Now())
		}
		assert.Equal(t, 2, h.Requests("get"), "the namespace (to find the Project) and the Project")
		assert.Equal(t, 1, h.Requests("patch"), "the Project's status")
	})
	t.Run("a Shoot's deletion is activity", func(t *testing.T) {
		h.Clock.Step(time.Hour)
		h.Send("delete", shoot)
		assert.True(t, h.Clock.Now().Truncate(time.Second).Equal(*lastActivity(t, p)))
	})
	t.Run("a status update of a Shoot whose spec gardenlet observed is none, and costs nothing", func(t *testing.T) {
		before := lastActivity(t, p)
		observed := shoot.DeepCopy()
		observed.Status.ObservedGeneration = observed.Generation
		h.Clock.Step(time.Hour)
		h.ResetRequests()
		h.Send("update", observed)
		assert.Equal(t, before, lastActivity(t, p))
		assert.Zero(t, h.Requests(""))
	})
	t.Run("a change of a Secret a binding references is activity", func(t *testing.T) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "credentials", Namespace: ns, Labels: map[string]string{v1beta1constants.LabelSecretBindingReference: "true"}}}
		create(t, secret)
		h.Clock.Step(time.Hour)
		h.Send("update", secret)
		assert.True(t, h.Clock.Now().Truncate(time.Second).Equal(*lastActivity(t, p)))
	})
	t.Run("a Secret no binding references causes no event at all: the source's selectors exclude it", func(t *testing.T) {
		objs, err := sources.Objects([]*function.Function{project.Function})
		require.NoError(t, err)
		unlabelled, referenced := labels.Set{}, labels.Set{v1beta1constants.LabelCredentialsBindingReference: "true"}
		matched := map[string]int{}
		for _, obj := range objs {
			src, ok := obj.(*sourcesv1.ContainerSource)
			// The project function works on the garden: the garden's source watches its kinds.
			if !ok || src.Name != sources.SourceName(function.Garden) {
				continue
			}
			for _, e := range src.Spec.Template.Spec.Containers[0].Env {
				if e.Name != clustersource.ResourcesConfigEnv && e.Name != clustersource.ReferencesConfigEnv {
					continue
				}
				var cfg apiserver.Config
				require.NoError(t, json.Unmarshal([]byte(e.Value), &cfg))
				for _, r := range cfg.Resources {
					if r.GVR.Resource != "secrets" {
						continue
					}
					assert.Equal(t, sourcesv1.ReferenceMode, cfg.EventMode, "Secrets are watched by reference only")
					require.NotEmpty(t, r.LabelSelector, "Secrets are watched through label selectors")
					sel, err := labels.Parse(r.LabelSelector)
					require.NoError(t, err)
					if sel.Matches(unlabelled) {
						matched["unlabelled"]++
					}
					if sel.Matches(referenced) {
						matched["referenced"]++
					}
				}
			}
		}
		assert.Equal(t, map[string]int{"referenced": 1}, matched)
	})
	t.Run("a Shoot in a namespace of no Project costs one GET", func(t *testing.T) {
		// gardener-apiserver admits no such Shoot; the event is the hint of one (a source's view
		// of a namespace whose Project went meanwhile).
		plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plain-"}}
		create(t, plain)
		elsewhere := testenv.WorkerlessShoot(plain.Name, "shoot")
		elsewhere.Generation = 1 // as the server's answer to its create would say
		h.ResetRequests()
		h.Send("add", elsewhere)
		assert.Equal(t, 1, h.Requests(""))
	})
}

// latestChange is when the API server last recorded a change of obj: the newest time in its
// managedFields.
func latestChange(t *testing.T, obj client.Object) time.Time {
	t.Helper()
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	var latest time.Time
	for _, entry := range obj.GetManagedFields() {
		if entry.Time != nil && entry.Time.After(latest) {
			latest = entry.Time.Time
		}
	}
	return latest
}

func TestActivitySweep(t *testing.T) {
	h := functiontest.New(t, env, project.Function, functiontest.WithConfig(&project.Config{Settings: gardenerDefaults}), functiontest.AsFunction())
	p := newProject(t, nil)
	ns := *p.Spec.Namespace

	t.Run("a Shoot whose events were lost: its latest change is recorded", func(t *testing.T) {
		require.NoError(t, testenv.LocalProvider(context.Background(), env.Client))
		shoot := testenv.WorkerlessShoot(ns, "lost")
		create(t, shoot) // and no event reaches the function
		require.Nil(t, lastActivity(t, p))
		h.Clock.Step(time.Minute) // the function's clock is ahead of the API server's
		h.ResetRequests()
		h.Sweep(project.ActivitySweep)
		got := lastActivity(t, p)
		if assert.NotNil(t, got, "the sweep records the activity no event did") {
			assert.True(t, latestChange(t, shoot).Equal(*got), "lastActivityTimestamp %v: the Shoot's latest change, not the sweep's now", got)
		}
		assert.Equal(t, 1, h.Requests("patch"), "the Project's status, once")
		assert.Equal(t, 4, h.Requests("list"), "Projects, Shoots, BackupEntries and Quotas, once each, whatever their number")
	})
	t.Run("a second sweep writes nothing", func(t *testing.T) {
		h.ResetRequests()
		h.Sweep(project.ActivitySweep)
		assert.Zero(t, h.Requests("patch"))
	})
	t.Run("an activity an event recorded is not moved back", func(t *testing.T) {
		quota := &gardencorev1beta1.Quota{
			ObjectMeta: metav1.ObjectMeta{Name: "referenced", Namespace: ns, Labels: map[string]string{v1beta1constants.LabelSecretBindingReference: "true"}},
			Spec:       gardencorev1beta1.QuotaSpec{Scope: corev1.ObjectReference{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Project"}},
		}
		create(t, quota)
		h.Clock.Step(time.Hour)
		h.Send("add", quota)
		recorded := lastActivity(t, p)
		require.NotNil(t, recorded)
		h.ResetRequests()
		h.Sweep(project.ActivitySweep)
		assert.Equal(t, recorded, lastActivity(t, p))
		assert.Zero(t, h.Requests("patch"))
	})
}
