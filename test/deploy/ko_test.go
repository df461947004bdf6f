// Package deploy_test proves the deploy path `ko apply -f config/<part>/` as far as a machine
// without a cluster and without internet can: the pinned ko (hack/ko.sh, built from the Go module
// proxy) resolves every folder of config/ with ko:// images (the parts and their scale-to-zero
// variants) with the repository's own ko.yaml, building on a minimal base image made here and
// pushing to an OCI registry served in-process (go-containerregistry's). Every ko:// reference must become an
// image digest that the registry serves, every image must hold the binary of its import path for
// its platform, and the resolved manifests must be the unresolved ones with only the images
// replaced.
//
//	go test ./test/deploy/                      # linux/amd64; builds ko first when .cache/bin lacks it
//	KO_PLATFORM=all go test -timeout 30m ./test/deploy/   # every platform of ko.yaml
package deploy_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/hack/baseimage"
)

const (
	// repoRoot is the repository seen from this package's directory, where go test runs it; ko
	// runs there, so it reads the repository's .ko.yaml (a link to ko.yaml).
	repoRoot = "../.."
	// repo is the repository ko pushes to (KO_DOCKER_REPO), below the in-process registry.
	repo = "gardener-knative"
	// defaultPlatform is what the test builds unless KO_PLATFORM says otherwise.
	defaultPlatform = "linux/amd64"

	annotationBaseName   = "org.opencontainers.image.base.name"
	annotationBaseDigest = "org.opencontainers.image.base.digest"
)

// koReference finds ko:// references anywhere in a file, as test/config does.
var koReference = regexp.MustCompile(`ko://[^\s"'#]+`)

func TestKoResolvesConfig(t *testing.T) {
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-30*time.Second))
		defer cancel()
	}

	ko := koBinary(t)
	cfg := readKoConfig(t)
	require.NotEmpty(t, cfg.DefaultPlatforms, "ko.yaml names no defaultPlatforms")
	// One platform by default: building every image for each of ko.yaml's platforms doubles the
	// time (see docs/testing.md); KO_PLATFORM=all builds ko.yaml's platforms.
	platforms := cfg.DefaultPlatforms
	var koArgs []string
	switch p := os.Getenv("KO_PLATFORM"); p {
	case "all":
	case "":
		p = defaultPlatform
		fallthrough
	default:
		platforms = strings.Split(p, ",")
		koArgs = append(koArgs, "--platform="+p)
		for _, one := range platforms {
			require.Contains(t, cfg.DefaultPlatforms, one, "KO_PLATFORM: not a platform of ko.yaml")
		}
	}
	modulePath := goOutput(t, "list", "-m", "-f", "{{.Path}}")

	reg := startRegistry(t)
	base := pushBase(t, reg, cfg.DefaultPlatforms)

	// What `ko apply -f config/<part>/` reads for each part (the folder, not its subfolders), and
	// each other folder that holds ko:// images (e.g. `-f config/scale-to-zero/seed/`).
	dirs := koDirs(t)
	for _, part := range function.AllParts {
		require.Contains(t, dirs, "config/"+string(part))
	}
	var unresolved []object
	wantImages := map[string]bool{}
	for _, dir := range dirs {
		objs, refs := readDir(t, dir)
		unresolved = append(unresolved, objs...)
		for _, ref := range refs {
			wantImages[strings.TrimPrefix(ref, "ko://")] = true
		}
		koArgs = append(koArgs, "-f", dir+"/")
	}
	require.NotEmpty(t, wantImages, "config/ refers to no ko:// image")

	// ko resolve = ko apply without the cluster: build, push, replace, print.
	cmd := exec.CommandContext(ctx, ko, append([]string{"resolve"}, koArgs...)...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(),
		"KO_DOCKER_REPO="+reg.host+"/"+repo,
		// Overrides only ko.yaml's defaultBaseImage (gcr.io cannot be reached from here).
		"KO_DEFAULTBASEIMAGE="+base.ref,
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	require.NoError(t, err, "ko %s:\n%s", strings.Join(cmd.Args[1:], " "), tail(stderr.String(), 4000))
	t.Logf("ko resolve %s: %d images, %s, %s", strings.Join(koArgs, " "), len(wantImages), strings.Join(platforms, ","), elapsed.Round(time.Second))

	out := stdout.String()
	require.NotContains(t, out, "ko://", "ko left a ko:// reference unresolved")
	resolved := parseObjects(t, "ko resolve output", stdout.Bytes())

	// The same objects in the same order (ko keeps the order of files and documents, which
	// kubectl apply needs: the Namespace first), equal but for the images.
	require.Len(t, resolved, len(unresolved), "ko resolve returned another number of objects than config/ holds")
	images := map[string]string{} // import path → resolved reference
	for i, want := range unresolved {
		got := resolved[i]
		require.Equal(t, want.id(), describe(got), "object %d (%s) is not at its place in ko's output", i, want.file)
		var problems []string
		compare(describe(got), want.obj.Object, got.Object, images, &problems)
		require.Empty(t, problems, "%s: %s", want.file, describe(got))
	}
	require.Equal(t, sortedKeys(wantImages), sortedKeys(images), "ko:// references and resolved images differ")

	var report []string
	for _, importPath := range sortedKeys(images) {
		ref := images[importPath]
		t.Run(path.Base(importPath), func(t *testing.T) {
			require.True(t, strings.HasPrefix(importPath, modulePath+"/"), "%s is not in module %s", importPath, modulePath)
			sizes := checkImage(t, reg, base, ref, importPath, platforms)
			report = append(report, fmt.Sprintf("%-28s %s", path.Base(importPath), sizes))
		})
	}
	t.Logf("images (compressed layer bytes per platform, from the registry):\n%s", strings.Join(report, "\n"))
}

