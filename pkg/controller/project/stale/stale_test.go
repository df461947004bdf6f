package stale

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	created  = time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	defaults = Settings{MinimumLifetimeDays: 30, StaleGracePeriodDays: 14, StaleExpirationTimeDays: 90}
)

func days(n int) time.Duration { return time.Duration(n) * day }

func at(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }

func TestExemption(t *testing.T) {
	for _, tc := range []struct {
		name         string
		now          time.Time
		lastActivity *metav1.Time
		annotations  map[string]string
		want         Verdict
	}{
		{name: "younger than the minimum lifetime", now: created.Add(days(30) - time.Second), want: YoungerThanMinimumLifetime},
		{name: "exactly the minimum lifetime old is checked", now: created.Add(days(30))},
		{name: "old and never active is checked", now: created.Add(days(100))},
		{name: "active within the minimum lifetime", now: created.Add(days(100)), lastActivity: at(created.Add(days(71))), want: RecentlyActive},
		{name: "active exactly the minimum lifetime ago is checked", now: created.Add(days(100)), lastActivity: at(created.Add(days(70)))},
		{name: "active long ago is checked", now: created.Add(days(100)), lastActivity: at(created.Add(days(10)))},
		{
			name: "skip annotation wins over everything", now: created.Add(days(100)),
			annotations: map[string]string{v1beta1constants.ProjectSkipStaleCheck: "true"}, want: SkipStaleCheck,
		},
		{
			name: "skip annotation is a boolean", now: created.Add(days(100)),
			annotations: map[string]string{v1beta1constants.ProjectSkipStaleCheck: "1"}, want: SkipStaleCheck,
		},
		{
			name: "skip annotation set to false is ignored", now: created.Add(days(100)),
			annotations: map[string]string{v1beta1constants.ProjectSkipStaleCheck: "false"},
		},
		{
			name: "skip annotation that is no boolean is ignored", now: created.Add(days(100)),
			annotations: map[string]string{v1beta1constants.ProjectSkipStaleCheck: "yes please"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(created)}}
			p.Status.LastActivityTimestamp = tc.lastActivity
			assert.Equal(t, tc.want, Exemption(tc.now, p, tc.annotations, defaults.MinimumLifetime()))
		})
	}
}

func TestMarkStale(t *testing.T) {
	since := created.Add(days(40))
	for _, tc := range []struct {
		name                    string
		now                     time.Time
		settings                Settings
		since, autoDelete       *metav1.Time
		wantSince, wantDeleteAt *metav1.Time
	}{
		{name: "first found stale: stale since now, no auto-delete yet", now: since, wantSince: at(since)},
		{name: "first found stale, to the second", now: since.Add(1500 * time.Millisecond), wantSince: at(since.Add(time.Second))},
		{name: "within the grace period", now: since.Add(days(14) - time.Second), since: at(since), wantSince: at(since)},
		{name: "grace period over: auto-delete after the expiration time", now: since.Add(days(14)), since: at(since), wantSince: at(since), wantDeleteAt: at(since.Add(days(90)))},
		{
			name: "within a grace period made longer: an assigned auto-delete timestamp is removed",
			now:  since.Add(days(20)), settings: Settings{StaleGracePeriodDays: 30, StaleExpirationTimeDays: 90},
			since: at(since), autoDelete: at(since.Add(days(90))), wantSince: at(since),
		},
		{
			name: "a longer expiration time extends the auto-delete timestamp",
			now:  since.Add(days(20)), settings: Settings{StaleGracePeriodDays: 14, StaleExpirationTimeDays: 120},
			since: at(since), autoDelete: at(since.Add(days(90))), wantSince: at(since), wantDeleteAt: at(since.Add(days(120))),
		},
		{
			name: "a shorter expiration time never shortens the auto-delete timestamp",
			now:  since.Add(days(20)), settings: Settings{StaleGracePeriodDays: 14, StaleExpirationTimeDays: 30},
			since: at(since), autoDelete: at(since.Add(days(90))), wantSince: at(since), wantDeleteAt: at(since.Add(days(90))),
		},
		{
			name: "no grace period: auto-delete timestamp at once",
			now:  since, settings: Settings{StaleExpirationTimeDays: 90},
			wantSince: at(since), wantDeleteAt: at(since.Add(days(90))),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings := tc.settings
			if settings == (Settings{}) {
				settings = defaults
			}
			status := &gardencorev1beta1.ProjectStatus{StaleSinceTimestamp: tc.since, StaleAutoDeleteTimestamp: tc.autoDelete}
			MarkStale(tc.now, status, settings)
			assert.Equal(t, tc.wantSince, status.StaleSinceTimestamp)
			assert.Equal(t, tc.wantDeleteAt, status.StaleAutoDeleteTimestamp)
		})
	}
}

func TestMarkNotStale(t *testing.T) {
	status := &gardencorev1beta1.ProjectStatus{StaleSinceTimestamp: at(created), StaleAutoDeleteTimestamp: at(created.Add(days(90))), LastActivityTimestamp: at(created)}
	MarkNotStale(status)
	assert.Equal(t, &gardencorev1beta1.ProjectStatus{LastActivityTimestamp: at(created)}, status)
}

func TestAutoDeleteDue(t *testing.T) {
	deleteAt := created.Add(days(90))
	assert.False(t, AutoDeleteDue(deleteAt, gardencorev1beta1.ProjectStatus{StaleSinceTimestamp: at(created)}), "no auto-delete timestamp")
	assert.False(t, AutoDeleteDue(deleteAt.Add(-time.Second), gardencorev1beta1.ProjectStatus{StaleAutoDeleteTimestamp: at(deleteAt)}), "before it")
	assert.True(t, AutoDeleteDue(deleteAt, gardencorev1beta1.ProjectStatus{StaleAutoDeleteTimestamp: at(deleteAt)}), "at it")
	assert.True(t, AutoDeleteDue(deleteAt.Add(time.Hour), gardencorev1beta1.ProjectStatus{StaleAutoDeleteTimestamp: at(deleteAt)}), "after it")
}

func TestConfirmDeletion(t *testing.T) {
	p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"keep": "me"}}}
	ConfirmDeletion(created.Add(time.Nanosecond), p)
	assert.Equal(t, map[string]string{
		"keep":                                "me",
		v1beta1constants.ConfirmationDeletion: "true",
		v1beta1constants.GardenerTimestamp:    "2026-01-01T08:00:00.000000001Z",
	}, p.Annotations)
}
