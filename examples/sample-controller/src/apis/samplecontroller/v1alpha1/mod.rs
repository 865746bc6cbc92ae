//! Package v1alpha1 is the v1alpha1 version of the API.
//!
//! +groupName=samplecontroller.k8s.io
pub mod types;

pub use self::types::*;
