package function

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// listed is one kind a sweep read: its objects in the server's order, and where each is by key,
// by namespace and by the values of its declared fields. Positions, not keys, fill the lookups:
// a sweep may hold hundreds of thousands of objects, and a position costs 4 bytes where a key
// costs 32.
type listed struct {
	list    List
	objects []client.Object
	at      map[Key]int32
	indexes map[string]map[string][]int32
	// byNamespace answers List(InNamespace) without scanning every object.
	byNamespace map[string][]int32
}

func newListed(l List, capacity int) *listed {
	return &listed{list: l, objects: make([]client.Object, 0, capacity), at: make(map[Key]int32, capacity), indexes: map[string]map[string][]int32{}, byNamespace: map[string][]int32{}}
}

func (l *listed) add(obj client.Object) {
	// Managed fields are the bulk of most objects' metadata and no decision reads them.
	obj.SetManagedFields(nil)
	key := client.ObjectKeyFromObject(obj)
	pos, seen := l.at[key]
	if seen {
		l.objects[pos] = obj // listed twice (a page boundary moved): the later one wins
	} else {
		pos = int32(len(l.objects))
		l.objects = append(l.objects, obj)
		l.at[key] = pos
		l.byNamespace[key.Namespace] = append(l.byNamespace[key.Namespace], pos)
	}
	for field, index := range l.list.Indexes {
		values := l.indexes[field]
		if values == nil {
			values = map[string][]int32{}
			l.indexes[field] = values
		}
		for _, v := range index(obj) {
			if !seen || !slices.Contains(values[v], pos) {
				values[v] = append(values[v], pos)
			}
		}
	}
	if l.list.Project != nil {
		l.objects[pos] = l.list.Project(obj)
	}
}

// keys are the listed objects' keys, in the server's order.
func (l *listed) keys() []Key {
	keys := make([]Key, len(l.objects))
	for i, obj := range l.objects {
		keys[i] = client.ObjectKeyFromObject(obj)
	}
	return keys
}

// snapshot is the reader of a sweep's reconciles. It answers Get and List of every kind the
// sweep listed from those lists (as they were when read), the primary kind from the page being
// reconciled, and everything else from the API server.
type snapshot struct {
	live    client.Reader
	scheme  *runtime.Scheme
	related map[schema.GroupKind]*listed
	primary *listed
	// fetched remembers the live GETs of kinds the sweep did not list, so that many primary
	// objects naming the same object (Bastions of one Shoot) cost one GET per sweep, not one
	// each. It holds at most one entry per distinct object read and dies with the sweep.
	fetchedMu sync.Mutex
	fetched   map[fetchKey]*fetched
}

type fetchKey struct {
	gvk schema.GroupVersionKind
	key Key
}

// fetched is one live read; done closes when obj or err is set.
type fetched struct {
	done chan struct{}
	obj  client.Object
	err  error
}

var _ client.Reader = &snapshot{}

// lookup returns what the sweep holds of a kind: the related list when the kind is related
// (complete, even when it is also the primary kind), else the primary page being reconciled.
func (s *snapshot) lookup(gk schema.GroupKind) *listed {
	if l, ok := s.related[gk]; ok {
		return l
	}
	if s.primary != nil && s.primary.list.Kind.GroupKind() == gk {
		return s.primary
	}
	return nil
}

func (s *snapshot) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	l := s.lookup(gvk.GroupKind())
	if l != nil && l.list.Namespace != "" && key.Namespace != l.list.Namespace {
		l = nil // outside the namespace the sweep listed
	}
	if l == nil {
		return s.getLive(ctx, fetchKey{gvk: gvk, key: key}, obj, opts...)
	}
	pos, found := l.at[key]
	if !found {
		if l == s.primary {
			// Another page's object: the snapshot holds one page of the primary kind at a time.
			return s.live.Get(ctx, key, obj, opts...)
		}
		return apierrors.NewNotFound(l.list.Kind.GroupResource(), key.Name)
	}
	return assign(obj, l.objects[pos])
}

