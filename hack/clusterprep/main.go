// Command clusterprep prints, as YAML, what makes the one-node cluster (hack/cluster.sh) the garden
// cluster that config/ expects, before `ko apply -f config/`:
//
//   - the stand-in CRDs of the Gardener kinds gardener-apiserver serves (pkg/testenv: the same CRDs
//     envtest and `make run` install);
//   - the namespace garden;
//   - controllerinstallation's Secret controllerinstallation-target, the documented input of
//     gardenlet's part: the kubeconfig of its seed (-seed-kubeconfig; the cluster plays the seed
//     too) and the seed's name. No function is given settings: the cluster runs with what
//     `ko apply -f config/` deploys.
package main

import (
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation"
	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// namespace is where config/ deploys the functions.
const namespace = "gardener-knative"

func main() {
	seedKubeconfig := flag.String("seed-kubeconfig", "", "kubeconfig of controllerinstallation's seed")
	flag.Parse()
	if err := run(*seedKubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "clusterprep:", err)
		os.Exit(1)
	}
}

func run(seedKubeconfig string) error {
	var objects []any
	crds, err := testenv.GardenerCRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		objects = append(objects, crd)
	}
	for _, name := range []string{"garden", namespace} {
		objects = append(objects, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	if seedKubeconfig != "" {
		kubeconfig, err := os.ReadFile(seedKubeconfig)
		if err != nil {
			return err
		}
		objects = append(objects, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "controllerinstallation-target", Namespace: namespace},
			Data:       map[string][]byte{"kubeconfig": kubeconfig, controllerinstallation.Function.TargetInputs["SEED_NAME"]: []byte(landscape.SeedName)}})
	}
	for _, o := range objects {
		out, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		fmt.Printf("---\n%s", out)
	}
	return nil
}