// koConfig is what the test needs of ko.yaml.
type koConfig struct {
	DefaultBaseImage string   `json:"defaultBaseImage"`
	DefaultPlatforms []string `json:"defaultPlatforms"`
}

func readKoConfig(t *testing.T) koConfig {
	t.Helper()
	// ko reads .ko.yaml; it must be the link to ko.yaml the documentation describes.
	target, err := os.Readlink(filepath.Join(repoRoot, ".ko.yaml"))
	require.NoError(t, err, ".ko.yaml must be a symbolic link to ko.yaml")
	require.Equal(t, "ko.yaml", target)
	data, err := os.ReadFile(filepath.Join(repoRoot, "ko.yaml"))
	require.NoError(t, err)
	var cfg koConfig
	require.NoError(t, yaml.Unmarshal(data, &cfg))
	require.NotEmpty(t, cfg.DefaultBaseImage, "ko.yaml names no defaultBaseImage")
	return cfg
}

// koBinary is $KO_BIN (make test sets it), or the pinned ko that hack/ko.sh provides,
// building it when missing.
func koBinary(t *testing.T) string {
	t.Helper()
	if ko := os.Getenv("KO_BIN"); ko != "" {
		return ko
	}
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "ko.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "hack/ko.sh could not provide ko (it builds it from the Go module proxy):\n%s", stderr.String())
	ko := strings.TrimSpace(string(out))
	version, err := exec.Command(ko, "version").Output()
	require.NoError(t, err, "%s version", ko)
	t.Logf("ko %s (%s)", strings.TrimSpace(string(version)), ko)
	return ko
}

func goOutput(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	require.NoError(t, err, "go %s", strings.Join(args, " "))
	return strings.TrimSpace(string(out))
}

type testRegistry struct {
	host string // host:port
}

// startRegistry serves go-containerregistry's registry on loopback (plain HTTP, which
// go-containerregistry and so ko use for loopback registries), its blobs on disk.
func startRegistry(t *testing.T) *testRegistry {
	t.Helper()
	handler := registry.New(
		registry.Logger(log.New(io.Discard, "", 0)),
		registry.WithBlobHandler(registry.NewDiskBlobHandler(t.TempDir())),
	)
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	return &testRegistry{host: strings.TrimPrefix(server.URL, "http://")}
}

