package extensionregistration

import (
	"testing"
	"time"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// messages are the errors as gardener-apiserver prints them.
func messages(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func strategy(s gardencorev1beta1.ControllerResourceLifecycleStrategy) *gardencorev1beta1.ControllerResourceLifecycleStrategy {
	return &s
}

func TestValidateControllerResources(t *testing.T) {
	shootAndSeed := registrationClusterTypes
	for _, tc := range []struct {
		name      string
		resources []gardencorev1beta1.ControllerResource
		types     []gardencorev1beta1.ClusterType
		want      []string
	}{
		{name: "valid", resources: []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure", Type: "local"}, {Kind: "Extension", Type: "foo", AutoEnable: []gardencorev1beta1.ClusterType{"shoot"}, ClusterCompatibility: []gardencorev1beta1.ClusterType{"shoot"}}}},
		{
			name:      "empty kind and type",
			resources: []gardencorev1beta1.ControllerResource{{}},
			want: []string{
				"spec.resources[0].kind: Required value: field is required",
				`spec.resources[0].kind: Unsupported value: "": supported values: "BackupBucket", "BackupEntry", "Bastion", "ContainerRuntime", "ControlPlane", "DNSRecord", "Extension", "Infrastructure", "Network", "OperatingSystemConfig", "SelfHostedShootExposure", "Worker"`,
				"spec.resources[0].type: Required value: field is required",
			},
		},
		{
			name:      "duplicate kind/type",
			resources: []gardencorev1beta1.ControllerResource{{Kind: "Worker", Type: "a"}, {Kind: "Worker", Type: "a"}},
			want:      []string{`spec.resources[1]: Duplicate value: "Worker/a"`},
		},
		{
			// Gardener remembers one type per kind and misses this one; see the docs page.
			name:      "duplicate kind/type with another type of the kind between",
			resources: []gardencorev1beta1.ControllerResource{{Kind: "Worker", Type: "a"}, {Kind: "Worker", Type: "b"}, {Kind: "Worker", Type: "a"}},
			want:      []string{`spec.resources[2]: Duplicate value: "Worker/a"`},
		},
		{
			name: "Extension-only fields on another kind",
			resources: []gardencorev1beta1.ControllerResource{{Kind: "Worker", Type: "a",
				AutoEnable: []gardencorev1beta1.ClusterType{"shoot"}, ClusterCompatibility: []gardencorev1beta1.ClusterType{"shoot"},
				ReconcileTimeout: &metav1.Duration{Duration: time.Minute}, Lifecycle: &gardencorev1beta1.ControllerResourceLifecycle{}}},
			want: []string{
				"spec.resources[0].autoEnable: Forbidden: field must not be set when kind != Extension",
				"spec.resources[0].clusterCompatibility: Forbidden: field must not be set when kind != Extension",
				"spec.resources[0].reconcileTimeout: Forbidden: field must not be set when kind != Extension",
				"spec.resources[0].lifecycle: Forbidden: field must not be set when kind != Extension",
			},
		},
		{
			name: "cluster types",
			resources: []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: "a",
				ClusterCompatibility: []gardencorev1beta1.ClusterType{"shoot", "garden", "shoot"},
				AutoEnable:           []gardencorev1beta1.ClusterType{"seed", "shoot", "shoot"}}},
			want: []string{
				`spec.resources[0].clusterCompatibility[1]: Unsupported value: "garden": supported values: "seed", "shoot"`,
				`spec.resources[0].clusterCompatibility[2]: Duplicate value: "shoot"`,
				`spec.resources[0].autoEnable[0]: Forbidden: autoEnable is not allowed for cluster type "seed" when clusterCompatibility is set to [shoot garden]`,
				`spec.resources[0].autoEnable[2]: Duplicate value: "shoot"`,
			},
		},
		{
			name:      "the garden for an Extension",
			resources: []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: "a", ClusterCompatibility: []gardencorev1beta1.ClusterType{"garden"}, AutoEnable: []gardencorev1beta1.ClusterType{"garden"}}},
			types:     extensionClusterTypes,
		},
		{
			name: "lifecycle strategies",
			resources: []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: "a", Lifecycle: &gardencorev1beta1.ControllerResourceLifecycle{
				Reconcile: strategy("Never"), Delete: strategy(gardencorev1beta1.AfterWorker), Migrate: strategy("Later")}}},
			want: []string{
				`spec.resources[0].lifecycle.reconcile: Unsupported value: "Never": supported values: "AfterKubeAPIServer", "AfterWorker", "BeforeKubeAPIServer"`,
				`spec.resources[0].lifecycle.delete: Unsupported value: "AfterWorker": supported values: "AfterKubeAPIServer", "BeforeKubeAPIServer"`,
				`spec.resources[0].lifecycle.migrate: Unsupported value: "Later": supported values: "AfterKubeAPIServer", "BeforeKubeAPIServer"`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			types := tc.types
			if types == nil {
				types = shootAndSeed
			}
			got := messages(ValidateControllerResources(tc.resources, types, field.NewPath("spec", "resources")))
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}

