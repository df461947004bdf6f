package project_test

import (
	"context"
	"maps"
	"testing"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	projectfn "github.com/gardener-knative/gardener-knative/pkg/controller/project"
	projectmain "github.com/gardener-knative/gardener-knative/pkg/controller/project/project"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// newMain serves the project function as its own ServiceAccount, with exactly the RBAC its
// declaration grants (so every test proves the Main reconciler's least privilege), and with the
// given ResourceQuota templates.
func newMain(t *testing.T, quotas ...cmv1alpha1.QuotaConfiguration) *functiontest.Harness {
	t.Helper()
	cfg, err := function.LoadConfig(projectfn.Function, function.ComponentConfigs{})
	require.NoError(t, err)
	cfg.(*projectfn.Config).Quotas = quotas
	return functiontest.New(t, env, projectfn.Function, functiontest.WithConfig(cfg), functiontest.AsFunction())
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

// createProject creates a Project as gardener-apiserver serves it: with a status, even an empty
// one (the typed API always encodes it; a CRD keeps what it is given, and status is a
// subresource, so the status is written once to exist).
func createProject(t *testing.T, name string, mutate func(*gardencorev1beta1.Project)) *gardencorev1beta1.Project {
	t.Helper()
	ctx := context.Background()
	p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Owner = ptr.To(user("olivia"))
	p.Spec.Members = []gardencorev1beta1.ProjectMember{{Subject: user("olivia"), Role: "admin", Roles: []string{"owner"}}}
	if mutate != nil {
		mutate(p)
	}
	require.NoError(t, env.Client.Create(ctx, p))
	require.NoError(t, env.Client.Status().Update(ctx, p))
	return p
}

func createNamespace(t *testing.T, name string, labels map[string]string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	require.NoError(t, env.Client.Create(context.Background(), ns))
	return ns
}

func projectLabels(project string) map[string]string {
	return map[string]string{"gardener.cloud/role": "project", "project.gardener.cloud/name": project}
}

// assertLabels asserts the labels the tests control; the API server adds
// kubernetes.io/metadata.name to every namespace.
func assertLabels(t *testing.T, want map[string]string, obj client.Object) {
	t.Helper()
	got := maps.Clone(obj.GetLabels())
	delete(got, corev1.LabelMetadataName)
	assert.Equal(t, want, got, "labels of %s", obj.GetName())
}

func refresh(t *testing.T, obj client.Object) {
	t.Helper()
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// recorded returns the Events recorded about the project with the given reason.
func recorded(t *testing.T, project *gardencorev1beta1.Project, reason string) []corev1.Event {
	t.Helper()
	events := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), events, client.InNamespace(metav1.NamespaceDefault)))
	var found []corev1.Event
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Project" && e.InvolvedObject.Name == project.Name && e.Reason == reason {
			found = append(found, e)
		}
	}
	return found
}

func requireReady(t *testing.T, p *gardencorev1beta1.Project) {
	t.Helper()
	refresh(t, p)
	require.Equal(t, gardencorev1beta1.ProjectReady, p.Status.Phase)
	require.Equal(t, p.Generation, p.Status.ObservedGeneration)
	require.Contains(t, p.Finalizers, "gardener")
}

func TestCreatesGeneratedNamespace(t *testing.T) {
	h := newMain(t)
	p := createProject(t, "generated", nil)
	h.Send("add", p)

	requireReady(t, p)
	name := projectmain.GeneratedNamespaceName(p)
	assert.Regexp(t, `^garden-generated-[0-9a-f]{5}$`, name)
	assert.Equal(t, ptr.To(name), p.Spec.Namespace, "written back to .spec.namespace")

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	refresh(t, ns)
	assertLabels(t, projectLabels("generated"), ns)
	assert.Equal(t, map[string]string{
		"namespace.gardener.cloud/project":                       string(p.UID),
		"namespace.gardener.cloud/created-by-project-controller": "true",
	}, ns.Annotations)
	require.Len(t, ns.OwnerReferences, 1)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Project", Name: "generated", UID: p.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, ns.OwnerReferences[0])

	events := recorded(t, p, "NamespaceReconcileSuccessful")
	require.Len(t, events, 1)
	assert.Equal(t, corev1.EventTypeNormal, events[0].Type)
	assert.Equal(t, "project-controller", events[0].Source.Component)

	// The event of its own .spec.namespace patch comes back settled: nothing is read or written,
	// and a repeated event records nothing new.
	h.ResetRequests()
	h.Clock.Step(time.Second)
	h.Send("update", p)
	assert.Zero(t, h.Requests(""))
	assert.Len(t, recorded(t, p, "NamespaceReconcileSuccessful"), 1)
}

