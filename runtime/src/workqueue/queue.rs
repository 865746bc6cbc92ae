//! The basic workqueue: a FIFO plus the `dirty` and `processing` sets of client-go.
//!
//! Contract (each point holds under any interleaving of any number of tasks):
//! - an item is in `dirty` from an accepted `add` until a `get` hands it out, and in
//!   `processing` from that `get` until `done`; `get` never hands out an item that is in
//!   `processing`, so no item is ever held by two workers;
//! - `add` of an item in `dirty` does nothing (dedup while queued); `add` of an item in
//!   `processing` marks it dirty without queueing it, and `done` queues it then: any number
//!   of adds during processing give exactly one more hand-out;
//! - the FIFO holds each item at most once, and only items in `dirty` and not in
//!   `processing`;
//! - after shutdown, adds are ignored but `get` still hands out what is queued (and what
//!   `done` re-queues), then returns `None`.
//!
//! Delayed items of the [`DelayingQueue`](super::DelayingQueue) live in the same state
//! behind the same lock, so that they join the FIFO exactly when their time has come and
//! anyone looks, with no task of their own.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::mem;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::{Instant, MissedTickBehavior};

use super::delaying::Waiting;
use super::metrics::QueueMetrics;
use super::QueueOptions;

/// How often a named queue refreshes its unfinished-work gauges (client-go: 500 ms).
const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// The FIFO under a workqueue (client-go's `Queue` interface).
///
/// The workqueue calls it with its lock held, so an implementation needs no locking of its
/// own and must not block. It sees each item at most once at a time: the workqueue never
/// pushes an item that it holds already.
///
/// ```
/// use std::collections::VecDeque;
/// use kubegen_runtime::workqueue::{Queue, QueueOptions, QueueStorage};
///
/// /// Hands out the most recently added item first.
/// #[derive(Default)]
/// struct Lifo(VecDeque<u32>);
///
/// impl QueueStorage<u32> for Lifo {
///     fn push(&mut self, item: u32) { self.0.push_back(item) }
///     fn pop(&mut self) -> Option<u32> { self.0.pop_back() }
///     fn len(&self) -> usize { self.0.len() }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = Queue::with_config(QueueOptions::default().storage(Lifo::default()));
/// queue.add(1);
/// queue.add(2);
/// assert_eq!(queue.get().await, Some(2));
/// # }
/// ```
pub trait QueueStorage<T>: Send {
    /// Called when an item already waiting in this storage is added again (for example to
    /// raise its priority). The default does nothing.
    fn touch(&mut self, item: &T) {
        let _ = item;
    }

    /// Adds an item that this storage does not hold.
    fn push(&mut self, item: T);

    /// Takes the next item to hand out, `None` when empty.
    fn pop(&mut self) -> Option<T>;

    /// The number of items held.
    fn len(&self) -> usize;

    /// Whether no item is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Send> QueueStorage<T> for VecDeque<T> {
    fn push(&mut self, item: T) {
        self.push_back(item);
    }

    fn pop(&mut self) -> Option<T> {
        self.pop_front()
    }

    fn len(&self) -> usize {
        VecDeque::len(self)
    }
}

