//! client-go 1.35-1.37 informer parity across the HTTP stack: the factory's sync report by
//! informer name, the WatchList client on by default with its LIST + WATCH fallback, and
//! the consistency detector. Each body runs on the in-memory server over its tower
//! Service and over TCP; the WatchList default also runs against a real kube-apiserver
//! (`hack/test.sh real`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::cache::informer::{InformerOptions, SharedIndexInformer};
use kubegen_runtime::cache::reflector::{ReflectorError, ReflectorOptions};
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::testing::errors::StatusError;
use kubegen_runtime::testing::transport::{Connection, Transport};
use kubegen_runtime::testing::{ApiServer, Reactor, RequestRecord};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// A projection of Pods (only the metadata): a second type of the `pods` resource.
#[derive(Clone, Debug, serde::Deserialize)]
struct PodNames {
    metadata: kubegen_runtime::object::ObjectMeta,
}
kubegen_runtime::projection!(PodNames, Pod);

async fn connect(transport: Transport, server: &ApiServer) -> Connection {
    transport
        .connect(server, Vec::<String>::new())
        .await
        .expect("a client for the server")
}

async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    })
}

/// Runs `informer` until the returned token is cancelled.
fn run(informer: &SharedIndexInformer<Pod>) -> CancellationToken {
    let stop = CancellationToken::new();
    tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    stop
}

fn pod_requests(server: &ApiServer) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.resource == "pods" && (r.verb == "list" || r.verb == "watch"))
        .collect()
}

fn has_param(r: &RequestRecord, key: &str, value: &str) -> bool {
    r.query_pairs().any(|(k, v)| k == key && v == value)
}

// SEMANTICS 14.3
async fn factory_reports_sync_per_informer_name(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    let factory = InformerFactory::new(conn.client(), FactoryOptions::new(Duration::ZERO));
    let pods = factory.informer::<Pod>();
    let config_maps = factory.informer::<ConfigMap>();
    assert_eq!((pods.name(), config_maps.name()), ("pods", "configmaps"));
    let stop = CancellationToken::new();
    factory.start(&stop);
    let report = factory.wait_for_cache_sync_by_name(&stop).await;
    assert_eq!(
        report.into_iter().collect::<Vec<_>>(),
        [("configmaps".to_owned(), true), ("pods".to_owned(), true)]
    );
    let names: Vec<String> = factory
        .done_checkers()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    // A second type of the same resource (a projection, or a compact mirror) is another
    // informer, named with its Rust type; the first keeps the resource's name.
    let projected = factory.informer::<PodNames>();
    assert_eq!(
        projected.name(),
        format!("pods ({})", std::any::type_name::<PodNames>())
    );
    factory.start(&stop);
    let report = factory.wait_for_cache_sync_by_name(&stop).await;
    assert_eq!(report.len(), 3, "{report:?}");
    assert!(report.values().all(|synced| *synced), "{report:?}");
    assert_eq!(factory.informer::<Pod>().name(), "pods");
    factory.shutdown().await;
    conn.close().await;
}

#[tokio::test]
async fn factory_reports_sync_per_informer_name_over_tower() {
    factory_reports_sync_per_informer_name(Transport::Tower).await;
}

#[tokio::test]
async fn factory_reports_sync_per_informer_name_over_tcp() {
    factory_reports_sync_per_informer_name(Transport::Tcp).await;
}

// SEMANTICS 14.6: a server that streams lists gets exactly the WatchList request first.
async fn watch_list_is_the_default(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    for name in ["a", "b"] {
        server.create("pods", pod(name)).unwrap();
    }
    let informer = SharedIndexInformer::new(
        Arc::new(ResourceClient::<Pod>::all(conn.client())),
        InformerOptions::default(),
    );
    let checker = informer.done_checker();
    let stop = run(&informer);
    checker.done().await;
    // Complete at the initial-events-end bookmark: synced means both pods are cached.
    assert_eq!(informer.indexer().len(), 2);
    let requests = pod_requests(&server);
    assert!(!requests.is_empty());
    assert!(
        requests.iter().all(|r| r.verb == "watch"),
        "no LIST: {requests:?}"
    );
    let first = &requests[0];
    for (k, v) in [
        ("sendInitialEvents", "true"),
        ("resourceVersionMatch", "NotOlderThan"),
        ("allowWatchBookmarks", "true"),
    ] {
        assert!(has_param(first, k, v), "{k}={v} in {}", first.query);
    }
    stop.cancel();
    conn.close().await;
}

#[tokio::test]
async fn watch_list_is_the_default_over_tower() {
    watch_list_is_the_default(Transport::Tower).await;
}

#[tokio::test]
async fn watch_list_is_the_default_over_tcp() {
    watch_list_is_the_default(Transport::Tcp).await;
}

// SEMANTICS 14.6: a server that rejects the streaming list gets LIST + WATCH.
async fn rejected_watch_list_falls_back_to_list_and_watch(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server.create("pods", pod("a")).unwrap();
    server.react(
        Reactor::new("watch", "pods")
            .query_param("sendInitialEvents", "true")
            .error(StatusError::bad_request(
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            )),
    );
    let informer = SharedIndexInformer::new(
        Arc::new(ResourceClient::<Pod>::all(conn.client())),
        InformerOptions::default(),
    );
    let stop = run(&informer);
    informer.done_checker().done().await;
    assert_eq!(informer.indexer().len(), 1);
    eventually("the plain watch started", || {
        pod_requests(&server).len() >= 3
    })
    .await;
    let requests = pod_requests(&server);
    let shape: Vec<(&str, bool)> = requests
        .iter()
        .take(3)
        .map(|r| (r.verb.as_str(), has_param(r, "sendInitialEvents", "true")))
        .collect();
    assert_eq!(
        shape,
        [("watch", true), ("list", false), ("watch", false)],
        "{requests:?}"
    );
    stop.cancel();
    conn.close().await;
}