func TestCreatesExplicitNamespace(t *testing.T) {
	h := newMain(t)
	p := createProject(t, "explicit", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To("garden-explicit") })
	h.Send("add", p)

	requireReady(t, p)
	assert.Equal(t, int64(1), p.Generation, "the spec is not written")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-explicit"}}
	refresh(t, ns)
	assertLabels(t, projectLabels("explicit"), ns)
	assert.Equal(t, "true", ns.Annotations["namespace.gardener.cloud/created-by-project-controller"])
}

func TestAdoptsLabelledNamespace(t *testing.T) {
	h := newMain(t)
	labels := projectLabels("adopter")
	labels["team"] = "a"
	ns := createNamespace(t, "garden-adopted", labels)
	p := createProject(t, "adopter", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To(ns.Name) })
	h.Send("add", p)

	requireReady(t, p)
	refresh(t, ns)
	assertLabels(t, labels, ns)
	assert.Equal(t, map[string]string{
		"namespace.gardener.cloud/project":                     string(p.UID),
		"namespace.gardener.cloud/keep-after-project-deletion": "true",
	}, ns.Annotations, "a namespace it did not create is kept after the project")
	require.Len(t, ns.OwnerReferences, 1)
	assert.Equal(t, p.UID, ns.OwnerReferences[0].UID)
}

func TestRefusesUnlabelledNamespace(t *testing.T) {
	ctx := context.Background()
	h := newMain(t)
	ns := createNamespace(t, "garden-foreign", map[string]string{"team": "b"})
	p := createProject(t, "intruder", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To(ns.Name) })

	h.Send("add", p) // acknowledged: retrying cannot help until the namespace is labelled
	refresh(t, p)
	assert.Equal(t, gardencorev1beta1.ProjectFailed, p.Status.Phase)
	assert.Equal(t, p.Generation, p.Status.ObservedGeneration)
	events := recorded(t, p, "NamespaceReconcileFailed")
	require.Len(t, events, 1)
	assert.Equal(t, corev1.EventTypeWarning, events[0].Type)
	assert.Contains(t, events[0].Message, "needs the project labels")

	untouched := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}
	refresh(t, untouched)
	assert.Equal(t, ns.ResourceVersion, untouched.ResourceVersion, "a refused namespace is not written")
	assert.False(t, exists(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: projectmain.MemberRoleBinding, Namespace: ns.Name}}),
		"no access to a namespace the project may not have")

	h.Clock.Step(time.Second)
	h.Send("update", p)
	assert.Len(t, recorded(t, p, "NamespaceReconcileFailed"), 1, "one Event per failure, not per retry")

	// Once an operator labels the namespace for the project, the resync adopts it.
	untouched.Labels = projectLabels("intruder")
	require.NoError(t, env.Client.Update(ctx, untouched))
	h.Sweep(projectmain.ResyncSweepName)
	requireReady(t, p)
	refresh(t, untouched)
	assert.Equal(t, string(p.UID), untouched.Annotations["namespace.gardener.cloud/project"])
}

func TestRefusesNamespaceOfAnotherProject(t *testing.T) {
	h := newMain(t)
	first := createProject(t, "first", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To("garden-first") })
	h.Send("add", first)
	requireReady(t, first)

	// A second project claims a namespace that is the first's, labelled for the second: the UID
	// annotation tells. (gardener-apiserver refuses a second Project naming the namespace a
	// Project names; this one names a namespace an operator copied the first's annotation to.)
	ns := createNamespace(t, "garden-squat", projectLabels("squatter"))
	metav1.SetMetaDataAnnotation(&ns.ObjectMeta, "namespace.gardener.cloud/project", string(first.UID))
	require.NoError(t, env.Client.Update(context.Background(), ns))
	squatter := createProject(t, "squatter", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To("garden-squat") })
	h.Send("add", squatter)
	refresh(t, squatter)
	assert.Equal(t, gardencorev1beta1.ProjectFailed, squatter.Status.Phase)
	require.Len(t, recorded(t, squatter, "NamespaceReconcileFailed"), 1)
	assert.Contains(t, recorded(t, squatter, "NamespaceReconcileFailed")[0].Message, "already in-use by another project")
}

