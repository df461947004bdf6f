package tokeninvalidator

import (
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/tokeninvalidator"
)

// Gardener v1.113's reconciler cases: the label follows the ServiceAccount.
func TestDecide(t *testing.T) {
	skip := map[string]string{tokeninvalidator.LabelSkip: "true"}
	considered := map[string]string{tokeninvalidator.LabelConsider: "true"}
	for _, tc := range []struct {
		name      string
		automount *bool
		saLabels  map[string]string
		labels    map[string]string
		want      Decision
	}{
		{name: "automount unset", automount: nil, want: Restore},
		{name: "automount unset, skip label", automount: nil, saLabels: skip, want: Restore},
		{name: "automount true", automount: ptr.To(true), labels: considered, want: Restore},
		{name: "automount true, skip label", automount: ptr.To(true), saLabels: skip, want: Restore},
		{name: "automount false, skip label", automount: ptr.To(false), saLabels: skip, labels: considered, want: Restore},
		{name: "automount false, skip label with an empty value", automount: ptr.To(false), saLabels: map[string]string{tokeninvalidator.LabelSkip: ""}, want: Restore},
		{name: "automount false, considered already", automount: ptr.To(false), labels: considered, want: Keep},
		{name: "automount false", automount: ptr.To(false), want: Consider},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Labels: tc.saLabels}, AutomountServiceAccountToken: tc.automount}
			assert.Equal(t, tc.want, Decide(tc.labels, sa))
		})
	}
}

// The purpose label is added unless the Secret has a purpose; the consider label as decided.
func TestApply(t *testing.T) {
	meta := metav1.ObjectMeta{}
	apply(&meta, Consider)
	assert.Equal(t, map[string]string{resourcesv1alpha1.ResourceManagerPurpose: "token-invalidator", tokeninvalidator.LabelConsider: "true"}, meta.Labels)
	apply(&meta, Restore)
	assert.Equal(t, map[string]string{resourcesv1alpha1.ResourceManagerPurpose: "token-invalidator"}, meta.Labels)

	other := metav1.ObjectMeta{Labels: map[string]string{resourcesv1alpha1.ResourceManagerPurpose: "other"}}
	apply(&other, Keep)
	assert.Equal(t, map[string]string{resourcesv1alpha1.ResourceManagerPurpose: "other"}, other.Labels, "another purpose stays")
}

// Updates of ServiceAccounts only, as Gardener's predicate (which compares old and new too).
func TestServiceAccountPredicate(t *testing.T) {
	assert.False(t, ServiceAccountPredicate(function.Event{Created: true}))
	assert.False(t, ServiceAccountPredicate(function.Event{Deleted: true}))
	assert.True(t, ServiceAccountPredicate(function.Event{}))
}

// As Gardener always set them together: the controller runs only with the webhook.
func TestConfigNeedsBothKeys(t *testing.T) {
	for _, tc := range []struct{ controller, webhook, want bool }{
		{false, false, false}, {true, false, false}, {false, true, false}, {true, true, true},
	} {
		rm := &componentconfig.ResourceManagerFile{ResourceManagerConfiguration: &rmv1alpha1.ResourceManagerConfiguration{}}
		rm.Extensions.Controllers.TokenInvalidator.Enabled = tc.controller
		rm.Extensions.Webhooks.TokenInvalidator.Enabled = tc.webhook
		cfg := &Config{}
		cfg.FromResourceManager(rm)
		assert.Equal(t, tc.want, cfg.Enabled, "controller %t, webhook %t", tc.controller, tc.webhook)
	}
}
