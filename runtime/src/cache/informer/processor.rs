//! The shared processor: fans an informer's notifications out to its handlers.
//!
//! Contract (client-go's `sharedProcessor` and `processorListener`):
//! - Each registered handler (a *listener*) has an unbounded FIFO buffer and a thread of
//!   its own that drains it: `distribute` only appends to buffers, so it never waits on a
//!   handler, and a slow or stuck handler delays only itself (its buffer grows instead).
//! - Per listener, notifications are delivered one at a time, in the order distributed.
//! - A *sync* notification (an update whose old and new resourceVersion are equal, from
//!   a periodic resync) goes only to listeners that are due for resync at this tick;
//!   every other notification goes to all listeners.
//! - A listener's `has_synced` is true once the informer has synced and every
//!   initial-list add enqueued for it has returned from its handler.
//! - A panicking handler is logged and the listener goes on with its next notification.
//! - Removing or stopping a listener does not wait for its handler: notifications
//!   already running finish on the listener's thread, queued ones are dropped.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::time::Instant;

use super::handler::ResourceEventHandler;
use crate::cache::delta_fifo::DeltaObject;

/// One notification for a handler.
pub(crate) enum Notification<K> {
    Add {
        obj: Arc<K>,
        is_in_initial_list: bool,
    },
    Update {
        old: Arc<K>,
        new: Arc<K>,
    },
    Delete(DeltaObject<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => Notification::Add {
                obj: Arc::clone(obj),
                is_in_initial_list: *is_in_initial_list,
            },
            Notification::Update { old, new } => Notification::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Notification::Delete(obj) => Notification::Delete(obj.clone()),
        }
    }
}

struct Buffer<K> {
    items: VecDeque<Notification<K>>,
    stopped: bool,
}

pub(crate) struct Listener<K> {
    id: u64,
    handler: Arc<dyn ResourceEventHandler<K>>,
    buffer: Mutex<Buffer<K>>,
    ready: Condvar,
    /// Initial-list adds enqueued and not yet returned from the handler.
    pending_initial: AtomicUsize,
    requested_resync_period: Duration,
    resync: Mutex<ResyncState>,
}

struct ResyncState {
    period: Duration,
    next: Instant,
}

/// Initial capacity of a listener's buffer, as client-go's ring buffer starts.
const INITIAL_BUFFER: usize = 1024;

static NEXT_LISTENER_ID: AtomicU64 = AtomicU64::new(1);