// blobSize asks the registry (HEAD) for a blob's size: it must serve it.
func (r *testRegistry) blobSize(t *testing.T, repository string, digest v1.Hash) int64 {
	t.Helper()
	resp, err := http.Head(fmt.Sprintf("http://%s/v2/%s/blobs/%s", r.host, repository, digest))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "registry does not serve blob %s of %s", digest, repository)
	return resp.ContentLength
}

type baseImage struct {
	ref     string            // by tag, as ko.yaml names distroless
	digests map[string]string // platform → digest of its image in the index
}

// pushBase pushes the stand-in for ko.yaml's defaultBaseImage: an index with, per platform, an
// empty image whose config names the platform and distroless' nonroot user.
func pushBase(t *testing.T, reg *testRegistry, platforms []string) baseImage {
	t.Helper()
	base := baseImage{ref: reg.host + "/distroless/static-debian12:nonroot", digests: map[string]string{}}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		require.NoError(t, err, "ko.yaml platform %q", p)
		img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{
			OS:           platform.OS,
			Architecture: platform.Architecture,
			Variant:      platform.Variant,
			Config:       baseimage.Config(),
			RootFS:       v1.RootFS{Type: "layers"},
		})
		require.NoError(t, err)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		digest, err := img.Digest()
		require.NoError(t, err)
		base.digests[platform.String()] = digest.String()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: platform}})
	}
	ref, err := name.ParseReference(base.ref)
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(ref, idx))
	return base
}

// koDirs are the folders under config/ that hold a ko:// reference, in name order.
func koDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	require.NoError(t, filepath.WalkDir(filepath.Join(repoRoot, "config"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		for _, f := range koFiles(t, dir) {
			data, err := os.ReadFile(filepath.Join(repoRoot, f))
			if err != nil {
				return err
			}
			if koReference.Match(data) {
				dirs = append(dirs, dir)
				break
			}
		}
		return nil
	}))
	return dirs
}

// koFiles lists the files ko reads from a directory given with -f: .yaml and .json, not .yml,
// no subfolders, in name order (filepath.Walk's).
func koFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot, dir))
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		if !e.IsDir() && (filepath.Ext(e.Name()) == ".yaml" || filepath.Ext(e.Name()) == ".json") {
			files = append(files, dir+"/"+e.Name())
		}
	}
	return files
}

type object struct {
	file string
	obj  *unstructured.Unstructured
}

func (o object) id() string { return describe(o.obj) }

// readDir returns the objects of a directory's files in ko's order, and its ko:// references.
func readDir(t *testing.T, dir string) ([]object, []string) {
	t.Helper()
	files := koFiles(t, dir)
	require.NotEmpty(t, files, "%s holds no manifests", dir)
	var objs []object
	var refs []string
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		require.NoError(t, err)
		refs = append(refs, koReference.FindAllString(string(data), -1)...)
		parsed := parseObjects(t, f, data)
		require.NotEmpty(t, parsed, "%s yields no object", f)
		for _, u := range parsed {
			objs = append(objs, object{file: f, obj: u})
		}
	}
	return objs, refs
}

// parseObjects decodes every YAML document strictly; each must be an object with apiVersion,
// kind and name.
func parseObjects(t *testing.T, what string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "%s: document %d", what, i)
		js, err := yaml.YAMLToJSONStrict(doc)
		require.NoError(t, err, "%s: document %d", what, i)
		if s := strings.TrimSpace(string(js)); s == "null" || s == "{}" {
			continue // only comments, or the empty document after a trailing ---
		}
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(js), "%s: document %d", what, i)
		require.NotEmpty(t, u.GetAPIVersion(), "%s: document %d has no apiVersion", what, i)
		require.NotEmpty(t, u.GetKind(), "%s: document %d has no kind", what, i)
		require.NotEmpty(t, u.GetName(), "%s: document %d (%s) has no name", what, i, u.GetKind())
		objs = append(objs, u)
	}
	return objs
}

