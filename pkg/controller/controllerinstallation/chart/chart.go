// Package chart pulls Helm charts from OCI registries, as gardenlet does for ControllerDeployments
// (Gardener's pkg/utils/oci): the reference is resolved to a digest, and archives are cached by
// digest reference, so each chart version is pulled once per function instance.
package chart

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// MediaTypeHelm is the media type of a Helm chart's layer in an OCI artifact.
const MediaTypeHelm = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// URL is the reference an OCIRepository names, as Gardener reads it: ref wins, then
// repository@digest (the tag is ignored when a digest is set), then repository:tag; a leading
// oci:// is dropped.
func URL(oci *gardencorev1beta1.OCIRepository) string {
	var ref string
	switch {
	case oci.Ref != nil:
		ref = *oci.Ref
	case oci.Repository != nil && oci.Digest != nil:
		ref = *oci.Repository + "@" + *oci.Digest
	case oci.Repository != nil && oci.Tag != nil:
		ref = *oci.Repository + ":" + *oci.Tag
	}
	return strings.TrimPrefix(ref, "oci://")
}

// Pulled is a chart archive and the digest reference it was pulled by.
type Pulled struct {
	Archive []byte
	// Digest is the artifact's manifest digest ("sha256:…"): what identifies the chart version.
	Digest string
}

// Puller pulls charts; it is safe for concurrent use.
type Puller struct {
	cache   *cache
	options []remote.Option
}

// NewPuller returns a puller whose cache holds at most cacheBytes of archives.
func NewPuller(cacheBytes int, options ...remote.Option) *Puller {
	return &Puller{cache: newCache(cacheBytes), options: options}
}

// Cached is how many archives the cache holds.
func (p *Puller) Cached() int { return p.cache.len() }

// Credentials returns the pull secret's .dockerconfigjson, or nil for anonymous pulls.
type Credentials func(ctx context.Context) ([]byte, error)

// Pull returns the chart oci names. A reference by digest that is cached is answered without a
// request, and without asking for the credentials; a tag costs one HEAD of the manifest
// (Gardener's: it resolves the tag every time, so that a moved tag is noticed); only an archive
// not yet cached is downloaded.
func (p *Puller) Pull(ctx context.Context, oci *gardencorev1beta1.OCIRepository, credentials Credentials) (Pulled, error) {
	url := URL(oci)
	if url == "" {
		return Pulled{}, errors.New("the OCI repository names neither a ref nor a repository with a tag or digest")
	}
	ref, err := name.ParseReference(url, name.StrictValidation)
	if err != nil {
		return Pulled{}, fmt.Errorf("invalid OCI reference %q: %w", url, err)
	}
	digest, byDigest := ref.(name.Digest)
	if byDigest {
		if archive, ok := p.cache.get(digest.Name()); ok {
			return Pulled{Archive: archive, Digest: digest.DigestStr()}, nil
		}
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, p.options...)
	dockerConfigJSON, err := credentials(ctx)
	if err != nil {
		return Pulled{}, err
	}
	if dockerConfigJSON != nil {
		chain, err := keychainFor(dockerConfigJSON)
		if err != nil {
			return Pulled{}, err
		}
		opts = append(opts, remote.WithAuthFromKeychain(chain))
	}
	if !byDigest {
		desc, err := remote.Head(ref, opts...)
		if err != nil {
			return Pulled{}, fmt.Errorf("failed to resolve %s to a digest: %w", ref, err)
		}
		digest = ref.Context().Digest(desc.Digest.String())
	}
	if archive, ok := p.cache.get(digest.Name()); ok {
		return Pulled{Archive: archive, Digest: digest.DigestStr()}, nil
	}

	img, err := remote.Image(digest, opts...)
	if err != nil {
		return Pulled{}, fmt.Errorf("failed to pull artifact %s: %w", digest, err)
	}
	archive, err := helmLayer(img)
	if err != nil {
		return Pulled{}, fmt.Errorf("artifact %s: %w", digest, err)
	}
	p.cache.add(digest.Name(), archive)
	return Pulled{Archive: archive, Digest: digest.DigestStr()}, nil
}

func helmLayer(img gcrv1.Image) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("failed to parse layers: %w", err)
	}
	for _, l := range layers {
		mt, err := l.MediaType()
		if err != nil {
			return nil, err
		}
		if string(mt) != MediaTypeHelm {
			continue
		}
		blob, err := l.Compressed()
		if err != nil {
			return nil, fmt.Errorf("failed to extract the helm layer: %w", err)
		}
		defer blob.Close()
		return io.ReadAll(blob)
	}
	return nil, errors.New("no helm layer found in artifact")
}

// dockerConfig is the content of a kubernetes.io/dockerconfigjson Secret.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// keychain answers with the credentials of the pull secret's entry for the repository, else for
// its registry, else anonymously: the lookup Docker and Gardener's keychain do.
type keychain struct{ auths map[string]dockerAuth }

func keychainFor(dockerConfigJSON []byte) (authn.Keychain, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(dockerConfigJSON, &cfg); err != nil {
		return nil, fmt.Errorf("the pull secret's docker configuration is invalid: %w", err)
	}
	auths := map[string]dockerAuth{}
	for server, auth := range cfg.Auths {
		server = strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
		auths[strings.TrimSuffix(server, "/")] = auth
	}
	return keychain{auths: auths}, nil
}

func (k keychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	for _, key := range []string{target.String(), target.RegistryStr()} {
		if key == name.DefaultRegistry {
			key = "https://index.docker.io/v1/"
		}
		a, ok := k.auths[key]
		if !ok {
			continue
		}
		if a.Auth != "" && a.Username == "" {
			decoded, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("the pull secret's auth for %s is not base64: %w", key, err)
			}
			a.Username, a.Password, _ = strings.Cut(string(decoded), ":")
		}
		return authn.FromConfig(authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}), nil
	}
	return authn.Anonymous, nil
}
