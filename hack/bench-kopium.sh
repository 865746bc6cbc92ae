#!/usr/bin/env bash
# Usage: hack/bench-kopium.sh [DIR]      (DIR defaults to ../shared/crds)
#
# Times generating the whole corpus with kubegen (release build, one run over DIR: all
# versions, all artifacts) against kopium (from crates.io, installed into target/tools if
# missing; one run per CRD version, types only) on the same files in the same run, and
# prints a table with both wall times and their ratio. Each tool runs ROUNDS times
# (default 3) alternately; the table shows the median. It also prints the compile time of
# the generated corpus that the last hack/check-corpus.sh run measured.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(cd "${1:-$ROOT/../shared/crds}" && pwd)
ROUNDS=${ROUNDS:-3}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
TOOLS=$ROOT/target/tools
OUT=$TARGET/bench-kopium

if [ ! -x "$TOOLS/bin/kopium" ]; then
  echo "installing kopium into $TOOLS (several minutes)" >&2
  cargo install kopium --root "$TOOLS"
fi
(cd "$ROOT" && cargo build --release --locked -q -p kubegen -p corpus-objects)
KUBEGEN=$TARGET/release/kubegen
KOPIUM=$TOOLS/bin/kopium

mapfile -t FILES < <(find "$DIR" -maxdepth 1 -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
mapfile -t PAIRS < <("$TARGET/release/corpus-objects" versions "${FILES[@]}")
rm -rf "$OUT"; mkdir -p "$OUT/kopium"

now() { date +%s.%N; }
run_kubegen() {
  "$KUBEGEN" generate -f "$DIR" -o "$OUT/kubegen" 2>"$OUT/kubegen.log"
}
kopium_fail=0
run_kopium() {
  kopium_fail=0
  local pair f v
  for pair in "${PAIRS[@]}"; do
    f=${pair% *}; v=${pair##* }
    "$KOPIUM" -f "$f" --api-version "$v" >"$OUT/kopium/$(basename "$f" .yaml).$v.rs" 2>>"$OUT/kopium.log" \
      || kopium_fail=$((kopium_fail + 1))
  done
}
ours=(); theirs=()
for ((r = 0; r < ROUNDS; r++)); do
  t=$(now); run_kubegen; ours+=("$(echo "$(now) - $t" | bc)")
  t=$(now); run_kopium; theirs+=("$(echo "$(now) - $t" | bc)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
k=$(median "${ours[@]}"); p=$(median "${theirs[@]}")
files=$(find "$OUT/kubegen" -name '*.rs' | wc -l)
printf '\ncorpus: %s (%d files, %d CRD versions), median of %d rounds\n\n' "$DIR" "${#FILES[@]}" "${#PAIRS[@]}" "$ROUNDS"
printf '| tool | what | wall time (s) | runs | failures |\n|---|---|---|---|---|\n'
printf '| kubegen generate | all versions, all artifacts (%d .rs files) | %.3f | 1 | %s |\n' "$files" "$k" "$(grep -c '^error' "$OUT/kubegen.log" || true)"
printf '| kopium | types only, one run per version | %.3f | %d | %d |\n' "$p" "${#PAIRS[@]}" "$kopium_fail"
printf '\nratio kubegen/kopium: %.3f\n' "$(echo "$k / $p" | bc -l)"
if [ -f "$TARGET/corpus-check/timings.txt" ]; then
  echo "compile time of the generated corpus (last hack/check-corpus.sh): $(cat "$TARGET/corpus-check/timings.txt")"
else
  echo "compile time of the generated corpus: run hack/check-corpus.sh first"
fi
awk -v k="$k" -v p="$p" 'BEGIN {exit !(k < p)}'
