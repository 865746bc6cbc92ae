#!/usr/bin/env bash
# Runs every test of the workspace, in stages, printing each stage's time.
# This is the README's test command; .ci/run runs it after the fmt and clippy checks.
set -euo pipefail
cd "$(dirname "$0")/.."

stage() {
  local name=$1; shift
  local start=$SECONDS
  echo "=== stage: $name"
  "$@"
  echo "=== stage: $name took $((SECONDS - start))s"
}

# Features: never --all-features (k8s-openapi would get two Kubernetes versions).
FEATURES="kubegen-runtime/testing,kubegen-runtime/prometheus"

# Every SEMANTICS case of the sections built so far is named in a test or listed in
# docs/SEMANTICS-NA.md.
stage "SEMANTICS coverage" hack/semantics-coverage.sh 1 2 3 4 5 6 7 8 9
stage "unit and integration tests" cargo test --workspace --locked --features "$FEATURES"
if [ -x hack/verify-codegen.sh ]; then
  stage "verify generated code is current" hack/verify-codegen.sh
fi