// getLive reads an object of a kind the sweep did not list, once per sweep: concurrent reads
// of the same object wait for the first. Only objects and NotFound are remembered; any other
// error may pass, so the next reconcile asks again.
func (s *snapshot) getLive(ctx context.Context, fk fetchKey, obj client.Object, opts ...client.GetOption) error {
	s.fetchedMu.Lock()
	f, ok := s.fetched[fk]
	if !ok {
		f = &fetched{done: make(chan struct{})}
		if s.fetched == nil {
			s.fetched = map[fetchKey]*fetched{}
		}
		s.fetched[fk] = f
	}
	s.fetchedMu.Unlock()
	if !ok {
		f.err = s.live.Get(ctx, fk.key, obj, opts...)
		if f.err == nil {
			f.obj = obj.DeepCopyObject().(client.Object)
		} else if !apierrors.IsNotFound(f.err) {
			s.fetchedMu.Lock()
			delete(s.fetched, fk)
			s.fetchedMu.Unlock()
		}
		close(f.done)
		return f.err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if f.err != nil {
		return f.err
	}
	return assign(obj, f.obj)
}

// List filters a listed kind by namespace, labels and the declared field indexes. A List of the
// primary kind, of a kind not listed, or by a field the sweep did not index goes to the API server
// only for kinds not listed; the other two are declaration errors, reported as such.
func (s *snapshot) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, s.scheme)
	if err != nil {
		return err
	}
	gk := schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}
	l := s.related[gk]
	if l == nil {
		if s.primary != nil && s.primary.list.Kind.GroupKind() == gk {
			return fmt.Errorf("listing %s during a sweep over it: the primary kind is streamed page by page; declare it as related or read it live", gk.Kind)
		}
		return s.live.List(ctx, list, opts...)
	}
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if l.list.Namespace != "" && o.Namespace != l.list.Namespace {
		return s.live.List(ctx, list, opts...) // beyond the namespace the sweep listed
	}
	// candidates are positions; all of them (nil, every=true) unless a namespace or an index
	// narrows them down.
	var candidates []int32
	every := true
	if o.Namespace != "" {
		candidates, every = l.byNamespace[o.Namespace], false
	}
	var fieldReqs []fields.Requirement
	if o.FieldSelector != nil {
		fieldReqs = o.FieldSelector.Requirements()
	}
	for _, req := range fieldReqs {
		if req.Field == "metadata.name" || req.Field == "metadata.namespace" || req.Operator == selection.NotEquals {
			continue
		}
		index, ok := l.indexes[req.Field]
		if _, declared := l.list.Indexes[req.Field]; !declared {
			return fmt.Errorf("listing %s by field %q during a sweep: the sweep's list declares no index for it", gk.Kind, req.Field)
		}
		if !ok {
			candidates, every = nil, false // the index is empty: no object has a value
			break
		}
		candidates, every = index[req.Value], false
		break
	}
	if every {
		candidates = make([]int32, len(l.objects))
		for i := range candidates {
			candidates[i] = int32(i)
		}
	}
	var items []runtime.Object
	for _, pos := range candidates {
		obj := l.objects[pos]
		if o.Namespace != "" && obj.GetNamespace() != o.Namespace {
			continue
		}
		if o.LabelSelector != nil && !o.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		if !l.matchesFields(pos, fieldReqs) {
			continue
		}
		items = append(items, obj)
	}
	return fill(list, items)
}

// matchesFields checks the field requirements against the indexes taken when the object was
// listed (it may be held as a projection, without the fields the indexes read).
func (l *listed) matchesFields(pos int32, reqs []fields.Requirement) bool {
	obj := l.objects[pos]
	for _, req := range reqs {
		var has bool
		switch req.Field {
		case "metadata.name":
			has = obj.GetName() == req.Value
		case "metadata.namespace":
			has = obj.GetNamespace() == req.Value
		default:
			has = slices.Contains(l.indexes[req.Field][req.Value], pos)
		}
		if has == (req.Operator == selection.NotEquals) {
			return false
		}
	}
	return true
}

