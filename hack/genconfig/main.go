// Command genconfig writes what derives from the function registry (functions.All): in config/,
// eventing.yaml (the event plumbing of every function) and <function>.yaml (its RBAC and Knative
// Service); docs/functions/README.md (the table of every function); and config/scale-to-zero/,
// the variant of config/ in which every Knative Service scales to zero (see pkg/configgen). Run
// it from the repository root after changing a function's declaration or a Knative Service or
// webhook registration in config/:
//
//	go run ./hack/genconfig
//
// With -check it writes nothing and fails when config/ is out of date.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
)

func main() {
	dir := flag.String("dir", "config", "directory to write the generated manifests into")
	docs := flag.String("docs", "docs/functions", "directory to write the generated functions table into")
	check := flag.Bool("check", false, "only check that the directory is up to date")
	flag.Parse()
	if err := run(*dir, *docs, *check); err != nil {
		fmt.Fprintln(os.Stderr, "genconfig:", err)
		os.Exit(1)
	}
}

func run(dir, docs string, check bool) error {
	files, err := configgen.Generate(functions.All)
	if err != nil {
		return err
	}
	if err := sync(docs, []configgen.File{configgen.FunctionsIndex(functions.All)}, check); err != nil {
		return err
	}
	if err := sync(dir, files, check); err != nil {
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
