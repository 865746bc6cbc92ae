#!/usr/bin/env bash
# Regenerates the golden trees: fixtures/golden from the fixture CRDs (fixtures/crds),
# fixtures/golden-rust from the hand-written Rust API types (fixtures/rust), and
# fixtures/golden-crd (plus sample-controller's crd/) from Rust types by `kubegen crd`.
# Golden files are never edited by hand: change the generator or a fixture, run this,
# and review the diff. hack/verify-codegen.sh checks that the tree is current.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run -q --locked -p kubegen -- generate \
  -f fixtures/crds \
  -o fixtures/golden \
  --boilerplate hack/boilerplate.rs.txt
cargo run -q --locked -p kubegen -- generate \
  -f fixtures/rust \
  --types-path crate::apis \
  -o fixtures/golden-rust \
  --boilerplate hack/boilerplate.rs.txt
# CRDs written from Rust types (`kubegen crd`): the fixtures' and sample-controller's.
cargo run -q --locked -p kubegen -- crd -f fixtures/rust -o fixtures/golden-crd
cargo run -q --locked -p kubegen -- crd \
  -f examples/sample-controller/src/apis \
  -o examples/sample-controller/crd
# sample-controller's role, from the +kubebuilder:rbac markers in its controller.
cargo run -q --locked -p kubegen -- rbac \
  -f examples/sample-controller/src \
  -o examples/sample-controller/rbac --role-name sample-controller
