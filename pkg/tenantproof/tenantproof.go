// Package tenantproof is how a shoot's kube-apiserver proves, to the seed's one webhook server
// for every shoot, which tenant it is: each tenant's webhook URLs carry a proof, an HMAC of the
// tenant's name under a key of the seed, joined to the tenant in their first path segment
// (/<tenant>.<proof>/webhooks/...: a namespace name has no dot and a proof, base64url, none either). A shoot admin reads their own registrations and so their own
// proof, never the key: the proof of another tenant cannot be derived from it
// (docs/webhooks.md#tenant-proof weighs this against client certificates and network identity).
//
// The keys live in one Secret of the servers' namespace (SecretName), one data entry per key,
// named after when it was made. The servers accept every key the Secret holds; signers (the
// enrolment, the shootcabundle function, which rewrites the registrations of every enrolled shoot)
// use the newest key that is older than PromotionDelay, so that every server has read a key before
// any registration carries it. Rotate adds a key every rotation period and removes a key once it
// is older than two periods: a registration or authorizer file signed with the previous key stays
// accepted for a whole period after the next key is signing.
package tenantproof

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

const (
	// SecretName is the Secret of the servers' namespace that holds the keys.
	SecretName = "grm-webhooks-tenant-keys"
	// PromotionDelay is how long a new key is only accepted before it signs: longer than the
	// servers' RefreshInterval, so that every server knows a key before a caller presents it.
	PromotionDelay = time.Minute
	// RefreshInterval is how often a server reads the keys again.
	RefreshInterval = 10 * time.Second

	// keySize is the length of a key, in bytes (HMAC-SHA256's block is 64; 32 is its output).
	keySize = 32
	// entryPrefix starts the name of a key's data entry: key-<unix seconds of its making>.
	entryPrefix = "key-"
	// proofLength is a tenant's proof's length: HMAC-SHA256 in unpadded base64url.
	proofLength = 43
	// seedProofLength is the seed's: HMAC-SHA256 in unpadded base32.
	seedProofLength = 52
	// Separator joins tenant and proof in a path segment.
	Separator = "."
	// domain separates these MACs from any other use of the key.
	domain = "gardener-knative tenant proof\x00"
)

// Key is one key of the seed.
type Key struct {
	Made   time.Time
	secret []byte
}