// assign copies item into obj. A metadata-only read of a kind listed in full gets the metadata.
func assign(obj client.Object, item client.Object) error {
	if pom, ok := obj.(*metav1.PartialObjectMetadata); ok {
		if src, isPartial := item.(*metav1.PartialObjectMetadata); isPartial {
			src.DeepCopyInto(pom)
			return nil
		}
		gvk := pom.GroupVersionKind()
		item.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta).DeepCopyInto(&pom.ObjectMeta)
		pom.SetGroupVersionKind(gvk)
		return nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// A reconciler that reads any kind (e.g. a ManagedResource's objects) reads unstructured.
		if _, isPartial := item.(*metav1.PartialObjectMetadata); isPartial {
			return fmt.Errorf("the sweep listed %s metadata-only, it cannot be read in full: list it in full", item.GetObjectKind().GroupVersionKind().Kind)
		}
		gvk := u.GroupVersionKind()
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(item)
		if err != nil {
			return err
		}
		u.SetUnstructuredContent(content)
		u.SetGroupVersionKind(gvk)
		return nil
	}
	target, source := reflect.ValueOf(obj), reflect.ValueOf(item.DeepCopyObject())
	if target.Type() != source.Type() {
		return fmt.Errorf("the sweep listed %T, it cannot be read as %T: list it in full", item, obj)
	}
	target.Elem().Set(source.Elem())
	return nil
}

func fill(list client.ObjectList, items []runtime.Object) error {
	if pl, ok := list.(*metav1.PartialObjectMetadataList); ok {
		pl.Items = make([]metav1.PartialObjectMetadata, 0, len(items))
		for _, item := range items {
			var pom metav1.PartialObjectMetadata
			if err := assign(&pom, item.(client.Object)); err != nil {
				return err
			}
			pl.Items = append(pl.Items, pom)
		}
		return nil
	}
	copies := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		if _, partial := item.(*metav1.PartialObjectMetadata); partial {
			return fmt.Errorf("the sweep listed %s metadata-only, it cannot be listed in full: list it in full", item.GetObjectKind().GroupVersionKind().Kind)
		}
		copies = append(copies, item.DeepCopyObject())
	}
	return meta.SetList(list, copies)
}

// newList returns an empty list of l's kind: typed from the scheme, or metadata-only.
func newList(scheme *runtime.Scheme, l List) (client.ObjectList, error) {
	listGVK := l.Kind.GroupVersionKind
	listGVK.Kind += "List"
	if l.MetadataOnly {
		pl := &metav1.PartialObjectMetadataList{}
		pl.SetGroupVersionKind(listGVK)
		return pl, nil
	}
	obj, err := scheme.New(listGVK)
	if err != nil {
		return nil, fmt.Errorf("the scheme does not know %s: %w", listGVK, err)
	}
	return obj.(client.ObjectList), nil
}

// listPages lists l page by page and calls page with each page's objects.
func listPages(ctx context.Context, reader client.Reader, scheme *runtime.Scheme, l List, pageSize int64, page func([]client.Object) error) error {
	token := ""
	for {
		list, err := newList(scheme, l)
		if err != nil {
			return err
		}
		if l.PageSize > 0 {
			pageSize = l.PageSize
		}
		opts := []client.ListOption{client.Limit(pageSize), client.Continue(token)}
		if l.Namespace != "" {
			opts = append(opts, client.InNamespace(l.Namespace))
		}
		if l.LabelSelector != "" {
			sel, err := labels.Parse(l.LabelSelector)
			if err != nil {
				return err
			}
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		}
		if err := reader.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("listing %s: %w", l.Kind.Resource, err)
		}
		items := make([]client.Object, 0, meta.LenList(list))
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if l.MetadataOnly {
				// EachListItem hands out pointers into the list; keep each one alone so the page can go.
				obj = obj.DeepCopyObject().(client.Object)
			}
			items = append(items, obj)
			return nil
		}); err != nil {
			return err
		}
		if err := page(items); err != nil {
			return err
		}
		if token = list.GetContinue(); token == "" {
			return nil
		}
	}
}
