//! What an operator builds with the controller beyond the loop: the finalizer helper,
//! create-or-update of owned children, the event recorder in the context and mapped
//! watches; over the in-memory server's tower Service and over TCP.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams};
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::controller::child::{create_or_update, Error as ChildError, Operation};
use kubegen_runtime::controller::finalizer::{finalizer, Event};
use kubegen_runtime::controller::{Action, Context, Controller, ReconcileResult, Target};
use kubegen_runtime::object::ObjectRef;
use kubegen_runtime::record::{reference, FakeRecorder};
use kubegen_runtime::testing::transport::{Connection, Transport};
use kubegen_runtime::testing::ApiServer;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const FINALIZER: &str = "example.com/cleanup";

async fn connect(transport: Transport, server: &ApiServer) -> Connection {
    transport
        .connect(server, Vec::<String>::new())
        .await
        .expect("a client for the in-memory server")
}

async fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn config_map(name: &str, finalizers: &[&str]) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "finalizers": finalizers},
        "data": {"v": "0"},
    })
}

fn finalizers(server: &ApiServer, name: &str) -> Option<Vec<String>> {
    server.get("configmaps", NS, name).unwrap().map(|obj| {
        obj["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect()
    })
}

// SEMANTICS 14.13
async fn the_finalizer_guards_cleanup(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    let client = conn.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    // Deleted before the controller ever saw it, held by someone else's finalizer.
    server
        .create("configmaps", config_map("b", &["other.io/keep"]))
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    server.create("configmaps", config_map("a", &[])).unwrap();

    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let fail_cleanup = Arc::new(AtomicBool::new(true));
    let factory = InformerFactory::new(client.clone(), FactoryOptions::new(Duration::ZERO));
    let stop = CancellationToken::new();
    let (rlog, rfail, rapi) = (Arc::clone(&log), Arc::clone(&fail_cleanup), api.clone());
    let reconcile = move |target: Target<ConfigMap>, _ctx: Arc<Context<()>>| {
        let (log, fail, api) = (Arc::clone(&rlog), Arc::clone(&rfail), rapi.clone());
        async move {
            let Some(cm) = target.live() else {
                return Ok(Action::done());
            };
            finalizer(&api, FINALIZER, cm, |event| async move {
                match event {
                    Event::Apply(cm) => {
                        let has = cm
                            .metadata
                            .finalizers
                            .iter()
                            .flatten()
                            .any(|f| f == FINALIZER);
                        let name = cm.metadata.name.clone().unwrap_or_default();
                        log.lock().push(format!("apply {name} finalizer={has}"));
                        Ok(Action::done())
                    }
                    Event::Cleanup(cm) => {
                        let name = cm.metadata.name.clone().unwrap_or_default();
                        if fail.swap(false, Ordering::SeqCst) {
                            log.lock().push(format!("cleanup {name} failed"));
                            return Err("the backing store is down".to_owned());
                        }
                        log.lock().push(format!("cleanup {name}"));
                        Ok(Action::done())
                    }
                }
            })
            .await
        }
    };
    let builder = Controller::new(&factory).for_::<ConfigMap>();
    let metrics = builder.metrics();
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));

    eventually("a carries the finalizer", || {
        finalizers(&server, "a") == Some(vec![FINALIZER.to_owned()])
    })
    .await;
    eventually("apply ran", || !log.lock().is_empty()).await;
    api.delete("a", &DeleteParams::default()).await.unwrap();
    eventually("a is gone", || finalizers(&server, "a").is_none()).await;
    eventually("the cleanup finished", || {
        log.lock().iter().any(|l| l == "cleanup a")
    })
    .await;
    // Adding the finalizer is itself a change: apply may run again, always with it.
    let log = log.lock().clone();
    assert_eq!(
        log.first().map(String::as_str),
        Some("apply a finalizer=true")
    );
    let rest: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|l| *l != "apply a finalizer=true")
        .collect();
    assert_eq!(
        rest,
        ["cleanup a failed", "cleanup a"],
        "a failed cleanup is retried; b, deleted without our finalizer, runs nothing"
    );
    assert!(metrics.reconcile_errors_total() >= 1);
    assert_eq!(
        finalizers(&server, "b"),
        Some(vec!["other.io/keep".to_owned()])
    );
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn the_finalizer_guards_cleanup_over_tower() {
    the_finalizer_guards_cleanup(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_finalizer_guards_cleanup_over_tcp() {
    the_finalizer_guards_cleanup(Transport::Tcp).await;
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    })
}

