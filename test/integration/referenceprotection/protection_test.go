package referenceprotection_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/cloudprofile"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerdeployment"
	"github.com/gardener-knative/gardener-knative/pkg/controller/exposureclass"
	"github.com/gardener-knative/gardener-knative/pkg/controller/namespacedcloudprofile"
	"github.com/gardener-knative/gardener-knative/pkg/controller/quota"
	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// protectionCase is one protected kind with one of its referrer kinds.
type protectionCase struct {
	name      string
	fn        *function.Function
	finalizer string
	// event: Gardener records a ResourceReferenced Event when the deletion is blocked.
	event bool
	// protected returns a new protected object for namespace ns (not created yet).
	protected func(ns string) client.Object
	// referrer returns a new object in ns that references protected (not created yet).
	referrer func(ns string, protected client.Object) client.Object
}

func newCloudProfile(string) client.Object {
	return &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: unique("cloudprofile")}}
}

func newShoot(ns string, mutate func(*gardencorev1beta1.Shoot)) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: unique("shoot")}}
	mutate(s)
	return s
}

func newNamespacedCloudProfile(ns, parent string) *gardencorev1beta1.NamespacedCloudProfile {
	p := &gardencorev1beta1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: unique("custom")}}
	p.Spec.Parent = gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: parent}
	return p
}

func newQuota(ns string) client.Object {
	return &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: unique("quota")}}
}

func quotaRef(q client.Object) []corev1.ObjectReference {
	return []corev1.ObjectReference{{Namespace: q.GetNamespace(), Name: q.GetName()}}
}

var cases = []protectionCase{
	{
		name: "CloudProfile referenced by a Shoot's spec.cloudProfileName", fn: cloudprofile.Function, finalizer: "gardener", event: true,
		protected: newCloudProfile,
		referrer: func(ns string, p client.Object) client.Object {
			return newShoot(ns, func(s *gardencorev1beta1.Shoot) { s.Spec.CloudProfileName = ptr.To(p.GetName()) })
		},
	},
	{
		name: "CloudProfile referenced by a Shoot's spec.cloudProfile", fn: cloudprofile.Function, finalizer: "gardener", event: true,
		protected: newCloudProfile,
		referrer: func(ns string, p client.Object) client.Object {
			return newShoot(ns, func(s *gardencorev1beta1.Shoot) {
				s.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: p.GetName()}
			})
		},
	},
	{
		name: "CloudProfile referenced by a NamespacedCloudProfile", fn: cloudprofile.Function, finalizer: "gardener", event: true,
		protected: newCloudProfile,
		referrer:  func(ns string, p client.Object) client.Object { return newNamespacedCloudProfile(ns, p.GetName()) },
	},
	{
		name: "NamespacedCloudProfile referenced by a Shoot", fn: namespacedcloudprofile.Function, finalizer: "gardener", event: true,
		protected: func(ns string) client.Object { return newNamespacedCloudProfile(ns, "no-such-parent") },
		referrer: func(ns string, p client.Object) client.Object {
			return newShoot(ns, func(s *gardencorev1beta1.Shoot) {
				s.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: "NamespacedCloudProfile", Name: p.GetName()}
			})
		},
	},
	{
		name: "ControllerDeployment referenced by a ControllerRegistration", fn: controllerdeployment.Function, finalizer: controllerdeployment.FinalizerName,
		protected: func(string) client.Object {
			return &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: unique("deployment")}}
		},
		referrer: func(_ string, p client.Object) client.Object {
			r := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: unique("registration")}}
			r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: p.GetName()}}}
			return r
		},
	},
	{
		name: "ExposureClass referenced by a Shoot", fn: exposureclass.Function, finalizer: "gardener", event: true,
		protected: func(string) client.Object {
			return &gardencorev1beta1.ExposureClass{ObjectMeta: metav1.ObjectMeta{Name: unique("exposureclass")}, Handler: "internet"}
		},
		referrer: func(ns string, p client.Object) client.Object {
			return newShoot(ns, func(s *gardencorev1beta1.Shoot) { s.Spec.ExposureClassName = ptr.To(p.GetName()) })
		},
	},
	{
		name: "Quota referenced by a SecretBinding", fn: quota.Function, finalizer: "gardener", event: true,
		protected: newQuota,
		referrer: func(ns string, p client.Object) client.Object {
			return &gardencorev1beta1.SecretBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: unique("secretbinding")}, Quotas: quotaRef(p)}
		},
	},
	{
		name: "Quota referenced by a CredentialsBinding", fn: quota.Function, finalizer: "gardener", event: true,
		protected: newQuota,
		referrer: func(ns string, p client.Object) client.Object {
			return &securityv1alpha1.CredentialsBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: unique("credentialsbinding")}, Quotas: quotaRef(p)}
		},
	},
}

// protect creates a protected object and sends its add event: the function adds its finalizer,
// whether anything references the object or not.
func (tc protectionCase) protect(t *testing.T, h *functiontest.Harness, ns string) client.Object {
	t.Helper()
	p := tc.protected(ns)
	create(t, p)
	h.Send("add", p)
	p = reread(t, p)
	require.Contains(t, p.GetFinalizers(), tc.finalizer)
	return p
}