func quantity(q resource.Quantity) string { return q.String() }

func TestResourceQuotaFromTemplates(t *testing.T) {
	ctx := context.Background()
	limited := cmv1alpha1.QuotaConfiguration{ProjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"quota": "limited"}}}
	limited.Config.Labels = map[string]string{"origin": "gardener"}
	limited.Config.Annotations = map[string]string{"note": "default quota"}
	limited.Config.Spec.Hard = corev1.ResourceList{
		"count/shoots.core.gardener.cloud": resource.MustParse("100"),
		"count/secrets":                    resource.MustParse("800"),
	}
	generous := cmv1alpha1.QuotaConfiguration{ProjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"quota": "generous"}}}
	generous.Config.Spec.Hard = corev1.ResourceList{"count/shoots.core.gardener.cloud": resource.MustParse("1000")}
	h := newMain(t, limited, generous)

	p := createProject(t, "quota", func(p *gardencorev1beta1.Project) {
		p.Labels = map[string]string{"quota": "limited"}
		p.Spec.Namespace = ptr.To("garden-quota")
	})
	unquoted := createProject(t, "unquoted", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To("garden-unquoted") })
	h.Send("add", p)
	h.Send("add", unquoted)
	requireReady(t, p)
	requireReady(t, unquoted)

	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "gardener", Namespace: "garden-quota"}}
	refresh(t, rq)
	assert.Equal(t, "100", quantity(rq.Spec.Hard["count/shoots.core.gardener.cloud"]))
	assert.Equal(t, "800", quantity(rq.Spec.Hard["count/secrets"]))
	assert.Equal(t, map[string]string{"origin": "gardener"}, rq.Labels)
	assert.Equal(t, map[string]string{"note": "default quota"}, rq.Annotations)
	require.Len(t, rq.OwnerReferences, 1)
	assert.Equal(t, p.UID, rq.OwnerReferences[0].UID)
	assert.False(t, exists(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "gardener", Namespace: "garden-unquoted"}}), "no template selects it")

	// An operator raises the Shoot limit, drops the Secret limit, adds another and relabels it.
	rq.Spec.Hard = corev1.ResourceList{
		"count/shoots.core.gardener.cloud": resource.MustParse("250"),
		"count/configmaps":                 resource.MustParse("5"),
	}
	rq.Labels = map[string]string{"origin": "operator", "team": "a"}
	require.NoError(t, env.Client.Update(ctx, rq))
	h.Sweep(projectmain.ResyncSweepName)
	refresh(t, rq)
	assert.Equal(t, corev1.ResourceList{
		"count/shoots.core.gardener.cloud": resource.MustParse("250"), // the raise survives
		"count/secrets":                    resource.MustParse("800"), // unavailable: set again
	}, rq.Spec.Hard, "count/configmaps is not in the template: removed")
	assert.Equal(t, map[string]string{"origin": "gardener", "team": "a"}, rq.Labels, "merged, the template's win")

	// Another template applies once the project's labels select it: only the unavailable
	// limits follow it.
	refresh(t, p)
	p.Labels["quota"] = "generous"
	require.NoError(t, env.Client.Update(ctx, p))
	h.Sweep(projectmain.ResyncSweepName)
	refresh(t, rq)
	assert.Equal(t, corev1.ResourceList{"count/shoots.core.gardener.cloud": resource.MustParse("250")}, rq.Spec.Hard)
}

