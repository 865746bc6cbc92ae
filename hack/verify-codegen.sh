#!/usr/bin/env bash
# Fails (exit 1, with a unified diff) when fixtures/golden (or fixtures/golden-rust) is
# not what the generator produces from fixtures/crds (fixtures/rust) today. Fix: run
# hack/update-codegen.sh and commit.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo run -q --locked -p kubegen -- verify \
  -f fixtures/crds \
  -o fixtures/golden \
  --boilerplate hack/boilerplate.rs.txt; then
  echo "fixtures/golden is stale: run hack/update-codegen.sh and commit the result" >&2
  exit 1
fi
if ! cargo run -q --locked -p kubegen -- verify \
  -f fixtures/rust \
  --types-path crate::apis \
  -o fixtures/golden-rust \
  --boilerplate hack/boilerplate.rs.txt; then
  echo "fixtures/golden-rust is stale: run hack/update-codegen.sh and commit the result" >&2
  exit 1
fi
# The golden trees are mounted in kubegen-tests' library: clippy and `cargo test --doc`
# already check it in CI; this checks that rustdoc has nothing to say about it either.
RUSTDOCFLAGS="-D warnings" cargo doc -q --locked --no-deps -p kubegen-tests
