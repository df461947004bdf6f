// Package quota is the "quota" reconciler of GCM's Shoot controller: a Shoot whose SecretBinding
// or CredentialsBinding references Quotas with a cluster lifetime expires that many days after
// its creation. Its expiration time is kept in the annotation
// shoot.gardener.cloud/expiration-timestamp; once it has passed, the Shoot is deleted (with the
// deletion confirmation gardener-apiserver requires).
package quota

import (
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
)

// ExpirationAnnotation holds a Shoot's expiration time (RFC 3339).
const ExpirationAnnotation = v1beta1constants.ShootExpirationTimestamp

// day is the unit of a Quota's clusterLifetimeDays.
const day = 24 * time.Hour

// ShortestLifetime is the shortest clusterLifetimeDays of the Quotas, or nil when none sets one.
func ShortestLifetime(quotas []gardencorev1beta1.Quota) *int32 {
	var shortest *int32
	for _, q := range quotas {
		if days := q.Spec.ClusterLifetimeDays; days != nil && (shortest == nil || *days < *shortest) {
			shortest = days
		}
	}
	return shortest
}

// Action is what the reconciler does to a Shoot.
type Action int

const (
	// Keep leaves the Shoot as it is.
	Keep Action = iota
	// RemoveExpiration drops the annotation: no Quota limits the Shoot's lifetime (any more).
	RemoveExpiration
	// SetExpiration annotates the Shoot with its expiration time; it is not expired yet.
	SetExpiration
	// Delete deletes the expired Shoot (after setting its expiration, if it had none).
	Delete
)

// Decision is what Decide concludes about a Shoot.
type Decision struct {
	Action Action
	// Expiration is the annotation's value the Shoot gets (SetExpiration, and Delete of a Shoot
	// that had none).
	Expiration string
}

// Decide is Gardener's rule. Without a lifetime the annotation goes, even one a user set: no
// Quota limits the Shoot. With one, a Shoot without the annotation gets its creation time plus
// the lifetime; an annotation already there is honoured as it is: users may extend their
// Shoot's life, within the limit that gardener-apiserver's quota admission enforces when they
// change the annotation (at most the lifetime from the time of the change), not here. A Shoot
// whose expiration time has passed is deleted, unless its deletion is under way already (Gardener
// deletes it again, re-stamping the confirmation, every hour). An annotation that is not RFC 3339
// is an error.
func Decide(now time.Time, shoot *gardencorev1beta1.Shoot, lifetimeDays *int32) (Decision, error) {
	current, annotated := shoot.Annotations[ExpirationAnnotation]
	if lifetimeDays == nil {
		if annotated {
			return Decision{Action: RemoveExpiration}, nil
		}
		return Decision{Action: Keep}, nil
	}
	d := Decision{Action: Keep, Expiration: current}
	if !annotated {
		d = Decision{Action: SetExpiration, Expiration: shoot.CreationTimestamp.Add(time.Duration(*lifetimeDays) * day).Format(time.RFC3339)}
	}
	expiration, err := time.Parse(time.RFC3339, d.Expiration)
	if err != nil {
		return Decision{}, fmt.Errorf("annotation %s of shoot %s/%s: %w", ExpirationAnnotation, shoot.Namespace, shoot.Name, err)
	}
	if now.UTC().After(expiration.UTC()) && shoot.DeletionTimestamp == nil {
		d.Action = Delete
	}
	return d, nil
}
