package configgen

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/access"
	"github.com/gardener-knative/gardener-knative/sources"
)

// ModulePath is the Go module whose main packages ko builds (ko://<ModulePath>/functions/<name>).
const ModulePath = "github.com/gardener-knative/gardener-knative"

// ServiceAccountName is the user a function's requests are made as: its own ServiceAccount, in
// its home part's namespace.
func ServiceAccountName(fn *function.Function) string {
	return "system:serviceaccount:" + fn.HomePart().Namespace() + ":" + fn.Name
}

// RBACObjects are the ServiceAccount a function deployed with part runs as, the ClusterRole and
// binding that grant it exactly its declared rules on its Source for that part
// (Function.RBACIn), and a Role and RoleBinding per namespace of its NamespacedRBAC. For a
// function that works on the garden these are what the garden kubeconfig's identity needs in
// the garden, as the tests grant them; where it runs it gets DeployedRBACObjects.
func RBACObjects(fn *function.Function, part function.Part) []client.Object {
	return rbacObjects(fn, part, fn.RBACIn(part), fn.NamespacedRBAC)
}

// DeployedRBACObjects are the RBAC objects config/ deploys with a function where part runs it:
// RBACObjects, but for a function that works on the garden, whose Source rules are the garden's
// (not granted where it runs), its TargetRBAC and NamespacedTargetRBAC in the cluster it runs in, and nothing at all
// where it has nothing to do there (gardener-controller-manager's functions): it runs without
// an API token of that cluster (runsAs).
func DeployedRBACObjects(fn *function.Function, part function.Part) []client.Object {
	if fn.WorksOnGarden {
		return rbacObjects(fn, part, append(slices.Clone(fn.TargetRBAC), EventReceiverRule), fn.NamespacedTargetRBAC)
	}
	return rbacObjects(fn, part, append(slices.Clone(fn.RBACIn(part)), EventReceiverRule), fn.NamespacedRBAC)
}

// EventReceiverRule is what every function holds where it runs beyond its declaration: asking the
// cluster that issued an event sender's token whether it is valid (pkg/eventauth), as every
// Gardener component that authenticates its callers holds (system:auth-delegator's TokenReviews).
// A function that works on the garden and has nothing else to do where it runs holds only this
// there.
var EventReceiverRule = rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}

func rbacObjects(fn *function.Function, part function.Part, rules []rbacv1.PolicyRule, namespaced map[string][]rbacv1.PolicyRule) []client.Object {
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: meta(fn.Name, fn.Name, part.Namespace()),
	}
	objs := append([]client.Object{sa}, grants(fn.Name, sources.ClusterScopedName(part.Namespace(), fn.Name),
		[]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: fn.Name, Namespace: part.Namespace()}},
		rules, namespaced, func(namespace string) string { return function.NamespaceOf(namespace, part) })...)
	if len(fn.TenantRBAC) > 0 {
		objs = append(objs, TenantRole(fn.Name, TenantRoleName(fn), fn.TenantRBAC))
	}
	return objs
}

// TenantRoleName is the name of fn's ClusterRole of its TenantRBAC.
func TenantRoleName(fn *function.Function) string {
	return sources.ClusterScopedName(fn.HomePart().Namespace(), fn.Name+":tenant")
}

// TenantRole is a ClusterRole of rules that ServiceAccount serviceAccount holds only in enrolled
// tenants' namespaces: bound in each by the enrolment (pkg/tenant/access), nowhere else.
func TenantRole(serviceAccount, name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: meta(serviceAccount, name, ""),
		Rules:      rules,
	}
	role.Labels[access.RoleLabel] = serviceAccount
	return role
}

// grants give subjects rules cluster-wide (a ClusterRole and its binding, named name) and in
// each namespace of namespaced its rules there (a Role and RoleBinding of the same name in the
// namespace namespaceOf names), labelled as component's.
func grants(component, name string, subjects []rbacv1.Subject, rules []rbacv1.PolicyRule, namespaced map[string][]rbacv1.PolicyRule, namespaceOf func(string) string) []client.Object {
	var objs []client.Object
	// A ClusterRole of no rules would grant nothing: none is made (a function that works on the
	// garden and needs only namespaced rules where it runs).
	if len(rules) > 0 {
		objs = append(objs,
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
				ObjectMeta: meta(component, name, ""),
				Rules:      rules,
			},
			&rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
				ObjectMeta: meta(component, name, ""),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   subjects,
			})
	}
	for _, namespace := range slices.Sorted(maps.Keys(namespaced)) {
		objs = append(objs,
			&rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
				ObjectMeta: meta(component, name, namespaceOf(namespace)),
				Rules:      namespaced[namespace],
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: meta(component, name, namespaceOf(namespace)),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   subjects,
			})
	}
	return objs
}

