package tokenrequestor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRenewAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	noJitter := func(d time.Duration, _ float64) time.Duration { return d }
	assert.Equal(t, 48*time.Minute, RenewAfter(now, now.Add(time.Hour), noJitter), "80 % of the lifetime")
	assert.Equal(t, 24*time.Hour*80/100, RenewAfter(now, now.Add(72*time.Hour), noJitter), "a day at most")
	var factor float64
	RenewAfter(now, now.Add(time.Hour), func(d time.Duration, f float64) time.Duration { factor = f; return d })
	assert.Equal(t, 0.05, factor, "Gardener's jitter")
}

func TestExpirationAndRelevance(t *testing.T) {
	d, err := Expiration(&corev1.Secret{})
	require.NoError(t, err)
	assert.Equal(t, DefaultExpiration, d)
	d, err = Expiration(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"serviceaccount.resources.gardener.cloud/token-expiration-duration": "6h"}}})
	require.NoError(t, err)
	assert.Equal(t, 6*time.Hour, d)
	_, err = Expiration(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"serviceaccount.resources.gardener.cloud/token-expiration-duration": "soon"}}})
	assert.Error(t, err)

	purpose := map[string]string{"resources.gardener.cloud/purpose": "token-requestor"}
	assert.True(t, Relevant(purpose, ""), "no class: every Secret of the purpose")
	assert.False(t, Relevant(purpose, "shoot"), "a class: only Secrets of it")
	assert.True(t, Relevant(map[string]string{"resources.gardener.cloud/purpose": "token-requestor", "resources.gardener.cloud/class": "shoot"}, "shoot"))
	assert.False(t, Relevant(map[string]string{"resources.gardener.cloud/class": "shoot"}, "shoot"))

	assert.Nil(t, TargetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"token-requestor.resources.gardener.cloud/target-secret-name": "x"}}}), "a name without a namespace names none")
}

func TestPopulateData(t *testing.T) {
	data := map[string][]byte{"bundle.crt": []byte("old")}
	require.NoError(t, Populate(data, "t1", nil))
	assert.Equal(t, map[string][]byte{"token": []byte("t1")}, data, "no CA asked: the old bundle goes")
	require.NoError(t, Populate(data, "t2", []byte("ca")))
	token, err := Token(data)
	require.NoError(t, err)
	assert.Equal(t, "t2", token)
	ok, err := CAUpToDate(data, []byte("ca"))
	require.NoError(t, err)
	assert.True(t, ok)
	Depopulate(data)
	assert.Empty(t, data)
}