#[tokio::test]
async fn rejected_watch_list_falls_back_to_list_and_watch_over_tower() {
    rejected_watch_list_falls_back_to_list_and_watch(Transport::Tower).await;
}

#[tokio::test]
async fn rejected_watch_list_falls_back_to_list_and_watch_over_tcp() {
    rejected_watch_list_falls_back_to_list_and_watch(Transport::Tcp).await;
}

// SEMANTICS 14.7
async fn consistency_detector_reports_the_keys_that_differ(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    let a = server.create("pods", pod("a")).unwrap();
    let b = server.create("pods", pod("b")).unwrap();
    let rv = |o: &Value| o["metadata"]["resourceVersion"].clone();
    // The LIST at the synced resourceVersion misses `a` and has a `ghost`; `b` agrees.
    server.react(
        Reactor::new("list", "pods")
            .query_param("resourceVersionMatch", "Exact")
            .respond(json!({
                "apiVersion": "v1", "kind": "PodList",
                "metadata": {"resourceVersion": rv(&b)},
                "items": [
                    {"metadata": {"name": "b", "namespace": NS, "resourceVersion": rv(&b)}},
                    {"metadata": {"name": "ghost", "namespace": NS, "resourceVersion": rv(&a)}},
                ],
            })),
    );
    let informer = SharedIndexInformer::new(
        Arc::new(ResourceClient::<Pod>::all(conn.client())),
        InformerOptions::default()
            .reflector(ReflectorOptions::default().check_watch_list_consistency(true)),
    );
    let reported: Arc<Mutex<Vec<String>>> = Arc::default();
    informer
        .set_watch_error_handler({
            let reported = Arc::clone(&reported);
            move |err| {
                if let ReflectorError::Inconsistent { keys, .. } = err {
                    reported.lock().extend(keys.iter().cloned());
                }
            }
        })
        .unwrap();
    let stop = run(&informer);
    eventually("the detector reported", || !reported.lock().is_empty()).await;
    assert_eq!(*reported.lock(), ["default/a", "default/ghost"]);
    let exact: Vec<RequestRecord> = pod_requests(&server)
        .into_iter()
        .filter(|r| r.verb == "list")
        .collect();
    assert_eq!(exact.len(), 1, "one LIST, by the detector: {exact:?}");
    assert!(has_param(
        &exact[0],
        "resourceVersion",
        rv(&b).as_str().unwrap_or_default()
    ));
    stop.cancel();
    conn.close().await;
}

#[tokio::test]
async fn consistency_detector_reports_the_keys_that_differ_over_tower() {
    consistency_detector_reports_the_keys_that_differ(Transport::Tower).await;
}

#[tokio::test]
async fn consistency_detector_reports_the_keys_that_differ_over_tcp() {
    consistency_detector_reports_the_keys_that_differ(Transport::Tcp).await;
}

#[tokio::test]
async fn consistent_server_reports_nothing() {
    let server = ApiServer::new();
    let conn = connect(Transport::Tower, &server).await;
    server.create("pods", pod("a")).unwrap();
    let informer = SharedIndexInformer::new(
        Arc::new(ResourceClient::<Pod>::all(conn.client())),
        InformerOptions::default()
            .reflector(ReflectorOptions::default().check_watch_list_consistency(true)),
    );
    let reported: Arc<Mutex<Vec<String>>> = Arc::default();
    informer
        .set_watch_error_handler({
            let reported = Arc::clone(&reported);
            move |err| reported.lock().push(err.to_string())
        })
        .unwrap();
    let stop = run(&informer);
    informer.done_checker().done().await;
    eventually("the detector listed", || {
        pod_requests(&server).iter().any(|r| r.verb == "list")
    })
    .await;
    // The detector runs before the watch phase goes on: a fenced write is seen after it.
    server.create("pods", pod("fence")).unwrap();
    eventually("fence cached", || informer.indexer().len() == 2).await;
    assert!(reported.lock().is_empty(), "{:?}", reported.lock());
    stop.cancel();
    conn.close().await;
}

/// The same default against kube-apiserver: the informer syncs without a LIST.
#[cfg(feature = "prometheus")]
#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn watch_list_is_the_default_on_a_real_apiserver() {
    let server = ApiServer::new();
    let conn = connect(Transport::Real, &server).await;
    let registry = prometheus::Registry::new();
    kubegen_runtime::metrics::prometheus::register(&registry).unwrap();
    let pods = ResourceClient::<Pod>::namespaced(conn.client(), NS);
    let informer = SharedIndexInformer::new(Arc::new(pods), InformerOptions::default())
        .with_kind_name("wl-real");
    let stop = run(&informer);
    let synced =
        tokio::time::timeout(Duration::from_secs(60), informer.done_checker().done()).await;
    assert!(synced.is_ok(), "the informer synced on kube-apiserver");
    let text = kubegen_runtime::metrics::prometheus::encode(&registry).unwrap();
    assert!(
        !text.contains("reflector_lists_total{name=\"wl-real\"}"),
        "synced by the streaming list, without a LIST:\n{text}"
    );
    assert!(
        text.contains("reflector_watches_total{name=\"wl-real\"}"),
        "{text}"
    );
    stop.cancel();
    conn.close().await;
}
