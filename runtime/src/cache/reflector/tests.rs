//! Reflector behaviour on a scripted lister-watcher, under tokio's paused clock.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, BoxStream};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::watch_list::parse_flag;
use super::*;
use crate::client::ResourceVersionMatch;
use crate::errors::{cause, StatusCause, StatusDetails};

fn pod(name: &str, rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn list(rv: &str, items: Vec<Pod>, cont: Option<&str>) -> Result<ObjectList<Pod>, client::Error> {
    Ok(ObjectList {
        items,
        resource_version: rv.into(),
        continue_token: cont.map(str::to_owned),
        remaining_item_count: None,
    })
}

fn api_err(code: u16, reason: &str) -> client::Error {
    client::Error::Api(StatusError::new(code, reason, format!("{reason} ({code})")))
}

fn bookmark(rv: &str, end: bool) -> WatchEvent<Pod> {
    let mut annotations = BTreeMap::new();
    if end {
        annotations.insert(Bookmark::INITIAL_EVENTS_END.to_owned(), "true".to_owned());
    }
    WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        annotations,
    })
}

enum WatchScript {
    Fail(client::Error),
    /// These events, then the stream ends.
    Events(Vec<WatchEvent<Pod>>),
    /// These events, then the stream stays open.
    EventsThenHang(Vec<WatchEvent<Pod>>),
}

/// A lister-watcher that answers from scripts and records every call's options. When a
/// script runs out, lists and watches hang (the test cancels).
#[derive(Default)]
struct FakeLw {
    lists: Mutex<VecDeque<Result<ObjectList<Pod>, client::Error>>>,
    watches: Mutex<VecDeque<WatchScript>>,
    list_calls: Mutex<Vec<ListOptions>>,
    watch_calls: Mutex<Vec<ListOptions>>,
    /// Whether it claims to speak the streaming-list protocol.
    streaming: std::sync::atomic::AtomicBool,
}

impl FakeLw {
    fn new(
        lists: Vec<Result<ObjectList<Pod>, client::Error>>,
        watches: Vec<WatchScript>,
    ) -> Arc<Self> {
        Arc::new(FakeLw {
            lists: Mutex::new(lists.into()),
            watches: Mutex::new(watches.into()),
            ..Default::default()
        })
    }
    fn list_rvs(&self) -> Vec<String> {
        self.list_calls
            .lock()
            .iter()
            .map(|o| o.resource_version.clone().unwrap_or_default())
            .collect()
    }
}

