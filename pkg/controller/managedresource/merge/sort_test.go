package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSortForApply(t *testing.T) {
	item := func(kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetKind(kind)
		u.SetName(name)
		return u
	}
	describe := func(items []*unstructured.Unstructured) []string {
		var out []string
		for _, u := range items {
			out = append(out, u.GetKind()+"/"+u.GetName())
		}
		return out
	}

	items := []*unstructured.Unstructured{
		item("Widget", "a"),
		item("ValidatingWebhookConfiguration", "v"),
		item("Deployment", "b"),
		item("Gadget", "z"),
		item("Deployment", "a"),
		item("APIService", "api"),
		item("Namespace", "ns"),
		item("Gadget", "a"),
		item("CustomResourceDefinition", "crd"),
		item("ServiceAccount", "sa"),
	}
	SortForApply(items, func(u *unstructured.Unstructured) *unstructured.Unstructured { return u })
	assert.Equal(t, []string{
		"Namespace/ns",
		"ServiceAccount/sa",
		"CustomResourceDefinition/crd",
		"Deployment/a",
		"Deployment/b",
		"APIService/api",
		"ValidatingWebhookConfiguration/v",
		"Gadget/a",
		"Gadget/z",
		"Widget/a",
	}, describe(items))
}
