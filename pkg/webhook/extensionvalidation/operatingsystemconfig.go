package extensionvalidation

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var (
	purposes = []string{
		string(extensionsv1alpha1.OperatingSystemConfigPurposeProvision),
		string(extensionsv1alpha1.OperatingSystemConfigPurposeReconcile),
	}
	cgroupDrivers        = []string{string(extensionsv1alpha1.CgroupDriverCgroupfs), string(extensionsv1alpha1.CgroupDriverSystemd)}
	registryCapabilities = []string{
		string(extensionsv1alpha1.PushCapability), string(extensionsv1alpha1.PullCapability), string(extensionsv1alpha1.ResolveCapability),
	}
	pluginOperations = []string{string(extensionsv1alpha1.AddPluginPathOperation), string(extensionsv1alpha1.RemovePluginPathOperation)}
	fileEncodings    = []string{string(extensionsv1alpha1.PlainFileCodecID), string(extensionsv1alpha1.B64FileCodecID)}
)

var operatingSystemConfigs = rules[extensionsv1alpha1.OperatingSystemConfig, *extensionsv1alpha1.OperatingSystemConfig]{
	kind:       extensionsKind("OperatingSystemConfig"),
	noun:       "operatingsystemconfig",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.OperatingSystemConfig) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.OperatingSystemConfig) field.ErrorList {
		// Units may depend on the files of the spec and on those the extension added.
		files := sets.New[string]()
		for _, f := range append(o.Spec.Files, o.Status.ExtensionFiles...) {
			files.Insert(f.Path)
		}
		spec := &o.Spec
		var errs field.ErrorList
		if spec.Purpose == "" {
			errs = append(errs, field.Required(specPath.Child("purpose"), "field is required"))
		} else if !contains(purposes, spec.Purpose) {
			errs = append(errs, field.NotSupported(specPath.Child("purpose"), spec.Purpose, purposes))
		}
		statusPath := field.NewPath("status")
		return concat(errs,
			criConfig(spec.CRIConfig, spec.Purpose, specPath.Child("criConfig")),
			units(spec.Units, files, specPath.Child("units")),
			oscFiles(spec.Files, specPath.Child("files")),
			units(o.Status.ExtensionUnits, files, statusPath.Child("extensionUnits")),
			oscFiles(o.Status.ExtensionFiles, statusPath.Child("extensionFiles")),
			duplicateFiles(o),
		)
	},
	immutable: func(n, o *extensionsv1alpha1.OperatingSystemConfig) field.ErrorList {
		return concat(
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("purpose"), n.Spec.Purpose, o.Spec.Purpose),
		)
	},
}

func contains[S ~string](allowed []string, value S) bool {
	return slices.Contains(allowed, string(value))
}

func criConfig(cri *extensionsv1alpha1.CRIConfig, purpose extensionsv1alpha1.OperatingSystemConfigPurpose, path *field.Path) field.ErrorList {
	if cri == nil {
		return nil
	}
	var errs field.ErrorList
	if cri.CgroupDriver != nil && !contains(cgroupDrivers, *cri.CgroupDriver) {
		errs = append(errs, field.NotSupported(path.Child("cgroupDriver"), *cri.CgroupDriver, cgroupDrivers))
	}
	return append(errs, containerd(cri.Containerd, purpose, path.Child("containerd"))...)
}

func containerd(c *extensionsv1alpha1.ContainerdConfig, purpose extensionsv1alpha1.OperatingSystemConfigPurpose, path *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	if purpose == extensionsv1alpha1.OperatingSystemConfigPurposeProvision {
		return field.ErrorList{field.Forbidden(path, "containerd config is not allowed for OperatingSystemConfig with purpose 'provision'")}
	}
	return concat(
		required(path.Child("sandboxImage"), c.SandboxImage),
		registries(c.Registries, path.Child("registries")),
		plugins(c.Plugins, path.Child("plugins")),
	)
}

const urlForm = "; desired format: https://host[:port]"

func registries(registries []extensionsv1alpha1.RegistryConfig, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	upstreams := sets.New[string]()
	for i, r := range registries {
		p := path.Index(i)
		if upstreams.Has(r.Upstream) {
			errs = append(errs, field.Duplicate(p.Child("upstream"), r.Upstream))
		}
		upstreams.Insert(r.Upstream)
		// _default configures every registry without a configuration of its own.
		if r.Upstream != "_default" {
			for _, msg := range hostPort(r.Upstream) {
				errs = append(errs, field.Invalid(p.Child("upstream"), r.Upstream, msg))
			}
		}
		if r.Server != nil {
			server := p.Child("server")
			if u, err := url.Parse(*r.Server); err != nil {
				errs = append(errs, field.Required(server, "url must be a valid URL: "+err.Error()+urlForm))
			} else {
				if u.Scheme != "http" && u.Scheme != "https" {
					errs = append(errs, field.NotSupported(server, u.Scheme, []string{"http", "https"}))
				}
				if u.Host == "" {
					errs = append(errs, field.Invalid(server, u.Host, "host must be provided"+urlForm))
				}
			}
		}
		for j, host := range r.Hosts {
			h := p.Child("hosts").Index(j)
			if u, err := url.Parse(host.URL); err != nil {
				errs = append(errs, field.Required(h.Child("url"), "url must be a valid URL: "+err.Error()+urlForm))
			} else if u.Host == "" {
				errs = append(errs, field.Invalid(h.Child("url"), u.Host, "host must be provided"+urlForm))
			}
			for k, capability := range host.Capabilities {
				if !contains(registryCapabilities, capability) {
					errs = append(errs, field.NotSupported(h.Child("capabilities").Index(k), capability, registryCapabilities))
				}
			}
		}
	}
	return errs
}

