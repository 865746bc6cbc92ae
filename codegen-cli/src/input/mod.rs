//! Inputs that fill the model: CRD YAML ([`crd`]) and Rust source ([`rust`]), each
//! producing [`VersionPart`]s that [`assemble`](assemble::assemble) merges into one
//! model, input-neutrally.

pub mod assemble;
pub mod crd;
pub mod rust;

pub use assemble::{assemble, group_modules, VersionPart};
