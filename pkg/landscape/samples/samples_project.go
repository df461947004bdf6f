package samples

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// projectSamples creates Projects that show the project function's Main reconciler at work:
//   - "sample-explicit" names its namespace, garden-sample-explicit, which is created with the
//     project's RBAC (its members include an extension role);
//   - "sample-generated" names none, and gets garden-sample-generated-<5 hex digits>, written
//     back to its .spec.namespace;
//   - "sample-adopted" names garden-sample-adopted, which exists labelled for it and holds a
//     Shoot: it is adopted (and marked to be kept after the project). Delete the project and it
//     stays Terminating (a NamespaceNotEmpty Warning event says why) until the Shoot is deleted;
//     then the namespace is released, not deleted;
//   - "sample-refused" names garden-sample-unlabelled, which exists without the project's
//     labels: the project is Failed (a NamespaceReconcileFailed Warning event says why) and the
//     namespace is left untouched, until it is labelled gardener.cloud/role=project and
//     project.gardener.cloud/name=sample-refused.
func projectSamples(ctx context.Context, c client.Client) error {
	adoptable := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-sample-adopted", Labels: map[string]string{
		"gardener.cloud/role": "project", "project.gardener.cloud/name": "sample-adopted",
	}}}
	unlabelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-sample-unlabelled", Labels: map[string]string{"team": "someone-else"}}}
	for _, obj := range []client.Object{adoptable, unlabelled} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, obj)); err != nil {
			return err
		}
	}

	owner := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "owner@example.com"}
	members := []gardencorev1beta1.ProjectMember{
		{Subject: owner, Role: gardencorev1beta1.ProjectMemberAdmin, Roles: []string{gardencorev1beta1.ProjectMemberOwner}},
		{Subject: rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "viewer@example.com"}, Role: gardencorev1beta1.ProjectMemberViewer},
		{Subject: rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "ops@example.com"}, Role: gardencorev1beta1.ProjectMemberAdmin, Roles: []string{"extension:monitoring"}},
	}
	for name, namespace := range map[string]*string{
		"sample-explicit":  ptr.To("garden-sample-explicit"),
		"sample-generated": nil,
		"sample-adopted":   ptr.To(adoptable.Name),
		"sample-refused":   ptr.To(unlabelled.Name),
	} {
		p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.Namespace = namespace
		p.Spec.Owner = &owner
		p.Spec.Members = members
		if err := c.Create(ctx, p); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return err
		}
		// gardener-apiserver always serves a status, if empty; the stand-in CRD keeps only what
		// it is given, and the function patches status fields.
		if err := setStatus(ctx, c, p); err != nil {
			return err
		}
	}
	// The Shoot comes after its Project, so that its creation is the Project's activity in every
	// run: created before, its event might find no Project yet (as in Gardener, activity before
	// a Project exists is none), and whether it did would depend on timing.
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: adoptable.Name}}
	return client.IgnoreAlreadyExists(c.Create(ctx, shoot))
}
