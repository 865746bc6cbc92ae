#!/usr/bin/env bash
# The informer benchmark in one command: builds informer-bench, bench-server,
# bench-client (release) and the client-go peer (benchmarks/go-informer, when Go is
# installed), then runs every client against one server and prints the table.
#
# Usage: hack/bench-informer.sh [PODS] [extra informer-bench flags...]
#   PODS defaults to 100000; e.g. `hack/bench-informer.sh 100000 --runs 3` for medians of
#   three interleaved rounds, `--clients ours,kube,go` for a subset.
set -euo pipefail
cd "$(dirname "$0")/.."
pods=${1:-100000}
shift || true
cargo build --release --locked -q -p kubegen-benchmarks --bins
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
if command -v go >/dev/null; then
  # client-go from the module proxy, pinned by benchmarks/go-informer/go.sum.
  (cd benchmarks/go-informer && go build -o "$target/release/go-informer" .)
else
  echo "go not found: the client-go peer (go, go-strip) is left out" >&2
  rm -f "$target/release/go-informer"
fi
exec "$target/release/informer-bench" --pods "$pods" "$@"