// KnativeService is the function's Knative Service: cluster-local (only the Broker sends to it),
// running as its ServiceAccount, with a request timeout above the longest sweep.
//
// Its settings (docs/configuration.md) come from the optional ConfigMap <name>-settings, so
// operators set them without editing generated files. A function deployed per seed serves every
// shoot of the seed (MULTI_TENANT); one that works on the garden is given the garden's
// kubeconfig from its part's Secret garden-access (function.GardenAccessSecret, key
// function.GardenAccessKubeconfigKey) and its GardenInputs from keys of the same Secret, all as
// environment variables, its Target being the cluster it runs in: the revision does not start
// before the operator has created it. Every function is told its part's
// namespace (function.NamespaceEnv).
func KnativeService(fn *function.Function, part function.Part) (*unstructured.Unstructured, error) {
	svc := knativeService(part.Namespace(), fn.Name, "functions/"+fn.Name, fn.Name)
	podSpec := svc.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	container := podSpec["containers"].([]any)[0].(map[string]any)
	container["envFrom"] = []any{map[string]any{"configMapRef": map[string]any{"name": SettingsConfigMap(fn), "optional": true}}}
	env := []any{
		map[string]any{"name": function.NamespaceEnv, "value": part.Namespace()},
		// Only the Broker's deliveries by the function's own Trigger (pkg/eventauth).
		map[string]any{"name": "EVENT_AUDIENCE", "value": sources.EventAudience(part.Namespace(), fn.Name)},
		map[string]any{"name": "EVENT_SENDERS", "value": sources.TriggerSender(part.Namespace(), fn.Name)},
	}
	switch {
	case fn.DeploymentMode() == function.PerSeed:
		// Every shoot of the seed, reached with the access Secrets of its namespace.
		env = append(env, map[string]any{"name": "MULTI_TENANT", "value": "true"})
	case fn.WorksOnGarden:
		// As environment, not as a volume: the kubelet starts a pod's containers only once it has
		// seen its volumes mounted, which it checks every 0.3 s (function.Config.GardenKubeconfigData).
		inputs := map[string]string{function.GardenKubeconfigDataEnv: function.GardenAccessKubeconfigKey}
		maps.Copy(inputs, fn.GardenInputs)
		for _, name := range slices.Sorted(maps.Keys(inputs)) {
			env = append(env, map[string]any{"name": name, "valueFrom": map[string]any{
				"secretKeyRef": map[string]any{"name": function.GardenAccessSecret, "key": inputs[name]}}})
		}
	case fn.DeploymentMode() == function.SingleTarget:
		// One target of its own is what GRM's classic per-shoot deployment has, not a part of a
		// landscape: config/ reaches a second cluster only as the tenants of a seed or as the
		// garden.
		return nil, fmt.Errorf("function %s works on a single Target, which no part of config/ deploys: serve it per seed or on the garden", fn.Name)
	}
	container["env"] = env
	return svc, nil
}

// SettingsConfigMap names the optional ConfigMap whose keys become the function's environment.
func SettingsConfigMap(fn *function.Function) string { return fn.Name + "-settings" }

// DeadLetterService is the dead-letter sink (sources/deadletter) of the Broker in namespace. It
// reads no API.
func DeadLetterService(namespace string) *unstructured.Unstructured {
	return knativeService(namespace, sources.DeadLetter, "sources/deadletter", "")
}

// A function pod's scale bounds (docs/deployment.md, "Scale bounds"). Most reconciles make 2 to 6
// API requests (the request-cost tests, e.g. test/integration/referenceprotection), so 20
// reconciles in flight fill the client's burst of 100 (KUBE_API_BURST) before its limiter queues
// them; more concurrency per pod would only wait there. max-scale bounds what one function asks of an API
// server to functionMaxScale × KUBE_API_QPS (3 × 50 requests a second), whatever Knative's
// autoscaler would start for a burst of events; the Broker's delivery retries what waits too long.
const (
	// FunctionContainerConcurrency is the reconciles one pod takes at once (containerConcurrency);
	// Knative's queue-proxy holds the rest.
	FunctionContainerConcurrency = 20
	// FunctionTimeout is how long a request may take (the Service's timeoutSeconds); Knative's
	// queue-proxy ends it then, its wait for a free slot included.
	FunctionTimeout  = 300 * time.Second
	functionMaxScale = "3"
)

