//! Watching without losing events, and waiting for a condition on a watch (client-go's
//! `tools/watch`: `RetryWatcher`, `UntilWithoutRetry`, `Until`, `UntilWithSync`).
//!
//! Contract (SEMANTICS 12, tools/watch):
//! - [`RetryWatcher`] watches from a resourceVersion and, whenever a watch ends, watches
//!   again from the last resourceVersion it saw (from an object or a BOOKMARK), with
//!   bookmarks allowed. It refuses `""` and `"0"` (they do not name a point in history).
//!   ADDED, MODIFIED and DELETED are passed on; BOOKMARKs are not. An object without a
//!   resourceVersion ends it after one 500 InternalError event.
//! - An ERROR event with code 410 is passed on and ends it; 500 and 504 make it watch again
//!   after the Status' `retryAfterSeconds` (0 if absent); any other ERROR watches again at
//!   once. A WATCH call answering Forbidden or Unauthorized ends it after one ERROR event
//!   carrying that Status; any other failure of the call (410 Expired included) is retried.
//!   Watches start at least 1 s apart (start to start), plus any retry-after delay.
//! - It does not filter events by resourceVersion: that is the server's job.
//! - [`until_without_retry`] feeds events to conditions in order; a condition after the
//!   first is tried on the last event already seen before new ones. All satisfied: the
//!   last event. The stream ends first: [`UntilError::WatchClosed`]; the stop future
//!   completes first: [`UntilError::Interrupted`]; a condition fails: that error. The
//!   error carries the last event seen.
//! - [`until`] is a [`RetryWatcher`] under [`until_without_retry`]; [`until_with_sync`]
//!   runs an informer and turns its notifications into events (add: ADDED, initial list
//!   included; update: MODIFIED; delete: DELETED, tombstones unwrapped).
//!
//! Unlike client-go, "the context" is any future (`tokio::time::sleep(d)`,
//! `token.cancelled()`): when it completes the wait is over. An event type the decoder
//! does not know never reaches the RetryWatcher: the watch decoder reports it as a 500
//! decoding error (see [`crate::client::WatchEvent`]), which is retried.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cache::delta_fifo::DeltaObject;
use crate::cache::informer::{InformerOptions, ResourceEventHandler, SharedIndexInformer};
use crate::cache::reflector::ListerWatcher;
use crate::cache::store::ReadOnlyIndexer;
use crate::client::{ListOptions, WatchEvent};
use crate::errors::StatusError;
use crate::object::Object;

/// The least time between the starts of two watches of a [`RetryWatcher`].
const MIN_WATCH_SPACING: Duration = Duration::from_secs(1);

/// A [`RetryWatcher`] cannot start from this resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("initial RV {0:?} is not supported due to issues with underlying WATCH")]
pub struct UnsupportedResourceVersion(pub String);

/// A watch that resumes from the last resourceVersion it saw whenever it ends (client-go's
/// `RetryWatcher`); a [`Stream`] of [`WatchEvent`]s that ends when the watcher stops.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use futures::StreamExt;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubegen_runtime::client::{ListOptions, ResourceClient, WatchEvent};
/// use kubegen_runtime::testing::ApiServer;
/// use kubegen_runtime::watch::RetryWatcher;
///
/// let server = ApiServer::new();
/// let rv = server.resource_version().to_string();
/// let cms = ResourceClient::<ConfigMap>::all(kube::Client::new(server.service(), "default"));
/// let mut w = RetryWatcher::new(&rv, Arc::new(cms), ListOptions::default())?;
/// server.create("configmaps", serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}))?;
/// assert!(matches!(w.next().await, Some(WatchEvent::Added(_))));
/// w.stop();
/// # Ok(())
/// # }
/// ```
pub struct RetryWatcher<K> {
    events: mpsc::Receiver<WatchEvent<K>>,
    stop: CancellationToken,
    done: CancellationToken,
}

