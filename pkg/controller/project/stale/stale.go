// Package stale is the "Stale Projects" reconciler of GCM's Project controller: it marks Projects
// that nothing uses as stale (status.staleSinceTimestamp), gives them an auto-delete timestamp
// once the grace period has passed (status.staleAutoDeleteTimestamp), and deletes them when that
// timestamp has passed. It runs as a sweep: every Project is checked against one snapshot of the
// objects that can keep a Project in use.
package stale

import (
	"strconv"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Verdict is what the stale check concludes about a Project. Every verdict but Stale clears the
// stale timestamps.
type Verdict string

// The verdicts, in the order they are reached.
const (
	// SkipStaleCheck: the namespace is annotated project.gardener.cloud/skip-stale-check=true.
	SkipStaleCheck Verdict = "SkipStaleCheck"
	// YoungerThanMinimumLifetime: the Project was created less than minimumLifetimeDays ago.
	YoungerThanMinimumLifetime Verdict = "YoungerThanMinimumLifetime"
	// RecentlyActive: status.lastActivityTimestamp is less than minimumLifetimeDays ago.
	RecentlyActive Verdict = "RecentlyActive"
	// InUse: an object in the namespace keeps the Project in use (see InUseBy).
	InUse Verdict = "InUse"
	// Stale: nothing spares the Project.
	Stale Verdict = "Stale"
)

// Exemption returns the verdict that spares a Project without looking at what uses it: the skip
// annotation on its namespace, or an age or last activity within the minimum lifetime. Empty
// when none applies. At exactly the minimum lifetime a Project is no longer spared, as in
// Gardener.
func Exemption(now time.Time, project *gardencorev1beta1.Project, namespaceAnnotations map[string]string, minimumLifetime time.Duration) Verdict {
	if skip, _ := strconv.ParseBool(namespaceAnnotations[v1beta1constants.ProjectSkipStaleCheck]); skip {
		return SkipStaleCheck
	}
	if project.CreationTimestamp.Add(minimumLifetime).After(now) {
		return YoungerThanMinimumLifetime
	}
	if last := project.Status.LastActivityTimestamp; last != nil && last.Add(minimumLifetime).After(now) {
		return RecentlyActive
	}
	return ""
}

// MarkStale sets the stale timestamps of a Project found stale at now. staleSinceTimestamp is
// kept once set. Within the grace period after it there is no auto-delete timestamp (one
// assigned earlier is removed, so that a longer grace period takes effect); after it, the
// auto-delete timestamp is staleSinceTimestamp + the expiration time, but never earlier than one
// already assigned: users may rely on the date they were shown.
func MarkStale(now time.Time, status *gardencorev1beta1.ProjectStatus, s Settings) {
	if status.StaleSinceTimestamp == nil {
		since := metav1.NewTime(now).Rfc3339Copy()
		status.StaleSinceTimestamp = &since
	}
	since := status.StaleSinceTimestamp.Time
	if since.Add(s.StaleGracePeriod()).After(now) {
		status.StaleAutoDeleteTimestamp = nil
		return
	}
	autoDelete := metav1.NewTime(since.Add(s.StaleExpirationTime())).Rfc3339Copy()
	if status.StaleAutoDeleteTimestamp == nil || autoDelete.After(status.StaleAutoDeleteTimestamp.Time) {
		status.StaleAutoDeleteTimestamp = &autoDelete
	}
}

// MarkNotStale clears the stale timestamps.
func MarkNotStale(status *gardencorev1beta1.ProjectStatus) {
	status.StaleSinceTimestamp = nil
	status.StaleAutoDeleteTimestamp = nil
}

// AutoDeleteDue says whether a stale Project's auto-delete timestamp has come (at the instant
// itself it is due).
func AutoDeleteDue(now time.Time, status gardencorev1beta1.ProjectStatus) bool {
	return status.StaleAutoDeleteTimestamp != nil && !now.Before(status.StaleAutoDeleteTimestamp.Time)
}

// ConfirmDeletion annotates the Project the way gardener-apiserver requires before it lets a
// Project be deleted, with the time of the confirmation.
func ConfirmDeletion(now time.Time, project *gardencorev1beta1.Project) {
	if project.Annotations == nil {
		project.Annotations = map[string]string{}
	}
	project.Annotations[v1beta1constants.ConfirmationDeletion] = "true"
	project.Annotations[v1beta1constants.GardenerTimestamp] = now.UTC().Format(time.RFC3339Nano)
}
