//! client-go's cache machinery: the thread-safe store and indexer, listers, and the
//! DeltaFIFO between a reflector and an informer.
//!
//! Contract: objects in the cache are shared as `Arc<T>` and never mutated in place;
//! whoever holds one holds an immutable snapshot of the object at the time it was stored.

use std::sync::Arc;

pub mod delta_fifo;
pub mod done;
pub mod dynamic;
pub mod factory;
pub mod informer;
pub mod keys;
pub mod lister;
pub mod projection;
pub mod real_fifo;
pub mod reflector;
pub mod store;
#[cfg(test)]
pub(crate) mod test_support;

/// The last known state of an object whose deletion was missed (client-go's
/// `DeletedFinalStateUnknown`): the watch that would have reported it was lost, and a
/// relist found the object gone. `obj` may be stale, or `None` when nothing was known.
#[derive(Debug, Clone, PartialEq)]
pub struct DeletedFinalStateUnknown<T> {
    /// The key the object was stored under.
    pub key: String,
    /// The last known state, if any.
    pub obj: Option<Arc<T>>,
}