// maxScale is Knative's upper bound of replicas.
const maxScale = "autoscaling.knative.dev/max-scale"

// FunctionMemoryLimit is every function's container memory limit (hack/benchgarden holds each
// function's process to it).
const FunctionMemoryLimit = "256Mi"

// knativeService is a cluster-local Knative Service in namespace of a main package of this module,
// as serviceAccount ("" for the namespace's default, without API token).
func knativeService(namespace, name, mainPackage, serviceAccount string) *unstructured.Unstructured {
	labels := map[string]any{"app.kubernetes.io/part-of": "gardener-knative", "app.kubernetes.io/component": name}
	podSpec := map[string]any{
		"containerConcurrency": int64(FunctionContainerConcurrency),
		// A request is one event or one sweep run; SWEEP_TIMEOUT (4m) stays below it.
		"timeoutSeconds": int64(FunctionTimeout.Seconds()),
		"containers": []any{map[string]any{
			"name":  "function",
			"image": "ko://" + ModulePath + "/" + mainPackage,
			"readinessProbe": map[string]any{
				"httpGet": map[string]any{"path": "/readyz"},
			},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
				"limits":   map[string]any{"memory": FunctionMemoryLimit},
			},
			"securityContext": map[string]any{
				"runAsNonRoot":             true,
				"allowPrivilegeEscalation": false,
				"readOnlyRootFilesystem":   true,
				"capabilities":             map[string]any{"drop": []any{"ALL"}},
				"seccompProfile":           map[string]any{"type": "RuntimeDefault"},
			},
		}},
	}
	if serviceAccount != "" {
		podSpec["serviceAccountName"] = serviceAccount
	} else {
		podSpec["automountServiceAccountToken"] = false
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.knative.dev/v1",
		"kind":       "Service",
		"metadata": map[string]any{
			"name":      name,
			"namespace": namespace,
			"labels": map[string]any{
				"app.kubernetes.io/part-of":   "gardener-knative",
				"app.kubernetes.io/component": name,
				// Only the Broker inside the cluster sends events; nothing outside may reach it.
				"networking.knative.dev/visibility": "cluster-local",
			},
		},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{
					"labels":      labels,
					"annotations": map[string]any{maxScale: functionMaxScale},
				},
				"spec": podSpec,
			},
		},
	}}
}

// functionFile renders config/<part>/<name>.yaml: the function's RBAC and Knative Service.
func functionFile(fn *function.Function, part function.Part) (File, error) {
	var buf bytes.Buffer
	buf.WriteString(Header + "\n")
	switch {
	case fn.WorksOnGarden:
		fmt.Fprintf(&buf, "# The %s function: its ServiceAccount, its RBAC where it runs (Function.TargetRBAC and the\n", fn.Name)
		buf.WriteString("# review of its event senders' tokens) and Knative\n")
		buf.WriteString("# Service, derived from its declaration (functions/registry.go). It works on the garden with the part's\n")
		buf.WriteString("# garden access (the Secret garden-access, whose identity needs there the rules\n")
		buf.WriteString("# docs/functions/README.md lists). Its events reach it through\n")
	default:
		fmt.Fprintf(&buf, "# The %s function: its ServiceAccount, least-privilege RBAC (Function.RBAC and the review of its\n", fn.Name)
		buf.WriteString("# event senders' tokens) and Knative\n")
		buf.WriteString("# Service, derived from its declaration (functions/registry.go). Its events reach it through\n")
	}
	buf.WriteString("# the Broker and its Trigger (eventing.yaml). Settings: docs/configuration.md and\n")
	fmt.Fprintf(&buf, "# docs/functions/%s.md. Regenerate with `go run ./hack/genconfig`.\n", fn.Name)
	svc, err := KnativeService(fn, part)
	if err != nil {
		return File{}, err
	}
	objs := append(DeployedRBACObjects(fn, part), svc)
	for _, obj := range objs {
		doc, err := Marshal(obj)
		if err != nil {
			return File{}, fmt.Errorf("function %s: %s: %w", fn.Name, obj.GetObjectKind().GroupVersionKind().Kind, err)
		}
		buf.WriteString("---\n")
		buf.Write(doc)
	}
	return File{Name: fn.Name + ".yaml", Content: buf.Bytes()}, nil
}

func meta(component, name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: namespace,
		Labels:    map[string]string{"app.kubernetes.io/part-of": "gardener-knative", "app.kubernetes.io/component": component},
	}
}
