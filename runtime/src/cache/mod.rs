//! client-go's cache machinery: the thread-safe store and indexer, listers, the FIFOs
//! between a reflector and an informer, shared informers and their factory. The main
//! types are re-exported here (`cache::SharedIndexInformer`, `cache::InformerFactory`).
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::Pod;
//! use kubegen_runtime::cache::{FactoryOptions, InformerFactory, Lister, SharedIndexInformer};
//! use tokio_util::sync::CancellationToken;
//!
//! let factory = InformerFactory::new(client, FactoryOptions::new(Duration::ZERO));
//! let pods: SharedIndexInformer<Pod> = factory.informer::<Pod>();
//! let lister: Lister<Pod> = pods.lister();
//! let stop = CancellationToken::new();
//! factory.start(&stop);
//! kubegen_runtime::cache::wait_for(&stop, &[pods.done_checker()]).await.unwrap();
//! println!("{} pods", lister.list(&Default::default()).len());
//! # }
//! ```
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

// The types most programs name, here too: `cache::SharedIndexInformer`,
// `cache::InformerFactory`, `cache::Lister`, ... (each module keeps its own path).
pub use delta_fifo::{Delta, DeltaFifo, DeltaObject, DeltaType, Deltas};
pub use done::{wait_for, DoneChecker, DoneSignal, NotDone};
pub use factory::{FactoryOptions, GenericInformer, InformerFactory};
pub use informer::{
    FifoKind, FilteringResourceEventHandler, InformerError, InformerMetrics, InformerOptions,
    ResourceEventHandler, ResourceEventHandlerFuncs, ResourceEventHandlerRegistration,
    SharedIndexInformer,
};
pub use keys::{AnyTransformFunc, KeyError, KeyFunc, KnownObjects, TransformError, TransformFunc};
pub use lister::{GenericLister, Lister, NamespaceLister};
pub use real_fifo::RealFifo;
pub use reflector::{ListerWatcher, Reflector, ReflectorError, ReflectorOptions};
pub use store::{IndexFunc, Indexer, Indexers, ReadOnlyIndexer, StoreError, ThreadSafeStore};
// The earlier names, deprecated (every options type is `*Options` now).
#[allow(deprecated)]
pub use informer::InformerConfig;
#[allow(deprecated)]
pub use reflector::ReflectorConfig;

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
