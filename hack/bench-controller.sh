#!/usr/bin/env bash
# Builds and runs the controller benchmark (benchmarks/src/bin/controller-bench.rs):
# kubegen's controller builder against kube-runtime's Controller, each in its own process
# against a fresh in-memory API server over TCP. docs/controller.md holds the figures.
# Usage: hack/bench-controller.sh [PRIMARIES] [controller-bench flags: --pairs, --variants
# (DeltaFIFO and LIST + WATCH runs), --rounds N, --kubegen-workers N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p kubegen-benchmarks --bin controller-bench
"${CARGO_TARGET_DIR:-target}/release/controller-bench" --primaries "${1:-10000}" "${@:2}"
