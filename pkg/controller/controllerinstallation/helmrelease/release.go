// Package helmrelease installs, upgrades and uninstalls Helm releases on the target cluster with
// Helm's Go SDK, its release records in Secrets (Helm's default storage) in the release's
// namespace.
package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Release record labels Helm sets on its storage Secrets: what the function reads, metadata
// only, to know a release's state without downloading the record.
const (
	LabelOwner   = "owner"
	OwnerHelm    = "helm"
	LabelName    = "name"
	LabelStatus  = "status"
	LabelVersion = "version"
	// LabelCreatedAt and LabelModifiedAt are the Unix times of the record's creation and last
	// change.
	LabelCreatedAt  = "createdAt"
	LabelModifiedAt = "modifiedAt"
)

// Client runs Helm actions on one cluster. It is safe for concurrent use on different releases;
// Helm itself refuses concurrent operations on one release (its pending states are its lock).
type Client struct {
	getter    *restClientGetter
	clientset kubernetes.Interface
	// MaxHistory bounds the release records Helm keeps per release.
	MaxHistory int
	// Timeout bounds Helm's own waits (hooks); installs do not wait for readiness.
	Timeout time.Duration
	Log     *slog.Logger
}

// New returns a client of the cluster cfg reaches.
func New(cfg *rest.Config, maxHistory int, timeout time.Duration, log *slog.Logger) (*Client, error) {
	getter, err := newRESTClientGetter(cfg)
	if err != nil {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{getter: getter, clientset: clientset, MaxHistory: maxHistory, Timeout: timeout, Log: log}, nil
}

func (c *Client) configuration(namespace string) *action.Configuration {
	kc := kube.New(c.getter)
	kc.Namespace = namespace
	debug := func(format string, args ...any) { c.Log.Debug(fmt.Sprintf(format, args...), "namespace", namespace) }
	kc.Log = debug
	store := storage.Init(driver.NewSecrets(c.clientset.CoreV1().Secrets(namespace)))
	store.MaxHistory = c.MaxHistory
	return &action.Configuration{
		RESTClientGetter: c.getter,
		Releases:         store,
		KubeClient:       kc,
		Log:              debug,
		HookOutputFunc:   func(string, string, string) io.Writer { return io.Discard },
	}
}

// Apply installs the release, or upgrades it when records of it exist, with the chart, the
// values and the custom labels on its record. A record left pending by an interrupted operation
// (a process killed mid-install) for longer than staleAfter is marked failed first, so that the
// release does not stay locked forever.
func (c *Client) Apply(ctx context.Context, namespace, name string, chrt *chart.Chart, values map[string]any, labels map[string]string, now time.Time, staleAfter time.Duration) (*release.Release, error) {
	cfg := c.configuration(namespace)
	last, err := cfg.Releases.Last(name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace = name, namespace
		install.Labels = labels
		install.Timeout = c.Timeout
		rel, err := install.RunWithContext(ctx, chrt, values)
		return rel, concurrentInstall(name, err)
	case err != nil:
		return nil, fmt.Errorf("reading the records of release %s/%s: %w", namespace, name, err)
	}
	if last.Info.Status.IsPending() && now.Sub(last.Info.LastDeployed.Time) > staleAfter {
		last.SetStatus(release.StatusFailed, fmt.Sprintf("%s interrupted: no progress for %s", last.Info.Status, staleAfter))
		if err := cfg.Releases.Update(last); err != nil {
			return nil, fmt.Errorf("marking the interrupted revision %d of release %s/%s failed: %w", last.Version, namespace, name, err)
		}
	}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = namespace
	upgrade.Labels = labels
	upgrade.Timeout = c.Timeout
	upgrade.MaxHistory = c.MaxHistory
	rel, err := upgrade.RunWithContext(ctx, name, chrt, values)
	return rel, concurrentInstall(name, err)
}

// Uninstall removes the release's resources and records; a release that does not exist is
// uninstalled.
func (c *Client) Uninstall(namespace, name string) error {
	uninstall := action.NewUninstall(c.configuration(namespace))
	uninstall.IgnoreNotFound = true
	uninstall.Timeout = c.Timeout
	_, err := uninstall.Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	return err
}

// Get returns the latest revision of the release.
func (c *Client) Get(namespace, name string) (*release.Release, error) {
	return c.configuration(namespace).Releases.Last(name)
}

// concurrentInstall turns Helm's answers to a concurrent operation on the same release into a
// conflict: "release already exists" and "cannot re-use a name that is still in use" (another
// reconcile installed first), "another operation is in progress" (one is running). The runtime
// then reconciles again from what is there now, instead of reporting a failed installation.
func concurrentInstall(name string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, driver.ErrReleaseExists) || strings.Contains(err.Error(), "cannot re-use a name that is still in use") ||
		strings.Contains(err.Error(), "another operation (install/upgrade/rollback) is in progress") {
		return apierrors.NewConflict(schema.GroupResource{Group: "helm.sh", Resource: "releases"}, name, err)
	}
	return err
}
