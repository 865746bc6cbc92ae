//! The vocabulary stores and FIFOs share: how an object is keyed, how it is transformed
//! before it is kept, and what a FIFO may ask of the objects its consumer holds.
//!
//! Contract: these are plain types with no behaviour of their own; `cache::store`,
//! `cache::delta_fifo` and `cache::real_fifo` name them from here (and re-export them
//! under their old paths), so neither of those modules imports the other's vocabulary.

use std::sync::Arc;

/// Computes the key an object is stored under; the DeltaFIFOs use the same type.
pub type KeyFunc<T> = Arc<dyn Fn(&T) -> Result<String, KeyError> + Send + Sync>;

/// A key could not be computed for an object (client-go's `KeyError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("couldn't create key for object: {reason}")]
pub struct KeyError {
    /// Why.
    pub reason: String,
}

impl KeyError {
    /// A key error with the given reason.
    pub fn new(reason: impl Into<String>) -> Self {
        KeyError {
            reason: reason.into(),
        }
    }
}

/// Rewrites an object before it is stored (client-go's `TransformFunc`), e.g. to drop
/// `managedFields` and save memory.
pub type TransformFunc<T> = Arc<dyn Fn(Arc<T>) -> Result<Arc<T>, TransformError> + Send + Sync>;

/// A transform for objects of any type, as a factory applies one to every informer it
/// makes: it gets each object as `Arc<dyn Any>`, downcasts to the types it cares about,
/// and returns the object (changed or not) as the same type.
pub type AnyTransformFunc = TransformFunc<dyn std::any::Any + Send + Sync>;

/// A transformer rejected an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TransformError {
    /// What went wrong.
    pub message: String,
}

impl TransformError {
    /// A transform error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        TransformError {
            message: message.into(),
        }
    }
}

/// The objects an informer already holds (client-go's `KeyListerGetter`); in an informer
/// this is its indexer. The FIFO consults them to emit deletions and resyncs.
///
/// The FIFO calls these methods while holding its own lock: an implementation must never
/// call into the FIFO.
pub trait KnownObjects<T>: Send + Sync {
    /// The keys of every known object.
    fn list_keys(&self) -> Vec<String>;
    /// The known object with this key, if any.
    fn get_by_key(&self, key: &str) -> Option<Arc<T>>;
}
