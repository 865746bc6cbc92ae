//! The sample-controller API, written as Rust types (kubegen generates the rest).
pub mod samplecontroller;