// Proof is tenant t's proof under k: base64url, or, the seed's, lowercase base32, since the
// seed's registrations name a Service, whose path segments must be DNS subdomains.
func (k Key) Proof(t tenant.Name) string {
	mac := hmac.New(sha256.New, k.secret)
	mac.Write([]byte(domain))
	mac.Write([]byte(t))
	if t == Seed {
		return seedEncoding.EncodeToString(mac.Sum(nil))
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// seedEncoding writes the seed's proof as a DNS label: lowercase letters and digits, 52 of them.
var seedEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// proofLengthOf is the length of t's proofs.
func proofLengthOf(t tenant.Name) int {
	if t == Seed {
		return seedProofLength
	}
	return proofLength
}

// IsZero tells a key that was never made (no key at all).
func (k Key) IsZero() bool { return len(k.secret) == 0 }

// ID names the key without revealing it (its data entry's name).
func (k Key) ID() string { return entryPrefix + strconv.FormatInt(k.Made.Unix(), 10) }

// NewKey makes a key at now from the system's random source.
func NewKey(now time.Time) (Key, error) {
	secret := make([]byte, keySize)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("making a tenant proof key: %w", err)
	}
	return Key{Made: now.Truncate(time.Second), secret: secret}, nil
}

// Keys are the keys of the seed, newest first.
type Keys []Key

// FromSecret reads the keys of the Secret; an entry that is not a key is an error, so that a
// damaged Secret is noticed rather than half used.
func FromSecret(secret *corev1.Secret) (Keys, error) {
	var keys Keys
	for name, value := range secret.Data {
		made, ok := strings.CutPrefix(name, entryPrefix)
		seconds, err := strconv.ParseInt(made, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("the Secret %s/%s holds %q, which is not a key (%s<unix seconds>)", secret.Namespace, secret.Name, name, entryPrefix)
		}
		if len(value) != keySize {
			return nil, fmt.Errorf("the key %s of the Secret %s/%s has %d bytes, not %d", name, secret.Namespace, secret.Name, len(value), keySize)
		}
		keys = append(keys, Key{Made: time.Unix(seconds, 0), secret: value})
	}
	slices.SortFunc(keys, func(a, b Key) int { return b.Made.Compare(a.Made) })
	return keys, nil
}

// Data is the keys as the Secret's data.
func (ks Keys) Data() map[string][]byte {
	data := make(map[string][]byte, len(ks))
	for _, k := range ks {
		data[k.ID()] = k.secret
	}
	return data
}

// Signing is the key that proofs are made with at now: the newest key made at least
// PromotionDelay ago, or, while none is that old (the first key of a seed), the oldest one.
// False when there is no key.
func (ks Keys) Signing(now time.Time) (Key, bool) {
	if len(ks) == 0 {
		return Key{}, false
	}
	for _, k := range ks {
		if !now.Before(k.Made.Add(PromotionDelay)) {
			return k, true
		}
	}
	return ks[len(ks)-1], true
}

// Verify tells whether proof is tenant t's under any of the keys, comparing in constant time.
func (ks Keys) Verify(t tenant.Name, proof string) bool {
	if len(proof) != proofLengthOf(t) {
		return false
	}
	valid := false
	for _, k := range ks {
		// No early return: the time taken does not tell which key matched.
		valid = hmac.Equal([]byte(k.Proof(t)), []byte(proof)) || valid
	}
	return valid
}

// Rotate is the keys as they should be at now with a new key every rotation: a new key when the
// newest is a rotation old (or there is none), without the keys older than two rotations (never
// the signing one). changed says whether they differ from ks.
func Rotate(ks Keys, now time.Time, rotation time.Duration) (Keys, bool, error) {
	out := slices.Clone(ks)
	changed := false
	if len(out) == 0 || !now.Before(out[0].Made.Add(rotation)) {
		k, err := NewKey(now)
		if err != nil {
			return nil, false, err
		}
		out, changed = append(Keys{k}, out...), true
	}
	signing, _ := out.Signing(now)
	kept := out[:0]
	for _, k := range out {
		if k.Made.Equal(signing.Made) || now.Before(k.Made.Add(2*rotation)) {
			kept = append(kept, k)
			continue
		}
		changed = true
	}
	return kept, changed, nil
}

// Ring is a server's view of the keys: read from the seed when it is older than
// RefreshInterval, and once more (at most every rereadAfterMiss) when a proof matches none of
// them, so that a key made since is found at once while a flood of wrong proofs costs at most
// one read per second. Nothing of any tenant is read to verify a proof.
type Ring struct {
	reader client.Reader
	secret client.ObjectKey
	clock  clock.PassiveClock

	mu     sync.Mutex
	keys   Keys
	readAt time.Time
}

// rereadAfterMiss bounds the reads a proof that matches no key causes.
const rereadAfterMiss = time.Second

// NewRing reads the keys of the Secret SecretName in namespace with reader.
func NewRing(reader client.Reader, namespace string, clk clock.PassiveClock) *Ring {
	return &Ring{reader: reader, secret: client.ObjectKey{Namespace: namespace, Name: SecretName}, clock: clk}
}

// Verify tells whether proof is tenant t's. An error means the keys could not be read and none
// is held: the caller's proof cannot be told (a transient failure).
func (r *Ring) Verify(ctx context.Context, t tenant.Name, proof string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if r.readAt.IsZero() || now.Sub(r.readAt) >= RefreshInterval {
		if err := r.read(ctx, now); err != nil && r.keys == nil {
			return false, err
		}
	}
	if r.keys.Verify(t, proof) {
		return true, nil
	}
	if now.Sub(r.readAt) < rereadAfterMiss {
		return false, nil
	}
	if err := r.read(ctx, now); err != nil && r.keys == nil {
		return false, err
	}
	return r.keys.Verify(t, proof), nil
}

// read reads the keys; on failure the keys held are kept (a key is never withdrawn because the
// seed was unreachable for a moment).
func (r *Ring) read(ctx context.Context, now time.Time) error {
	r.readAt = now
	secret := &corev1.Secret{}
	if err := r.reader.Get(ctx, r.secret, secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.keys = Keys{}
			return nil
		}
		return fmt.Errorf("reading the tenant proof keys %s: %w", r.secret, err)
	}
	keys, err := FromSecret(secret)
	if err != nil {
		return err
	}
	r.keys = keys
	return nil
}

