#!/usr/bin/env python3
"""Prints the images of the one-node cluster's registry (hack/cluster.sh) and their compressed
sizes (config plus layers), per repository prefix: Knative's and gardener-knative's apart."""
import json
import re
import sys
import urllib.request

registry = sys.argv[1]
accept = ", ".join(["application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json",
                    "application/vnd.oci.image.index.v1+json"])


def get(path):
    req = urllib.request.Request(f"http://{registry}{path}", headers={"Accept": accept})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


groups = {}
for repo in get("/v2/_catalog")["repositories"]:
    for tag in get(f"/v2/{repo}/tags/list").get("tags") or []:
        if tag.startswith("sha256-"):  # what ko attaches to an image (its SBOM), not an image
            continue
        m = get(f"/v2/{repo}/manifests/{tag}")
        if "manifests" in m:  # an index: its linux/amd64 image
            m = get(f"/v2/{repo}/manifests/{m['manifests'][0]['digest']}")
        size = m["config"]["size"] + sum(layer["size"] for layer in m["layers"])
        # ko names an image <name>-<md5 of its import path>, but for a release (--base-import-paths)
        groups.setdefault(repo.split("/")[0], []).append((size, re.sub(r"-[0-9a-f]{32}$", "", repo.split("/")[-1])))
        break  # one tag per repository
for group, images in sorted(groups.items()):
    images.sort()
    sizes = [s for s, _ in images]
    print(f"images {group}: {len(images)}, {sum(sizes) / 2**20:.1f} MiB in all, "
          f"{sizes[0] / 2**20:.1f} to {sizes[-1] / 2**20:.1f} MiB each (median {sizes[len(sizes) // 2] / 2**20:.1f}; "
          f"largest {images[-1][1]})")
