package function

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gardener-knative/gardener-knative/pkg/kube"
)

// snapshotKind tells the lists of a sweep apart: full objects and metadata-only objects of
// the same kind are different answers to a Get.
type snapshotKind struct {
	gvk          schema.GroupVersionKind
	metadataOnly bool
}

// snapshot is a client.Reader that answers Gets of the kinds a sweep listed from those lists,
// and everything else from the API server. An object missing from a listed kind is NotFound,
// as it was when the list was read.
type snapshot struct {
	live    client.Reader
	scheme  *runtime.Scheme
	objects map[snapshotKind]map[Key]client.Object
}

var _ client.Reader = &snapshot{}

// takeSnapshot lists every list of the sweep, paginated, and returns the snapshot and the
// keys of the primary objects.
func takeSnapshot(ctx context.Context, live client.Reader, scheme *runtime.Scheme, sweep Sweep, pageSize int64) (*snapshot, []Key, error) {
	s := &snapshot{live: live, scheme: scheme, objects: map[snapshotKind]map[Key]client.Object{}}
	var keys []Key
	for i, list := range append([]client.ObjectList{sweep.Primary}, sweep.Related...) {
		kind, err := s.kindOfList(list)
		if err != nil {
			return nil, nil, err
		}
		items, err := kube.ListAll(ctx, live, list, pageSize)
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s: %w", kind.gvk.Kind, err)
		}
		byKey := make(map[Key]client.Object, len(items))
		for _, item := range items {
			key := client.ObjectKeyFromObject(item)
			byKey[key] = item
			if i == 0 {
				keys = append(keys, key)
			}
		}
		s.objects[kind] = byKey
	}
	return s, keys, nil
}

func (s *snapshot) kindOfList(list client.ObjectList) (snapshotKind, error) {
	gvk, err := apiutil.GVKForObject(list, s.scheme)
	if err != nil {
		return snapshotKind{}, err
	}
	_, metadataOnly := list.(*metav1.PartialObjectMetadataList)
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return snapshotKind{gvk: gvk, metadataOnly: metadataOnly}, nil
}

func (s *snapshot) kindOf(obj client.Object) (snapshotKind, error) {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return snapshotKind{}, err
	}
	_, metadataOnly := obj.(*metav1.PartialObjectMetadata)
	return snapshotKind{gvk: gvk, metadataOnly: metadataOnly}, nil
}

// Get answers from the snapshot when the sweep listed obj's kind, else from the API server.
func (s *snapshot) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind, err := s.kindOf(obj)
	if err != nil {
		return err
	}
	byKey, listed := s.objects[kind]
	if !listed {
		return s.live.Get(ctx, key, obj, opts...)
	}
	item, found := byKey[key]
	if !found {
		return apierrors.NewNotFound(schema.GroupResource{Group: kind.gvk.Group, Resource: strings.ToLower(kind.gvk.Kind)}, key.Name)
	}
	target, source := reflect.ValueOf(obj), reflect.ValueOf(item.DeepCopyObject())
	if target.Type() != source.Type() {
		return fmt.Errorf("snapshot holds %T for %s, cannot read it into %T", item, kind.gvk, obj)
	}
	target.Elem().Set(source.Elem())
	return nil
}

// List always asks the API server: a sweep's reconciler lists rarely, and a filtered list
// from a snapshot would have to re-implement label and field selection.
func (s *snapshot) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return s.live.List(ctx, list, opts...)
}
