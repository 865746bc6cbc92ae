#!/usr/bin/env bash
# Usage: hack/check-corpus.sh [DIR]      (DIR defaults to ../shared/crds)
#
# Proves kubegen on a corpus of real CRDs: for every CRD file in DIR it
#   1. generates all versions and all artifacts (`kubegen generate`, one tree per file),
#   2. builds the trees (`cargo build --lib`: the round-trip runner of step 4 reuses
#      that library, so nothing is compiled twice) in batches of CORPUS_BATCH files (default 12) in one
#      scratch crate under target/corpus-check whose target dir every batch shares
#      (the whole corpus in one crate needs more than 21 GiB of memory),
#   3. collects the batch's doctests with `cargo test --doc` (against the library and
#      dependencies step 2 built): generated code must have none, so any doctest found
#      fails the file,
#   4. round-trips objects that corpus-objects synthesizes from the raw CRD YAML
#      (independent of kubegen's model) through the generated types,
#   5. round-trips each CRD through Rust: `kubegen generate`, then `kubegen crd` over
#      the generated types, compared with the source version by version
#      (codegen-cli/src/roundtrip.rs; goal: every version identical); the CRDs written
#      back are kept in target/corpus-check/roundtrip-crds for hack/real-crds.sh.
# Prints one line per file and version (generate / compile / doctest / round-trip) and a
# summary on stdout; progress and timings on stderr. Exits 1 on any failure.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
DIR=$(cd "${1:-$ROOT/../shared/crds}" && pwd)
BATCH=${CORPUS_BATCH:-12}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$TARGET/corpus-check
start_all=$SECONDS

log() { echo "[check-corpus $((SECONDS - start_all))s] $*" >&2; }

# Debug builds, with the features of the test stage: everything they need was built by
# `cargo test` already (a release build of the tools cost minutes of a cold CI run and
# saves seconds here: generation takes ~60 ms per file in debug).
. "$ROOT/hack/features.sh"
FEATURES=$KUBEGEN_TEST_FEATURES
log "building kubegen, corpus-objects and the round-trip example (debug)"
(cd "$ROOT" && cargo build --locked -q --workspace --features "$FEATURES" \
  --bin kubegen --bin corpus-objects --example crd_roundtrip)
KUBEGEN=$TARGET/debug/kubegen
OBJECTS=$TARGET/debug/corpus-objects

