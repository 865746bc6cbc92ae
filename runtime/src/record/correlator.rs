//! The event correlator of one sink: aggregator, then dedup logger, then spam filter
//! (client-go's `events_cache.go`).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::lru::Lru;
use super::reference::Clock;
use crate::flowcontrol::TokenBucket;

/// Keys of each correlator cache (client-go's `maxLruCacheEntries`).
pub const DEFAULT_LRU_CACHE_SIZE: usize = 4096;
/// Similar events (same aggregate key, distinct messages) that make an aggregated event
/// (client-go's `defaultAggregateMaxEvents`).
pub const DEFAULT_AGGREGATE_MAX_EVENTS: usize = 10;
/// Similar events further apart than this start a fresh aggregation record (client-go's
/// `defaultAggregateIntervalInSeconds`).
pub const DEFAULT_AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// Tokens of a spam-filter bucket, full at first (client-go's `defaultSpamBurst`).
pub const DEFAULT_SPAM_BURST: u32 = 25;
/// Tokens added to a spam-filter bucket per second: one per 300 s (client-go's
/// `defaultSpamQPS`).
pub const DEFAULT_SPAM_QPS: f64 = 1.0 / 300.0;

/// Computes a cache key of an event (the spam filter's key, when replaced).
pub type KeyFunc = Arc<dyn Fn(&Event) -> String + Send + Sync>;

/// Options of an [`EventCorrelator`]; zero or `None` fields take the defaults
/// (client-go's `CorrelatorOptions`).
#[derive(Clone, Default)]
pub struct CorrelatorOptions {
    /// Keys of each LRU cache; 0: [`DEFAULT_LRU_CACHE_SIZE`].
    pub lru_cache_size: usize,
    /// Similar events that make an aggregated event; 0: [`DEFAULT_AGGREGATE_MAX_EVENTS`].
    pub max_events: usize,
    /// The aggregation window; zero: [`DEFAULT_AGGREGATE_INTERVAL`].
    pub max_interval: Duration,
    /// Spam-filter bucket size; 0: [`DEFAULT_SPAM_BURST`].
    pub burst: u32,
    /// Spam-filter refill per second; 0: [`DEFAULT_SPAM_QPS`].
    pub qps: f64,
    /// The spam filter's key; `None`: [`spam_key`] (source, object and type).
    pub spam_key_func: Option<KeyFunc>,
    /// The clock of the timestamps of aggregated events; `None`: [`Clock::new`].
    pub clock: Option<Clock>,
}

impl fmt::Debug for CorrelatorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CorrelatorOptions")
            .field("lru_cache_size", &self.lru_cache_size)
            .field("max_events", &self.max_events)
            .field("max_interval", &self.max_interval)
            .field("burst", &self.burst)
            .field("qps", &self.qps)
            .field("spam_key_func", &self.spam_key_func.is_some())
            .finish_non_exhaustive()
    }
}

/// What the correlator made of an event.
#[derive(Debug, Clone, PartialEq)]
pub struct Correlation {
    /// The event to write (an aggregated event replaces the input).
    pub event: Event,
    /// The strategic-merge patch for a repeated event (`count`, `lastTimestamp`,
    /// `message`); `None` for a first occurrence.
    pub patch: Option<Value>,
    /// The spam filter found no token: nothing is written.
    pub skip: bool,
}

/// Joins key parts with a separator no part of a reference or reason contains in
/// practice (client-go joins with none).
fn join(parts: &[&str]) -> String {
    parts.join("\u{1f}")
}

fn s(o: &Option<String>) -> &str {
    o.as_deref().unwrap_or_default()
}

fn source(e: &Event) -> (&str, &str) {
    match &e.source {
        Some(src) => (s(&src.component), s(&src.host)),
        None => ("", ""),
    }
}

