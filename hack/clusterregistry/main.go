// Command clusterregistry is the one-node cluster's image registry (hack/cluster.sh): go-
// containerregistry's registry on a loopback address, which ko pushes to and containerd pulls
// from over plain HTTP, so that no image comes from outside the machine. Before it serves, it
// holds the two images nothing here builds:
//
//   - base:nonroot, ko's base image (KO_DEFAULTBASEIMAGE): /etc/passwd with distroless' nonroot
//     user 65532 as its user (Knative's deployments set runAsNonRoot), /tmp and a home;
//   - pause:1, the pod sandbox image (containerd's sandbox_image): a static busybox sleeping forever.
//
// Blobs are kept on disk (-blobs), so a warm bring-up uploads only what changed; manifests live in
// memory and are pushed again by each bring-up.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gardener-knative/gardener-knative/hack/baseimage"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5055", "address to serve the registry on")
	blobs := flag.String("blobs", "", "directory for blobs (empty: memory)")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox for the pause image")
	flag.Parse()
	if err := run(*addr, *blobs, *busybox); err != nil {
		log.Fatal(err)
	}
}

func run(addr, blobs, busybox string) error {
	opts := []registry.Option{registry.Logger(log.New(os.Stderr, "registry ", log.LstdFlags))}
	if blobs != "" {
		if err := os.MkdirAll(blobs, 0o755); err != nil {
			return err
		}
		opts = append(opts, registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs)))
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	server := &http.Server{Handler: registry.New(opts...), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- server.Serve(listener) }()

	if err := pushImages(addr, busybox); err != nil {
		return err
	}
	log.Printf("serving on %s with %s/base:nonroot and %s/pause:1", addr, addr, addr)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func pushImages(addr, busybox string) error {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("the pause image needs a static busybox (Debian: busybox-static): %w", err)
	}
	base, err := image(baseimage.Config(), []file{
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "home/nonroot/", mode: 0o700, uid: 65532},
		{name: "tmp/", mode: 0o1777},
	})
	if err != nil {
		return err
	}
	pause, err := image(v1.Config{Entrypoint: []string{"/bin/busybox", "sleep", "2147483647"}},
		[]file{{name: "bin/busybox", mode: 0o755, data: bb}})
	if err != nil {
		return err
	}
	for tag, img := range map[string]v1.Image{"base:nonroot": base, "pause:1": pause} {
		ref, err := name.ParseReference(addr+"/"+tag, name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
	}
	return nil
}

type file struct {
	name string // a trailing slash makes a directory
	mode int64
	uid  int
	data []byte
}

// image is a linux/amd64 OCI image of one layer holding files.
func image(config v1.Config, files []file) (v1.Image, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, Size: int64(len(f.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if f.name[len(f.name)-1] == '/' {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Config = "linux", "amd64", config
	return mutate.ConfigFile(img, cfg)
}