impl<K> fmt::Debug for RetryWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryWatcher")
            .field("stopped", &self.stop.is_cancelled())
            .field("done", &self.done.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl<K: Object> RetryWatcher<K> {
    /// Starts watching from `initial_rv` (not `""` nor `"0"`) with `opts`' selectors and
    /// timeout; the watcher sets resourceVersion and bookmarks itself. Spawns a task on
    /// the current tokio runtime.
    pub fn new(
        initial_rv: &str,
        lw: Arc<dyn ListerWatcher<K>>,
        opts: ListOptions,
    ) -> Result<Self, UnsupportedResourceVersion> {
        if initial_rv.is_empty() || initial_rv == "0" {
            return Err(UnsupportedResourceVersion(initial_rv.into()));
        }
        let (tx, events) = mpsc::channel(1);
        let stop = CancellationToken::new();
        let done = CancellationToken::new();
        let run = Run {
            lw,
            opts,
            last_rv: initial_rv.into(),
            tx,
            stop: stop.clone(),
        };
        let finished = done.clone();
        tokio::spawn(async move {
            run.receive().await;
            finished.cancel();
        });
        Ok(RetryWatcher { events, stop, done })
    }

    /// Stops the watcher; the stream ends once its task has finished.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Completes when the watcher's task has finished (its stream then ends).
    pub async fn done(&self) {
        self.done.cancelled().await;
    }
}

impl<K> Drop for RetryWatcher<K> {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl<K> Stream for RetryWatcher<K> {
    type Item = WatchEvent<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_recv(cx)
    }
}

/// The task of a [`RetryWatcher`].
struct Run<K> {
    lw: Arc<dyn ListerWatcher<K>>,
    opts: ListOptions,
    last_rv: String,
    tx: mpsc::Sender<WatchEvent<K>>,
    stop: CancellationToken,
}

/// How one watch ended.
enum Ended {
    /// The watcher is finished.
    Done,
    /// Watch again after this long.
    Retry(Duration),
}

impl<K: Object> Run<K> {
    async fn receive(mut self) {
        loop {
            if self.stop.is_cancelled() {
                return;
            }
            let start = Instant::now();
            let stop = self.stop.clone();
            let after = tokio::select! {
                ended = self.watch_once() => match ended {
                    Ended::Done => return,
                    Ended::Retry(after) => after,
                },
                _ = stop.cancelled() => return,
            };
            let next = (Instant::now() + after).max(start + MIN_WATCH_SPACING);
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = self.stop.cancelled() => return,
            }
        }
    }

    /// Passes an event on; false when the consumer is gone.
    async fn send(&self, event: WatchEvent<K>) -> bool {
        self.tx.send(event).await.is_ok()
    }

    async fn watch_once(&mut self) -> Ended {
        let opts = ListOptions {
            resource_version: Some(self.last_rv.clone()),
            resource_version_match: None,
            allow_watch_bookmarks: true,
            ..self.opts.clone()
        };
        let mut stream = match self.lw.watch(opts).await {
            Ok(s) => s,
            Err(e) => {
                if let Some(s) = e
                    .status()
                    .filter(|s| s.is_forbidden() || s.is_unauthorized())
                {
                    self.send(WatchEvent::Error(s.clone())).await;
                    return Ended::Done;
                }
                tracing::debug!(error = %e, rv = %self.last_rv, "RetryWatcher: watch failed; retrying");
                return Ended::Retry(Duration::ZERO);
            }
        };
        while let Some(event) = stream.next().await {
            let (rv, forward) = match &event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                    (o.meta().resource_version.clone(), true)
                }
                WatchEvent::Bookmark(b) => (Some(b.resource_version.clone()), false),
                WatchEvent::Error(status) => return self.on_error(status.clone()).await,
            };
            let Some(rv) = rv.filter(|rv| !rv.is_empty()) else {
                let err = StatusError::internal(format!(
                    "retryWatcher: object of a {} event has no resourceVersion",
                    event_type(&event)
                ));
                self.send(WatchEvent::Error(err)).await;
                return Ended::Done;
            };
            if forward && !self.send(event).await {
                return Ended::Done;
            }
            self.last_rv = rv;
        }
        Ended::Retry(Duration::ZERO)
    }

    async fn on_error(&self, status: StatusError) -> Ended {
        match status.code() {
            410 => {
                self.send(WatchEvent::Error(status)).await;
                Ended::Done
            }
            500 | 504 => {
                let secs = status.retry_after_seconds().unwrap_or(0).max(0);
                Ended::Retry(Duration::from_secs(u64::try_from(secs).unwrap_or(0)))
            }
            _ => Ended::Retry(Duration::ZERO),
        }
    }
}

