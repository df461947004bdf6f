// Command genconfig writes what derives from the function registry (functions.All): in each part
// of config/ (config/runtime/, config/seed/), eventing.yaml (the event plumbing of the part's
// functions) and <function>.yaml (its RBAC and Knative Service); config/garden/, each part's
// identity in the garden; docs/functions/README.md (the
// table of every function); and config/scale-to-zero/, the variant of every part in which every
// Knative Service scales to zero (see pkg/configgen). Run
// it from the repository root after changing a function's declaration or a Knative Service or
// webhook registration in config/:
//
//	go run ./hack/genconfig
//
// With -check it writes nothing and fails when config/ is out of date.
//
// The Broker's class, config and delivery are flags (docs/deployment.md, "The Broker"); their
// defaults are what config/ ships (sources.DefaultPlumbing), e.g. for a Kafka Broker:
//
//	go run ./hack/genconfig -broker-class Kafka -broker-config v1/ConfigMap/knative-eventing/kafka-broker-config
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	eventingduckv1 "knative.dev/eventing/pkg/apis/duck/v1"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/sources"
)

func main() {
	dir := flag.String("dir", "config", "directory to write the generated manifests into")
	docs := flag.String("docs", "docs/functions", "directory to write the generated functions table into")
	check := flag.Bool("check", false, "only check that the directory is up to date")
	plumbing := sources.DefaultPlumbing()
	flag.StringVar(&plumbing.BrokerClass, "broker-class", plumbing.BrokerClass, "the Broker's class (eventing.knative.dev/broker.class)")
	flag.Func("broker-config", "the Broker's spec.config, <apiVersion>/<kind>/<namespace>/<name> (default: the class's default)", func(s string) error {
		ref, err := sources.ParseReference(s)
		plumbing.BrokerConfig = ref
		return err
	})
	retries := flag.Int("retries", int(plumbing.Retries), "retries of a delivery before the dead-letter sink")
	flag.Func("backoff-policy", "exponential or linear (default "+string(plumbing.BackoffPolicy)+")", func(s string) error {
		plumbing.BackoffPolicy = eventingduckv1.BackoffPolicyType(s)
		return nil
	})
	flag.StringVar(&plumbing.BackoffDelay, "backoff-delay", plumbing.BackoffDelay, "the first retry's delay, an ISO 8601 duration")
	flag.Parse()
	plumbing.Retries = int32(*retries)
	if err := run(*dir, *docs, *check, plumbing); err != nil {
		fmt.Fprintln(os.Stderr, "genconfig:", err)
		os.Exit(1)
	}
}

func run(dir, docs string, check bool, plumbing sources.Plumbing) error {
	if err := sync(docs, []configgen.File{configgen.FunctionsIndex(functions.All)}, check); err != nil {
		return err
	}
	for _, part := range function.AllParts {
		files, err := configgen.Generate(part, functions.All, plumbing)
		if err != nil {
			return err
		}
		if err := sync(filepath.Join(dir, string(part)), files, check); err != nil {
			return err
		}
	}
	garden, err := configgen.GardenFiles(functions.All)
	if err != nil {
		return err
	}
	if err := sync(filepath.Join(dir, configgen.GardenDir), garden, check); err != nil {
		return err
	}
	// The scale-to-zero variant derives from config/ itself, so it is made after the sources.
	for _, folder := range configgen.ScaleToZeroFolders {
		variant, err := configgen.ScaleToZero(dir, folder)
		if err != nil {
			return err
		}
		if err := sync(filepath.Join(dir, configgen.ScaleToZeroDir, folder), variant, check); err != nil {
			return err
		}
	}
	return nil
}

// sync writes files into dir, or with check only reports how dir differs.
func sync(dir string, files []configgen.File, check bool) error {
	if check {
		problems, err := configgen.Diff(dir, files)
		if err != nil {
			return err
		}
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "%s/%s\n", dir, p)
		}
		if len(problems) > 0 {
			return fmt.Errorf("%s is out of date: run `go run ./hack/genconfig`", dir)
		}
		return nil
	}
	changed, err := configgen.Write(dir, files)
	for _, name := range changed {
		fmt.Printf("%s/%s\n", dir, name)
	}
	return err
}
