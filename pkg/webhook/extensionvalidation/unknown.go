package extensionvalidation

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// unknownMembers returns the members of value (decoded JSON) that type t does not declare,
// at their places: an object of only those members, a list as long as value's with nil where
// an element has none; nil when t covers all of value. Decoding into t drops exactly these,
// so comparing them as JSON, besides comparing the typed values, misses no change of a field
// newer than our API types (Gardener's newer Worker pools, druid's newer Etcd fields).
//
// Types that decode themselves (resource.Quantity, metav1.Duration, runtime.RawExtension, ...)
// cover their whole value.
func unknownMembers(t reflect.Type, value any) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := value.(map[string]any)
		if !ok {
			return nil
		}
		declared := jsonMembers(t)
		var unknown map[string]any
		for name, v := range obj {
			var u any
			if ft, ok := declared[name]; ok {
				u = unknownMembers(ft, v)
			} else {
				u = v
			}
			if u != nil {
				if unknown == nil {
					unknown = map[string]any{}
				}
				unknown[name] = u
			}
		}
		if unknown == nil {
			return nil
		}
		return unknown
	case reflect.Map:
		obj, ok := value.(map[string]any)
		if !ok {
			return nil
		}
		var unknown map[string]any
		for k, v := range obj {
			if u := unknownMembers(t.Elem(), v); u != nil {
				if unknown == nil {
					unknown = map[string]any{}
				}
				unknown[k] = u
			}
		}
		if unknown == nil {
			return nil
		}
		return unknown
	case reflect.Slice, reflect.Array:
		list, ok := value.([]any)
		if !ok || t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		var unknown []any
		for i, v := range list {
			if u := unknownMembers(t.Elem(), v); u != nil {
				if unknown == nil {
					unknown = make([]any, len(list))
				}
				unknown[i] = u
			}
		}
		if unknown == nil {
			return nil
		}
		return unknown
	default:
		return nil
	}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// memberCache holds jsonMembers by type: the API types are fixed, and each validation of an
// UPDATE walks them.
var memberCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonMembers are the JSON member names a struct type declares, with their types; embedded
// structs without a name (Go's embedding, or `json:",inline"`) contribute theirs, as
// encoding/json decodes them.
func jsonMembers(t reflect.Type) map[string]reflect.Type {
	if m, ok := memberCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	members := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !decodesItself(ft) {
				for n, mt := range jsonMembers(ft) {
					if _, shadowed := members[n]; !shadowed {
						members[n] = mt
					}
				}
				continue
			}
		}
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		if name == "" {
			name = f.Name
		}
		members[name] = f.Type
	}
	memberCache.Store(t, members)
	return members
}
