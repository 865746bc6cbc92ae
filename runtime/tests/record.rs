//! Event recording (SEMANTICS 11) against the in-memory API server: core/v1 events
//! written by the broadcaster's sink (POST, count PATCH, 404 fallback) and
//! events.k8s.io/v1 series, over the tower Service under a paused clock, and once over
//! TCP through kube::Client.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kubegen_runtime::record::events::{self, EventRecorder as _};
use kubegen_runtime::record::{
    partial_reference, reference, ClientEventSink, EventBroadcaster, EventRecorder, EventSource,
    Recorder, WatchHandle,
};
use kubegen_runtime::testing::{ApiServer, RequestRecord};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Waits (in steps of 10 ms of the clock) until `cond` holds; panics after 6000 steps
/// (a minute: far beyond any write, and short of the 6 min series loop).
async fn until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..6000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never happened: {what}");
}

/// The create and patch requests on `resource` (plural) so far.
fn writes(server: &ApiServer, resource: &str) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.resource == resource && (r.verb == "create" || r.verb == "patch"))
        .collect()
}

fn pod(ns: &str, name: &str, uid: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.namespace = Some(ns.into()).filter(|s: &String| !s.is_empty());
    p.metadata.name = Some(name.into());
    p.metadata.uid = Some(uid.into());
    p
}

struct Core {
    server: ApiServer,
    broadcaster: EventBroadcaster,
    recorder: Recorder,
    sink: WatchHandle,
}

fn core(server: ApiServer, client: kube::Client) -> Core {
    let broadcaster = EventBroadcaster::new();
    let sink = broadcaster.start_recording_to_sink(ClientEventSink::new(client));
    let recorder = broadcaster.new_recorder(EventSource::new("eventTest", ""));
    Core {
        server,
        broadcaster,
        recorder,
        sink,
    }
}

fn in_memory() -> Core {
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), "default");
    core(server, client)
}

impl Core {
    async fn wait_writes(&self, n: usize) -> Vec<RequestRecord> {
        until(&format!("{n} event writes"), || {
            writes(&self.server, "events").len() >= n
        })
        .await;
        writes(&self.server, "events")
    }

    fn stored(&self, ns: &str, name: &str) -> Value {
        self.server.get("events", ns, name).unwrap().unwrap()
    }

    async fn finish(self) {
        self.broadcaster.shutdown();
        self.sink.join().await;
    }
}