fn event_type<K>(event: &WatchEvent<K>) -> &'static str {
    match event {
        WatchEvent::Added(_) => "ADDED",
        WatchEvent::Modified(_) => "MODIFIED",
        WatchEvent::Deleted(_) => "DELETED",
        WatchEvent::Bookmark(_) => "BOOKMARK",
        WatchEvent::Error(_) => "ERROR",
    }
}

/// A boxed error of a condition.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A condition on watch events (client-go's `ConditionFunc`): `Ok(true)` when satisfied.
pub type Condition<K> = Box<dyn FnMut(&WatchEvent<K>) -> Result<bool, BoxError> + Send>;

/// Why [`until_without_retry`] (or [`until`], [`until_with_sync`]) gave up; it carries the
/// last event seen, if any.
#[derive(Debug, thiserror::Error)]
pub enum UntilError<K> {
    /// The stream ended before every condition was satisfied (`ErrWatchClosed`).
    #[error("watch closed before UntilWithoutRetry timeout")]
    WatchClosed {
        /// The last event seen.
        last: Option<WatchEvent<K>>,
    },
    /// The stop future completed first (`wait.ErrWaitTimeout`).
    #[error("timed out waiting for the condition")]
    Interrupted {
        /// The last event seen.
        last: Option<WatchEvent<K>>,
    },
    /// A condition failed.
    #[error("{source}")]
    Condition {
        /// The last event seen (the one the condition failed on).
        last: Option<WatchEvent<K>>,
        /// The condition's error.
        source: BoxError,
    },
    /// The watcher could not start.
    #[error(transparent)]
    Start(#[from] UnsupportedResourceVersion),
    /// [`until_with_sync`]'s informer did not sync before the stop future completed.
    #[error("UntilWithSync: unable to sync caches: stopped before the caches synced")]
    Sync,
    /// [`until_with_sync`]'s precondition failed.
    #[error("precondition: {0}")]
    Precondition(#[source] BoxError),
}

impl<K> UntilError<K> {
    /// The last event seen before giving up, if any.
    pub fn last_event(&self) -> Option<&WatchEvent<K>> {
        match self {
            UntilError::WatchClosed { last }
            | UntilError::Interrupted { last }
            | UntilError::Condition { last, .. } => last.as_ref(),
            _ => None,
        }
    }
}

/// Reads `events` until every condition is satisfied in order, `events` ends, or `stop`
/// completes (client-go's `UntilWithoutRetry`). `Ok(None)` when there are no conditions.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kubegen_runtime::client::WatchEvent;
/// use kubegen_runtime::watch::{until_without_retry, Condition};
///
/// let events = futures::stream::iter([WatchEvent::Added(1), WatchEvent::Modified(2)]);
/// let conditions: Vec<Condition<i32>> = vec![
///     Box::new(|e| Ok(matches!(e, WatchEvent::Added(_)))),
///     Box::new(|e| Ok(matches!(e, WatchEvent::Modified(_)))),
/// ];
/// let last = until_without_retry(std::future::pending(), events, conditions).await;
/// assert_eq!(last.ok().flatten(), Some(WatchEvent::Modified(2)));
/// # }
/// ```
pub async fn until_without_retry<K, S>(
    stop: impl Future<Output = ()>,
    events: S,
    conditions: Vec<Condition<K>>,
) -> Result<Option<WatchEvent<K>>, UntilError<K>>
where
    S: Stream<Item = WatchEvent<K>>,
{
    let mut events = std::pin::pin!(events);
    let mut stop = std::pin::pin!(stop);
    let mut last: Option<WatchEvent<K>> = None;
    for (i, mut condition) in conditions.into_iter().enumerate() {
        if i > 0
            && let Some(event) = &last
        {
            match condition(event) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(source) => return Err(UntilError::Condition { last, source }),
            }
        }
        loop {
            let event = tokio::select! {
                e = events.next() => e,
                _ = &mut stop => return Err(UntilError::Interrupted { last }),
            };
            let Some(event) = event else {
                return Err(UntilError::WatchClosed { last });
            };
            let verdict = condition(&event);
            last = Some(event);
            match verdict {
                Ok(true) => break,
                Ok(false) => {}
                Err(source) => return Err(UntilError::Condition { last, source }),
            }
        }
    }
    Ok(last)
}

/// A [`RetryWatcher`] from `initial_rv` under [`until_without_retry`] (client-go's
/// `Until`); the watcher is stopped on return.
pub async fn until<K: Object>(
    stop: impl Future<Output = ()>,
    initial_rv: &str,
    lw: Arc<dyn ListerWatcher<K>>,
    opts: ListOptions,
    conditions: Vec<Condition<K>>,
) -> Result<Option<WatchEvent<K>>, UntilError<K>> {
    let watcher = RetryWatcher::new(initial_rv, lw, opts)?;
    until_without_retry(stop, watcher, conditions).await
}

/// A precondition of [`until_with_sync`], run on the synced cache: `Ok(true)` ends the
/// wait at once.
pub type Precondition<K> = Box<dyn FnOnce(&ReadOnlyIndexer<K>) -> Result<bool, BoxError> + Send>;

/// Forwards an informer's notifications as watch events.
struct Forward<K>(mpsc::UnboundedSender<WatchEvent<K>>);

impl<K: Object> ResourceEventHandler<K> for Forward<K> {
    fn on_add(&self, obj: &Arc<K>, _is_in_initial_list: bool) {
        let _ = self.0.send(WatchEvent::Added(K::clone(obj)));
    }
    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        let _ = self.0.send(WatchEvent::Modified(K::clone(new)));
    }
    fn on_delete(&self, obj: &DeltaObject<K>) {
        if let Some(obj) = obj.object() {
            let _ = self.0.send(WatchEvent::Deleted(K::clone(obj)));
        }
    }
}

