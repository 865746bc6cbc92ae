//! Protobuf on the read path, end to end: a client of a built-in kind asks for protobuf
//! on get, list and watch, and what it decodes equals what a JSON-only client
//! (`client::protobuf::json_only`) decodes from the same server, object for object.
//! Over the in-memory server's tower Service and TCP (which answer protobuf for
//! built-in kinds as kube-apiserver does), and against a real kube-apiserver (ignored
//! test, `hack/test.sh real`). Custom resources keep JSON.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::Resource;
use kubegen_runtime::client::{protobuf, ListOptions, ResourceClient, WatchEvent, WriteOptions};
use kubegen_runtime::object::DynamicObject;
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;

const NS: &str = "default";

/// Objects of several kinds with the fields that take every special path of the
/// decoder: labels and annotations (maps), containers (repeated messages), resources
/// (Quantity maps), ports (IntOrString), probes (an inline message), times,
/// `[]byte` maps (Secret data), optional pointers set to zero (`replicas: 0`).
fn fixtures(i: usize) -> (Pod, ConfigMap, Secret, Service, Deployment) {
    let pod = json!({
        "metadata": {"name": format!("p{i}"), "labels": {"app": "web", "i": i.to_string()},
                     "annotations": {"note": "ünïcode ✓", "empty": ""}},
        "spec": {"containers": [{
            "name": "c", "image": "nginx:1", "args": ["-v", ""],
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1"}},
            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
            // (No `"value": ""`: Go's omitempty drops it from protobuf and from
            // kube-apiserver's JSON, but the in-memory server's JSON keeps what was sent.)
            "env": [{"name": "A"}, {"name": "B", "value": "b"}],
        }], "terminationGracePeriodSeconds": 0, "enableServiceLinks": false},
    });
    let cm = json!({"metadata": {"name": format!("cm{i}")}, "data": {"a": "1", "b": ""},
                    "binaryData": {"bin": "AAEC"}});
    let secret = json!({"metadata": {"name": format!("s{i}")}, "type": "Opaque",
                        "data": {"k": "aGVsbG8=", "empty": ""}});
    let svc = json!({"metadata": {"name": format!("svc{i}")}, "spec": {
        "selector": {"app": "web"},
        "ports": [{"name": "http", "port": 80, "targetPort": "http"}, {"name": "n", "port": 81, "targetPort": 8081}],
    }});
    let deploy = json!({"metadata": {"name": format!("d{i}")}, "spec": {
        "replicas": 0,
        "selector": {"matchLabels": {"app": format!("d{i}")}},
        "template": {"metadata": {"labels": {"app": format!("d{i}")}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
    }});
    (from(pod), from(cm), from(secret), from(svc), from(deploy))
}

fn from<K: DeserializeOwned>(v: serde_json::Value) -> K {
    serde_json::from_value(v).expect("a fixture decodes")
}

/// Creates the fixtures through the client (the same way on every transport).
async fn seed(client: &kube::Client, n: usize) {
    let wp = WriteOptions::default();
    for i in 0..n {
        let (pod, cm, secret, svc, deploy) = fixtures(i);
        ResourceClient::<Pod>::namespaced(client.clone(), NS)
            .create(&pod, &wp)
            .await
            .expect("create pod");
        ResourceClient::<ConfigMap>::namespaced(client.clone(), NS)
            .create(&cm, &wp)
            .await
            .expect("create configmap");
        ResourceClient::<Secret>::namespaced(client.clone(), NS)
            .create(&secret, &wp)
            .await
            .expect("create secret");
        ResourceClient::<Service>::namespaced(client.clone(), NS)
            .create(&svc, &wp)
            .await
            .expect("create service");
        ResourceClient::<Deployment>::namespaced(client.clone(), NS)
            .create(&deploy, &wp)
            .await
            .expect("create deployment");
    }
}

/// Whether a raw GET with the client's Accept header is answered in protobuf.
async fn answers_protobuf(client: &kube::Client, url: &str) -> bool {
    let req = http::Request::get(url)
        .header(http::header::ACCEPT, protobuf::ACCEPT)
        .body(kube::client::Body::empty())
        .expect("request");
    let res = client.send(req).await.expect("raw GET");
    res.headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/vnd.kubernetes.protobuf"))
}

/// How the JSON answers compare with the protobuf ones.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Json {
    /// As they are: kube-apiserver writes both from the same Go object.
    Exact,
    /// As Go would write them: the in-memory server's JSON keeps what clients sent
    /// (`status` absent where Go writes `"status": {"loadBalancer": {}}`, an empty
    /// `omitempty` string kept), while its protobuf, like kube-apiserver's, is Go's.
    GoNormalized,
}

/// `k` as Go's encoding/json would write the same object (through the protobuf table).
fn go_normalized<K: Serialize + DeserializeOwned>(k: K) -> K {
    let v = serde_json::to_value(&k).expect("encode");
    let obj = v.as_object().expect("an object");
    let pb = kubegen_apimachinery::protobuf::encode_object(obj).expect("protobuf encoding");
    let go = kubegen_apimachinery::protobuf::decode(&pb).expect("protobuf decoding");
    serde_json::from_value(serde_json::Value::Object(go)).expect("decode")
}

/// Items by name (list and watch orders may differ between two reads).
fn by_name<K: Resource + Serialize + DeserializeOwned>(
    items: Vec<K>,
    json: Json,
) -> BTreeMap<String, K> {
    items
        .into_iter()
        .map(|k| match json {
            Json::Exact => k,
            Json::GoNormalized => go_normalized(k),
        })
        .map(|k| (k.meta().name.clone().unwrap_or_default(), k))
        .collect()
}

/// The first `n` ADDED objects of a watch from resourceVersion 0.
async fn watched<K, W>(client: &ResourceClient<K, W>, n: usize) -> Vec<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
    W: kubegen_runtime::client::WireDecoders<K>,
{
    let mut stream = client
        .watch(&ListOptions::default().resource_version("0"))
        .await
        .expect("watch");
    let mut out = Vec::new();
    while out.len() < n {
        let ev = tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .expect("an event within 30 s")
            .expect("the watch goes on");
        match ev {
            WatchEvent::Added(k) => out.push(k),
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected event {}", event_name(&other)),
        }
    }
    out
}

fn event_name<K>(ev: &WatchEvent<K>) -> String {
    match ev {
        WatchEvent::Added(_) => "ADDED".into(),
        WatchEvent::Modified(_) => "MODIFIED".into(),
        WatchEvent::Deleted(_) => "DELETED".into(),
        WatchEvent::Bookmark(_) => "BOOKMARK".into(),
        WatchEvent::Error(e) => format!("ERROR {e:?}"),
    }
}

/// get, list (paged and whole) and watch of `K` through both clients agree.
async fn same_reads<K>(pb: &kube::Client, json: &kube::Client, n: usize, mode: Json)
where
    K: Resource<DynamicType = ()>
        + DeserializeOwned
        + Serialize
        + PartialEq
        + Debug
        + Send
        + 'static,
{
    let a = ResourceClient::<K>::namespaced(pb.clone(), NS);
    let b = ResourceClient::<K>::namespaced(json.clone(), NS);
    assert!(a.prefers_protobuf(), "{} is a built-in kind", K::kind(&()));
    assert!(
        answers_protobuf(pb, &a.list_url(&ListOptions::default())).await,
        "{}: the server answers protobuf",
        K::kind(&())
    );
    // The protobuf side is Go's already; only the JSON side is normalized.
    let ex = Json::Exact;
    let all = ListOptions::default();
    let (la, lb) = (
        a.list(&all).await.expect("pb list"),
        b.list(&all).await.expect("json list"),
    );
    // (A real server has more: the `kubernetes` Service, the token Secrets, ...)
    assert!(la.items.len() >= n, "{}", K::kind(&()));
    let n = la.items.len();
    assert_eq!(la.resource_version, lb.resource_version);
    let (ma, mb) = (by_name(la.items, ex), by_name(lb.items, mode));
    if ma != mb {
        let v = |m: &BTreeMap<String, K>| serde_json::to_string(m).expect("encode");
        panic!(
            "{} list differs:\nprotobuf {}\n    json {}",
            K::kind(&()),
            v(&ma),
            v(&mb)
        );
    }

    let paged = ListOptions::default().limit(2);
    let pa = a.list(&paged).await.expect("pb page");
    let pb_page = b.list(&paged).await.expect("json page");
    assert_eq!(pa.items.len(), 2.min(n));
    assert_eq!(
        pa.continue_token.is_some(),
        pb_page.continue_token.is_some()
    );
    assert_eq!(pa.remaining_item_count, pb_page.remaining_item_count);
    let (xa, xb) = (
        a.list_all(&paged).await.expect("pb list_all"),
        b.list_all(&paged).await.expect("json list_all"),
    );
    assert_eq!(
        by_name(xa.items, ex),
        by_name(xb.items, mode),
        "{} list_all",
        K::kind(&())
    );

    let first = by_name(b.list(&all).await.expect("list").items, ex);
    for name in first.keys() {
        let ga = a.get(name).await.expect("pb get");
        let gb = b.get(name).await.expect("json get");
        let gb = match mode {
            Json::Exact => gb,
            Json::GoNormalized => go_normalized(gb),
        };
        assert_eq!(ga, gb, "{} get {name}", K::kind(&()));
        // Serialized the same too: no field differs only in a way PartialEq ignores.
        assert_eq!(
            serde_json::to_value(&ga).expect("encode"),
            serde_json::to_value(&gb).expect("encode")
        );
    }
    let (wa, wb) = (watched(&a, n).await, watched(&b, n).await);
    assert_eq!(by_name(wa, ex), by_name(wb, mode), "{} watch", K::kind(&()));
}

/// A watch's MODIFIED and DELETED events and its bookmarks, decoded from protobuf.
async fn watch_events(pb: &kube::Client) {
    let pods = ResourceClient::<Pod>::namespaced(pb.clone(), NS);
    let rv = pods
        .list(&ListOptions::default())
        .await
        .expect("list")
        .resource_version;
    let mut stream = pods
        .watch(&ListOptions::default().resource_version(&rv).bookmarks(true))
        .await
        .expect("watch");
    let mut p = pods.get("p0").await.expect("get");
    p.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("changed".into(), "yes".into());
    let updated = pods
        .update(&p, &WriteOptions::default())
        .await
        .expect("update");
    pods.delete("p1", &Default::default())
        .await
        .expect("delete");
    // (kube-apiserver first marks the deleted Pod: a MODIFIED with a
    // deletionTimestamp, then the DELETED.)
    let (mut modified, mut deleted) = (false, false);
    while !(modified && deleted) {
        let ev = tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .expect("an event within 30 s")
            .expect("the watch goes on");
        match ev {
            WatchEvent::Modified(k) if k.metadata.name.as_deref() == Some("p0") => {
                assert_eq!(k, updated);
                modified = true;
            }
            WatchEvent::Modified(k) => {
                assert_eq!(k.metadata.name.as_deref(), Some("p1"));
                assert!(k.metadata.deletion_timestamp.is_some());
            }
            WatchEvent::Deleted(k) => {
                assert_eq!(k.metadata.name.as_deref(), Some("p1"));
                assert!(modified, "DELETED came before MODIFIED");
                deleted = true;
            }
            WatchEvent::Bookmark(b) => assert!(!b.resource_version.is_empty()),
            other => panic!("unexpected event {}", event_name(&other)),
        }
    }
}

async fn exercise(client: kube::Client, mode: Json) {
    let n = 5;
    seed(&client, n).await;
    let json = protobuf::json_only(client.clone());
    same_reads::<Pod>(&client, &json, n, mode).await;
    same_reads::<ConfigMap>(&client, &json, n, mode).await;
    same_reads::<Secret>(&client, &json, n, mode).await;
    same_reads::<Service>(&client, &json, n, mode).await;
    same_reads::<Deployment>(&client, &json, n, mode).await;
    // The JSON-only client never gets protobuf.
    let pods = ResourceClient::<Pod>::namespaced(json.clone(), NS);
    let req = http::Request::get(pods.list_url(&ListOptions::default()))
        .header(http::header::ACCEPT, protobuf::ACCEPT)
        .body(kube::client::Body::empty())
        .expect("request");
    let res = json.send(req).await.expect("GET");
    assert_eq!(
        res.headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    watch_events(&client).await;
}

#[tokio::test]
async fn protobuf_reads_equal_json_reads_over_tower_and_tcp() {
    for transport in [Transport::Tower, Transport::Tcp] {
        let server = ApiServer::builder().protobuf_responses(true).build();
        let conn = transport
            .connect(&server, Vec::<std::path::PathBuf>::new())
            .await
            .expect("connect");
        exercise(conn.client(), Json::GoNormalized).await;
        conn.close().await;
    }
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn protobuf_reads_equal_json_reads_on_a_real_apiserver() {
    let server = ApiServer::new();
    let conn = Transport::Real
        .connect(&server, Vec::<std::path::PathBuf>::new())
        .await
        .expect("a control plane");
    exercise(conn.client(), Json::Exact).await;
    conn.close().await;
}

/// Custom resources and metadata-only clients keep JSON; a server that answers JSON to a
/// protobuf request is read as JSON.
#[tokio::test]
async fn custom_resources_and_json_servers_keep_json() {
    let ar = kube::core::ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), "default");
    let widgets = ResourceClient::<DynamicObject>::all_with(client.clone(), &ar);
    assert!(!widgets.prefers_protobuf());
    let meta = ResourceClient::<kube::core::PartialObjectMeta<Pod>>::all(client.clone());
    assert!(!meta.prefers_protobuf());
    let pods = ResourceClient::<Pod>::all(client.clone());
    assert!(pods.prefers_protobuf());

    // A plain JSON server (here: every answer rewritten to JSON by asking for JSON only)
    // still serves the protobuf-preferring client, through the Content-Type check.
    server
        .create("pods", json!({"metadata": {"name": "x", "namespace": NS}}))
        .expect("create");
    let over_json = ResourceClient::<Pod>::all(protobuf::json_only(client));
    assert!(over_json.prefers_protobuf());
    let list = over_json.list(&ListOptions::default()).await.expect("list");
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("x"));
}

