#!/usr/bin/env bash
# The informer benchmark in one command: builds informer-bench, bench-server,
# bench-real-server, bench-client (release) and the client-go peer
# (benchmarks/go-informer, when Go is installed), then runs every client against one
# server and prints the table.
#
# Usage: [REAL=1] hack/bench-informer.sh [PODS] [extra informer-bench flags...]
#   PODS defaults to 100000; e.g. `hack/bench-informer.sh 100000 --runs 3` for medians of
#   three interleaved rounds, `--clients ours,kube,go` for a subset.
#   REAL=1: against a real kube-apiserver instead of the in-memory server: starts etcd +
#   kube-apiserver with hack/real-apiserver.sh (built once per pinned version; Go needed
#   for that build) on REAL_APISERVER_PORT (default 6800) with its files in
#   REAL_APISERVER_DIR (default <target>/real-apiserver/bench), runs
#   `informer-bench --real <its kubeconfig>` (no forced relist) and stops it again. No
#   controller manager: its garbage collector would delete the generator's Pods, whose
#   owner ReplicaSets do not exist (bench-real-server makes the ServiceAccounts itself).
#   REAL_KEEP=1 leaves the control plane running and the Pods seeded, for another run.
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
if [ -z "${REAL:-}" ]; then
  exec "$target/release/informer-bench" --pods "$pods" "$@"
fi

export REAL_APISERVER_PORT=${REAL_APISERVER_PORT:-6800}
export REAL_APISERVER_DIR=${REAL_APISERVER_DIR:-$target/real-apiserver/bench}
export NO_KCM=1
keep=()
if [ -n "${REAL_KEEP:-}" ]; then
  keep=(--keep-pods)
else
  trap 'hack/real-apiserver.sh stop' EXIT
fi
hack/real-apiserver.sh start
"$target/release/informer-bench" --pods "$pods" --real "$REAL_APISERVER_DIR/kubeconfig" "${keep[@]}" "$@"
