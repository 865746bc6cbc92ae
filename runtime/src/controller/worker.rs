//! A controller's workers: take a key, reconcile it under the leadership gate, hand the
//! outcome to the queue (forget, rate-limited requeue or requeue after a delay).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use parking_lot::RwLock;
use tokio_util::sync::CancellationToken;

use super::{Action, Context, ReconcileMetrics, ReconcileResult, Target};
use crate::cache::informer::SharedIndexInformer;
use crate::object::{Object, ObjectRef};
use crate::workqueue::RateLimitingQueue;

/// Whether workers may start reconciles: open while leading (always, without leader
/// election); once ended it never opens again.
#[derive(Debug, Default)]
pub(super) struct Gate {
    open: bool,
    ended: bool,
}

/// Why a reconcile did not return.
pub(super) struct TimedOut(Duration);

/// The workers' shared state.
pub(super) struct Runner<K: Object, C, F> {
    pub(super) name: String,
    pub(super) ctx: Arc<Context<C>>,
    pub(super) queue: RateLimitingQueue<String>,
    pub(super) primary: SharedIndexInformer<K>,
    pub(super) reconcile: F,
    pub(super) timeout: Option<Duration>,
    pub(super) workers: usize,
    pub(super) metrics: Arc<ReconcileMetrics>,
    pub(super) gate: RwLock<Gate>,
    /// The controller's stop: workers end on it whatever the leadership.
    pub(super) stop: CancellationToken,
    /// Held for reading by every running worker pool.
    pub(super) pools: Arc<tokio::sync::RwLock<()>>,
}

impl<K, C, E, F, Fut> Runner<K, C, F>
where
    K: Object,
    C: Send + Sync + 'static,
    E: fmt::Display + Send + 'static,
    F: Fn(Target<K>, Arc<Context<C>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
{
    pub(super) fn open(&self) {
        let mut gate = self.gate.write();
        gate.open = !gate.ended;
    }

    pub(super) fn close(&self) {
        let mut gate = self.gate.write();
        gate.open = false;
        gate.ended = true;
    }

    /// Runs the workers until `token` fires or the queue shuts down, and waits for them.
    pub(super) async fn run_workers(self: Arc<Self>, token: CancellationToken) {
        let _pool = Arc::clone(&self.pools).read_owned().await;
        let tasks: Vec<_> = (0..self.workers)
            .map(|_| tokio::spawn(Arc::clone(&self).worker(token.clone())))
            .collect();
        for task in tasks {
            if let Err(err) = task.await {
                tracing::error!(controller = %self.name, error = %err, "a controller worker panicked");
            }
        }
    }

    async fn worker(self: Arc<Self>, token: CancellationToken) {
        loop {
            let key = tokio::select! {
                biased;
                () = token.cancelled() => return,
                () = self.stop.cancelled() => return,
                key = self.queue.get() => match key {
                    Some(key) => key,
                    None => return,
                },
            };
            if !self.process(&key, &token).await {
                return;
            }
        }
    }

    /// Reconciles `key`; false when the gate was closed and the key was put back.
    async fn process(&self, key: &String, token: &CancellationToken) -> bool {
        let target = match self.primary.indexer().get_by_key(key) {
            Some(obj) => Target::Live(obj),
            None => match key.parse::<ObjectRef>() {
                Ok(gone) => Target::Gone(gone),
                Err(err) => {
                    tracing::error!(controller = %self.name, key, error = %err, "dropping a key that is not namespace/name");
                    self.queue.forget(key);
                    self.queue.done(key);
                    return true;
                }
            },
        };
        let call = (self.reconcile)(target, Arc::clone(&self.ctx));
        let timeout = self.timeout;
        let mut call = Box::pin(async move {
            match timeout {
                Some(d) => tokio::time::timeout(d, call).await.map_err(|_| TimedOut(d)),
                None => Ok(call.await),
            }
        });
        let started = tokio::time::Instant::now();
        // The reconcile's first step runs under the gate, so that once leadership ends
        // (the gate closes under its write lock) no reconcile has begun that did not
        // begin before.
        let first = std::future::poll_fn(|cx| {
            let gate = self.gate.read();
            if !gate.open || token.is_cancelled() || self.stop.is_cancelled() {
                return Poll::Ready(None);
            }
            self.metrics.started(&self.name);
            Poll::Ready(Some(call.as_mut().poll(cx)))
        })
        .await;
        let outcome = match first {
            None => {
                // Back in line for whoever runs next; `done` requeues it.
                self.queue.add(key.clone());
                self.queue.done(key);
                return false;
            }
            Some(Poll::Ready(outcome)) => outcome,
            Some(Poll::Pending) => call.await,
        };
        let result = match outcome {
            Ok(Ok(action)) if action.is_requeue() => {
                self.queue.add_rate_limited(key.clone());
                ReconcileResult::Requeue
            }
            Ok(Ok(action)) => {
                self.queue.forget(key);
                match action.requeue_after_duration() {
                    Some(delay) => {
                        self.queue.add_after(key.clone(), delay);
                        ReconcileResult::RequeueAfter
                    }
                    None => ReconcileResult::Success,
                }
            }
            Ok(Err(err)) => {
                tracing::warn!(controller = %self.name, key, error = %err, "reconcile failed; requeued with backoff");
                self.queue.add_rate_limited(key.clone());
                ReconcileResult::Error
            }
            Err(TimedOut(d)) => {
                tracing::warn!(controller = %self.name, key, timeout = ?d, "reconcile timed out; requeued with backoff");
                self.queue.add_rate_limited(key.clone());
                ReconcileResult::Error
            }
        };
        self.metrics.finished(&self.name, result, started.elapsed());
        self.queue.done(key);
        true
    }
}
