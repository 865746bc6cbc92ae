//! The Kubernetes API `Status` as an error, classified as apimachinery classifies it.
//!
//! Everything but [`AsStatusError`] is [`kubegen_apimachinery::errors`], re-exported here
//! at its historical path (the in-memory API server shares it without depending on the
//! runtime); see that module for the contract. [`AsStatusError`] stays here because it
//! looks inside the runtime's own [`crate::client::Error`].

pub use kubegen_apimachinery::errors::*;

/// An error that may carry an API [`StatusError`], possibly wrapped: what apimachinery's
/// `errors.IsXxx` functions look for with `errors.As`. [`crate::retry::retry_on_conflict`]
/// classifies through it.
pub trait AsStatusError {
    /// The API error inside, if there is one.
    fn as_status_error(&self) -> Option<&StatusError>;
}

impl AsStatusError for StatusError {
    fn as_status_error(&self) -> Option<&StatusError> {
        Some(self)
    }
}

impl AsStatusError for crate::client::Error {
    fn as_status_error(&self) -> Option<&StatusError> {
        self.status()
    }
}

/// Walks the `source()` chain for a [`StatusError`] or a [`crate::client::Error`] that
/// holds one.
impl AsStatusError for Box<dyn std::error::Error + Send + Sync> {
    fn as_status_error(&self) -> Option<&StatusError> {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(self.as_ref());
        while let Some(e) = cur {
            if let Some(s) = e.downcast_ref::<StatusError>() {
                return Some(s);
            }
            if let Some(s) = e
                .downcast_ref::<crate::client::Error>()
                .and_then(crate::client::Error::status)
            {
                return Some(s);
            }
            cur = e.source();
        }
        None
    }
}
