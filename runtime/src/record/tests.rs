//! Unit tests of the correlator, the sink writer's retries, the events.k8s.io series
//! loops, names and the fakes; writes to the in-memory API server are in
//! `tests/record.rs`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Event, EventSource as WireSource, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::broadcaster::SinkWriter;
use super::events::{self, field_selector};
use super::*;
use crate::errors::StatusError;
use crate::object::{GroupVersion, GroupVersionKind};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// An event as client-go's tests make them: about pod "foo" in "baz" from "kubelet".
fn make_event(reason: &str, message: &str, field_path: &str, clock: &Clock) -> Event {
    let now = Time(clock.now());
    Event {
        metadata: ObjectMeta {
            name: Some(format!("foo.{}", reason.to_lowercase())),
            namespace: Some("baz".into()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            kind: Some("Pod".into()),
            api_version: Some("v1".into()),
            name: Some("foo".into()),
            namespace: Some("baz".into()),
            uid: Some("bar".into()),
            field_path: Some(field_path.into()).filter(|p: &String| !p.is_empty()),
            ..Default::default()
        },
        reason: Some(reason.into()),
        message: Some(message.into()),
        source: Some(WireSource {
            component: Some("kubelet".into()),
            host: Some("node1".into()),
        }),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        type_: Some(EVENT_TYPE_NORMAL.into()),
        ..Default::default()
    }
}

fn correlator(clock: Clock) -> EventCorrelator {
    EventCorrelator::new(CorrelatorOptions {
        clock: Some(clock),
        ..Default::default()
    })
}

/// Correlates and, unless skipped, records the event as the server would return it.
fn pass(c: &mut EventCorrelator, e: Event) -> Correlation {
    let r = c.correlate(e);
    if !r.skip {
        c.update_state(&r.event);
    }
    r
}

// SEMANTICS 11.1
#[test]
fn event_names_are_hex_nanos_or_a_uuid() {
    assert_eq!(
        generate_event_name("test-pod", 105999103295324396),
        "test-pod.178959f726d80ec"
    );
    let long = "x".repeat(300);
    for bad in [
        "test.POD",
        "test.pod/invalid!chars?",
        long.as_str(),
        "--test.pod/invalid!chars?",
    ] {
        let name = generate_event_name(bad, 105999103295324396);
        assert!(is_dns1123_subdomain(&name), "{name}");
        assert_eq!(name.len(), 36, "{name}");
        assert_eq!(name.matches('-').count(), 4, "{name}");
    }
}

#[test]
fn references_take_kind_and_api_version_from_the_type() {
    let mut pod = Pod::default();
    pod.metadata.name = Some("foo".into());
    pod.metadata.namespace = Some("baz".into());
    pod.metadata.uid = Some("bar".into());
    pod.metadata.resource_version = Some("7".into());
    let r = partial_reference(&pod, "spec.containers[2]");
    assert_eq!(r.kind.as_deref(), Some("Pod"));
    assert_eq!(r.api_version.as_deref(), Some("v1"));
    assert_eq!(r.resource_version.as_deref(), Some("7"));
    assert_eq!(r.field_path.as_deref(), Some("spec.containers[2]"));
    assert_eq!(reference(&pod).field_path, None);
}

// SEMANTICS 11.8
#[tokio::test(start_paused = true)]
async fn aggregate_keys_and_message() {
    let clock = Clock::new();
    let a = make_event("BackOff", "it was fun", "", &clock);
    let b = make_event("BackOff", "it was not fun", "", &clock);
    let c = make_event("Pulled", "it was fun", "", &clock);
    let (ka, la) = aggregate_keys(&a);
    let (kb, lb) = aggregate_keys(&b);
    assert_eq!(ka, kb);
    assert_ne!(la, lb);
    assert_ne!(ka, aggregate_keys(&c).0);
    assert_eq!(
        aggregate_message(&a),
        "(combined from similar events): it was fun"
    );
}

// SEMANTICS 11.9
#[tokio::test(start_paused = true)]
async fn the_same_event_just_counts_beyond_the_aggregate_limit() {
    let clock = Clock::new();
    let mut c = correlator(clock);
    for i in 1..=11 {
        let r = pass(&mut c, make_event("BackOff", "same", "", &clock));
        assert!(!r.skip);
        assert_eq!(r.event.count, Some(i));
        assert_eq!(r.event.message.as_deref(), Some("same"));
        tokio::time::advance(secs(30)).await;
    }
}

// SEMANTICS 11.10
#[tokio::test(start_paused = true)]
async fn ten_similar_events_become_one_aggregated_event() {
    let clock = Clock::new();
    let mut c = correlator(clock);
    for i in 0..9 {
        let r = pass(
            &mut c,
            make_event("BackOff", &format!("msg {i}"), "", &clock),
        );
        assert_eq!(r.event.count, Some(1));
        assert_eq!(r.patch, None);
        tokio::time::advance(secs(5)).await;
    }
    let tenth = pass(&mut c, make_event("BackOff", "msg 9", "", &clock));
    assert_eq!(
        tenth.event.message.as_deref(),
        Some("(combined from similar events): msg 9")
    );
    assert_eq!(tenth.event.count, Some(1));
    assert_eq!(tenth.patch, None);
    let name = tenth.event.metadata.name.clone().unwrap();
    assert!(name.starts_with("foo.") && name != "foo.backoff", "{name}");
    assert_eq!(tenth.event.reporting_component, None);

    tokio::time::advance(secs(5)).await;
    let eleventh = pass(&mut c, make_event("BackOff", "msg 10", "", &clock));
    assert_eq!(eleventh.event.count, Some(2));
    assert_eq!(eleventh.event.metadata.name.as_deref(), Some(name.as_str()));
    assert!(eleventh.patch.is_some(), "written as PATCH");
}

// SEMANTICS 11.11
#[tokio::test(start_paused = true)]
async fn similar_events_further_apart_than_the_window_do_not_aggregate() {
    let clock = Clock::new();
    let mut c = correlator(clock);
    for i in 0..15 {
        let r = pass(
            &mut c,
            make_event("BackOff", &format!("msg {i}"), "", &clock),
        );
        assert_eq!(r.event.count, Some(1));
        assert_eq!(
            r.event.message.as_deref(),
            Some(format!("msg {i}").as_str())
        );
        tokio::time::advance(secs(601)).await;
    }
}

// SEMANTICS 11.12
#[tokio::test(start_paused = true)]
async fn events_of_different_containers_do_not_dedup() {
    let clock = Clock::new();
    let mut c = correlator(clock);
    pass(
        &mut c,
        make_event("Pulled", "m", "spec.containers{container2}", &clock),
    );
    let r = pass(
        &mut c,
        make_event("Pulled", "m", "spec.containers{container1}", &clock),
    );
    assert_eq!(r.event.count, Some(1));
    assert_eq!(r.event.message.as_deref(), Some("m"));
}

// SEMANTICS 11.13
#[tokio::test(start_paused = true)]
async fn the_same_event_is_spam_beyond_the_burst() {
    let clock = Clock::new();
    let mut c = correlator(clock);
    for i in 1..=25 {
        assert!(
            !pass(&mut c, make_event("BackOff", "m", "", &clock)).skip,
            "{i}"
        );
    }
    assert!(pass(&mut c, make_event("BackOff", "m", "", &clock)).skip);
    tokio::time::advance(secs(300)).await;
    let r = pass(&mut c, make_event("BackOff", "m", "", &clock));
    assert!(!r.skip);
    assert_eq!(r.event.count, Some(27), "skipped occurrences are counted");
    assert!(pass(&mut c, make_event("BackOff", "m", "", &clock)).skip);
}

// SEMANTICS 11.14
#[tokio::test(start_paused = true)]
async fn spam_filter_keys_on_source_object_and_type() {
    let clock = Clock::new();
    let opts = |key: Option<KeyFunc>| CorrelatorOptions {
        burst: 1,
        spam_key_func: key,
        clock: Some(clock),
        ..Default::default()
    };
    let mut c = EventCorrelator::new(opts(None));
    assert!(!pass(&mut c, make_event("Started", "m", "", &clock)).skip);
    assert!(pass(&mut c, make_event("Killed", "m", "", &clock)).skip);

    let with_reason: KeyFunc =
        Arc::new(|e: &Event| format!("{}/{}", spam_key(e), e.reason.as_deref().unwrap_or("")));
    let mut c = EventCorrelator::new(opts(Some(with_reason)));
    assert!(!pass(&mut c, make_event("Started", "m", "", &clock)).skip);
    assert!(!pass(&mut c, make_event("Killed", "m", "", &clock)).skip);
    assert!(pass(&mut c, make_event("Killed", "other", "", &clock)).skip);
}

// SEMANTICS 11.15
#[tokio::test(start_paused = true)]
async fn the_count_patch_holds_count_last_timestamp_and_message() {
    let clock = Clock::new();
    let mut c = correlator(clock);
    pass(&mut c, make_event("BackOff", "m", "", &clock));
    let r = pass(&mut c, make_event("BackOff", "m", "", &clock));
    let patch = r.patch.unwrap();
    let mut keys: Vec<&str> = patch
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort();
    assert_eq!(keys, ["count", "lastTimestamp", "message"]);
    assert_eq!(patch["count"], 2);
    assert_eq!(patch["message"], "m");
}

/// A core/v1 sink that logs calls and answers from a script of errors.
#[derive(Default)]
struct ScriptedSink {
    calls: Mutex<Vec<(&'static str, Event, Instant)>>,
    /// Errors to answer in turn; when empty, success.
    errors: Mutex<VecDeque<SinkError>>,
    /// Answer this many transport errors per event (name and reason) before success.
    fail_each: usize,
    failed: Mutex<HashMap<String, usize>>,
}

impl ScriptedSink {
    fn answer(&self, verb: &'static str, e: &Event) -> Result<Event, SinkError> {
        self.calls.lock().push((verb, e.clone(), Instant::now()));
        if let Some(err) = self.errors.lock().pop_front() {
            return Err(err);
        }
        // Events emitted at one instant of a paused clock share a name; the reason tells
        // them apart.
        let key = format!("{:?}/{:?}", e.metadata.name, e.reason);
        let mut failed = self.failed.lock();
        let n = failed.entry(key).or_default();
        if *n < self.fail_each {
            *n += 1;
            return Err(SinkError::Transport("connection reset".into()));
        }
        Ok(e.clone())
    }
}

impl EventSink for Arc<ScriptedSink> {
    fn create<'a>(&'a self, e: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(async move { self.answer("create", e) })
    }
    fn patch<'a>(&'a self, e: &'a Event, _: &'a Value) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(async move { self.answer("patch", e) })
    }
}

