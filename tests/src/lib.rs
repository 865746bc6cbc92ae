//! kubegen's cross-crate tests live in `tests/tests/`.
//!
//! The library mounts the golden tree generated from `fixtures/crds` (by
//! `hack/update-codegen.sh`) as [`golden`], so the workspace's clippy run, `cargo test`
//! (including `--doc`: no description may become a doctest) and rustdoc all check
//! generated code exactly as a user's crate would compile it. Tests use its types.
//! The same holds for Rust input: [`apis`] (fixtures/rust) and [`golden_rust`], the
//! tree generated from it.

#[path = "../../fixtures/golden/mod.rs"]
pub mod golden;

// The hand-written API types of fixtures/rust, mounted where the generated tree names
// them (--types-path crate::apis), as in a user's crate. (Plain comments: outer docs
// here would make rustdoc resolve the modules' own intra-doc links from this scope.)
#[path = "../../fixtures/rust/mod.rs"]
pub mod apis;

// The tree generated from `apis` (fixtures/golden-rust).
#[path = "../../fixtures/golden-rust/mod.rs"]
pub mod golden_rust;

/// The sample-controller tree as a build script writes it (`kubegen::Builder`, one file
/// for `include!`), mounted privately and left unused: generated code must build
/// warning-free however a user mounts it, and clippy's `-D warnings` run over this
/// crate checks exactly that.
mod private_mount {
    include!(concat!(env!("OUT_DIR"), "/samplecontroller.rs"));
}

/// The hand-written half of the `convert.example.com` conversions (fixtures/crds
/// /conversion.yaml): v1beta1's `spec.size` is v1's `spec.replicas`, a renamed field
/// kubegen leaves to the crate (manual conversion required).
mod manual_conversions {
    use crate::golden::apis::convert::{v1, v1beta1};
    use kubegen_runtime::conversion::ConversionError;

    impl v1beta1::conversion::ManualConversion for v1beta1::conversion::Conversion {
        fn shape_spec_replicas_to_v1(
            from: &v1beta1::ShapeSpec,
        ) -> Result<Option<i32>, ConversionError> {
            Ok(from.size)
        }

        fn shape_spec_size_to_v1beta1(
            from: &v1::ShapeSpec,
        ) -> Result<Option<i32>, ConversionError> {
            Ok(from.replicas)
        }
    }
}
