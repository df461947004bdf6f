#!/usr/bin/env python3
"""Our cold starts against Knative's floor, on the cluster of hack/cluster.sh (KEEP_CLUSTER=1 make
e2e-cluster, or make cluster-up cluster-deploy):

    eval "$(hack/cluster.sh env)"; hack/cluster-floor.py [--runs 10] [--wave 25] [--wave-runs 3] [--no-warmup]

The floor is the least a Knative Service can be (hack/floor: an HTTP server answering 200), built
by ko on our images' base and deployed with our Services' Knative settings (a copy of the project
function's Service with the floor's image, no settings and the namespace's default
ServiceAccount). Ours are copies of the deployed Services under other names (cs-<name>), so that
no PingSource or Trigger wakes them and each run starts from no pod at all (the cluster's
autoscaler scales to zero 6 s after the last request, hack/cluster.sh). Every request goes the way
the Broker's and the kube-apiserver's do: the ingress's private entry, Knative's activator, the
new pod.

- events: a CloudEvent the project function reconciles (a Project's deletion: it reads the
  Project and finds it gone), against a request to the floor and to the floor mounting one Secret
  (as each of ours mounts one at least), one after the other, the order rotating, --runs times,
  each round opened by a floor's wake that is not counted (--warmup, on by default: the first cold
  start after the node idled was slow whichever Service it woke);
- admission: an AdmissionReview of a protected CRD's deletion without confirmation to grm-webhooks
  (refused), against the two floors, the same way;
- a wave: --wave of our functions (each a deletion event of the first kind of the source cluster
  its Trigger takes, or its sweep's ping when it takes none) woken at once, against as many floors
  at once, --wave-runs times.

For every cold request it reads the new pod's CRI logs: when its process first wrote, when it
served, when queue-proxy started; and prints medians, p95 and the ratio ours / floor
(docs/cluster.md, "Against Knative's floor"). Deletes what it created at the end.
"""
import argparse
import concurrent.futures
import datetime
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

# The namespaces of config/'s parts (function.Part.Namespace): the seed's, then the runtime's.
NAMESPACES = ["gardener-knative", "gardener-knative-runtime"]
CLUSTER_DIR = os.environ.get("CLUSTER_DIR", "/var/tmp/gardener-knative-cluster")
INGRESS = os.environ.get("CLUSTER_INGRESS", "")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = "cs-"


def kubectl(*args, **kw):
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, **kw)


def get_json(*args):
    return json.loads(kubectl("get", "-o", "json", *args, check=True).stdout)


NS_OF = {}  # Knative Service name -> namespace: the seed part's where both parts have one


def ns_of(service):
    """The namespace of one of our Knative Services (or a copy, which lives beside its source, with
    its ServiceAccount)."""
    if not NS_OF:
        for ns in reversed(NAMESPACES):
            for s in get_json("ksvc", "-n", ns)["items"]:
                NS_OF[s["metadata"]["name"]] = ns
    return NS_OF[service]


def items_of(kind, *args):
    """The objects of a kind in every part's namespace."""
    return [i for ns in NAMESPACES for i in get_json(kind, "-n", ns, *args)["items"]]