fn writer(sink: Arc<ScriptedSink>, stop: CancellationToken) -> SinkWriter {
    SinkWriter {
        sink: Box::new(sink),
        correlator: Mutex::new(correlator(Clock::new())),
        sleep: DEFAULT_SLEEP,
        max_tries: DEFAULT_MAX_TRIES,
        stop,
    }
}

// SEMANTICS 11.16
#[tokio::test(start_paused = true)]
async fn sink_errors_decide_the_attempts() {
    let cases: Vec<(Vec<SinkError>, usize)> = vec![
        (vec![SinkError::Request("bad".into())], 1),
        (vec![StatusError::internal("boom").into()], 1),
        (
            (0..20).map(|_| SinkError::Unexpected("?".into())).collect(),
            12,
        ),
        (
            (0..20)
                .map(|_| SinkError::Transport("reset".into()))
                .collect(),
            12,
        ),
        (vec![SinkError::Transport("reset".into())], 2),
    ];
    for (errors, attempts) in cases {
        let sink = Arc::new(ScriptedSink {
            errors: Mutex::new(errors.into()),
            ..Default::default()
        });
        let w = writer(sink.clone(), CancellationToken::new());
        w.record(make_event("Started", "m", "", &Clock::new()))
            .await;
        let calls = sink.calls.lock();
        assert_eq!(calls.len(), attempts);
        // The first wait is random below 10 s, later ones exactly 10 s.
        let waits: Vec<Duration> = calls.windows(2).map(|w| w[1].2 - w[0].2).collect();
        if let Some(first) = waits.first() {
            assert!(*first < secs(10), "{first:?}");
        }
        assert!(waits.iter().skip(1).all(|w| *w == secs(10)), "{waits:?}");
    }
}

