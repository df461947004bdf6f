package sources_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventingduckv1 "knative.dev/eventing/pkg/apis/duck/v1"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/sources"
)

// The operator's choices land on the Broker, the one place they are read: its class, config
// and delivery; no Trigger has a delivery of its own, so every one inherits the Broker's.
func TestPlumbingIsTheBrokersAndEveryTriggerInheritsIt(t *testing.T) {
	kafka := sources.Plumbing{
		BrokerClass:   "Kafka",
		BrokerConfig:  &duckv1.KReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "knative-eventing", Name: "kafka-broker-config"},
		Retries:       10,
		BackoffPolicy: eventingduckv1.BackoffPolicyLinear,
		BackoffDelay:  "PT0.5S",
	}
	objs, err := sources.ObjectsFor(functions.All, function.PerSeed, kafka)
	require.NoError(t, err)
	var brokers, triggers int
	for _, obj := range objs {
		switch o := obj.(type) {
		case *eventingv1.Broker:
			brokers++
			assert.Equal(t, "Kafka", o.Annotations[eventingv1.BrokerClassAnnotationKey])
			assert.Equal(t, kafka.BrokerConfig, o.Spec.Config)
			assert.Equal(t, kafka.Delivery(), o.Spec.Delivery)
			assert.Equal(t, sources.DeadLetter, o.Spec.Delivery.DeadLetterSink.Ref.Name)
		case *eventingv1.Trigger:
			triggers++
			assert.Nil(t, o.Spec.Delivery, "Trigger %s", o.Name)
		}
	}
	assert.Equal(t, 1, brokers)
	assert.Equal(t, len(functions.All), triggers)
}

func TestPlumbingIsValidatedAsKnativeWould(t *testing.T) {
	require.NoError(t, sources.DefaultPlumbing().Validate())
	for name, change := range map[string]func(*sources.Plumbing){
		"no class":           func(p *sources.Plumbing) { p.BrokerClass = "" },
		"negative retries":   func(p *sources.Plumbing) { p.Retries = -1 },
		"unknown policy":     func(p *sources.Plumbing) { p.BackoffPolicy = "quadratic" },
		"delay not ISO 8601": func(p *sources.Plumbing) { p.BackoffDelay = "200ms" },
	} {
		p := sources.DefaultPlumbing()
		change(&p)
		assert.Error(t, p.Validate(), name)
		_, err := sources.ObjectsFor(functions.All, function.PerSeed, p)
		assert.Error(t, err, name)
	}
}

func TestParseReference(t *testing.T) {
	ref, err := sources.ParseReference("v1/ConfigMap/knative-eventing/kafka-broker-config")
	require.NoError(t, err)
	assert.Equal(t, &duckv1.KReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "knative-eventing", Name: "kafka-broker-config"}, ref)
	ref, err = sources.ParseReference("messaging.knative.dev/v1/KafkaChannel/knative-eventing/default")
	require.NoError(t, err)
	assert.Equal(t, "messaging.knative.dev/v1", ref.APIVersion)
	assert.Equal(t, "KafkaChannel", ref.Kind)
	for _, bad := range []string{"", "ConfigMap/name", "v1/ConfigMap//name", "a/b/c/d/e/f"} {
		_, err := sources.ParseReference(bad)
		assert.Error(t, err, bad)
	}
}
