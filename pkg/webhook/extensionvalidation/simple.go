package extensionvalidation

import (
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The kinds whose rules are required fields and immutable ones only.

var backupBuckets = rules[extensionsv1alpha1.BackupBucket, *extensionsv1alpha1.BackupBucket]{
	kind: extensionsKind("BackupBucket"),
	noun: "backup bucket",
	spec: func(o *extensionsv1alpha1.BackupBucket) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.BackupBucket) field.ErrorList {
		return concat(
			required(specPath.Child("type"), o.Spec.Type),
			required(specPath.Child("region"), o.Spec.Region),
			required(specPath.Child("secretRef", "name"), o.Spec.SecretRef.Name),
		)
	},
	immutable: func(n, o *extensionsv1alpha1.BackupBucket) field.ErrorList {
		return concat(
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("region"), n.Spec.Region, o.Spec.Region),
		)
	},
}

var backupEntries = rules[extensionsv1alpha1.BackupEntry, *extensionsv1alpha1.BackupEntry]{
	kind: extensionsKind("BackupEntry"),
	noun: "backup entry",
	spec: func(o *extensionsv1alpha1.BackupEntry) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.BackupEntry) field.ErrorList {
		return concat(
			required(specPath.Child("type"), o.Spec.Type),
			required(specPath.Child("bucketName"), o.Spec.BucketName),
			required(specPath.Child("region"), o.Spec.Region),
			required(specPath.Child("secretRef", "name"), o.Spec.SecretRef.Name),
		)
	},
	immutable: func(n, o *extensionsv1alpha1.BackupEntry) field.ErrorList {
		return immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type)
	},
}

var bastions = rules[extensionsv1alpha1.Bastion, *extensionsv1alpha1.Bastion]{
	kind:       extensionsKind("Bastion"),
	noun:       "bastion",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.Bastion) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.Bastion) field.ErrorList {
		var errs field.ErrorList
		errs = append(errs, required(specPath.Child("type"), o.Spec.Type)...)
		if len(o.Spec.UserData) == 0 {
			errs = append(errs, field.Required(specPath.Child("userData"), "field is required"))
		}
		if len(o.Spec.Ingress) == 0 {
			errs = append(errs, field.Required(specPath.Child("ingress"), "field is required"))
		}
		return errs
	},
	immutable: func(n, o *extensionsv1alpha1.Bastion) field.ErrorList {
		return concat(
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("userData"), n.Spec.UserData, o.Spec.UserData),
		)
	},
}

var containerRuntimes = rules[extensionsv1alpha1.ContainerRuntime, *extensionsv1alpha1.ContainerRuntime]{
	kind:       extensionsKind("ContainerRuntime"),
	noun:       "container runtime",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.ContainerRuntime) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.ContainerRuntime) field.ErrorList {
		return concat(
			required(specPath.Child("type"), o.Spec.Type),
			required(specPath.Child("binaryPath"), o.Spec.BinaryPath),
			required(specPath.Child("workerPool", "name"), o.Spec.WorkerPool.Name),
		)
	},
	immutable: func(n, o *extensionsv1alpha1.ContainerRuntime) field.ErrorList {
		return concat(
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("workerPool", "name"), n.Spec.WorkerPool.Name, o.Spec.WorkerPool.Name),
		)
	},
}

var controlPlanes = rules[extensionsv1alpha1.ControlPlane, *extensionsv1alpha1.ControlPlane]{
	kind:       extensionsKind("ControlPlane"),
	noun:       "control plane",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.ControlPlane) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.ControlPlane) field.ErrorList {
		return concat(
			required(specPath.Child("type"), o.Spec.Type),
			required(specPath.Child("region"), o.Spec.Region),
			required(specPath.Child("secretRef", "name"), o.Spec.SecretRef.Name),
		)
	},
	immutable: func(n, o *extensionsv1alpha1.ControlPlane) field.ErrorList {
		return concat(
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("region"), n.Spec.Region, o.Spec.Region),
		)
	},
}

var extensions = rules[extensionsv1alpha1.Extension, *extensionsv1alpha1.Extension]{
	kind:       extensionsKind("Extension"),
	noun:       "extension",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.Extension) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.Extension) field.ErrorList {
		return required(specPath.Child("type"), o.Spec.Type)
	},
	immutable: func(n, o *extensionsv1alpha1.Extension) field.ErrorList {
		return immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type)
	},
}

var infrastructures = rules[extensionsv1alpha1.Infrastructure, *extensionsv1alpha1.Infrastructure]{
	kind:       extensionsKind("Infrastructure"),
	noun:       "infrastructure",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.Infrastructure) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.Infrastructure) field.ErrorList {
		return concat(
			required(specPath.Child("type"), o.Spec.Type),
			required(specPath.Child("region"), o.Spec.Region),
			required(specPath.Child("secretRef", "name"), o.Spec.SecretRef.Name),
		)
	},
	immutable: func(n, o *extensionsv1alpha1.Infrastructure) field.ErrorList {
		return concat(
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("region"), n.Spec.Region, o.Spec.Region),
		)
	},
}

func concat(lists ...field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	for _, l := range lists {
		errs = append(errs, l...)
	}
	return errs
}