impl<K: Send + Sync + 'static> Listener<K> {
    pub(crate) fn new(
        handler: Arc<dyn ResourceEventHandler<K>>,
        requested_resync_period: Duration,
        resync_period: Duration,
    ) -> Arc<Self> {
        Arc::new(Listener {
            id: NEXT_LISTENER_ID.fetch_add(1, Ordering::Relaxed),
            handler,
            buffer: Mutex::new(Buffer {
                items: VecDeque::with_capacity(INITIAL_BUFFER),
                stopped: false,
            }),
            ready: Condvar::new(),
            pending_initial: AtomicUsize::new(0),
            requested_resync_period,
            resync: Mutex::new(ResyncState {
                period: resync_period,
                next: Instant::now() + resync_period,
            }),
        })
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn requested_resync_period(&self) -> Duration {
        self.requested_resync_period
    }

    pub(crate) fn resync_period(&self) -> Duration {
        self.resync.lock().period
    }

    pub(crate) fn set_resync_period(&self, period: Duration) {
        self.resync.lock().period = period;
    }

    /// Whether every initial-list add enqueued so far has returned from the handler.
    pub(crate) fn initial_adds_done(&self) -> bool {
        self.pending_initial.load(Ordering::Acquire) == 0
    }

    /// Appends `n` to the buffer and wakes the listener's thread.
    pub(crate) fn add(&self, n: Notification<K>) {
        self.push(n);
        self.ready.notify_one();
    }

    /// Appends `n` to the buffer without waking the listener's thread: the caller must
    /// [`wake`](Self::wake) it before going idle.
    fn push(&self, n: Notification<K>) {
        if let Notification::Add {
            is_in_initial_list: true,
            ..
        } = n
        {
            self.pending_initial.fetch_add(1, Ordering::AcqRel);
        }
        let mut buf = self.buffer.lock();
        if buf.stopped {
            if let Notification::Add {
                is_in_initial_list: true,
                ..
            } = n
            {
                self.pending_initial.fetch_sub(1, Ordering::AcqRel);
            }
            return;
        }
        buf.items.push_back(n);
    }

    /// Wakes the listener's thread if it waits for notifications (a no-op otherwise).
    fn wake(&self) {
        self.ready.notify_one();
    }

    pub(crate) fn stop(&self) {
        let mut buf = self.buffer.lock();
        buf.stopped = true;
        let dropped_initial = buf
            .items
            .iter()
            .filter(|n| {
                matches!(
                    n,
                    Notification::Add {
                        is_in_initial_list: true,
                        ..
                    }
                )
            })
            .count();
        buf.items.clear();
        self.pending_initial
            .fetch_sub(dropped_initial, Ordering::AcqRel);
        drop(buf);
        self.ready.notify_all();
    }

    /// Starts the listener's thread, which runs until [`Listener::stop`].
    pub(crate) fn spawn(self: &Arc<Self>) {
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("informer-listener-{}", self.id))
            .spawn(move || me.run());
        if let Err(err) = spawned {
            tracing::error!(%err, "could not start an informer listener thread; its handler gets no notifications");
        }
    }

    fn run(&self) {
        loop {
            let next = {
                let mut buf = self.buffer.lock();
                loop {
                    if buf.stopped {
                        return;
                    }
                    if let Some(n) = buf.items.pop_front() {
                        break n;
                    }
                    self.ready.wait(&mut buf);
                }
            };
            let initial = matches!(
                next,
                Notification::Add {
                    is_in_initial_list: true,
                    ..
                }
            );
            let handler = &self.handler;
            let _span = tracing::debug_span!(
                "handle",
                listener = self.id,
                notification = match &next {
                    Notification::Add { .. } => "add",
                    Notification::Update { .. } => "update",
                    Notification::Delete(_) => "delete",
                }
            )
            .entered();
            let outcome = catch_unwind(AssertUnwindSafe(|| match &next {
                Notification::Add {
                    obj,
                    is_in_initial_list,
                } => handler.on_add(obj, *is_in_initial_list),
                Notification::Update { old, new } => handler.on_update(old, new),
                Notification::Delete(obj) => handler.on_delete(obj),
            }));
            if outcome.is_err() {
                tracing::error!(
                    listener = self.id,
                    "an event handler panicked; continuing with its next notification"
                );
            }
            if initial {
                self.pending_initial.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Marks the listener as syncing if its resync is due at `now`, scheduling the next.
    fn due_for_resync(&self, now: Instant) -> bool {
        let mut r = self.resync.lock();
        if r.period.is_zero() || now < r.next {
            return false;
        }
        r.next = now + r.period;
        true
    }
}

struct State<K> {
    listeners: Vec<Arc<Listener<K>>>,
    syncing: Vec<Arc<Listener<K>>>,
    running: bool,
}

/// The processor of one informer.
pub(crate) struct Processor<K> {
    state: Mutex<State<K>>,
}

impl<K: Send + Sync + 'static> Processor<K> {
    pub(crate) fn new() -> Self {
        Processor {
            state: Mutex::new(State {
                listeners: Vec::new(),
                syncing: Vec::new(),
                running: false,
            }),
        }
    }

    /// Registers a listener; its thread starts now if the processor runs, else on `run`.
    pub(crate) fn add_listener(&self, listener: Arc<Listener<K>>) {
        let mut st = self.state.lock();
        if st.running {
            listener.spawn();
        }
        st.listeners.push(listener);
    }

    /// Unregisters and stops a listener; false if it was not registered.
    pub(crate) fn remove_listener(&self, id: u64) -> bool {
        let mut st = self.state.lock();
        let before = st.listeners.len();
        let mut removed = None;
        st.listeners.retain(|l| {
            if l.id() == id {
                removed = Some(Arc::clone(l));
                false
            } else {
                true
            }
        });
        st.syncing.retain(|l| l.id() != id);
        if let Some(l) = removed {
            l.stop();
        }
        st.listeners.len() != before
    }

    pub(crate) fn listeners(&self) -> Vec<Arc<Listener<K>>> {
        self.state.lock().listeners.clone()
    }

    /// Starts every listener's thread.
    pub(crate) fn run(&self) {
        let mut st = self.state.lock();
        if st.running {
            return;
        }
        st.running = true;
        for l in &st.listeners {
            l.spawn();
        }
    }

    /// Stops every listener.
    pub(crate) fn stop(&self) {
        let mut st = self.state.lock();
        st.running = false;
        for l in st.listeners.drain(..) {
            l.stop();
        }
        st.syncing.clear();
    }

    /// Delivers a notification: a sync one to the listeners due for resync, any other to
    /// all.
    #[cfg(test)]
    pub(crate) fn distribute(&self, n: Notification<K>, sync: bool) {
        self.distribute_deferred(n, sync);
        self.flush();
    }

    /// Delivers a notification as `distribute` does, without waking the listeners'
    /// threads: a caller delivering a run of notifications wakes them once, with
    /// [`flush`](Self::flush), instead of once per notification (a handler that keeps up
    /// would otherwise sleep and be woken for every one). The caller must flush before
    /// it goes idle.
    pub(crate) fn distribute_deferred(&self, n: Notification<K>, sync: bool) {
        let st = self.state.lock();
        let targets = if sync { &st.syncing } else { &st.listeners };
        if let Some((last, rest)) = targets.split_last() {
            for l in rest {
                l.push(n.clone());
            }
            last.push(n);
        }
    }

    /// Wakes every listener's thread that waits for notifications.
    pub(crate) fn flush(&self) {
        for l in &self.state.lock().listeners {
            l.wake();
        }
    }

    /// Decides which listeners resync at `now`; true if any does.
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let mut st = self.state.lock();
        let due: Vec<_> = st
            .listeners
            .iter()
            .filter(|l| l.due_for_resync(now))
            .cloned()
            .collect();
        st.syncing = due;
        !st.syncing.is_empty()
    }
}

