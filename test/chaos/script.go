package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/pkg/landscape/samples"
)

// shootSamplesTimeout bounds the attempts to create the shoot's samples.
const shootSamplesTimeout = 30 * time.Second

// scriptSeed makes every run's script the same: which objects are updated and which deleted.
const scriptSeed = 16

// deletable are the kinds the script deletes some of: objects whose end a function handles
// (finalizers released once nothing refers to them, Bastions of a deleted Shoot, a Project's
// namespace), and none that a live line of make run follows.
var deletable = map[string]bool{
	"Bastion": true, "SecretBinding": true, "CredentialsBinding": true, "Quota": true, "ExposureClass": true,
	"CloudProfile": true, "NamespacedCloudProfile": true, "Project": true, "ManagedSeedSet": true, "Secret": true,
}

// script is the same sequence of creates, updates and deletes in every run: make run's samples,
// and then an update of each object they created or its deletion.
type script struct {
	garden, shoot, kubelet *recorder
	nodes                  *samples.ShootNodes
	grm                    *samples.GRM
	chain                  samples.RegistrationChain
	networkPolicies        func() string
	chartRef               string
	// created are the objects the script created, "cluster namespace/name".
	created map[string]bool
	mu      sync.Mutex
	order   []createdObject
}

type createdObject struct {
	cluster string
	gvk     schema.GroupVersionKind
	key     types.NamespacedName
}

func newScript(land *landscape.Landscape, kubelet client.Client) *script {
	s := &script{chartRef: land.SampleChartRef, created: map[string]bool{}}
	s.garden = &recorder{Client: land.Env.Client, cluster: "garden", script: s}
	s.shoot = &recorder{Client: land.Shoot.Client, cluster: "shoot", script: s}
	s.kubelet = &recorder{Client: kubelet, cluster: "shoot", script: s}
	s.nodes = &samples.ShootNodes{Shoot: s.shoot, Seed: s.garden, Kubelet: s.kubelet}
	s.grm = &samples.GRM{Seed: land.Env.Client, Shoot: land.Shoot.Client}
	s.chain = samples.RegistrationChain{Garden: land.Env.Client, Runtime: land.Env.Client, Seed: land.Seed.Client}
	s.networkPolicies = samples.NetworkPolicyLine(land.Env.Client)
	return s
}

// create creates make run's samples: the garden's (which is also the seed of the shoot), and the
// shoot's (Nodes, a critical Pod, a kubelet's CSR).
func (s *script) create(ctx context.Context) error {
	// The shoot's first: its critical Pod becomes ready 15 s after them.
	// Repeated while it fails: its Pod's admission may meet a webhook server not answering yet.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, shootSamplesTimeout, true, func(ctx context.Context) (bool, error) {
		last = s.nodes.Create(ctx)
		return last == nil, nil
	}); err != nil {
		return fmt.Errorf("the shoot's samples: %w (last attempt: %v)", err, last)
	}
	return samples.Create(ctx, samples.Clusters{Garden: s.garden, Runtime: s.garden}, s.chartRef)
}

// follow runs make run's live lines every second until stop is called, as the live view does:
// some of them act as the landscape's other parties once their time has come (the shoot's
// ManagedResource object edited by hand once it is there, the critical Pod made ready).
func (s *script) follow() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				s.lines()
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func (s *script) lines() []string {
	return []string{s.chain.Line(), s.networkPolicies(), s.grm.Line(), s.nodes.Line()}
}

// change updates each object the script created (an annotation: every function watching its
// kind gets an event) or deletes it.
func (s *script) change(ctx context.Context) error {
	rng := rand.New(rand.NewSource(scriptSeed))
	for _, o := range s.order {
		c := s.garden.Client
		if o.cluster == "shoot" {
			c = s.shoot.Client
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(o.gvk)
		obj.SetNamespace(o.key.Namespace)
		obj.SetName(o.key.Name)
		var err error
		if deletable[o.gvk.Kind] && rng.Float64() < 0.3 {
			err = c.Delete(ctx, obj)
		} else {
			err = c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"chaos.gardener-knative.io/touched":"true"}}}`)))
		}
		if err != nil && !apierrors.IsNotFound(err) { // gone already: a function's work
			return err
		}
	}
	return nil
}

// incomplete are make run's live lines whose samples' outcomes are not complete.
func (s *script) incomplete() []string {
	var lines []string
	for _, line := range s.lines() {
		if !samples.Done(line) {
			lines = append(lines, line)
		}
	}
	return lines
}

// recorder records the objects created through it.
type recorder struct {
	client.Client
	cluster string
	script  *script
}

// Create records an object that exists already too: a sample that a function may have created
// first (a seed's namespace) is the script's all the same.
func (r *recorder) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	created := r.Client.Create(ctx, obj, opts...)
	if created != nil && !apierrors.IsAlreadyExists(created) {
		return created
	}
	gvk, err := apiutil.GVKForObject(obj, r.Scheme())
	if err != nil {
		return err
	}
	s := r.script
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created[r.cluster+" "+obj.GetNamespace()+"/"+obj.GetName()] = true
	s.order = append(s.order, createdObject{cluster: r.cluster, gvk: gvk, key: client.ObjectKeyFromObject(obj)})
	return created
}