fn name_of(r: &RequestRecord) -> String {
    match r.verb.as_str() {
        "create" => r.body.as_ref().unwrap()["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_owned(),
        _ => r.name.clone(),
    }
}

// SEMANTICS 11.2, 11.3, 11.4
#[tokio::test(start_paused = true)]
async fn eventf_posts_then_patches_counts_and_separates_other_references() {
    let c = in_memory();
    let obj = partial_reference(&pod("baz", "foo", "bar"), "spec.containers[2]");
    c.recorder.eventf(
        &obj,
        "Normal",
        "Started",
        format_args!("some verbose message: {}", 1),
    );
    let w = c.wait_writes(1).await;
    assert_eq!(
        (w[0].verb.as_str(), w[0].namespace.as_str()),
        ("create", "baz")
    );
    let body = w[0].body.clone().unwrap();
    let name = name_of(&w[0]);
    assert!(name.starts_with("foo."), "{name}");
    assert_eq!(
        body["involvedObject"],
        serde_json::json!({"kind": "Pod", "apiVersion": "v1", "name": "foo", "namespace": "baz",
            "uid": "bar", "fieldPath": "spec.containers[2]"})
    );
    assert_eq!(body["reason"], "Started");
    assert_eq!(body["message"], "some verbose message: 1");
    assert_eq!(body["count"], 1);
    assert_eq!(body["firstTimestamp"], body["lastTimestamp"]);
    assert_eq!(body["source"]["component"], "eventTest");
    assert_eq!(body["reportingComponent"], "eventTest");
    assert_eq!(body["reportingInstance"], "");

    // 11.3: the identical event again is a PATCH of the same event.
    tokio::time::advance(Duration::from_secs(2)).await;
    c.recorder.eventf(
        &obj,
        "Normal",
        "Started",
        format_args!("some verbose message: {}", 1),
    );
    let w = c.wait_writes(2).await;
    assert_eq!(
        (w[1].verb.as_str(), w[1].name.as_str()),
        ("patch", name.as_str())
    );
    assert_eq!(w[1].content_type, "application/strategic-merge-patch+json");
    let stored = c.stored("baz", &name);
    assert_eq!(stored["count"], 2);
    assert_eq!(stored["firstTimestamp"], body["firstTimestamp"]);
    assert!(
        stored["lastTimestamp"].as_str() > body["lastTimestamp"].as_str(),
        "{stored}"
    );
    c.recorder.eventf(
        &obj,
        "Normal",
        "Started",
        format_args!("some verbose message: {}", 1),
    );
    c.wait_writes(3).await;
    assert_eq!(c.stored("baz", &name)["count"], 3);

    // 11.4: another field path and uid make a separate event.
    let other = partial_reference(&pod("baz", "foo", "differentUid"), "spec.containers[3]");
    c.recorder.eventf(
        &other,
        "Normal",
        "Started",
        format_args!("some verbose message: {}", 1),
    );
    let w = c.wait_writes(4).await;
    assert_eq!(w[3].verb, "create");
    assert_ne!(name_of(&w[3]), name);
    assert_eq!(w[3].body.as_ref().unwrap()["count"], 1);
    c.finish().await;
}

// SEMANTICS 11.5, 11.7
#[tokio::test(start_paused = true)]
async fn cluster_scoped_objects_get_the_default_namespace_and_annotations_are_kept() {
    let c = in_memory();
    let mut node = Node::default();
    node.metadata.name = Some("n1".into());
    c.recorder
        .eventf(&reference(&node), "Warning", "NotReady", format_args!("x"));
    c.recorder.eventf(
        &reference(&pod("", "nons", "u")),
        "Normal",
        "Started",
        format_args!("x"),
    );
    let ann = BTreeMap::from([("a".to_owned(), "b".to_owned())]);
    c.recorder.annotated_eventf(
        &reference(&pod("ns", "p", "u")),
        &ann,
        "Normal",
        "Synced",
        format_args!("synced"),
    );
    let w = c.wait_writes(3).await;
    for r in &w[..2] {
        assert_eq!(r.namespace, "default");
        let body = r.body.as_ref().unwrap();
        assert_eq!(body["metadata"]["namespace"], "default");
        assert!(body["involvedObject"].get("namespace").is_none(), "{body}");
    }
    let stored = c.stored("ns", &name_of(&w[2]));
    assert_eq!(
        stored["metadata"]["annotations"],
        serde_json::json!({"a": "b"})
    );
    c.finish().await;
}

// SEMANTICS 11.6
#[tokio::test(start_paused = true)]
async fn an_unsupported_type_reaches_no_sink_or_watcher() {
    let c = in_memory();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let watcher = c
        .broadcaster
        .start_event_watcher(move |e| s.lock().push(e.type_.clone().unwrap_or_default()));
    let obj = reference(&pod("ns", "p", "u"));
    c.recorder.event(&obj, "Info", "Something", "m");
    c.recorder.event(&obj, "Warning", "Marker", "m");
    let w = c.wait_writes(1).await;
    c.broadcaster.shutdown();
    watcher.join().await;
    assert_eq!(*seen.lock(), ["Warning"]);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].body.as_ref().unwrap()["reason"], "Marker");
    c.finish().await;
}

// SEMANTICS 11.17
#[tokio::test(start_paused = true)]
async fn a_patch_of_a_vanished_event_falls_back_to_post() {
    let c = in_memory();
    let obj = reference(&pod("ns", "p", "u"));
    c.recorder.event(&obj, "Normal", "Synced", "m");
    let w = c.wait_writes(1).await;
    let name = name_of(&w[0]);
    assert!(c.stored("ns", &name)["metadata"]["resourceVersion"].is_string());
    c.server.delete("events", "ns", &name).unwrap();
    c.recorder.event(&obj, "Normal", "Synced", "m");
    let w = c.wait_writes(3).await;
    assert_eq!(
        (w[1].verb.as_str(), w[2].verb.as_str()),
        ("patch", "create")
    );
    let body = w[2].body.clone().unwrap();
    assert!(body["metadata"].get("resourceVersion").is_none(), "{body}");
    assert_eq!(body["count"], 2);
    assert_eq!(c.stored("ns", &name)["count"], 2);
    c.finish().await;
}

