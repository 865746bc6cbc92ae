#!/usr/bin/env bash
# Every CRD kubegen writes, held to a real kube-apiserver: created with dryRun=All (the
# server runs its whole CRD validation and stores nothing), and the sample-controller's
# CRD applied for real with kubectl, as its README tells users to.
#
# Usage: hack/real-crds.sh [CORPUS_DIR]     (default ../shared/crds)
#   1. fixtures/golden-crd (kubegen crd over fixtures/rust) and examples/*/crd
#   2. the CRD -> Rust -> CRD round trip of fixtures/crds and of every corpus file
#      (the corpus sources themselves first: a source the server refuses is listed
#      apart, as its round trip cannot do better)
#   3. kubectl apply -f examples/sample-controller/crd/ (then delete)
# Starts the control plane with hack/real-apiserver.sh (building it if needed) unless one
# runs; stops it again if it started it. Exits 1 on any refusal, listing each.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/features.sh
root=$PWD
corpus=${1:-../shared/crds}
target=${CARGO_TARGET_DIR:-$root/target}
work=$target/real-crds
started=
if ! hack/real-apiserver.sh status >/dev/null 2>&1; then
  hack/real-apiserver.sh start
  started=1
fi
cleanup() { [ -z "$started" ] || hack/real-apiserver.sh stop; }
trap cleanup EXIT
eval "$(hack/real-apiserver.sh env)"

rm -rf "$work"; mkdir -p "$work/fixtures" "$work/corpus"
echo "real-crds: writing the round trips"
# The debug build with the workspace's test features, which the corpus stage built (a
# release build of kubegen's dependencies cost a cold CI run minutes); the two writes
# run side by side.
kubegen_build
rt=$target/debug/examples/crd_roundtrip
# The round trip's own verdict (identical or not) is check-corpus.sh's; here only the
# files it writes matter.
"$rt" --write-crds "$work/fixtures" fixtures/crds >"$work/fixtures.txt" 2>&1 &
fixtures_pid=$!
# The corpus's round trips as hack/check-corpus.sh wrote them, when it ran on this corpus
# with this build and no corpus file changed since; otherwise written here.
written=$target/corpus-check/roundtrip-crds
if [ -f "$written.source" ] && [ "$(cat "$written.source")" = "$(cd "$corpus" && pwd -P)" ] \
  && [ "$written.source" -nt "$rt" ] \
  && [ -z "$(find "$corpus" -maxdepth 1 -newer "$written.source" \( -name '*.yaml' -o -name '*.yml' \) | head -n 1)" ]; then
  echo "real-crds: the corpus's round trips as hack/check-corpus.sh wrote them ($written)"
  cp -R "$written"/. "$work/corpus/"
else
  "$rt" --write-crds "$work/corpus" "$corpus" >"$work/corpus.txt" 2>&1 || true
fi
wait "$fixtures_pid" || true

failures=0
# dry_run LABEL FILE...: one kubectl call per file, so one refusal names its file; four
# at a time (each call mostly waits on the server), reported in the files' order.
dry_run() {
  local label=$1; shift
  local ok=0 total=0 i=0 running=0 f
  local out=$work/dry-run; rm -rf "$out"; mkdir -p "$out"
  for f in "$@"; do
    i=$((i + 1))
    { if kubectl create --dry-run=server -f "$f" >"$out/$i.log" 2>&1; then echo 0; else echo 1; fi >"$out/$i.rc"; } &
    running=$((running + 1))
    if [ "$running" -ge 4 ]; then wait -n || true; running=$((running - 1)); fi
  done
  wait || true
  i=0
  for f in "$@"; do
    i=$((i + 1)); total=$((total + 1))
    if [ "$(cat "$out/$i.rc" 2>/dev/null || echo 1)" = 0 ]; then
      ok=$((ok + 1))
    else
      echo "  REFUSED $f:"; sed 's/^/    /' "$out/$i.log"
      [ "$label" = "corpus sources" ] || failures=$((failures + 1))
      [ "$label" != "corpus sources" ] || echo "$(basename "$f")" >>"$work/refused-sources.txt"
    fi
  done
  echo "real-crds: $label: $ok/$total accepted"
}

: >"$work/refused-sources.txt"
mapfile -t written < <(ls fixtures/golden-crd/*.yaml examples/*/crd/*.yaml)
dry_run "kubegen crd (fixtures/golden-crd, examples)" "${written[@]}"
mapfile -t fixture_rt < <(ls "$work"/fixtures/*.yaml)
dry_run "round trip of fixtures/crds" "${fixture_rt[@]}"
mapfile -t sources < <(ls "$corpus"/*.yaml)
dry_run "corpus sources" "${sources[@]}"
corpus_rt=()
for f in "$work"/corpus/*.yaml; do
  src=$(basename "$f"); src=${src%%.rt.*}.yaml
  grep -qxF "$src" "$work/refused-sources.txt" || corpus_rt+=("$f")
done
dry_run "round trip of the corpus (sources the server accepts)" "${corpus_rt[@]}"

# The RBAC and webhook manifests kubegen writes from markers: the sample-controller's
# role, and the controller-gen comparison fixture's role and webhook configurations.
mkdir -p "$work/manifests"
"$KUBEGEN_TARGET/debug/kubegen" rbac -f tests/controller-gen/rust -o "$work/manifests"
"$KUBEGEN_TARGET/debug/kubegen" webhook -f tests/controller-gen/rust -o "$work/manifests"
# The fixture's namespaced Role needs its namespace.
kubectl create namespace fixtures-system >/dev/null 2>&1 || true
dry_run "kubegen rbac and webhook manifests" examples/sample-controller/rbac/role.yaml \
  "$work/manifests/role.yaml" "$work/manifests/manifests.yaml"
kubectl delete namespace fixtures-system --wait=false >/dev/null 2>&1 || true

echo "real-crds: kubectl apply -f examples/sample-controller/crd/"
if kubectl apply -f examples/sample-controller/crd/; then
  kubectl wait --for condition=Established --timeout 60s -f examples/sample-controller/crd/
  kubectl delete -f examples/sample-controller/crd/ --wait=false
else
  failures=$((failures + 1))
fi
[ "$failures" = 0 ] || { echo "real-crds: $failures CRDs or manifests kubegen writes were refused by kube-apiserver"; exit 1; }
echo "real-crds: every CRD and manifest kubegen writes is accepted by kube-apiserver"
