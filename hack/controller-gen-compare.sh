#!/usr/bin/env bash
# kubegen crd against controller-gen, side by side: the fixture API of
# tests/controller-gen is written twice, in Go (go/, kubebuilder markers) and in Rust
# (rust/, the same markers); controller-gen writes CRDs from the one, `kubegen crd` from
# the other, and the two must be the same after the normalization that
# codegen-cli/examples/crd_compare.rs documents (key order, controller-gen's version
# annotation). The fixture's RBAC and webhook markers (go/internal/controller,
# rust/controller.rs) go through controller-gen's `rbac` and `webhook` generators and
# `kubegen rbac` / `kubegen webhook`, compared the same way (every object of the files).
# Differences print as `path: controller-gen -> kubegen`; every intended
# one is argued in docs/kubegen-crd-and-controller-gen.md and kept out of the fixture.
#
# Usage: hack/controller-gen-compare.sh
#   controller-gen (the version tests/controller-gen/go/go.mod names) is installed from
#   the Go module proxy into target/tools/bin once. Missing Go fails when CI=true and
#   skips loudly otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

fixtures=tests/controller-gen
if ! command -v go >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "controller-gen-compare: go not found; CI requires it (controller-gen is a Go program)" >&2
    exit 1
  fi
  echo "=================================================================" >&2
  echo "controller-gen-compare: SKIPPED: go not found (install Go to run it)" >&2
  echo "=================================================================" >&2
  exit 0
fi

. hack/features.sh
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target"
target=$(cd "$target" && pwd)
bin=$target/tools/bin
version=$(cd "$fixtures/go" && go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools)
if ! "$bin/controller-gen" --version 2>/dev/null | grep -qx "Version: $version"; then
  echo "controller-gen-compare: installing controller-gen $version into $bin"
  GOBIN=$bin nice -n 10 go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$version"
fi

out=$target/controller-gen
rm -rf "$out"
mkdir -p "$out/controller-gen" "$out/kubegen"
# Floats are allowed: the fixture maps Go's float64 to Rust's f64 (`type: number`).
(cd "$fixtures/go" && nice -n 10 "$bin/controller-gen" crd:allowDangerousTypes=true \
  paths=./... output:crd:dir="$out/controller-gen")
nice -n 10 bash -c ". hack/features.sh && kubegen_build --example crd_compare"
nice -n 10 "$KUBEGEN_TARGET/debug/kubegen" crd -f "$fixtures/rust" -o "$out/kubegen"
nice -n 10 "$KUBEGEN_TARGET/debug/examples/crd_compare" \
  "$out/controller-gen" "$out/kubegen"

# RBAC and webhook manifests from the same markers (tests/controller-gen/go/internal/controller
# and tests/controller-gen/rust/controller.rs).
mkdir -p "$out/controller-gen-manifests" "$out/kubegen-manifests"
(cd "$fixtures/go" && nice -n 10 "$bin/controller-gen" rbac:roleName=manager-role webhook \
  paths=./... output:rbac:dir="$out/controller-gen-manifests" \
  output:webhook:dir="$out/controller-gen-manifests")
nice -n 10 "$KUBEGEN_TARGET/debug/kubegen" rbac -f "$fixtures/rust" -o "$out/kubegen-manifests"
nice -n 10 "$KUBEGEN_TARGET/debug/kubegen" webhook -f "$fixtures/rust" -o "$out/kubegen-manifests"
nice -n 10 "$KUBEGEN_TARGET/debug/examples/crd_compare" --manifests \
  "$out/controller-gen-manifests" "$out/kubegen-manifests"