impl ListerWatcher<Pod> for FakeLw {
    fn list(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<ObjectList<Pod>, client::Error>> {
        self.list_calls.lock().push(opts);
        match self.lists.lock().pop_front() {
            Some(r) => async move { r }.boxed(),
            None => futures::future::pending().boxed(),
        }
    }

    fn watch(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<BoxStream<'static, WatchEvent<Pod>>, client::Error>> {
        self.watch_calls.lock().push(opts);
        let script = self.watches.lock().pop_front();
        async move {
            match script {
                Some(WatchScript::Fail(e)) => Err(e),
                Some(WatchScript::Events(events)) => Ok(stream::iter(events).boxed()),
                Some(WatchScript::EventsThenHang(events)) => {
                    Ok(stream::iter(events).chain(stream::pending()).boxed())
                }
                None => Ok(stream::pending().boxed()),
            }
        }
        .boxed()
    }

    fn supports_watch_list(&self) -> bool {
        self.streaming.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Records what the reflector does to its store.
#[derive(Default)]
struct RecStore {
    ops: Mutex<Vec<String>>,
    items: Mutex<BTreeMap<String, String>>,
    resyncs: Mutex<usize>,
}

impl RecStore {
    fn ops(&self) -> Vec<String> {
        self.ops.lock().clone()
    }
}

fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}
fn rv(p: &Pod) -> String {
    p.metadata.resource_version.clone().unwrap_or_default()
}

impl ReflectorStore<Pod> for RecStore {
    fn add(&self, obj: Arc<Pod>) -> Result<(), crate::cache::store::StoreError> {
        self.ops
            .lock()
            .push(format!("add {} {}", name(&obj), rv(&obj)));
        self.items.lock().insert(name(&obj), rv(&obj));
        Ok(())
    }
    fn update(&self, obj: Arc<Pod>) -> Result<(), crate::cache::store::StoreError> {
        self.ops
            .lock()
            .push(format!("update {} {}", name(&obj), rv(&obj)));
        self.items.lock().insert(name(&obj), rv(&obj));
        Ok(())
    }
    fn delete(&self, obj: Arc<Pod>) -> Result<(), crate::cache::store::StoreError> {
        self.ops
            .lock()
            .push(format!("delete {} {}", name(&obj), rv(&obj)));
        self.items.lock().remove(&name(&obj));
        Ok(())
    }
    fn replace(
        &self,
        objs: Vec<Arc<Pod>>,
        resource_version: &str,
    ) -> Result<(), crate::cache::store::StoreError> {
        let names: Vec<String> = objs.iter().map(|o| name(o)).collect();
        self.ops
            .lock()
            .push(format!("replace [{}] {resource_version}", names.join(",")));
        *self.items.lock() = objs.iter().map(|o| (name(o), rv(o))).collect();
        Ok(())
    }
    fn resync(&self) -> Result<(), crate::cache::store::StoreError> {
        *self.resyncs.lock() += 1;
        Ok(())
    }
}

fn reflector(
    lw: &Arc<FakeLw>,
    store: &Arc<RecStore>,
    config: ReflectorOptions,
) -> Arc<Reflector<Pod>> {
    Arc::new(Reflector::new(
        "Pod",
        Arc::clone(lw) as Arc<dyn ListerWatcher<Pod>>,
        Arc::clone(store) as Arc<dyn ReflectorStore<Pod>>,
        config,
    ))
}

/// Waits (in paused time) until `cond` holds; fails the test after a generous bound.
async fn wait_until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

fn spawn_round(
    r: &Arc<Reflector<Pod>>,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<Result<(), ReflectorError>> {
    let r = Arc::clone(r);
    let c = cancel.clone();
    tokio::spawn(async move { r.list_and_watch(&c).await })
}

#[tokio::test(start_paused = true)]
async fn list_then_watch_with_client_go_options() {
    // SEMANTICS 3.1
    let lw = FakeLw::new(
        vec![list("1", vec![pod("foo", "1")], None)],
        vec![WatchScript::EventsThenHang(vec![
            WatchEvent::Modified(pod("foo", "2")),
            WatchEvent::Added(pod("bar", "3")),
        ])],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("two watch events applied", || store.ops().len() == 3).await;
    assert_eq!(
        store.ops(),
        ["replace [foo] 1", "update foo 2", "add bar 3"]
    );
    let l = lw.list_calls.lock()[0].clone();
    assert_eq!(l.resource_version.as_deref(), Some("0"));
    assert_eq!(l.limit, Some(500));
    let w = lw.watch_calls.lock()[0].clone();
    assert_eq!(w.resource_version.as_deref(), Some("1"));
    assert!(w.allow_watch_bookmarks);
    let t = w.timeout_seconds.unwrap();
    assert!((300..=600).contains(&t), "timeout {t}");
    assert_eq!(r.last_sync_resource_version(), "3");
    cancel.cancel();
    assert!(task.await.unwrap().is_ok());
}

#[tokio::test(start_paused = true)]
async fn relist_uses_last_resource_version_unpaginated() {
    // SEMANTICS 3.2, 3.10
    let expired = StatusError::expired("too old resource version: 5 (8)");
    let lw = FakeLw::new(
        vec![list("10", vec![], None), list("11", vec![], None)],
        vec![WatchScript::Events(vec![WatchEvent::Error(expired)])],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let cancel = CancellationToken::new();
    // The watch ends with 410 Expired: the round ends without error.
    assert!(r.list_and_watch(&cancel).await.is_ok());
    let task = spawn_round(&r, &cancel);
    wait_until("second list", || lw.list_calls.lock().len() == 2).await;
    let second = lw.list_calls.lock()[1].clone();
    assert_eq!(second.resource_version.as_deref(), Some("10"));
    assert_eq!(second.limit, None);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn expired_relist_retries_at_newest() {
    // SEMANTICS 3.3
    let lw = FakeLw::new(
        vec![
            list("10", vec![], None),
            Err(api_err(410, "Expired")),
            list("12", vec![], None),
        ],
        vec![WatchScript::Events(vec![WatchEvent::Error(
            StatusError::expired("old"),
        )])],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let cancel = CancellationToken::new();
    r.list_and_watch(&cancel).await.unwrap();
    let task = spawn_round(&r, &cancel);
    wait_until("third list", || lw.list_calls.lock().len() == 3).await;
    assert_eq!(lw.list_rvs(), ["0", "10", ""]);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn expired_continuation_falls_back_to_a_full_list() {
    // SEMANTICS 3.4
    let four = |p: &str| {
        (0..4)
            .map(|i| pod(&format!("{p}{i}"), "10"))
            .collect::<Vec<_>>()
    };
    let eight: Vec<Pod> = four("a").into_iter().chain(four("b")).collect();
    let lw = FakeLw::new(
        vec![
            list("10", four("a"), None),
            list("10", four("a"), Some("C1")),
            Err(api_err(410, "Expired")),
            list("10", eight, None),
        ],
        vec![WatchScript::Events(vec![WatchEvent::Error(
            StatusError::expired("old"),
        )])],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default().page_size(4));
    let cancel = CancellationToken::new();
    r.list_and_watch(&cancel).await.unwrap();
    let task = spawn_round(&r, &cancel);
    wait_until("full list", || lw.list_calls.lock().len() == 4).await;
    wait_until("replaced", || store.items.lock().len() == 8).await;
    assert_eq!(lw.list_rvs(), ["0", "10", "", "10"]);
    let calls = lw.list_calls.lock().clone();
    assert_eq!(calls[2].continue_token.as_deref(), Some("C1"));
    assert_eq!(calls[3].limit, None);
    assert_eq!(calls[3].continue_token, None);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn too_large_resource_version_relists_at_newest() {
    // SEMANTICS 3.5
    let too_large = client::Error::Api(StatusError::resource_version_too_large(
        "Too large resource version",
    ));
    let lw = FakeLw::new(
        vec![
            list("20", vec![], None),
            Err(too_large),
            list("21", vec![], None),
        ],
        vec![WatchScript::Events(vec![WatchEvent::Error(
            StatusError::expired("old"),
        )])],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let cancel = CancellationToken::new();
    r.list_and_watch(&cancel).await.unwrap();
    let task = spawn_round(&r, &cancel);
    wait_until("third list", || lw.list_calls.lock().len() == 3).await;
    assert_eq!(lw.list_rvs(), ["0", "20", ""]);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn paginated_first_list_keeps_paginating() {
    // SEMANTICS 3.6
    let lw = FakeLw::new(
        vec![
            list("10", vec![pod("a", "9")], Some("C1")),
            list("10", vec![pod("b", "10")], None),
            list("11", vec![], None),
        ],
        vec![WatchScript::Events(vec![WatchEvent::Error(
            StatusError::expired("old"),
        )])],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let cancel = CancellationToken::new();
    r.list_and_watch(&cancel).await.unwrap();
    let task = spawn_round(&r, &cancel);
    wait_until("relist", || lw.list_calls.lock().len() == 3).await;
    let relist = lw.list_calls.lock()[2].clone();
    assert_eq!(relist.resource_version.as_deref(), Some("10"));
    assert_eq!(relist.limit, Some(500));
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn pages_are_accumulated_with_the_configured_size() {
    // SEMANTICS 3.7
    let pods =
        |r: std::ops::Range<usize>| r.map(|i| pod(&format!("p{i}"), "1")).collect::<Vec<_>>();
    let lw = FakeLw::new(
        vec![
            list("5", pods(0..4), Some("C1")),
            list("5", pods(4..8), Some("C2")),
            list("5", pods(8..10), None),
        ],
        vec![],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default().page_size(4));
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("watch started", || !lw.watch_calls.lock().is_empty()).await;
    assert_eq!(store.items.lock().len(), 10);
    let calls = lw.list_calls.lock().clone();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c.limit == Some(4)));
    assert_eq!(calls[1].continue_token.as_deref(), Some("C1"));
    assert_eq!(calls[2].continue_token.as_deref(), Some("C2"));
    assert_eq!(calls[1].resource_version, None);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn resource_versions_follow_events_and_bookmarks_touch_nothing() {
    // SEMANTICS 3.8, 3.9
    let lw = FakeLw::new(
        vec![list("10", vec![], None)],
        vec![WatchScript::EventsThenHang(vec![
            WatchEvent::Added(pod("a", "10")),
            WatchEvent::Modified(pod("a", "20")),
            bookmark("30", false),
            WatchEvent::Deleted(pod("a", "40")),
        ])],
    );
    let store = Arc::new(RecStore::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let r = Arc::new(
        Reflector::new(
            "Pod",
            Arc::clone(&lw) as Arc<dyn ListerWatcher<Pod>>,
            Arc::clone(&store) as Arc<dyn ReflectorStore<Pod>>,
            ReflectorOptions::default(),
        )
        .with_resource_version_observer(move |rv| s.lock().push(rv.to_owned())),
    );
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("delete applied", || store.ops().len() == 4).await;
    assert_eq!(*seen.lock(), ["10", "10", "20", "30", "40"]);
    assert_eq!(r.last_sync_resource_version(), "40");
    // The bookmark did not touch the store.
    assert_eq!(
        store.ops(),
        ["replace [] 10", "add a 10", "update a 20", "delete a 40"]
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn too_many_requests_at_watch_start_backs_off_without_relisting() {
    // SEMANTICS 3.11
    let lw = FakeLw::new(
        vec![list("1", vec![], None)],
        vec![
            WatchScript::Fail(api_err(429, "TooManyRequests")),
            WatchScript::Fail(api_err(429, "TooManyRequests")),
            WatchScript::Fail(api_err(429, "TooManyRequests")),
            WatchScript::Fail(api_err(429, "TooManyRequests")),
            WatchScript::EventsThenHang(vec![WatchEvent::Added(pod("a", "2"))]),
        ],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let cancel = CancellationToken::new();
    let start = tokio::time::Instant::now();
    let task = spawn_round(&r, &cancel);
    wait_until("event applied", || store.ops().len() == 2).await;
    assert_eq!(lw.list_calls.lock().len(), 1);
    assert_eq!(lw.watch_calls.lock().len(), 5);
    // Four backoff waits of at least 0.8, 1.6, 3.2 and 6.4 s (paused clock).
    assert!(start.elapsed() >= Duration::from_millis(800 + 1600 + 3200 + 6400));
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn connection_refused_rewatches_with_backoff_and_never_relists() {
    // SEMANTICS 3.12
    let refused = || {
        client::Error::Transport(kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ))))
    };
    let mut watches: Vec<WatchScript> = (0..5).map(|_| WatchScript::Fail(refused())).collect();
    watches.push(WatchScript::EventsThenHang(vec![WatchEvent::Added(pod(
        "a", "2",
    ))]));
    let lw = FakeLw::new(vec![list("1", vec![], None)], watches);
    let store = Arc::new(RecStore::default());
    let backoff = Backoff::new(
        Duration::from_millis(1),
        2.0,
        1.0,
        Duration::from_millis(50),
        Duration::from_secs(120),
    );
    let r = reflector(&lw, &store, ReflectorOptions::default().backoff(backoff));
    let cancel = CancellationToken::new();
    let start = tokio::time::Instant::now();
    let task = spawn_round(&r, &cancel);
    wait_until("event applied", || store.ops().len() == 2).await;
    let waited = start.elapsed();
    assert_eq!(lw.list_calls.lock().len(), 1);
    assert_eq!(lw.watch_calls.lock().len(), 6);
    // Five jittered waits: 1+2+4+8+16 = 31 ms at least, under 62 ms plus polling slack.
    assert!(waited >= Duration::from_millis(31), "{waited:?}");
    assert!(waited < Duration::from_millis(62 + 20), "{waited:?}");
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[test]
fn backoff_doubles_with_jitter_up_to_the_cap() {
    // SEMANTICS 3.12 (the delay sequence itself)
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut b = Backoff::new(
            Duration::from_millis(1),
            2.0,
            1.0,
            Duration::from_millis(50),
            Duration::from_secs(120),
        );
        let mut base = Duration::from_millis(1);
        for _ in 0..40 {
            let d = b.next_delay();
            assert!(
                d >= base && d < base * 2,
                "{d:?} outside [{base:?}, {:?})",
                base * 2
            );
            base = (base * 2).min(Duration::from_millis(50));
        }
        // After two quiet minutes the delay starts over.
        tokio::time::advance(Duration::from_secs(121)).await;
        let d = b.next_delay();
        assert!(d < Duration::from_millis(2));
    });
}

#[tokio::test(start_paused = true)]
async fn normal_close_rewatches_from_the_last_event_without_listing() {
    // SEMANTICS 3.13
    let lw = FakeLw::new(
        vec![list("1", vec![], None)],
        vec![
            WatchScript::Events(vec![WatchEvent::Added(pod("a", "7"))]),
            WatchScript::EventsThenHang(vec![]),
        ],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("second watch", || lw.watch_calls.lock().len() == 2).await;
    assert_eq!(
        lw.watch_calls.lock()[1].resource_version.as_deref(),
        Some("7")
    );
    assert_eq!(lw.list_calls.lock().len(), 1);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn very_short_watch_is_an_error() {
    // SEMANTICS 3.14
    let lw = FakeLw::new(
        vec![list("1", vec![], None)],
        vec![WatchScript::Events(vec![])],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let err = r
        .list_and_watch(&CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ReflectorError::VeryShortWatch { .. }));
    assert!(err.to_string().contains("very short watch"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn resync_runs_only_when_allowed() {
    // SEMANTICS 3.16
    for allow in [true, false] {
        let lw = FakeLw::new(vec![list("1", vec![], None)], vec![]);
        let store = Arc::new(RecStore::default());
        let r = Arc::new(
            Reflector::new(
                "Pod",
                Arc::clone(&lw) as Arc<dyn ListerWatcher<Pod>>,
                Arc::clone(&store) as Arc<dyn ReflectorStore<Pod>>,
                ReflectorOptions::default().resync_period(Duration::from_secs(1)),
            )
            .with_should_resync(move || allow),
        );
        let cancel = CancellationToken::new();
        let task = spawn_round(&r, &cancel);
        tokio::time::sleep(Duration::from_millis(5500)).await;
        let resyncs = *store.resyncs.lock();
        if allow {
            assert_eq!(resyncs, 5);
        } else {
            assert_eq!(resyncs, 0);
        }
        cancel.cancel();
        task.await.unwrap().unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn watch_timeouts_follow_the_minimum() {
    // SEMANTICS 3.17
    for (min, lo, hi) in [
        (None, 300, 600),
        (Some(Duration::from_secs(1)), 300, 600),
        (Some(Duration::from_secs(1800)), 1800, 3600),
    ] {
        let lw = FakeLw::new(vec![list("1", vec![], None)], vec![]);
        let store = Arc::new(RecStore::default());
        let mut config = ReflectorOptions::default();
        if let Some(m) = min {
            config = config.min_watch_timeout(m);
        }
        let r = reflector(&lw, &store, config);
        let cancel = CancellationToken::new();
        let task = spawn_round(&r, &cancel);
        wait_until("watch", || !lw.watch_calls.lock().is_empty()).await;
        let t = lw.watch_calls.lock()[0].timeout_seconds.unwrap();
        assert!((lo..=hi).contains(&t), "{t} not in [{lo}, {hi}]");
        cancel.cancel();
        task.await.unwrap().unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn streaming_list_replaces_then_continues_on_the_same_stream() {
    // SEMANTICS 3.18
    let lw = FakeLw::new(
        vec![],
        vec![WatchScript::EventsThenHang(vec![
            WatchEvent::Added(pod("foo", "1")),
            bookmark("1", true),
            WatchEvent::Modified(pod("foo", "2")),
            WatchEvent::Added(pod("bar", "3")),
        ])],
    );
    let store = Arc::new(RecStore::default());
    lw.streaming
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let r = reflector(
        &lw,
        &store,
        ReflectorOptions::default().use_watch_list(true),
    );
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("events after the list", || store.ops().len() == 3).await;
    assert_eq!(
        store.ops(),
        ["replace [foo] 1", "update foo 2", "add bar 3"]
    );
    assert!(lw.list_calls.lock().is_empty());
    let calls = lw.watch_calls.lock().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].send_initial_events, Some(true));
    assert_eq!(
        calls[0].resource_version_match,
        Some(ResourceVersionMatch::NotOlderThan)
    );
    assert_eq!(calls[0].resource_version.as_deref(), Some(""));
    assert!(calls[0].allow_watch_bookmarks);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_failure_falls_back_to_list() {
    // SEMANTICS 3.19
    let lw = FakeLw::new(
        vec![list("4", vec![pod("a", "4")], None)],
        vec![WatchScript::Fail(api_err(403, "Forbidden"))],
    );
    let store = Arc::new(RecStore::default());
    lw.streaming
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let r = reflector(
        &lw,
        &store,
        ReflectorOptions::default().use_watch_list(true),
    );
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("watch after list", || lw.watch_calls.lock().len() == 2).await;
    assert_eq!(lw.list_rvs(), ["0"]);
    assert_eq!(
        lw.watch_calls.lock()[1].resource_version.as_deref(),
        Some("4")
    );
    assert_eq!(lw.watch_calls.lock()[1].send_initial_events, None);
    assert_eq!(store.ops(), ["replace [a] 4"]);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_closed_early_is_retried_without_replacing() {
    // SEMANTICS 3.20
    let lw = FakeLw::new(
        vec![],
        vec![
            WatchScript::Events(vec![WatchEvent::Added(pod("foo", "1"))]),
            WatchScript::EventsThenHang(vec![]),
        ],
    );
    let store = Arc::new(RecStore::default());
    lw.streaming
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let r = reflector(
        &lw,
        &store,
        ReflectorOptions::default().use_watch_list(true),
    );
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("second streaming request", || {
        lw.watch_calls.lock().len() == 2
    })
    .await;
    assert_eq!(lw.watch_calls.lock()[1].send_initial_events, Some(true));
    assert!(store.ops().is_empty());
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn decode_error_ends_the_round_and_the_next_relists() {
    // SEMANTICS 3.21
    let decode = StatusError::new(
        500,
        "InternalError",
        "unable to decode an event from the watch stream: bad",
    )
    .with_details(StatusDetails {
        causes: vec![StatusCause {
            reason: cause::CLIENT_WATCH_DECODING.into(),
            message: "bad".into(),
            field: String::new(),
        }],
        ..Default::default()
    });
    let lw = FakeLw::new(
        vec![list("1", vec![], None), list("2", vec![], None)],
        vec![WatchScript::Events(vec![WatchEvent::Error(decode)])],
    );
    let store = Arc::new(RecStore::default());
    let errors = Arc::new(Mutex::new(Vec::new()));
    let e = Arc::clone(&errors);
    let r = Arc::new(
        Reflector::new(
            "Pod",
            Arc::clone(&lw) as Arc<dyn ListerWatcher<Pod>>,
            Arc::clone(&store) as Arc<dyn ReflectorStore<Pod>>,
            ReflectorOptions::default(),
        )
        .with_error_handler(move |err| e.lock().push(err.to_string())),
    );
    let cancel = CancellationToken::new();
    let run = {
        let r = Arc::clone(&r);
        let c = cancel.clone();
        tokio::spawn(async move { r.run(c).await })
    };
    wait_until("relist", || lw.list_calls.lock().len() == 2).await;
    assert!(
        errors.lock()[0].contains("unable to decode"),
        "{:?}",
        errors.lock()
    );
    assert_eq!(lw.list_rvs(), ["0", "1"]);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stop_during_list_or_watch_returns_promptly() {
    // SEMANTICS 3.22
    for during_list in [true, false] {
        let lists = if during_list {
            vec![]
        } else {
            vec![list("1", vec![], None)]
        };
        let lw = FakeLw::new(lists, vec![]);
        let store = Arc::new(RecStore::default());
        let r = reflector(&lw, &store, ReflectorOptions::default());
        let cancel = CancellationToken::new();
        let task = spawn_round(&r, &cancel);
        wait_until("request made", || {
            if during_list {
                !lw.list_calls.lock().is_empty()
            } else {
                !lw.watch_calls.lock().is_empty()
            }
        })
        .await;
        cancel.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(1), task).await;
        assert!(ended.expect("round did not stop").unwrap().is_ok());
    }
}

#[tokio::test(start_paused = true)]
async fn silent_watch_is_restarted_after_its_idle_deadline() {
    let lw = FakeLw::new(
        vec![list("1", vec![], None)],
        vec![WatchScript::EventsThenHang(vec![WatchEvent::Added(pod(
            "a", "2",
        ))])],
    );
    let store = Arc::new(RecStore::default());
    let r = reflector(
        &lw,
        &store,
        ReflectorOptions::default().watch_idle_timeout(Duration::from_secs(60)),
    );
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("second watch", || lw.watch_calls.lock().len() == 2).await;
    assert_eq!(
        lw.watch_calls.lock()[1].resource_version.as_deref(),
        Some("2")
    );
    assert_eq!(lw.list_calls.lock().len(), 1);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn list_errors_name_the_kind() {
    let lw = FakeLw::new(vec![Err(api_err(403, "Forbidden"))], vec![]);
    let store = Arc::new(RecStore::default());
    let r = reflector(&lw, &store, ReflectorOptions::default());
    let err = r
        .list_and_watch(&CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("failed to list Pod: "), "{err}");
    assert!(err.status().is_some_and(StatusError::is_forbidden));
}

/// Keeps the objects it was given and answers `cached` from them.
#[derive(Default)]
struct HoldingStore {
    held: Mutex<BTreeMap<String, Arc<Pod>>>,
    replaced: Mutex<Vec<Vec<Arc<Pod>>>>,
}

impl ReflectorStore<Pod> for HoldingStore {
    fn add(&self, _: Arc<Pod>) -> Result<(), crate::cache::store::StoreError> {
        Ok(())
    }
    fn update(&self, _: Arc<Pod>) -> Result<(), crate::cache::store::StoreError> {
        Ok(())
    }
    fn delete(&self, _: Arc<Pod>) -> Result<(), crate::cache::store::StoreError> {
        Ok(())
    }
    fn replace(&self, objs: Vec<Arc<Pod>>, _: &str) -> Result<(), crate::cache::store::StoreError> {
        *self.held.lock() = objs.iter().map(|o| (name(o), Arc::clone(o))).collect();
        self.replaced.lock().push(objs);
        Ok(())
    }
    fn resync(&self) -> Result<(), crate::cache::store::StoreError> {
        Ok(())
    }
    fn cached(&self, obj: &Pod) -> Option<Arc<Pod>> {
        let held = self.held.lock().get(&name(obj)).cloned()?;
        (rv(&held) == rv(obj)).then_some(held)
    }
}

#[tokio::test(start_paused = true)]
async fn a_relist_hands_the_store_its_own_copy_of_unchanged_objects() {
    // A relisted object whose resourceVersion did not change is the store's own copy,
    // swapped in page by page, so a relist never holds a second copy of it.
    let expired = StatusError::expired("too old resource version: 5 (8)");
    let lw = FakeLw::new(
        vec![
            list("10", vec![pod("a", "1"), pod("b", "2")], Some("next")),
            list("10", vec![pod("c", "3")], None),
            list(
                "11",
                vec![pod("a", "1"), pod("b", "4"), pod("c", "3")],
                None,
            ),
        ],
        vec![WatchScript::Events(vec![WatchEvent::Error(expired)])],
    );
    let store = Arc::new(HoldingStore::default());
    let r = Arc::new(Reflector::new(
        "Pod",
        Arc::clone(&lw) as Arc<dyn ListerWatcher<Pod>>,
        Arc::clone(&store) as Arc<dyn ReflectorStore<Pod>>,
        ReflectorOptions::default(),
    ));
    let cancel = CancellationToken::new();
    assert!(r.list_and_watch(&cancel).await.is_ok());
    let first: Vec<Arc<Pod>> = store.replaced.lock()[0].clone();
    let task = tokio::spawn({
        let r = Arc::clone(&r);
        let c = cancel.clone();
        async move { r.list_and_watch(&c).await }
    });
    wait_until("the relist", || store.replaced.lock().len() == 2).await;
    let second: Vec<Arc<Pod>> = store.replaced.lock()[1].clone();
    let names: Vec<(String, String)> = second.iter().map(|p| (name(p), rv(p))).collect();
    assert_eq!(
        names,
        [("a", "1"), ("b", "4"), ("c", "3")].map(|(n, v)| (n.to_owned(), v.to_owned()))
    );
    assert!(
        Arc::ptr_eq(&second[0], &first[0]),
        "unchanged a is the held copy"
    );
    assert!(
        !Arc::ptr_eq(&second[1], &first[1]),
        "changed b is the new one"
    );
    assert!(
        Arc::ptr_eq(&second[2], &first[2]),
        "unchanged c is the held copy"
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[test]
fn environment_flags_read_as_go_parses_booleans() {
    // SEMANTICS 14.6, 14.7: the WatchList client defaults on, the detector off; the
    // environment overrides either with Go's boolean spellings.
    assert!(parse_flag(WATCH_LIST_CLIENT_ENV, None, true));
    assert!(!parse_flag(WATCH_LIST_CLIENT_ENV, Some("false"), true));
    assert!(!parse_flag(WATCH_LIST_CLIENT_ENV, Some("0"), true));
    assert!(!parse_flag(CONSISTENCY_DETECTOR_ENV, None, false));
    assert!(parse_flag(CONSISTENCY_DETECTOR_ENV, Some("true"), false));
    assert!(parse_flag(CONSISTENCY_DETECTOR_ENV, Some("T"), false));
    assert!(
        !parse_flag(CONSISTENCY_DETECTOR_ENV, Some("yes"), false),
        "not a Go boolean: the default"
    );
}

#[tokio::test(start_paused = true)]
async fn streaming_list_closed_at_once_without_events_falls_back_to_list() {
    // SEMANTICS 14.6: a server that closes the streaming watch at once (it does not stream
    // lists) gets LIST + WATCH, as client-go's very-short-watch error makes it.
    let lw = FakeLw::new(
        vec![list("4", vec![pod("a", "4")], None)],
        vec![WatchScript::Events(vec![])],
    );
    lw.streaming
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let store = Arc::new(RecStore::default());
    let r = reflector(
        &lw,
        &store,
        ReflectorOptions::default().use_watch_list(true),
    );
    let cancel = CancellationToken::new();
    let task = spawn_round(&r, &cancel);
    wait_until("watch after list", || lw.watch_calls.lock().len() == 2).await;
    assert_eq!(lw.watch_calls.lock()[0].send_initial_events, Some(true));
    assert_eq!(lw.list_rvs(), ["0"]);
    assert_eq!(lw.watch_calls.lock()[1].send_initial_events, None);
    assert_eq!(store.ops(), ["replace [a] 4"]);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[test]
fn lister_watchers_do_not_claim_the_streaming_protocol_by_default() {
    // SEMANTICS 14.6: only a lister-watcher that says so is asked for a streaming list.
    let lw = FakeLw::new(vec![], vec![]);
    assert!(!lw.supports_watch_list());
}