// SEMANTICS 11.2 over TCP through kube::Client (real time).
#[tokio::test]
async fn events_are_written_over_tcp() {
    let server = ApiServer::new();
    let tcp = server.serve_tcp().await.unwrap();
    let client = tcp.client().await.unwrap();
    let c = core(server, client);
    let obj = reference(&pod("ns", "p", "u"));
    c.recorder.event(&obj, "Normal", "Synced", "m");
    let w = c.wait_writes(1).await;
    c.recorder.event(&obj, "Normal", "Synced", "m");
    c.wait_writes(2).await;
    assert_eq!(c.stored("ns", &name_of(&w[0]))["count"], 2);
    c.finish().await;
    tcp.shutdown().await;
}

/// The events.k8s.io/v1 collection, as `ApiServer::get` names it.
const EVENTS_V1: &str = "events.events.k8s.io";

struct Series {
    server: ApiServer,
    broadcaster: events::EventBroadcaster,
    recorder: events::Recorder,
}

fn series() -> Series {
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), "default");
    let broadcaster = events::EventBroadcaster::new(client);
    broadcaster
        .start_recording_to_sink(CancellationToken::new())
        .unwrap();
    let recorder = broadcaster.new_recorder("ctrl");
    Series {
        server,
        broadcaster,
        recorder,
    }
}

impl Series {
    async fn wait_writes(&self, n: usize) -> Vec<RequestRecord> {
        until(&format!("{n} event writes"), || {
            writes(&self.server, "events").len() >= n
        })
        .await;
        writes(&self.server, "events")
    }
}

// SEMANTICS 11.20
#[tokio::test(start_paused = true)]
async fn isomorphic_events_make_a_series() {
    let s = series();
    assert_eq!(
        s.broadcaster
            .start_recording_to_sink(CancellationToken::new())
            .unwrap_err()
            .to_string(),
        "broadcaster is already recording to a sink"
    );
    let obj = reference(&pod("ns", "p", "u"));
    let emit = |action: &str, note: &str| {
        s.recorder.eventf(
            &obj,
            None,
            "Normal",
            "Started",
            action,
            format_args!("{note}"),
        )
    };
    emit("Start", "first");
    let w = s.wait_writes(1).await;
    assert_eq!(w[0].verb, "create");
    let body = w[0].body.clone().unwrap();
    assert!(body.get("series").is_none());
    assert!(body["reportingInstance"]
        .as_str()
        .unwrap()
        .starts_with("ctrl-"));
    let name = name_of(&w[0]);

    emit("Start", "the note is not part of the key");
    let w = s.wait_writes(2).await;
    assert_eq!(
        (w[1].verb.as_str(), w[1].name.as_str()),
        ("patch", name.as_str())
    );
    let patch = w[1].body.clone().unwrap();
    assert_eq!(patch.as_object().unwrap().len(), 1, "{patch}");
    assert_eq!(patch["series"]["count"], 2);
    let stored = s.server.get(EVENTS_V1, "ns", &name).unwrap().unwrap();
    assert_eq!(stored["series"]["count"], 2);

    emit("Start", "third");
    emit("stopped", "other action");
    let w = s.wait_writes(3).await;
    assert_eq!(w.len(), 3, "the third occurrence sends nothing now");
    assert_eq!(w[2].verb, "create");
    assert!(w[2].body.as_ref().unwrap().get("series").is_none());
    s.broadcaster.shutdown();
}

// SEMANTICS 11.21
#[tokio::test(start_paused = true)]
async fn a_series_of_a_vanished_event_is_posted_with_its_series() {
    let s = series();
    let obj = reference(&pod("ns", "p", "u"));
    s.recorder
        .eventf(&obj, None, "Warning", "Failed", "Pull", format_args!("n"));
    let w = s.wait_writes(1).await;
    let name = name_of(&w[0]);
    assert!(s.server.get(EVENTS_V1, "ns", &name).unwrap().is_some());
    s.server.delete(EVENTS_V1, "ns", &name).unwrap();
    s.recorder
        .eventf(&obj, None, "Warning", "Failed", "Pull", format_args!("n"));
    let w = s.wait_writes(3).await;
    assert_eq!(
        (w[1].verb.as_str(), w[2].verb.as_str()),
        ("patch", "create")
    );
    let stored = s.server.get(EVENTS_V1, "ns", &name).unwrap().unwrap();
    assert_eq!(stored["series"]["count"], 2);
    s.broadcaster.shutdown();
}