func describe(u *unstructured.Unstructured) string {
	n := u.GetName()
	if u.GetNamespace() != "" {
		n = u.GetNamespace() + "/" + n
	}
	return u.GetAPIVersion() + " " + u.GetKind() + " " + n
}

// compare walks an unresolved object (want) and its resolved form (got) together: they must be
// equal, except that each ko:// string becomes an image reference, the same one for every
// reference to the same import path.
func compare(at string, want, got any, images map[string]string, problems *[]string) {
	switch w := want.(type) {
	case string:
		if importPath, ok := strings.CutPrefix(w, "ko://"); ok {
			g, ok := got.(string)
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%s: %s resolved to %v", at, w, got))
				return
			}
			if prev, seen := images[importPath]; seen && prev != g {
				*problems = append(*problems, fmt.Sprintf("%s: %s resolved to %s here and %s elsewhere", at, w, g, prev))
			}
			images[importPath] = g
			return
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			*problems = append(*problems, fmt.Sprintf("%s: %v became %v", at, want, got))
			return
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				*problems = append(*problems, fmt.Sprintf("%s.%s: missing after resolving", at, k))
				continue
			}
			compare(at+"."+k, v, gv, images, problems)
		}
		return
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*problems = append(*problems, fmt.Sprintf("%s: %v became %v", at, want, got))
			return
		}
		for i := range w {
			compare(fmt.Sprintf("%s[%d]", at, i), w[i], g[i], images, problems)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		*problems = append(*problems, fmt.Sprintf("%s: %#v became %#v", at, want, got))
	}
}

// checkImage fetches a resolved image from the registry and checks it per platform; it returns
// the compressed layer sizes per platform.
func checkImage(t *testing.T, reg *testRegistry, base baseImage, ref, importPath string, platforms []string) string {
	t.Helper()
	digest, err := name.NewDigest(ref)
	require.NoError(t, err, "%s did not resolve to an image digest", importPath)
	require.Equal(t, reg.host, digest.RegistryStr(), "%s was not pushed to the in-process registry", ref)
	require.True(t, strings.HasPrefix(digest.RepositoryStr(), repo+"/"), "%s is not below KO_DOCKER_REPO", ref)

	// The manifest by digest: the registry has it.
	desc, err := remote.Get(digest)
	require.NoError(t, err, "the registry does not serve %s", ref)
	require.Equal(t, digest.DigestStr(), desc.Digest.String())

	want := map[string]bool{}
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		require.NoError(t, err)
		want[platform.String()] = true
	}
	var sizes []string
	switch {
	case desc.MediaType.IsIndex():
		require.Greater(t, len(platforms), 1, "%s: an index for one platform", ref)
		idx, err := desc.ImageIndex()
		require.NoError(t, err)
		manifest, err := idx.IndexManifest()
		require.NoError(t, err)
		got := map[string]bool{}
		for _, child := range manifest.Manifests {
			require.NotNil(t, child.Platform, "%s: index entry %s names no platform", ref, child.Digest)
			platform := child.Platform.String()
			require.True(t, want[platform], "%s: platform %s is not in ko.yaml's %v", ref, platform, platforms)
			got[platform] = true
			// Each platform's manifest by digest: the registry has it too.
			childDesc, err := remote.Get(digest.Context().Digest(child.Digest.String()))
			require.NoError(t, err, "the registry does not serve %s's %s image %s", ref, platform, child.Digest)
			img, err := childDesc.Image()
			require.NoError(t, err)
			sizes = append(sizes, platform+" "+checkPlatformImage(t, reg, base, img, digest.RepositoryStr(), importPath, platform))
		}
		require.Equal(t, want, got, "%s: platforms", ref)
	case desc.MediaType.IsImage():
		require.Len(t, platforms, 1, "%s: one image for %d platforms", ref, len(platforms))
		img, err := desc.Image()
		require.NoError(t, err)
		sizes = append(sizes, platforms[0]+" "+checkPlatformImage(t, reg, base, img, digest.RepositoryStr(), importPath, platforms[0]))
	default:
		t.Fatalf("%s: media type %s is neither an image nor an index", ref, desc.MediaType)
	}
	return strings.Join(sizes, ", ")
}

