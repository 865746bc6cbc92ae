//! Servers that page, chunk and write differently from the in-memory server's defaults
//! (the variants the informer benchmark runs, `hack/bench-informer-variants.sh`): a list
//! answered whole whatever its `limit`, pages capped below the client's `limit`, watch
//! events each in a chunk of their own, events written one per lock, and events whose
//! content changes. Clients must see the same objects and the same events on every one.
//! Each test body runs over the in-process tower Service and over TCP via a kubeconfig,
//! on a multi-thread runtime (where the watch reader hands every buffer to the decoding
//! pool).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams};
use kubegen_runtime::cache::informer::{
    InformerOptions, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kubegen_runtime::cache::reflector::ReflectorOptions;
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::labels::Selector;
use kubegen_runtime::testing::{ApiServer, ApiServerBuilder, ListLimit};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

async fn both(builder: ApiServerBuilder, f: impl AsyncFn(ApiServer, kube::Client)) {
    let s = builder.clone().build();
    let client = kube::Client::new(s.service(), "default");
    f(s, client).await;

    let s = builder.build();
    let tcp = s.serve_tcp().await.expect("listen");
    let client = tcp.client().await.expect("client");
    f(s, client).await;
    tcp.shutdown().await;
}

fn pod(i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p{i:03}"), "namespace": format!("ns{}", i % 3), "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"containerStatuses": [{"name": "c", "image": "nginx", "imageID": "", "ready": true, "restartCount": 0}]},
    })
}

fn config_map(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i:03}"), "namespace": "default"}})
}

