// Package manifests reads what a ManagedResource wants in the target cluster out of its Secrets,
// as GRM's ManagedResource controller does before it applies anything: the objects, the
// .status.resources entries they make, the objects left to others (mode Ignore), the decoding
// errors and the checksum of the data. It needs no API server: the caller reads the Secrets and
// answers which kinds are namespaced.
package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/andybalholm/brotli"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource/merge"
)

// Scope tells whether the target cluster serves a kind as namespaced, and whether it knows the
// kind at all (a CRD the ManagedResource itself brings may not be there yet).
type Scope func(gvk schema.GroupVersionKind) (namespaced, known bool)

// Options is what decoding takes from the ManagedResource and the controller's configuration.
type Options struct {
	// InjectLabels is the ManagedResource's .spec.injectLabels.
	InjectLabels map[string]string
	// ManagedBy is the value of the resources.gardener.cloud/managed-by label the controller
	// puts on everything it applies; empty means GRM's default, "gardener".
	ManagedBy string
	// ForceOverwriteLabels and ForceOverwriteAnnotations are the ManagedResource's
	// .spec.forceOverwriteLabels and .spec.forceOverwriteAnnotations.
	ForceOverwriteLabels, ForceOverwriteAnnotations bool
	// Previous is the ManagedResource's .status.resources: what it applied last time.
	Previous []resourcesv1alpha1.ObjectReference
	// Equivalences are the group kinds under which a previous entry still counts as the same
	// object (merge.NewEquivalences of the ManagedResource's .spec.equivalences).
	Equivalences merge.Equivalences
}

// Labels are the labels the apply injects into every object (merge.InjectLabels) before merging
// it: the ManagedResource's injectLabels and the managed-by label.
func (o Options) Labels() map[string]string {
	labels := make(map[string]string, len(o.InjectLabels)+1)
	maps.Copy(labels, o.InjectLabels)
	labels[resourcesv1alpha1.ManagedBy] = o.managedBy()
	return labels
}

func (o Options) managedBy() string {
	if o.ManagedBy == "" {
		return resourcesv1alpha1.GardenerManager
	}
	return o.ManagedBy
}

// Object is one object the ManagedResource wants in the target cluster.
type Object struct {
	// Desired is the object as decoded, its namespace defaulted or cleared by scope.
	Desired *unstructured.Unstructured
	// Reference is its .status.resources entry.
	Reference resourcesv1alpha1.ObjectReference
	// Merge holds the options for merge.Merge: the force-overwrite switches and what the
	// previous entry recorded. The caller sets HorizontallyScaled.
	Merge merge.Options
}

// DecodingError is a document of a Secret that is not an object. It does not stop the
// reconciliation: the other objects are applied, and the ManagedResource reports it.
type DecodingError struct {
	// Secret is the Secret's namespace and name.
	Secret types.NamespacedName
	// Key is the data key of the Secret.
	Key string
	// Index is the position of the document among those the decoder yields for the key, from
	// 0: failed, null and comment-only documents count, documents with nothing at all do not.
	Index int
	// Err is the decoder's error.
	Err error
}

// Error is Gardener's message for the document, as the ManagedResource's condition shows it.
func (e *DecodingError) Error() string {
	return fmt.Sprintf("Could not decode resource at index %d in '%s' in secret '%s': %s.", e.Index, e.Key, e.Secret, e.Err)
}

// Unwrap lets errors.Is and errors.As see the decoder's error.
func (e *DecodingError) Unwrap() error { return e.Err }

// Result is what a ManagedResource's Secrets ask for.
type Result struct {
	// Objects are the objects to apply, in the order of the Secrets, their keys and documents;
	// merge.SortForApply orders them for applying.
	Objects []Object
	// Resources are the new .status.resources, sorted (SortObjectReferences).
	Resources []resourcesv1alpha1.ObjectReference
	// Ignored are the entries of the objects with mode Ignore, which are not applied.
	Ignored []resourcesv1alpha1.ObjectReference
	// Release are the Ignored entries that were in Previous: the caller releases those objects
	// (merge.Release) instead of deleting them.
	Release []resourcesv1alpha1.ObjectReference
	// Stale are the Previous entries that no object or ignored object matches: the caller
	// deletes those objects.
	Stale []resourcesv1alpha1.ObjectReference
	// Errors are the documents that could not be decoded.
	Errors []*DecodingError
	// Checksum is the .status.secretsDataChecksum.
	Checksum string
}

// DecodingFailure is the message of the ResourcesApplied condition (reason DecodingFailed) that
// reports Errors after an otherwise successful apply.
func (r *Result) DecodingFailure() string {
	return fmt.Sprintf("Could not decode all new resources: %v", r.Errors)
}

