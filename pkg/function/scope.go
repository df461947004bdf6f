package function

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Scope narrows what a function that works on the garden sees there of one kind to the objects
// whose field equals one of its settings, as a controller-runtime cache's field selector
// (cache.ByObject) narrows gardenlet's: gardenlet's part sees its seed's ControllerInstallations
// (spec.seedRef.name = SEED_NAME), which is also all that Gardener's SeedAuthorizer lets a
// seed list and watch. The one declaration narrows on the server the source's watch of the
// kind, every LIST of it the function makes (sweeps, mappers, reconcilers), and the events it
// accepts, where they carry the object.
type Scope struct {
	Kind Kind
	// Field is the field path the server selects on, e.g. spec.seedRef.name: one of the kind's
	// selectable fields, written as dot-separated keys of its JSON.
	Field string
	// Setting names the value the field must equal: one of the function's GardenInputs, the
	// environment variable of a string field of its Config. The function and its part's garden
	// source take it from the same key of the part's garden access.
	Setting string
}

// SourceSelector is the scope's field selector in a source's configuration: Kubernetes expands
// the setting there from the source container's variable of the same name (a $(VAR) reference).
func (s Scope) SourceSelector() string {
	return s.Field + "=$(" + s.Setting + ")"
}

// settingValue is the value of the Config field whose envconfig name is setting; false when
// config has no string field of that name.
func settingValue(config any, setting string) (string, bool) {
	v := reflect.ValueOf(config)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return "", false
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Tag.Get("envconfig") == setting && f.Type.Kind() == reflect.String {
			return v.Field(i).String(), true
		}
	}
	return "", false
}

// validate checks the scope against its function: a kind of the garden, a setting the function
// is given there and holds in its Config.
func (s Scope) validate(f *Function) error {
	if !f.WorksOnGarden {
		return fmt.Errorf("scope of %s: only a function that works on the garden has scopes", s.Kind.Kind)
	}
	if s.Field == "" || strings.ContainsAny(s.Field, "=!, ") {
		return fmt.Errorf("scope of %s: field %q is not a field path", s.Kind.Kind, s.Field)
	}
	if _, ok := f.GardenInputs[s.Setting]; !ok {
		return fmt.Errorf("scope of %s: setting %q is none of the garden inputs, which its source gets too", s.Kind.Kind, s.Setting)
	}
	if _, ok := settingValue(f.Config, s.Setting); !ok {
		return fmt.Errorf("scope of %s: the Config has no string field named %q", s.Kind.Kind, s.Setting)
	}
	return nil
}

// scopes are a function's scopes with their values from its loaded Config, by kind.
type scopes map[schema.GroupKind]fields.Selector

// resolveScopes gives each of fn's scopes its value from config; a scope whose setting is
// empty would select nothing, so it is an error.
func resolveScopes(fn *Function, config any) (scopes, error) {
	out := scopes{}
	for _, sc := range fn.Scopes {
		value, _ := settingValue(config, sc.Setting)
		if value == "" {
			return nil, fmt.Errorf("%s is not set: the function sees only the %ss whose %s it is", sc.Setting, sc.Kind.Kind, sc.Field)
		}
		out[sc.Kind.GroupKind()] = fields.OneTermEqualSelector(sc.Field, value)
	}
	return out, nil
}

// admits says whether an object of the kind gk, as an event carries it, is within the scope of
// its kind: its field, read from the object's JSON, equals the scope's value.
func (s scopes) admits(gk schema.GroupKind, obj *unstructured.Unstructured) bool {
	sel, ok := s[gk]
	if !ok || obj == nil {
		return true
	}
	return sel.Matches(objectFields{obj})
}

// objectFields are an object's fields as a field selector reads them.
type objectFields struct{ obj *unstructured.Unstructured }

func (f objectFields) Has(field string) bool {
	_, found, _ := unstructured.NestedFieldNoCopy(f.obj.Object, strings.Split(field, ".")...)
	return found
}

func (f objectFields) Get(field string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(f.obj.Object, strings.Split(field, ".")...)
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// scopedClient lists the scoped kinds within their scopes, whatever a caller's options say
// beside: its field selector is added to theirs.
type scopedClient struct {
	client.Client
	scopes scopes
}

// scoped is c confined to s; c itself when there is nothing to confine.
func scoped(c client.Client, s scopes) client.Client {
	if len(s) == 0 {
		return c
	}
	return &scopedClient{Client: c, scopes: s}
}

func (c *scopedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, c.Scheme())
	if err != nil {
		return err
	}
	sel, ok := c.scopes[schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}]
	if !ok {
		return c.Client.List(ctx, list, opts...)
	}
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if o.FieldSelector != nil && !o.FieldSelector.Empty() {
		sel = fields.AndSelectors(o.FieldSelector, sel)
	}
	// The later option wins; capped, so that appending does not write into the caller's array.
	return c.Client.List(ctx, list, append(opts[:len(opts):len(opts)], client.MatchingFieldsSelector{Selector: sel})...)
}
