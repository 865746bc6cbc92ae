#!/usr/bin/env bash
# Runs every test of the workspace, in stages, printing each stage's time.
# `hack/test.sh all` is the README's test command; .ci/run runs it after the fmt and
# clippy checks.
#
# Usage: hack/test.sh [fast|corpus|real|all]   (default all: what CI runs)
#   fast:   SEMANTICS coverage, unit and integration tests (goldens included), kubectl
#           against kubegen-apiserver (hack/kubectl-e2e.sh), client-go against it
#           (hack/go-conformance.sh), kubegen crd against controller-gen
#           (hack/controller-gen-compare.sh), a short fuzz run (hack/fuzz.sh), verify.
#   corpus: hack/check-corpus.sh on the real-CRD corpus, CORPUS_DIR (default
#           ../shared/crds): generate, compile, doctest, round-trip every file and version.
#   real:   a real kube-apiserver + etcd + controller manager (hack/real-apiserver.sh,
#           built once into target/ from the Go module proxy): every CRD kubegen writes
#           created on it (hack/real-crds.sh), the end-to-end suites' real-server tests
#           (the `#[ignore]`d ones, `-- --ignored`), the differential suite.
#   all:    fast, then corpus, then real, then fast's fuzz run (its build runs in the
#           background during the real stages, on their idle CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
case $what in fast|corpus|real|all) ;; *) echo "usage: hack/test.sh [fast|corpus|real|all]" >&2; exit 2;; esac

stage() {
  local name=$1; shift
  local start=$SECONDS
  echo "=== stage: $name"
  "$@"
  echo "=== stage: $name took $((SECONDS - start))s ($(df -Pk . | awk 'NR == 2 {printf "%.1f GiB", $4 / 1048576}') of disk free)"
}

# Features: one list for every stage (hack/features.sh).
. hack/features.sh
FEATURES=$KUBEGEN_TEST_FEATURES
# The crates published to the registry; every other member has `publish = false`.
PUBLISHED="-p kubegen-apimachinery -p kubegen-apiserver -p kubegen-templates -p kubegen -p kubegen-runtime -p kubegen-kubernetes"

# The instrumented fuzz build (its own profile and target dir, nothing shared with the
# test build: 281 CPU-seconds cold) runs in the background at the lowest priority and
# gets what the other stages leave idle; the fuzz stage waits for the rest and says how
# long it waited. `fast` starts it first. `all` starts it once the real control plane is
# built, so that it takes the real stages' idle CPU (they mostly wait on control planes)
# and not the CPU the control plane's own background Go build needs before them: started
# first, it made that build finish late, and the real stage waited 149 s for it.
start_fuzz_build() {
  mkdir -p target
  # Its own process group (job control on for this one job), so that an early exit
  # stops cargo and rustc with it. Not its own session: with the kernel's autogroup
  # scheduling, a new session gets a fair share of the CPU whatever its nice level (a
  # setsid'd build took half the machine and slowed the test stage by five minutes).
  set -m
  FUZZ_BUILD_ONLY=1 FUZZ_NICE=19 hack/fuzz.sh >target/fuzz-build.log 2>&1 &
  fuzz_build=$!
  set +m
  trap 'kill -- -"$fuzz_build" 2>/dev/null || true' EXIT
}
fuzz_stage() {
  local start=$SECONDS
  wait "$fuzz_build" || echo "the background fuzz build failed (target/fuzz-build.log); building again"
  trap - EXIT
  echo "fuzz: waited $((SECONDS - start))s for the background build"
  env FUZZ_SECONDS=5 hack/fuzz.sh
}

if [ "$what" = fast ] || [ "$what" = all ]; then
  if [ "$what" = fast ]; then start_fuzz_build; fi
  # Every SEMANTICS case of the sections built so far is named in a test or listed in
  # docs/SEMANTICS-NA.md.
  stage "SEMANTICS coverage" hack/semantics-coverage.sh 1 2 3 4 5 6 7 8 9 10 11 12 13 14
  stage "unit and integration tests" cargo test --workspace --locked --features "$FEATURES"
  # Build scripts depend on kubegen with default-features = false: the library must
  # build without the CLI (clap).
  stage "kubegen without its CLI" cargo check -q -p kubegen --no-default-features --locked
  # The crates meant for the registry package: manifests, versions on path
  # dependencies, metadata, file lists (seconds). --no-verify: verifying rebuilds every
  # crate from its .crate file alone, minutes of CI; the release checklist in
  # CHANGELOG.md runs it before publishing.
  stage "cargo package" cargo package --locked --no-verify --allow-dirty $PUBLISHED
  stage "kubectl e2e" hack/kubectl-e2e.sh
  stage "client-go conformance" hack/go-conformance.sh
  stage "kubegen crd against controller-gen" hack/controller-gen-compare.sh
  # Coverage-guided fuzzing, a few seconds per target from the checked-in corpus
  # (cargo test above replays its named seeds and past findings; see fuzz/README.md).
  # A build that failed in the background is redone in the foreground, with its errors.
  # With `all`, the fuzz run comes last (see start_fuzz_build).
  if [ "$what" = fast ]; then
    stage "fuzz (5 s per target)" fuzz_stage
  fi
  if [ -x hack/verify-codegen.sh ]; then
    stage "verify generated code is current" hack/verify-codegen.sh
  fi
fi

corpus=${CORPUS_DIR:-../shared/crds}
if [ "$what" = corpus ] || [ "$what" = all ]; then
  [ -d "$corpus" ] || { echo "corpus directory $corpus not found (from $PWD); set CORPUS_DIR" >&2; exit 1; }
  stage "corpus (hack/check-corpus.sh)" hack/check-corpus.sh "$corpus"
fi

if [ "$what" = real ] || [ "$what" = all ]; then
  # Built once per pinned version into target/real-apiserver (cold: ~5 min on 2 cores;
  # cached: nothing to do).
  stage "real control plane (hack/real-apiserver.sh build)" hack/real-apiserver.sh build
  eval "$(hack/real-apiserver.sh env)"
  export KUBEGEN_ENVTEST_ASSETS
  if [ "$what" = all ]; then start_fuzz_build; fi
  stage "every CRD kubegen writes, on kube-apiserver (hack/real-crds.sh)" hack/real-crds.sh "$corpus"
  # The tests that need a control plane are #[ignore]d in a plain `cargo test` and are
  # exactly the ignored ones: each starts its own (testing::envtest). They mostly wait
  # on their control planes (webhook configurations picked up, CRDs established), so
  # hack/real-tests.sh runs three test binaries at once, six tests at a time in each
  # (cargo test runs binaries one after another: 275 s with four threads per binary).
  stage "end-to-end suites on a real kube-apiserver (hack/real-tests.sh)" \
    hack/real-tests.sh --locked --features "$FEATURES"
  # The same requests to the in-memory server and to kube-apiserver; fails on a
  # difference not in tests/differential/known-differences.txt (report:
  # docs/differential.md, rewritten by the run).
  stage "differential suite (hack/differential.sh)" env CRD_CORPUS="$corpus" hack/differential.sh
fi

if [ "$what" = all ]; then
  stage "fuzz (5 s per target)" fuzz_stage
fi
