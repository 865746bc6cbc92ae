//! The core/v1 event broadcaster, its watchers and its recorder (client-go's
//! `record.EventBroadcaster` over `watch.Broadcaster`).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource as WireSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::correlator::{CorrelatorOptions, EventCorrelator};
use super::reference::{generate_event_name, Clock};
use super::sink::EventSink;
use super::{
    EventRecorder, EventSource, DEFAULT_MAX_TRIES, DEFAULT_SLEEP, EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING, MAX_QUEUED_EVENTS,
};

/// Options of an [`EventBroadcaster`] (client-go's `NewBroadcaster` options).
#[derive(Debug, Clone)]
pub struct BroadcasterOptions {
    /// The correlator of each sink.
    pub correlator: CorrelatorOptions,
    /// The wait between sink attempts ([`DEFAULT_SLEEP`]; the first is random below it).
    pub sleep: Duration,
    /// Sink attempts per event at most ([`DEFAULT_MAX_TRIES`]).
    pub max_tries: u32,
    /// The clock of event timestamps (`None`: [`Clock::new`] at creation).
    pub clock: Option<Clock>,
}

impl Default for BroadcasterOptions {
    fn default() -> Self {
        BroadcasterOptions {
            correlator: CorrelatorOptions::default(),
            sleep: DEFAULT_SLEEP,
            max_tries: DEFAULT_MAX_TRIES,
            clock: None,
        }
    }
}

impl BroadcasterOptions {
    /// Sets the wait between sink attempts (`WithSleepDuration`).
    pub fn sleep(mut self, sleep: Duration) -> Self {
        self.sleep = sleep;
        self
    }

    /// Sets the correlator options (`WithCorrelatorOptions`).
    pub fn correlator(mut self, options: CorrelatorOptions) -> Self {
        self.correlator = options;
        self
    }
}

struct Shared {
    watchers: Mutex<Vec<(u64, mpsc::Sender<Arc<Event>>)>>,
    next_id: AtomicU64,
    stop: CancellationToken,
    options: BroadcasterOptions,
    clock: Clock,
}

/// Hands recorded events to watchers: sinks, loggers and callbacks.
///
/// See the [module docs](super) for the queue sizes and the correlator's defaults.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kubegen_runtime::record::{reference, ClientEventSink, EventBroadcaster, EventRecorder, EventSource};
/// use kubegen_runtime::testing::ApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = ApiServer::new();
/// let client = kube::Client::new(server.service(), "default");
/// let broadcaster = EventBroadcaster::new();
/// let sink = broadcaster.start_recording_to_sink(ClientEventSink::new(client));
/// let recorder = broadcaster.new_recorder(EventSource::new("sample-controller", ""));
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web".into());
/// pod.metadata.namespace = Some("ns".into());
/// recorder.event(&reference(&pod), "Normal", "Synced", "Pod synced successfully");
/// broadcaster.shutdown();
/// sink.join().await; // the queued event is written before the sink ends
/// assert_eq!(server.requests().iter().filter(|r| r.resource == "events").count(), 1);
/// # }
/// ```
#[derive(Clone)]
pub struct EventBroadcaster {
    shared: Arc<Shared>,
    /// Only broadcasters (and their recorders and watch handles) hold it, so the
    /// distributing task also ends when the last of them is dropped.
    incoming: mpsc::Sender<Arc<Event>>,
}

impl fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBroadcaster")
            .field("watchers", &self.shared.watchers.lock().len())
            .finish_non_exhaustive()
    }
}

impl Default for EventBroadcaster {
    fn default() -> Self {
        EventBroadcaster::new()
    }
}

/// A registered watcher: [`WatchHandle::stop`] unregisters it; [`WatchHandle::join`]
/// waits until it has handled everything it was given.
#[derive(Debug)]
pub struct WatchHandle {
    id: u64,
    broadcaster: EventBroadcaster,
    task: Option<JoinHandle<()>>,
}

impl WatchHandle {
    /// Stops delivering events to this watcher; it still handles those already queued.
    pub fn stop(&mut self) {
        self.broadcaster
            .shared
            .watchers
            .lock()
            .retain(|(id, _)| *id != self.id);
    }

    /// Waits until the watcher has ended: after [`WatchHandle::stop`] or
    /// [`EventBroadcaster::shutdown`], once its queue is handled.
    pub async fn join(mut self) {
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            tracing::error!(error = %e, "event watcher task failed");
        }
    }
}

impl EventBroadcaster {
    /// A broadcaster with the default options. Call it inside a tokio runtime: it
    /// starts the task that hands events to watchers.
    pub fn new() -> Self {
        EventBroadcaster::with_options(BroadcasterOptions::default())
    }

