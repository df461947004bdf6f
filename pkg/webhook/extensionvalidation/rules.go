package extensionvalidation

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// validator validates the objects of one kind.
type validator interface {
	groupKind() schema.GroupKind
	// validate returns the object's name and what is wrong with it; an error means the
	// request could not be decoded.
	validate(req admission.Request) (string, field.ErrorList, error)
}

// kinds are the validated kinds, as Gardener registers them.
var kinds = []validator{
	backupBuckets, backupEntries, bastions, containerRuntimes, controlPlanes, dnsRecords, etcds,
	extensions, infrastructures, networks, operatingSystemConfigs, selfHostedShootExposures, workers,
}

var byKind = func() map[schema.GroupKind]validator {
	m := make(map[schema.GroupKind]validator, len(kinds))
	for _, k := range kinds {
		m[k.groupKind()] = k
	}
	return m
}()

func extensionsKind(kind string) schema.GroupKind {
	return schema.GroupKind{Group: "extensions.gardener.cloud", Kind: kind}
}

var (
	metadataPath = field.NewPath("metadata")
	specPath     = field.NewPath("spec")
)

// rules are Gardener's validation of kind T, decoded through its pointer type P. Every kind
// shares the frame: valid metadata, then the kind's rules; on UPDATE first the metadata's
// update rules and, while the object is being deleted, an unchanged spec or else the kind's
// immutable fields.
type rules[T any, P interface {
	*T
	metav1.Object
}] struct {
	kind schema.GroupKind
	// noun is how Gardener names the kind in the error for a spec changed while the object is
	// being deleted ("cannot update <noun> spec if deletion timestamp is set").
	noun string
	// namespaced says whether the kind's objects live in a namespace.
	namespaced bool
	// spec returns the object's spec.
	spec func(P) any
	// newer, for a kind whose spec type in Gardener v1.150 declares members that ours
	// (github.com/gardener/gardener/pkg/apis v1.146) lacks, returns an empty value of a type
	// declaring just those members, at their places below the spec. Gardener decodes them, so
	// a value that does not decode is refused, and compares them with the rest of the spec
	// while the object is being deleted; so are they here. nil: our type declares every member
	// Gardener's does. Members no version declares are dropped by Gardener's decoding and
	// never count.
	newer func() any
	// valid checks an object on CREATE and UPDATE.
	valid func(P) field.ErrorList
	// immutable checks what an UPDATE changes.
	immutable func(newObj, oldObj P) field.ErrorList
	// changedWhileDeleting is the error for a spec changed while the object is being deleted;
	// nil is Gardener's Forbidden for extension kinds.
	changedWhileDeleting func(newObj P) *field.Error
}

func (r rules[T, P]) groupKind() schema.GroupKind { return r.kind }

// object is a decoded object: typed, and the members of its spec our type lacks (nil without).
type object[P any] struct {
	typed P
	newer any
}

// decode decodes an object as Gardener's admission decoder does (Kubernetes' JSON decoding:
// member names match case-sensitively, unknown members are dropped).
func (r rules[T, P]) decode(raw []byte) (object[P], error) {
	o := object[P]{typed: P(new(T))}
	if err := utiljson.Unmarshal(raw, o.typed); err != nil {
		return o, err
	}
	if r.newer != nil {
		o.newer = r.newer()
		// The spec is decoded into the value the interface points to.
		wrapper := struct {
			Spec any `json:"spec"`
		}{Spec: o.newer}
		if err := utiljson.Unmarshal(raw, &wrapper); err != nil {
			return o, err
		}
	}
	return o, nil
}

func (r rules[T, P]) validate(req admission.Request) (string, field.ErrorList, error) {
	obj, err := r.decode(req.Object.Raw)
	if err != nil {
		return "", nil, fmt.Errorf("decoding %s: %w", r.kind.Kind, err)
	}
	var errs field.ErrorList
	if req.Operation == admissionv1.Update {
		old, err := r.decode(req.OldObject.Raw)
		if err != nil {
			return "", nil, fmt.Errorf("decoding old %s: %w", r.kind.Kind, err)
		}
		errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(obj.typed, old.typed, metadataPath)...)
		errs = append(errs, r.update(obj, old)...)
	}
	errs = append(errs, apivalidation.ValidateObjectMetaAccessor(obj.typed, r.namespaced, apivalidation.NameIsDNSSubdomain, metadataPath)...)
	errs = append(errs, r.valid(obj.typed)...)
	return obj.typed.GetName(), errs, nil
}

func (r rules[T, P]) update(newObj, oldObj object[P]) field.ErrorList {
	// Gardener looks at the new object's deletion timestamp only.
	if newObj.typed.GetDeletionTimestamp() != nil {
		// The extension controller is tearing down what the old spec describes: no change of
		// the spec at all, and nothing else is checked.
		if changes := specChanges(r.spec(newObj.typed), r.spec(oldObj.typed), newObj.newer, oldObj.newer); len(changes) > 0 {
			if r.changedWhileDeleting != nil {
				return field.ErrorList{r.changedWhileDeleting(newObj.typed)}
			}
			return field.ErrorList{field.Forbidden(specPath, fmt.Sprintf("cannot update %s spec if deletion timestamp is set. Requested changes: %s", r.noun, strings.Join(changes, ",")))}
		}
	}
	return r.immutable(newObj.typed, oldObj.typed)
}

// specChanges names the spec's top-level fields that differ, or nothing when the specs are
// equal as Gardener compares them: Kubernetes' semantic equality of the typed values
// (quantities by value, durations by length, nil and empty lists and maps alike), ours and
// the members our types lack (newSpec and oldSpec, newNewer and oldNewer). The spec itself is
// named when no single field can be.
func specChanges(newSpec, oldSpec, newNewer, oldNewer any) []string {
	changed := map[string]bool{}
	equal := true
	for _, pair := range [][2]any{{newSpec, oldSpec}, {newNewer, oldNewer}} {
		if apiequality.Semantic.DeepEqual(pair[0], pair[1]) {
			continue
		}
		equal = false
		newFields, errNew := fields(pair[0])
		oldFields, errOld := fields(pair[1])
		if errNew != nil || errOld != nil {
			continue
		}
		for name, v := range newFields {
			if !reflect.DeepEqual(v, oldFields[name]) {
				changed[name] = true
			}
		}
		for name := range oldFields {
			if _, ok := newFields[name]; !ok {
				changed[name] = true
			}
		}
	}
	if equal {
		return nil
	}
	if len(changed) == 0 {
		return []string{specPath.String()}
	}
	changes := make([]string, 0, len(changed))
	for name := range changed {
		changes = append(changes, specPath.Child(name).String())
	}
	slices.Sort(changes)
	return changes
}

func fields(spec any) (map[string]any, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

// required is Gardener's error for an empty required field.
func required(path *field.Path, value string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "field is required")}
	}
	return nil
}

func immutable(path *field.Path, newValue, oldValue any) field.ErrorList {
	return apivalidation.ValidateImmutableField(newValue, oldValue, path)
}
