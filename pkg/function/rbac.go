package function

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// JoinRules joins the reconcilers' rules into one rule per API group and set of verbs, so that the
// function's ClusterRole reads as what the function may do rather than as overlapping lists.
// The permissions are exactly the union of the parts; rules narrowed to resource names or about
// non-resource URLs are kept as they are.
func JoinRules(parts ...[]rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type groupResource struct{ group, resource string }
	var (
		order  []groupResource
		narrow []rbacv1.PolicyRule
	)
	verbs := map[groupResource]sets.Set[string]{}
	for _, part := range parts {
		for _, rule := range part {
			if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
				narrow = append(narrow, rule)
				continue
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					gr := groupResource{group, resource}
					if verbs[gr] == nil {
						verbs[gr] = sets.New[string]()
						order = append(order, gr)
					}
					verbs[gr].Insert(rule.Verbs...)
				}
			}
		}
	}
	var joined []rbacv1.PolicyRule
	index := map[string]int{}
	for _, gr := range order {
		v := sets.List(verbs[gr])
		key := gr.group + "|" + strings.Join(v, ",")
		if i, ok := index[key]; ok {
			joined[i].Resources = append(joined[i].Resources, gr.resource)
			continue
		}
		index[key] = len(joined)
		joined = append(joined, rbacv1.PolicyRule{APIGroups: []string{gr.group}, Resources: []string{gr.resource}, Verbs: v})
	}
	return append(joined, narrow...)
}