// checkPlatformImage checks one platform's image: built on the base, its entrypoint the binary
// of the import path, built by Go for that platform as ko.yaml asks; and that the registry
// serves every layer. It returns the compressed layer sizes.
func checkPlatformImage(t *testing.T, reg *testRegistry, base baseImage, img v1.Image, repository, importPath, platform string) string {
	t.Helper()
	p, err := v1.ParsePlatform(platform)
	require.NoError(t, err)
	manifest, err := img.Manifest()
	require.NoError(t, err)
	require.Equal(t, base.ref, manifest.Annotations[annotationBaseName], "%s %s: base image", importPath, platform)
	require.Equal(t, base.digests[p.String()], manifest.Annotations[annotationBaseDigest], "%s %s: base image digest", importPath, platform)

	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, p.OS, cfg.OS)
	require.Equal(t, p.Architecture, cfg.Architecture)
	require.Equal(t, baseimage.User, cfg.Config.User, "%s %s: the base's nonroot user", importPath, platform)
	entrypoint := "/ko-app/" + path.Base(importPath)
	require.Equal(t, []string{entrypoint}, cfg.Config.Entrypoint, "%s %s: entrypoint", importPath, platform)

	var total int64
	for _, layer := range manifest.Layers {
		size := reg.blobSize(t, repository, layer.Digest)
		require.Equal(t, layer.Size, size, "%s %s: layer %s", importPath, platform, layer.Digest)
		total += size
	}
	require.NotZero(t, total, "%s %s: no layers", importPath, platform)

	binary := extract(t, img, entrypoint)
	require.NotNil(t, binary, "%s %s: the image has no %s", importPath, platform, entrypoint)
	f, err := elf.NewFile(bytes.NewReader(binary))
	require.NoError(t, err, "%s %s: %s is no ELF binary", importPath, platform, entrypoint)
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	require.NotZero(t, machine, "no ELF machine known for %s", p.Architecture)
	require.Equal(t, machine, f.Machine, "%s %s: ELF machine", importPath, platform)
	info, err := buildinfo.Read(bytes.NewReader(binary))
	require.NoError(t, err, "%s %s: %s carries no Go build information", importPath, platform, entrypoint)
	require.Equal(t, importPath, info.Path, "%s %s: the binary is another package", importPath, platform)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	require.Equal(t, p.OS, settings["GOOS"])
	require.Equal(t, p.Architecture, settings["GOARCH"])
	require.Equal(t, "0", settings["CGO_ENABLED"], "%s %s: ko.yaml's defaultEnv CGO_ENABLED=0", importPath, platform)
	require.Equal(t, "true", settings["-trimpath"], "%s %s: ko.yaml's defaultFlags -trimpath", importPath, platform)
	// Go records no -ldflags in the build information of a -trimpath build: the sections tell.
	for _, section := range []string{".symtab", ".debug_info"} {
		require.Nil(t, f.Section(section), "%s %s: %s present, ko.yaml's defaultLdflags -s -w strip it", importPath, platform, section)
	}
	return fmt.Sprintf("%d layers %.1f MiB", len(manifest.Layers), float64(total)/(1<<20))
}

// extract returns the content of file (absolute) in the image's flattened filesystem, or nil.
func extract(t *testing.T, img v1.Image, file string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		require.NoError(t, err)
		if "/"+strings.TrimPrefix(path.Clean("/"+hdr.Name), "/") != file || hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		return data
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