/// The resync period a handler gets (client-go's `determineResyncPeriod`): none when
/// either side is 0; else at least the informer's check period.
pub(crate) fn determine_resync_period(requested: Duration, check: Duration) -> Duration {
    if requested.is_zero() || check.is_zero() {
        return Duration::ZERO;
    }
    requested.max(check)
}

/// The smallest non-zero resync period a handler may ask for (client-go:
/// `minimumResyncPeriod`).
pub(crate) const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    struct Chan(Mutex<mpsc::Sender<String>>);
    impl ResourceEventHandler<&'static str> for Chan {
        fn on_add(&self, obj: &Arc<&'static str>, initial: bool) {
            let _ = self.0.lock().send(format!("add {obj} {initial}"));
        }
        fn on_update(&self, old: &Arc<&'static str>, new: &Arc<&'static str>) {
            let _ = self.0.lock().send(format!("update {old} {new}"));
        }
    }

    fn chan_listener(period: Duration) -> (Arc<Listener<&'static str>>, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel();
        (
            Listener::new(Arc::new(Chan(Mutex::new(tx))), period, period),
            rx,
        )
    }

    #[test]
    fn delivers_in_order_and_tracks_initial_adds() {
        let p = Processor::new();
        let (l, rx) = chan_listener(Duration::ZERO);
        p.add_listener(Arc::clone(&l));
        for name in ["a", "b", "c"] {
            p.distribute(
                Notification::Add {
                    obj: Arc::new(name),
                    is_in_initial_list: true,
                },
                false,
            );
        }
        assert!(!l.initial_adds_done());
        p.run();
        let got: Vec<String> = (0..3).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, ["add a true", "add b true", "add c true"]);
        p.stop();
    }

    #[test]
    fn deferred_notifications_arrive_in_order_after_a_flush() {
        let p = Processor::new();
        let (l, rx) = chan_listener(Duration::ZERO);
        p.add_listener(Arc::clone(&l));
        p.run();
        for name in ["a", "b", "c"] {
            p.distribute_deferred(
                Notification::Add {
                    obj: Arc::new(name),
                    is_in_initial_list: false,
                },
                false,
            );
        }
        p.flush();
        let got: Vec<String> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(got, ["add a false", "add b false", "add c false"]);
        p.stop();
    }

    #[test]
    fn blocked_handler_does_not_block_others() {
        // SEMANTICS 4.17
        struct Stuck(Mutex<Option<mpsc::Receiver<()>>>);
        impl ResourceEventHandler<&'static str> for Stuck {
            fn on_add(&self, _: &Arc<&'static str>, _: bool) {
                if let Some(rx) = self.0.lock().take() {
                    let _ = rx.recv();
                }
            }
        }
        let (_release, gate) = mpsc::channel::<()>();
        let p = Processor::new();
        p.add_listener(Listener::new(
            Arc::new(Stuck(Mutex::new(Some(gate)))),
            Duration::ZERO,
            Duration::ZERO,
        ));
        let (l, rx) = chan_listener(Duration::ZERO);
        p.add_listener(l);
        p.run();
        for name in ["a", "b"] {
            p.distribute(
                Notification::Add {
                    obj: Arc::new(name),
                    is_in_initial_list: false,
                },
                false,
            );
        }
        assert_eq!(rx.recv().unwrap(), "add a false");
        assert_eq!(rx.recv().unwrap(), "add b false");
        p.stop();
    }

    #[tokio::test(start_paused = true)]
    async fn sync_notifications_reach_only_due_listeners() {
        let p = Processor::new();
        let (fast, fast_rx) = chan_listener(Duration::from_secs(2));
        let (slow, slow_rx) = chan_listener(Duration::from_secs(3));
        let (never, never_rx) = chan_listener(Duration::ZERO);
        for l in [fast, slow, never] {
            p.add_listener(l);
        }
        p.run();
        let sync = || Notification::Update {
            old: Arc::new("x"),
            new: Arc::new("x"),
        };
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(p.should_resync(Instant::now()));
        p.distribute(sync(), true);
        assert_eq!(fast_rx.recv().unwrap(), "update x x");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(p.should_resync(Instant::now()));
        p.distribute(sync(), true);
        assert_eq!(slow_rx.recv().unwrap(), "update x x");
        // A non-sync notification reaches everyone.
        p.distribute(sync(), false);
        assert_eq!(fast_rx.recv().unwrap(), "update x x");
        assert_eq!(slow_rx.recv().unwrap(), "update x x");
        assert_eq!(never_rx.recv().unwrap(), "update x x");
        assert!(fast_rx.try_recv().is_err());
        p.stop();
    }

    #[test]
    fn resync_period_rules() {
        assert_eq!(
            determine_resync_period(Duration::from_secs(30), Duration::ZERO),
            Duration::ZERO
        );
        assert_eq!(
            determine_resync_period(Duration::from_secs(10), Duration::from_secs(60)),
            Duration::from_secs(60)
        );
        assert_eq!(
            determine_resync_period(Duration::ZERO, Duration::from_secs(60)),
            Duration::ZERO
        );
    }
}
