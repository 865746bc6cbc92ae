//! The reconcile layer (`kubegen_runtime::controller`) end to end: a controller built on
//! an informer factory over the in-memory API server, through its tower Service with a
//! paused clock (exact delays) and over TCP with real time (the same scenarios; delays
//! are then lower bounds).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::controller::predicate::{on_update, GenerationChanged};
use kubegen_runtime::controller::{
    Action, Context, Controller, OwnerMatch, ReconcileMetrics, ReconcileResult, Target,
};
use kubegen_runtime::testing::transport::{Connection, Transport};
use kubegen_runtime::testing::ApiServer;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// One reconcile as the test saw it.
#[derive(Debug, Clone)]
struct Call {
    key: String,
    gone: bool,
    /// `data.v` of a ConfigMap, `spec.replicas` of a Deployment.
    seen: String,
    at: Instant,
}

#[derive(Default)]
struct Calls {
    calls: Mutex<Vec<Call>>,
    running: AtomicUsize,
    max_running: AtomicUsize,
    finished: AtomicUsize,
}

impl Calls {
    fn start<K: kube::Resource>(&self, target: &Target<K>, seen: String) {
        let key = match target {
            Target::Live(obj) => kubegen_runtime::object::object_key(obj.as_ref()),
            Target::Gone(r) => r.key(),
        };
        self.calls.lock().push(Call {
            key,
            gone: target.is_gone(),
            seen,
            at: Instant::now(),
        });
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
    }
    fn end(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
    fn snapshot(&self) -> Vec<Call> {
        self.calls.lock().clone()
    }
    fn len(&self) -> usize {
        self.calls.lock().len()
    }
    fn clear(&self) {
        self.calls.lock().clear();
    }
}

fn cm_value(target: &Target<ConfigMap>) -> String {
    match target {
        Target::Live(cm) => cm
            .data
            .as_ref()
            .and_then(|d| d.get("v"))
            .cloned()
            .unwrap_or_default(),
        Target::Gone(_) => String::new(),
    }
}

fn config_map(name: &str, v: &str, owners: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "ownerReferences": owners},
        "data": {"v": v},
    })
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    })
}

fn set_cm_value(server: &ApiServer, name: &str, v: &str) {
    let mut obj = server
        .get("configmaps", NS, name)
        .unwrap()
        .expect("the ConfigMap exists");
    obj["data"]["v"] = json!(v);
    server.update("configmaps", obj).unwrap();
}

/// Polls until `f` holds (120 s of tokio time at most: paused-clock tests wait out long delays).
async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A running controller and what stops it.
struct Running {
    stop: CancellationToken,
    task: JoinHandle<Result<(), kubegen_runtime::controller::ControllerError>>,
    factory: InformerFactory,
    metrics: Arc<ReconcileMetrics>,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        self.task
            .await
            .expect("the controller task ends")
            .expect("the controller runs without error");
        self.factory.shutdown().await;
    }
}

fn factory(client: &kube::Client) -> InformerFactory {
    InformerFactory::new(client.clone(), FactoryOptions::new(Duration::ZERO))
}

/// A ConfigMap controller whose reconcile records its call, sleeps `work`, and answers
/// with `answer(call number, target)`.
fn run_config_maps(
    client: &kube::Client,
    calls: Arc<Calls>,
    workers: usize,
    work: Duration,
    answer: impl Fn(usize, &Target<ConfigMap>) -> Result<Action, String> + Send + Sync + 'static,
) -> Running {
    let factory = factory(client);
    let builder = Controller::new(&factory)
        .for_::<ConfigMap>()
        .workers(workers);
    let metrics = builder.metrics();
    let stop = CancellationToken::new();
    let answer = Arc::new(answer);
    let reconcile = move |target: Target<ConfigMap>, _ctx: Arc<Context<()>>| {
        let calls = Arc::clone(&calls);
        let answer = Arc::clone(&answer);
        async move {
            let n = calls.len();
            calls.start(&target, cm_value(&target));
            tokio::time::sleep(work).await;
            calls.end();
            answer(n, &target)
        }
    };
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    Running {
        stop,
        task,
        factory,
        metrics,
    }
}

async fn connect(transport: Transport, server: &ApiServer) -> Connection {
    transport
        .connect(server, Vec::<String>::new())
        .await
        .expect("a client for the in-memory server")
}