// SEMANTICS 11.18
#[tokio::test(start_paused = true)]
async fn no_retry_after_cancellation() {
    let sink = Arc::new(ScriptedSink {
        errors: Mutex::new(
            (0..20)
                .map(|_| SinkError::Transport("reset".into()))
                .collect(),
        ),
        ..Default::default()
    });
    let stop = CancellationToken::new();
    stop.cancel();
    writer(sink.clone(), stop)
        .record(make_event("Started", "m", "", &Clock::new()))
        .await;
    assert_eq!(sink.calls.lock().len(), 1);
}

// SEMANTICS 11.19
#[tokio::test(start_paused = true)]
async fn lots_of_failing_events_are_all_written_and_logged() {
    let sink = Arc::new(ScriptedSink {
        fail_each: 4,
        ..Default::default()
    });
    let broadcaster =
        EventBroadcaster::with_options(BroadcasterOptions::default().sleep(Duration::ZERO));
    let seen = Arc::new(Mutex::new(0usize));
    let counter = seen.clone();
    let watcher = broadcaster.start_event_watcher(move |_| *counter.lock() += 1);
    let logger = broadcaster.start_logging();
    let writing = broadcaster.start_recording_to_sink(sink.clone());
    let recorder = broadcaster.new_recorder(EventSource::new("eventTest", ""));
    for i in 0..1000 {
        let obj = ObjectReference {
            kind: Some("Pod".into()),
            name: Some(format!("pod-{i}")),
            namespace: Some("default".into()),
            ..Default::default()
        };
        recorder.event(&obj, EVENT_TYPE_NORMAL, &format!("Reason{i}"), "m");
        // Let the distributor keep up: the incoming queue holds 1000.
        tokio::task::yield_now().await;
    }
    broadcaster.shutdown();
    for w in [watcher, logger, writing] {
        w.join().await;
    }
    assert_eq!(*seen.lock(), 1000);
    let calls = sink.calls.lock();
    let mut per_name: HashMap<String, usize> = HashMap::new();
    for (_, e, _) in calls.iter() {
        *per_name
            .entry(e.metadata.name.clone().unwrap_or_default())
            .or_default() += 1;
    }
    assert_eq!(per_name.len(), 1000);
    assert!(per_name.values().all(|n| *n >= 5), "{per_name:?}");
}

