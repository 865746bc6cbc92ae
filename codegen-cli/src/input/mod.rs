//! Inputs that fill the model: CRD YAML ([`crd`]), Rust source (`rust`) and a
//! description of the built-in API ([`builtin`]), each
//! producing [`VersionPart`]s that [`assemble`](assemble::assemble) merges into one
//! model, input-neutrally.

pub mod assemble;
pub mod builtin;
pub mod crd;
pub mod rust;

pub use assemble::{assemble, group_modules, VersionPart};
