#!/usr/bin/env bash
# Regenerates the built-in API crate (kubernetes/): first its description
# (kubernetes/api/builtin.yaml) from k8s-openapi's Resource impls (the version `latest`
# enables) and kubernetes/api/table.yaml, then the generated tree
# (kubernetes/src/generated) from that description. hack/verify-codegen.sh checks both.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, sys
meta = json.load(sys.stdin)
print(next(p["manifest_path"] for p in meta["packages"] if p["name"] == "k8s-openapi").rsplit("/", 1)[0])')
version=$(grep -o 'latest = \["v1_[0-9]*"\]' "$src/Cargo.toml" | grep -o 'v1_[0-9]*')
# Apply configurations come from the OpenAPI definitions the in-memory server serves
# (hack/update-builtin-openapi.sh) with the merge facts a real kube-apiserver publishes laid
# over them (hack/update-builtin-extensions.sh), behind kubegen-kubernetes'
# `applyconfigurations` feature.
cargo run -q --locked -p kubegen --example describe_builtin -- "$src/src/$version" kubernetes/api/table.yaml \
  ../../apiserver/src/openapi/builtin.json applyconfigurations ../../apiserver/src/openapi/extensions.json \
  > kubernetes/api/builtin.yaml.new
mv kubernetes/api/builtin.yaml.new kubernetes/api/builtin.yaml
cargo run -q --locked -p kubegen -- generate -f kubernetes/api/builtin.yaml -o kubernetes/src/generated \
  --boilerplate hack/boilerplate.rs.txt