func TestRBAC(t *testing.T) {
	ctx := context.Background()
	h := newMain(t)
	p := createProject(t, "rbac", func(p *gardencorev1beta1.Project) {
		p.Spec.Namespace = ptr.To("garden-rbac")
		p.Spec.Members = append(p.Spec.Members,
			gardencorev1beta1.ProjectMember{Subject: user("adam"), Role: "admin", Roles: []string{"extension:monitoring"}},
			gardencorev1beta1.ProjectMember{Subject: user("vic"), Role: "viewer"},
			gardencorev1beta1.ProjectMember{Subject: user("ulla"), Role: "uam"},
			gardencorev1beta1.ProjectMember{Subject: user("sam"), Role: "serviceaccountmanager", Roles: []string{"extension:logging"}},
		)
	})
	h.Send("add", p)
	requireReady(t, p)

	for name, subjects := range map[string][]rbacv1.Subject{
		"gardener.cloud:system:project:rbac":        {user("olivia")},
		"gardener.cloud:system:project-member:rbac": {user("olivia"), user("adam")},
		"gardener.cloud:system:project-viewer:rbac": {user("vic")},
		"gardener.cloud:system:project-uam:rbac":    {user("ulla")},
	} {
		cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
		refresh(t, cr)
		assert.NotEmpty(t, cr.Rules, name)
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
		refresh(t, crb)
		assert.Equal(t, subjects, crb.Subjects, name)
		assert.Equal(t, name, crb.RoleRef.Name)
		require.Len(t, crb.OwnerReferences, 1)
		assert.Equal(t, p.UID, crb.OwnerReferences[0].UID)
	}
	roleBinding := func(name string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "garden-rbac"}}
	}
	for name, subjects := range map[string][]rbacv1.Subject{
		"gardener.cloud:system:project-member":                {user("olivia"), user("adam")},
		"gardener.cloud:system:project-viewer":                {user("vic")},
		"gardener.cloud:system:project-serviceaccountmanager": {user("olivia"), user("sam")},
		"gardener.cloud:extension:project:rbac:monitoring":    {user("adam")},
		"gardener.cloud:extension:project:rbac:logging":       {user("sam")},
	} {
		rb := roleBinding(name)
		refresh(t, rb)
		assert.Equal(t, subjects, rb.Subjects, name)
		assert.Equal(t, name, rb.RoleRef.Name)
	}
	monitoring := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gardener.cloud:extension:project:rbac:monitoring"}}
	refresh(t, monitoring)
	assert.Equal(t, "monitoring", monitoring.AggregationRule.ClusterRoleSelectors[0].MatchLabels["rbac.gardener.cloud/aggregate-to-extension-role"])
	assert.Equal(t, projectmain.ExtensionRoleLabels("rbac"), monitoring.Labels)

	t.Run("a tampered RoleBinding is restored", func(t *testing.T) {
		rb := roleBinding(projectmain.MemberRoleBinding)
		refresh(t, rb)
		rb.Subjects = append(rb.Subjects, user("mallory"))
		require.NoError(t, env.Client.Update(ctx, rb))
		h.Send("update", rb)
		refresh(t, rb)
		assert.Equal(t, []rbacv1.Subject{user("olivia"), user("adam")}, rb.Subjects)
	})
	t.Run("a deleted RoleBinding is recreated", func(t *testing.T) {
		rb := roleBinding(projectmain.ViewerRoleBinding)
		refresh(t, rb)
		require.NoError(t, env.Client.Delete(ctx, rb))
		h.Send("delete", rb)
		assert.True(t, exists(t, rb))
	})
	t.Run("a RoleBinding as desired costs one read and no write", func(t *testing.T) {
		rb := roleBinding(projectmain.MemberRoleBinding)
		refresh(t, rb)
		h.ResetRequests()
		h.Send("update", rb)
		assert.Equal(t, 1, h.Requests("get"))
		assert.Equal(t, 1, h.Requests(""))
	})
	t.Run("extension roles no member has are removed", func(t *testing.T) {
		refresh(t, p)
		p.Spec.Members[len(p.Spec.Members)-1].Roles = nil // sam loses extension:logging
		require.NoError(t, env.Client.Update(ctx, p))
		h.Send("update", p)
		requireReady(t, p)
		assert.False(t, exists(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gardener.cloud:extension:project:rbac:logging"}}))
		assert.False(t, exists(t, roleBinding("gardener.cloud:extension:project:rbac:logging")))
		assert.True(t, exists(t, roleBinding("gardener.cloud:extension:project:rbac:monitoring")))
		sa := roleBinding(projectmain.ServiceAccountManagerRoleBinding)
		refresh(t, sa)
		assert.Equal(t, []rbacv1.Subject{user("olivia"), user("sam")}, sa.Subjects)
	})
	t.Run("a new member joins the ClusterRoleBinding of its role", func(t *testing.T) {
		refresh(t, p)
		p.Spec.Members = append(p.Spec.Members, gardencorev1beta1.ProjectMember{Subject: user("nina"), Role: "viewer"})
		require.NoError(t, env.Client.Update(ctx, p))
		h.Send("update", p)
		requireReady(t, p)
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gardener.cloud:system:project-viewer:rbac"}}
		refresh(t, crb)
		assert.ElementsMatch(t, []rbacv1.Subject{user("vic"), user("nina")}, crb.Subjects)
	})
	t.Run("a ClusterRoleBinding of another role is replaced", func(t *testing.T) {
		// A binding's role cannot change: one of the project's names that binds another role
		// is deleted and created anew.
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gardener.cloud:system:project-viewer:rbac"}}
		refresh(t, crb)
		require.NoError(t, env.Client.Delete(ctx, crb))
		foreign := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: crb.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{user("mallory")},
		}
		require.NoError(t, env.Client.Create(ctx, foreign))
		h.Sweep(projectmain.ResyncSweepName)
		refresh(t, crb)
		assert.NotEqual(t, foreign.UID, crb.UID, "created anew")
		assert.Equal(t, crb.Name, crb.RoleRef.Name)
		assert.ElementsMatch(t, []rbacv1.Subject{user("vic"), user("nina")}, crb.Subjects)
	})
	t.Run("ClusterRoles changed behind its back are repaired by the resync", func(t *testing.T) {
		cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gardener.cloud:system:project-viewer:rbac"}}
		refresh(t, cr)
		want := cr.Rules
		cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
		require.NoError(t, env.Client.Update(ctx, cr))
		h.Sweep(projectmain.ResyncSweepName)
		refresh(t, cr)
		assert.Equal(t, want, cr.Rules)
	})
}

