package sources

import (
	"context"
	"fmt"
	"slices"
	"strings"

	eventingduckv1 "knative.dev/eventing/pkg/apis/duck/v1"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"knative.dev/pkg/ptr"
)

// Plumbing is what an operator chooses of the event plumbing (docs/deployment.md, "The
// Broker"): the Broker's class and its config, and the delivery every Trigger inherits from the
// Broker. config/ ships DefaultPlumbing; `go run ./hack/genconfig` takes the same choices as
// flags, and in config/eventing.yaml they are the Broker's class annotation, spec.config and
// spec.delivery, one place to edit.
type Plumbing struct {
	// BrokerClass is the Broker's class (eventing.knative.dev/broker.class), e.g.
	// MTChannelBasedBroker (every Eventing installation has it), Kafka or RabbitMQBroker.
	BrokerClass string
	// BrokerConfig is the Broker's spec.config, e.g. the ConfigMap naming the channel of a
	// channel-based Broker or the topic settings of a Kafka Broker; nil takes the class's
	// default (config-br-defaults).
	BrokerConfig *duckv1.KReference
	// Retries, BackoffPolicy and BackoffDelay are the delivery policy of every Trigger: after the
	// last retry the event goes to the dead-letter sink (sources/deadletter), which logs and
	// counts it; the sweeps catch up on it.
	Retries       int32
	BackoffPolicy eventingduckv1.BackoffPolicyType
	// BackoffDelay is an ISO 8601 duration (PT0.2S).
	BackoffDelay string
}

// DefaultPlumbing is what config/ ships: Knative's channel-based Broker with the channel its
// installation defaults to, exponential backoff from 200 ms, five retries (about 6 s in all),
// then the dead-letter sink.
func DefaultPlumbing() Plumbing {
	return Plumbing{
		BrokerClass:   "MTChannelBasedBroker",
		Retries:       5,
		BackoffPolicy: eventingduckv1.BackoffPolicyExponential,
		BackoffDelay:  "PT0.2S",
	}
}

// Delivery is the Broker's delivery spec, which every Trigger inherits (none sets its own).
func (p Plumbing) Delivery() *eventingduckv1.DeliverySpec {
	policy := p.BackoffPolicy
	return &eventingduckv1.DeliverySpec{
		Retry:         ptr.Int32(p.Retries),
		BackoffPolicy: &policy,
		BackoffDelay:  ptr.String(p.BackoffDelay),
		DeadLetterSink: &duckv1.Destination{
			Ref: &duckv1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: DeadLetter},
		},
	}
}

// Validate checks the choices as Knative's admission would (the delivery spec), and that a
// class is named (the annotation is immutable: an empty one would take whatever the cluster's
// default is at the time of the first apply).
func (p Plumbing) Validate() error {
	if p.BrokerClass == "" {
		return fmt.Errorf("the Broker's class must be named")
	}
	if p.Retries < 0 {
		return fmt.Errorf("retries must not be negative, got %d", p.Retries)
	}
	if err := p.Delivery().Validate(context.Background()); err != nil {
		return fmt.Errorf("delivery: %w", err)
	}
	return nil
}

// ParseReference reads a Broker config reference as the generator's flag takes it:
// <apiVersion>/<kind>/<namespace>/<name>, the apiVersion with or without its group
// (v1/ConfigMap/knative-eventing/kafka-broker-config).
func ParseReference(s string) (*duckv1.KReference, error) {
	parts := strings.Split(s, "/")
	if len(parts) == 5 { // group/version/kind/namespace/name
		parts = append([]string{parts[0] + "/" + parts[1]}, parts[2:]...)
	}
	if len(parts) != 4 || slices.Contains(parts, "") {
		return nil, fmt.Errorf("%q is not <apiVersion>/<kind>/<namespace>/<name>", s)
	}
	return &duckv1.KReference{APIVersion: parts[0], Kind: parts[1], Namespace: parts[2], Name: parts[3]}, nil
}
