//! kubegen's model of an API (the IR) and one emitter per generated artifact.
//!
//! Data flows one way: an input (CRD YAML, Rust types with `+genclient` markers or
//! kube-derive attributes, a description of built-in kinds) fills a [`model::Api`];
//! [`validate::validate`] checks it; [`emit::generate`] (one file per module) or
//! [`emit::generate_single_file`] (for `include!`) turns it into formatted Rust.
//! Everything here is a pure function of its arguments: no IO, no clock, no randomness,
//! so the same model always yields byte-identical files.
//!
//! - [`model`]: groups -> versions -> kinds, and the type definitions of each version;
//! - [`emit`]: `types.rs`, `register.rs`, `zz_generated_deepcopy.rs`, the clientset,
//!   listers, informer factory, fake clientset and the `mod.rs` files, each as
//!   `TokenStream` -> prettyplease -> `String`;
//! - [`docs`]: schema descriptions -> doc comments that never run as doctests;
//! - [`markers`]: the marker registry (every marker kubegen reads or writes, defined once);
//! - [`names`]: Rust identifiers from wire names (keywords, case, collisions);
//! - [`validate`]: the model's guarantees, checked before emitting.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod docs;
pub mod emit;
pub mod markers;
pub mod model;
pub mod names;
pub mod schema;
pub mod validate;