def build_floor():
    """The floor's image, built by ko into the cluster's registry on our images' base."""
    ko = subprocess.run([os.path.join(ROOT, "hack", "ko.sh")], capture_output=True, text=True, check=True).stdout.strip()
    registry = os.environ["REGISTRY"]
    env = dict(os.environ, KO_DOCKER_REPO=registry + "/coldstart", KO_DEFAULTBASEIMAGE=registry + "/base:nonroot")
    out = subprocess.run([ko, "build", "--insecure-registry", "--platform", "linux/amd64", "--base-import-paths", "./hack/floor"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("ko build of hack/floor failed:\n" + out.stderr[-3000:])
    return out.stdout.strip().splitlines()[-1]


def copy_of(service, name, floor_image=None, secret=None):
    """A deployed Knative Service under another name, at zero between requests (no min-scale);
    with floor_image, the floor in its Knative settings instead of our process, mounting the Secret
    named secret (read-only, as ours mount theirs) if one is given."""
    ns = ns_of(service)
    NS_OF[name] = ns
    src = get_json("ksvc", "-n", ns, service)
    template = src["spec"]["template"]
    annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
    annotations.pop("autoscaling.knative.dev/min-scale", None)
    template["metadata"].pop("name", None)
    spec = template["spec"]
    if floor_image:
        container = spec["containers"][0]
        for key in ("env", "envFrom", "volumeMounts"):
            container.pop(key, None)
        container["image"] = floor_image
        spec.pop("volumes", None)
        spec.pop("serviceAccountName", None)
        if secret:
            spec["volumes"] = [{"name": "mounted", "secret": {"secretName": secret}}]
            container["volumeMounts"] = [{"name": "mounted", "mountPath": "/var/run/mounted", "readOnly": True}]
    else:
        # A function logs each event it handled, with the handler's duration, at debug: when the
        # request reached the process, apart from the readiness before it.
        container = spec["containers"][0]
        container["env"] = [e for e in container.get("env", []) if e.get("name") != "LOG_LEVEL"] + [{"name": "LOG_LEVEL", "value": "debug"}]
    labels = {k: v for k, v in src["metadata"].get("labels", {}).items() if not k.startswith("serving.knative.dev/")}
    labels["app.kubernetes.io/component"] = "coldstart"
    template["metadata"].setdefault("labels", {})["app.kubernetes.io/component"] = "coldstart"
    return {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": {"template": template}}


def apply(objs):
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=True)


def wait_ready(names, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        items = items_of("ksvc", "-l", "app.kubernetes.io/component=coldstart")
        ready = {s["metadata"]["name"] for s in items
                 if any(c["type"] == "Ready" and c["status"] == "True" for c in s.get("status", {}).get("conditions", []))}
        if set(names) <= ready:
            return
        time.sleep(2)
    sys.exit("not Ready in %d s: %s" % (timeout, sorted(set(names) - ready)))


def pods_of(names):
    """Every pod (draining ones too) of the Services named, by Service."""
    items = items_of("pods", "-l", "app.kubernetes.io/component=coldstart")
    out = {}
    for p in items:
        out.setdefault(p["metadata"]["labels"].get("serving.knative.dev/service"), []).append(p)
    return {n: out.get(n, []) for n in names}


def wait_zero(names, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not any(pods_of(names).values()):
            return
        time.sleep(1)
    sys.exit("still pods after %d s: %s" % (timeout, [n for n, p in pods_of(names).items() if p]))


def away_from_ticks():
    """Waits for the quiet half of a minute: the deployed functions' sweeps tick on the minute and
    wake up to ten of them at once on the node's two CPUs, which serve, scale to zero and are gone
    about 30 s later (the first runs, started 5 s after the minute, met them: whichever side went
    first was up to 8 times slower)."""
    while not 30 <= datetime.datetime.now().second <= 42:
        time.sleep(0.5)


def post(name, request):
    """A request (path, headers, body) through the ingress's private entry, as the Broker and the
    kube-apiserver send theirs; returns (when it was sent, seconds to the answer, HTTP status)."""
    path, headers, body = request
    req = urllib.request.Request("http://%s%s" % (INGRESS, path), data=body, method="POST",
                                 headers=dict(headers, Host="%s.%s.svc.cluster.local" % (name, ns_of(name))))
    start = time.time()
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            resp.read()
            code = resp.status
    except urllib.error.HTTPError as e:
        code = e.code
    return start, time.time() - start, code


def event_request(apiversion, kind, namespaced, cluster):
    ref = {"apiVersion": apiversion, "kind": kind, "name": "coldstart-absent"}
    if namespaced:
        ref["namespace"] = "coldstart-absent"
    headers = {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": str(uuid.uuid4()),
               "ce-source": "hack/cluster-floor", "ce-type": "dev.knative.apiserver.ref.delete", "ce-cluster": cluster}
    return "/", headers, json.dumps(ref).encode()


def ping_request(data):
    headers = {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": str(uuid.uuid4()),
               "ce-source": "hack/cluster-floor", "ce-type": "dev.knative.sources.ping"}
    return "/", headers, data.encode()


# A protected CRD without the confirmation annotation: crd-deletion-protection refuses its deletion.
PROTECTED_CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": "widgets.coldstart.gardener-knative.io", "labels": {"gardener.cloud/deletion-protected": "true"}}}


def admission_request(crd):
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "operation": "DELETE", "name": crd["metadata"]["name"],
        "kind": {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"},
        "resource": {"group": "apiextensions.k8s.io", "version": "v1", "resource": "customresourcedefinitions"},
        "requestKind": {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"},
        "userInfo": {"username": "coldstart"}, "oldObject": crd}}
    return "/webhooks/validate-crd-deletion", {"Content-Type": "application/json"}, json.dumps(review).encode()


def phases(name, start):
    """When the Service's newest pod's sandbox started and had its network (containerd's log), its
    process first wrote, it served and queue-proxy started (the CRI logs), in seconds after start:
    all on the host's clock."""
    pods = sorted(pods_of([name])[name], key=lambda p: p["metadata"]["creationTimestamp"])
    if not pods:
        return {}
    pod = pods[-1]["metadata"]["name"]
    dirs = glob.glob(os.path.join(CLUSTER_DIR, "pod-logs", "%s_%s_*" % (ns_of(name), pod)))
    out = {}
    sandbox = []
    with open(os.path.join(CLUSTER_DIR, "logs", "containerd.log"), errors="replace") as f:
        for line in f:
            if "RunPodSandbox for" in line and "Name:%s," % pod in line:
                sandbox.append(epoch(re.search(r'time="([^"]+)"', line).group(1)) - start)
    if sandbox:
        out["sandbox started"] = sandbox[0]
    if len(sandbox) > 1:
        out["sandbox network ready"] = sandbox[1]
    if not dirs:
        return out
    for container in os.listdir(dirs[0]):
        path = os.path.join(dirs[0], container, "0.log")
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            lines = f.readlines()
        if not lines:
            continue
        stamp = lambda l: epoch(l.split(" ", 1)[0])
        key = "queue-proxy started" if container == "queue-proxy" else "process first output"
        out[key] = stamp(lines[0]) - start
        if container != "queue-proxy":
            serving = [l for l in lines if '"msg":"serving"' in l]
            if serving:
                out["process serving"] = stamp(serving[0]) - start
            handled = [l for l in lines if '"msg":"event handled"' in l]
            if handled:
                done = stamp(handled[0]) - start
                took = handler_seconds(handled[0])
                out["handler done"] = done
                if took is not None:
                    out["request at the process"] = done - took
    return out


def handler_seconds(line):
    """The duration an "event handled" line gives (slog's JSON: nanoseconds), in seconds."""
    try:
        record = json.loads(line.split(" ", 3)[3])
    except (IndexError, ValueError):
        return None
    took = record.get("duration")
    return took / 1e9 if isinstance(took, (int, float)) else None


def epoch(s):
    """An RFC 3339 timestamp with nanoseconds (the CRI logs'), as epoch seconds."""
    s = s.rstrip("Z")
    base, _, frac = s.partition(".")
    return datetime.datetime.fromisoformat(base).replace(tzinfo=datetime.timezone.utc).timestamp() + float("0." + (frac or "0"))


# The floor mounting one Secret (of this name, which the script creates), beside the bare floor.
MOUNTED = PREFIX + "floor-mounted"

# What the floor is sent: it answers any request alike.
FLOOR_REQUEST = ("/", {"Content-Type": "application/json"}, b"{}")


def cold(name, request):
    start, took, code = post(name, request)
    if code >= 500:
        print("  %s answered %d" % (name, code), file=sys.stderr)
    result = {"answer": took, "code": code}
    result.update(phases(name, start))
    return result


def p95(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]


# The phases of a cold request, in order.
PHASES = ["sandbox started", "sandbox network ready", "process first output", "process serving", "queue-proxy started",
          "request at the process", "handler done", "answer"]


def report(title, ours, floor, raw):
    """Prints each phase's median and p95 after the request and, since a slow step (the node's
    CNI, say) delays every later phase of its run, each step's median within the runs: where ours
    and the floor differ. Adds the runs to raw."""
    raw[title] = {"ours": ours, "floor": floor}
    print("\n%s: %d runs each" % (title, len(ours)))
    print("  %-24s %20s %20s %7s %17s" % ("seconds after the request", "ours median / p95", "floor median / p95", "ratio",
                                           "step ours / floor"))
    for i, k in enumerate(PHASES):
        a = [r[k] for r in ours if k in r]
        b = [r[k] for r in floor if k in r]
        step = lambda runs: statistics.median([r[k] - max([r[p] for p in PHASES[:i] if p in r], default=0) for r in runs if k in r])
        if a and not b:  # what only ours logs (its handler)
            print("  %-24s %9.3f / %8.3f %20s %6s %8.3f" % (k, statistics.median(a), p95(a), "", "", step(ours)))
        if not a or not b:
            continue
        print("  %-24s %9.3f / %8.3f %9.3f / %8.3f %6.2fx %8.3f / %6.3f" % (
            k, statistics.median(a), p95(a), statistics.median(b), p95(b), statistics.median(a) / statistics.median(b),
            step(ours), step(floor)))
    a, b = [r["answer"] for r in ours], [r["answer"] for r in floor]
    print("  answer max: ours %.3f, floor %.3f; p95 ratio %.2fx" % (max(a), max(b), p95(a) / p95(b)))
    sys.stdout.flush()


# A floor woken first in every round when --warmup is on, and not counted: the first cold start
# after the node idled was the slowest of its round whichever Service it woke (12 of the 14 answers
# over 1.2 s on 2026-12-06 were a round's first), so with the order rotating each side's tail was
# the rounds it went first in, not its own.
WARMUP = PREFIX + "floor-warmup"


def rounds(sides, runs, warmups=None):
    """Wakes each side (a Service's name and its request) from zero, one after the other, runs
    times, the order rotating by one each run; returns each side's runs. With warmups (a list the
    warm-up's runs go to), the warm-up floor is woken first in each round."""
    results = [[] for _ in sides]
    for i in range(runs):
        wait_zero([name for name, _ in sides] + ([WARMUP] if warmups is not None else []))
        away_from_ticks()
        if warmups is not None:
            warmups.append(cold(WARMUP, FLOOR_REQUEST))
        for k in range(len(sides)):
            j = (i + k) % len(sides)
            name, request = sides[j]
            wait_zero([name])
            results[j].append(cold(name, request))
        warm = " (after the warm-up's %.3f s)" % warmups[-1]["answer"] if warmups is not None else ""
        print("  run %d: %s%s" % (i + 1, ", ".join("%s %.3f s (HTTP %d)" % (name, r[-1]["answer"], r[-1]["code"])
                                                for (name, _), r in zip(sides, results)), warm))
        sys.stdout.flush()
    return results


def wave(names, requests, runs_into, pool):
    wait_zero(names)
    away_from_ticks()
    futures = [pool.submit(cold, n, r) for n, r in zip(names, requests)]
    runs_into.extend(f.result() for f in futures)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--wave", type=int, default=25)
    ap.add_argument("--wave-runs", type=int, default=3)
    ap.add_argument("--warmup", action=argparse.BooleanOptionalAction, default=True,
                    help="wake a floor first in each round, not counted (--no-warmup: the runs before 2026-12-06, later)")
    ap.add_argument("--out", help="a JSON file for every run's phases")
    args = ap.parse_args()
    if not INGRESS:
        sys.exit('CLUSTER_INGRESS unset: eval "$(hack/cluster.sh env)"')

    image = build_floor()
    print("floor image", image)
    triggers = {t["metadata"]["name"]: t for t in reversed(items_of("triggers"))}
    resources = {}  # (apiVersion, kind) -> namespaced, from the API's discovery
    for line in kubectl("api-resources", "--no-headers", "-o", "wide", check=True).stdout.splitlines():
        parts = line.split()
        # NAME [SHORTNAMES] APIVERSION NAMESPACED KIND VERBS...
        for i in range(1, len(parts) - 2):
            if parts[i + 1] in ("true", "false") and "/" in parts[i] or parts[i] == "v1" and parts[i + 1] in ("true", "false"):
                resources[(parts[i], parts[i + 2])] = parts[i + 1] == "true"
                break

    pings = {}  # function -> the data of its first PingSource (which sweep to run)
    for p in items_of("pingsources"):
        fn = p["spec"].get("ceOverrides", {}).get("extensions", {}).get("function")
        pings.setdefault(fn, p["spec"].get("data", ""))
    # Per function, a deletion event of the first kind of the cluster its part runs in or of the
    # garden its Trigger takes (it reads the object and finds it gone); a function that takes
    # none, its sweep's ping.
    functions = []
    for name, t in sorted(triggers.items()):
        request = None
        for f in t["spec"].get("filters", [{}])[0].get("any", []):
            e = f.get("exact", {})
            if e.get("cluster") in ("source", "garden") and e.get("kind") and (e["apiversion"], e["kind"]) in resources:
                request = event_request(e["apiversion"], e["kind"], resources[(e["apiversion"], e["kind"])], e["cluster"])
                break
        if request is None and name in pings:
            request = ping_request(pings[name])
        if request is not None:
            functions.append((name, request))
    wave_size = min(args.wave, len(functions))
    project = next(r for n, r in functions if n == "project")

    # The floor mounting one Secret, as each of ours mounts at least one (the garden's access, a
    # serving certificate, a ServiceAccount's token): what a volume costs before the sandbox.
    mounted_ns = ns_of("project")
    apply([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": MOUNTED, "namespace": mounted_ns,
            "labels": {"app.kubernetes.io/component": "coldstart"}}, "stringData": {"kubeconfig": "mounted"}}])
    services = [copy_of("project", PREFIX + "project"), copy_of("grm-webhooks", PREFIX + "grm-webhooks"),
                copy_of("project", MOUNTED, image, secret=MOUNTED)]
    warmups = [] if args.warmup else None
    if args.warmup:
        services.append(copy_of("project", WARMUP, image))
    services += [copy_of("project", "%sfloor-%d" % (PREFIX, i), image) for i in range(max(wave_size, 1))]
    services += [copy_of(n, PREFIX + n) for n, _ in functions[:wave_size] if n != "project"]
    names = [s["metadata"]["name"] for s in services]
    raw = {}
    try:
        # A new Service starts a pod to become Ready: a few at a time, within the node's pods.
        for i in range(0, len(services), 10):
            apply(services[i:i + 10])
            wait_ready(names[i:i + 10])
        print("events: the project function against the floor and the floor with a Secret volume")
        ours, floor, mounted = rounds([(PREFIX + "project", project), (PREFIX + "floor-0", FLOOR_REQUEST),
                                       (MOUNTED, FLOOR_REQUEST)], args.runs, warmups)
        report("events from zero (a deletion event, the function's read)", ours, floor, raw)
        report("events from zero, against the floor with a Secret volume", ours, mounted, raw)
        print("admission: grm-webhooks against the floor and the floor with a Secret volume")
        ours, floor, mounted = rounds([(PREFIX + "grm-webhooks", admission_request(PROTECTED_CRD)),
                                       (PREFIX + "floor-0", FLOOR_REQUEST), (MOUNTED, FLOOR_REQUEST)], args.runs, warmups)
        report("admission from zero (a protected CRD's deletion, refused)", ours, floor, raw)
        report("admission from zero, against the floor with a Secret volume", ours, mounted, raw)
        report("the floor with a Secret volume against the floor (events' and admission's runs)",
               raw["events from zero, against the floor with a Secret volume"]["floor"] + mounted,
               raw["events from zero (a deletion event, the function's read)"]["floor"] + floor, raw)
        if warmups:
            a = [r["answer"] for r in warmups]
            raw["warm-up"] = warmups
            print("\nthe warm-up floor, woken first in each of %d rounds (not counted): answer median %.3f s, p95 %.3f s, max %.3f s"
                  % (len(a), statistics.median(a), p95(a), max(a)))
        if wave_size:
            ours_names = [PREFIX + n for n, _ in functions[:wave_size]]
            floor_names = ["%sfloor-%d" % (PREFIX, i) for i in range(wave_size)]
            ours, floor = [], []
            with concurrent.futures.ThreadPoolExecutor(max_workers=wave_size) as pool:
                for i in range(args.wave_runs):
                    sides = [(ours_names, [r for _, r in functions[:wave_size]], ours),
                             (floor_names, [FLOOR_REQUEST] * wave_size, floor)]
                    if i % 2:
                        sides.reverse()
                    for side_names, requests, into in sides:
                        wave(side_names, requests, into, pool)
                    print("  wave %d done" % (i + 1))
            report("%d Services woken at once, %d waves each side" % (wave_size, args.wave_runs), ours, floor, raw)
    finally:
        if args.out:
            with open(args.out, "w") as f:
                json.dump(raw, f, indent=1)
        if os.environ.get("KEEP_COPIES") != "1":
            for ns in NAMESPACES:
                kubectl("delete", "ksvc,secret", "-n", ns, "-l", "app.kubernetes.io/component=coldstart", "--wait=false")


if __name__ == "__main__":
    main()
