package project

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// NamespacePrefix prefixes every project namespace (gardener-apiserver refuses an explicit
// .spec.namespace without it).
const NamespacePrefix = "garden-"

// NamespaceName is the project's namespace: .spec.namespace, or the name GeneratedNamespaceName
// determines while .spec.namespace is still unset.
func NamespaceName(project *gardencorev1beta1.Project) string {
	if name := ptr.Deref(project.Spec.Namespace, ""); name != "" {
		return name
	}
	return GeneratedNamespaceName(project)
}

// GeneratedNamespaceName is garden-<project>-<first 5 hex digits of sha256(project UID)>, as
// Gardener names it. It is deterministic per Project instance (unlike GenerateName), so a
// reconcile that created the namespace but failed to write .spec.namespace finds the same name
// again instead of creating a second namespace, and a Project recreated under the same name
// gets another one.
func GeneratedNamespaceName(project *gardencorev1beta1.Project) string {
	sum := sha256.Sum256([]byte(project.UID))
	return fmt.Sprintf("%s%s-%s", NamespacePrefix, project.Name, hex.EncodeToString(sum[:])[:5])
}

// NamespaceLabels are the labels that make a namespace the project's: a namespace is adopted
// only if it already carries them, so that nobody can adopt e.g. kube-system into a project
// and grant themselves its contents.
func NamespaceLabels(project *gardencorev1beta1.Project) map[string]string {
	return map[string]string{
		v1beta1constants.GardenRole:  v1beta1constants.GardenRoleProject,
		v1beta1constants.ProjectName: project.Name,
	}
}

// namespaceAnnotations records the UID of the project a namespace belongs to: a namespace that
// carries another UID belongs to another project (or an earlier one of the same name).
func namespaceAnnotations(project *gardencorev1beta1.Project) map[string]string {
	return map[string]string{v1beta1constants.NamespaceProject: string(project.UID)}
}

// controllerRef is the project as controller of the namespace and the ResourceQuota; it blocks
// their owner's deletion until the garbage collector has removed them.
func controllerRef(project *gardencorev1beta1.Project) metav1.OwnerReference {
	return *metav1.NewControllerRef(project, gardencorev1beta1.SchemeGroupVersion.WithKind("Project"))
}

// NewNamespace is the namespace the project controller creates: the project's labels and
// annotations, marked as created by the controller (so it is deleted with the project), and
// controlled by the project.
func NewNamespace(project *gardencorev1beta1.Project, name string) *corev1.Namespace {
	annotations := namespaceAnnotations(project)
	annotations[v1beta1constants.NamespaceCreatedByProjectController] = "true"
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:            name,
		Labels:          NamespaceLabels(project),
		Annotations:     annotations,
		OwnerReferences: []metav1.OwnerReference{controllerRef(project)},
	}}
}

// The reasons a namespace is refused to a project.
var (
	ErrNamespaceNotLabelled     = errors.New("namespace cannot be used as it needs the project labels")
	ErrNamespaceOfOtherProjects = errors.New("namespace is already in-use by another project")
)

// AdoptNamespace checks that the existing namespace may serve the project and, if so, sets the
// project's labels, annotations and controller reference on its metadata. It refuses (and leaves
// the metadata untouched) a namespace that lacks the project's labels, or that is annotated with
// another project's UID. A namespace the controller did not create itself is marked to be kept
// when the project is deleted: it existed before, so it is not the project's to delete.
func AdoptNamespace(project *gardencorev1beta1.Project, ns *metav1.ObjectMeta) error {
	want := NamespaceLabels(project)
	for k, v := range want {
		if value, ok := ns.Labels[k]; !ok || value != v {
			return fmt.Errorf("%w %v", ErrNamespaceNotLabelled, want)
		}
	}
	if uid, annotated := ns.Annotations[v1beta1constants.NamespaceProject]; annotated && uid != string(project.UID) {
		return ErrNamespaceOfOtherProjects
	}

	ns.OwnerReferences = mergeOwnerReference(ns.OwnerReferences, controllerRef(project))
	if ns.Annotations == nil {
		ns.Annotations = map[string]string{}
	}
	maps.Copy(ns.Annotations, namespaceAnnotations(project))
	if _, created := ns.Annotations[v1beta1constants.NamespaceCreatedByProjectController]; !created {
		ns.Annotations[v1beta1constants.NamespaceKeepAfterProjectDeletion] = "true"
	}
	return nil
}

// mergeOwnerReference adds ref unless an owner with its UID is already there (Gardener leaves
// an existing reference to the same owner as it is).
func mergeOwnerReference(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	for _, r := range refs {
		if r.UID == ref.UID {
			return refs
		}
	}
	return append(refs, ref)
}

// Release is what releasing a deleted project's namespace takes.
type Release int

const (
	// Released: the namespace is gone, or it is not the project's; the finalizer may go.
	Released Release = iota
	// ReleaseByDeleting: delete the namespace, then wait for it to be gone.
	ReleaseByDeleting
	// ReleaseWhenGone: the namespace is being deleted; wait for it to be gone.
	ReleaseWhenGone
	// ReleaseByKeeping: the namespace is to be kept; strip the project's metadata from it
	// (StripProjectMetadata), then the finalizer may go.
	ReleaseByKeeping
)

// ReleaseOf decides how the deleted project releases its namespace ns (nil when it does not
// exist). A namespace without the project's labels is not the project's: it is left alone, so
// that a project cannot delete a namespace it never owned by pointing .spec.namespace at it.
func ReleaseOf(project *gardencorev1beta1.Project, ns *metav1.ObjectMeta) Release {
	switch {
	case ns == nil:
		return Released
	case ns.DeletionTimestamp != nil:
		return ReleaseWhenGone
	}
	for k, v := range NamespaceLabels(project) {
		if ns.Labels[k] != v {
			return Released
		}
	}
	if keep, _ := strconv.ParseBool(ns.Annotations[v1beta1constants.NamespaceKeepAfterProjectDeletion]); keep {
		return ReleaseByKeeping
	}
	return ReleaseByDeleting
}

// StripProjectMetadata removes from a namespace that outlives its project everything that tied
// it to the project: labels, annotations and the project's owner reference.
func StripProjectMetadata(project *gardencorev1beta1.Project, ns *metav1.ObjectMeta) {
	for _, k := range []string{v1beta1constants.NamespaceProject, v1beta1constants.NamespaceKeepAfterProjectDeletion, v1beta1constants.NamespaceCreatedByProjectController} {
		delete(ns.Annotations, k)
	}
	for _, k := range []string{v1beta1constants.ProjectName, v1beta1constants.GardenRole} {
		delete(ns.Labels, k)
	}
	ns.OwnerReferences = slices.DeleteFunc(ns.OwnerReferences, func(ref metav1.OwnerReference) bool {
		return ref.APIVersion == gardencorev1beta1.SchemeGroupVersion.String() && ref.Kind == "Project" &&
			ref.Name == project.Name && ref.UID == project.UID
	})
}
