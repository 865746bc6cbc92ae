//! Event recording: client-go's `tools/record` (core/v1 Events) and, in [`events`],
//! `tools/events` (events.k8s.io/v1 Events).
//!
//! Contract:
//! - [`EventRecorder::event`] and friends never block and never fail: the event is
//!   handed to the [`EventBroadcaster`]'s incoming queue of [`MAX_QUEUED_EVENTS`] (1000)
//!   events; when that queue is full, or the type is not exactly `"Normal"` or
//!   `"Warning"`, the event is dropped with a log line.
//! - Every watcher ([`EventBroadcaster::start_recording_to_sink`],
//!   [`EventBroadcaster::start_logging`], [`EventBroadcaster::start_event_watcher`]) has
//!   its own queue of [`MAX_QUEUED_EVENTS`] and receives a copy of every event; a watcher
//!   whose queue is full misses that event (client-go's `DropIfChannelFull`).
//! - An event names its object by [`ObjectReference`] ([`reference`],
//!   [`partial_reference`]; kind and apiVersion come from the Rust type). Its name is
//!   `<object name>.<lowercase hex Unix nanoseconds>`, or a random UUID when that is not
//!   a DNS-1123 subdomain ([`generate_event_name`]); its namespace is the object's, or
//!   `"default"` for cluster-scoped objects.
//! - A sink has one [`EventCorrelator`] and writes on one task, in emission order. The
//!   correlator's defaults ([`CorrelatorOptions`]): LRU caches of
//!   [`DEFAULT_LRU_CACHE_SIZE`] (4096) keys; [`DEFAULT_AGGREGATE_MAX_EVENTS`] (10) similar
//!   events within [`DEFAULT_AGGREGATE_INTERVAL`] (600 s) become one
//!   `"(combined from similar events): ..."` event; a spam filter per source and object
//!   with a token bucket of [`DEFAULT_SPAM_BURST`] (25) tokens refilled at
//!   [`DEFAULT_SPAM_QPS`] (one token per 300 s).
//! - A repeated event (count > 1) is a strategic-merge PATCH of `count`,
//!   `lastTimestamp` and `message`, followed by a POST when the PATCH answers 404; a
//!   first event is a POST. An API error (any `Status`) or a request that cannot be
//!   built gives up at once; transport and unexpected-response errors are retried, at
//!   most [`DEFAULT_MAX_TRIES`] (12) attempts, the first wait uniformly random in
//!   `[0, 10 s)` and later waits [`DEFAULT_SLEEP`] (10 s). After
//!   [`EventBroadcaster::shutdown`] no attempt follows a failed one.
//!
//! Time is `tokio::time`: under a paused clock the aggregation window, the spam bucket,
//! the retry waits and the timestamps written (wall time at the broadcaster's start
//! plus the tokio time elapsed since) advance only with the clock.
//!
//! It does not validate reason or message lengths (the API server does), and the
//! broadcaster's tasks need a tokio runtime: create it inside one.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kubegen_runtime::record::{reference, EventBroadcaster, EventRecorder, EventSource};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let broadcaster = EventBroadcaster::new();
//! let mut seen = broadcaster.start_event_watcher(|ev| println!("{:?}", ev.reason));
//! // With a cluster: broadcaster.start_recording_to_sink(ClientEventSink::new(client));
//! let recorder = broadcaster.new_recorder(EventSource::new("my-controller", ""));
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("web".into());
//! pod.metadata.namespace = Some("default".into());
//! recorder.eventf(&reference(&pod), "Normal", "Synced", format_args!("synced {}", 1));
//! broadcaster.shutdown();
//! seen.stop();
//! # }
//! ```

mod broadcaster;
mod correlator;
pub mod events;
mod fake;
mod lru;
mod reference;
mod sink;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

pub use broadcaster::{BroadcasterOptions, EventBroadcaster, Recorder, WatchHandle};
pub use correlator::{
    aggregate_keys, aggregate_message, event_key, spam_key, Correlation, CorrelatorOptions,
    EventCorrelator, KeyFunc, DEFAULT_AGGREGATE_INTERVAL, DEFAULT_AGGREGATE_MAX_EVENTS,
    DEFAULT_LRU_CACHE_SIZE, DEFAULT_SPAM_BURST, DEFAULT_SPAM_QPS,
};
pub use fake::FakeRecorder;
pub use k8s_openapi::api::core::v1::{Event, EventSource as CoreEventSource, ObjectReference};
pub use reference::{
    generate_event_name, is_dns1123_subdomain, partial_reference, reference, reference_with, Clock,
};
pub use sink::{ClientEventSink, EventSink, SinkError};

/// The incoming queue of a broadcaster and the queue of each watcher hold this many
/// events (client-go's `maxQueuedEvents`).
pub const MAX_QUEUED_EVENTS: usize = 1000;
/// How many times a sink write is attempted at most (client-go's `maxTriesPerEvent`).
pub const DEFAULT_MAX_TRIES: u32 = 12;
/// The wait between later sink attempts (client-go's `defaultSleepDuration`); the wait
/// before the second attempt is uniformly random below it.
pub const DEFAULT_SLEEP: std::time::Duration = std::time::Duration::from_secs(10);

/// The event type of normal operation (`v1.EventTypeNormal`).
pub const EVENT_TYPE_NORMAL: &str = "Normal";
/// The event type of something possibly wrong (`v1.EventTypeWarning`).
pub const EVENT_TYPE_WARNING: &str = "Warning";

/// Who records events: a component name and, optionally, a host (`v1.EventSource`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct EventSource {
    /// The component (becomes `source.component` and `reportingComponent`).
    pub component: String,
    /// The host (becomes `source.host` and `reportingInstance`); may be empty.
    pub host: String,
}

impl EventSource {
    /// A source of `component` on `host`.
    pub fn new(component: impl Into<String>, host: impl Into<String>) -> Self {
        EventSource {
            component: component.into(),
            host: host.into(),
        }
    }
}

/// Records core/v1 events about objects (client-go's `record.EventRecorder`).
///
/// Implemented by the broadcaster's [`Recorder`] and by [`FakeRecorder`], so a
/// controller can take `Arc<dyn EventRecorder>` and tests a fake.
///
/// `event_type` must be `"Normal"` or `"Warning"` ([`EVENT_TYPE_NORMAL`],
/// [`EVENT_TYPE_WARNING`]); other types are dropped by [`Recorder`].
pub trait EventRecorder: Send + Sync {
    /// Records an event with `message` as given (`Event`).
    fn event(&self, object: &ObjectReference, event_type: &str, reason: &str, message: &str);

    /// Records an event whose message is formatted (`Eventf`): pass `format_args!(...)`.
    fn eventf(
        &self,
        object: &ObjectReference,
        event_type: &str,
        reason: &str,
        message: fmt::Arguments<'_>,
    );

    /// Records an event with `metadata.annotations` (`AnnotatedEventf`).
    fn annotated_eventf(
        &self,
        object: &ObjectReference,
        annotations: &BTreeMap<String, String>,
        event_type: &str,
        reason: &str,
        message: fmt::Arguments<'_>,
    );
}