// SEMANTICS 11.27
#[test]
fn the_server_validates_events() {
    use serde_json::json;
    let server = ApiServer::new();
    let valid = || {
        json!({
            "metadata": {"name": "e1", "namespace": "ns"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "ctrl",
            "reportingInstance": "ctrl-host",
            "action": "Start",
            "reason": "Started",
            "type": "Normal",
            "regarding": {"kind": "Pod", "namespace": "ns", "name": "p"},
            "note": "n",
        })
    };
    let mut no_action = valid();
    no_action.as_object_mut().unwrap().remove("action");
    let err = server.create(EVENTS_V1, no_action).unwrap_err();
    assert_eq!(err.code(), 422);
    let causes = &err.details().unwrap().causes;
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(
        (causes[0].field.as_str(), causes[0].reason.as_str()),
        ("action", "FieldValueRequired")
    );

    let mut long = valid();
    long["reportingInstance"] = json!("x".repeat(129));
    let err = server.create(EVENTS_V1, long).unwrap_err();
    assert!(
        err.message().contains("can have at most 128 characters"),
        "{}",
        err.message()
    );

    let mut one = valid();
    one["series"] = json!({"count": 1, "lastObservedTime": "2026-01-01T00:00:00.000000Z"});
    let err = server.create(EVENTS_V1, one).unwrap_err();
    assert!(
        err.message().contains("should be at least 2"),
        "{}",
        err.message()
    );

    server.create(EVENTS_V1, valid()).unwrap();
    let core = json!({
        "metadata": {"name": "c1", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "p"},
        "reason": "Started",
        "message": "m".repeat(2000),
    });
    server.create("events", core).unwrap();
    let mismatch = json!({
        "metadata": {"name": "c2", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "namespace": "other", "name": "p"},
    });
    let err = server.create("events", mismatch).unwrap_err();
    assert!(
        err.message().contains("does not match event.namespace"),
        "{}",
        err.message()
    );
}

const MINUTE: Duration = Duration::from_secs(60);

// SEMANTICS 11.20, 11.22: occurrences after the second are only counted, and the 6 min
// loop writes them with the series' final PATCH once the series is quiet.
#[tokio::test(start_paused = true)]
async fn a_quiet_series_is_finished_by_the_six_minute_loop() {
    let s = series();
    let obj = reference(&pod("ns", "p", "u"));
    let emit = || {
        s.recorder
            .eventf(&obj, None, "Normal", "Started", "Start", format_args!("n"))
    };
    emit();
    s.wait_writes(1).await;
    emit();
    s.wait_writes(2).await;
    emit();
    emit();
    // The first tick after 6 quiet minutes (at 12 min) finishes the series.
    tokio::time::sleep(13 * MINUTE).await;
    let w = s.wait_writes(3).await;
    assert_eq!(w.len(), 3);
    assert_eq!(w[2].verb, "patch");
    assert_eq!(w[2].body.as_ref().unwrap()["series"]["count"], 4);
    // Finished: the next occurrence starts afresh with a POST.
    emit();
    let w = s.wait_writes(4).await;
    assert_eq!(w[3].verb, "create");
    s.broadcaster.shutdown();
}

// SEMANTICS 11.23: the 30 min loop PATCHes a series that is still being observed.
#[tokio::test(start_paused = true)]
async fn a_live_series_is_refreshed_by_the_thirty_minute_loop() {
    let s = series();
    let obj = reference(&pod("ns", "p", "u"));
    let emit = || {
        s.recorder
            .eventf(&obj, None, "Normal", "Started", "Start", format_args!("n"))
    };
    let start = tokio::time::Instant::now();
    emit();
    s.wait_writes(1).await;
    emit();
    s.wait_writes(2).await;
    for _ in 0..5 {
        tokio::time::sleep(5 * MINUTE).await;
        emit();
    }
    tokio::time::sleep_until(start + 30 * MINUTE + Duration::from_secs(1)).await;
    let w = s.wait_writes(3).await;
    assert_eq!(
        w.len(),
        3,
        "observed every 5 min, so never finished before the refresh"
    );
    assert_eq!(w[2].verb, "patch");
    assert_eq!(w[2].body.as_ref().unwrap()["series"]["count"], 7);
    s.broadcaster.shutdown();
}
