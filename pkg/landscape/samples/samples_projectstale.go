package samples

import (
	"context"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// projectStaleSamples creates Projects for the project function's Stale sweep, each with a
// namespace labelled for it (the Main reconciler adopts it). Samples are days old only in
// their status: with Gardener's minimumLifetimeDays (30) every Project created now would be too
// young to be stale, so `make run` runs the project function with PROJECT_MINIMUM_LIFETIME_DAYS=0
// (main.go) to show each rule:
//   - "stale-unused" has nothing in its namespace: it is marked stale now, without an
//     auto-delete timestamp (the 14-day grace period has not passed);
//   - "stale-graced" was marked stale 20 days ago: it gets an auto-delete timestamp 90 days
//     after that;
//   - "stale-expired" was to be deleted an hour ago: it is deleted, with the deletion confirmed;
//   - "stale-in-use" has a Shoot in its namespace, and "stale-skipped" a namespace annotated
//     project.gardener.cloud/skip-stale-check=true: their stale timestamps are cleared.
//
// The Shoot of "stale-in-use" is there before its Project: the Stale sweep may check the Project
// at any moment after its creation (its auto-delete date has passed) and must find it in use.
// Whether its creation then counts as the Project's activity depends on when the Activity
// reconciler sees it; the sample's status has a last activity of its own (120 days ago), so the
// outcome is the same either way: a last activity, and no stale timestamps.
//
// Creating an object that counts as activity (e.g. a Shoot in garden-stale-unused) sets the
// Project's status.lastActivityTimestamp at once (Activity reconciler), and the next sweep
// clears its stale timestamps.
func projectStaleSamples(ctx context.Context, c client.Client) error {
	now := time.Now()
	daysAgo := func(days int) *metav1.Time { return &metav1.Time{Time: now.Add(-time.Duration(days) * 24 * time.Hour)} }
	for _, sample := range []struct {
		name                 string
		staleSince           *metav1.Time
		autoDelete           *metav1.Time
		namespaceAnnotations map[string]string
		lastActivity         *metav1.Time
		withShoot            bool
	}{
		{name: "stale-unused"},
		{name: "stale-graced", staleSince: daysAgo(20)},
		{name: "stale-expired", staleSince: daysAgo(100), autoDelete: &metav1.Time{Time: now.Add(-time.Hour)}},
		{name: "stale-in-use", staleSince: daysAgo(100), autoDelete: daysAgo(10), lastActivity: daysAgo(120), withShoot: true},
		{name: "stale-skipped", staleSince: daysAgo(100), autoDelete: daysAgo(10), namespaceAnnotations: map[string]string{"project.gardener.cloud/skip-stale-check": "true"}},
	} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:        "garden-" + sample.name,
			Labels:      map[string]string{"gardener.cloud/role": "project", "project.gardener.cloud/name": sample.name},
			Annotations: sample.namespaceAnnotations,
		}}
		if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
			return err
		}
		if sample.withShoot {
			shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns.Name}}
			if err := client.IgnoreAlreadyExists(c.Create(ctx, shoot)); err != nil {
				return err
			}
		}
		p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: sample.name}}
		p.Spec.Namespace = ptr.To(ns.Name)
		if err := c.Create(ctx, p); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return err
		}
		// gardener-apiserver always serves a status; the stand-in CRD keeps what it is given.
		p.Status.StaleSinceTimestamp = sample.staleSince
		p.Status.StaleAutoDeleteTimestamp = sample.autoDelete
		p.Status.LastActivityTimestamp = sample.lastActivity
		if err := setStatus(ctx, c, p); err != nil {
			return err
		}
	}
	return nil
}