/// A sink writes in emission order, and a write that is retrying holds back every later
/// event of that sink.
#[tokio::test(start_paused = true)]
async fn a_sink_writes_in_emission_order_even_while_retrying() {
    let sink = Arc::new(ScriptedSink {
        fail_each: 2,
        ..Default::default()
    });
    let broadcaster = EventBroadcaster::new();
    let writing = broadcaster.start_recording_to_sink(sink.clone());
    let recorder = broadcaster.new_recorder(EventSource::new("c", ""));
    let obj = ObjectReference {
        name: Some("x".into()),
        namespace: Some("ns".into()),
        ..Default::default()
    };
    for i in 0..20 {
        recorder.event(&obj, EVENT_TYPE_NORMAL, &format!("R{i:02}"), "m");
    }
    // Shut down only once everything is written: after shutdown nothing is retried.
    for _ in 0..1000 {
        if sink.calls.lock().len() >= 60 {
            break;
        }
        tokio::time::sleep(secs(1)).await;
    }
    broadcaster.shutdown();
    writing.join().await;
    let reasons: Vec<String> = sink
        .calls
        .lock()
        .iter()
        .map(|(_, e, _)| e.reason.clone().unwrap_or_default())
        .collect();
    let expected: Vec<String> = (0..20)
        .flat_map(|i| std::iter::repeat_n(format!("R{i:02}"), 3))
        .collect();
    assert_eq!(reasons, expected);
}