// Secret is the Secret that holds keys in namespace.
func Secret(namespace string, keys Keys) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SecretName, Labels: map[string]string{"app.kubernetes.io/part-of": "gardener-knative"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       keys.Data(),
	}
}

// KeyStore is where the keys' Secret is read and, the seed's first key, made.
type KeyStore interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// SigningKey is the key that signs proofs in namespace at now, made (the seed's first) when the
// Secret does not exist yet: what the enrolment signs a tenant's urls with, and the
// webhookcertificates function the seed's registrations. Rotating is the shootcabundle function's.
func SigningKey(ctx context.Context, c KeyStore, namespace string, now time.Time) (Key, error) {
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: SecretName}, secret)
	if apierrors.IsNotFound(err) {
		first, err := NewKey(now)
		if err != nil {
			return Key{}, err
		}
		secret = Secret(namespace, Keys{first})
		if err = c.Create(ctx, secret); err == nil {
			return first, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return Key{}, fmt.Errorf("making the tenant proof keys %s/%s: %w", namespace, SecretName, err)
		}
		// Made meanwhile by another enrolment: sign with its key.
		err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: SecretName}, secret)
	}
	if err != nil {
		return Key{}, fmt.Errorf("reading the tenant proof keys %s/%s: %w", namespace, SecretName, err)
	}
	keys, err := FromSecret(secret)
	if err != nil {
		return Key{}, err
	}
	signing, ok := keys.Signing(now)
	if !ok {
		return Key{}, fmt.Errorf("the Secret %s/%s holds no tenant proof key", namespace, SecretName)
	}
	return signing, nil
}

// Seed is the seed itself among the callers of a multi-tenant server: its own kube-apiserver,
// through the seed's registrations (config/seed/), which the webhookcertificates function signs
// (SeedPath). Its proof is that of the empty name, which no tenant has.
const Seed tenant.Name = ""

// SeedSegment names the seed in the first segment of a path (/seed.<proof>/...), which is a DNS
// subdomain, as a Service's path segments must be. It is read as the seed's before any tenant's:
// a namespace "seed" is never served as a tenant (and none has the default prefix).
const SeedSegment = "seed"

// SeedPath is path below the seed with the seed's proof under key.
func SeedPath(key Key, path string) string {
	return "/" + SeedSegment + Separator + key.Proof(Seed) + path
}

// ParsePath splits a request path of the form /<tenant>.<proof>/<rest> into the tenant (Seed
// for SeedSegment), its proof (empty when the segment has none) and /<rest>. ok is false when the
// first segment names neither the seed nor a tenant (a namespace name, a DNS-1123 label,
// starting with prefix), or has nothing after it. It never looks further than the first segment:
// which webhook /<rest> is, the server decides, and whether the proof holds, Ring.
func ParsePath(path, prefix string) (t tenant.Name, proof, rest string, ok bool) {
	if !strings.HasPrefix(path, "/") {
		return "", "", "", false
	}
	first, rest, found := strings.Cut(path[1:], "/")
	name, proof, _ := strings.Cut(first, Separator)
	if !found || rest == "" {
		return "", "", "", false
	}
	if name == SeedSegment {
		return Seed, proof, "/" + rest, true
	}
	if !tenant.Valid(name, prefix) {
		return "", "", "", false
	}
	return tenant.Name(name), proof, "/" + rest, true
}

// URL is raw at tenant t's path with t's proof under key: its first path segment (a template's
// placeholder tenant, or a tenant with an earlier proof) replaced by t and its proof, and its
// scheme and host by server's when set.
func URL(raw string, t tenant.Name, key Key, server string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	_, _, rest, ok := ParsePath(u.Path, tenant.DefaultPrefix)
	if !ok {
		return "", fmt.Errorf("the url %s addresses no tenant", raw)
	}
	if key.IsZero() {
		return "", ErrNoKey
	}
	u.Path = "/" + string(t) + Separator + key.Proof(t) + rest
	if server != "" {
		s, err := url.Parse(server)
		if err != nil || s.Host == "" {
			return "", fmt.Errorf("server %q is no URL", server)
		}
		u.Scheme, u.Host = s.Scheme, s.Host
	}
	return u.String(), nil
}

// ErrNoKey: a url without a proof would be refused by every server.
var ErrNoKey = errors.New("no tenant proof key to sign the tenant's urls with")