func registration(name string, resources ...gardencorev1beta1.ControllerResource) *gardencorev1beta1.ControllerRegistration {
	r := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	r.Spec.Resources = resources
	r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: name}}}
	gardencorev1beta1.SetObjectDefaults_ControllerRegistration(r)
	return r
}

func TestValidateControllerRegistration(t *testing.T) {
	secondary := gardencorev1beta1.ControllerResource{Kind: "Extension", Type: "audit", Primary: ptr.To(false)}
	primary := gardencorev1beta1.ControllerResource{Kind: "Infrastructure", Type: "local"}
	for _, tc := range []struct {
		name   string
		mutate func(*gardencorev1beta1.ControllerRegistration)
		want   []string
	}{
		{name: "valid", mutate: func(*gardencorev1beta1.ControllerRegistration) {}},
		{
			name:   "name is no DNS label",
			mutate: func(r *gardencorev1beta1.ControllerRegistration) { r.Name = "provider.local" },
			want:   []string{`metadata.name: Invalid value: "provider.local": must not contain dots`},
		},
		{
			name: "unknown policy",
			mutate: func(r *gardencorev1beta1.ControllerRegistration) {
				r.Spec.Deployment.Policy = ptr.To(gardencorev1beta1.ControllerDeploymentPolicy("Sometimes"))
			},
			want: []string{`spec.deployment.policy: Unsupported value: "Sometimes": supported values: "Always", "AlwaysExceptNoShoots", "OnDemand"`},
		},
		{
			name: "seed selector with a primary resource",
			mutate: func(r *gardencorev1beta1.ControllerRegistration) {
				r.Spec.Resources = append(r.Spec.Resources, secondary)
				r.Spec.Deployment.SeedSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
			},
			want: []string{"spec.deployment.seedSelector: Forbidden: specifying a seed selector is not allowed when controlling resources primarily"},
		},
		{
			name: "seed selector for secondary resources only",
			mutate: func(r *gardencorev1beta1.ControllerRegistration) {
				r.Spec.Resources = []gardencorev1beta1.ControllerResource{secondary}
				gardencorev1beta1.SetObjectDefaults_ControllerRegistration(r)
				r.Spec.Deployment.SeedSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
			},
		},
		{
			name: "invalid seed selector",
			mutate: func(r *gardencorev1beta1.ControllerRegistration) {
				r.Spec.Resources = []gardencorev1beta1.ControllerResource{secondary}
				gardencorev1beta1.SetObjectDefaults_ControllerRegistration(r)
				r.Spec.Deployment.SeedSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
			},
			want: []string{`spec.deployment.seedSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		},
		{
			name: "deployment refs",
			mutate: func(r *gardencorev1beta1.ControllerRegistration) {
				r.Spec.Deployment.DeploymentRefs = []gardencorev1beta1.DeploymentRef{{Name: "a"}, {}}
			},
			want: []string{
				"spec.deployment.deploymentRefs: Forbidden: only one deployment reference is allowed",
				"spec.deployment.deploymentRefs[1].name: Required value: must not be empty",
			},
		},
		{
			name: "autoEnable for seeds is not compatible by default",
			mutate: func(r *gardencorev1beta1.ControllerRegistration) {
				r.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: "a", AutoEnable: []gardencorev1beta1.ClusterType{"seed"}}}
				gardencorev1beta1.SetObjectDefaults_ControllerRegistration(r)
			},
			want: []string{`spec.resources[0].autoEnable[0]: Forbidden: autoEnable is not allowed for cluster type "seed" when clusterCompatibility is set to [shoot]`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := registration("provider-local", primary)
			tc.mutate(r)
			assert.ElementsMatch(t, tc.want, messages(ValidateControllerRegistration(r)))
		})
	}
}

func TestValidateControllerRegistrationUpdate(t *testing.T) {
	old := registration("provider-local", gardencorev1beta1.ControllerResource{Kind: "Infrastructure", Type: "local"})
	old.ResourceVersion = "1"

	unchanged := old.DeepCopy()
	unchanged.Spec.Resources[0].Primary = nil
	gardencorev1beta1.SetObjectDefaults_ControllerRegistration(unchanged)
	assert.Empty(t, ValidateControllerRegistrationUpdate(unchanged, old), "an unset primary is defaulted to true")

	secondary := old.DeepCopy()
	secondary.Spec.Resources[0].Primary = ptr.To(false)
	assert.Equal(t, []string{"spec.resources[0].primary: Invalid value: false: field is immutable"}, messages(ValidateControllerRegistrationUpdate(secondary, old)))

	added := old.DeepCopy()
	added.Spec.Resources = append(added.Spec.Resources, gardencorev1beta1.ControllerResource{Kind: "Worker", Type: "local", Primary: ptr.To(false)})
	assert.Empty(t, ValidateControllerRegistrationUpdate(added, old), "a new kind/type may be secondary")

	deleting := old.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deletingOld := deleting.DeepCopy()
	deleting.Spec.Deployment.Policy = ptr.To(gardencorev1beta1.ControllerDeploymentPolicyAlways)
	assert.Equal(t, []string{"spec: Forbidden: cannot update controller registration spec if deletion timestamp is set. Requested changes: Deployment"},
		messages(ValidateControllerRegistrationUpdate(deleting, deletingOld)))
}

func TestPrimaryConflicts(t *testing.T) {
	infra := gardencorev1beta1.ControllerResource{Kind: "Infrastructure", Type: "local"}
	worker := gardencorev1beta1.ControllerResource{Kind: "Worker", Type: "local"}
	secondary := func(r gardencorev1beta1.ControllerResource) gardencorev1beta1.ControllerResource {
		r.Primary = ptr.To(false)
		return r
	}
	for _, tc := range []struct {
		name   string
		object *gardencorev1beta1.ControllerRegistration
		others []gardencorev1beta1.ControllerRegistration
		want   []string
	}{
		{name: "none other", object: registration("a", infra)},
		{
			name: "another controls it primarily", object: registration("a", infra, worker),
			others: []gardencorev1beta1.ControllerRegistration{*registration("b", infra)},
			want:   []string{"another ControllerRegistration resource already exists that controls resource Infrastructure/local primarily"},
		},
		{name: "its own stored version", object: registration("a", infra), others: []gardencorev1beta1.ControllerRegistration{*registration("a", infra)}},
		{name: "another controls it secondarily", object: registration("a", infra), others: []gardencorev1beta1.ControllerRegistration{*registration("b", secondary(infra))}},
		{name: "it controls it secondarily", object: registration("a", secondary(infra)), others: []gardencorev1beta1.ControllerRegistration{*registration("b", infra)}},
		{
			// Gardener remembers one type per kind of the other registrations and misses this
			// conflict; see the docs page.
			name: "another controls several types of the kind", object: registration("a", infra),
			others: []gardencorev1beta1.ControllerRegistration{*registration("b", infra, gardencorev1beta1.ControllerResource{Kind: "Infrastructure", Type: "aws"})},
			want:   []string{"another ControllerRegistration resource already exists that controls resource Infrastructure/local primarily"},
		},
		{
			name: "an undefaulted primary counts", object: &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{infra}}},
			others: []gardencorev1beta1.ControllerRegistration{{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{infra}}}},
			want:   []string{"another ControllerRegistration resource already exists that controls resource Infrastructure/local primarily"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range PrimaryConflicts(tc.object, tc.others) {
				got = append(got, err.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestValidateOCIRepository(t *testing.T) {
	const path = "helm.ociRepository"
	for _, tc := range []struct {
		name string
		oci  *gardencorev1beta1.OCIRepository
		want []string
	}{
		{name: "none"},
		{name: "ref", oci: &gardencorev1beta1.OCIRepository{Ref: ptr.To("registry.example.com/foo:1.0.0@sha256:abc")}},
		{name: "repository and tag", oci: &gardencorev1beta1.OCIRepository{Repository: ptr.To("registry.example.com/foo"), Tag: ptr.To("1.0.0")}},
		{name: "repository and digest", oci: &gardencorev1beta1.OCIRepository{Repository: ptr.To("registry.example.com/foo"), Digest: ptr.To("sha256:abc")}},
		{name: "repository, tag and digest", oci: &gardencorev1beta1.OCIRepository{Repository: ptr.To("registry.example.com/foo"), Tag: ptr.To("1.0.0"), Digest: ptr.To("sha256:abc")}},
		{name: "empty", oci: &gardencorev1beta1.OCIRepository{}, want: []string{path + ": Required value: must provide either ref or repository"}},
		{name: "tag only", oci: &gardencorev1beta1.OCIRepository{Tag: ptr.To("1.0.0")}, want: []string{path + ": Required value: must provide either ref or repository"}},
		{
			name: "ref with the other fields",
			oci:  &gardencorev1beta1.OCIRepository{Ref: ptr.To("registry.example.com/foo:1.0.0"), Repository: ptr.To("registry.example.com/foo"), Tag: ptr.To("1.0.0"), Digest: ptr.To("sha256:abc")},
			want: []string{
				path + ".digest: Forbidden: cannot provide digest when ref is set",
				path + ".repository: Forbidden: cannot provide repository when ref is set",
				path + ".tag: Forbidden: cannot provide tag when ref is set",
			},
		},
		{name: "repository without tag or digest", oci: &gardencorev1beta1.OCIRepository{Repository: ptr.To("registry.example.com/foo")}, want: []string{path + ": Required value: must provide either tag or digest"}},
		{name: "digest without sha256", oci: &gardencorev1beta1.OCIRepository{Repository: ptr.To("registry.example.com/foo"), Digest: ptr.To("md5:abc")}, want: []string{path + `.digest: Invalid value: "md5:abc": must start with 'sha256:'`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, messagesOrNil(ValidateOCIRepository(tc.oci, field.NewPath("helm", "ociRepository"))))
		})
	}
}

func messagesOrNil(errs field.ErrorList) []string {
	if len(errs) == 0 {
		return nil
	}
	return messages(errs)
}

func TestValidateControllerDeployment(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "provider-local"}
	ref := &gardencorev1beta1.OCIRepository{Ref: ptr.To("registry.example.com/foo:1.0.0")}
	for _, tc := range []struct {
		name       string
		deployment *gardencorev1beta1.ControllerDeployment
		helm       *gardencorev1beta1.HelmControllerDeployment
		want       []string
	}{
		{name: "helm from an OCI repository", deployment: &gardencorev1beta1.ControllerDeployment{ObjectMeta: meta, Type: "helm"}, helm: &gardencorev1beta1.HelmControllerDeployment{OCIRepository: ref}},
		{name: "helm with a chart", deployment: &gardencorev1beta1.ControllerDeployment{ObjectMeta: meta, Type: "helm"}, helm: &gardencorev1beta1.HelmControllerDeployment{Chart: []byte("tgz")}},
		{name: "helm with neither", deployment: &gardencorev1beta1.ControllerDeployment{ObjectMeta: meta, Type: "helm"}, helm: &gardencorev1beta1.HelmControllerDeployment{}, want: []string{"helm: Required value: must provide either rawChart or ociRepository"}},
		{name: "helm with both", deployment: &gardencorev1beta1.ControllerDeployment{ObjectMeta: meta, Type: "helm"}, helm: &gardencorev1beta1.HelmControllerDeployment{Chart: []byte("tgz"), OCIRepository: ref}, want: []string{"helm: Required value: must provide either rawChart or ociRepository"}},
		{name: "invalid OCI repository", deployment: &gardencorev1beta1.ControllerDeployment{ObjectMeta: meta, Type: "helm"}, helm: &gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{}}, want: []string{"helm.ociRepository: Required value: must provide either ref or repository"}},
		{name: "custom type", deployment: &gardencorev1beta1.ControllerDeployment{ObjectMeta: meta, Type: "custom"}},
		{name: "no type", deployment: &gardencorev1beta1.ControllerDeployment{ObjectMeta: meta}, want: []string{"[]: Forbidden: must use either helm or a custom deployment configuration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, messagesOrNil(ValidateControllerDeployment(tc.deployment, tc.helm)))
		})
	}
}

func validExtension() *operatorv1alpha1.Extension {
	ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "provider-local"}}
	ext.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure", Type: "local"}}
	ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
		DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{Ref: ptr.To("registry.example.com/local:v1")}}},
	}}
	return ext
}

func TestValidateExtension(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*operatorv1alpha1.Extension)
		want   []string
	}{
		{name: "valid", mutate: func(*operatorv1alpha1.Extension) {}},
		{name: "no deployment", mutate: func(e *operatorv1alpha1.Extension) { e.Spec.Deployment = nil }, want: []string{"spec.deployment: Required value: deployment must be specified"}},
		{name: "neither extension nor admission", mutate: func(e *operatorv1alpha1.Extension) { e.Spec.Deployment.ExtensionDeployment = nil }, want: []string{"spec.deployment: Required value: at least one of extension or admission must be specified"}},
		{name: "no helm", mutate: func(e *operatorv1alpha1.Extension) { e.Spec.Deployment.ExtensionDeployment.Helm = nil }, want: []string{"spec.deployment.extension.helm: Required value: helm deployment must be specified"}},
		{name: "invalid OCI repository", mutate: func(e *operatorv1alpha1.Extension) {
			e.Spec.Deployment.ExtensionDeployment.Helm.OCIRepository = &gardencorev1.OCIRepository{}
		}, want: []string{"spec.deployment.extension.helm.ociRepository: Required value: must provide either ref or repository"}},
		{name: "admission for no cluster", mutate: func(e *operatorv1alpha1.Extension) {
			e.Spec.Deployment.AdmissionDeployment = &operatorv1alpha1.AdmissionDeploymentSpec{}
		}, want: []string{"spec.deployment.admission: Required value: at least one of runtimeCluster or virtualCluster must be specified"}},
		{name: "admission without helm", mutate: func(e *operatorv1alpha1.Extension) {
			e.Spec.Deployment.AdmissionDeployment = &operatorv1alpha1.AdmissionDeploymentSpec{RuntimeCluster: &operatorv1alpha1.DeploymentSpec{}, VirtualCluster: &operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{}}}
		}, want: []string{
			"spec.deployment.admission.runtimeCluster.helm: Required value: helm deployment must be specified",
			"spec.deployment.admission.virtualCluster.helm.ociRepository: Required value: must provide either ref or repository",
		}},
		{name: "resources may name the garden", mutate: func(e *operatorv1alpha1.Extension) {
			e.Spec.Resources = append(e.Spec.Resources, gardencorev1beta1.ControllerResource{Kind: "Extension", Type: "a", AutoEnable: []gardencorev1beta1.ClusterType{"garden"}, ClusterCompatibility: []gardencorev1beta1.ClusterType{"garden"}})
		}},
		{name: "invalid resources", mutate: func(e *operatorv1alpha1.Extension) {
			e.Spec.Resources = append(e.Spec.Resources, gardencorev1beta1.ControllerResource{Kind: "Infrastructure", Type: "local"})
		}, want: []string{`spec.resources[1]: Duplicate value: "Infrastructure/local"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := validExtension()
			tc.mutate(ext)
			DefaultExtension(ext)
			assert.ElementsMatch(t, tc.want, messages(ValidateExtension(ext)))
		})
	}
}

