// Command leastprivilege compares what each function's ServiceAccount did in the test suites
// with what its RBAC grants. It reads the kube-apiserver audit logs the suites' control planes
// wrote (testenv, AUDIT_LOG_DIR; `make test` sets it), takes every request made as a function
// (functiontest.AsFunction impersonates the function's ServiceAccount with exactly the RBAC
// config/ grants it) and derives the tuples it used: verb, API group, resource, subresource and
// namespace. Suites whose admission plugins authorize on a request's behalf also write an
// authorization log (testenv.Options.AuthorizationLog): each check made of a ServiceAccount
// there counts as a use too (a check RBAC refused covers no grant; its request failed and
// the audit log has it as forbidden). The webhook servers are checked alike: each Service of config/ that serves webhooks
// (WEBHOOKS), as its ServiceAccount with the RBAC of its manifest, written there by hand
// (testenv.ManifestClient serves the webhook suites so). It prints a table per function and
// webhook server and fails on a permission used but not granted (a request that was forbidden),
// on a permission granted but never used, and on a LIST or watch of a kind a function's Scopes
// narrow that does not select by the scope's field (as Gardener's SeedAuthorizer would refuse
// it).
//
// Grants are compared as Kubernetes' RBAC matches them: a rule's API groups × resources (with
// their subresources) × verbs, in every namespace for the function's ClusterRole, in one for a
// Role of its NamespacedRBAC. resourceNames narrow no further here: a grant is used when a
// request of its verb reached its resource.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// event is what the check reads of an audit event (audit.k8s.io/v1 Event).
type event struct {
	Stage            string `json:"stage"`
	Verb             string `json:"verb"`
	RequestURI       string `json:"requestURI"`
	UserAgent        string `json:"userAgent"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// permission is one verb on one resource (with its subresource) of one group; Namespace is set
// for a Role's grant and for a request in a namespace.
type permission struct {
	Verb, Group, Resource, Namespace string
}

func (p permission) String() string {
	group := p.Group
	if group == "" {
		group = "core"
	}
	s := fmt.Sprintf("%s %s/%s", p.Verb, group, p.Resource)
	if p.Namespace != "" {
		s += " in " + p.Namespace
	}
	return s
}

// usage is what one function did.
type usage struct {
	used   map[permission]int
	denied map[permission]int
	// unscoped counts the LISTs and watches of a kind the function's Scopes narrow that did not
	// select by the scope's field, by "<resource> without <field>".
	unscoped map[string]int
}

func main() {
	dir := flag.String("dir", os.Getenv("AUDIT_LOG_DIR"), "the directory of the audit logs (AUDIT_LOG_DIR)")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if dir == "" {
		return errors.New("no audit log directory: -dir or AUDIT_LOG_DIR")
	}
	usages, events, err := read(dir)
	if err != nil {
		return err
	}
	checks, err := readAuthorizationLogs(dir, usages)
	if err != nil {
		return err
	}
	fmt.Printf("least privilege: %d requests as functions in the audit logs of %s, %d authorization checks in its authorization logs\n", events, dir, checks)
	table := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "function or webhook server\tgrants\tused\tunused\tdenied\t")
	var problems []string
	servers, err := webhookServers(configDir)
	if err != nil {
		return err
	}
	for _, fn := range functions.All {
		servers = append(servers, server{name: fn.Name, user: configgen.ServiceAccountName(fn), grants: grantsOf(fn)})
	}
	for _, sv := range servers {
		u := usageOf(usages, sv.user)
		var unused []permission
		for _, g := range sv.grants {
			if !slices.ContainsFunc(keys(u.used), g.covers) {
				unused = append(unused, g)
			}
		}
		fmt.Fprintf(table, "%s\t%d\t%d\t%d\t%d\t\n", sv.name, len(sv.grants), len(u.used), len(unused), len(u.denied))
		for _, p := range unused {
			problems = append(problems, fmt.Sprintf("%s: granted but never used: %s", sv.name, p))
		}
		for _, p := range sorted(keys(u.denied)) {
			problems = append(problems, fmt.Sprintf("%s: used but not granted (forbidden %d times): %s", sv.name, u.denied[p], p))
		}
		for _, what := range slices.Sorted(maps.Keys(u.unscoped)) {
			problems = append(problems, fmt.Sprintf("%s: listed or watched out of its scope (%d times): %s", sv.name, u.unscoped[what], what))
		}
	}
	if err := table.Flush(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("least privilege: %d problems:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

// read collects every function's requests from the audit logs in dir.
func read(dir string) (map[string]*usage, int, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "audit-*.log"))
	if err != nil {
		return nil, 0, err
	}
	if len(logs) == 0 {
		return nil, 0, fmt.Errorf("no audit logs in %s: run the suites with %s set", dir, "AUDIT_LOG_DIR")
	}
	usages := map[string]*usage{}
	events := 0
	scopes := map[string][]function.Scope{}
	for _, fn := range functions.All {
		scopes[configgen.ServiceAccountName(fn)] = fn.Scopes
	}
	err = eachLine(logs, func(line []byte) error {
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		// Only the function's own requests: a test may probe, as the same user, that the
		// function is refused something (with its own user agent).
		if e.Stage != "ResponseComplete" || e.UserAgent != testenv.FunctionUserAgent || e.ImpersonatedUser == nil || e.ObjectRef == nil || e.ResponseStatus == nil {
			return nil
		}
		user := e.ImpersonatedUser.Username
		if !strings.HasPrefix(user, "system:serviceaccount:") {
			return nil
		}
		events++
		u := usageOf(usages, user)
		p := permission{Verb: e.Verb, Group: e.ObjectRef.APIGroup, Resource: resourceOf(e.ObjectRef.Resource, e.ObjectRef.Subresource), Namespace: e.ObjectRef.Namespace}
		if e.ResponseStatus.Code == 403 {
			u.denied[p]++
			return nil
		}
		u.used[p]++
		if e.Verb == "list" || e.Verb == "watch" {
			for _, sc := range scopes[user] {
				if sc.Kind.Group == e.ObjectRef.APIGroup && sc.Kind.Resource == e.ObjectRef.Resource && !selectsBy(e.RequestURI, sc.Field) {
					u.unscoped[sc.Kind.Resource+" without "+sc.Field]++
				}
			}
		}
		// RBAC's checks that are no requests of their own: binding a role needs bind on it,
		// writing a role needs escalate on it (for rules the writer does not hold), approving
		// a CSR needs approve on its signer.
		for _, implied := range implicit(p) {
			u.used[implied]++
		}
		return nil
	})
	return usages, events, err
}

// readAuthorizationLogs adds the checks of the authorization logs in dir to usages and returns
// how many it read.
func readAuthorizationLogs(dir string, usages map[string]*usage) (int, error) {
	logs, err := filepath.Glob(filepath.Join(dir, testenv.AuthorizationLogPrefix+"*.log"))
	if err != nil {
		return 0, err
	}
	checks := 0
	err = eachLine(logs, func(line []byte) error {
		var check authorizationv1.SubjectAccessReviewSpec
		if err := json.Unmarshal(line, &check); err != nil {
			return err
		}
		attrs := check.ResourceAttributes
		if attrs == nil || !strings.HasPrefix(check.User, "system:serviceaccount:") {
			return nil
		}
		checks++
		usageOf(usages, check.User).used[permission{Verb: attrs.Verb, Group: attrs.Group, Resource: resourceOf(attrs.Resource, attrs.Subresource), Namespace: attrs.Namespace}]++
		return nil
	})
	return checks, err
}

// eachLine calls do with every line of the files, in order; an error names its file.
func eachLine(files []string, do func(line []byte) error) error {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		scanner := bufio.NewScanner(f)
		scanner.Buffer(make([]byte, 1<<20), 16<<20)
		for scanner.Scan() && err == nil {
			err = do(scanner.Bytes())
		}
		if err == nil {
			err = scanner.Err()
		}
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// selectsBy says whether a request's URI selects by field with an equality, as a function's
// Scope does (its value is each test's own, so only the field is checked).
func selectsBy(requestURI, field string) bool {
	u, err := url.Parse(requestURI)
	if err != nil {
		return false
	}
	sel, err := fields.ParseSelector(u.Query().Get("fieldSelector"))
	if err != nil {
		return false
	}
	for _, r := range sel.Requirements() {
		if r.Field == field && (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) {
			return true
		}
	}
	return false
}

// resourceOf is a resource as RBAC names it, with its subresource: "seeds/finalizers".
func resourceOf(resource, subresource string) string {
	if subresource == "" {
		return resource
	}
	return resource + "/" + subresource
}

// usageOf is user's usage in usages, added when it has none yet.
func usageOf(usages map[string]*usage, user string) *usage {
	u := usages[user]
	if u == nil {
		u = &usage{used: map[permission]int{}, denied: map[permission]int{}, unscoped: map[string]int{}}
		usages[user] = u
	}
	return u
}

// implicit are the permissions RBAC checks when it authorizes p, beyond p itself.
func implicit(p permission) []permission {
	writes := p.Verb == "create" || p.Verb == "update" || p.Verb == "patch"
	switch {
	case writes && p.Group == rbacv1.GroupName && (p.Resource == "clusterrolebindings" || p.Resource == "rolebindings"):
		return []permission{
			{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Namespace: p.Namespace},
			{Verb: "bind", Group: rbacv1.GroupName, Resource: "roles", Namespace: p.Namespace},
		}
	case writes && p.Group == rbacv1.GroupName && (p.Resource == "clusterroles" || p.Resource == "roles"):
		return []permission{{Verb: "escalate", Group: rbacv1.GroupName, Resource: p.Resource, Namespace: p.Namespace}}
	case p.Group == "certificates.k8s.io" && p.Resource == "certificatesigningrequests/approval" && writes:
		return []permission{{Verb: "approve", Group: "certificates.k8s.io", Resource: "signers"}}
	}
	return nil
}

// server is a ServiceAccount whose use is checked against its grants: a function's, or a
// webhook server's.
type server struct {
	name, user string
	grants     []permission
}

// configDir is config/, where the webhook servers' manifests are (the check runs from the
// repository's root, as `make test` runs it).
const configDir = "config"

// webhookServers are the ServiceAccounts of the Services that serve webhooks in config/, each
// with the rules of every ClusterRole (in every namespace: the tenant-access role is bound per
// enrolled namespace by the operator) and Role (in its namespace) of its manifest.
func webhookServers(dir string) ([]server, error) {
	manifests, err := testenv.WebhookManifests(dir)
	if err != nil {
		return nil, err
	}
	files := slices.Sorted(maps.Values(manifests))
	var servers []server
	for _, file := range slices.Compact(files) {
		objects, err := testenv.ManifestRBAC(file)
		if err != nil {
			return nil, err
		}
		user, err := testenv.ServiceAccountUser(objects)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var grants []permission
		for _, obj := range objects {
			switch role := obj.(type) {
			case *rbacv1.ClusterRole:
				grants = append(grants, expand(role.Rules, "")...)
			case *rbacv1.Role:
				grants = append(grants, expand(role.Rules, role.Namespace)...)
			}
		}
		servers = append(servers, server{name: user[strings.LastIndex(user, ":")+1:], user: user, grants: grants})
	}
	return servers, nil
}

// grantsOf expands the function's rules into single permissions, as the suites serve it: in its
// home part's namespace (functiontest.AsFunction), its TenantRBAC in the tenants'. A function that works on the garden is served
// with its TargetRBAC too where one cluster is its garden and where it runs (seed mode), but for
// a rule of every verb: what may be anything (gardenlet installing whatever a chart holds) is no
// least privilege to check, and the suites serve that Target as its administrator.
func grantsOf(fn *function.Function) []permission {
	grants := expand(fn.RBACIn(fn.HomePart()), "")
	for ns, rules := range fn.NamespacedRBAC {
		grants = append(grants, expand(rules, function.NamespaceOf(ns, fn.HomePart()))...)
	}
	// Its TenantRBAC is bound in every enrolled tenant's namespace (and cluster-wide where a suite
	// serves it one target): a grant of any namespace here, whose confinement to the enrolled
	// tenants test/config's TestSecretsOnlyInEnrolledTenants checks.
	grants = append(grants, expand(fn.TenantRBAC, "")...)
	for _, r := range fn.TargetRBAC {
		if !slices.Contains(r.Verbs, rbacv1.VerbAll) {
			grants = append(grants, expand([]rbacv1.PolicyRule{r}, "")...)
		}
	}
	for ns, rules := range fn.NamespacedTargetRBAC {
		grants = append(grants, expand(rules, function.NamespaceOf(ns, fn.HomePart()))...)
	}
	return grants
}

// expand expands rules into single permissions, in namespace ("" for every namespace).
func expand(rules []rbacv1.PolicyRule, namespace string) []permission {
	var grants []permission
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					grants = append(grants, permission{Verb: v, Group: g, Resource: res, Namespace: namespace})
				}
			}
		}
	}
	return grants
}

// covers says whether the grant g allows the request p; a grant of the resource "*" allows
// every resource of its group, subresources included, as RBAC matches it.
func (g permission) covers(p permission) bool {
	return g.Verb == p.Verb && g.Group == p.Group && (g.Resource == p.Resource || g.Resource == "*") && (g.Namespace == "" || g.Namespace == p.Namespace)
}

func keys(m map[permission]int) []permission {
	out := make([]permission, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	return out
}

func sorted(ps []permission) []permission {
	sort.Slice(ps, func(i, j int) bool { return ps[i].String() < ps[j].String() })
	return ps
}