/// The basic workqueue (client-go's `workqueue.Interface`).
///
/// A handle: clones share one queue. See the [module docs](super) for the invariants.
///
/// ```
/// use kubegen_runtime::workqueue::Queue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = Queue::new();
/// queue.add("default/a");
/// queue.add("default/b");
/// queue.add("default/a"); // already waiting: no-op
/// assert_eq!(queue.len(), 2);
///
/// let key = queue.get().await.unwrap();
/// assert_eq!(key, "default/a");
/// queue.add("default/a"); // being processed: runs once more after `done`
/// assert_eq!(queue.len(), 1);
/// queue.done(&key);
/// assert_eq!(queue.len(), 2);
///
/// queue.shut_down();
/// assert_eq!(queue.get().await, Some("default/b")); // queued items are still handed out
/// assert_eq!(queue.get().await, Some("default/a"));
/// assert_eq!(queue.get().await, None);
/// # }
/// ```
pub struct Queue<T> {
    pub(crate) shared: Arc<Shared<T>>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("Queue")
            .field("len", &state.queue.len())
            .field("processing", &state.processing.len())
            .field("waiting", &state.waiting.len())
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

pub(crate) struct Shared<T> {
    pub(crate) state: Mutex<State<T>>,
    /// Wakes `get` callers: one per queued item, all at shutdown.
    item_ready: Notify,
    /// Wakes the `get` caller that sleeps until the earliest ready time when that time
    /// moves earlier.
    timer_changed: Notify,
    /// Wakes `shut_down_with_drain` when processing empties or the drain is called off.
    drained: Notify,
    has_metrics: bool,
    metrics_updater_started: AtomicBool,
}

pub(crate) struct State<T> {
    queue: Box<dyn QueueStorage<T>>,
    dirty: HashSet<T>,
    processing: HashSet<T>,
    shutting_down: bool,
    drain: bool,
    pub(crate) waiting: Waiting<T>,
    /// Whether one `get` caller is sleeping until `waiting`'s earliest ready time.
    timer_driver: bool,
    pub(crate) metrics: Option<QueueMetrics<T>>,
    wake: Wakeups,
}

/// Notifications owed once the lock is released.
#[derive(Default)]
struct Wakeups {
    items: usize,
    timer: bool,
    drained: bool,
}

impl<T> State<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// client-go's `Add`; `added_at` is when the item became due (delayed items), else now.
    pub(crate) fn add(&mut self, item: T, added_at: Option<Instant>) {
        if self.shutting_down {
            return;
        }
        if self.dirty.contains(&item) {
            if !self.processing.contains(&item) {
                self.queue.touch(&item);
            }
            return;
        }
        if let Some(metrics) = &mut self.metrics {
            metrics.add(&item, added_at);
        }
        if self.processing.contains(&item) {
            self.dirty.insert(item);
            return;
        }
        self.dirty.insert(item.clone());
        self.queue.push(item);
        self.wake.items += 1;
    }

    fn pop(&mut self) -> Option<T> {
        let item = self.queue.pop()?;
        self.dirty.remove(&item);
        if let Some(metrics) = &mut self.metrics {
            metrics.get(&item);
        }
        self.processing.insert(item.clone());
        Some(item)
    }

    fn done(&mut self, item: &T) {
        if !self.processing.remove(item) {
            return;
        }
        if let Some(metrics) = &mut self.metrics {
            metrics.done(item);
        }
        if self.dirty.contains(item) {
            self.queue.push(item.clone());
            self.wake.items += 1;
        } else if self.processing.is_empty() && self.drain {
            self.wake.drained = true;
        }
    }

    /// Moves every waiting item whose time has come into the queue.
    fn promote_due(&mut self) {
        if self.waiting.is_empty() {
            return;
        }
        let now = Instant::now();
        while let Some((ready_at, item)) = self.waiting.pop_due(now) {
            self.add(item, Some(ready_at));
        }
    }

    /// client-go's `AddAfter` (minus the retries metric, counted by the caller).
    pub(crate) fn add_after(&mut self, item: T, delay: Duration) {
        if delay.is_zero() {
            self.add(item, None);
            return;
        }
        if self.waiting.insert(item, Instant::now(), delay) {
            // The earliest ready time moved: the sleeping `get` must re-arm its timer, or a
            // waiting `get` must wake up to become the one that sleeps on it.
            if self.timer_driver {
                self.wake.timer = true;
            } else {
                self.wake.items += 1;
            }
        }
    }

    pub(crate) fn shutting_down(&self) -> bool {
        self.shutting_down
    }

    fn shut_down(&mut self, drain: bool) {
        self.shutting_down = true;
        self.drain = drain;
        self.waiting.clear();
        self.wake.drained = true;
    }
}

/// What `get` does after one look at the state.
enum Step<T> {
    Item(T),
    ShutDown,
    Wait,
    WaitUntil(Instant),
}