#[tokio::test(start_paused = true)]
async fn a_full_incoming_queue_drops_events_without_blocking() {
    let broadcaster = EventBroadcaster::new();
    let recorder = broadcaster.new_recorder(EventSource::new("c", ""));
    let obj = ObjectReference {
        name: Some("x".into()),
        ..Default::default()
    };
    // Nothing runs the distributor while this loop does not yield.
    for i in 0..1500 {
        recorder.event(&obj, EVENT_TYPE_NORMAL, &format!("R{i}"), "m");
    }
    let seen = Arc::new(Mutex::new(0usize));
    let counter = seen.clone();
    let watcher = broadcaster.start_event_watcher(move |_| *counter.lock() += 1);
    broadcaster.shutdown();
    watcher.join().await;
    assert_eq!(*seen.lock(), MAX_QUEUED_EVENTS);
}

/// An events.k8s.io sink that logs calls and answers from a script of errors.
#[derive(Default)]
struct SeriesSink {
    calls: Mutex<Vec<(&'static str, events::Event, Option<Value>)>>,
    errors: Mutex<VecDeque<SinkError>>,
}

impl SeriesSink {
    fn answer(
        &self,
        verb: &'static str,
        e: &events::Event,
        patch: Option<&Value>,
    ) -> Result<events::Event, SinkError> {
        self.calls.lock().push((verb, e.clone(), patch.cloned()));
        match self.errors.lock().pop_front() {
            Some(err) => Err(err),
            None => Ok(e.clone()),
        }
    }
}

impl events::EventSink for Arc<SeriesSink> {
    fn create<'a>(
        &'a self,
        e: &'a events::Event,
    ) -> BoxFuture<'a, Result<events::Event, SinkError>> {
        Box::pin(async move { self.answer("create", e, None) })
    }
    fn patch<'a>(
        &'a self,
        e: &'a events::Event,
        p: &'a Value,
    ) -> BoxFuture<'a, Result<events::Event, SinkError>> {
        Box::pin(async move { self.answer("patch", e, Some(p)) })
    }
}

fn series_event(name: &str, observed: MicroTime, series: bool) -> events::Event {
    events::Event {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        event_time: Some(observed.clone()),
        reason: Some(name.into()),
        series: series.then_some(events::EventSeries {
            count: 2,
            last_observed_time: observed,
        }),
        ..Default::default()
    }
}

// SEMANTICS 11.22
#[tokio::test(start_paused = true)]
async fn finish_series_patches_old_series_once_and_keeps_fresh_events() {
    let sink = Arc::new(SeriesSink::default());
    let clock = Clock::starting_at(SystemTime::now());
    let b = events::EventBroadcaster::with_clock(sink.clone(), clock, DEFAULT_SLEEP);
    let old = MicroTime(
        clock
            .now()
            .checked_sub(k8s_openapi::jiff::SignedDuration::from_mins(9))
            .unwrap(),
    );
    {
        let mut cache = b.inner.cache.lock();
        cache.insert("series".into(), series_event("series", old.clone(), true));
        cache.insert(
            "single".into(),
            series_event("single", MicroTime(clock.now()), false),
        );
    }
    b.inner.finish_series().await;
    let calls = sink.calls.lock();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "patch");
    let patch = calls[0].2.clone().unwrap();
    assert_eq!(
        patch["series"]["lastObservedTime"],
        serde_json::to_value(&old).unwrap(),
        "lastObservedTime unchanged"
    );
    let cache = b.inner.cache.lock();
    assert_eq!(cache.len(), 1);
    assert!(cache.contains_key("single"));
}