var (
	digits    = regexp.MustCompile(`^\d+$`)
	validPort = regexp.MustCompile(`^([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$`)
)

// hostPort checks an upstream of the form <host>[:<port>].
func hostPort(value string) []string {
	var msgs []string
	host := value
	if i := strings.LastIndexByte(value, ':'); i != -1 && digits.MatchString(value[i+1:]) {
		host = value[:i]
		if port := value[i+1:]; !validPort.MatchString(port) {
			msgs = append(msgs, fmt.Sprintf("port '%s' is not valid, valid port must be in the range [1, 65535]", port))
		}
	}
	return append(msgs, validation.IsDNS1123Subdomain(host)...)
}

func plugins(plugins []extensionsv1alpha1.PluginConfig, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, p := range plugins {
		pp := path.Index(i)
		if p.Op != nil && !contains(pluginOperations, *p.Op) {
			errs = append(errs, field.NotSupported(pp.Child("op"), *p.Op, pluginOperations))
		}
		if len(p.Path) == 0 {
			errs = append(errs, field.Required(pp.Child("path"), "must provide a path"))
		}
		if p.Values == nil || len(p.Values.Raw) == 0 {
			continue
		}
		values := pp.Child("values")
		if ptr.Deref(p.Op, extensionsv1alpha1.AddPluginPathOperation) == extensionsv1alpha1.RemovePluginPathOperation {
			errs = append(errs, field.Forbidden(values, "values must not be specified when 'remove' operation is used"))
		} else if err := json.Unmarshal(p.Values.Raw, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(values, string(p.Values.Raw), "provided values must be given in json format"))
		}
	}
	return errs
}

func units(units []extensionsv1alpha1.Unit, files sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, unit := range units {
		p := path.Index(i)
		errs = append(errs, required(p.Child("name"), unit.Name)...)
		for j, dropIn := range unit.DropIns {
			d := p.Child("dropIns").Index(j)
			errs = append(errs, required(d.Child("name"), dropIn.Name)...)
			errs = append(errs, required(d.Child("content"), dropIn.Content)...)
		}
		for j, filePath := range unit.FilePaths {
			if !files.Has(filePath) {
				errs = append(errs, field.Invalid(p.Child("filePaths").Index(j), filePath, "'filePath' requires a matching 'path' in 'spec.files'"))
			}
		}
	}
	return errs
}

func oscFiles(files []extensionsv1alpha1.File, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, file := range files {
		p := path.Index(i)
		errs = append(errs, required(p.Child("path"), file.Path)...)
		errs = append(errs, fileContent(file.Content, p.Child("content"))...)
		if file.HostName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*file.HostName, false) {
				errs = append(errs, field.Invalid(p.Child("hostName"), *file.HostName, msg))
			}
		}
	}
	return errs
}

// fileContent checks that a file's content comes from exactly one source, and that source.
func fileContent(content extensionsv1alpha1.FileContent, path *field.Path) field.ErrorList {
	sources := 0
	for _, set := range []bool{content.SecretRef != nil, content.Inline != nil, content.ImageRef != nil} {
		if set {
			sources++
		}
	}
	switch {
	case sources == 0:
		return field.ErrorList{field.Required(path, "either 'secretRef', 'inline' or 'imageRef' must be provided")}
	case sources > 1:
		return field.ErrorList{field.Invalid(path, content, "either 'secretRef', 'inline' or 'imageRef' must be provided, not multiple at the same time")}
	case content.SecretRef != nil:
		return concat(
			required(path.Child("secretRef", "name"), content.SecretRef.Name),
			required(path.Child("secretRef", "dataKey"), content.SecretRef.DataKey),
		)
	case content.Inline != nil:
		var errs field.ErrorList
		if !contains(fileEncodings, content.Inline.Encoding) {
			errs = append(errs, field.NotSupported(path.Child("inline", "encoding"), content.Inline.Encoding, fileEncodings))
		}
		return append(errs, required(path.Child("inline", "data"), content.Inline.Data)...)
	default:
		return concat(
			required(path.Child("imageRef", "image"), content.ImageRef.Image),
			required(path.Child("imageRef", "filePathInImage"), content.ImageRef.FilePathInImage),
		)
	}
}

// duplicateFiles refuses two files at one path, of the spec's and the extension's files
// together, unless every one of them is for a different host.
func duplicateFiles(o *extensionsv1alpha1.OperatingSystemConfig) field.ErrorList {
	type scope struct {
		global bool
		hosts  sets.Set[string]
	}
	seen := map[string]*scope{}
	var errs field.ErrorList
	check := func(files []extensionsv1alpha1.File, path *field.Path) {
		for i, file := range files {
			if file.Path == "" {
				continue
			}
			s, ok := seen[file.Path]
			if !ok {
				s = &scope{global: file.HostName == nil, hosts: sets.New[string]()}
				seen[file.Path] = s
			}
			if ok && (file.HostName == nil || s.global || s.hosts.Has(*file.HostName)) {
				errs = append(errs, field.Duplicate(path.Index(i).Child("path"), file.Path))
				continue
			}
			if file.HostName != nil {
				s.hosts.Insert(*file.HostName)
			}
		}
	}
	check(o.Spec.Files, specPath.Child("files"))
	check(o.Status.ExtensionFiles, field.NewPath("status", "extensionFiles"))
	return errs
}
