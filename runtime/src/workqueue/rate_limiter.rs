//! Rate limiters: how long a failed item waits before its retry (client-go's
//! `workqueue.RateLimiter` and its implementations).
//!
//! A [`RateLimiter`] answers three questions about an item: how long to wait before the
//! next try ([`when`](RateLimiter::when), which also counts the try), how many tries it has
//! had ([`num_requeues`](RateLimiter::num_requeues)), and to forget its history
//! ([`forget`](RateLimiter::forget), after a success). Limiters are shared between
//! workers, so they lock inside; they never block and never sleep: the queue does the
//! waiting.
//!
//! Per-item limiters ([`ItemExponentialFailureRateLimiter`], [`ItemFastSlowRateLimiter`])
//! remember every item until it is forgotten: a controller must call `forget` when an item
//! succeeds, or their memory grows with every key that ever failed.
//! [`BucketRateLimiter`] is a token bucket over all items. [`MaxOfRateLimiter`] and
//! [`WithMaxWaitRateLimiter`] combine limiters.
//!
//! Time is `tokio::time`, so under a paused clock the bucket refills only as the test
//! advances the clock.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::flowcontrol::TokenBucket;

/// Decides how long an item waits before it is retried.
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now; records one more try of it.
    fn when(&self, item: &T) -> Duration;

    /// How many times `item` has been through [`when`](Self::when) since it was last
    /// forgotten.
    fn num_requeues(&self, item: &T) -> usize;

    /// Forgets `item`'s history (call it when the item succeeded). It does not remove the
    /// item from any queue.
    fn forget(&self, item: &T);
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
}

/// Per-item failure counts, shared by the per-item limiters.
struct Failures<T>(Mutex<HashMap<T, u32>>);

impl<T: Clone + Eq + Hash> Failures<T> {
    fn new() -> Self {
        Self(Mutex::new(HashMap::new()))
    }

    /// Adds one failure and returns the count before it.
    fn record(&self, item: &T) -> u32 {
        let mut failures = self.0.lock();
        if let Some(count) = failures.get_mut(item) {
            let before = *count;
            *count = count.saturating_add(1);
            return before;
        }
        failures.insert(item.clone(), 1);
        0
    }

    fn count(&self, item: &T) -> usize {
        self.0.lock().get(item).map_or(0, |&n| n as usize)
    }

    fn forget(&self, item: &T) {
        self.0.lock().remove(item);
    }
}

/// Waits `base * 2^n` for an item's `n`-th failure (counting from 0), capped at `max`
/// (client-go's `ItemExponentialFailureRateLimiter`). The cap also applies where the
/// product would overflow, so any number of failures is safe.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
///
/// let limiter = ItemExponentialFailureRateLimiter::new(
///     Duration::from_millis(5),
///     Duration::from_secs(1000),
/// );
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// assert_eq!(limiter.num_requeues(&"a"), 2);
/// limiter.forget(&"a");
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// ```
pub struct ItemExponentialFailureRateLimiter<T> {
    base_delay: Duration,
    max_delay: Duration,
    failures: Failures<T>,
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash> ItemExponentialFailureRateLimiter<T> {
    /// Starts at `base_delay`, doubles per failure, never exceeds `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        Self {
            base_delay,
            max_delay,
            failures: Failures::new(),
        }
    }
}

/// `base * 2^exp`, or `max` when that is larger or does not fit.
fn exponential_backoff(base: Duration, max: Duration, exp: u32) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let backoff = 1u128
        .checked_shl(exp)
        .and_then(|factor| base.as_nanos().checked_mul(factor));
    match backoff {
        Some(nanos) if nanos <= max.as_nanos() => {
            // nanos <= max.as_nanos(), so the seconds fit in a u64.
            let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
            let subsec = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
            Duration::new(secs, subsec)
        }
        _ => max,
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = self.failures.record(item);
        exponential_backoff(self.base_delay, self.max_delay, exp)
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.count(item)
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }
}

