#!/usr/bin/env python3
"""Where a cold start's time goes, on the cluster of hack/cluster.sh (KEEP_CLUSTER=1 make
e2e-cluster, or make cluster-up cluster-deploy):

    eval "$(hack/cluster.sh env)"; hack/cluster-coldstart.py [runs]

Each run waits until the project function has no pod at all (not even one draining: a draining
pod still serves) and no minute tick is near, creates a Project, and waits for its namespace.
The phases come from the clocks of the components themselves: the kubelet's log (the pod bound
to the node), containerd's (the sandbox), the CRI logs of the pod's containers (process start,
the function's "serving" line, its first reconcile), and a watch of the pod (when the API showed
its IP and its readiness). Prints each run and the median of each
phase (docs/cluster.md).
"""
import datetime
import glob
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time

# The project function is gardener-controller-manager's: the runtime part's (function.Part.Namespace).
NS = "gardener-knative-runtime"
SERVICE = "project"
CLUSTER_DIR = os.environ.get("CLUSTER_DIR", "/var/tmp/gardener-knative-cluster")


def kubectl(*args, **kw):
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, **kw)


def garden_kubectl(*args, **kw):
    """kubectl on the virtual garden (hack/cluster.sh env's GARDEN_KUBECONFIG), where Projects are."""
    return kubectl("--kubeconfig", os.environ["GARDEN_KUBECONFIG"], *args, **kw)


def pods():
    out = kubectl("get", "pods", "-n", NS, "-l", "serving.knative.dev/service=" + SERVICE, "-o", "json", check=True)
    return json.loads(out.stdout)["items"]


def ts(s):
    """An RFC 3339 timestamp with nanoseconds, as epoch seconds."""
    s = s.rstrip("Z")
    base, _, frac = s.partition(".")
    return datetime.datetime.fromisoformat(base).replace(tzinfo=datetime.timezone.utc).timestamp() + float("0." + (frac or "0"))


def klog_ts(line, year):
    """A klog line's time (I1127 07:41:31.733160), as epoch seconds."""
    m = re.match(r"[IWE](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)", line)
    return ts("%d-%s-%sT%s" % (year, m.group(1), m.group(2), m.group(3)))


class PodWatch:
    """Watches the function's pods and notes, on the host's clock, when the API first showed the
    pod's IP (the kubelet reports it only after its next relist of the runtime's state: PLEG, once
    a second) and when it first showed the pod Ready."""

    def __init__(self):
        self.ip = self.ready = None
        self.proc = subprocess.Popen(["kubectl", "get", "pods", "-n", NS, "-l", "serving.knative.dev/service=" + SERVICE,
                                      "-w", "-o", "json"], stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf, decoder = "", json.JSONDecoder()
        for line in self.proc.stdout:
            buf += line
            try:
                pod, end = decoder.raw_decode(buf.lstrip())
            except ValueError:
                continue
            buf = buf.lstrip()[end:]
            now, status = time.time(), pod.get("status", {})
            if self.ip is None and status.get("podIP"):
                self.ip = now
            if self.ready is None and any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", [])):
                self.ready = now

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def first(path, pattern, parse):
    with open(path, errors="replace") as f:
        for line in f:
            if pattern in line:
                return parse(line)
    return None


def run():
    # No pod, not even a draining one, and no tick of a minute PingSource within the run.
    while pods() or not 5 <= datetime.datetime.now().second <= 45:
        time.sleep(0.5)
    watch = PodWatch()
    time.sleep(1)  # the watch's kubectl starts up (about 0.3 s) and lists nothing
    name = "cold-%05d" % random.randint(0, 99999)
    owner = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "owner@example.com"}
    project = {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Project", "metadata": {"name": name},
               "spec": {"namespace": "garden-" + name, "owner": owner,
                        "members": [dict(owner, role="admin", roles=["owner"])]}}
    garden_kubectl("create", "-f", "-", input=json.dumps(project), check=True)
    # The reference: kubectl has returned, so the Project exists (kubectl's own start-up, about
    # 0.3 s, is not counted).
    t0 = time.time()
    while garden_kubectl("get", "namespace", "garden-" + name).returncode != 0:
        time.sleep(0.02)
    done = time.time()
    watch.stop()
    pod = pods()[0]["metadata"]["name"]
    logs = glob.glob(os.path.join(CLUSTER_DIR, "pod-logs", "%s_%s_*" % (NS, pod)))[0]
    year = datetime.datetime.now(datetime.timezone.utc).year
    phases = {}
    phases["pod bound to the node (kubelet)"] = first(os.path.join(CLUSTER_DIR, "logs", "kubelet.log"), pod, lambda l: klog_ts(l, year))
    containerd = os.path.join(CLUSTER_DIR, "logs", "containerd.log")
    sandbox = []
    with open(containerd, errors="replace") as f:
        for line in f:
            if "RunPodSandbox for" in line and "Name:%s," % pod in line:
                sandbox.append(ts(re.search(r'time="([^"]+)"', line).group(1)))
    phases["sandbox started (containerd)"] = sandbox[0] if sandbox else None
    phases["sandbox ready: network (containerd)"] = sandbox[1] if len(sandbox) > 1 else None
    cri = lambda l: ts(l.split(" ", 1)[0])
    fn = os.path.join(logs, "function", "0.log")
    phases["function process first output"] = first(fn, " ", cri)
    phases["function serving"] = first(fn, '"msg":"serving"', cri)
    phases["queue-proxy started"] = first(os.path.join(logs, "queue-proxy", "0.log"), "Starting queue-proxy", cri)
    phases["pod IP in the API (the kubelet's relist)"] = watch.ip
    phases["pod Ready in the API"] = watch.ready
    phases["first reconcile (request reached the function)"] = first(fn, '"reconciler"', cri)
    phases["namespace seen (kubectl polls: up to 0.3 s late)"] = done
    return t0, phases


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    table = {}
    for i in range(runs):
        t0, phases = run()
        print("run %d" % (i + 1))
        for what, t in phases.items():
            at = None if t is None else t - t0
            table.setdefault(what, []).append(at)
            print("  %7s  %s" % ("-" if at is None else "%.3f" % at, what))
        sys.stdout.flush()
    print("median of %d runs, seconds after the Project was created:" % runs)
    for what, ats in table.items():
        ats = [a for a in ats if a is not None]
        if ats:
            print("  %7.3f  %s (%.3f to %.3f)" % (statistics.median(ats), what, min(ats), max(ats)))
    steps = [(w, statistics.median([a for a in ats if a is not None])) for w, ats in table.items() if any(a is not None for a in ats)]
    print("medians as steps:")
    previous = 0.0
    for what, at in steps:
        print("  +%6.3f  %s" % (at - previous, what))
        previous = at


if __name__ == "__main__":
    main()