/// The dedup key: source, the whole involved object (field path included), type,
/// reason and message (client-go's `getEventKey`).
pub fn event_key(e: &Event) -> String {
    let (c, h) = source(e);
    let o = &e.involved_object;
    join(&[
        c,
        h,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.field_path),
        s(&o.uid),
        s(&o.api_version),
        s(&e.type_),
        s(&e.reason),
        s(&e.message),
    ])
}

/// The spam key: source, the involved object without field path, and type (client-go's
/// `getSpamKey`).
pub fn spam_key(e: &Event) -> String {
    let (c, h) = source(e);
    let o = &e.involved_object;
    join(&[
        c,
        h,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.uid),
        s(&o.api_version),
        s(&e.type_),
    ])
}

/// The aggregate key (source, object without field path, type, reason, reporting
/// controller and instance) and the local key (the message) (client-go's
/// `EventAggregatorByReasonFunc`).
pub fn aggregate_keys(e: &Event) -> (String, String) {
    let (c, h) = source(e);
    let o = &e.involved_object;
    let key = join(&[
        c,
        h,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.uid),
        s(&o.api_version),
        s(&e.type_),
        s(&e.reason),
        s(&e.reporting_component),
        s(&e.reporting_instance),
    ]);
    (key, s(&e.message).to_owned())
}

/// The message of an aggregated event (client-go's
/// `EventAggregatorByReasonMessageFunc`).
pub fn aggregate_message(e: &Event) -> String {
    format!("(combined from similar events): {}", s(&e.message))
}

struct AggregateRecord {
    local_keys: HashSet<String>,
    last: Instant,
}

#[derive(Clone)]
struct Observation {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

/// Aggregates, deduplicates and rate-limits the events of one sink (client-go's
/// `EventCorrelator`).
///
/// ```
/// use kubegen_runtime::record::{CorrelatorOptions, Event, EventCorrelator};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut c = EventCorrelator::new(CorrelatorOptions::default());
/// let mut ev = Event::default();
/// ev.metadata.name = Some("web.1".into());
/// ev.count = Some(1);
/// ev.message = Some("m".into());
/// assert_eq!(c.correlate(ev.clone()).patch, None);
/// c.update_state(&ev);
/// let again = c.correlate(ev);
/// assert_eq!(again.event.count, Some(2));
/// assert_eq!(again.patch.unwrap()["count"], 2);
/// # }
/// ```
pub struct EventCorrelator {
    max_events: usize,
    max_interval: Duration,
    burst: u32,
    qps: f64,
    spam_key_func: Option<KeyFunc>,
    clock: Clock,
    aggregates: Lru<String, AggregateRecord>,
    observations: Lru<String, Observation>,
    spam: Lru<String, Arc<TokenBucket>>,
}

impl fmt::Debug for EventCorrelator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCorrelator")
            .field("max_events", &self.max_events)
            .field("max_interval", &self.max_interval)
            .field("burst", &self.burst)
            .field("qps", &self.qps)
            .finish_non_exhaustive()
    }
}

impl EventCorrelator {
    /// A correlator with `options` (zero fields take the defaults).
    pub fn new(options: CorrelatorOptions) -> Self {
        let size = if options.lru_cache_size == 0 {
            DEFAULT_LRU_CACHE_SIZE
        } else {
            options.lru_cache_size
        };
        EventCorrelator {
            max_events: if options.max_events == 0 {
                DEFAULT_AGGREGATE_MAX_EVENTS
            } else {
                options.max_events
            },
            max_interval: if options.max_interval.is_zero() {
                DEFAULT_AGGREGATE_INTERVAL
            } else {
                options.max_interval
            },
            burst: if options.burst == 0 {
                DEFAULT_SPAM_BURST
            } else {
                options.burst
            },
            qps: if options.qps == 0.0 {
                DEFAULT_SPAM_QPS
            } else {
                options.qps
            },
            spam_key_func: options.spam_key_func,
            clock: options.clock.unwrap_or_default(),
            aggregates: Lru::new(size),
            observations: Lru::new(size),
            spam: Lru::new(size),
        }
    }