// SEMANTICS 14.8
async fn one_worker_per_key(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server
        .create("configmaps", config_map("a", "initial", json!([])))
        .unwrap();
    let calls = Arc::new(Calls::default());
    // The first reconcile ends only once our handler has heard of the last update:
    // handlers run on threads of their own, outside the paused clock, so "the 50 updates
    // land within the first reconcile" is made a fact rather than a race.
    let release = Arc::new(tokio::sync::Notify::new());
    let heard = Arc::new(Mutex::new(String::new()));
    let factory = factory(&conn.client());
    let recorded = Arc::clone(&heard);
    let builder = Controller::new(&factory)
        .for_::<ConfigMap>()
        .workers(4)
        .with_predicate(on_update(move |_: &ConfigMap, new: &ConfigMap| {
            *recorded.lock() = cm_value(&Target::Live(Arc::new(new.clone())));
            true
        }));
    let stop = CancellationToken::new();
    let (rcalls, rrelease) = (Arc::clone(&calls), Arc::clone(&release));
    let reconcile = move |target: Target<ConfigMap>, _ctx: Arc<Context<()>>| {
        let (calls, release) = (Arc::clone(&rcalls), Arc::clone(&rrelease));
        async move {
            let first = calls.len() == 0;
            calls.start(&target, cm_value(&target));
            if first {
                release.notified().await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            calls.end();
            Ok::<_, String>(Action::done())
        }
    };
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    eventually("the first reconcile started", || calls.len() == 1).await;
    for i in 0..50 {
        set_cm_value(&server, "a", &i.to_string());
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    eventually("the handler heard the last update", || {
        *heard.lock() == "49"
    })
    .await;
    release.notify_one();
    eventually("a reconcile saw the last update", || {
        calls.snapshot().last().is_some_and(|c| c.seen == "49")
            && calls.finished.load(Ordering::SeqCst) == calls.len()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let seen: Vec<String> = calls.snapshot().into_iter().map(|c| c.seen).collect();
    assert_eq!(calls.max_running.load(Ordering::SeqCst), 1, "{seen:?}");
    // The 50 updates made during the first reconcile coalesce into exactly one more.
    assert_eq!(seen, ["initial", "49"]);
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_key_is_reconciled_by_one_worker_at_a_time_over_tower() {
    one_worker_per_key(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_reconciled_by_one_worker_at_a_time_over_tcp() {
    one_worker_per_key(Transport::Tcp).await;
}

// SEMANTICS 14.9
async fn failures_back_off_and_success_forgets(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server
        .create("configmaps", config_map("a", "0", json!([])))
        .unwrap();
    let calls = Arc::new(Calls::default());
    // Calls 0..=2 fail, 3 succeeds, 4 (after a change) fails, 5 succeeds.
    let running = run_config_maps(
        &conn.client(),
        Arc::clone(&calls),
        2,
        Duration::ZERO,
        |n, _| {
            if n < 3 || n == 4 {
                Err(format!("failure {n}"))
            } else {
                Ok(Action::done())
            }
        },
    );
    eventually("four reconciles", || calls.len() == 4).await;
    set_cm_value(&server, "a", "1");
    eventually("six reconciles, the last one counted", || {
        calls.len() == 6 && running.metrics.reconcile_total(ReconcileResult::Success) == 2
    })
    .await;
    let at: Vec<Instant> = calls.snapshot().iter().map(|c| c.at).collect();
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    let ms = Duration::from_millis;
    if transport == Transport::Tower {
        assert_eq!(
            [gaps[0], gaps[1], gaps[2], gaps[4]],
            [ms(5), ms(10), ms(20), ms(5)]
        );
    } else {
        for (gap, least) in [(gaps[0], 5), (gaps[1], 10), (gaps[2], 20), (gaps[4], 5)] {
            assert!(gap >= ms(least), "{gaps:?}");
        }
    }
    assert_eq!(running.metrics.reconcile_total(ReconcileResult::Error), 4);
    assert_eq!(running.metrics.reconcile_total(ReconcileResult::Success), 2);
    running.stop().await;
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_and_success_forgets_over_tower() {
    failures_back_off_and_success_forgets(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_back_off_and_success_forgets_over_tcp() {
    failures_back_off_and_success_forgets(Transport::Tcp).await;
}

// SEMANTICS 14.10
async fn requeue_after_is_not_a_failure(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server
        .create("configmaps", config_map("a", "0", json!([])))
        .unwrap();
    let calls = Arc::new(Calls::default());
    let delay = if transport == Transport::Tower {
        30_000
    } else {
        300
    };
    // Call 0 asks to come back after the delay, call 1 fails, call 2 succeeds.
    let running = run_config_maps(
        &conn.client(),
        Arc::clone(&calls),
        2,
        Duration::ZERO,
        move |n, _| match n {
            0 => Ok(Action::requeue_after(Duration::from_millis(delay))),
            1 => Err("failure".into()),
            _ => Ok(Action::done()),
        },
    );
    eventually("three reconciles", || calls.len() == 3).await;
    let at: Vec<Instant> = calls.snapshot().iter().map(|c| c.at).collect();
    let ms = Duration::from_millis;
    // The failure after the requeue-after is the key's first: 5 ms, not 10 ms.
    if transport == Transport::Tower {
        assert_eq!([at[1] - at[0], at[2] - at[1]], [ms(delay), ms(5)]);
    } else {
        assert!(at[1] - at[0] >= ms(delay) && at[2] - at[1] >= ms(5));
    }
    assert_eq!(
        running
            .metrics
            .reconcile_total(ReconcileResult::RequeueAfter),
        1
    );
    assert_eq!(running.metrics.reconcile_errors_total(), 1);
    running.stop().await;
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn requeue_after_is_not_a_failure_over_tower() {
    requeue_after_is_not_a_failure(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_after_is_not_a_failure_over_tcp() {
    requeue_after_is_not_a_failure(Transport::Tcp).await;
}

/// A Deployment controller owning ConfigMaps, recording reconciled keys.
fn run_deployments(client: &kube::Client, calls: Arc<Calls>, matching: OwnerMatch) -> Running {
    let factory = factory(client);
    let builder = Controller::new(&factory)
        .for_::<Deployment>()
        .owns_with::<ConfigMap>(matching);
    let metrics = builder.metrics();
    let stop = CancellationToken::new();
    let reconcile = move |target: Target<Deployment>, _ctx: Arc<Context<()>>| {
        let calls = Arc::clone(&calls);
        async move {
            let replicas = match &target {
                Target::Live(d) => format!("{:?}", d.spec.replicas),
                Target::Gone(_) => String::new(),
            };
            calls.start(&target, replicas);
            calls.end();
            Ok::<_, String>(Action::done())
        }
    };
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    Running {
        stop,
        task,
        factory,
        metrics,
    }
}

// SEMANTICS 14.11: controller-runtime's EnqueueRequestForOwner filters by the owner's
// group and kind in both modes; only `controller: true` is relaxed by the every-owner
// option (pkg/handler/enqueue_owner.go), and this test follows it.
async fn owned_objects_map_to_their_controller(transport: Transport, matching: OwnerMatch) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server.create("deployments.apps", deployment("a")).unwrap();
    let owner = |api_version: &str, kind: &str, name: &str, controller: Option<bool>| {
        json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": format!("uid-{name}"),
               "controller": controller})
    };
    let children = [
        ("by-a", owner("apps/v1", "Deployment", "a", Some(true))),
        ("by-bar", owner("example.com/v1", "Bar", "b", Some(true))),
        ("by-other", owner("apps/v1", "Deployment", "other", None)),
    ];
    for (name, owner) in &children {
        server
            .create("configmaps", config_map(name, "0", json!([owner])))
            .unwrap();
    }
    let calls = Arc::new(Calls::default());
    let running = run_deployments(&conn.client(), Arc::clone(&calls), matching);
    eventually("the initial reconcile of a", || {
        calls.snapshot().iter().any(|c| c.key == "default/a")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    calls.clear();
    set_cm_value(&server, "by-bar", "1");
    set_cm_value(&server, "by-other", "1");
    set_cm_value(&server, "by-a", "1");
    eventually("a is reconciled for its child", || {
        calls.snapshot().iter().any(|c| c.key == "default/a")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut keys: Vec<(String, bool)> = calls
        .snapshot()
        .into_iter()
        .map(|c| (c.key, c.gone))
        .collect();
    keys.sort();
    keys.dedup();
    match matching {
        OwnerMatch::Controller => assert_eq!(keys, [("default/a".to_owned(), false)]),
        OwnerMatch::EveryOwner => assert_eq!(
            keys,
            [
                ("default/a".to_owned(), false),
                ("default/other".to_owned(), true)
            ]
        ),
    }
    running.stop().await;
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn owned_objects_map_to_their_controller_over_tower() {
    owned_objects_map_to_their_controller(Transport::Tower, OwnerMatch::Controller).await;
    owned_objects_map_to_their_controller(Transport::Tower, OwnerMatch::EveryOwner).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_objects_map_to_their_controller_over_tcp() {
    owned_objects_map_to_their_controller(Transport::Tcp, OwnerMatch::Controller).await;
    owned_objects_map_to_their_controller(Transport::Tcp, OwnerMatch::EveryOwner).await;
}

// SEMANTICS 14.12
async fn a_deleted_primary_is_reconciled_once_as_gone(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server
        .create("configmaps", config_map("a", "0", json!([])))
        .unwrap();
    let calls = Arc::new(Calls::default());
    let running = run_config_maps(
        &conn.client(),
        Arc::clone(&calls),
        2,
        Duration::ZERO,
        |_, _| Ok(Action::done()),
    );
    eventually("the first reconcile", || calls.len() == 1).await;
    server.delete("configmaps", NS, "a").unwrap();
    eventually("a reconcile as gone", || {
        calls.snapshot().iter().any(|c| c.gone)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let gone: Vec<String> = calls
        .snapshot()
        .into_iter()
        .filter(|c| c.gone)
        .map(|c| c.key)
        .collect();
    assert_eq!(gone, ["default/a"]);
    assert_eq!(calls.len(), 2);
    running.stop().await;
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_deleted_primary_is_reconciled_once_as_gone_over_tower() {
    a_deleted_primary_is_reconciled_once_as_gone(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_primary_is_reconciled_once_as_gone_over_tcp() {
    a_deleted_primary_is_reconciled_once_as_gone(Transport::Tcp).await;
}

// SEMANTICS 14.14
async fn generation_changed_skips_status_updates(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server.create("deployments.apps", deployment("a")).unwrap();
    let calls = Arc::new(Calls::default());
    let factory = factory(&conn.client());
    let builder = Controller::new(&factory)
        .for_::<Deployment>()
        .with_predicate(GenerationChanged);
    let stop = CancellationToken::new();
    let recorded = Arc::clone(&calls);
    let reconcile = move |target: Target<Deployment>, _ctx: Arc<Context<()>>| {
        let calls = Arc::clone(&recorded);
        async move {
            let replicas = target
                .clone()
                .live()
                .and_then(|d| d.spec.replicas)
                .unwrap_or_default();
            calls.start(&target, replicas.to_string());
            calls.end();
            Ok::<_, String>(Action::done())
        }
    };
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    eventually("the first reconcile", || calls.len() == 1).await;
    let api: Api<Deployment> = Api::namespaced(conn.client(), NS);
    let params = PatchParams::default();
    api.patch_status(
        "a",
        &params,
        &Patch::Merge(json!({"status": {"observedGeneration": 1}})),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(calls.len(), 1, "a status-only update enqueues nothing");
    api.patch(
        "a",
        &params,
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap();
    eventually("the spec change is reconciled", || calls.len() == 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen: Vec<String> = calls.snapshot().into_iter().map(|c| c.seen).collect();
    assert_eq!(seen, ["1", "3"]);
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn generation_changed_skips_status_updates_over_tower() {
    generation_changed_skips_status_updates(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_changed_skips_status_updates_over_tcp() {
    generation_changed_skips_status_updates(Transport::Tcp).await;
}

// SEMANTICS 14.17
async fn shutdown_drains_in_flight_reconciles(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    for name in ["a", "b", "c"] {
        server
            .create("configmaps", config_map(name, "0", json!([])))
            .unwrap();
    }
    let calls = Arc::new(Calls::default());
    let running = run_config_maps(
        &conn.client(),
        Arc::clone(&calls),
        1,
        Duration::from_secs(1),
        |_, _| Ok(Action::done()),
    );
    eventually("the first reconcile started", || calls.len() == 1).await;
    let metrics = Arc::clone(&running.metrics);
    running.stop().await;
    assert_eq!(calls.len(), 1, "no key is taken after the stop");
    assert_eq!(
        calls.finished.load(Ordering::SeqCst),
        1,
        "the reconcile in progress finished"
    );
    assert_eq!(metrics.reconcile_total(ReconcileResult::Success), 1);
    assert_eq!(metrics.active_workers(), 0);
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_drains_in_flight_reconciles_over_tower() {
    shutdown_drains_in_flight_reconciles(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_in_flight_reconciles_over_tcp() {
    shutdown_drains_in_flight_reconciles(Transport::Tcp).await;
}

#[tokio::test(start_paused = true)]
async fn a_reconcile_past_its_timeout_is_an_error() {
    let server = ApiServer::new();
    let conn = connect(Transport::Tower, &server).await;
    server
        .create("configmaps", config_map("a", "0", json!([])))
        .unwrap();
    let factory = factory(&conn.client());
    let builder = Controller::new(&factory)
        .for_::<ConfigMap>()
        .reconcile_timeout(Duration::from_secs(1));
    let metrics = builder.metrics();
    let stop = CancellationToken::new();
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&attempts);
    let reconcile = move |_target: Target<ConfigMap>, _ctx: Arc<Context<()>>| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            Ok::<_, String>(Action::done())
        }
    };
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    eventually("a retry after the timeout", || {
        attempts.load(Ordering::SeqCst) == 2
    })
    .await;
    eventually("the retry succeeded", || {
        metrics.reconcile_total(ReconcileResult::Success) == 1
    })
    .await;
    assert_eq!(metrics.reconcile_errors_total(), 1);
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
}
