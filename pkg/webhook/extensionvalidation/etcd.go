package extensionvalidation

import (
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// etcd is etcd-druid's Etcd (druid.gardener.cloud/v1alpha1) as far as its validation reads it:
// druid's API module is not a dependency of this one (see etcdSpec).
type etcd struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              etcdSpec `json:"spec"`
}

// etcds are validated as etcd-druid does (its api/validation): the rules are about the backup
// store only, whose prefix keeps the backups of different Etcds apart.
var etcds = rules[etcd, *etcd]{
	kind:       schema.GroupKind{Group: "druid.gardener.cloud", Kind: "Etcd"},
	namespaced: true,
	spec:       func(o *etcd) any { return &o.Spec },
	// Druid refuses any spec change of an Etcd being deleted as an immutable spec, showing
	// the new one.
	changedWhileDeleting: func(n *etcd) *field.Error {
		return field.Invalid(specPath, &n.Spec, apivalidation.FieldImmutableErrorMsg)
	},
	valid: func(o *etcd) field.ErrorList {
		store := o.Spec.Backup.Store
		if store == nil {
			return nil
		}
		path := specPath.Child("backup", "store")
		var errs field.ErrorList
		if !strings.Contains(store.Prefix, o.Namespace) || !strings.Contains(store.Prefix, o.Name) {
			errs = append(errs, field.Invalid(path.Child("prefix"), store.Prefix, "must contain object name and namespace"))
		}
		if store.Provider != nil && *store.Provider != "" && !storageProviders.Has(*store.Provider) {
			errs = append(errs, field.Invalid(path.Child("provider"), *store.Provider, fmt.Sprintf("unsupported storage provider: '%s'", *store.Provider)))
		}
		return errs
	},
	immutable: func(n, o *etcd) field.ErrorList {
		var errs field.ErrorList
		if n.Spec.Backup.Store != nil && o.Spec.Backup.Store != nil {
			errs = append(errs, immutable(specPath.Child("backup", "store", "prefix"), n.Spec.Backup.Store.Prefix, o.Spec.Backup.Store.Prefix)...)
		}
		return append(errs, immutable(specPath.Child("memberNamePrefix"), n.Spec.MemberNamePrefix, o.Spec.MemberNamePrefix)...)
	},
}

// storageProviders are the providers etcd-druid knows: infrastructure names and the object
// stores they map to.
var storageProviders = sets.New(
	"aws", "S3", "stackit", "azure", "ABS", "alicloud", "OSS", "openstack", "Swift",
	"gcp", "GCS", "dell", "ECS", "openshift", "OCS", "Local", "local",
)