/// The variants a benchmark run can choose, as server builders.
fn variants() -> Vec<(&'static str, ApiServerBuilder)> {
    vec![
        ("defaults", ApiServer::builder()),
        (
            "list ignores limit",
            ApiServer::builder().list_limit(ListLimit::Ignore),
        ),
        (
            "pages of 3",
            ApiServer::builder().list_limit(ListLimit::AtMost(3)),
        ),
        (
            "one event per chunk",
            ApiServer::builder().watch_chunk_bytes(0),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_as_the_server_says_and_clients_follow() {
    // A server may answer fewer items than the limit, with a continue token, and may
    // answer a whole list whatever the limit: clients follow what it answers.
    both(
        ApiServer::builder().list_limit(ListLimit::AtMost(3)),
        async |server, client| {
            for i in 0..10 {
                server.create("configmaps", config_map(i)).unwrap();
            }
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            // Pages of at most 3 whatever the client asks, each with a continue token
            // but the last; following them gives every object once.
            let first = api.list(&ListParams::default().limit(500)).await.unwrap();
            assert_eq!(first.items.len(), 3);
            assert!(first.metadata.continue_.is_some());
            let unbounded = api.list(&ListParams::default()).await.unwrap();
            assert_eq!(unbounded.items.len(), 3);
            let small = api.list(&ListParams::default().limit(2)).await.unwrap();
            assert_eq!(small.items.len(), 2, "a smaller limit is honoured");
            let mut names = Vec::new();
            let mut token: Option<String> = None;
            loop {
                let mut lp = ListParams::default().limit(500);
                if let Some(t) = token.take() {
                    lp = lp.continue_token(&t);
                }
                let page = api.list(&lp).await.unwrap();
                assert!(page.items.len() <= 3);
                names.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
                match page.metadata.continue_.filter(|t| !t.is_empty()) {
                    Some(t) => token = Some(t),
                    None => break,
                }
            }
            let want: Vec<String> = (0..10).map(|i| format!("c{i:03}")).collect();
            assert_eq!(names, want);
        },
    )
    .await;
    both(
        ApiServer::builder().list_limit(ListLimit::Ignore),
        async |server, client| {
            for i in 0..10 {
                server.create("configmaps", config_map(i)).unwrap();
            }
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            // The whole list in one answer, without a continue token.
            let all = api.list(&ListParams::default().limit(4)).await.unwrap();
            assert_eq!(all.items.len(), 10);
            assert!(all.metadata.continue_.is_none_or(|t| t.is_empty()));
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_sync_and_hear_every_change_on_every_variant() {
    const PODS: usize = 40;
    const CHANGES: usize = 100;
    // With the WatchList client (the default) the initial list is a watch and list pages
    // never reach the informer; without it the reflector's pager must follow them.
    for (variant, builder, watch_list) in variants()
        .into_iter()
        .flat_map(|(v, b)| [(v, b.clone(), true), (v, b, false)])
    {
        let name = format!("{variant}, watch list {watch_list}");
        let name = name.as_str();
        both(builder, async |server, client| {
            for i in 0..PODS {
                server.create("pods", pod(i)).unwrap();
            }
            let informer = SharedIndexInformer::new(
                Arc::new(ResourceClient::<Pod>::all(client)),
                InformerOptions::default()
                    .reflector(ReflectorOptions::default().use_watch_list(watch_list)),
            );
            let (tx, mut rx) = mpsc::unbounded_channel::<(String, String, i32)>();
            informer
                .add_event_handler(ResourceEventHandlerFuncs::new().update_func(
                    move |_: &Arc<Pod>, new: &Arc<Pod>| {
                        let rev = new
                            .metadata
                            .labels
                            .as_ref()
                            .and_then(|l| l.get("revision"))
                            .cloned()
                            .unwrap_or_default();
                        let restarts = new
                            .status
                            .as_ref()
                            .and_then(|s| s.container_statuses.as_ref())
                            .and_then(|c| c.first())
                            .map_or(-1, |c| c.restart_count);
                        let _ =
                            tx.send((new.metadata.name.clone().unwrap_or_default(), rev, restarts));
                    },
                ))
                .unwrap();
            let stop = CancellationToken::new();
            let task = tokio::spawn({
                let informer = informer.clone();
                let stop = stop.clone();
                async move { informer.run(stop).await }
            });
            let synced =
                tokio::time::timeout(Duration::from_secs(20), informer.wait_for_sync(&stop))
                    .await
                    .unwrap_or_else(|_| panic!("{name}: synced within 20s"));
            assert!(synced, "{name}");
            assert_eq!(
                informer.lister().list(&Selector::everything()).len(),
                PODS,
                "{name}"
            );
            let lists = server
                .requests()
                .iter()
                .filter(|r| r.verb == "list" && r.resource == "pods")
                .count();
            match (watch_list, variant) {
                (true, _) => assert_eq!(lists, 0, "{name}: the initial list is a watch"),
                (false, "pages of 3") => {
                    assert!(lists >= PODS.div_ceil(3), "{name}: {lists} pages")
                }
                (false, _) => assert_eq!(lists, 1, "{name}: one page"),
            }

            // Changes of content, computed ahead and written one per lock, then the
            // same number of resourceVersion bumps written in batches.
            let prepared = server
                .prepare_changes("pods", CHANGES, |k, obj| {
                    obj["metadata"]["labels"]["revision"] = json!(format!("r{k}"));
                    obj["status"]["containerStatuses"][0]["restartCount"] = json!(k / PODS + 1);
                })
                .unwrap();
            assert_eq!(prepared.len(), CHANGES);
            let before = server.resource_version();
            let last = server.write_prepared(prepared, 1).unwrap();
            assert_eq!(
                last,
                before + CHANGES as u64,
                "{name}: one version per change"
            );
            let mut seen = Vec::new();
            for _ in 0..CHANGES {
                let ev = tokio::time::timeout(Duration::from_secs(20), rx.recv())
                    .await
                    .unwrap_or_else(|_| panic!("{name}: {} of {CHANGES} changes heard", seen.len()))
                    .unwrap();
                seen.push(ev);
            }
            // The objects in name order, wrapping around: every change, in order.
            let want: Vec<(String, String, i32)> = (0..CHANGES)
                .map(|k| {
                    (
                        format!("p{:03}", sorted_index(k % PODS)),
                        format!("r{k}"),
                        (k / PODS + 1) as i32,
                    )
                })
                .collect();
            assert_eq!(seen, want, "{name}");
            server.emit_modifications_by("pods", CHANGES, 7).unwrap();
            for i in 0..CHANGES {
                tokio::time::timeout(Duration::from_secs(20), rx.recv())
                    .await
                    .unwrap_or_else(|_| panic!("{name}: bump {i} heard"))
                    .unwrap();
            }
            // The lister holds each object's last change.
            for k in CHANGES - PODS..CHANGES {
                let p = sorted_index(k % PODS);
                let got = informer
                    .lister()
                    .namespaced(&format!("ns{}", p % 3))
                    .get(&format!("p{p:03}"))
                    .unwrap();
                assert_eq!(
                    got.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("revision"))
                        .map(String::as_str),
                    Some(format!("r{k}").as_str()),
                    "{name}"
                );
            }
            stop.cancel();
            task.await.unwrap();
        })
        .await;
    }
}

/// The seeded Pod at position `n` of the server's key order (`<namespace>/<name>`: the
/// namespaces first, then the names).
fn sorted_index(n: usize) -> usize {
    let mut keys: Vec<(String, usize)> = (0..40)
        .map(|i| (format!("ns{}/p{i:03}", i % 3), i))
        .collect();
    keys.sort();
    keys[n].1
}
