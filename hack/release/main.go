// Command release writes a release of gardener-knative (make release VERSION=v1.2.3): for each
// part of config/ (configgen.ReleaseParts) one manifest resolved by ko, images by digest under
// readable names (<KO_DOCKER_REPO>/<binary>, ko's -B) and tagged with the version, every object
// and pod labelled app.kubernetes.io/version, and the binaries built to report the version
// (`--version`, their "starting" log line). Operators then install with kubectl apply -f, without
// Go or ko (docs/deployment.md, "Releases").
//
//	KO_DOCKER_REPO=registry.example.com/gardener-knative go run ./hack/release -version v1.2.3
//
// KO_BIN names the ko binary (hack/ko.sh builds the pinned one); KO_FLAGS adds flags to each
// ko resolve (e.g. --platform linux/amd64 --insecure-registry).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
)

func main() {
	version := flag.String("version", "", "the release's version, e.g. v1.2.3 (an image tag and a label value)")
	out := flag.String("out", "", "the folder the manifests are written to (default .cache/release/<version>)")
	configDir := flag.String("config", "config", "the config/ folder to release")
	flag.Parse()
	if err := run(*version, *configDir, *out); err != nil {
		slog.Error("release failed", "error", err)
		os.Exit(1)
	}
}

func run(version, configDir, out string) error {
	if err := configgen.ValidReleaseVersion(version); err != nil {
		return err
	}
	if os.Getenv("KO_DOCKER_REPO") == "" {
		return fmt.Errorf("KO_DOCKER_REPO is not set: the registry the release's images are pushed to")
	}
	ko := os.Getenv("KO_BIN")
	if ko == "" {
		ko = "ko"
	}
	if out == "" {
		out = filepath.Join(".cache", "release", version)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, part := range configgen.ReleaseParts {
		args := append([]string{"resolve", "--base-import-paths", "--tags", version, "-f", filepath.Join(configDir, part.Folder)},
			strings.Fields(os.Getenv("KO_FLAGS"))...)
		cmd := exec.Command(ko, args...)
		cmd.Env = append(os.Environ(), "GARDENER_KNATIVE_VERSION="+version)
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("ko %s: %w", strings.Join(args, " "), err)
		}
		manifest, err := configgen.Release(stdout.Bytes(), version, part.File)
		if err != nil {
			return err
		}
		path := filepath.Join(out, part.File)
		if err := os.WriteFile(path, manifest, 0o644); err != nil {
			return err
		}
		slog.Info("written", "part", part.Folder, "file", path, "bytes", len(manifest))
	}
	return nil
}
