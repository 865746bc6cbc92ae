//! The informer pipeline over HTTP against the in-memory API server, with real time: each
//! test body runs over the in-process tower Service and over TCP via a kubeconfig.
//! Objects are written through the server's admin API; the informer must sync, its lister
//! must see them (also by namespace), and handlers must hear of every change.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubegen_runtime::cache::delta_fifo::DeltaObject;
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::cache::informer::{
    InformerOptions, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::labels::Selector;
use kubegen_runtime::testing::ApiServer;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A server and a client on one transport.
struct Env {
    server: ApiServer,
    client: kube::Client,
}

async fn both(f: impl AsyncFn(Env)) {
    let s = ApiServer::new();
    let client = kube::Client::new(s.service(), "default");
    f(Env { server: s, client }).await;

    let s = ApiServer::new();
    let tcp = s.serve_tcp().await.unwrap();
    let client = tcp.client().await.unwrap();
    f(Env { server: s, client }).await;
    tcp.shutdown().await;
}

fn pod(ns: &str, name: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    })
}

fn key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or("")
    )
}

fn app(p: &Pod) -> String {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app"))
        .cloned()
        .unwrap_or_default()
}

/// A handler forwarding every notification as a line of text.
fn forwarding_handler(tx: mpsc::UnboundedSender<String>) -> ResourceEventHandlerFuncs<Pod> {
    let (t1, t2, t3) = (tx.clone(), tx.clone(), tx);
    ResourceEventHandlerFuncs::new()
        .add_func(move |p: &Arc<Pod>, initial| {
            let _ = t1.send(format!("add {} {} initial={initial}", key(p), app(p)));
        })
        .update_func(move |old: &Arc<Pod>, new: &Arc<Pod>| {
            let _ = t2.send(format!("update {} {}->{}", key(new), app(old), app(new)));
        })
        .delete_func(move |obj: &DeltaObject<Pod>| {
            let what = obj.object().map(|p| key(p)).unwrap_or_default();
            let _ = t3.send(format!("delete {what} tombstone={}", obj.is_tombstone()));
        })
}

async fn next(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a notification within 10s")
        .expect("the handler is alive")
}

fn names(pods: &[Arc<Pod>]) -> Vec<String> {
    let mut v: Vec<String> = pods.iter().map(|p| key(p)).collect();
    v.sort();
    v
}

