package agentreconciliationdelay

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Gardener's own expectations (its integration test of the controller): 31 Nodes spread over
// [5s, 30s], and 10 over the same range.
func TestDelaysAsGardener(t *testing.T) {
	names := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("node-%02d", i))
		}
		return out
	}
	want31 := []string{"5s", "5.806451612s", "6.612903225s", "7.419354838s", "8.225806451s", "9.032258064s", "9.838709677s", "10.64516129s",
		"11.451612903s", "12.258064516s", "13.064516129s", "13.870967741s", "14.677419354s", "15.483870967s", "16.29032258s", "17.096774193s",
		"17.903225806s", "18.709677419s", "19.516129032s", "20.322580645s", "21.129032258s", "21.93548387s", "22.741935483s", "23.548387096s",
		"24.354838709s", "25.161290322s", "25.967741935s", "26.774193548s", "27.580645161s", "28.387096774s"}
	delays := Delays(names(31), 5*time.Second, 30*time.Second)
	for i, want := range want31 {
		assert.Equal(t, want, delays[fmt.Sprintf("node-%02d", i)], "node %d of 31", i)
	}
	delays = Delays(names(10), 5*time.Second, 30*time.Second)
	for i, want := range []string{"5s", "7.5s", "10s", "12.5s", "15s", "17.5s", "20s", "22.5s", "25s", "27.5s"} {
		assert.Equal(t, want, delays[fmt.Sprintf("node-%02d", i)])
	}
	assert.Equal(t, map[string]string{"only": "5s"}, Delays([]string{"only"}, 5*time.Second, 30*time.Second), "one Node gets the minimum")
	assert.Equal(t, map[string]string{"a": "0s", "b": "0s"}, Delays([]string{"a", "b"}, 0, 0))
}

// Nodes are ordered by name, and those of a worker pool with serial reconciliation are left out.
func TestIncluded(t *testing.T) {
	node := func(name, secret string) metav1.PartialObjectMetadata {
		n := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if secret != "" {
			n.Labels = map[string]string{"worker.gardener.cloud/gardener-node-agent-secret-name": secret}
		}
		return n
	}
	secret := func(name, serial string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"reconciliation.osc.node-agent.gardener.cloud/serial": serial}}}
	}
	nodes := []metav1.PartialObjectMetadata{node("c", "pool-a"), node("a", "pool-b"), node("b", ""), node("d", "pool-c")}
	assert.Equal(t, []string{"a", "b", "c", "d"}, Included(nodes, nil))
	assert.Equal(t, []string{"b", "c", "d"}, Included(nodes, []metav1.PartialObjectMetadata{secret("pool-b", "true"), secret("pool-c", "True")}), `only "true" asks for serial reconciliation`)
}

// GRM refuses negative delays and a minimum above the maximum.
func TestValidate(t *testing.T) {
	assert.NoError(t, Validate(0, 0))
	assert.Error(t, Validate(0, -5*time.Second))
	assert.Error(t, Validate(10*time.Second, 5*time.Second))
	assert.Error(t, Validate(-time.Second, 5*time.Second))
}