mapfile -t FILES < <(find "$DIR" -maxdepth 1 -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
[ "${#FILES[@]}" -gt 0 ] || { echo "no *.yaml files in $DIR" >&2; exit 1; }
module_of() { local b; b=$(basename "$1"); b=${b%.*}; echo "f_$(echo "$b" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]/_/g')"; }

rm -rf "$WORK/gen" "$WORK/ws" "$WORK/logs" "$WORK/synth"
mkdir -p "$WORK/gen" "$WORK/logs"
declare -A GEN COMPILE DOCTEST MODULE
: >"$WORK/objects.jsonl"
: >"$WORK/results.jsonl"

# 1. Generate, and synthesize the objects (from the YAML, not from kubegen): one process
# per core (the debug generator takes up to seconds on the largest CRDs), each file's
# verdict and objects written apart and gathered in the files' order.
t=$SECONDS
mkdir -p "$WORK/synth"
gen_one() { # file module
  if "$KUBEGEN" generate -f "$1" -o "$WORK/gen/$2" 2>"$WORK/logs/$2.generate"; then
    echo ok >"$WORK/logs/$2.gen-status"
  else
    echo FAIL >"$WORK/logs/$2.gen-status"
  fi
  if ! "$OBJECTS" synth "$1" >"$WORK/synth/$2.jsonl" 2>"$WORK/logs/$2.synth"; then
    echo "{\"id\":\"$2#synth\",\"file\":\"$1\",\"version\":\"?\",\"variant\":\"synth\",\"object\":null}" >"$WORK/synth/$2.jsonl"
    echo FAIL >"$WORK/logs/$2.synth-status"
  fi
}
export -f gen_one
export KUBEGEN OBJECTS WORK
for f in "${FILES[@]}"; do MODULE[$f]=$(module_of "$f"); done
for f in "${FILES[@]}"; do printf '%s\0%s\0' "$f" "${MODULE[$f]}"; done \
  | xargs -0 -n 2 -P "$(nproc 2>/dev/null || echo 2)" bash -c 'gen_one "$0" "$1"'
for f in "${FILES[@]}"; do
  m=${MODULE[$f]}
  GEN[$f]=$(cat "$WORK/logs/$m.gen-status" 2>/dev/null || echo FAIL)
  [ "${GEN[$f]}" = ok ] || log "generate failed: $f: $(tail -n 3 "$WORK/logs/$m.generate")"
  [ ! -f "$WORK/logs/$m.synth-status" ] || log "cannot synthesize objects for $f: $(cat "$WORK/logs/$m.synth")"
  cat "$WORK/synth/$m.jsonl" >>"$WORK/objects.jsonl"
done
log "generated ${#FILES[@]} files in $((SECONDS - t))s"

# The scratch workspace builds into the workspace's target dir and reuses what `cargo
# test` built there: same lock file, same profiles, same `.cargo/config.toml` (it lives
# under target/), and the same features on every dependency.
# - Cargo names a path package's build by its path relative to the workspace root
#   (outside the root, by its absolute path). So the scratch workspace links the
#   workspace's path crates (runtime, apimachinery, apiserver, ...) under its own root at
#   the same relative paths, as members, with the workspace's [workspace.package],
#   [workspace.dependencies] and profiles: their builds are then the very units `cargo
#   test` built, not a second build of each (a scratch crate that named them by absolute
#   path rebuilt them: 140 s of a cold CI run).
# - Cargo unifies features over the packages it builds, so the batches alone would ask
#   for fewer (kube without `derive`, tokio without `test-util`, ...) and rebuild most of
#   the graph; corpus-pins.py adds each dependency whose features differ as a direct
#   dependency with the workspace's features.
# What is left to build: the batches. Correctness never depends on the links or the
# pins, only the build time.
mkdir -p "$WORK/ws"
WS=$(cd "$WORK/ws" && pwd -P)
CRATE=$WS/a
rm -rf "$WORK/crate"
# The workspace's path crates, as its [workspace.dependencies] name them.
mapfile -t LINKED < <(sed -n '/^\[workspace.dependencies\]/,/^\[/s/.*path = "\([^"]*\)".*/\1/p' "$ROOT/Cargo.toml")
for d in "${LINKED[@]}"; do
  case $d in */*|.*) echo "check-corpus: a nested path dependency ($d) in Cargo.toml's [workspace.dependencies] is not supported" >&2; exit 1;; esac
  ln -sfn "$ROOT/$d" "$WS/$d"
done
package_toml() { # package name, runner binary name: a batch package's header
  cat <<EOF
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false
build = "build.rs"

[lib]
path = "src/lib.rs"

[[bin]]
name = "$2"
path = "src/main.rs"

EOF
}
write_manifest() { # extra [dependencies] lines, extra [build-dependencies] lines
  # The workspace's lock file every time: cargo prunes what a manifest does not use, and
  # a pruned package a later pin brings back would be resolved to its newest version.
  cp "$ROOT/Cargo.lock" "$WS/Cargo.lock"
  {
    echo "[workspace]"
    echo 'resolver = "2"'
    printf 'members = ["a", "b"%s]\n\n' "$(printf ', "%s"' "${LINKED[@]}")"
    # Everything but the member list: the linked crates inherit from it.
    sed -n '/^\[workspace\.[a-z]*\]/,$p' "$ROOT/Cargo.toml"
  } >"$WS/Cargo.toml"
  {
    package_toml corpus-batch runner
    cat <<EOF
[dependencies]
$(grep -q '^kubegen-runtime = ' <<<"$1" || echo 'kubegen-runtime = { path = "../runtime", features = ["testing", "prometheus", "webhook"] }')
$(grep -q '^k8s-openapi = ' <<<"$1" || echo 'k8s-openapi = { version = "0.29.0", features = ["latest"] }')
$1

[build-dependencies]
$2
EOF
  } >"$CRATE/Cargo.toml"
  # The second batch of a pair (see the batch loop): the same dependencies, its own
  # library and runner.
  {
    package_toml corpus-batch-b runner-b
    sed -n '/^\[dependencies\]/,$p' "$CRATE/Cargo.toml"
  } >"$WS/b/Cargo.toml"
}
mkdir -p "$CRATE/src" "$WS/b/src"
for d in "$CRATE" "$WS/b"; do
  echo 'fn main() {}' >"$d/build.rs"
  echo '' >"$d/src/lib.rs"; echo 'fn main() {}' >"$d/src/main.rs"
done
# The host's packages and features: `--target all` would count platform-specific ones
# (tokio's `windows-sys`) that a build here never enables, and pinning them changes the
# feature set of what the workspace built.
HOST=$(rustc -vV | sed -n 's/^host: //p')
tree_features() { cargo tree --target "$HOST" -f '{p}|{f}' --prefix none "$@" | grep -v ' (\*)$' | sort -u; }
# The workspace's features, every build and the code's alone (see corpus-pins.py), with
# its path crates named by their links, as the scratch workspace sees them.
relink() { awk -v from="($ROOT/" -v to="($WS/" '{ i = index($0, from); if (i) $0 = substr($0, 1, i - 1) to substr($0, i + length(from)); print }'; }
(cd "$ROOT" && tree_features --locked --workspace --features "$FEATURES" -e normal,build,dev) | relink >"$WORK/features.workspace"
(cd "$ROOT" && tree_features --locked --workspace --features "$FEATURES" -e normal,dev,no-proc-macro) | relink >"$WORK/features.workspace.code"
write_manifest "" ""
pins=""
crate_features() { # the crate's features and the names of its host packages
  (cd "$WS" && tree_features -p corpus-batch -e normal,build) >"$WORK/features.crate"
  (cd "$WS" && tree_features -p corpus-batch -e normal,no-proc-macro) >"$WORK/features.crate.code"
  (cd "$WS" && cargo metadata --format-version 1 --filter-platform "$HOST") \
    | python3 "$ROOT/hack/corpus-pins.py" --host corpus-batch >"$WORK/host.crate"
}
pin_args=("$WORK/features.workspace" "$WORK/features.workspace.code" "$WORK/features.crate" "$WORK/features.crate.code" "$WORK/host.crate")
for round in 1 2 3 4; do
  crate_features
  new=$(python3 "$ROOT/hack/corpus-pins.py" "${pin_args[@]}") || break
  [ -n "$new" ] || break
  # Pins accumulate (a later round's line for the same package and side replaces the
  # earlier one): code pins as dependencies, `host: ` ones as build dependencies.
  pins=$(printf '%s\n%s\n' "$pins" "$new" | awk -F' = ' 'NF { if (!($1 in line)) order[n++] = $1; line[$1] = $0 }
    END { for (i = 0; i < n; i++) print line[order[i]] }')
  write_manifest "$(grep -v '^host: ' <<<"$pins" || true)" "$(sed -n 's/^host: //p' <<<"$pins")"
done
crate_features
log "scratch crate: $(grep -vc '^host: \|^$' <<<"$pins" || true) dependency feature pins and" \
  "$(grep -c '^host: ' <<<"$pins" || true) for build scripts and proc macros;" \
  "$(python3 "$ROOT/hack/corpus-pins.py" --report "${pin_args[@]}")"

# Two batches at a time, as the two packages of the scratch workspace (corpus-batch and
# corpus-batch-b), built by one cargo: compiling one batch keeps one core busy (rustc's
# front end is serial; a batch of 12 took 59 s wall for 64 s of CPU), so a pair takes
# about the time of one. Slot 0 is the member `a`, slot 1 the member `b`.
SLOT_DIR=("$CRATE" "$WS/b"); SLOT_PKG=(corpus-batch corpus-batch-b)
SLOT_CRATE=(corpus_batch corpus_batch_b); SLOT_BIN=(runner runner-b)
write_slot() { # slot, modules...: the slot's library (the trees) and runner (dispatch)
  local s=$1; shift
  {
    echo "//! One batch of the corpus check: generated trees, one module per CRD file."
    for m in "$@"; do echo "#[path = \"$WORK/gen/$m/mod.rs\"] pub mod $m;"; done
  } >"${SLOT_DIR[$s]}/src/lib.rs"
  if [ $# -gt 0 ]; then
    "$OBJECTS" dispatch "$WORK/gen" "$@" | sed "s/\bcorpus_batch::/${SLOT_CRATE[$s]}::/g" >"${SLOT_DIR[$s]}/src/main.rs"
  else
    echo 'fn main() {}' >"${SLOT_DIR[$s]}/src/main.rs"
  fi
}
# The workspace's target dir (see above). Every batch is new code, so incremental state
# would only cost time and disk; the registry dependencies reused never use it.
cargo_crate() { (cd "$WS" && CARGO_TARGET_DIR="$TARGET" CARGO_INCREMENTAL=0 cargo "$@"); }

# It also writes the CRDs it round-trips, with the corpus's path once it is done:
# hack/real-crds.sh creates them on kube-apiserver and need not write them again (two
# and a half minutes of the real stage).
rm -rf "$WORK/roundtrip-crds" "$WORK/roundtrip-crds.source"
{
  status=0
  "$TARGET/debug/examples/crd_roundtrip" --write-crds "$WORK/roundtrip-crds" "${FILES[@]}" >"$WORK/crd-roundtrip.txt" 2>&1 || status=$?
  (cd "$DIR" && pwd -P) >"$WORK/roundtrip-crds.source"
  exit "$status"
} &
crd_rt_pid=$!

# 2-4. Batches: check, doctests, round trips.
OK_FILES=()
for f in "${FILES[@]}"; do [ "${GEN[$f]}" = ok ] && OK_FILES+=("$f"); done
doctests=0; check_s=0; doc_s=0; build_s=0
slot_mods() { local f; SLOT_MODS=(); for f in "$@"; do SLOT_MODS+=("${MODULE[$f]}"); done; }
# A slot of a pair that failed to build, on its own: the library, then file by file.
check_slot() { # slot, batch number, files...
  local s=$1 n=$2 f; shift 2
  local files=("$@") good=()
  slot_mods "${files[@]}"; write_slot "$s" "${SLOT_MODS[@]}"
  if cargo_crate build --lib -q -p "${SLOT_PKG[$s]}" 2>"$WORK/logs/batch$n.check"; then
    for f in "${files[@]}"; do COMPILE[$f]=ok; done
    return
  fi
  log "batch $n failed to compile; checking its files one by one"
  for f in "${files[@]}"; do
    write_slot "$s" "${MODULE[$f]}"
    if cargo_crate build --lib -q -p "${SLOT_PKG[$s]}" 2>"$WORK/logs/${MODULE[$f]}.check"; then COMPILE[$f]=ok; else
      COMPILE[$f]=FAIL; log "compile failed: $f: $(grep -m3 -A5 '^error' "$WORK/logs/${MODULE[$f]}.check")"
    fi
  done
  for f in "${files[@]}"; do [ "${COMPILE[$f]}" = ok ] && good+=("$f"); done
  slot_mods "${good[@]}"; write_slot "$s" "${SLOT_MODS[@]}"
}
doctest_slot() { # slot, batch number, files...: any doctest found fails the batch
  local s=$1 n=$2 f ran; shift 2
  [ $# -gt 0 ] || return 0
  if cargo_crate test --doc -q -p "${SLOT_PKG[$s]}" >"$WORK/logs/batch$n.doctest" 2>&1; then
    ran=$(grep -o 'running [0-9]* tests\?' "$WORK/logs/batch$n.doctest" | awk '{s += $2} END {print s + 0}')
    doctests=$((doctests + ran))
    if [ "$ran" -gt 0 ]; then
      log "batch $n: $ran doctests found in generated code (there must be none): $(grep -m5 '^test ' "$WORK/logs/batch$n.doctest")"
      for f in "$@"; do DOCTEST[$f]=FAIL; done
    else
      for f in "$@"; do DOCTEST[$f]=ok; done
    fi
  else
    log "batch $n doctests failed: $(grep -m5 -A5 -E '^error|FAILED' "$WORK/logs/batch$n.doctest")"
    for f in "$@"; do DOCTEST[$f]=FAIL; done
  fi
}
run_slot() { # slot, batch number, files...: the round trips of the slot's runner
  local s=$1 n=$2 pattern; shift 2
  [ $# -gt 0 ] || return 0
  slot_mods "$@"
  pattern=$(printf '"module":"%s",|' "${SLOT_MODS[@]}"); pattern=${pattern%|}
  grep -E "$pattern" "$WORK/objects.jsonl" | "$TARGET/debug/${SLOT_BIN[$s]}" >>"$WORK/results.jsonl" \
    || log "batch $n: the runner failed"
}
for ((i = 0; i < ${#OK_FILES[@]}; i += 2 * BATCH)); do
  b0=("${OK_FILES[@]:i:BATCH}"); b1=("${OK_FILES[@]:i+BATCH:BATCH}")
  n0=$((i / BATCH + 1)); n1=$((n0 + 1))
  names="batch $n0"; [ "${#b1[@]}" -eq 0 ] || names="batches $n0 and $n1"
  slot_mods "${b0[@]}"; write_slot 0 "${SLOT_MODS[@]}"
  slot_mods "${b1[@]}"; write_slot 1 "${SLOT_MODS[@]}"
  t=$SECONDS
  if cargo_crate build --lib -q -p corpus-batch -p corpus-batch-b 2>"$WORK/logs/batch$n0.check"; then
    for f in "${b0[@]}" "${b1[@]}"; do COMPILE[$f]=ok; done
  else
    check_slot 0 "$n0" "${b0[@]}"
    [ "${#b1[@]}" -eq 0 ] || check_slot 1 "$n1" "${b1[@]}"
  fi
  g0=(); for f in "${b0[@]}"; do [ "${COMPILE[$f]}" = ok ] && g0+=("$f"); done
  g1=(); for f in "${b1[@]}"; do [ "${COMPILE[$f]}" = ok ] && g1+=("$f"); done
  check_s=$((check_s + SECONDS - t))
  log "$names ($((${#g0[@]} + ${#g1[@]})) files): check $((SECONDS - t))s"
  t=$SECONDS
  # `cargo test --doc` collects doctests after expansion against the libraries and
  # dependencies just built (`cargo rustdoc` would check every dependency again, in a
  # mode of its own: two minutes on a cold machine); any doctest found is a failure.
  # Both packages at once; a pair with doctests or an error is collected again one
  # package at a time, to say which batch has them.
  pair_log=$WORK/logs/batch$n0.doctest-pair
  if cargo_crate test --doc -q -p corpus-batch -p corpus-batch-b >"$pair_log" 2>&1 \
    && [ "$(grep -o 'running [0-9]* tests\?' "$pair_log" | awk '{s += $2} END {print s + 0}')" = 0 ]; then
    for f in "${g0[@]}" "${g1[@]}"; do DOCTEST[$f]=ok; done
  else
    doctest_slot 0 "$n0" "${g0[@]}"
    doctest_slot 1 "$n1" "${g1[@]}"
  fi
  doc_s=$((doc_s + SECONDS - t))
  log "$names: doctests $((SECONDS - t))s"
  t=$SECONDS
  if cargo_crate build -q -p corpus-batch -p corpus-batch-b --bins 2>"$WORK/logs/batch$n0.runner"; then
    run_slot 0 "$n0" "${g0[@]}"
    run_slot 1 "$n1" "${g1[@]}"
  else
    log "$names: the round-trip runners do not build: $(grep -m3 -A5 '^error' "$WORK/logs/batch$n0.runner")"
  fi
  build_s=$((build_s + SECONDS - t))
  log "$names: runner builds and round trips $((SECONDS - t))s"
done

echo "check_seconds=$check_s doctest_seconds=$doc_s runner_build_and_run_seconds=$build_s batch=$BATCH files=${#OK_FILES[@]}" >"$WORK/timings.txt"
log "library builds of all batches: ${check_s}s; doctest collection: ${doc_s}s; runner builds and round trips: ${build_s}s"

# 5. CRD -> Rust -> CRD (started before the batches, beside them: one core's work
# while the batches' builds wait on the linker and on each other).
set +e
wait "$crd_rt_pid"
crd_rt_status=$?
set -e
log "CRD -> Rust -> CRD round trip (beside the batches): $(tail -n 1 "$WORK/crd-roundtrip.txt")"

# Report: one line per file and version.
set +e
"$OBJECTS" compare "$WORK/objects.jsonl" "${FILES[@]}" <"$WORK/results.jsonl" >"$WORK/roundtrip.txt"
set -e
declare -A RT
while read -r name version _ status rest; do RT["$name $version"]="$status $rest"; done <"$WORK/roundtrip.txt"
for key in "${!RT[@]}"; do
  name=${key% *}; v=${key#* }; f=$DIR/$name
  rt=${RT[$key]}; [ "${rt%% *}" = ok ] && rt=ok
  echo "$name $v: generate ${GEN[$f]:-?} / compile ${COMPILE[$f]:-skipped} / doctest ${DOCTEST[$f]:-skipped} / round-trip $rt"
done | sort >"$WORK/report.txt"
cat "$WORK/report.txt"
total=${#FILES[@]}
versions=$(wc -l <"$WORK/report.txt")
versions_ok=$(grep -c 'generate ok / compile ok / doctest ok / round-trip ok$' "$WORK/report.txt" || true)
objs=$(awk '/ round-trip ok /{s += $5} / round-trip FAIL /{s += $7} END {print s + 0}' "$WORK/roundtrip.txt")
objs_bad=$(awk '/ round-trip FAIL /{s += $5} END {print s + 0}' "$WORK/roundtrip.txt")
gen_ok=0; comp_ok=0; doc_ok=0
for f in "${FILES[@]}"; do
  [ "${GEN[$f]}" = ok ] && gen_ok=$((gen_ok + 1))
  [ "${COMPILE[$f]:-}" = ok ] && comp_ok=$((comp_ok + 1))
  [ "${DOCTEST[$f]:-}" = ok ] && doc_ok=$((doc_ok + 1))
done
echo "CRD -> Rust -> CRD, per file (identical versions / versions):"
grep -v '^round trip:' "$WORK/crd-roundtrip.txt" || true
crd_rt=$(grep '^round trip:' "$WORK/crd-roundtrip.txt" | sed 's/^round trip: \([0-9]*\/[0-9]*\).*/\1/')
echo "summary: files $total; generate $gen_ok/$total, compile $comp_ok/$total, doctest $doc_ok/$total ($doctests doctests ran);" \
  "versions $versions_ok/$versions passing; round-trip objects $((objs - objs_bad))/$objs;" \
  "CRD -> Rust -> CRD versions identical ${crd_rt:-0/0}; $((SECONDS - start_all))s"
[ "$gen_ok" = "$total" ] && [ "$comp_ok" = "$total" ] && [ "$doc_ok" = "$total" ] \
  && [ "$versions_ok" = "$versions" ] && [ "$objs_bad" = 0 ] && [ "$objs" -gt 0 ] \
  && [ "$crd_rt_status" = 0 ]