// referencedWhileDeleted creates a referrer of a protected object, deletes the protected object
// and sends the event of its deletion: the finalizer stays, and the reason is recorded.
func (tc protectionCase) referencedWhileDeleted(t *testing.T, h *functiontest.Harness, ns string) (protected, referrer client.Object) {
	t.Helper()
	protected = tc.protect(t, h, ns)
	referrer = tc.referrer(ns, protected)
	create(t, referrer)

	protected = deleteAndReread(t, protected)
	require.NotNil(t, protected, "the finalizer holds the object")
	h.Send("update", protected)
	require.True(t, exists(t, protected), "deletion blocked while referenced")
	assert.Contains(t, reread(t, protected).GetFinalizers(), tc.finalizer)

	events := eventsAbout(t, protected)
	if !tc.event {
		assert.Empty(t, events, "Gardener records no Event here")
		return protected, referrer
	}
	require.NotEmpty(t, events)
	name := referrer.GetName()
	if referrer.GetNamespace() != "" {
		name = referrer.GetNamespace() + "/" + name
	}
	assert.Equal(t, "ResourceReferenced", events[0].Reason)
	assert.Equal(t, corev1.EventTypeNormal, events[0].Type)
	assert.Contains(t, events[0].Message, name)
	return protected, referrer
}

func TestProtection(t *testing.T) {
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := serve(t, tc.fn)
			ns := namespace(t)

			t.Run("unreferenced: the deletion goes through at once", func(t *testing.T) {
				p := deleteAndReread(t, tc.protect(t, h, ns))
				h.Send("update", p)
				assert.False(t, exists(t, p))
			})

			t.Run("protected while referenced, released by the referrer's delete event", func(t *testing.T) {
				p, r := tc.referencedWhileDeleted(t, h, ns)
				require.NoError(t, env.Client.Delete(ctx, r))
				h.Send("delete", r)
				assert.False(t, exists(t, p), "the last referrer is gone")
			})

			t.Run("released by the sweep alone when the referrer's event is dropped", func(t *testing.T) {
				p, r := tc.referencedWhileDeleted(t, h, ns)
				require.NoError(t, env.Client.Delete(ctx, r))
				h.Sweep(referenceprotection.ResyncSweep)
				assert.False(t, exists(t, p))
			})

			t.Run("the sweep adds missing finalizers and keeps referenced objects", func(t *testing.T) {
				dropped := tc.protected(ns) // its add event is dropped
				create(t, dropped)
				p, _ := tc.referencedWhileDeleted(t, h, ns)
				h.Sweep(referenceprotection.ResyncSweep)
				assert.Contains(t, reread(t, dropped).GetFinalizers(), tc.finalizer)
				assert.True(t, exists(t, p), "still referenced")
			})

			t.Run("one of two referrers gone: still blocked", func(t *testing.T) {
				p, r := tc.referencedWhileDeleted(t, h, ns)
				second := tc.referrer(ns, p)
				create(t, second)
				require.NoError(t, env.Client.Delete(ctx, r))
				h.Send("delete", r)
				assert.True(t, exists(t, p))
				require.NoError(t, env.Client.Delete(ctx, second))
				h.Send("delete", second)
				assert.False(t, exists(t, p))
			})
		})
	}
}

// A Shoot that switches from a NamespacedCloudProfile to its parent releases the
// NamespacedCloudProfile: the reference changed without the Shoot being deleted, and the
// update event of the changed spec (generation not yet observed) finds the blocked deletion.
func TestShootReferenceChangeReleases(t *testing.T) {
	ctx := context.Background()
	h := serve(t, namespacedcloudprofile.Function)
	ns := namespace(t)
	tc := cases[slices.IndexFunc(cases, func(c protectionCase) bool { return strings.HasPrefix(c.name, "NamespacedCloudProfile") })]
	p, r := tc.referencedWhileDeleted(t, h, ns)
	shoot := r.(*gardencorev1beta1.Shoot)

	t.Run("a status-only update is filtered at no cost", func(t *testing.T) {
		shoot = reread(t, shoot)
		shoot.Status.ObservedGeneration = shoot.Generation
		require.NoError(t, env.Client.Status().Update(ctx, shoot))
		h.ResetRequests()
		h.Send("update", shoot)
		assert.Zero(t, h.Requests(""))
		assert.True(t, exists(t, p))
	})

	t.Run("the spec change releases", func(t *testing.T) {
		shoot = reread(t, shoot)
		shoot.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "no-such-parent"}
		require.NoError(t, env.Client.Update(ctx, shoot))
		shoot = reread(t, shoot)
		require.NotEqual(t, shoot.Generation, shoot.Status.ObservedGeneration, "gardenlet has not seen the change yet")
		h.Send("update", shoot)
		assert.False(t, exists(t, p))
	})
}

func TestExposureClassReferenceChangeReleases(t *testing.T) {
	ctx := context.Background()
	h := serve(t, exposureclass.Function)
	ns := namespace(t)
	tc := cases[slices.IndexFunc(cases, func(c protectionCase) bool { return strings.HasPrefix(c.name, "ExposureClass") })]
	p, r := tc.referencedWhileDeleted(t, h, ns)
	shoot := reread(t, r.(*gardencorev1beta1.Shoot))
	shoot.Spec.ExposureClassName = nil
	require.NoError(t, env.Client.Update(ctx, shoot))
	h.Send("update", reread(t, shoot))
	assert.False(t, exists(t, p))
}

func TestControllerRegistrationReferenceChangeReleases(t *testing.T) {
	ctx := context.Background()
	h := serve(t, controllerdeployment.Function)
	tc := cases[slices.IndexFunc(cases, func(c protectionCase) bool { return strings.HasPrefix(c.name, "ControllerDeployment") })]
	p, r := tc.referencedWhileDeleted(t, h, "")
	registration := reread(t, r.(*gardencorev1beta1.ControllerRegistration))
	registration.Spec.Deployment.DeploymentRefs = []gardencorev1beta1.DeploymentRef{{Name: "another-deployment"}}
	require.NoError(t, env.Client.Update(ctx, registration))
	h.Send("update", reread(t, registration))
	assert.False(t, exists(t, p))
}
