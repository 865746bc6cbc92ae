#!/usr/bin/env bash
# Fails (exit 1, with a unified diff) when a checked-in generated tree is not what the
# generator produces today:
#   - fixtures/golden from fixtures/crds, fixtures/golden-rust from fixtures/rust, and
#     the CRDs `kubegen crd` writes: fixtures/golden-crd from fixtures/rust,
#     examples/sample-controller/crd from its types (fix: hack/update-codegen.sh);
#   - kubernetes/api/builtin.yaml from k8s-openapi and kubernetes/api/table.yaml, and
#     kubernetes/src/generated from builtin.yaml (fix: hack/update-builtin-api.sh);
#   - apiserver/src/openapi/builtin.json from k8s-openapi (fix:
#     hack/update-builtin-openapi.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/features.sh
kubegen_build --example describe_builtin
if ! "$KUBEGEN_TARGET/debug/kubegen" verify \
  -f fixtures/crds \
  -o fixtures/golden \
  --boilerplate hack/boilerplate.rs.txt; then
  echo "fixtures/golden is stale: run hack/update-codegen.sh and commit the result" >&2
  exit 1
fi
if ! "$KUBEGEN_TARGET/debug/kubegen" verify \
  -f fixtures/rust \
  --types-path crate::apis \
  -o fixtures/golden-rust \
  --boilerplate hack/boilerplate.rs.txt; then
  echo "fixtures/golden-rust is stale: run hack/update-codegen.sh and commit the result" >&2
  exit 1
fi
for pair in fixtures/rust:fixtures/golden-crd \
  examples/sample-controller/src/apis:examples/sample-controller/crd; do
  if ! "$KUBEGEN_TARGET/debug/kubegen" crd -f "${pair%%:*}" -o "${pair#*:}" --verify; then
    echo "${pair#*:} is stale: run hack/update-codegen.sh and commit the result" >&2
    exit 1
  fi
done
if ! "$KUBEGEN_TARGET/debug/kubegen" rbac -f examples/sample-controller/src \
  -o examples/sample-controller/rbac --role-name sample-controller --verify; then
  echo "examples/sample-controller/rbac is stale: run hack/update-codegen.sh and commit the result" >&2
  exit 1
fi
src=$(cargo metadata --format-version 1 --locked | python3 -c '
import json, sys
meta = json.load(sys.stdin)
print(next(p["manifest_path"] for p in meta["packages"] if p["name"] == "k8s-openapi").rsplit("/", 1)[0])')
version=$(grep -o 'latest = \["v1_[0-9]*"\]' "$src/Cargo.toml" | grep -o 'v1_[0-9]*')
described=$(mktemp)
trap 'rm -f "$described"' EXIT
# The same arguments as hack/update-builtin-api.sh: the OpenAPI definitions and merge facts
# the apply configurations come from, and the feature that gates them.
"$KUBEGEN_TARGET/debug/examples/describe_builtin" "$src/src/$version" kubernetes/api/table.yaml \
  ../../apiserver/src/openapi/builtin.json applyconfigurations ../../apiserver/src/openapi/extensions.json >"$described"
if ! diff -u kubernetes/api/builtin.yaml "$described"; then
  echo "kubernetes/api/builtin.yaml is stale: run hack/update-builtin-api.sh and commit the result" >&2
  exit 1
fi
if ! "$KUBEGEN_TARGET/debug/kubegen" verify \
  -f kubernetes/api/builtin.yaml \
  -o kubernetes/src/generated \
  --boilerplate hack/boilerplate.rs.txt; then
  echo "kubernetes/src/generated is stale: run hack/update-builtin-api.sh and commit the result" >&2
  exit 1
fi
schemas=$(mktemp)
trap 'rm -f "$described" "$schemas"' EXIT
hack/update-builtin-openapi.sh "$schemas"
if ! cmp -s apiserver/src/openapi/builtin.json "$schemas"; then
  # One schema a line: the first lines of the diff name what changed.
  diff -u apiserver/src/openapi/builtin.json "$schemas" | head -c 4000 || true
  echo "apiserver/src/openapi/builtin.json is stale: run hack/update-builtin-openapi.sh and commit the result" >&2
  exit 1
fi
# The golden tree is mounted in kubegen-tests' library and the built-in tree in
# kubegen-kubernetes: clippy and `cargo test --doc` already check them in CI; this checks
# that rustdoc has nothing to say about them either.
RUSTDOCFLAGS="-D warnings" cargo doc -q --locked --no-deps -p kubegen-tests -p kubegen-kubernetes
