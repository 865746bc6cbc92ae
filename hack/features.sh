# Sourced by .ci/run and the hack/ stage scripts: the cargo features every stage builds
# the workspace with, in one place, so that the stages reuse one build (a crate built with
# another feature set is compiled again). Never --all-features: k8s-openapi would get two
# Kubernetes versions.
KUBEGEN_TEST_FEATURES=${KUBEGEN_TEST_FEATURES:-kubegen-runtime/testing,kubegen-runtime/prometheus,kubegen-runtime/webhook}
export KUBEGEN_TEST_FEATURES

# Binaries and examples of the workspace, built the way the test stage builds them, so
# a script reuses that build. Cargo resolves features for what a command builds:
# `cargo run -p kubegen` resolves them for kubegen alone, and a build of binaries only
# leaves out dev-dependencies (whose features `cargo test` unifies in). Either means
# another build of a third of the dependency graph, a minute of a cold CI run. The one
# example always named makes cargo resolve dev-dependencies, as `cargo test` does.
# Usage: workspace_build [--bin NAME] [--example NAME]...; kubegen_build adds kubegen's
# CLI. Then run "$KUBEGEN_TARGET/debug/NAME" or "$KUBEGEN_TARGET/debug/examples/NAME".
KUBEGEN_TARGET=${CARGO_TARGET_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target}
workspace_build() {
  cargo build --locked -q --workspace --features "$KUBEGEN_TEST_FEATURES" --example crd_roundtrip "$@"
}
kubegen_build() { workspace_build --bin kubegen "$@"; }
