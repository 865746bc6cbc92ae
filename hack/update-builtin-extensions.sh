#!/usr/bin/env bash
# Regenerates apiserver/src/openapi/extensions.json: the structural merge facts of the
# built-in kinds' schemas, as a real kube-apiserver publishes them in /openapi/v3
# (k8s-openapi's schemas, from which apiserver/src/openapi/builtin.json is derived,
# carry almost none of them): per definition, its `x-kubernetes-map-type`, and per
# property its `x-kubernetes-list-type`, `-list-map-keys`, `-map-type`,
# `-patch-merge-key` and `-patch-strategy`. kubegen's generator overlays them on
# builtin.json for kubegen-kubernetes' apply configurations (which objects are atomic,
# for `extract_<kind>`).
#
# Usage: hack/update-builtin-extensions.sh
#   Starts the pinned control plane (hack/real-apiserver.sh; built on first use) on
#   REAL_APISERVER_PORT (default 6700), reads every group-version document, stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
export REAL_APISERVER_PORT=${REAL_APISERVER_PORT:-6700}
export REAL_APISERVER_DIR=${REAL_APISERVER_DIR:-$PWD/target/real-apiserver/extensions}
hack/real-apiserver.sh build >&2
hack/real-apiserver.sh start >&2
trap 'hack/real-apiserver.sh stop >&2' EXIT
eval "$(hack/real-apiserver.sh env)"
version=$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
kubectl get --raw /openapi/v3 > "$REAL_APISERVER_DIR/index.json"
python3 - "$REAL_APISERVER_DIR/index.json" "$version" > apiserver/src/openapi/extensions.json.new <<'PY'
import json, subprocess, sys

index = json.load(open(sys.argv[1]))
KEYS = ("x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
        "x-kubernetes-patch-merge-key", "x-kubernetes-patch-strategy")
out = {}
for gv, ref in sorted(index["paths"].items()):
    doc = json.loads(subprocess.check_output(["kubectl", "get", "--raw", ref["serverRelativeURL"]]))
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        facts = {k: schema[k] for k in KEYS if k in schema}
        props = {}
        for p, s in (schema.get("properties") or {}).items():
            f = {k: s[k] for k in KEYS if k in s}
            if f:
                props[p] = f
        if props:
            facts["properties"] = props
        if facts:
            out[name] = facts
print(json.dumps({"source": "kube-apiserver " + sys.argv[2] + " /openapi/v3",
                  "definitions": out}, indent=1, sort_keys=True))
PY
mv apiserver/src/openapi/extensions.json.new apiserver/src/openapi/extensions.json
echo "wrote apiserver/src/openapi/extensions.json ($(python3 -c 'import json; print(len(json.load(open("apiserver/src/openapi/extensions.json"))["definitions"]))') definitions)" >&2
