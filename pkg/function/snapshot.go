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

// listed is one kind a sweep read: its objects in the server's order (or only their keys, for a
// KeysOnly list), and where each is by key, by namespace and by the values of its declared
// fields. Positions, not keys, fill the lookups: a sweep may hold hundreds of thousands of
// objects, and a position costs 4 bytes where a key costs 32 (and a map entry of it 70).
//
// A paginated LIST is one consistent snapshot of the server (a page whose snapshot has expired
// fails the LIST with 410 Gone), so every key is listed once.
type listed struct {
	list    List
	objects []client.Object
	// held are the keys of a KeysOnly list, which holds no objects, and annotated the
	// declared annotations of those that have any.
	held      []Key
	annotated map[int32]map[string]string
	// byKey are the positions in the order of their keys, for lookups by key: sorted by the
	// first lookup, once the list is complete.
	byKey     []int32
	sortByKey sync.Once
	indexes   map[string]map[string][]int32
	// byNamespace answers List(InNamespace) without scanning every object: it points into
	// namespaces, whose names the held objects share (each decoded object carries its own copy).
	byNamespace map[string]int32
	namespaces  []namespaced
}

// namespaced are the positions of a namespace's objects.
type namespaced struct {
	name      string
	positions []int32
}

func newListed(l List, capacity int) *listed {
	held := &listed{list: l, indexes: map[string]map[string][]int32{}, byNamespace: map[string]int32{}}
	if l.KeysOnly {
		held.held = make([]Key, 0, capacity)
	} else {
		held.objects = make([]client.Object, 0, capacity)
	}
	return held
}

func (l *listed) len() int { return len(l.objects) + len(l.held) }

// find returns the position of the object with the key.
func (l *listed) find(key Key) (int32, bool) {
	l.sortByKey.Do(func() {
		l.byKey = make([]int32, l.len())
		for i := range l.byKey {
			l.byKey[i] = int32(i)
		}
		slices.SortFunc(l.byKey, func(a, b int32) int { return compareKeys(l.key(a), l.key(b)) })
	})
	i, found := slices.BinarySearchFunc(l.byKey, key, func(pos int32, key Key) int { return compareKeys(l.key(pos), key) })
	if !found {
		return 0, false
	}
	return l.byKey[i], true
}

func compareKeys(a, b Key) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func (l *listed) add(obj client.Object) {
	// Managed fields are the bulk of most objects' metadata and no decision reads them.
	obj.SetManagedFields(nil)
	ns, known := l.byNamespace[obj.GetNamespace()]
	if !known {
		ns = int32(len(l.namespaces))
		l.namespaces = append(l.namespaces, namespaced{name: obj.GetNamespace()})
		l.byNamespace[obj.GetNamespace()] = ns
	}
	obj.SetNamespace(l.namespaces[ns].name)
	pos := int32(l.len())
	l.namespaces[ns].positions = append(l.namespaces[ns].positions, pos)
	for field, index := range l.list.Indexes {
		values := l.indexes[field]
		if values == nil {
			values = map[string][]int32{}
			l.indexes[field] = values
		}
		for _, v := range index(obj) {
			if held := values[v]; len(held) == 0 || held[len(held)-1] != pos { // a value named twice counts once
				values[v] = append(held, pos)
			}
		}
	}
	switch {
	case l.list.KeysOnly:
		l.held = append(l.held, client.ObjectKeyFromObject(obj))
		l.keepAnnotations(pos, obj)
		return
	case l.list.Project != nil:
		obj = l.list.Project(obj)
	}
	l.objects = append(l.objects, obj)
}

// keepAnnotations holds the declared annotations of a KeysOnly list's object, if it has any.
func (l *listed) keepAnnotations(pos int32, obj client.Object) {
	for _, name := range l.list.Annotations {
		value, ok := obj.GetAnnotations()[name]
		if !ok {
			continue
		}
		if l.annotated == nil {
			l.annotated = map[int32]map[string]string{}
		}
		if l.annotated[pos] == nil {
			l.annotated[pos] = map[string]string{}
		}
		l.annotated[pos][name] = value
	}
}

// key is the key of the object at pos.
func (l *listed) key(pos int32) Key {
	if l.list.KeysOnly {
		return l.held[pos]
	}
	return client.ObjectKeyFromObject(l.objects[pos])
}

// object is the object at pos; of a KeysOnly list, metadata with nothing but its key and its
// held annotations (shared: assign copies it before a reconciler sees it).
func (l *listed) object(pos int32) client.Object {
	if !l.list.KeysOnly {
		return l.objects[pos]
	}
	key := l.held[pos]
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Annotations: l.annotated[pos]}}
	obj.SetGroupVersionKind(l.list.Kind.GroupVersionKind)
	return obj
}

