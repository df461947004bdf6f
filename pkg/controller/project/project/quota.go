package project

import (
	"maps"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ResourceQuotaName is the name of the ResourceQuota the controller maintains in every project
// namespace that a quota template applies to.
const ResourceQuotaName = "gardener"

// QuotaTemplateFor returns the first template whose projectSelector matches the project's
// labels, nil if none does. A template without a selector matches every project (Gardener
// defaults it to the empty selector).
func QuotaTemplateFor(templates QuotaTemplates, project *gardencorev1beta1.Project) (*cmv1alpha1.QuotaConfiguration, error) {
	for i := range templates {
		selector := labels.Everything()
		if templates[i].ProjectSelector != nil {
			var err error
			if selector, err = metav1.LabelSelectorAsSelector(templates[i].ProjectSelector); err != nil {
				return nil, err
			}
		}
		if selector.Matches(labels.Set(project.Labels)) {
			return &templates[i], nil
		}
	}
	return nil, nil
}

// ApplyQuotaTemplate brings the project namespace's ResourceQuota in line with the template:
// the project as an owner; the template's labels and annotations merged over the quota's own;
// and spec.hard holding exactly the template's resources, where a limit the quota already sets
// is kept (operators raise a project's limits on the object, and those raises must survive)
// and a resource the template does not name is removed.
func ApplyQuotaTemplate(quota *corev1.ResourceQuota, project *gardencorev1beta1.Project, template *cmv1alpha1.QuotaConfiguration) {
	quota.OwnerReferences = mergeOwnerReference(quota.OwnerReferences, controllerRef(project))
	quota.Labels = mergeStrings(quota.Labels, template.Config.Labels)
	quota.Annotations = mergeStrings(quota.Annotations, template.Config.Annotations)
	hard := make(corev1.ResourceList, len(template.Config.Spec.Hard))
	for name, limit := range template.Config.Spec.Hard {
		if current, set := quota.Spec.Hard[name]; set {
			limit = current
		}
		hard[name] = limit
	}
	quota.Spec.Hard = hard
}

// NewResourceQuota is the quota ApplyQuotaTemplate makes of nothing.
func NewResourceQuota(namespace string, project *gardencorev1beta1.Project, template *cmv1alpha1.QuotaConfiguration) *corev1.ResourceQuota {
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: ResourceQuotaName, Namespace: namespace}}
	ApplyQuotaTemplate(quota, project, template)
	return quota
}

// mergeStrings returns base with extra's entries over it, base itself when extra is empty.
func mergeStrings(base, extra map[string]string) map[string]string {
	if len(extra) == 0 {
		return base
	}
	out := make(map[string]string, len(base)+len(extra))
	maps.Copy(out, base)
	maps.Copy(out, extra)
	return out
}
