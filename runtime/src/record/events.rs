//! events.k8s.io/v1 event recording (client-go's `tools/events`): a broadcaster writing
//! to one sink, a recorder, isomorphic-event series and a fake recorder.
//!
//! Contract:
//! - [`Recorder::eventf`] never blocks: a first occurrence is cached and queued for a
//!   POST; the second isomorphic occurrence (same type, action, reason, reporting
//!   controller and instance, regarding and related references; the note does not count)
//!   gets `series {count: 2, lastObservedTime: now}` and is queued as a strategic-merge
//!   PATCH of the first event's name holding only `series`; later occurrences only count
//!   (`series.count += 1`, `lastObservedTime = now`) and are written by the loops below.
//! - The queue holds [`MAX_QUEUED_EVENTS`] (1000) events (full: dropped);
//!   [`WORKERS`] (8) tasks write concurrently, with no ordering between events.
//! - A write with a series is a PATCH, followed by a POST (resourceVersion cleared) when
//!   the PATCH answers 404; without a series it is a POST. AlreadyExists on a POST that
//!   followed a series PATCH, transport and unexpected-response errors are retried; every
//!   other error gives up. At most [`DEFAULT_MAX_TRIES`] (12) attempts, each wait
//!   [`DEFAULT_SLEEP`] (10 s) plus up to 25 % jitter.
//! - Two loops start with [`EventBroadcaster::start_recording_to_sink`] and run at once,
//!   then every [`REFRESH_INTERVAL`] (30 min: every cached series is PATCHed again) and
//!   every [`FINISH_INTERVAL`] (6 min: series not observed for 6 min get a final PATCH
//!   and leave the cache; events without series older than 6 min leave it unwritten).
//!
//! Time is `tokio::time` (see [the record module](super)).
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kubegen_runtime::record::events::{EventBroadcaster, EventRecorder};
//! use kubegen_runtime::record::reference;
//! use kubegen_runtime::testing::ApiServer;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let server = ApiServer::new();
//! let client = kube::Client::new(server.service(), "default");
//! let broadcaster = EventBroadcaster::new(client);
//! broadcaster.start_recording_to_sink(CancellationToken::new()).unwrap();
//! let recorder = broadcaster.new_recorder("my-controller");
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("web".into());
//! recorder.eventf(&reference(&pod), None, "Normal", "Started", "Start", format_args!("note"));
//! broadcaster.shutdown();
//! # }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
pub use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::reference::{generate_event_name, Clock};
use super::sink::SinkError;
use super::{DEFAULT_MAX_TRIES, DEFAULT_SLEEP, EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING};
use crate::client::{Patch, PatchOptions, ResourceClient, WriteOptions};
use crate::errors::StatusError;
use crate::fields;
use crate::object::{GroupVersion, GroupVersionKind};

pub use super::MAX_QUEUED_EVENTS;

/// Tasks writing events concurrently (client-go's `workerCount`).
pub const WORKERS: usize = 8;
/// How often every cached series is PATCHed again (client-go's `refreshTime`).
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(30 * 60);
/// How often, and after how long unobserved, a series is finished (client-go's
/// `finishTime`).
pub const FINISH_INTERVAL: Duration = Duration::from_secs(6 * 60);

/// Writes events.k8s.io/v1 events (client-go's `events.EventSink`).
pub trait EventSink: Send + Sync + 'static {
    /// Creates the event in its namespace.
    fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>>;
    /// Patches the event named like `event` with a strategic-merge `patch`.
    fn patch<'a>(
        &'a self,
        event: &'a Event,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Event, SinkError>>;
}

fn namespaced(client: &kube::Client, event: &Event) -> Result<ResourceClient<Event>, SinkError> {
    match event.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => Ok(ResourceClient::namespaced(client.clone(), ns)),
        _ => Err(SinkError::Request(
            "can't create an event with empty namespace".into(),
        )),
    }
}

/// A [`kube::Client`] is the sink of `/apis/events.k8s.io/v1/namespaces/<ns>/events`
/// (client-go's `EventSinkImpl`); an event with an empty namespace is an error.
impl EventSink for kube::Client {
    fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(async move {
            Ok(namespaced(self, event)?
                .create(event, &WriteOptions::default())
                .await?)
        })
    }

    fn patch<'a>(
        &'a self,
        event: &'a Event,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(async move {
            let name = event.metadata.name.as_deref().unwrap_or_default();
            let p = Patch::Strategic(patch.clone());
            Ok(namespaced(self, event)?
                .patch(name, &p, &PatchOptions::default())
                .await?)
        })
    }
}