// keys are the listed objects' keys, in the server's order.
func (l *listed) keys() []Key {
	keys := make([]Key, l.len())
	for i := range keys {
		keys[i] = l.key(int32(i))
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
	// onDemand are the kinds listed when a reconcile first lists them (List.OnDemand).
	onDemand map[schema.GroupKind]*onDemand
}

// onDemand is a kind the sweep lists when first asked: a confined kind once, any other
// namespaced kind each namespace once.
type onDemand struct {
	list     List
	pageSize int64
	mu       sync.Mutex
	listed   map[string]*listedNamespace
}

// listedNamespace is one namespace's LIST; done closes when held or err is set.
type listedNamespace struct {
	done chan struct{}
	held *listed
	err  error
}

// listOnDemand declares l as listed when first asked.
func (s *snapshot) listOnDemand(l List, pageSize int64) {
	if s.onDemand == nil {
		s.onDemand = map[schema.GroupKind]*onDemand{}
	}
	s.onDemand[l.Kind.GroupKind()] = &onDemand{list: l, pageSize: pageSize, listed: map[string]*listedNamespace{}}
}

// namespaceFor is the namespace whose LIST answers a list of the kind in asked: a cluster-scoped
// kind's whole list, a list confined to a namespace only within it, any other the namespace asked.
// False: the sweep holds nothing that answers it, and it goes to the API server.
func (d *onDemand) namespaceFor(asked string) (string, bool) {
	switch {
	case !d.list.Kind.Namespaced:
		return "", true
	case d.list.Namespace != "":
		return d.list.Namespace, asked == d.list.Namespace
	}
	return asked, asked != ""
}

// in is what the sweep holds of the kind in namespace (namespaceFor), listed on the first ask;
// concurrent asks wait for it. A failed LIST is not remembered, so the next ask tries again.
func (d *onDemand) in(ctx context.Context, s *snapshot, namespace string) (*listed, error) {
	d.mu.Lock()
	n, ok := d.listed[namespace]
	if !ok {
		n = &listedNamespace{done: make(chan struct{})}
		d.listed[namespace] = n
	}
	d.mu.Unlock()
	if !ok {
		l := d.list
		l.Namespace = namespace
		if n.held, n.err = listAll(ctx, s.live, s.scheme, l, d.pageSize); n.err != nil {
			n.held = nil
			d.mu.Lock()
			delete(d.listed, namespace)
			d.mu.Unlock()
		}
		close(n.done)
		return n.held, n.err
	}
	select {
	case <-n.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.held, n.err
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
	pos, found := l.find(key)
	if !found {
		if l == s.primary {
			// Another page's object: the snapshot holds one page of the primary kind at a time.
			return s.live.Get(ctx, key, obj, opts...)
		}
		return apierrors.NewNotFound(l.list.Kind.GroupResource(), key.Name)
	}
	return assign(obj, l.object(pos))
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
	o := (&client.ListOptions{}).ApplyOptions(opts)
	l := s.related[gk]
	if d := s.onDemand[gk]; l == nil && d != nil {
		if namespace, ok := d.namespaceFor(o.Namespace); ok {
			if l, err = d.in(ctx, s, namespace); err != nil {
				return err
			}
		}
	}
	if l == nil {
		if s.primary != nil && s.primary.list.Kind.GroupKind() == gk {
			return fmt.Errorf("listing %s during a sweep over it: the primary kind is streamed page by page; declare it as related or read it live", gk.Kind)
		}
		return s.live.List(ctx, list, opts...)
	}
	if l.list.Namespace != "" && o.Namespace != l.list.Namespace {
		return s.live.List(ctx, list, opts...) // beyond the namespace the sweep listed
	}
	if l.list.KeysOnly && o.LabelSelector != nil && !o.LabelSelector.Empty() {
		return fmt.Errorf("listing %s by labels during a sweep: the sweep holds only its keys; list it with MetadataOnly", gk.Kind)
	}
	// candidates are positions; all of them (nil, every=true) unless a namespace or an index
	// narrows them down.
	var candidates []int32
	every := true
	if o.Namespace != "" {
		candidates, every = nil, false
		if ns, ok := l.byNamespace[o.Namespace]; ok {
			candidates = l.namespaces[ns].positions
		}
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
		candidates = make([]int32, l.len())
		for i := range candidates {
			candidates[i] = int32(i)
		}
	}
	var items []runtime.Object
	for _, pos := range candidates {
		obj := l.object(pos)
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
	key := l.key(pos)
	for _, req := range reqs {
		var has bool
		switch req.Field {
		case "metadata.name":
			has = key.Name == req.Value
		case "metadata.namespace":
			has = key.Namespace == req.Value
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
// listAll lists every page of l into what a sweep holds of it; on an error, what was listed so
// far (a kind the cluster does not serve holds nothing).
func listAll(ctx context.Context, reader client.Reader, scheme *runtime.Scheme, l List, pageSize int64) (*listed, error) {
	held := newListed(l, 0)
	err := listPages(ctx, reader, scheme, l, pageSize, func(items []client.Object) error {
		for _, item := range items {
			held.add(item)
		}
		return nil
	})
	return held, err
}

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