// Decode reads the objects of a ManagedResource's Secrets (given in .spec.secretRefs order): every
// data key in sorted order, Brotli-compressed when the key ends in ".br", as a stream of YAML
// documents or JSON objects; empty documents are skipped. An object of a namespaced kind, or of a
// kind scope does not know (other than Namespace), without a namespace goes to "default"; a
// cluster-scoped one loses its namespace. The checksum is the SHA-256 of the raw data of a key
// once for every object with a mode other than Ignore that the key yields (so it changes when the
// data changes, and when a document turns into an object or back).
func Decode(secrets []*corev1.Secret, scope Scope, opts Options) Result {
	d := decoding{
		scope:    scope,
		opts:     opts,
		previous: merge.NewIndex(opts.Previous, opts.Equivalences),
		checksum: sha256.New(),
	}
	for _, secret := range secrets {
		for _, key := range slices.Sorted(maps.Keys(secret.Data)) {
			d.decodeKey(types.NamespacedName{Namespace: secret.Namespace, Name: secret.Name}, key, secret.Data[key])
		}
	}
	SortObjectReferences(d.result.Resources)
	d.result.Stale = d.previous.Unmatched()
	d.result.Checksum = hex.EncodeToString(d.checksum.Sum(nil))
	return d.result
}

// decoding is the state of one Decode.
type decoding struct {
	scope    Scope
	opts     Options
	previous *merge.Index
	checksum hash.Hash
	result   Result
}

// decodeKey decodes the documents of one data key.
func (d *decoding) decodeKey(secret types.NamespacedName, key string, data []byte) {
	var reader io.Reader = bytes.NewReader(data)
	if strings.HasSuffix(key, resourcesv1alpha1.BrotliCompressionSuffix) {
		reader = brotli.NewReader(reader)
	}
	decoder := yaml.NewYAMLOrJSONDecoder(reader, 1024)

	// Like Gardener, a document is decoded into the map a failed one before may have partly
	// filled; only a decoded object starts a new one.
	var (
		document map[string]any
		lastErr  error
	)
	for index := 0; ; index++ {
		err := decoder.Decode(&document)
		switch {
		case errors.Is(err, io.EOF):
			return
		case err != nil && stuck(err, lastErr):
			// A decoder that cannot advance returns the same error forever, where Gardener
			// loops: it is reported once, and the next key is read.
			return
		case err != nil:
			lastErr = err
			d.result.Errors = append(d.result.Errors, &DecodingError{Secret: secret, Key: key, Index: index, Err: err})
			continue
		}
		lastErr = nil
		if document == nil {
			continue
		}
		obj := &unstructured.Unstructured{Object: document}
		document = nil
		d.add(obj, data)
	}
}

// add records a decoded object; data is the raw data of its key.
func (d *decoding) add(obj *unstructured.Unstructured, data []byte) {
	defaultNamespace(obj, d.scope)
	ref := reference(obj, d.opts)
	old, found := d.previous.Lookup(ref)
	if obj.GetAnnotations()[resourcesv1alpha1.Mode] == resourcesv1alpha1.ModeIgnore {
		d.result.Ignored = append(d.result.Ignored, ref)
		if found {
			d.result.Release = append(d.result.Release, ref)
		}
		return
	}

	d.checksum.Write(data)
	d.result.Objects = append(d.result.Objects, Object{
		Desired:   obj,
		Reference: ref,
		Merge: merge.Options{
			ForceOverwriteLabels:      d.opts.ForceOverwriteLabels,
			OldLabels:                 old.Labels,
			ForceOverwriteAnnotations: d.opts.ForceOverwriteAnnotations,
			OldAnnotations:            old.Annotations,
		},
	})
	d.result.Resources = append(d.result.Resources, ref)
}

// defaultNamespace puts obj where the API server would: namespaced kinds without a namespace
// into "default", cluster-scoped kinds nowhere. For a kind the cluster does not know yet, it
// guesses namespaced unless the kind is Namespace.
func defaultNamespace(obj *unstructured.Unstructured, scope Scope) {
	namespaced, known := scope(obj.GroupVersionKind())
	switch {
	case !known && obj.GetKind() == "Namespace":
	case !known || namespaced:
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}
	default:
		obj.SetNamespace("")
	}
}

// reference is obj's .status.resources entry: it records the labels the apply will put on the
// object (its own, the injected ones and managed-by) and its annotations, so that the next
// reconciliation can drop those no longer wanted.
func reference(obj *unstructured.Unstructured, opts Options) resourcesv1alpha1.ObjectReference {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, opts.Labels())
	return resourcesv1alpha1.ObjectReference{
		ObjectReference: corev1.ObjectReference{
			APIVersion: obj.GetAPIVersion(),
			Kind:       obj.GetKind(),
			Name:       obj.GetName(),
			Namespace:  obj.GetNamespace(),
		},
		Labels:      labels,
		Annotations: obj.GetAnnotations(),
	}
}

// deadDecoder is the error of a YAMLOrJSONDecoder that gave up on JSON and could not start on
// YAML (the data after a broken JSON object is not text): it returns a new one on every call.
const deadDecoder = "decoding failed as both JSON and YAML"

// stuck says whether err, following prev, shows a decoder that will never advance: it returns the
// very error value of its previous call (the sticky error of a broken Brotli stream or of a JSON
// stream that already yielded two objects), or it is dead.
func stuck(err, prev error) bool {
	if prev == nil {
		return false
	}
	if err.Error() == deadDecoder && prev.Error() == deadDecoder {
		return true
	}
	return reflect.TypeOf(err) == reflect.TypeOf(prev) && reflect.ValueOf(err).Comparable() && err == prev
}