func TestValidateExtensionUpdate(t *testing.T) {
	old := validExtension()
	DefaultExtension(old)
	unchanged := validExtension()
	DefaultExtension(unchanged)
	assert.Empty(t, ValidateExtensionUpdate(old, unchanged), "an unset primary is defaulted to true")

	secondary := validExtension()
	secondary.Spec.Resources[0].Primary = ptr.To(false)
	assert.Equal(t, []string{"spec.resources[0].primary: Invalid value: false: field is immutable"}, messages(ValidateExtensionUpdate(old, secondary)))

	invalid := secondary.DeepCopy()
	invalid.Spec.Deployment = nil
	assert.Equal(t, []string{"spec.deployment: Required value: deployment must be specified", "spec.resources[0].primary: Invalid value: false: field is immutable"},
		messages(ValidateExtensionUpdate(old, invalid)), "spec and update errors together")
}

func TestDefaultExtension(t *testing.T) {
	ext := validExtension()
	ext.Spec.Resources = []gardencorev1beta1.ControllerResource{
		{Kind: "Worker", Type: "local", Primary: ptr.To(false)},
		{Kind: "Extension", Type: "a", AutoEnable: []gardencorev1beta1.ClusterType{"shoot"}},
		{Kind: "Extension", Type: "b", AutoEnable: []gardencorev1beta1.ClusterType{"seed"}},
	}
	DefaultExtension(ext)
	assert.Equal(t, ptr.To(true), ext.Spec.Deployment.ExtensionDeployment.InjectGardenKubeconfig, "an extension of Workers gets the garden kubeconfig")
	assert.Equal(t, ptr.To(false), ext.Spec.Resources[0].Primary)
	assert.Equal(t, ptr.To(true), ext.Spec.Resources[1].Primary)
	assert.Equal(t, []gardencorev1beta1.ClusterType{"shoot"}, ext.Spec.Resources[1].ClusterCompatibility)
	assert.Empty(t, ext.Spec.Resources[2].ClusterCompatibility, "only shoots' auto-enablement implies compatibility")
}

func TestStillRequired(t *testing.T) {
	ext := validExtension()
	assert.Empty(t, StillRequired(ext))
	ext.Status.Conditions = []gardencorev1beta1.Condition{
		{Type: operatorv1alpha1.ExtensionRequiredVirtual, Status: gardencorev1beta1.ConditionTrue, Message: "Extension has required ControllerInstallations for seed clusters"},
		{Type: operatorv1alpha1.ExtensionRequiredRuntime, Status: gardencorev1beta1.ConditionFalse, Message: "Extension not required for any kind"},
	}
	assert.Equal(t, `extension is still being required: "Extension has required ControllerInstallations for seed clusters"`, StillRequired(ext))
	ext.Status.Conditions[1] = gardencorev1beta1.Condition{Type: operatorv1alpha1.ExtensionRequiredRuntime, Status: gardencorev1beta1.ConditionTrue, Message: "Extension required for kinds [DNSRecord]"}
	assert.Equal(t, `extension is still being required: "Extension required for kinds [DNSRecord]"`, StillRequired(ext), "RequiredRuntime first")
}
