// Package baseimage describes the stand-in for ko.yaml's base image, distroless' static image
// with its nonroot user, which this machine cannot pull: the cluster's registry
// (hack/clusterregistry) builds it for real pods, test/deploy an empty one of the same config.
package baseimage

import v1 "github.com/google/go-containerregistry/pkg/v1"

// User is distroless' unprivileged user, nonroot (65532), which ko.yaml's base image declares and
// the images keep: Knative's deployments set runAsNonRoot.
const User = "65532"

// Config is the base image's configuration: distroless' nonroot user, its home and PATH.
func Config() v1.Config {
	return v1.Config{
		User:       User,
		WorkingDir: "/home/nonroot",
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
}