async fn create_or_update_owns_the_child(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    let client = conn.client();
    let owner: Deployment = serde_json::from_value(
        server
            .create("deployments.apps", deployment("web"))
            .unwrap(),
    )
    .unwrap();
    let other: Deployment =
        serde_json::from_value(server.create("deployments.apps", deployment("db")).unwrap())
            .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    let data = |v: &str| Some(BTreeMap::from([("v".to_owned(), v.to_owned())]));

    let (cm, op) = create_or_update(&api, &owner, "web-config", |cm| cm.data = data("1"))
        .await
        .unwrap();
    assert_eq!(op, Operation::Created);
    let refs = cm.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(refs.len(), 1);
    assert_eq!(
        (
            refs[0].kind.as_str(),
            refs[0].name.as_str(),
            refs[0].controller
        ),
        ("Deployment", "web", Some(true))
    );
    assert_eq!(Some(&refs[0].uid), owner.metadata.uid.as_ref());

    let (_, op) = create_or_update(&api, &owner, "web-config", |cm| cm.data = data("1"))
        .await
        .unwrap();
    assert_eq!(op, Operation::Unchanged);
    let (cm, op) = create_or_update(&api, &owner, "web-config", |cm| cm.data = data("2"))
        .await
        .unwrap();
    assert_eq!(op, Operation::Updated);
    assert_eq!(cm.data, data("2"));

    let err = create_or_update(&api, &other, "web-config", |cm| cm.data = data("3"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ChildError::AlreadyOwned { kind, name, .. } if kind == "Deployment" && name == "web"),
        "{err}"
    );
    conn.close().await;
}

#[tokio::test]
async fn create_or_update_owns_the_child_over_tower() {
    create_or_update_owns_the_child(Transport::Tower).await;
}

#[tokio::test]
async fn create_or_update_owns_the_child_over_tcp() {
    create_or_update_owns_the_child(Transport::Tcp).await;
}

