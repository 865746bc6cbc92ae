//! kubegen: generates Rust types, clientsets, listers and informers from CRDs.
//!
//! Being built: see the project's issues.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
