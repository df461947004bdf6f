// Command clusterprep prints, as YAML, what Gardener would have installed in the one-node
// cluster's landscape (hack/cluster.sh): the stand-in CRDs of the Gardener kinds (pkg/testenv: the
// same CRDs envtest and `make run` install) and the namespace garden. `hack/cluster.sh up` applies
// it to the virtual garden (gardener-apiserver's kinds) and to the cluster (gardener-operator's
// and the extensions' kinds, as the runtime cluster and seed). What an operator installs and
// provides (the release, the parts' garden access) is `hack/cluster.sh deploy`'s, with kubectl only.
package main

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clusterprep:", err)
		os.Exit(1)
	}
}

func run() error {
	var objects []any
	crds, err := testenv.GardenerCRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		objects = append(objects, crd)
	}
	objects = append(objects, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "garden"}})
	for _, o := range objects {
		out, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		fmt.Printf("---\n%s", out)
	}
	return nil
}