/// Waits `fast_delay` for an item's first `max_fast_attempts` failures, then
/// `slow_delay` (client-go's `ItemFastSlowRateLimiter`).
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::workqueue::{ItemFastSlowRateLimiter, RateLimiter};
///
/// let limiter = ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10), 1);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(10));
/// ```
pub struct ItemFastSlowRateLimiter<T> {
    fast_delay: Duration,
    slow_delay: Duration,
    max_fast_attempts: u32,
    failures: Failures<T>,
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast_delay", &self.fast_delay)
            .field("slow_delay", &self.slow_delay)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash> ItemFastSlowRateLimiter<T> {
    /// `fast_delay` for the first `max_fast_attempts` tries of an item, `slow_delay` after.
    pub fn new(fast_delay: Duration, slow_delay: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast_delay,
            slow_delay,
            max_fast_attempts,
            failures: Failures::new(),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let attempts = self.failures.record(item).saturating_add(1);
        if attempts <= self.max_fast_attempts {
            self.fast_delay
        } else {
            self.slow_delay
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.count(item)
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }
}

/// A token bucket over all items (client-go's `BucketRateLimiter` on
/// `golang.org/x/time/rate`): `burst` tokens, refilled at `qps` per second. Each
/// [`when`](RateLimiter::when) takes a token, going into debt when none is left, and
/// returns how long until that token exists. It keeps no per-item state. The bucket is
/// [`crate::flowcontrol::TokenBucket`], the one the client's rate limiting uses.
///
/// A `burst` of 0 never grants a token: `when` returns `Duration::MAX`. An infinite `qps`
/// never waits.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::workqueue::BucketRateLimiter;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = BucketRateLimiter::new(10.0, 1);
/// assert_eq!(limiter.when(&"a"), Duration::ZERO);
/// assert_eq!(limiter.when(&"b"), Duration::from_millis(100));
/// # }
/// ```
pub struct BucketRateLimiter {
    bucket: TokenBucket,
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("qps", &self.bucket.qps())
            .field("burst", &self.bucket.burst())
            .finish()
    }
}

impl BucketRateLimiter {
    /// A full bucket of `burst` tokens, refilled at `qps` tokens per second.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            bucket: TokenBucket::new(qps, burst),
        }
    }

    /// [`RateLimiter::when`] for any item type, callable without naming it
    /// (`limiter.when(&key)`): the bucket ignores the item.
    pub fn when<T>(&self, _item: &T) -> Duration {
        self.bucket.reserve()
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, item: &T) -> Duration {
        BucketRateLimiter::when(self, item)
    }

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }

    fn forget(&self, _item: &T) {}
}

/// The longest wait of several limiters (client-go's `MaxOfRateLimiter`). Every limiter is
/// asked each time, so all of them count every try.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::workqueue::{
///     BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimiter,
/// };
///
/// // sample-controller's limiter
/// let limiter: MaxOfRateLimiter<String> = MaxOfRateLimiter::new(vec![
///     Box::new(ItemExponentialFailureRateLimiter::new(
///         Duration::from_millis(5),
///         Duration::from_secs(1000),
///     )),
///     Box::new(BucketRateLimiter::new(50.0, 300)),
/// ]);
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// assert_eq!(limiter.when(&"a".to_string()), Duration::from_millis(5));
/// # });
/// ```
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`; with none, every wait is zero.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|limiter| limiter.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|limiter| limiter.num_requeues(item))
            .max()
            .unwrap_or(0)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }
}

/// Caps another limiter's wait at `max_delay` (client-go's `WithMaxWaitRateLimiter`).
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::workqueue::{
///     ItemExponentialFailureRateLimiter, RateLimiter, WithMaxWaitRateLimiter,
/// };
///
/// let limiter = WithMaxWaitRateLimiter::new(
///     ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::from_secs(3600)),
///     Duration::from_secs(2),
/// );
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(1));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(2));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(2));
/// ```
#[derive(Debug)]
pub struct WithMaxWaitRateLimiter<L> {
    limiter: L,
    max_delay: Duration,
}

impl<L> WithMaxWaitRateLimiter<L> {
    /// Wraps `limiter`, never waiting longer than `max_delay`.
    pub fn new(limiter: L, max_delay: Duration) -> Self {
        Self { limiter, max_delay }
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for WithMaxWaitRateLimiter<L> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_delay)
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }

    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }
}

/// client-go's `DefaultControllerRateLimiter`: the larger of a per-item exponential
/// backoff (5 ms doubling up to 1000 s) and an overall token bucket (10 qps, burst 100).
/// [`RateLimitingQueue::new`](super::RateLimitingQueue::new) uses it.
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

/// client-go's `DefaultItemBasedRateLimiter`: per-item exponential backoff from 1 ms up to
/// 1000 s, with no overall limit.
pub fn default_item_based_rate_limiter<T>() -> ItemExponentialFailureRateLimiter<T>
where
    T: Clone + Eq + Hash,
{
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}