/// A ConfigMap controller that watches Secrets (label `for` names the ConfigMap) and
/// records an event for every reconcile.
async fn watches_map_and_recorder_reports(transport: Transport) {
    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server.create("configmaps", config_map("a", &[])).unwrap();
    server
        .create(
            "secrets",
            json!({"metadata": {"name": "s", "namespace": NS, "labels": {"for": "a"}}}),
        )
        .unwrap();
    let (recorder, events) = FakeRecorder::new(100);
    let factory = InformerFactory::new(conn.client(), FactoryOptions::new(Duration::ZERO));
    let stop = CancellationToken::new();
    let builder = Controller::new(&factory)
        .for_::<ConfigMap>()
        .watches::<Secret>(|secret| {
            let target = secret.metadata.labels.as_ref().and_then(|l| l.get("for"));
            target
                .map(|name| {
                    ObjectRef::new_namespaced(
                        secret.metadata.namespace.clone().unwrap_or_default(),
                        name.clone(),
                    )
                })
                .into_iter()
                .collect()
        })
        .named("configmap-secrets")
        .recorder(Arc::new(recorder));
    let metrics = builder.metrics();
    let reconcile = |target: Target<ConfigMap>, ctx: Arc<Context<()>>| async move {
        if let (Some(cm), Some(recorder)) = (target.live(), ctx.recorder()) {
            recorder.event(
                &reference(cm.as_ref()),
                "Normal",
                "Reconciled",
                &format!("by {}", ctx.name()),
            );
        }
        Ok::<_, String>(Action::done())
    };
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    let line = tokio::task::spawn_blocking(move || events.recv_timeout(Duration::from_secs(20)))
        .await
        .unwrap();
    assert_eq!(line.unwrap(), "Normal Reconciled by configmap-secrets");
    // Let the initial notifications (the ConfigMap's and the Secret's) settle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = metrics.reconcile_total(ReconcileResult::Success);
    let mut secret = server.get("secrets", NS, "s").unwrap().unwrap();
    secret["data"] = json!({"k": "dg=="});
    server.update("secrets", secret).unwrap();
    eventually("the Secret's change reconciles a", || {
        metrics.reconcile_total(ReconcileResult::Success) > before
    })
    .await;
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_map_and_recorder_reports_over_tower() {
    watches_map_and_recorder_reports(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_map_and_recorder_reports_over_tcp() {
    watches_map_and_recorder_reports(Transport::Tcp).await;
}

/// The operator's whole cycle against a real kube-apiserver: the finalizer is added, an
/// owned child is created with a controller reference, a change of the child reconciles
/// its owner, and deletion runs the cleanup and lets the object go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn an_operator_cycle_on_a_real_control_plane() {
    let server = ApiServer::new();
    let conn = connect(Transport::Real, &server).await;
    let client = conn.client();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let cleanups = Arc::new(Mutex::new(Vec::<String>::new()));
    let factory = InformerFactory::new(client.clone(), FactoryOptions::new(Duration::ZERO));
    let builder = Controller::new(&factory)
        .for_::<ConfigMap>()
        .owns::<Secret>();
    let metrics = builder.metrics();
    let (rcm, rsecrets, rcleanups) = (configmaps.clone(), secrets.clone(), Arc::clone(&cleanups));
    let reconcile = move |target: Target<ConfigMap>, _ctx: Arc<Context<()>>| {
        let (configmaps, secrets, cleanups) =
            (rcm.clone(), rsecrets.clone(), Arc::clone(&rcleanups));
        async move {
            let Some(cm) = target.live() else {
                return Ok(Action::done());
            };
            finalizer(&configmaps, FINALIZER, cm, |event| async move {
                match event {
                    Event::Apply(cm) => {
                        let name =
                            format!("{}-child", cm.metadata.name.clone().unwrap_or_default());
                        // `data`, not the write-only `stringData`: an unchanged child is
                        // then not written again.
                        let data = cm
                            .data
                            .clone()
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(k, v)| (k, k8s_openapi::ByteString(v.into_bytes())));
                        create_or_update(&secrets, cm.as_ref(), &name, |s| {
                            s.data = Some(data.collect());
                        })
                        .await
                        .map(|_| Action::done())
                        .map_err(|e| e.to_string())
                    }
                    Event::Cleanup(cm) => {
                        cleanups
                            .lock()
                            .push(cm.metadata.name.clone().unwrap_or_default());
                        Ok(Action::done())
                    }
                }
            })
            .await
        }
    };
    let stop = CancellationToken::new();
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "op", "namespace": NS}, "data": {"v": "1"}}))
    .unwrap();
    configmaps
        .create(&kube::api::PostParams::default(), &cm)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let child = loop {
        if let Some(s) = secrets.get_opt("op-child").await.unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the child Secret was created");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let live = configmaps.get("op").await.unwrap();
    assert_eq!(live.metadata.finalizers, Some(vec![FINALIZER.to_owned()]));
    let owner = &child.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("ConfigMap", Some(true))
    );
    assert_eq!(Some(&owner.uid), live.metadata.uid.as_ref());

    // A change to the child reconciles the owner, which sets the child back.
    let before = metrics.reconcile_total(ReconcileResult::Success);
    secrets
        .patch(
            "op-child",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"stringData": {"v": "tampered"}})),
        )
        .await
        .unwrap();
    while metrics.reconcile_total(ReconcileResult::Success) == before {
        assert!(
            Instant::now() < deadline,
            "the child's change reconciled its owner"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    configmaps
        .delete("op", &DeleteParams::default())
        .await
        .unwrap();
    while configmaps.get_opt("op").await.unwrap().is_some() {
        assert!(
            Instant::now() < deadline,
            "the ConfigMap was deleted after its cleanup"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // At least once, and only for "op": a reconcile that read the cache before the
    // finalizer's removal reached it runs the cleanup a second time (the finalizer
    // module's contract; seen on the real control plane).
    let ran = cleanups.lock().clone();
    assert!(
        !ran.is_empty() && ran.iter().all(|n| n == "op"),
        "cleanups: {ran:?}"
    );
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
    conn.close().await;
}

/// A primary kind chosen at run time: the controller runs on the informer of a
/// `DynamicSharedInformerFactory` (started by its owner), with owned typed children.
async fn a_dynamic_primary(transport: Transport) {
    use kubegen_runtime::cache::dynamic::DynamicSharedInformerFactory;
    use kubegen_runtime::object::{DynamicObject, GroupVersionResource};

    let server = ApiServer::new();
    let conn = connect(transport, &server).await;
    server.create("configmaps", config_map("a", &[])).unwrap();
    let options = || FactoryOptions::new(Duration::ZERO);
    let dynamic = DynamicSharedInformerFactory::new(conn.client(), options());
    let configmaps = dynamic
        .for_resource(&GroupVersionResource::gvr("", "v1", "configmaps"))
        .await
        .expect("configmaps are discovered");
    let api_resource = configmaps.mapping().api_resource();
    let typed = InformerFactory::new(conn.client(), options());
    let seen = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
    let recorded = Arc::clone(&seen);
    let reconcile = move |target: Target<DynamicObject>, _ctx: Arc<Context<()>>| {
        let seen = Arc::clone(&recorded);
        async move {
            let entry = match &target {
                Target::Live(obj) => (kubegen_runtime::object::object_key(obj.as_ref()), false),
                Target::Gone(r) => (r.key(), true),
            };
            seen.lock().push(entry);
            Ok::<_, String>(Action::done())
        }
    };
    let stop = CancellationToken::new();
    let builder = Controller::new(&typed)
        .for_informer(configmaps.informer().clone(), &api_resource)
        .owns::<Secret>();
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    dynamic.start(&stop);
    eventually("the dynamic primary is reconciled", || {
        seen.lock().contains(&("default/a".to_owned(), false))
    })
    .await;
    let owner = server.get("configmaps", NS, "a").unwrap().unwrap();
    server
        .create(
            "secrets",
            json!({"metadata": {"name": "s", "namespace": NS, "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "a",
                "uid": owner["metadata"]["uid"], "controller": true}]}}),
        )
        .unwrap();
    eventually("its owned Secret reconciles it again", || {
        seen.lock().iter().filter(|(k, _)| k == "default/a").count() >= 2
    })
    .await;
    server.delete("configmaps", NS, "a").unwrap();
    eventually("it is reconciled as gone", || {
        seen.lock().contains(&("default/a".to_owned(), true))
    })
    .await;
    stop.cancel();
    task.await.unwrap().unwrap();
    typed.shutdown().await;
    dynamic.shutdown().await;
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_primary_over_tower() {
    a_dynamic_primary(Transport::Tower).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_primary_over_tcp() {
    a_dynamic_primary(Transport::Tcp).await;
}
