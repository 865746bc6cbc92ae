//! The delaying queue: a [`Queue`] whose items can be added after a delay.
//!
//! Contract:
//! - `add_after(x, d)` with `d` zero is `add(x)`; otherwise `x` waits until `now + d`
//!   (`tokio::time`), then is added with the usual dedup;
//! - an item waits at most once: adding it again while it waits keeps the earlier of the
//!   two ready times;
//! - items whose ready time has come join the queue before any call on the queue looks at
//!   it, and a worker waiting in `get` wakes at the earliest ready time, so a delayed item
//!   is handed out at its time when a worker is free;
//! - shutdown drops the items still waiting; `add_after` after shutdown does nothing.
//!
//! It does not promise the order of items that become ready at the same instant beyond
//! "in the order they were scheduled", and no task is started for delays (see the
//! [module docs](super)).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::time::Duration;

use tokio::time::Instant;

use super::{Queue, QueueOptions};

/// Delays are capped here so that `now + delay` never overflows: about 30 years, which is
/// "never" for a workqueue (a rate limiter that asks for `Duration::MAX` gets this).
const MAX_DELAY: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// Items waiting for their ready time, earliest first (client-go's `waitForPriorityQueue`
/// plus its `knownEntries` map).
pub(crate) struct Waiting<T> {
    by_time: BTreeMap<(Instant, u64), T>,
    keys: HashMap<T, (Instant, u64)>,
    next_seq: u64,
}

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Self {
            by_time: BTreeMap::new(),
            keys: HashMap::new(),
            next_seq: 0,
        }
    }
}

impl<T: Clone + Eq + Hash> Waiting<T> {
    /// Schedules `item` at `now + delay`, keeping an earlier time it already has. Returns
    /// whether the earliest ready time of all items changed.
    pub(crate) fn insert(&mut self, item: T, now: Instant, delay: Duration) -> bool {
        let ready_at = now + delay.min(MAX_DELAY);
        if let Some(&(known, seq)) = self.keys.get(&item) {
            if ready_at >= known {
                return false;
            }
            self.by_time.remove(&(known, seq));
        }
        let key = (ready_at, self.next_seq);
        self.next_seq += 1;
        self.by_time.insert(key, item.clone());
        self.keys.insert(item, key);
        self.by_time.first_key_value().map(|(first, _)| *first) == Some(key)
    }

    /// Takes the earliest item if its time has come, with its ready time.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(Instant, T)> {
        let entry = self.by_time.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        let ((ready_at, _), item) = entry.remove_entry();
        self.keys.remove(&item);
        Some((ready_at, item))
    }

    pub(crate) fn next_ready_at(&self) -> Option<Instant> {
        self.by_time.first_key_value().map(|((at, _), _)| *at)
    }

    #[cfg(test)]
    pub(crate) fn ready_at(&self, item: &T) -> Option<Instant> {
        self.keys.get(item).map(|(at, _)| *at)
    }
}

impl<T> Waiting<T> {
    pub(crate) fn is_empty(&self) -> bool {
        self.by_time.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.by_time.len()
    }

    pub(crate) fn clear(&mut self) {
        self.by_time.clear();
        self.keys.clear();
    }
}

/// A [`Queue`] with [`add_after`](Self::add_after) (client-go's `DelayingInterface`).
///
/// Derefs to [`Queue`] for `add`, `get`, `done` and shutdown.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::workqueue::DelayingQueue;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = DelayingQueue::new();
/// queue.add_after("default/foo", Duration::from_secs(10));
/// queue.add_after("default/foo", Duration::from_secs(1)); // the earlier time wins
/// assert_eq!(queue.len(), 0);
///
/// let start = tokio::time::Instant::now();
/// assert_eq!(queue.get().await, Some("default/foo"));
/// assert_eq!(start.elapsed(), Duration::from_secs(1));
/// # }
/// ```
pub struct DelayingQueue<T> {
    queue: Queue<T>,
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DelayingQueue").field(&self.queue).finish()
    }
}

impl<T> Deref for DelayingQueue<T> {
    type Target = Queue<T>;

    fn deref(&self) -> &Queue<T> {
        &self.queue
    }
}

impl<T> Default for DelayingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> DelayingQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed delaying queue without metrics.
    pub fn new() -> Self {
        Self::with_config(QueueOptions::default())
    }

    /// A delaying queue built from `config` (its rate limiter, if any, is ignored).
    pub fn with_config(config: QueueOptions<T>) -> Self {
        Self {
            queue: Queue::with_config(config),
        }
    }

    /// Adds `item` once `delay` has passed (at once for a zero delay). If `item` is already
    /// waiting, the earlier ready time is kept. Ignored once the queue is shutting down;
    /// otherwise counted in the `retries_total` metric.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.shared.update(|state| {
            if state.shutting_down() {
                return;
            }
            if let Some(metrics) = &state.metrics {
                metrics.retry();
            }
            state.add_after(item, delay);
        });
    }

    /// The number of items waiting for their delay (not yet in [`len`](Queue::len)).
    pub fn waiting_len(&self) -> usize {
        self.queue.shared.update(|state| state.waiting.len())
    }
}