/// The broadcaster is already writing to its sink.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("broadcaster is already recording to a sink")]
pub struct AlreadyRecording;

pub(crate) struct Inner {
    sink: Box<dyn EventSink>,
    pub(crate) cache: Mutex<HashMap<String, Event>>,
    queue: mpsc::Sender<Event>,
    receiver: Mutex<Option<mpsc::Receiver<Event>>>,
    pub(crate) stop: CancellationToken,
    pub(crate) clock: Clock,
    pub(crate) sleep: Duration,
}

/// Records events.k8s.io/v1 events to one sink (client-go's `events.EventBroadcaster`).
#[derive(Clone)]
pub struct EventBroadcaster {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBroadcaster").finish_non_exhaustive()
    }
}

impl EventBroadcaster {
    /// A broadcaster writing to `sink` (a [`kube::Client`], or a sink of your own).
    pub fn new(sink: impl EventSink) -> Self {
        EventBroadcaster::with_clock(sink, Clock::new(), DEFAULT_SLEEP)
    }

    /// A broadcaster with a clock of known start and a retry wait (tests).
    pub fn with_clock(sink: impl EventSink, clock: Clock, sleep: Duration) -> Self {
        let (tx, rx) = mpsc::channel(MAX_QUEUED_EVENTS);
        EventBroadcaster {
            inner: Arc::new(Inner {
                sink: Box::new(sink),
                cache: Mutex::new(HashMap::new()),
                queue: tx,
                receiver: Mutex::new(Some(rx)),
                stop: CancellationToken::new(),
                clock,
                sleep,
            }),
        }
    }

    /// Starts the writers and the series loops until `stop` (or
    /// [`EventBroadcaster::shutdown`]); a second call is an error
    /// (`StartRecordingToSinkWithContext`). Call it inside a tokio runtime.
    pub fn start_recording_to_sink(&self, stop: CancellationToken) -> Result<(), AlreadyRecording> {
        let rx = self.inner.receiver.lock().take().ok_or(AlreadyRecording)?;
        let inner = self.inner.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            inner.stop.cancel();
        });
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        for _ in 0..WORKERS {
            let (inner, rx) = (self.inner.clone(), rx.clone());
            tokio::spawn(async move {
                loop {
                    let next = tokio::select! {
                        _ = inner.stop.cancelled() => None,
                        ev = async { rx.lock().await.recv().await } => ev,
                    };
                    let Some(ev) = next else { break };
                    inner.attempt_recording(ev).await;
                }
            });
        }
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let mut refresh = tokio::time::interval(REFRESH_INTERVAL);
            let mut finish = tokio::time::interval(FINISH_INTERVAL);
            loop {
                tokio::select! {
                    _ = inner.stop.cancelled() => break,
                    _ = refresh.tick() => inner.refresh_series().await,
                    _ = finish.tick() => inner.finish_series().await,
                }
            }
        });
        Ok(())
    }

    /// A recorder whose reporting controller is `reporting_controller` and reporting
    /// instance `<reporting_controller>-<hostname>` (`NewRecorder`).
    pub fn new_recorder(&self, reporting_controller: &str) -> Recorder {
        Recorder {
            broadcaster: self.clone(),
            reporting_controller: reporting_controller.to_owned(),
            reporting_instance: format!("{reporting_controller}-{}", hostname()),
        }
    }

    /// Stops the writers and the loops; queued events are not written.
    pub fn shutdown(&self) {
        self.inner.stop.cancel();
    }
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// The isomorphic key: everything that makes two events one series (not the note).
fn isomorphic_key(e: &Event) -> String {
    serde_json::to_string(&(
        &e.type_,
        &e.action,
        &e.reason,
        &e.reporting_controller,
        &e.reporting_instance,
        &e.regarding,
        &e.related,
    ))
    .unwrap_or_default()
}

impl Inner {
    /// Caches an event and returns what to write now, if anything (`recordToSink`).
    pub(crate) fn observe(&self, event: Event) -> Option<Event> {
        let key = isomorphic_key(&event);
        let now = MicroTime(self.clock.now());
        let mut cache = self.cache.lock();
        match cache.get_mut(&key) {
            Some(cached) => match &mut cached.series {
                Some(series) => {
                    series.count += 1;
                    series.last_observed_time = now;
                    None
                }
                None => {
                    cached.series = Some(EventSeries {
                        count: 2,
                        last_observed_time: now,
                    });
                    Some(cached.clone())
                }
            },
            None => {
                cache.insert(key, event.clone());
                Some(event)
            }
        }
    }

