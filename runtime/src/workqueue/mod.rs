//! client-go's workqueue: the queue between event handlers and a controller's workers.
//!
//! Event handlers add keys; workers take them with [`Queue::get`], reconcile, and hand them
//! back with [`Queue::done`]. Three layers, each a handle that is cheap to clone (all
//! clones share one queue) and each usable where the layer below is expected through
//! `Deref`:
//!
//! - [`Queue`]: the basic queue. It guarantees, as invariants of every interleaving:
//!   1. **one worker per item**: an item handed out by `get` is not handed out again
//!      until `done` is called for it;
//!   2. **one re-run per burst**: adds of an item while it is being processed coalesce
//!      into exactly one more hand-out, after `done`;
//!   3. **dedup while queued**: adding an item that is already waiting does nothing
//!      (its place in line is kept);
//!   4. **nothing lost**: every add accepted before shutdown is followed by a hand-out,
//!      including after shutdown: `get` keeps returning queued items and only then
//!      returns `None`.
//! - [`DelayingQueue`]: adds [`DelayingQueue::add_after`]; an item waiting for its time
//!   keeps the earliest one asked for; shutdown drops items still waiting.
//! - [`RateLimitingQueue`]: adds [`RateLimitingQueue::add_rate_limited`],
//!   [`RateLimitingQueue::forget`] and [`RateLimitingQueue::num_requeues`], delegating the
//!   delay to a [`RateLimiter`] (see [`rate_limiter`] for client-go's limiters and
//!   defaults).
//!
//! What it does not do: it does not retry by itself (a worker calls `add_rate_limited` on
//! failure and `forget` on success), it does not time out workers that never call `done`,
//! and it holds items, not objects: queue keys, as client-go does.
//!
//! All waiting is on `tokio::time`, so a test drives delays with a paused clock
//! (`#[tokio::test(start_paused = true)]` and `tokio::time::advance`). The queue starts no
//! task of its own for delays: waiting items move into the queue as soon as their time has
//! come and anyone looks (any call on the queue, or a worker waiting in `get`, which sleeps
//! until the earliest ready time). Only a named queue with a metrics provider starts one
//! task, on its first `get`: the 500 ms refresh of the unfinished-work gauges; it ends at
//! shutdown or when the last handle is dropped.
//!
//! Metrics (client-go's names, see [`metrics`]) are reported only for queues that have a
//! name *and* a [`MetricsProvider`] in their [`QueueOptions`].
//!
//! ```
//! use kubegen_runtime::workqueue::{QueueOptions, RateLimitingQueue};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let queue = RateLimitingQueue::with_config(QueueOptions::default().name("foos"));
//! queue.add("default/foo".to_string());
//!
//! let worker = {
//!     let queue = queue.clone();
//!     tokio::spawn(async move {
//!         while let Some(key) = queue.get().await {
//!             // reconcile `key`; on success forget its failures, on error retry later
//!             queue.forget(&key);
//!             queue.done(&key);
//!         }
//!     })
//! };
//! queue.shut_down_with_drain().await;
//! worker.await.unwrap();
//! # }
//! ```

mod delaying;
pub mod metrics;
mod queue;
pub mod rate_limiter;
mod rate_limiting;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

pub use delaying::DelayingQueue;
pub use metrics::MetricsProvider;
pub use queue::{Queue, QueueStorage};
pub use rate_limiter::{
    default_controller_rate_limiter, default_item_based_rate_limiter, BucketRateLimiter,
    ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
    WithMaxWaitRateLimiter,
};
pub use rate_limiting::RateLimitingQueue;

/// The earlier name of [`QueueOptions`]: the runtime names every options type `*Options`.
#[deprecated(since = "0.1.0", note = "renamed to `QueueOptions`")]
pub type QueueConfig<T> = QueueOptions<T>;

/// How to build a queue: name, metrics provider, rate limiter and storage.
///
/// A plain value with builder methods; every part is optional. [`Queue::with_config`] and
/// [`DelayingQueue::with_config`] use the name, the metrics provider and the storage;
/// [`RateLimitingQueue::with_config`] also uses the rate limiter
/// ([`default_controller_rate_limiter`] when none is set).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use kubegen_runtime::workqueue::metrics::NoopMetricsProvider;
/// use kubegen_runtime::workqueue::{
///     ItemExponentialFailureRateLimiter, QueueOptions, RateLimitingQueue,
/// };
///
/// let config = QueueOptions::default()
///     .name("foos")
///     .metrics_provider(Arc::new(NoopMetricsProvider))
///     .rate_limiter(ItemExponentialFailureRateLimiter::new(
///         Duration::from_millis(5),
///         Duration::from_secs(60),
///     ));
/// let queue: RateLimitingQueue<String> = RateLimitingQueue::with_config(config);
/// assert_eq!(queue.len(), 0);
/// ```
pub struct QueueOptions<T> {
    pub(crate) name: Option<String>,
    pub(crate) metrics_provider: Option<Arc<dyn MetricsProvider>>,
    pub(crate) rate_limiter: Option<Arc<dyn RateLimiter<T>>>,
    pub(crate) storage: Option<Box<dyn QueueStorage<T>>>,
}

impl<T> Default for QueueOptions<T> {
    fn default() -> Self {
        Self {
            name: None,
            metrics_provider: None,
            rate_limiter: None,
            storage: None,
        }
    }
}

impl<T> QueueOptions<T> {
    /// Names the queue: the `name` label of its metrics. An unnamed queue has no metrics.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Where a named queue reports its metrics (client-go's `MetricsProvider`). Without
    /// one, no metrics are kept.
    #[must_use]
    pub fn metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = Some(provider);
        self
    }

    /// The rate limiter of a [`RateLimitingQueue`] (ignored by the other queues).
    #[must_use]
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.rate_limiter = Some(Arc::new(limiter));
        self
    }

    /// Replaces the FIFO that holds waiting items (client-go's `Queue` interface), for
    /// example to reorder items by priority. The default is a `VecDeque`.
    #[must_use]
    pub fn storage(mut self, storage: impl QueueStorage<T> + 'static) -> Self {
        self.storage = Some(Box::new(storage));
        self
    }
}

impl<T> fmt::Debug for QueueOptions<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueOptions")
            .field("name", &self.name)
            .field("metrics_provider", &self.metrics_provider.is_some())
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("storage", &self.storage.is_some())
            .finish()
    }
}
