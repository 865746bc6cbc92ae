#!/usr/bin/env bash
# The informer benchmark on servers that behave differently: runs informer-bench on the
# in-memory server once per server variant (what an event changes, how many events the
# server writes at once, how it chunks a watch, how it pages a list) and prints one line
# per variant with kubegen's ratios to each peer. A figure that holds on one variant
# only is a figure about that server; docs/informer-benchmark.md reads this table.
#
# Usage: hack/bench-informer-variants.sh [PODS] [extra informer-bench flags...]
#   PODS defaults to 20000; events default to as many as Pods. E.g.
#   `hack/bench-informer-variants.sh 100000 --runs 3 --clients ours,kube,go`.
#   VARIANTS="name=flags;name=flags" replaces the built-in list.
set -euo pipefail
cd "$(dirname "$0")/.."
pods=${1:-20000}
shift || true
extra=("$@")
has_clients=false
for a in "${extra[@]}"; do case $a in --clients|--clients=*) has_clients=true;; esac; done
$has_clients || extra+=(--clients ours,kube)

default_variants="rv-only=--event-shape rv
label-restart=--event-shape label-restart
one-event-per-write=--event-shape label-restart --write-batch 1
one-event-per-chunk=--event-shape label-restart --watch-chunk 0
unbuffered (both)=--event-shape label-restart --write-batch 1 --watch-chunk 0
list-ignores-limit=--event-shape label-restart --list-limit ignore
list-pages-of-100=--event-shape label-restart --list-limit 100"
variants=${VARIANTS:-$default_variants}
variants=${variants//;/$'\n'}

cargo build --release --locked -q -p kubegen-benchmarks --bins
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
if command -v go >/dev/null; then
  (cd benchmarks/go-informer && go build -o "$target/release/go-informer" .)
fi
log=$target/bench-informer-variants
mkdir -p "$log"

summary=()
start=$SECONDS
while IFS= read -r line; do
  [ -n "$line" ] || continue
  name=${line%%=*}
  read -r -a flags <<<"${line#*=}"
  file=$log/$(echo "$name" | tr -c 'a-z0-9\n' '-').txt
  echo "=== variant: $name (${flags[*]})" >&2
  t=$SECONDS
  "$target/release/informer-bench" --pods "$pods" --no-relist "${flags[@]}" "${extra[@]}" \
    >"$file" 2>"$file.log" || { echo "variant $name failed: see $file.log" >&2; exit 1; }
  cat "$file"
  echo "=== variant: $name took $((SECONDS - t))s" >&2
  while IFS= read -r r; do
    summary+=("$(printf '%-22s %s' "$name" "$r")")
  done < <(grep '^ratio (a)/' "$file" | sed 's/ *(target.*//')
done <<<"$variants"

echo
echo "kubegen's typed informer against each peer, per server variant ($pods Pods; $((SECONDS - start)) s):"
printf '%s\n' "${summary[@]}"