// finishNamespaceDeletion does what the namespace controller and the garbage collector do in a
// real cluster (envtest runs neither): empties the namespace's finalizers so it goes.
func finishNamespaceDeletion(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	refresh(t, ns)
	require.NotNil(t, ns.DeletionTimestamp)
	ns.Finalizers = nil
	require.NoError(t, env.Client.Update(ctx, ns))
	clientset, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	refresh(t, ns)
	ns.Spec.Finalizers = nil
	_, err = clientset.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	if exists(t, ns) {
		require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, ns)))
	}
	require.False(t, exists(t, ns), "namespace %s is gone", name)
}

func TestDeletionWaitsForShootsThenReleasesNamespace(t *testing.T) {
	ctx := context.Background()
	h := newMain(t)
	p := createProject(t, "doomed", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To("garden-doomed") })
	h.Send("add", p)
	requireReady(t, p)
	require.NoError(t, testenv.LocalProvider(ctx, env.Client))
	shoot := testenv.WorkerlessShoot("garden-doomed", "last")
	require.NoError(t, env.Client.Create(ctx, shoot))

	// Events are named after the object and the (fake) time, as client-go's recorder names
	// them: time passes between the Events about one project.
	h.Clock.Step(time.Second)
	require.NoError(t, testenv.DeleteConfirmed(ctx, env.Client, p))
	refresh(t, p)
	h.Send("update", p)
	refresh(t, p)
	assert.Equal(t, gardencorev1beta1.ProjectTerminating, p.Status.Phase)
	assert.Contains(t, p.Finalizers, "gardener", "held while Shoots remain")
	notEmpty := recorded(t, p, "NamespaceNotEmpty")
	require.Len(t, notEmpty, 1)
	assert.Equal(t, corev1.EventTypeWarning, notEmpty[0].Type)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-doomed"}}
	refresh(t, ns)
	assert.Nil(t, ns.DeletionTimestamp)

	h.Sweep(projectmain.ResyncSweepName)
	assert.Len(t, recorded(t, p, "NamespaceNotEmpty"), 1, "the resync does not repeat it")

	// The last Shoot's deletion brings the project back: the namespace goes.
	h.Clock.Step(time.Second)
	require.NoError(t, testenv.DeleteConfirmed(ctx, env.Client, shoot))
	h.Send("delete", shoot)
	refresh(t, ns)
	assert.NotNil(t, ns.DeletionTimestamp)
	require.Len(t, recorded(t, p, "NamespaceMarkedForDeletion"), 1)
	refresh(t, p)
	assert.Contains(t, p.Finalizers, "gardener", "held until the namespace is gone")
	assert.Equal(t, gardencorev1beta1.ProjectTerminating, p.Status.Phase)

	// The namespace's deletion releases the project.
	gone := ns.DeepCopy()
	finishNamespaceDeletion(t, ns.Name)
	h.Send("delete", gone)
	assert.False(t, exists(t, p))
}

