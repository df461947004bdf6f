package stale

import (
	"context"
	"fmt"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// RBAC is what the Stale reconciler needs: the sweep's LISTs, a GET of a Project that changed
// since the sweep read it, its status patches, and the confirmed deletion.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"projects"}, Verbs: []string{"get", "list", "patch", "delete"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"projects/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"shoots", "backupentries", "secretbindings"}, Verbs: []string{"list"}},
	{APIGroups: []string{kinds.CredentialsBinding.Group}, Resources: []string{"credentialsbindings"}, Verbs: []string{"list"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}},
}

// Reconciler checks one Project for staleness, in a sweep: the Project, its namespace and what
// uses it are read from the sweep's snapshot.
type Reconciler struct {
	// Reader reads live: to re-read a Project that changed since the sweep read it, and to ask its
	// namespace's use again before deleting it.
	Reader   client.Reader
	Writer   function.Writer
	Clock    clock.PassiveClock
	Settings Settings
	Log      *slog.Logger
}

var _ function.Handler = &Reconciler{}

// New builds the Stale reconciler with its settings.
func New(deps function.Deps, settings Settings) (*Reconciler, error) {
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	return &Reconciler{Reader: deps.Source.Reader, Writer: deps.Source.Writer, Clock: deps.Clock, Settings: settings, Log: deps.Log}, nil
}

// Reconcile marks the Project stale or not stale, and deletes it when its auto-delete timestamp
// has come.
//
// A write conflict means the Project changed since the sweep read it (typically the Activity
// reconciler recorded activity). It is resolved here rather than by the runtime, which would
// reconcile again with a live reader that cannot answer the snapshot's indexes: the Project is
// read again and decided once more, with what the snapshot said about its namespace. Should it
// conflict again, the next sweep decides.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	project := &gardencorev1beta1.Project{}
	if err := req.Reader.Get(ctx, req.Key, project); err != nil {
		return client.IgnoreNotFound(err)
	}
	namespaceName := ptr.Deref(project.Spec.Namespace, "")
	if project.DeletionTimestamp != nil || namespaceName == "" {
		return nil // being deleted, or the Main reconciler has not given it a namespace yet
	}
	namespace := &metav1.PartialObjectMetadata{}
	namespace.SetGroupVersionKind(kinds.Namespace.GroupVersionKind)
	if err := req.Reader.Get(ctx, client.ObjectKey{Name: namespaceName}, namespace); err != nil {
		if apierrors.IsNotFound(err) {
			r.Log.Info("Project's namespace does not exist (yet), nothing to check", "project", project.Name, "namespace", namespaceName)
			return nil
		}
		return err
	}
	usage := &usage{reader: req.Reader, namespace: namespaceName}

	err := r.converge(ctx, project, namespace, usage)
	if !apierrors.IsConflict(err) {
		return err
	}
	if err := r.Reader.Get(ctx, req.Key, project); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := r.converge(ctx, project, namespace, usage); err != nil {
		if apierrors.IsConflict(err) {
			// Not the Conflict itself: the runtime must not retry with a live reader.
			return fmt.Errorf("project %s changed twice during its stale check; the next sweep checks it again", project.Name)
		}
		return err
	}
	return nil
}

// converge writes the verdict on the Project, and deletes it when its time has come.
func (r *Reconciler) converge(ctx context.Context, project *gardencorev1beta1.Project, namespace *metav1.PartialObjectMetadata, usage *usage) error {
	if project.DeletionTimestamp != nil || ptr.Deref(project.Spec.Namespace, "") != namespace.Name {
		return nil
	}
	now := r.Clock.Now()
	log := r.Log.With("project", project.Name, "namespace", namespace.Name)

	verdict := Exemption(now, project, namespace.Annotations, r.Settings.MinimumLifetime())
	resource := ""
	if verdict == "" {
		var err error
		if resource, err = usage.inUseBy(ctx); err != nil {
			return err
		}
		verdict = Stale
		if resource != "" {
			verdict = InUse
		}
	}

	if verdict != Stale {
		changed, err := r.Writer.PatchStatus(ctx, project, func() { MarkNotStale(&project.Status) })
		if changed && err == nil {
			log.Info("Project is no longer stale", "verdict", verdict, "resource", resource)
		}
		return err
	}

	changed, err := r.Writer.PatchStatus(ctx, project, func() { MarkStale(now, &project.Status, r.Settings) })
	if err != nil {
		return err
	}
	if changed {
		log.Info("Project is stale", "staleSinceTimestamp", project.Status.StaleSinceTimestamp, "staleAutoDeleteTimestamp", project.Status.StaleAutoDeleteTimestamp)
	}
	if !AutoDeleteDue(now, project.Status) {
		return nil
	}
	// The sweep listed Shoots and BackupEntries before it read this page of Projects: one
	// created in the namespace since (a new user of an old Project) is not in its lists. So the
	// namespace is asked live before the deletion, what the kube-apiserver can answer of the use.
	if resource, err := UsedInNamespace(ctx, r.Reader, namespace.Name); err != nil || resource != "" {
		if err != nil {
			return err
		}
		if _, err := r.Writer.PatchStatus(ctx, project, func() { MarkNotStale(&project.Status) }); err != nil {
			return err
		}
		log.Info("Project is no longer stale: in use since the sweep's lists", "resource", resource)
		return nil
	}
	log.Info("Deleting Project: it is stale and its auto-delete timestamp has passed", "staleAutoDeleteTimestamp", project.Status.StaleAutoDeleteTimestamp)
	if _, err := r.Writer.Patch(ctx, project, func() { ConfirmDeletion(now, project) }); err != nil {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(r.Writer.Delete(ctx, project))
}

// usage looks up what uses a namespace at most once per reconcile, and only when the verdict
// depends on it.
type usage struct {
	reader    client.Reader
	namespace string
	done      bool
	resource  string
	err       error
}

func (u *usage) inUseBy(ctx context.Context) (string, error) {
	if !u.done {
		u.resource, u.err = InUseBy(ctx, u.reader, u.namespace)
		u.done = true
	}
	return u.resource, u.err
}
