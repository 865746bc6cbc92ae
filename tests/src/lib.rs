//! kubegen's cross-crate tests live in `tests/tests/`.
//!
//! The library mounts the golden tree generated from `fixtures/crds` (by
//! `hack/update-codegen.sh`) as [`golden`], so the workspace's clippy run, `cargo test`
//! (including `--doc`: no description may become a doctest) and rustdoc all check
//! generated code exactly as a user's crate would compile it. Tests use its types.

#[path = "../../fixtures/golden/mod.rs"]
pub mod golden;

/// The sample-controller tree as a build script writes it (`kubegen::Builder`, one file
/// for `include!`), mounted privately and left unused: generated code must build
/// warning-free however a user mounts it, and clippy's `-D warnings` run over this
/// crate checks exactly that.
mod private_mount {
    include!(concat!(env!("OUT_DIR"), "/samplecontroller.rs"));
}
