package project

import (
	"testing"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func template(hard map[string]string, selector *metav1.LabelSelector) cmv1alpha1.QuotaConfiguration {
	t := cmv1alpha1.QuotaConfiguration{ProjectSelector: selector}
	t.Config.Spec.Hard = corev1.ResourceList{}
	for k, v := range hard {
		t.Config.Spec.Hard[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return t
}

func TestQuotaTemplateFor(t *testing.T) {
	prod := template(map[string]string{"count/shoots.core.gardener.cloud": "50"}, &metav1.LabelSelector{MatchLabels: map[string]string{"stage": "prod"}})
	all := template(map[string]string{"count/shoots.core.gardener.cloud": "10"}, &metav1.LabelSelector{})
	unselected := template(map[string]string{"count/shoots.core.gardener.cloud": "5"}, nil)

	p := newProject("dev")
	got, err := QuotaTemplateFor(QuotaTemplates{prod, all}, p)
	require.NoError(t, err)
	assert.Equal(t, "10", ptrQuantity(got, "count/shoots.core.gardener.cloud"), "the first template that matches")

	p.Labels = map[string]string{"stage": "prod"}
	got, err = QuotaTemplateFor(QuotaTemplates{prod, all}, p)
	require.NoError(t, err)
	assert.Equal(t, "50", ptrQuantity(got, "count/shoots.core.gardener.cloud"))
	got, err = QuotaTemplateFor(QuotaTemplates{all, prod}, p)
	require.NoError(t, err)
	assert.Equal(t, "10", ptrQuantity(got, "count/shoots.core.gardener.cloud"), "first match wins, not the most specific")

	got, err = QuotaTemplateFor(QuotaTemplates{unselected}, newProject("dev"))
	require.NoError(t, err)
	assert.Equal(t, "5", ptrQuantity(got, "count/shoots.core.gardener.cloud"), "no selector matches every project")

	got, err = QuotaTemplateFor(QuotaTemplates{prod}, newProject("dev"))
	require.NoError(t, err)
	assert.Nil(t, got)
	got, err = QuotaTemplateFor(nil, newProject("dev"))
	require.NoError(t, err)
	assert.Nil(t, got)

	bad := template(nil, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Like"}}})
	_, err = QuotaTemplateFor(QuotaTemplates{bad}, p)
	assert.Error(t, err)
	assert.Error(t, QuotaTemplates{all, bad}.Validate())
	assert.NoError(t, QuotaTemplates{all, prod, unselected}.Validate())
}

func ptrQuantity(t *cmv1alpha1.QuotaConfiguration, name string) string {
	if t == nil {
		return ""
	}
	q := t.Config.Spec.Hard[corev1.ResourceName(name)]
	return q.String()
}

func hardOf(rq *corev1.ResourceQuota) map[string]string {
	out := map[string]string{}
	for k, v := range rq.Spec.Hard {
		out[string(k)] = v.String()
	}
	return out
}

func TestApplyQuotaTemplate(t *testing.T) {
	p := newProject("dev")
	tmpl := template(map[string]string{"count/shoots.core.gardener.cloud": "100", "count/secrets": "800"}, nil)
	tmpl.Config.Labels = map[string]string{"origin": "gardener"}
	tmpl.Config.Annotations = map[string]string{"note": "template"}

	t.Run("new quota is the template", func(t *testing.T) {
		rq := NewResourceQuota("garden-dev", p, &tmpl)
		assert.Equal(t, "gardener", rq.Name)
		assert.Equal(t, "garden-dev", rq.Namespace)
		assert.Equal(t, map[string]string{"count/shoots.core.gardener.cloud": "100", "count/secrets": "800"}, hardOf(rq))
		assert.Equal(t, map[string]string{"origin": "gardener"}, rq.Labels)
		assert.Equal(t, map[string]string{"note": "template"}, rq.Annotations)
		require.Len(t, rq.OwnerReferences, 1)
		assert.Equal(t, "dev", rq.OwnerReferences[0].Name)
	})

	t.Run("only unavailable limits are set, absent ones removed, metadata merged", func(t *testing.T) {
		rq := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{
				Labels:      map[string]string{"origin": "operator", "team": "a"},
				Annotations: map[string]string{"raised-by": "ops"},
			},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				"count/shoots.core.gardener.cloud": resource.MustParse("250"), // raised by an operator
				"count/configmaps":                 resource.MustParse("5"),   // not in the template
			}},
		}
		ApplyQuotaTemplate(rq, p, &tmpl)
		assert.Equal(t, map[string]string{"count/shoots.core.gardener.cloud": "250", "count/secrets": "800"}, hardOf(rq))
		assert.Equal(t, map[string]string{"origin": "gardener", "team": "a"}, rq.Labels, "the template's labels win")
		assert.Equal(t, map[string]string{"raised-by": "ops", "note": "template"}, rq.Annotations)
		assert.Len(t, rq.OwnerReferences, 1)

		again := rq.DeepCopy()
		ApplyQuotaTemplate(again, p, &tmpl)
		assert.Equal(t, rq, again, "idempotent")
	})

	t.Run("template without labels leaves the quota's alone", func(t *testing.T) {
		plain := template(map[string]string{"count/secrets": "1"}, nil)
		rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}}}
		ApplyQuotaTemplate(rq, p, &plain)
		assert.Equal(t, map[string]string{"team": "a"}, rq.Labels)
		assert.Nil(t, rq.Annotations)
	})
}
