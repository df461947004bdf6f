package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// shoots are the shoots' kube-apiservers: real ones (envtest's binary), sharing one etcd, each
// under an etcd prefix of its own, so that a seed's worth of shoots fits on one machine.
type shoots struct {
	etcd   *envtest.Etcd
	planes []*shoot
}

// shoot is one shoot's kube-apiserver: Env is what testenv.EnrollShoot needs of it (its admin's
// config and client), audit its audit log.
type shoot struct {
	plane *envtest.ControlPlane
	env   *testenv.Env
	audit string
}

// startEtcd starts the etcd every shoot's kube-apiserver stores its objects in.
func startEtcd() (*shoots, error) {
	etcd := &envtest.Etcd{}
	if err := etcd.Start(); err != nil {
		return nil, fmt.Errorf("etcd of the shoots: %w", err)
	}
	return &shoots{etcd: etcd}, nil
}

// add starts n more shoots' kube-apiservers, their audit logs in dir.
func (s *shoots) add(dir string, n int) error {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(testenv.AuditPolicy), 0o644); err != nil {
		return err
	}
	for range n {
		i := len(s.planes)
		sh, err := startShoot(s.etcd.URL, i, policy, filepath.Join(dir, fmt.Sprintf("shoot-%03d-audit.log", i)))
		if err != nil {
			return fmt.Errorf("shoot %d: %w", i, err)
		}
		s.planes = append(s.planes, sh)
	}
	return nil
}

func startShoot(etcd *url.URL, i int, policy, auditLog string) (*shoot, error) {
	api := &envtest.APIServer{EtcdURL: etcd}
	args := api.Configure()
	args.Set("etcd-prefix", fmt.Sprintf("/shoot-%03d", i))
	// As at a shoot's kube-apiserver, whose audiences gardenlet sets: the token requestor asks
	// for tokens for "gardener".
	args.Set("service-account-issuer", "https://kubernetes.default.svc.cluster.local")
	args.Set("api-audiences", "https://kubernetes.default.svc.cluster.local,"+v1beta1constants.GardenerAudience)
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", auditLog)
	args.Set("audit-log-format", "json")
	plane := &envtest.ControlPlane{APIServer: api}
	if err := api.Start(); err != nil {
		return nil, err
	}
	admin, err := plane.AddUser(envtest.User{Name: "bench", Groups: []string{"system:masters"}}, &rest.Config{QPS: 200, Burst: 400})
	if err != nil {
		_ = api.Stop()
		return nil, err
	}
	c, err := kube.NewClient(admin.Config(), scheme.Gardener)
	if err != nil {
		_ = api.Stop()
		return nil, err
	}
	return &shoot{plane: plane, env: &testenv.Env{Config: admin.Config(), Client: c}, audit: auditLog}, nil
}

func (s *shoots) stop() error {
	var errs []error
	for _, sh := range s.planes {
		errs = append(errs, sh.plane.APIServer.Stop())
	}
	errs = append(errs, s.etcd.Stop())
	return errors.Join(errs...)
}