impl<T> Shared<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// Runs `f` under the lock, after moving due items into the queue, then sends the
    /// notifications that `f` (and the move) made owed.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut State<T>) -> R) -> R {
        let (result, wake) = {
            let mut state = self.state.lock();
            state.promote_due();
            let result = f(&mut state);
            (result, mem::take(&mut state.wake))
        };
        for _ in 0..wake.items {
            self.item_ready.notify_one();
        }
        if wake.timer {
            self.timer_changed.notify_one();
        }
        if wake.drained {
            self.drained.notify_waiters();
        }
        result
    }

    fn start_metrics_updater(self: &Arc<Self>) {
        if self.metrics_updater_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UNFINISHED_WORK_UPDATE_PERIOD);
            tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { return };
                let keep_going = shared.update(|state| {
                    if state.shutting_down {
                        return false;
                    }
                    if let Some(metrics) = &state.metrics {
                        metrics.update_unfinished_work();
                    }
                    true
                });
                if !keep_going {
                    return;
                }
            }
        });
    }
}

/// The `get` caller that sleeps until the earliest ready time; hands the job on when it
/// leaves (returns or is cancelled) while items are still waiting.
struct TimerDriver<'a, T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    shared: &'a Shared<T>,
    held: bool,
}

impl<T> Drop for TimerDriver<'_, T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn drop(&mut self) {
        if self.held {
            self.shared.update(|state| {
                state.timer_driver = false;
                if !state.waiting.is_empty() {
                    state.wake.items += 1;
                }
            });
        }
    }
}

