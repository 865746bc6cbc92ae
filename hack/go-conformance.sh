#!/usr/bin/env bash
# Runs the client-go conformance program (tests/go-conformance: k8s.io/client-go v0.36,
# typed clients with their default protobuf bodies, dynamic clients, shared informers,
# server-side apply, leader election) against kubegen-apiserver, twice: with client-go's
# WatchListClient feature on (the initial state comes from a sendInitialEvents watch)
# and off (from a LIST). Then checks the server's protobuf table against k8s.io/api and
# decodes a fresh corpus of random objects of every built-in kind. Last, compares the JSON
# of client-go's apply configurations with kubegen-kubernetes' for the same builder calls.
#
# Usage: hack/go-conformance.sh [go test flags, e.g. -run TestPodInformer]
#   GO: the go command (default: go on PATH). Missing Go fails when CI=true and skips
#   loudly otherwise. Modules come from the Go module proxy (go.sum is checked in).
#   KUBEGEN_APISERVER: a kubegen-apiserver binary to test (default: build this tree's).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/features.sh

go_bin=${GO:-go}
if ! command -v "$go_bin" >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "go-conformance: go not found (set GO); CI requires it" >&2
    exit 1
  fi
  echo "=================================================================" >&2
  echo "go-conformance: SKIPPED: go not found (set GO to run it)" >&2
  echo "=================================================================" >&2
  exit 0
fi

bin=${KUBEGEN_APISERVER:-}
if [ -z "$bin" ]; then
  # The workspace's test features (hack/test.sh): the test stage's binary is reused.
  nice -n 10 bash -c '. hack/features.sh && workspace_build --bin kubegen-apiserver'
  bin=${CARGO_TARGET_DIR:-target}/debug/kubegen-apiserver
fi

# Download (or reuse) the modules go.sum pins, then compile the test binary once.
(cd tests/go-conformance && "$go_bin" mod download && nice -n 10 "$go_bin" vet ./...)
unformatted=$(cd tests/go-conformance && "$(dirname "$(command -v "$go_bin")")/gofmt" -l .)
[ -z "$unformatted" ] || { echo "go-conformance: gofmt -w these files: $unformatted" >&2; exit 1; }

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# run <on|off> [go test flags]: a fresh server, then the whole package.
run() {
  local mode=$1; shift
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  rm -f "$work/kubeconfig"
  "$bin" --port "$port" -f tests/go-conformance/testdata --kubeconfig "$work/kubeconfig" \
    >"$work/server-$mode.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    [ -f "$work/kubeconfig" ] && python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/readyz')" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server-$mode.log" >&2; echo "go-conformance: the server exited" >&2; exit 1; }
    sleep 0.1
  done
  echo "--- go-conformance: WatchListClient=$mode against $bin on port $port"
  local value=false
  [ "$mode" = on ] && value=true
  local status=0
  (cd tests/go-conformance &&
    KUBECONFIG="$work/kubeconfig" KUBE_FEATURE_WatchListClient=$value \
      nice -n 10 "$go_bin" test -count=1 -v "$@" ./...) || status=$?
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
  if [ "$status" != 0 ]; then
    echo "--- server log (WatchListClient=$mode, last 50 lines)" >&2
    tail -n 50 "$work/server-$mode.log" >&2
  fi
  return "$status"
}

failed=()
run on "$@" || failed+=("WatchListClient=on")
run off "$@" || failed+=("WatchListClient=off")
if [ ${#failed[@]} -gt 0 ]; then
  echo "go-conformance: FAILED with ${failed[*]}" >&2
  exit 1
fi
echo "go-conformance: passed with WatchListClient on and off"

# Protobuf request bodies: the server's table (apimachinery/src/protobuf/table.json) must be
# the one this go.mod's k8s.io/api gives, and a fresh corpus of random objects of every
# built-in kind, encoded by apimachinery's protobuf serializer, must decode to exactly
# the JSON kube-apiserver stores (encoding/json of the decoded Go object).
version=$(cd tests/go-conformance && "$go_bin" list -m -f '{{.Path}} {{.Version}}' k8s.io/api)
(cd tests/go-conformance && PROTOBUFGEN_SOURCE="$version" nice -n 10 "$go_bin" run ./protobufgen table) >"$work/table.json"
if ! cmp -s "$work/table.json" apimachinery/src/protobuf/table.json; then
  diff "$work/table.json" apimachinery/src/protobuf/table.json | head -20 >&2
  echo "go-conformance: apimachinery/src/protobuf/table.json is stale: run hack/update-builtin-protobuf.sh" >&2
  exit 1
fi
seed=${PROTOBUF_CORPUS_SEED:-$(date +%s)}
(cd tests/go-conformance && "$go_bin" run ./protobufgen corpus -seed "$seed" -objects 20) >"$work/corpus.jsonl"
echo "--- protobuf corpus: $(wc -l <"$work/corpus.jsonl") random objects, seed $seed (PROTOBUF_CORPUS_SEED=$seed reproduces)"
# Runs `cargo test` with a name filter and fails unless at least one test ran: a filter
# that matches nothing (a renamed test or module) passes silently otherwise.
cargo_test_named() {
  local log=$work/cargo-test.log
  nice -n 10 cargo test --locked --workspace --features "$KUBEGEN_TEST_FEATURES" "$@" >"$log" 2>&1 \
    || { cat "$log" >&2; exit 1; }
  grep -v '^running 0 tests$\|^test result: ok\. 0 passed\|^$\|Running ' "$log" || true
  if ! grep -qE '^test result: ok\. [1-9]' "$log"; then
    echo "go-conformance: no test matched: cargo test $*" >&2
    exit 1
  fi
}
KUBEGEN_PROTOBUF_CORPUS="$work/corpus.jsonl" cargo_test_named --lib protobuf::tests::corpus -- --nocapture
# The compact mirrors on the same fresh objects: lossless against k8s-openapi's types,
# the same from protobuf as from JSON. The workspace's test features, so the test binary
# the test stage built is reused.
KUBEGEN_PROTOBUF_CORPUS="$work/corpus.jsonl" cargo_test_named \
  --test integration compact::every_mirrored_kind_is_lossless -- --nocapture
echo "go-conformance: protobuf table current, corpus decodes as kube-apiserver would"

# Apply configurations on the wire: the same builder calls on client-go's
# applyconfigurations and on kubegen-kubernetes' generated ones give the same JSON.
(cd tests/go-conformance && nice -n 10 "$go_bin" run ./applyconfiggen) >"$work/applyconfig.json"
if ! cmp -s "$work/applyconfig.json" tests/go-conformance/applyconfiggen/client-go.json; then
  echo "go-conformance: tests/go-conformance/applyconfiggen/client-go.json is not what client-go prints;" >&2
  echo "  regenerate it: (cd tests/go-conformance && go run ./applyconfiggen > applyconfiggen/client-go.json)" >&2
  exit 1
fi
cargo_test_named --test integration apply_wire_go::
echo "go-conformance: apply configurations serialize as client-go's do"