/// Runs an informer over `lw` and waits for the conditions on its notifications
/// (client-go's `UntilWithSync`). With a precondition, it first waits for the cache to
/// sync (or fails with [`UntilError::Sync`] if `stop` completes first) and runs the
/// precondition on it: an error is returned, `true` ends with `Ok(None)`, `false` goes on
/// with the conditions. The informer is stopped on return.
pub async fn until_with_sync<K: Object + serde::de::DeserializeOwned>(
    stop: impl Future<Output = ()>,
    lw: Arc<dyn ListerWatcher<K>>,
    precondition: Option<Precondition<K>>,
    conditions: Vec<Condition<K>>,
) -> Result<Option<WatchEvent<K>>, UntilError<K>> {
    let informer = SharedIndexInformer::new(lw, InformerOptions::default());
    let (tx, rx) = mpsc::unbounded_channel();
    // The informer has not started, so the registration cannot fail.
    if let Err(e) = informer.add_event_handler(Forward(tx)) {
        return Err(UntilError::Precondition(Box::new(e)));
    }
    let token = CancellationToken::new();
    let _stop_informer = token.clone().drop_guard();
    let running = {
        let informer = informer.clone();
        let token = token.clone();
        tokio::spawn(async move { informer.run(token).await })
    };
    let mut stop = std::pin::pin!(stop);
    if let Some(precondition) = precondition {
        let synced = tokio::select! {
            s = informer.wait_for_sync(&token) => s,
            _ = &mut stop => false,
        };
        if !synced {
            token.cancel();
            let _ = running.await;
            return Err(UntilError::Sync);
        }
        match precondition(informer.indexer()) {
            Ok(true) => return Ok(None),
            Ok(false) => {}
            Err(e) => return Err(UntilError::Precondition(e)),
        }
    }
    let events = tokio_stream_from(rx);
    until_without_retry(stop, events, conditions).await
}

/// An unbounded receiver as a stream.
fn tokio_stream_from<T>(mut rx: mpsc::UnboundedReceiver<T>) -> impl Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[cfg(test)]
mod tests;