    /// One write; `Err(true)` when worth retrying (`recordEvent`).
    pub(crate) async fn record_event(&self, event: &Event) -> Result<Event, bool> {
        let mut patched = None;
        if let Some(series) = &event.series {
            let patch = json!({ "series": series });
            patched = Some(self.sink.patch(event, &patch).await);
        }
        let after_patch = patched.is_some();
        let result = match patched {
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
            Ok(e) => Ok(e),
            Err(SinkError::Api(s)) if s.is_already_exists() && after_patch => {
                tracing::warn!(error = %s, "event series already exists; retrying");
                Err(true)
            }
            Err(e) if e.is_retryable() => {
                tracing::warn!(error = %e, "unable to write event (may retry after sleeping)");
                Err(true)
            }
            Err(e) => {
                tracing::error!(error = %e, "server rejected event (will not retry)");
                Err(false)
            }
        }
    }

    /// Writes with retries (`attemptRecording`); the server's event on success.
    pub(crate) async fn attempt_recording(&self, event: Event) -> Option<Event> {
        let mut tries = 0;
        loop {
            match self.record_event(&event).await {
                Ok(e) => return Some(e),
                Err(false) => return None,
                Err(true) => {}
            }
            tries += 1;
            if tries >= DEFAULT_MAX_TRIES {
                tracing::error!(event = ?event.metadata.name, "unable to write event (retry limit exceeded)");
                return None;
            }
            let wait = self.sleep + self.sleep.mul_f64(0.25 * rand::random::<f64>());
            tokio::select! {
                _ = self.stop.cancelled() => return None,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// PATCHes every cached series again; keeps the reply unless the entry changed
    /// meanwhile (`refreshExistingEventSeries`).
    pub(crate) async fn refresh_series(&self) {
        let series: Vec<(String, Event)> = self
            .cache
            .lock()
            .iter()
            .filter(|(_, e)| e.series.is_some())
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        for (key, event) in series {
            if let Some(written) = self.attempt_recording(event.clone()).await {
                let mut cache = self.cache.lock();
                if cache.get(&key) == Some(&event) {
                    cache.insert(key, written);
                }
            }
        }
    }

    /// Finishes series unobserved for [`FINISH_INTERVAL`] with one PATCH and forgets
    /// old events without series (`finishSeries`).
    pub(crate) async fn finish_series(&self) {
        let now = self.clock.now();
        let cutoff = now
            .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(
                FINISH_INTERVAL.as_secs() as i64,
            ))
            .unwrap_or(now);
        let old = |t: &MicroTime| t.0 < cutoff;
        let mut to_finish = Vec::new();
        self.cache.lock().retain(|key, e| match &e.series {
            Some(s) => {
                if old(&s.last_observed_time) {
                    to_finish.push((key.clone(), e.clone()));
                }
                true
            }
            None => !e.event_time.as_ref().is_some_and(old),
        });
        for (key, event) in to_finish {
            if self.record_event(&event).await != Err(true) {
                self.cache.lock().remove(&key);
            }
        }
    }
}

/// Records events.k8s.io/v1 events (client-go's `events.EventRecorder`); implemented
/// by [`Recorder`] and [`FakeRecorder`].
pub trait EventRecorder: Send + Sync {
    /// Records an event about `regarding` (and optionally `related`) whose note is
    /// formatted (`Eventf`). `event_type` must be `"Normal"` or `"Warning"`.
    fn eventf(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        event_type: &str,
        reason: &str,
        action: &str,
        note: fmt::Arguments<'_>,
    );
}

/// The recorder of an events.k8s.io [`EventBroadcaster`].
#[derive(Clone, Debug)]
pub struct Recorder {
    broadcaster: EventBroadcaster,
    reporting_controller: String,
    reporting_instance: String,
}

impl Recorder {
    /// The reporting instance (`<controller>-<hostname>`).
    pub fn reporting_instance(&self) -> &str {
        &self.reporting_instance
    }
}

impl EventRecorder for Recorder {
    fn eventf(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        event_type: &str,
        reason: &str,
        action: &str,
        note: fmt::Arguments<'_>,
    ) {
        if event_type != EVENT_TYPE_NORMAL && event_type != EVENT_TYPE_WARNING {
            tracing::error!(r#type = event_type, "Unsupported event type");
            return;
        }
        let inner = &self.broadcaster.inner;
        let now = inner.clock.now();
        let namespace = regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(generate_event_name(
                    regarding.name.as_deref().unwrap_or_default(),
                    now.as_nanosecond(),
                )),
                namespace: Some(namespace),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            reporting_controller: Some(self.reporting_controller.clone()),
            reporting_instance: Some(self.reporting_instance.clone()),
            action: Some(action.to_owned()),
            reason: Some(reason.to_owned()),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            note: Some(note.to_string()),
            type_: Some(event_type.to_owned()),
            ..Default::default()
        };
        if inner.stop.is_cancelled() {
            return;
        }
        if let Some(ev) = inner.observe(event)
            && inner.queue.try_send(ev).is_err()
        {
            tracing::error!("unable to record event: too many queued events, dropped event");
        }
    }
}

/// A field selector for the events about one object (client-go's
/// `events.GetFieldSelector`): `regarding.*` keys for events.k8s.io `v1`/`v1beta1`,
/// `involvedObject.*` for core `v1`; only non-empty inputs make keys.
///
/// ```
/// use kubegen_runtime::object::{GroupVersion, GroupVersionKind};
/// use kubegen_runtime::record::events::field_selector;
///
/// let gv = GroupVersion::gv("events.k8s.io", "v1");
/// let gvk = GroupVersionKind::gvk("apps", "v1", "Deployment");
/// let s = field_selector(&gv, &gvk, "web", "").unwrap();
/// assert_eq!(s.to_string(), "regarding.apiVersion=apps/v1,regarding.kind=Deployment,regarding.name=web");
/// ```
pub fn field_selector(
    events: &GroupVersion,
    regarding: &GroupVersionKind,
    name: &str,
    uid: &str,
) -> Result<fields::Selector, StatusError> {
    let prefix = match (events.group.as_str(), events.version.as_str()) {
        ("events.k8s.io", "v1" | "v1beta1") => "regarding",
        ("", "v1") => "involvedObject",
        (g, v) => {
            let gv = if g.is_empty() {
                v.to_owned()
            } else {
                format!("{g}/{v}")
            };
            return Err(StatusError::bad_request(format!("unknown version {gv}")));
        }
    };
    let api_version = match (regarding.group.as_str(), regarding.version.as_str()) {
        ("", v) => v.to_owned(),
        (g, v) => format!("{g}/{v}"),
    };
    let mut set = BTreeMap::new();
    for (k, v) in [
        ("kind", regarding.kind.as_str()),
        ("apiVersion", api_version.as_str()),
        ("name", name),
        ("uid", uid),
    ] {
        if !v.is_empty() {
            set.insert(format!("{prefix}.{k}"), v.to_owned());
        }
    }
    Ok(fields::Selector::from_set(&set))
}

/// A recorder for tests that sends `"<type> <reason> <note>"` per event (client-go's
/// `events.FakeRecorder`); verbose adds the action and the objects' kinds.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kubegen_runtime::record::events::{EventRecorder, FakeRecorder};
/// use kubegen_runtime::record::reference;
///
/// let (recorder, events) = FakeRecorder::new(10);
/// let pod = reference(&Pod::default());
/// recorder.eventf(&pod, None, "Normal", "Started", "Start", format_args!("note {}", "x"));
/// assert_eq!(events.try_recv().unwrap(), "Normal Started note x");
/// ```
#[derive(Debug, Clone)]
pub struct FakeRecorder {
    events: Option<std::sync::mpsc::SyncSender<String>>,
    verbose: bool,
}

impl FakeRecorder {
    /// A recorder and the receiving end of its channel of `buffer` lines (a full
    /// buffer blocks the caller).
    pub fn new(buffer: usize) -> (Self, std::sync::mpsc::Receiver<String>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(buffer);
        (
            FakeRecorder {
                events: Some(tx),
                verbose: false,
            },
            rx,
        )
    }

    /// Adds the action and `{kind=K,apiVersion=gv}` of regarding and related (`Verbose`).
    pub fn verbose(mut self, verbose: bool) -> Self {
        self.verbose = verbose;
        self
    }
}

fn object_text(r: &ObjectReference) -> Option<String> {
    let (k, v) = (
        r.kind.as_deref().unwrap_or_default(),
        r.api_version.as_deref().unwrap_or_default(),
    );
    (!k.is_empty() || !v.is_empty()).then(|| format!(" {{kind={k},apiVersion={v}}}"))
}

impl EventRecorder for FakeRecorder {
    fn eventf(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        event_type: &str,
        reason: &str,
        action: &str,
        note: fmt::Arguments<'_>,
    ) {
        let Some(tx) = &self.events else { return };
        let line = if self.verbose {
            let mut l = format!("{event_type} {reason} {action} {note}");
            for r in std::iter::once(regarding).chain(related) {
                l.extend(object_text(r));
            }
            l
        } else {
            format!("{event_type} {reason} {note}")
        };
        // The receiver may be gone when a test no longer reads.
        let _ = tx.send(line);
    }
}