#[tokio::test]
async fn informer_syncs_lists_and_hears_changes() {
    both(async |env: Env| {
        env.server.create("pods", pod("ns1", "a", "web")).unwrap();
        env.server.create("pods", pod("ns1", "b", "web")).unwrap();
        env.server.create("pods", pod("ns2", "c", "db")).unwrap();

        let informer = SharedIndexInformer::new(
            Arc::new(ResourceClient::<Pod>::all(env.client.clone())),
            InformerOptions::default(),
        );
        let (tx, mut rx) = mpsc::unbounded_channel();
        informer.add_event_handler(forwarding_handler(tx)).unwrap();
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let informer = informer.clone();
            let stop = stop.clone();
            async move { informer.run(stop).await }
        });
        let synced = tokio::time::timeout(Duration::from_secs(10), informer.wait_for_sync(&stop))
            .await
            .expect("synced within 10s");
        assert!(synced);
        assert!(!informer.last_sync_resource_version().is_empty());

        let mut initial = Vec::new();
        for _ in 0..3 {
            initial.push(next(&mut rx).await);
        }
        initial.sort();
        assert_eq!(
            initial,
            [
                "add ns1/a web initial=true",
                "add ns1/b web initial=true",
                "add ns2/c db initial=true",
            ]
        );

        let lister = informer.lister();
        let all = Selector::everything();
        assert_eq!(names(&lister.list(&all)), ["ns1/a", "ns1/b", "ns2/c"]);
        assert_eq!(
            names(&lister.namespaced("ns1").list(&all)),
            ["ns1/a", "ns1/b"]
        );
        let db: Selector = "app=db".parse().unwrap();
        assert_eq!(names(&lister.list(&db)), ["ns2/c"]);
        assert_eq!(
            lister
                .namespaced("ns2")
                .get("c")
                .unwrap()
                .metadata
                .name
                .as_deref(),
            Some("c")
        );
        assert!(lister
            .namespaced("ns1")
            .get("c")
            .unwrap_err()
            .is_not_found());
        // Cached objects carry no managedFields and keep their type.
        assert!(lister
            .list(&all)
            .iter()
            .all(|p| p.metadata.managed_fields.is_none()));

        // A modification, a deletion and a creation, in this order.
        let mut a = env.server.get("pods", "ns1", "a").unwrap().unwrap();
        a["metadata"]["labels"]["app"] = json!("api");
        env.server.update("pods", a).unwrap();
        assert_eq!(next(&mut rx).await, "update ns1/a web->api");
        assert_eq!(
            app(&lister.namespaced("ns1").get("a").unwrap()),
            "api",
            "the cache is updated before handlers hear of it"
        );

        env.server.delete("pods", "ns2", "c").unwrap();
        assert_eq!(next(&mut rx).await, "delete ns2/c tombstone=false");
        assert!(lister
            .namespaced("ns2")
            .get("c")
            .unwrap_err()
            .is_not_found());

        env.server.create("pods", pod("ns2", "d", "db")).unwrap();
        assert_eq!(next(&mut rx).await, "add ns2/d db initial=false");
        assert_eq!(names(&lister.list(&db)), ["ns2/d"]);

        stop.cancel();
        task.await.unwrap();
        assert!(informer.is_stopped());
    })
    .await;
}

#[tokio::test]
async fn factory_informers_over_http() {
    both(async |env: Env| {
        env.server.create("pods", pod("ns1", "a", "web")).unwrap();
        env.server.create("pods", pod("ns1", "b", "db")).unwrap();
        env.server.create("pods", pod("ns2", "c", "web")).unwrap();

        // Namespace and tweak: only ns1's web pods.
        let factory = InformerFactory::new(
            env.client.clone(),
            FactoryOptions::new(Duration::ZERO)
                .namespace("ns1")
                .tweak_list_options(|o| o.label_selector = Some("app=web".into())),
        );
        let pods = factory.informer::<Pod>();
        let (tx, mut rx) = mpsc::unbounded_channel();
        pods.add_event_handler(forwarding_handler(tx)).unwrap();
        let stop = CancellationToken::new();
        factory.start(&stop);
        let synced =
            tokio::time::timeout(Duration::from_secs(10), factory.wait_for_cache_sync(&stop))
                .await
                .expect("synced within 10s");
        assert_eq!(
            synced,
            BTreeMap::from([(std::any::type_name::<Pod>(), true)])
        );
        assert_eq!(next(&mut rx).await, "add ns1/a web initial=true");
        assert_eq!(
            names(&pods.lister().list(&Selector::everything())),
            ["ns1/a"]
        );

        // The watch carries the selector too: b entering the selection is an add, and a
        // pod in another namespace is never seen.
        env.server.create("pods", pod("ns2", "e", "web")).unwrap();
        let mut b = env.server.get("pods", "ns1", "b").unwrap().unwrap();
        b["metadata"]["labels"]["app"] = json!("web");
        env.server.update("pods", b).unwrap();
        assert_eq!(next(&mut rx).await, "add ns1/b web initial=false");

        // The generic informer shares the typed one's cache.
        let generic = factory
            .for_resource(&kube::core::GroupVersionResource::gvr("", "v1", "pods"))
            .unwrap();
        assert_eq!(
            generic
                .lister()
                .list_namespaced("ns1", &Selector::everything())
                .len(),
            2
        );

        tokio::time::timeout(Duration::from_secs(10), factory.shutdown())
            .await
            .expect("shutdown within 10s");
        assert!(pods.is_stopped());
    })
    .await;
}