impl<T> Default for Queue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Queue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed queue without metrics, on a `VecDeque`.
    pub fn new() -> Self {
        Self::with_config(QueueOptions::default())
    }

    /// A queue built from `config` (its rate limiter, if any, is ignored).
    pub fn with_config(config: QueueOptions<T>) -> Self {
        let metrics = match (&config.name, &config.metrics_provider) {
            (Some(name), Some(provider)) if !name.is_empty() => {
                Some(QueueMetrics::new(provider.as_ref(), name))
            }
            _ => None,
        };
        let storage = config
            .storage
            .unwrap_or_else(|| Box::new(VecDeque::<T>::new()));
        Self {
            shared: Arc::new(Shared {
                has_metrics: metrics.is_some(),
                state: Mutex::new(State {
                    queue: storage,
                    dirty: HashSet::new(),
                    processing: HashSet::new(),
                    shutting_down: false,
                    drain: false,
                    waiting: Waiting::default(),
                    timer_driver: false,
                    metrics,
                    wake: Wakeups::default(),
                }),
                item_ready: Notify::new(),
                timer_changed: Notify::new(),
                drained: Notify::new(),
                metrics_updater_started: AtomicBool::new(false),
            }),
        }
    }

    /// Queues `item` unless it is already waiting (dedup) or the queue is shutting down.
    /// An item being processed is marked to run once more after [`done`](Self::done).
    pub fn add(&self, item: T) {
        self.shared.update(|state| state.add(item, None));
    }

    /// Waits for the next item and marks it as being processed; the caller must call
    /// [`done`](Self::done) with it. Returns `None` once the queue is shutting down and
    /// empty.
    ///
    /// Cancel-safe: dropping the future before it completes loses no item.
    pub async fn get(&self) -> Option<T> {
        if self.shared.has_metrics {
            self.shared.start_metrics_updater();
        }
        let shared = &*self.shared;
        if let Some(item) = shared.update(|state| state.pop()) {
            return Some(item);
        }
        let mut driver = TimerDriver {
            shared,
            held: false,
        };
        loop {
            let item_ready = shared.item_ready.notified();
            tokio::pin!(item_ready);
            // Registered before looking, so an add or a shutdown after the look wakes us.
            item_ready.as_mut().enable();
            let step = shared.update(|state| {
                if let Some(item) = state.pop() {
                    return Step::Item(item);
                }
                if state.shutting_down {
                    return Step::ShutDown;
                }
                match state.waiting.next_ready_at() {
                    Some(at) if driver.held || !state.timer_driver => {
                        state.timer_driver = true;
                        driver.held = true;
                        Step::WaitUntil(at)
                    }
                    next => {
                        if driver.held && next.is_none() {
                            state.timer_driver = false;
                            driver.held = false;
                        }
                        Step::Wait
                    }
                }
            });
            match step {
                Step::Item(item) => return Some(item),
                Step::ShutDown => return None,
                Step::Wait => item_ready.await,
                Step::WaitUntil(at) => {
                    let timer_changed = shared.timer_changed.notified();
                    tokio::select! {
                        () = &mut item_ready => {}
                        () = timer_changed => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
            }
        }
    }

    /// Marks `item` as processed. If it was added while being processed, it is queued
    /// again now. Calling it for an item that is not being processed does nothing.
    pub fn done(&self, item: &T) {
        self.shared.update(|state| state.done(item));
    }

    /// The number of items waiting to be handed out (not those being processed, unless
    /// they were added again, and not those still waiting for their delay).
    pub fn len(&self) -> usize {
        self.shared.update(|state| state.queue.len())
    }

    /// Whether no item is waiting to be handed out (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts shutting down: later adds are ignored, delayed items still waiting are
    /// dropped, and `get` returns `None` once the queued items are handed out. Returns
    /// at once, without waiting for workers (see
    /// [`shut_down_with_drain`](Self::shut_down_with_drain)).
    pub fn shut_down(&self) {
        self.shared.update(|state| state.shut_down(false));
        self.shared.item_ready.notify_waiters();
    }

    /// Shuts down like [`shut_down`](Self::shut_down), then waits until every item being
    /// processed is [`done`](Self::done) (items re-queued by `done` are handed out and
    /// must be done too), or until [`shut_down`](Self::shut_down) is called.
    pub async fn shut_down_with_drain(&self) {
        self.shared.update(|state| state.shut_down(true));
        self.shared.item_ready.notify_waiters();
        loop {
            let drained = self.shared.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            let finished = {
                let state = self.shared.state.lock();
                state.processing.is_empty() || !state.drain
            };
            if finished {
                return;
            }
            drained.await;
        }
    }

    /// Whether shutdown has started.
    pub fn shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }

    /// Checks the invariants of the state (support for the property tests): the FIFO
    /// holds each item once, only dirty items that are not being processed, and every
    /// dirty item is either queued or being processed (none lost).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> Result<(), &'static str> {
        let mut state = self.shared.state.lock();
        let mut queued = Vec::new();
        while let Some(item) = state.queue.pop() {
            queued.push(item);
        }
        let verdict = {
            let distinct: HashSet<&T> = queued.iter().collect();
            if distinct.len() != queued.len() {
                Err("an item is queued twice")
            } else if queued.iter().any(|item| !state.dirty.contains(item)) {
                Err("a queued item is not dirty")
            } else if queued.iter().any(|item| state.processing.contains(item)) {
                Err("a queued item is being processed")
            } else if state
                .dirty
                .iter()
                .any(|item| !distinct.contains(item) && !state.processing.contains(item))
            {
                Err("a dirty item is neither queued nor being processed")
            } else {
                Ok(())
            }
        };
        for item in queued {
            state.queue.push(item);
        }
        verdict
    }

    /// [`check_invariants`](Self::check_invariants), panicking on a violation.
    #[cfg(test)]
    pub(crate) fn assert_invariants(&self) {
        if let Err(violation) = self.check_invariants() {
            panic!("{violation}");
        }
    }

    /// The ready time of an item waiting for its delay (test support).
    #[cfg(test)]
    pub(crate) fn ready_at(&self, item: &T) -> Option<Instant> {
        self.shared.state.lock().waiting.ready_at(item)
    }

    /// Whether nothing is queued, processing or waiting for its delay, read without
    /// moving due items into the queue (test support: only workers may have done that).
    #[cfg(test)]
    pub(crate) fn is_settled_without_looking(&self) -> bool {
        let state = self.shared.state.lock();
        state.waiting.is_empty() && state.queue.is_empty() && state.processing.is_empty()
    }

    /// Whether no item is dirty or being processed (test support).
    #[cfg(test)]
    pub(crate) fn is_idle(&self) -> bool {
        let state = self.shared.state.lock();
        state.dirty.is_empty() && state.processing.is_empty() && state.queue.is_empty()
    }
}