    /// A broadcaster with `options`.
    pub fn with_options(options: BroadcasterOptions) -> Self {
        let (tx, rx) = mpsc::channel(MAX_QUEUED_EVENTS);
        let clock = options.clock.unwrap_or_default();
        let shared = Arc::new(Shared {
            watchers: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            stop: CancellationToken::new(),
            options,
            clock,
        });
        tokio::spawn(distribute(shared.clone(), rx));
        EventBroadcaster {
            shared,
            incoming: tx,
        }
    }

    /// A recorder of events from `source` (`NewRecorder`).
    pub fn new_recorder(&self, source: EventSource) -> Recorder {
        Recorder {
            broadcaster: self.clone(),
            source,
        }
    }

    /// Stops the broadcaster: events still queued are handed to the watchers, which
    /// handle them and end; later events are dropped, and a failed sink write is not
    /// retried (`Shutdown`). Dropping every clone of the broadcaster, its recorders and
    /// its watch handles ends the watchers as well, without the retry cut-off.
    pub fn shutdown(&self) {
        self.shared.stop.cancel();
    }

    fn register<F, Fut>(&self, mut handle: F) -> WatchHandle
    where
        F: FnMut(Arc<Event>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send,
    {
        let (tx, mut rx) = mpsc::channel::<Arc<Event>>(MAX_QUEUED_EVENTS);
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        if !self.shared.stop.is_cancelled() {
            self.shared.watchers.lock().push((id, tx));
        }
        let task = tokio::spawn(async move {
            while let Some(ev) = rx.recv().await {
                handle(ev).await;
            }
        });
        WatchHandle {
            id,
            broadcaster: self.clone(),
            task: Some(task),
        }
    }

    /// Calls `handler` with every event (`StartEventWatcher`).
    pub fn start_event_watcher(
        &self,
        mut handler: impl FnMut(&Event) + Send + 'static,
    ) -> WatchHandle {
        self.register(move |ev| {
            handler(&ev);
            std::future::ready(())
        })
    }

    /// Logs every event with `tracing` at INFO (`StartLogging`).
    ///
    /// `tracing` prints nothing until the program installs a subscriber, for instance
    /// `tracing_subscriber::fmt::init()` at the start of `main` (docs/quickstart.md):
    /// without one, these logs go nowhere.
    pub fn start_logging(&self) -> WatchHandle {
        self.start_event_watcher(|e| {
            let o = &e.involved_object;
            tracing::info!(
                object = %format!("{}/{}", o.namespace.as_deref().unwrap_or_default(),
                    o.name.as_deref().unwrap_or_default()),
                kind = o.kind.as_deref().unwrap_or_default(),
                r#type = e.type_.as_deref().unwrap_or_default(),
                reason = e.reason.as_deref().unwrap_or_default(),
                message = e.message.as_deref().unwrap_or_default(),
                "Event occurred"
            );
        })
    }

    /// Writes every event to `sink` through one [`EventCorrelator`], one event at a time
    /// (`StartRecordingToSink`).
    pub fn start_recording_to_sink(&self, sink: impl EventSink) -> WatchHandle {
        let mut options = self.shared.options.correlator.clone();
        options.clock.get_or_insert(self.shared.clock);
        let writer = Arc::new(SinkWriter {
            sink: Box::new(sink),
            correlator: Mutex::new(EventCorrelator::new(options)),
            sleep: self.shared.options.sleep,
            max_tries: self.shared.options.max_tries,
            stop: self.shared.stop.clone(),
        });
        self.register(move |ev| {
            let writer = writer.clone();
            async move { writer.record((*ev).clone()).await }
        })
    }

    fn action(&self, event: Event) {
        if self.shared.stop.is_cancelled() {
            tracing::debug!("event broadcaster is shut down; dropping the event");
            return;
        }
        if let Err(mpsc::error::TrySendError::Full(_)) = self.incoming.try_send(Arc::new(event)) {
            tracing::error!("unable to record event: too many queued events, dropped event");
        }
    }
}

/// Hands each incoming event to every watcher, dropping it for a watcher whose queue
/// is full; at shutdown hands what is queued and closes the watchers' queues.
async fn distribute(shared: Arc<Shared>, mut rx: mpsc::Receiver<Arc<Event>>) {
    let send = |ev: Arc<Event>| {
        for (_, w) in shared.watchers.lock().iter() {
            if w.try_send(ev.clone()).is_err() {
                tracing::debug!("event watcher queue full; dropping the event for it");
            }
        }
    };
    loop {
        tokio::select! {
            biased;
            ev = rx.recv() => match ev {
                Some(ev) => send(ev),
                None => break,
            },
            _ = shared.stop.cancelled() => {
                while let Ok(ev) = rx.try_recv() {
                    send(ev);
                }
                break;
            }
        }
    }
    shared.watchers.lock().clear();
}

/// One sink with its correlator (client-go's `recordToSink`).
pub(crate) struct SinkWriter {
    pub(crate) sink: Box<dyn EventSink>,
    pub(crate) correlator: Mutex<EventCorrelator>,
    pub(crate) sleep: Duration,
    pub(crate) max_tries: u32,
    pub(crate) stop: CancellationToken,
}

impl SinkWriter {
    /// Correlates the event and writes it, retrying as the module docs say.
    pub(crate) async fn record(&self, event: Event) {
        let result = self.correlator.lock().correlate(event);
        if result.skip {
            return;
        }
        let mut tries = 0;
        loop {
            if self.attempt(&result.event, result.patch.as_ref()).await {
                return;
            }
            tries += 1;
            if tries >= self.max_tries {
                tracing::error!(
                    event = ?result.event.metadata.name,
                    "unable to write event (retry limit exceeded)"
                );
                return;
            }
            let delay = if tries == 1 {
                self.sleep.mul_f64(rand::random::<f64>())
            } else {
                self.sleep
            };
            tokio::select! {
                _ = self.stop.cancelled() => {
                    tracing::info!("event broadcaster shut down; not retrying the event");
                    return;
                }
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// One attempt; true when done (written, or given up).
    async fn attempt(&self, event: &Event, patch: Option<&serde_json::Value>) -> bool {
        let update = event.count.unwrap_or_default() > 1;
        let mut result = None;
        if let (true, Some(patch)) = (update, patch) {
            result = Some(self.sink.patch(event, patch).await);
        }
        let result = match result {
            Some(Err(e)) if e.is_not_found() => None,
            r => r,
        };
        let result = match result {
            Some(r) => r,
            None => {
                let mut fresh = event.clone();
                fresh.metadata.resource_version = None;
                self.sink.create(&fresh).await
            }
        };
        match result {
            Ok(written) => {
                self.correlator.lock().update_state(&written);
                true
            }
            Err(e) if e.is_retryable() => {
                tracing::warn!(error = %e, "unable to write event (may retry after sleeping)");
                false
            }
            Err(e) => {
                tracing::error!(error = %e, "server rejected event (will not retry)");
                true
            }
        }
    }
}

/// The recorder of an [`EventBroadcaster`]: builds core/v1 events and hands them over
/// without blocking.
#[derive(Clone, Debug)]
pub struct Recorder {
    broadcaster: EventBroadcaster,
    source: EventSource,
}

impl Recorder {
    fn generate(
        &self,
        object: &ObjectReference,
        annotations: Option<&BTreeMap<String, String>>,
        event_type: &str,
        reason: &str,
        message: String,
    ) {
        if event_type != EVENT_TYPE_NORMAL && event_type != EVENT_TYPE_WARNING {
            tracing::error!(r#type = event_type, "Unsupported event type");
            return;
        }
        let now = self.broadcaster.shared.clock.now();
        let name = object.name.as_deref().unwrap_or_default();
        let namespace = object
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let non_empty = |s: &str| Some(s.to_owned()).filter(|s| !s.is_empty());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(generate_event_name(name, now.as_nanosecond())),
                namespace: Some(namespace),
                annotations: annotations.filter(|a| !a.is_empty()).cloned(),
                ..Default::default()
            },
            involved_object: object.clone(),
            reason: Some(reason.to_owned()),
            message: Some(message),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            type_: Some(event_type.to_owned()),
            source: Some(WireSource {
                component: non_empty(&self.source.component),
                host: non_empty(&self.source.host),
            }),
            reporting_component: Some(self.source.component.clone()),
            reporting_instance: Some(self.source.host.clone()),
            ..Default::default()
        };
        self.broadcaster.action(event);
    }
}

impl EventRecorder for Recorder {
    fn event(&self, object: &ObjectReference, event_type: &str, reason: &str, message: &str) {
        self.generate(object, None, event_type, reason, message.to_owned());
    }

    fn eventf(
        &self,
        object: &ObjectReference,
        event_type: &str,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        self.generate(object, None, event_type, reason, message.to_string());
    }

    fn annotated_eventf(
        &self,
        object: &ObjectReference,
        annotations: &BTreeMap<String, String>,
        event_type: &str,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        self.generate(
            object,
            Some(annotations),
            event_type,
            reason,
            message.to_string(),
        );
    }
}
