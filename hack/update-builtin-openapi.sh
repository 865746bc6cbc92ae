#!/usr/bin/env bash
# Regenerates apiserver/src/openapi/builtin.json: the OpenAPI v3 schemas of the
# built-in kinds, served by the in-memory API server's /openapi/v2 and /openapi/v3 (so
# `kubectl explain pods.spec.containers` shows fields and descriptions).
#
# Provenance: k8s-openapi (the version and Kubernetes release the workspace's Cargo.lock
# and its `latest` feature select, as for kubernetes/api/builtin.yaml) generates every
# type's `schemars::JsonSchema` impl from Kubernetes' own OpenAPI document
# (kubernetes/kubernetes api/openapi-spec). This script reads those impls as text (it
# does not build k8s-openapi with its schemars feature), keeps the schemas reachable from
# the built-in kinds, adds `x-kubernetes-group-version-kind` to each kind's schema from
# its `Resource` impl, and writes one schema per line (sorted) so that a regeneration
# diffs, and deltas in git, line by line (1.3 MB, about 230 KB compressed as git stores
# it). hack/verify-codegen.sh checks it is current.
#
# Usage: hack/update-builtin-openapi.sh [OUTPUT]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, sys
meta = json.load(sys.stdin)
print(next(p["manifest_path"] for p in meta["packages"] if p["name"] == "k8s-openapi").rsplit("/", 1)[0])')
version=$(grep -o 'latest = \["v1_[0-9]*"\]' "$src/Cargo.toml" | grep -o 'v1_[0-9]*')
# An argument writes elsewhere (hack/verify-codegen.sh compares).
out=${1:-apiserver/src/openapi/builtin.json}
python3 - "$src" "$version" > "$out.new" <<'PY'
import json, os, re, sys

src, version = sys.argv[1], sys.argv[2]
root = os.path.join(src, "src", version)
STR = r'"(?:[^"\\]|\\.)*"'
PATH = r'crate::[A-Za-z0-9_:]+(?:<[^>]*>)?'

def rust_string(lit):
    """A Rust string literal's value."""
    body = lit[1:-1]
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c); i += 1; continue
        n = body[i + 1]
        if n == "u" and body[i + 2] == "{":
            j = body.index("}", i)
            out.append(chr(int(body[i + 3:j], 16))); i = j + 1; continue
        out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}[n])
        i += 2
    return "".join(out)

def to_json(text):
    """The JSON of a json_schema!({...}) body whose Rust expressions became markers."""
    out, i = [], 0
    while i < len(text):
        m = re.compile(STR).match(text, i)
        if m:
            out.append(json.dumps(rust_string(m.group(0)))); i = m.end(); continue
        m = re.compile(r",(\s*[}\]])").match(text, i)
        if m:
            out.append(m.group(1)); i = m.end(); continue
        out.append(text[i]); i += 1
    return json.loads("".join(out))

types = {}    # rust path -> schema name
schemas = {}  # schema name -> raw schema (with {"__ref": path, "__extra": {...}} markers)
gvks = {}     # schema name -> (group, version, kind)
for dirpath, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".rs"):
            continue
        path = os.path.join(dirpath, f)
        text = open(path, encoding="utf-8").read()
        module = "crate::" + "::".join(os.path.relpath(path, root)[:-3].split(os.sep))
        module = re.sub(r"::mod$", "", module)
        for m in re.finditer(r"impl(?:<T>)? crate::schemars::JsonSchema for (\w+)(?:<T>)? \{\s*fn schema_name\(\) -> [^{]*\{\s*(" + STR + r")", text):
            ty, name = m.group(1), rust_string(m.group(2))
            types[f"{module.rsplit('::', 1)[0]}::{ty}"] = name
            start = text.index("json_schema!(", m.end()) + len("json_schema!(")
            depth, j = 0, start
            while True:
                sm = re.compile(STR).match(text, j)
                if sm:
                    j = sm.end(); continue
                if text[j] in "({[": depth += 1
                elif text[j] in ")}]":
                    depth -= 1
                    if depth == 0: break
                j += 1
            body = text[start:j + 1]
            def wrapped(m):
                extra = dict((rust_string(k), rust_string(v)) for k, v in re.findall(r"insert\((" + STR + r")\.into\(\), (" + STR + r")\.into\(\)\)", m.group(0)))
                return json.dumps({"__ref": m.group(1), "__extra": extra})
            body = re.sub(r"\(\{\s*let mut schema_obj = __gen\.subschema_for::<(" + PATH + r")>\(\);(?:\s*schema_obj\.ensure_object\(\)\.insert\(" + STR + r"\.into\(\), " + STR + r"\.into\(\)\);)*\s*schema_obj\s*\}\)", wrapped, body)
            body = re.sub(r"\(?__gen\.subschema_for::<(" + PATH + r")>\(\)\)?", lambda m: json.dumps({"__ref": m.group(1)}), body)
            schemas[name] = to_json(body)
            r = re.search(r"impl crate::Resource for " + ty + r" \{\s*const API_VERSION[^;]*;\s*const GROUP: &'static str = (" + STR + r");\s*const KIND: &'static str = (" + STR + r");\s*const VERSION: &'static str = (" + STR + r");", text)
            if r and not ty.endswith("List"):
                gvks[name] = tuple(rust_string(r.group(k)) for k in (1, 3, 2))

def resolve(v, refs):
    """Markers to $refs (with allOf when the use adds a description or default)."""
    if isinstance(v, dict):
        if "__ref" in v:
            name = types[re.sub(r"<.*", "", v["__ref"])]
            refs.add(name)
            ref = {"$ref": f"#/components/schemas/{name}"}
            extra = {k: json.loads(x) if k == "default" else x for k, x in v.get("__extra", {}).items()}
            if not extra:
                return ref
            return {**extra, "allOf": [ref]}
        return {k: resolve(x, refs) for k, x in v.items()}
    if isinstance(v, list):
        return [resolve(x, refs) for x in v]
    return v

resolved, deps = {}, {}
for name, s in schemas.items():
    refs = set()
    resolved[name] = resolve(s, refs)
    deps[name] = refs
keep, todo = set(), [n for n in gvks]
while todo:
    n = todo.pop()
    if n in keep:
        continue
    keep.add(n)
    todo.extend(deps[n])
for name, (g, v, k) in gvks.items():
    resolved[name]["x-kubernetes-group-version-kind"] = [{"group": g, "kind": k, "version": v}]
print("{")
lines = [f"{json.dumps(n)}: {json.dumps(resolved[n], sort_keys=True, ensure_ascii=False)}" for n in sorted(keep)]
print(",\n".join(lines))
print("}")
PY
mv "$out.new" "$out"
