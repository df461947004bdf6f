package extensionvalidation

import (
	"bytes"
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
	// namespaced says whether the kind's objects live in a namespace.
	namespaced bool
	// spec returns the object's spec.
	spec func(P) any
	// valid checks an object on CREATE and UPDATE.
	valid func(P) field.ErrorList
	// immutable checks what an UPDATE changes.
	immutable func(newObj, oldObj P) field.ErrorList
	// changedWhileDeleting is the error for a spec changed while the object is being deleted;
	// nil is Gardener's Forbidden for extension kinds.
	changedWhileDeleting func(newObj P) *field.Error
}

func (r rules[T, P]) groupKind() schema.GroupKind { return r.kind }

func (r rules[T, P]) validate(req admission.Request) (string, field.ErrorList, error) {
	obj := P(new(T))
	if err := json.Unmarshal(req.Object.Raw, obj); err != nil {
		return "", nil, fmt.Errorf("decoding %s: %w", r.kind.Kind, err)
	}
	var errs field.ErrorList
	if req.Operation == admissionv1.Update {
		old := P(new(T))
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return "", nil, fmt.Errorf("decoding old %s: %w", r.kind.Kind, err)
		}
		errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(obj, old, metadataPath)...)
		updateErrs, err := r.update(obj, old, req.Object.Raw, req.OldObject.Raw)
		if err != nil {
			return "", nil, err
		}
		errs = append(errs, updateErrs...)
	}
	errs = append(errs, apivalidation.ValidateObjectMetaAccessor(obj, r.namespaced, apivalidation.NameIsDNSSubdomain, metadataPath)...)
	errs = append(errs, r.valid(obj)...)
	return obj.GetName(), errs, nil
}

func (r rules[T, P]) update(newObj, oldObj P, newRaw, oldRaw []byte) (field.ErrorList, error) {
	if newObj.GetDeletionTimestamp() != nil {
		// The extension controller is tearing down what the old spec describes.
		newSpec, oldSpec := r.spec(newObj), r.spec(oldObj)
		newUnknown, err := unknownSpecMembers(newSpec, newRaw)
		if err != nil {
			return nil, err
		}
		oldUnknown, err := unknownSpecMembers(oldSpec, oldRaw)
		if err != nil {
			return nil, err
		}
		if changes := specChanges(newSpec, oldSpec, newUnknown, oldUnknown); len(changes) > 0 {
			if r.changedWhileDeleting != nil {
				return field.ErrorList{r.changedWhileDeleting(newObj)}, nil
			}
			return field.ErrorList{field.Forbidden(specPath, fmt.Sprintf("cannot update %s spec if deletion timestamp is set. Requested changes: %s", r.kind.Kind, strings.Join(changes, ",")))}, nil
		}
	}
	return r.immutable(newObj, oldObj), nil
}

// unknownSpecMembers are the members of the object's spec (raw, as the API server sent it)
// that the type of spec does not declare (see unknownMembers).
func unknownSpecMembers(spec any, raw []byte) (any, error) {
	var obj struct {
		Spec any `json:"spec"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	// Numbers stay literals: two integers beyond float64's precision must not compare equal.
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("decoding spec: %w", err)
	}
	return unknownMembers(reflect.TypeOf(spec), obj.Spec), nil
}

// specChanges names the spec's top-level fields that differ, or nothing when the specs are
// equal: the typed values semantically (quantities by value, nil and empty alike, as Kubernetes'
// semantic equality and Gardener compare them), and the members the types do not know (newer
// fields) as JSON. The spec itself is named when no single field can be.
func specChanges(newSpec, oldSpec, newUnknown, oldUnknown any) []string {
	typedEqual := apiequality.Semantic.DeepEqual(newSpec, oldSpec)
	unknownEqual := reflect.DeepEqual(newUnknown, oldUnknown)
	if typedEqual && unknownEqual {
		return nil
	}
	changed := map[string]bool{}
	if !typedEqual {
		newFields, errNew := fields(newSpec)
		oldFields, errOld := fields(oldSpec)
		if errNew == nil && errOld == nil {
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
	}
	if !unknownEqual {
		newMembers, _ := newUnknown.(map[string]any)
		oldMembers, _ := oldUnknown.(map[string]any)
		for name, v := range newMembers {
			if !reflect.DeepEqual(v, oldMembers[name]) {
				changed[name] = true
			}
		}
		for name := range oldMembers {
			if _, ok := newMembers[name]; !ok {
				changed[name] = true
			}
		}
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
