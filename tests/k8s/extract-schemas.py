#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Extracts the schemas test-k8s-schema validates against (see schemas/README.md).

  extract-schemas.py SWAGGER_JSON CRD_DIR OUT_DIR

SWAGGER_JSON: kubernetes-client/python's kubernetes/swagger.json.unprocessed
(the Kubernetes API's OpenAPI v2 document). CRD_DIR: agent-sandbox's k8s/crds.
Keeps only the definitions the exported kinds reach and the v1beta1
openAPIV3Schema of each CRD, without descriptions (data, not prose)."""

import json
import pathlib
import sys

import yaml

KINDS = [
    "io.k8s.api.core.v1.Secret",
    "io.k8s.api.core.v1.Service",
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.networking.v1.NetworkPolicy",
    "io.k8s.api.node.v1.RuntimeClass",
]
CRD_VERSION = "v1beta1"


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v.rsplit("/", 1)[1]
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


def main():
    swagger, crd_dir, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    defs = json.loads(pathlib.Path(swagger).read_text())["definitions"]
    keep, todo = {}, list(KINDS)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep[name] = strip(defs[name])
        todo.extend(refs(keep[name]))
    (out / "kubernetes-definitions.json").write_text(
        json.dumps({"definitions": dict(sorted(keep.items()))}, sort_keys=True, separators=(",", ":")) + "\n")

    crds = {}
    for f in sorted(crd_dir.glob("*.yaml")):
        crd = yaml.safe_load(f.read_text())
        for v in crd["spec"]["versions"]:
            if v["name"] == CRD_VERSION:
                gv = crd["spec"]["group"] + "/" + CRD_VERSION
                crds[gv + "/" + crd["spec"]["names"]["kind"]] = strip(v["schema"]["openAPIV3Schema"])
    (out / "agent-sandbox-v1beta1.json").write_text(json.dumps(crds, sort_keys=True, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