    /// Runs an event through the aggregator, the dedup logger and the spam filter
    /// (`EventCorrelate`).
    pub fn correlate(&mut self, event: Event) -> Correlation {
        let (event, key) = self.aggregate(event);
        let (event, patch) = self.observe(event, key);
        let skip = self.filter(&event);
        Correlation { event, patch, skip }
    }

    /// Records the event the server returned, so later duplicates patch it
    /// (`UpdateState`).
    pub fn update_state(&mut self, event: &Event) {
        self.observations.insert(
            event_key(event),
            Observation {
                count: event.count.unwrap_or_default(),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
    }

    fn aggregate(&mut self, event: Event) -> (Event, String) {
        let now = self.clock.instant();
        let (key, local) = aggregate_keys(&event);
        let fresh = || AggregateRecord {
            local_keys: HashSet::new(),
            last: now,
        };
        let mut record = match self.aggregates.get_mut(&key) {
            Some(r) if now.saturating_duration_since(r.last) <= self.max_interval => {
                std::mem::replace(r, fresh())
            }
            _ => fresh(),
        };
        record.local_keys.insert(local);
        record.last = now;
        let similar = record.local_keys.len();
        if similar >= self.max_events
            && let Some(any) = record.local_keys.iter().next().cloned()
        {
            record.local_keys.remove(&any);
        }
        self.aggregates.insert(key.clone(), record);
        if similar < self.max_events {
            let k = event_key(&event);
            return (event, k);
        }
        let wall = self.clock.wall_at(now);
        let o = &event.involved_object;
        let aggregated = Event {
            metadata: ObjectMeta {
                name: Some(format!("{}.{:x}", s(&o.name), wall.as_nanosecond())),
                namespace: event.metadata.namespace.clone(),
                ..Default::default()
            },
            count: Some(1),
            first_timestamp: Some(Time(wall)),
            last_timestamp: Some(Time(wall)),
            involved_object: o.clone(),
            message: Some(aggregate_message(&event)),
            reason: event.reason.clone(),
            source: event.source.clone(),
            type_: event.type_.clone(),
            ..Default::default()
        };
        (aggregated, key)
    }

    fn observe(&mut self, mut event: Event, key: String) -> (Event, Option<Value>) {
        let mut patch = None;
        if let Some(seen) = self.observations.get_mut(&key).filter(|o| o.count > 0) {
            let count = seen.count + 1;
            event.count = Some(count);
            event.first_timestamp = seen.first_timestamp.clone();
            event.metadata.name = seen.name.clone();
            event.metadata.resource_version = seen.resource_version.clone();
            patch = Some(count_patch(&event));
        }
        self.observations.insert(
            key,
            Observation {
                count: event.count.unwrap_or_default(),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
        (event, patch)
    }

    fn filter(&mut self, event: &Event) -> bool {
        let key = match &self.spam_key_func {
            Some(f) => f(event),
            None => spam_key(event),
        };
        let bucket = match self.spam.get_mut(&key) {
            Some(b) => b.clone(),
            None => {
                let b = Arc::new(TokenBucket::new(self.qps, self.burst));
                self.spam.insert(key, b.clone());
                b
            }
        };
        !bucket.try_accept()
    }
}

/// The strategic-merge patch of a repeated event: the difference between the event and
/// a copy with count 0, lastTimestamp at the Unix epoch and an empty message, which
/// holds exactly these three fields.
fn count_patch(event: &Event) -> Value {
    let mut patch = json!({ "count": event.count.unwrap_or_default() });
    if let Some(t) = &event.last_timestamp
        && let Ok(v) = serde_json::to_value(t)
    {
        patch["lastTimestamp"] = v;
    }
    if let Some(m) = event.message.as_deref().filter(|m| !m.is_empty()) {
        patch["message"] = json!(m);
    }
    patch
}
