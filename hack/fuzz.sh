#!/usr/bin/env bash
# Coverage-guided fuzzing on the stable toolchain: libFuzzer (libfuzzer-sys, built from
# its vendored C++ sources) driving the targets of fuzz/, compiled with LLVM's
# SanitizerCoverage through stable rustc codegen flags (`-Cpasses=sancov-module`).
# cargo-fuzz is not needed: it would only add nightly's address sanitizer, which
# stable rustc cannot build.
#
# Usage: hack/fuzz.sh [TARGET...]       (default: every target in fuzz/corpus/)
#   FUZZ_SECONDS  seconds per target (default 10; hack/test.sh runs 5 per target)
#   FUZZ_MERGE=1  after the run, merge new coverage-increasing inputs into the checked-in
#                 corpus fuzz/corpus/TARGET (minimised by libFuzzer's -merge)
#   FUZZ_NICE     nice level of the build and the runs (default 15)
#   FUZZ_JOBS     targets run at once (default: the number of cores)
#   FUZZ_OPTIMIZED_DEPS=1  build every dependency at opt-level 1 too. The fuzz profile
#                 leaves most unoptimised, which halves a cold build (CI's 5-second runs);
#                 a long campaign runs 2-3x the inputs per second with them optimised
#   FUZZ_BUILD_ONLY=1  build the targets and stop (hack/test.sh starts this early, in
#                 the background, niced; the fuzz stage's own build then waits on
#                 cargo's lock of target/fuzz and finds everything built)
#
# Each target runs on a scratch copy of its corpus; a crash, hang (-timeout) or
# memory blow-up (-rss_limit_mb) fails the script and leaves the input in
# target/fuzz/artifacts/TARGET/. Replay one with
#   target/fuzz/x86_64-unknown-linux-gnu/fuzz/TARGET FILE
# and add it to fuzz/corpus/TARGET/ with its fix (cargo test replays the corpus).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-10}
nice_level=${FUZZ_NICE:-15}
host=$(rustc -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}/fuzz

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi

optimized_deps=()
if [ "${FUZZ_OPTIMIZED_DEPS:-}" = 1 ]; then
  optimized_deps=(--config 'profile.fuzz.package."*".opt-level=1')
fi
# --target keeps build scripts and proc macros uninstrumented (they run at build time,
# without libFuzzer's runtime to resolve the coverage callbacks).
RUSTFLAGS="-Cpasses=sancov-module \
  -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
  -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares" \
  nice -n "$nice_level" cargo build --locked --quiet "${optimized_deps[@]}" -p kubegen-fuzz --features libfuzzer \
    --profile fuzz --target "$host" $(printf -- '--bin %s ' "${targets[@]}")

if [ "${FUZZ_BUILD_ONLY:-}" = 1 ]; then
  echo "fuzz: built ${#targets[@]} targets in ${SECONDS}s"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One target's run; its output goes to $work/TARGET.out, its verdict to $work/TARGET.rc.
run_target() {
  local t=$1 bin=$CARGO_TARGET_DIR/$host/fuzz/$1 artifacts=$CARGO_TARGET_DIR/artifacts/$1
  local max_len
  mkdir -p "$work/$t" "$artifacts"
  # The watch decoder's and the readers' interesting inputs are larger than
  # libFuzzer's default 4 KiB (the decoder splits buffers over 32 KiB).
  case $t in
    watch_decoder) max_len=70000;;
    *) max_len=16384;;
  esac
  {
    echo "--- fuzz: $t for ${seconds}s"
    if nice -n "$nice_level" "$bin" "$work/$t" "fuzz/corpus/$t" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
        -artifact_prefix="$artifacts/" -print_final_stats=1 >"$work/$t.log" 2>&1; then
      # The last status line (coverage, corpus size, exec/s), then the totals.
      grep -E '^#[0-9]+' "$work/$t.log" | tail -n 1 || true
      grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$work/$t.log" || true
      echo 0 >"$work/$t.rc"
    else
      tail -n 60 "$work/$t.log"
      echo "--- fuzz: $t FAILED; inputs in $artifacts"
      echo 1 >"$work/$t.rc"
    fi
  } >"$work/$t.out" 2>&1
}

# Targets run FUZZ_JOBS at a time (default: one per core; each libFuzzer process is
# single-threaded), their reports printed in order once all have ended.
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
failed=()
for t in "${targets[@]}"; do
  cat "$work/$t.out"
  [ "$(cat "$work/$t.rc" 2>/dev/null || echo 1)" = 0 ] || failed+=("$t")
done

# Inputs merged into the checked-in corpus are cut to a few KiB (the hand-written seeds,
# like the decoder's large-split or the reader's deep nesting, keep the big cases):
# full-size merges grew the corpus to tens of megabytes for a little more coverage.
if [ "${FUZZ_MERGE:-}" = 1 ]; then
  for t in "${targets[@]}"; do
    case $t in
      selectors) merge_len=1024;;
      *) merge_len=4096;;
    esac
    nice -n "$nice_level" "$CARGO_TARGET_DIR/$host/fuzz/$t" -merge=1 -max_len="$merge_len" -timeout=10 \
      "fuzz/corpus/$t" "$work/$t" >"$work/$t.merge.log" 2>&1 ||
      { tail -n 20 "$work/$t.merge.log"; failed+=("$t (merge)"); }
  done
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets ran ${seconds}s each with no crash"
