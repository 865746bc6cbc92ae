//! kubegen's model of an API (the IR) and one emitter per generated artifact.
//!
//! Being built: see the project's issues.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
