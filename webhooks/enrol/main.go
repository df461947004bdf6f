// Command enrol enrols shoots with the seed's per-seed deployment (its functions and webhook
// servers): for each tenant named (a shoot's control-plane namespace in the seed), it labels the
// tenant's Cluster enrolled (from then on the deployment serves it), lets the servers read the
// namespace's access Secrets and applies to the shoot the registrations of config/shoot/ that
// gardenlet would register for it (pkg/enrolment), each trusting what its url reaches: the
// serving certificate of grm-webhooks-tls, or Knative's ingress (the Secret knative-ingress-ca,
// or -ca-bundle); the function shootcabundle keeps both through rotations. It is idempotent: run
// it again whenever a shoot changes (its scheduling profile, workers, feature gates). With
// -unenrol it hands the shoots back (docs/cutover.md).
//
//	go run ./webhooks/enrol shoot--project--name ...
//	go run ./webhooks/enrol -unenrol shoot--project--name ...
//
// The seed is reached with $KUBECONFIG (or -kubeconfig); each shoot with its own access Secrets.
// With -authorizer-kubeconfig DIR it writes <tenant>.kubeconfig there: the file the shoot's
// kube-apiserver authorizes node agents with (none for a workerless shoot).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/gardener-knative/gardener-knative/pkg/enrolment"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

func main() {
	var (
		caBundle    = flag.String("ca-bundle", "", "PEM file of the CA of Knative's cluster-local TLS (default: ca.crt of the Secret knative-ingress-ca in -namespace)")
		namespace   = flag.String("namespace", "gardener-knative", "namespace of the webhook servers in the seed")
		server      = flag.String("server", "", "scheme and host replacing the cluster-local hosts of every url (e.g. https://127.0.0.1:9443)")
		scaleToZero = flag.Bool("scale-to-zero", false, "register the scale-to-zero variant (config/scale-to-zero/shoot/)")
		optIn       = flag.String("opt-in", "", "comma-separated webhooks of config/shoot-opt-in/ to register too")
		authzDir    = flag.String("authorizer-kubeconfig", "", "directory to write each tenant's authorization webhook kubeconfig into")
		unenrol     = flag.Bool("unenrol", false, "hand the shoots back to gardenlet's resource managers: delete our registrations, remove the label and the servers' access")
		tokenWait   = flag.Duration("token-wait", enrolment.DefaultTokenWait, "how long to wait for the token requestor's first token of the servers' read-only identity in each shoot")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] TENANT...\n       %s -unenrol TENANT...\n", os.Args[0], os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *unenrol {
		if err := runUnenrol(ctx, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "enrol:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, *caBundle, *namespace, *authzDir, enrolment.Options{Server: *server, ScaleToZero: *scaleToZero, OptIn: split(*optIn), TokenWait: *tokenWait}, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "enrol:", err)
		os.Exit(1)
	}
}

func split(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// seedClient reaches the seed with $KUBECONFIG (or -kubeconfig).
func seedClient() (client.Client, error) {
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{})
}

func tenantOf(name string) (tenant.Name, error) {
	if !tenant.Valid(name, tenant.DefaultPrefix) {
		return "", fmt.Errorf("%q is no shoot control-plane namespace (%s…)", name, tenant.DefaultPrefix)
	}
	return tenant.Name(name), nil
}

func runUnenrol(ctx context.Context, tenants []string) error {
	seed, err := seedClient()
	if err != nil {
		return err
	}
	for _, name := range tenants {
		t, err := tenantOf(name)
		if err != nil {
			return err
		}
		deleted, err := enrolment.Unenrol(ctx, seed, t)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%s: unenrolled; removed %s\n", name, strings.Join(deleted, ", "))
	}
	return nil
}

func run(ctx context.Context, caFile, namespace, authzDir string, opts enrolment.Options, tenants []string) error {
	if caFile != "" {
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		opts.CABundle = ca
	}
	seed, err := seedClient()
	if err != nil {
		return err
	}
	for _, name := range tenants {
		t, err := tenantOf(name)
		if err != nil {
			return err
		}
		result, err := enrolment.Enrol(ctx, seed, t, namespace, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%s: registered %s", name, strings.Join(result.Registered, ", "))
		if len(result.Deleted) > 0 {
			fmt.Printf("; removed %s", strings.Join(result.Deleted, ", "))
		}
		fmt.Println()
		if authzDir != "" && result.AuthorizerKubeconfig != nil {
			path := filepath.Join(authzDir, name+".kubeconfig")
			if err := os.WriteFile(path, result.AuthorizerKubeconfig, 0o600); err != nil {
				return err
			}
			fmt.Printf("%s: authorization webhook kubeconfig %s\n", name, path)
		}
	}
	return nil
}
