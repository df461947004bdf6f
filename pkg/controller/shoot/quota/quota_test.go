package quota

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func quota(days *int32) gardencorev1beta1.Quota {
	return gardencorev1beta1.Quota{Spec: gardencorev1beta1.QuotaSpec{ClusterLifetimeDays: days}}
}

func TestShortestLifetime(t *testing.T) {
	assert.Nil(t, ShortestLifetime(nil))
	assert.Nil(t, ShortestLifetime([]gardencorev1beta1.Quota{quota(nil), quota(nil)}))
	assert.Equal(t, ptr.To[int32](7), ShortestLifetime([]gardencorev1beta1.Quota{quota(nil), quota(ptr.To[int32](14)), quota(ptr.To[int32](7)), quota(ptr.To[int32](30))}))
}

var created = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func shoot(annotation string) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-p", CreationTimestamp: metav1.NewTime(created)}}
	if annotation != "" {
		s.Annotations = map[string]string{ExpirationAnnotation: annotation}
	}
	return s
}

func TestDecide(t *testing.T) {
	week := ptr.To[int32](7)
	for _, tc := range []struct {
		name     string
		now      time.Time
		shoot    *gardencorev1beta1.Shoot
		lifetime *int32
		want     Decision
	}{
		{"no lifetime, no annotation", created.Add(1000 * day), shoot(""), nil, Decision{Action: Keep}},
		{"no lifetime any more: the annotation goes", created.Add(1000 * day), shoot("2026-03-08T10:00:00Z"), nil, Decision{Action: RemoveExpiration}},
		{"a lifetime: creation plus the lifetime", created.Add(day), shoot(""), week, Decision{Action: SetExpiration, Expiration: "2026-03-08T10:00:00Z"}},
		{"annotated, not expired", created.Add(7*day - time.Second), shoot("2026-03-08T10:00:00Z"), week, Decision{Action: Keep, Expiration: "2026-03-08T10:00:00Z"}},
		{"expiring at the second is not expired", created.Add(7 * day), shoot("2026-03-08T10:00:00Z"), week, Decision{Action: Keep, Expiration: "2026-03-08T10:00:00Z"}},
		{"expired", created.Add(7*day + time.Second), shoot("2026-03-08T10:00:00Z"), week, Decision{Action: Delete, Expiration: "2026-03-08T10:00:00Z"}},
		{"expired before it was ever annotated", created.Add(30 * day), shoot(""), week, Decision{Action: Delete, Expiration: "2026-03-08T10:00:00Z"}},
		{"a user's extension is honoured", created.Add(10 * day), shoot("2026-03-15T10:00:00Z"), week, Decision{Action: Keep, Expiration: "2026-03-15T10:00:00Z"}},
		{"a user's shortening too", created.Add(2 * day), shoot("2026-03-02T10:00:00Z"), week, Decision{Action: Delete, Expiration: "2026-03-02T10:00:00Z"}},
		{"another time zone", created.Add(7*day + time.Second), shoot("2026-03-08T11:00:00+01:00"), week, Decision{Action: Delete, Expiration: "2026-03-08T11:00:00+01:00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(tc.now, tc.shoot, tc.lifetime)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDecideDeletingShoot(t *testing.T) {
	s := shoot("2026-03-08T10:00:00Z")
	s.DeletionTimestamp = ptr.To(metav1.NewTime(created.Add(8 * day)))
	got, err := Decide(created.Add(9*day), s, ptr.To[int32](7))
	require.NoError(t, err)
	assert.Equal(t, Keep, got.Action, "its deletion is under way")
}

func TestDecideRefusesABadAnnotation(t *testing.T) {
	_, err := Decide(created, shoot("next tuesday"), ptr.To[int32](7))
	assert.ErrorContains(t, err, ExpirationAnnotation)
	got, err := Decide(created, shoot("next tuesday"), nil)
	require.NoError(t, err)
	assert.Equal(t, RemoveExpiration, got.Action, "without a lifetime the annotation goes, whatever it says")
}
