//! The rate-limiting queue: a [`DelayingQueue`] that asks a [`RateLimiter`] how long a
//! failed item waits before its retry.
//!
//! Contract: `add_rate_limited(x)` is exactly `add_after(x, limiter.when(x))` (so it counts
//! a try even when the queue is shutting down, as in client-go); `forget(x)` only resets
//! the limiter's history of `x` and leaves the queue alone; `num_requeues(x)` is the
//! limiter's count. Everything else is the delaying and basic queue, through `Deref`.

use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;

use super::{default_controller_rate_limiter, DelayingQueue, QueueOptions, RateLimiter};

/// The queue a controller holds (client-go's `RateLimitingInterface`): the basic queue,
/// [`add_after`](DelayingQueue::add_after), and per-item retries through a
/// [`RateLimiter`].
///
/// A handle: clones share one queue and one limiter, so event handlers and workers each
/// keep a clone.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::workqueue::{
///     ItemExponentialFailureRateLimiter, QueueOptions, RateLimitingQueue,
/// };
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = RateLimitingQueue::with_config(QueueOptions::default().rate_limiter(
///     ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(60)),
/// ));
/// queue.add("default/foo");
/// let key = queue.get().await.unwrap();
/// // reconciling failed: retry later, after 5 ms, then 10 ms, 20 ms, ...
/// queue.add_rate_limited(key);
/// queue.done(&key);
/// assert_eq!(queue.num_requeues(&key), 1);
///
/// let key = queue.get().await.unwrap(); // 5 ms later
/// // reconciling succeeded: reset the backoff
/// queue.forget(&key);
/// queue.done(&key);
/// assert_eq!(queue.num_requeues(&key), 0);
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    rate_limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            rate_limiter: Arc::clone(&self.rate_limiter),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RateLimitingQueue")
            .field(&self.queue)
            .finish()
    }
}

impl<T> Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;

    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

impl<T> Default for RateLimitingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RateLimitingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed queue with [`default_controller_rate_limiter`].
    pub fn new() -> Self {
        Self::with_config(QueueOptions::default())
    }

    /// A queue built from `config`; [`default_controller_rate_limiter`] when it names no
    /// rate limiter.
    pub fn with_config(mut config: QueueOptions<T>) -> Self {
        let rate_limiter = config
            .rate_limiter
            .take()
            .unwrap_or_else(|| Arc::new(default_controller_rate_limiter()));
        Self {
            queue: DelayingQueue::with_config(config),
            rate_limiter,
        }
    }

    /// Adds `item` after the wait its rate limiter gives it now (one more try counted).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.rate_limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Resets `item`'s retry history in the rate limiter; leaves the queue alone.
    pub fn forget(&self, item: &T) {
        self.rate_limiter.forget(item);
    }

    /// How many times `item` has been rate limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.rate_limiter.num_requeues(item)
    }
}