func TestDeletionKeepsAdoptedNamespace(t *testing.T) {
	ctx := context.Background()
	h := newMain(t)
	labels := projectLabels("keeper")
	labels["team"] = "k"
	ns := createNamespace(t, "garden-keeper", labels)
	p := createProject(t, "keeper", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To(ns.Name) })
	h.Send("add", p)
	requireReady(t, p)

	require.NoError(t, testenv.DeleteConfirmed(ctx, env.Client, p))
	refresh(t, p)
	h.Send("update", p)
	assert.False(t, exists(t, p), "released at once")
	refresh(t, ns)
	assert.Nil(t, ns.DeletionTimestamp)
	assertLabels(t, map[string]string{"team": "k"}, ns)
	assert.Empty(t, ns.Annotations)
	assert.Empty(t, ns.OwnerReferences)
}

// mainOnly is the project function reduced to the Main reconciler, its watches and its sweep:
// the other reconcilers watch some of the same kinds, and their costs are theirs.
var mainOnly = &function.Function{
	Name: projectfn.Function.Name, Config: projectfn.Function.Config, RBAC: projectmain.RBAC,
	Reconcilers: []function.Reconciler{{Name: projectmain.ReconcilerName, For: kinds.Project, New: projectmain.New}},
	Watches:     projectmain.Watches,
	Sweeps:      projectmain.Sweeps,
}

// The no-op paths cost what docs/functions/project.md says.
func TestRequestCost(t *testing.T) {
	cfg, err := function.LoadConfig(mainOnly, function.ComponentConfigs{})
	require.NoError(t, err)
	h := functiontest.New(t, env, mainOnly, functiontest.WithConfig(cfg))
	p := createProject(t, "quiet", func(p *gardencorev1beta1.Project) { p.Spec.Namespace = ptr.To("garden-quiet") })
	created := p.DeepCopy()
	h.Send("add", p)
	requireReady(t, p)

	h.ResetRequests()
	h.Send("update", p)
	assert.Zero(t, h.Requests(""), "a status update of a reconciled project")

	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "garden-quiet"}}
	h.Send("delete", shoot)
	assert.Equal(t, 1, h.Requests("list"), "a Shoot of a project that is not being deleted: one LIST by spec.namespace")
	assert.Equal(t, 1, h.Requests(""))

	h.ResetRequests()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-quiet"}}
	refresh(t, ns)
	h.Send("update", ns)
	assert.Zero(t, h.Requests(""), "namespaces matter when they are deleted")

	// A full reconcile of a settled project (e.g. its creation's event redelivered): reads only.
	// (An event of the version the reconcile wrote is its echo, and costs nothing.)
	unsettled := created
	h.ResetRequests()
	h.Send("update", unsettled)
	assert.Equal(t, 10, h.Requests("get"), "the project, its namespace, 4 ClusterRoles, 4 ClusterRoleBindings")
	assert.Equal(t, 2, h.Requests("list"), "the project's extension ClusterRoles, the namespace's RoleBindings")
	assert.Zero(t, h.Requests("patch")+h.Requests("create")+h.Requests("delete"))

	// A resync over settled projects: one LIST per kind, nothing else.
	h.Sweep(projectmain.ResyncSweepName)
	h.ResetRequests()
	h.Sweep(projectmain.ResyncSweepName)
	assert.Equal(t, 7, h.Requests("list"), "Projects, Namespaces, ResourceQuotas, ClusterRoles, ClusterRoleBindings, RoleBindings, Shoots")
	assert.Zero(t, h.Requests("get"))
	assert.Zero(t, h.Requests("patch")+h.Requests("create")+h.Requests("delete"), "nothing to converge")
}
