#!/usr/bin/env bash
# Usage: hack/real-tests.sh [CARGO_TEST_ARGS...]
#
# Runs the workspace's real-control-plane tests (the `#[ignore]`d ones; each starts its
# own etcd + kube-apiserver through testing::envtest) with several test binaries at once.
# `cargo test -- --ignored` runs one binary after another, and these tests mostly wait
# (a control plane starting, a CRD becoming established, a webhook configuration being
# picked up), so running binaries side by side shortens the stage without changing what
# runs: every binary is run as cargo runs it (from its package directory, with
# CARGO_MANIFEST_DIR and CARGO_PKG_NAME set), its output kept and printed in full.
#
# Environment: REAL_TEST_JOBS (binaries at once, default 3), REAL_TEST_THREADS (tests at
# once per binary, default 6), KUBEGEN_ENVTEST_ASSETS (the control plane's binaries).
# Exits 1 when any test fails; prints one line per binary with its result and time.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${REAL_TEST_JOBS:-3}
THREADS=${REAL_TEST_THREADS:-6}
out=$(mktemp -d "${TMPDIR:-/tmp}/kubegen-real-tests.XXXXXX")
trap 'rm -rf "$out"' EXIT

# Build every test binary (as the fast stage did: nothing to compile after it) and list
# each one's executable and package directory.
cargo test --workspace --tests --no-run --message-format=json "$@" \
  | python3 -c '
import json, os, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        url, _, frag = m["package_id"].partition("#")
        name = frag.split("@")[0] if "@" in frag else url.rstrip("/").rsplit("/", 1)[-1]
        print(m["executable"], os.path.dirname(m["manifest_path"]), name, sep="\t")
' >"$out/binaries"

# Keep the binaries that have ignored tests.
: >"$out/run"
while IFS=$'\t' read -r exe dir pkg; do
  n=$("$exe" --list --ignored --format terse 2>/dev/null | grep -c ': test$' || true)
  [ "$n" -gt 0 ] && printf '%s\t%s\t%s\t%s\n' "$n" "$exe" "$dir" "$pkg" >>"$out/run"
done <"$out/binaries"
# The binaries with the most tests first: the longest runs start early.
sort -rn -o "$out/run" "$out/run"
echo "real-tests: $(awk -F'\t' '{s += $1} END {print s + 0}' "$out/run") tests in $(wc -l <"$out/run") binaries, $JOBS binaries at once, $THREADS tests at once in each"

run_one() { # index, count, exe, dir, pkg
  local i=$1 exe=$3 dir=$4 pkg=$5 start=$SECONDS status=0
  (cd "$dir" && CARGO=$(command -v cargo) CARGO_MANIFEST_DIR=$dir CARGO_PKG_NAME=$pkg \
    "$exe" --ignored --test-threads="$THREADS") >"$out/$i.log" 2>&1 || status=$?
  echo "$status $((SECONDS - start))" >"$out/$i.status"
}
export -f run_one
export out THREADS
i=0
while IFS=$'\t' read -r n exe dir pkg; do
  i=$((i + 1))
  printf '%s\0%s\0%s\0%s\0%s\0' "$i" "$n" "$exe" "$dir" "$pkg"
done <"$out/run" | xargs -0 -n 5 -P "$JOBS" bash -c 'run_one "$@"' _

failed=0; i=0
while IFS=$'\t' read -r n exe dir pkg; do
  i=$((i + 1))
  read -r status secs <"$out/$i.status"
  echo "----- $(basename "$exe") ($pkg, $n tests): exit $status in ${secs}s"
  cat "$out/$i.log"
  [ "$status" = 0 ] || failed=$((failed + 1))
done <"$out/run"
if [ "$failed" -gt 0 ]; then
  echo "real-tests: $failed test binaries failed" >&2
  exit 1
fi
echo "real-tests: all passed"
