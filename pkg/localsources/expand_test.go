package localsources

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A source's variables are expanded as the kubelet expands them: defined references replaced,
// $$ an escaped $, anything else left as written.
func TestExpandAsTheKubelet(t *testing.T) {
	defined := map[string]string{"SEED_NAME": "local", "EMPTY": ""}
	for in, want := range map[string]string{
		`{"fieldSelector":"spec.seedRef.name=$(SEED_NAME)"}`: `{"fieldSelector":"spec.seedRef.name=local"}`,
		"$(SEED_NAME)$(SEED_NAME)":                           "locallocal",
		"a$(EMPTY)b":                                         "ab",
		"$(UNDEFINED)":                                       "$(UNDEFINED)",
		"$$(SEED_NAME)":                                      "$(SEED_NAME)",
		"$(SEED_NAME":                                        "$(SEED_NAME",
		"cost: 5$":                                           "cost: 5$",
		"$x":                                                 "$x",
	} {
		assert.Equal(t, want, expand(in, defined), in)
	}
}
