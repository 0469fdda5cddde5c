#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Validates `sandboxctl export --format kubernetes` against the vendored schemas.

  validate.py SCHEMA_DIR SANDBOXCTL [GOLDEN.yaml...]

Exports several real profiles and checks every document against the
Kubernetes definitions (core/v1, apps/v1, networking.k8s.io/v1,
node.k8s.io/v1) or the Agent Sandbox CRD of its apiVersion and kind, in
strict mode (an unknown field is an error, as kubectl's field validation
makes it), then checks what the schemas cannot: the kinds each profile must
produce. Exits 77 when python3-jsonschema or python3-yaml is missing."""

import copy
import json
import pathlib
import subprocess
import sys
import tempfile

try:
    import jsonschema
    import yaml
except ImportError as e:
    print(f"SKIP: {e} (apt install python3-jsonschema python3-yaml)")
    sys.exit(77)

CORE_KINDS = {
    ("v1", "Secret"): "io.k8s.api.core.v1.Secret",
    ("v1", "Service"): "io.k8s.api.core.v1.Service",
    ("apps/v1", "Deployment"): "io.k8s.api.apps.v1.Deployment",
    ("networking.k8s.io/v1", "NetworkPolicy"): "io.k8s.api.networking.v1.NetworkPolicy",
    ("node.k8s.io/v1", "RuntimeClass"): "io.k8s.api.node.v1.RuntimeClass",
}


def strict(node):
    """Forbid unknown fields wherever an object lists its properties,
    except where the schema itself preserves unknown fields; IntOrString
    as either, as the API server reads it."""
    if isinstance(node, dict):
        node = {k: strict(v) for k, v in node.items()}
        if node.get("format") == "int-or-string" or node.get("x-kubernetes-int-or-string"):
            node.pop("type", None)
            node.pop("format", None)
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if "properties" in node and "additionalProperties" not in node \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [strict(v) for v in node]
    return node


def load_validators(schema_dir):
    defs = strict(json.loads((schema_dir / "kubernetes-definitions.json").read_text())["definitions"])
    crds = json.loads((schema_dir / "agent-sandbox-v1beta1.json").read_text())
    validators = {}
    for key, name in CORE_KINDS.items():
        schema = {"$ref": "#/definitions/" + name, "definitions": defs}
        validators[key] = jsonschema.Draft4Validator(schema)
    meta = {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "definitions": defs}
    for key, schema in crds.items():
        group_version, kind = key.rsplit("/", 1)
        schema = strict(copy.deepcopy(schema))
        # A CRD's metadata is the API's ObjectMeta; its schema says only "object".
        schema["properties"]["metadata"] = {"$ref": meta["$ref"]}
        schema["definitions"] = defs
        validators[(group_version, kind)] = jsonschema.Draft7Validator(schema)
    return validators


def export(sandboxctl, args):
    r = subprocess.run([sandboxctl, "export", "--format=kubernetes", *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: export {args} exited {r.returncode}: {r.stderr}")
    return list(yaml.safe_load_all(r.stdout)), r.stderr


def main():
    schema_dir, sandboxctl = pathlib.Path(sys.argv[1]), sys.argv[2]
    validators = load_validators(schema_dir)
    tmp = tempfile.TemporaryDirectory()
    cred = pathlib.Path(tmp.name) / "token"
    cred.write_text("s3cr3t\n")
    conf = pathlib.Path(tmp.name) / "sandboxd.conf"
    conf.write_text("[Egress]\nFloor = *.example.org api.openai.com\n")
    base = ["--config", str(conf), "--image", "registry.example/agent:1"]
    profiles = {
        "trusted, no egress": (["--class", "trusted", "--", "/bin/true"],
                               {"NetworkPolicy", "Sandbox"}),
        "standard coding agent": (["--name", "coder", "--namespace", "agents", "--class", "standard",
                                   "--memory", "1G", "--cpu", "150%", "--disk", "512M", "--runtime", "2h",
                                   "--allow", "api.openai.com", "--allow", "*.example.org:8443",
                                   "--setenv", "LANG=C.UTF-8", "--credential", f"openai:{cred}",
                                   "--", "/usr/bin/agent", "--serve"],
                                  {"RuntimeClass", "Secret", "Deployment", "Service", "NetworkPolicy", "Sandbox"}),
        "llm-generated code, pooled": (["--name", "llm", "--origin", "llm-generated", "--pool", "3",
                                        "--disk", "64M", "--workspace", "--egress-mode", "report",
                                        "--egress-rate", "1M", "--allow", "pypi.example.org",
                                        "--", "python3", "-c", "print('hi \"there\"\\n')"],
                                       {"RuntimeClass", "Secret", "Deployment", "Service", "NetworkPolicy",
                                        "SandboxTemplate", "SandboxWarmPool", "SandboxClaim"}),
        "hostile": (["--class", "hostile", "--tasks", "64", "--", "/bin/sh", "-c", "echo $HOME"],
                    {"RuntimeClass", "NetworkPolicy", "Sandbox"}),
    }
    failures = 0
    runs = [(title, export(sandboxctl, base + args)[0], kinds) for title, (args, kinds) in profiles.items()]
    # test-k8s-export's golden files: the mapping module's output, unchanged.
    for golden in sys.argv[3:]:
        docs = list(yaml.safe_load_all(pathlib.Path(golden).read_text()))
        runs.append((golden, docs, {d["kind"] for d in docs}))
    for title, docs, kinds in runs:
        seen = set()
        for doc in docs:
            key = (doc.get("apiVersion"), doc.get("kind"))
            seen.add(doc.get("kind"))
            v = validators.get(key)
            if v is None:
                print(f"FAIL [{title}]: no schema for {key}")
                failures += 1
                continue
            errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
            for e in errors:
                print(f"FAIL [{title}] {key[1]} {doc['metadata'].get('name')}: "
                      f"{'/'.join(map(str, e.absolute_path))}: {e.message}")
            failures += len(errors)
        if seen != kinds:
            print(f"FAIL [{title}]: kinds {sorted(seen)}, expected {sorted(kinds)}")
            failures += 1
        else:
            print(f"ok [{title}]: {len(docs)} documents valid")
    # The validators themselves: a document with a field no schema has must fail.
    docs, _ = export(sandboxctl, base + ["--", "/bin/true"])
    by_kind = {d["kind"]: d for d in docs}
    bad = copy.deepcopy(by_kind["Sandbox"])
    bad["spec"]["podTemplate"]["spec"]["containers"][0]["securityContex"] = {}
    if not list(validators[(bad["apiVersion"], bad["kind"])].iter_errors(bad)):
        print("FAIL: a misspelt field passed the Sandbox schema")
        failures += 1
    bad = copy.deepcopy(by_kind["NetworkPolicy"])
    bad["spec"]["podSelectr"] = {}
    if not list(validators[(bad["apiVersion"], bad["kind"])].iter_errors(bad)):
        print("FAIL: a misspelt field passed the NetworkPolicy schema")
        failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