/// A client that records the `Accept` header of every request it sends.
fn recording(client: kube::Client) -> (kube::Client, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let accept = req
            .headers()
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        log.lock().unwrap().push(accept);
        let client = client.clone();
        async move { client.send(req).await }
    });
    (kube::Client::new(svc, NS), seen)
}

/// A JSON-only client (what generated clients and informers of custom resources use)
/// asks for JSON on get, list and watch, and reads what a client over a JSON-only
/// connection reads; the factory's `json_informer` is the same informer as `informer`.
async fn json_only_reads(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<std::path::PathBuf>::new())
        .await
        .expect("connect");
    seed(&conn.client(), 3).await;
    let (client, seen) = recording(conn.client());
    let negotiated = ResourceClient::<Pod>::namespaced(client.clone(), NS);
    let json_only = negotiated.clone().json_only();
    assert!(negotiated.prefers_protobuf());
    assert!(!json_only.prefers_protobuf());
    let reference = ResourceClient::<Pod>::namespaced(protobuf::json_only(conn.client()), NS);

    seen.lock().unwrap().clear();
    let opts = ListOptions::default();
    let list = json_only.list(&opts).await.expect("list");
    assert_eq!(list.items, reference.list(&opts).await.expect("list").items);
    assert_eq!(list.items.len(), 3);
    let name = list.items[0].metadata.name.clone().expect("a name");
    assert_eq!(
        json_only.get(&name).await.expect("get"),
        reference.get(&name).await.expect("get")
    );
    let mut watched = watched(&json_only, 3).await;
    watched.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut listed = list.items.clone();
    listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    assert_eq!(watched, listed);
    let accepts = seen.lock().unwrap().clone();
    assert_eq!(accepts.len(), 3, "{accepts:?}");
    assert!(
        accepts.iter().all(|a| !a.contains("protobuf")),
        "a JSON-only client never asks for protobuf: {accepts:?}"
    );

    // The negotiated client asks for protobuf on the same reads.
    seen.lock().unwrap().clear();
    negotiated.get(&name).await.expect("get");
    assert_eq!(seen.lock().unwrap().as_slice(), [protobuf::ACCEPT]);

    // The factory's JSON-only informer of a type is that type's one informer.
    let factory = kubegen_runtime::cache::factory::InformerFactory::new(
        client.clone(),
        kubegen_runtime::cache::factory::FactoryOptions::new(Duration::ZERO),
    );
    let informer = factory.json_informer::<Pod>();
    let stop = tokio_util::sync::CancellationToken::new();
    factory.start(&stop);
    let synced = factory.wait_for_cache_sync(&stop).await;
    assert!(synced.values().all(|s| *s), "{synced:?}");
    let everything = kubegen_runtime::labels::Selector::everything();
    assert_eq!(informer.lister().list(&everything).len(), 3);
    let cached = informer.lister().namespaced(NS).get(&name).expect("cached");
    let same = factory.informer::<Pod>().lister().namespaced(NS).get(&name);
    assert!(Arc::ptr_eq(&cached, &same.expect("cached")));
    stop.cancel();
    factory.shutdown().await;
    conn.close().await;
}

#[tokio::test]
async fn a_json_only_client_asks_for_json_over_tower() {
    json_only_reads(Transport::Tower).await;
}

#[tokio::test]
async fn a_json_only_client_asks_for_json_over_tcp() {
    json_only_reads(Transport::Tcp).await;
}