// SEMANTICS 11.23
#[tokio::test(start_paused = true)]
async fn refresh_patches_cached_series_without_retrying_bad_requests() {
    let sink = Arc::new(SeriesSink::default());
    let clock = Clock::new();
    let b = events::EventBroadcaster::with_clock(sink.clone(), clock, DEFAULT_SLEEP);
    let ev = series_event("series", MicroTime(clock.now()), true);
    b.inner.cache.lock().insert("series".into(), ev);
    b.inner.refresh_series().await;
    assert_eq!(sink.calls.lock().len(), 1);
    assert_eq!(sink.calls.lock()[0].0, "patch");

    sink.calls.lock().clear();
    sink.errors
        .lock()
        .push_back(SinkError::Request("cannot build".into()));
    b.inner.refresh_series().await;
    assert_eq!(sink.calls.lock().len(), 1, "no retry");
}

// SEMANTICS 11.24
#[test]
fn field_selectors_for_events_about_an_object() {
    let gvk = GroupVersionKind::gvk("apps", "v1", "Deployment");
    let uid = "2c55cad7-ee4e-11e9-abe1-525400e7bcdc";
    let s = field_selector(
        &GroupVersion::gv("events.k8s.io", "v1"),
        &gvk,
        "test-deployment",
        uid,
    )
    .unwrap();
    assert_eq!(
        s.to_string(),
        format!(
            "regarding.apiVersion=apps/v1,regarding.kind=Deployment,regarding.name=test-deployment,regarding.uid={uid}"
        )
    );
    let core = field_selector(&GroupVersion::gv("", "v1"), &gvk, "test-deployment", "").unwrap();
    assert!(core
        .to_string()
        .split(',')
        .all(|t| t.starts_with("involvedObject.")));
    let empty = GroupVersionKind::gvk("", "", "");
    let none = field_selector(
        &GroupVersion::gv("events.k8s.io", "v1beta1"),
        &empty,
        "",
        "",
    )
    .unwrap();
    assert_eq!(none.to_string(), "");
    let err = field_selector(&GroupVersion::gv("", "v1alpha1"), &gvk, "x", "").unwrap_err();
    assert_eq!(err.message(), "unknown version v1alpha1");
}

fn pod_ref() -> ObjectReference {
    let mut pod = Pod::default();
    pod.metadata.name = Some("foo".into());
    pod.metadata.namespace = Some("baz".into());
    reference(&pod)
}

// SEMANTICS 11.25
#[test]
fn fake_recorder_lines() {
    let (r, rx) = FakeRecorder::new(10);
    let pod = pod_ref();
    r.event(&pod, "Normal", "Created", "msg %d");
    assert_eq!(rx.try_recv().unwrap(), "Normal Created msg %d");
    r.eventf(&pod, "Warning", "Failed", format_args!("x={}", 5));
    assert_eq!(rx.try_recv().unwrap(), "Warning Failed x=5");
    let ann = BTreeMap::from([("b".to_owned(), "2".to_owned()), ("a".into(), "1".into())]);
    r.annotated_eventf(&pod, &ann, "Normal", "Created", format_args!("m"));
    assert_eq!(rx.try_recv().unwrap(), "Normal Created m map[a:1 b:2]");
    let r = r.include_object(true);
    r.event(&pod, "Normal", "Created", "m");
    assert_eq!(
        rx.try_recv().unwrap(),
        "Normal Created m involvedObject{kind=Pod,apiVersion=v1}"
    );
    FakeRecorder::discarding().event(&pod, "Normal", "Created", "m");
}

// SEMANTICS 11.26
#[test]
fn events_fake_recorder_lines() {
    use events::EventRecorder as _;
    let (r, rx) = events::FakeRecorder::new(10);
    let pod = pod_ref();
    r.eventf(
        &pod,
        None,
        "Normal",
        "Started",
        "Start",
        format_args!("note {}", "x"),
    );
    assert_eq!(rx.try_recv().unwrap(), "Normal Started note x");
    let r = r.verbose(true);
    r.eventf(
        &pod,
        None,
        "Normal",
        "Started",
        "Start",
        format_args!("note {}", "x"),
    );
    assert_eq!(
        rx.try_recv().unwrap(),
        "Normal Started Start note x {kind=Pod,apiVersion=v1}"
    );
}
