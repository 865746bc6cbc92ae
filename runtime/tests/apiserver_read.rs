//! The read side of the wire protocol (SEMANTICS 9) through `ResourceClient`, each test
//! body run over the in-process tower Service and over TCP via a kubeconfig; plus kube's
//! own `Api` and `watcher` against the in-memory API server.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use http_body_util::Full;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy, WatchParams};
use kube::core::{ApiResource, DynamicObject};
use kubegen_runtime::client::{ListOptions, ResourceClient, ResourceVersionMatch, WatchEvent};
use kubegen_runtime::errors::cause;
use kubegen_runtime::testing::{ApiServer, Registration};
use serde_json::{json, Value};

/// A server and a client on one transport.
struct Env {
    server: ApiServer,
    client: kube::Client,
}

fn server() -> ApiServer {
    ApiServer::builder()
        .resource_version_wait(Duration::from_millis(20))
        .register(
            Registration::new("samplecontroller.k8s.io", "v1alpha1", "foos", "Foo")
                .list_items_type_meta(true),
        )
        .build()
}

/// Runs the test body over the tower Service, then over TCP with a client built from the
/// kubeconfig file.
async fn both(f: impl AsyncFn(Env)) {
    let s = server();
    let client = kube::Client::new(s.service(), "default");
    f(Env { server: s, client }).await;

    let s = server();
    let tcp = s.serve_tcp().await.unwrap();
    let client = tcp.client().await.unwrap();
    f(Env { server: s, client }).await;
    tcp.shutdown().await;
}

fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Value {
    let labels: BTreeMap<_, _> = labels.iter().cloned().collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "n1"},
    })
}

fn names(items: &[Pod]) -> Vec<String> {
    items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

async fn next_event<K>(w: &mut (impl Stream<Item = WatchEvent<K>> + Unpin)) -> WatchEvent<K> {
    tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("an event within 10s")
        .expect("the stream goes on")
}

/// The next event that is not a bookmark.
async fn next_change<K>(w: &mut (impl Stream<Item = WatchEvent<K>> + Unpin)) -> WatchEvent<K> {
    loop {
        match next_event(w).await {
            WatchEvent::Bookmark(_) => continue,
            e => return e,
        }
    }
}

fn event_name(e: &WatchEvent<Pod>) -> (String, String) {
    let (t, p) = match e {
        WatchEvent::Added(p) => ("ADDED", p),
        WatchEvent::Modified(p) => ("MODIFIED", p),
        WatchEvent::Deleted(p) => ("DELETED", p),
        other => panic!("not an object event: {other:?}"),
    };
    (t.to_owned(), p.metadata.name.clone().unwrap_or_default())
}

#[tokio::test]
async fn urls_of_namespaced_cluster_and_group_resources() {
    // SEMANTICS 9.1
    both(async |env: Env| {
        env.server.create("pods", pod("default", "foo", &[])).unwrap();
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let none = ListOptions::default();
        assert_eq!(pods.list_url(&none), "/api/v1/namespaces/default/pods");
        assert_eq!(
            ResourceClient::<Pod>::all(env.client.clone()).list_url(&none),
            "/api/v1/pods"
        );
        assert_eq!(pods.object_url("foo"), "/api/v1/namespaces/default/pods/foo");
        assert_eq!(
            pods.subresource_url("foo", "status"),
            "/api/v1/namespaces/default/pods/foo/status"
        );
        assert_eq!(pods.get("foo").await.unwrap().metadata.name.as_deref(), Some("foo"));
        let all = ResourceClient::<Pod>::all(env.client.clone());
        assert_eq!(all.list(&none).await.unwrap().items.len(), 1);

        // SEMANTICS 9.2
        env.server
            .create(
                "deployments.apps",
                json!({"metadata": {"name": "web", "namespace": "ns"}, "spec": {"selector": {}, "template": {}}}),
            )
            .unwrap();
        let deps = ResourceClient::<Deployment>::namespaced(env.client.clone(), "ns");
        assert_eq!(deps.object_url("web"), "/apis/apps/v1/namespaces/ns/deployments/web");
        assert_eq!(deps.get("web").await.unwrap().metadata.name.as_deref(), Some("web"));

        // SEMANTICS 9.3
        env.server.create("nodes", json!({"metadata": {"name": "n1"}})).unwrap();
        let nodes = ResourceClient::<Node>::cluster(env.client.clone());
        assert_eq!(nodes.object_url("n1"), "/api/v1/nodes/n1");
        assert_eq!(nodes.get("n1").await.unwrap().metadata.name.as_deref(), Some("n1"));
        let roles = ResourceClient::<ClusterRole>::cluster(env.client.clone());
        assert_eq!(
            roles.list_url(&none),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles"
        );
        assert!(roles.list(&none).await.unwrap().items.is_empty());
    })
    .await;
}

#[tokio::test]
async fn watch_query_parameters() {
    // SEMANTICS 9.4
    both(async |env: Env| {
        let rv = env.server.resource_version().to_string();
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let opts = ListOptions::default()
            .resource_version(&rv)
            .bookmarks(true)
            .timeout(300);
        let url = pods.watch_url(&opts);
        let (path, query) = url.split_once('?').unwrap();
        assert_eq!(path, "/api/v1/namespaces/default/pods");
        let params: Vec<&str> = query.split('&').collect();
        for p in [
            "watch=true",
            &format!("resourceVersion={rv}"),
            "allowWatchBookmarks=true",
            "timeoutSeconds=300",
        ] {
            assert!(params.contains(&p), "{p} in {query}");
        }
        let mut w = pods.watch(&opts).await.unwrap();
        env.server.create("pods", pod("default", "a", &[])).unwrap();
        assert_eq!(
            event_name(&next_change(&mut w).await),
            ("ADDED".into(), "a".into())
        );
        // resourceVersion=0 is kept together with limit, unlike kube's Api.
        let q = ListOptions::default()
            .resource_version("0")
            .limit(500)
            .to_query(false);
        assert_eq!(q, "resourceVersion=0&limit=500");
        // An empty resourceVersion means unset.
        assert_eq!(
            ListOptions::default().resource_version("").to_query(false),
            ""
        );
    })
    .await;
}

#[tokio::test]
async fn list_items_without_type_meta_and_list_metadata() {
    // SEMANTICS 9.5
    both(async |env: Env| {
        for i in 0..5 {
            env.server
                .create("pods", pod("default", &format!("p{i}"), &[]))
                .unwrap();
        }
        let raw = env
            .client
            .request_text(
                http::Request::get("/api/v1/namespaces/default/pods?limit=2")
                    .body(Vec::new())
                    .unwrap(),
            )
            .await
            .unwrap();
        let v: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(v["kind"], "PodList");
        assert_eq!(v["apiVersion"], "v1");
        assert!(v["items"][0].get("kind").is_none());
        assert!(v["items"][0].get("apiVersion").is_none());

        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let page = pods.list(&ListOptions::default().limit(2)).await.unwrap();
        assert_eq!(names(&page.items), ["p0", "p1"]);
        assert!(page.continue_token.is_some());
        assert_eq!(page.remaining_item_count, Some(3));
        let last = pods
            .list(
                &ListOptions::default()
                    .limit(2)
                    .continue_token(page.continue_token.as_deref().unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(names(&last.items), ["p2", "p3"]);
        assert_eq!(last.resource_version, page.resource_version);

        // Custom resources keep kind/apiVersion on items.
        env.server
            .create(
                "foos.samplecontroller.k8s.io",
                json!({"metadata": {"name": "f", "namespace": "default"}}),
            )
            .unwrap();
        let ar = ApiResource {
            group: "samplecontroller.k8s.io".into(),
            version: "v1alpha1".into(),
            api_version: "samplecontroller.k8s.io/v1alpha1".into(),
            kind: "Foo".into(),
            plural: "foos".into(),
        };
        let foos =
            ResourceClient::<DynamicObject>::namespaced_with(env.client.clone(), "default", &ar);
        let list = foos.list(&ListOptions::default()).await.unwrap();
        assert_eq!(list.items[0].types.as_ref().unwrap().kind, "Foo");
    })
    .await;
}

#[tokio::test]
async fn watch_frames_and_bookmarks_from_the_server() {
    // SEMANTICS 9.6
    both(async |env: Env| {
        env.server.create("pods", pod("default", "a", &[])).unwrap();
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let opts = ListOptions::default()
            .resource_version_match(ResourceVersionMatch::NotOlderThan)
            .send_initial_events(true)
            .bookmarks(true);
        let mut w = pods.watch(&opts).await.unwrap();
        assert_eq!(
            event_name(&next_event(&mut w).await),
            ("ADDED".into(), "a".into())
        );
        match next_event(&mut w).await {
            WatchEvent::Bookmark(b) => {
                assert!(b.is_initial_events_end());
                assert_eq!(
                    b.resource_version,
                    env.server.resource_version().to_string()
                );
            }
            other => panic!("expected the initial-events-end bookmark, got {other:?}"),
        }
        env.server.touch("pods", "default", "a").unwrap();
        let e = next_change(&mut w).await;
        assert_eq!(event_name(&e), ("MODIFIED".into(), "a".into()));
    })
    .await;
}

#[tokio::test]
async fn periodic_bookmarks() {
    // SEMANTICS 9.6: bookmarks carry only kind, apiVersion and the resourceVersion.
    let s = ApiServer::builder()
        .bookmark_interval(Duration::from_millis(50))
        .build();
    let client = kube::Client::new(s.service(), "default");
    s.create("pods", pod("default", "a", &[])).unwrap();
    let rv = s.resource_version().to_string();
    let pods = ResourceClient::<Pod>::namespaced(client, "default");
    let mut w = pods
        .watch(&ListOptions::default().resource_version(&rv).bookmarks(true))
        .await
        .unwrap();
    match next_event(&mut w).await {
        WatchEvent::Bookmark(b) => {
            assert_eq!(b.resource_version, rv);
            assert!(!b.is_initial_events_end());
        }
        other => panic!("expected a bookmark, got {other:?}"),
    }
    // Without allowWatchBookmarks there are none: the next event is the change.
    let mut w = pods
        .watch(&ListOptions::default().resource_version(&rv))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    s.touch("pods", "default", "a").unwrap();
    assert_eq!(
        event_name(&next_event(&mut w).await),
        ("MODIFIED".into(), "a".into())
    );
}

/// A transport that answers every request with one fixed response.
fn canned(code: u16, body: &'static str) -> kube::Client {
    let svc = tower::service_fn(move |_req: http::Request<kube::client::Body>| async move {
        let mut r = http::Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = http::StatusCode::from_u16(code).unwrap();
        Ok::<_, std::convert::Infallible>(r)
    });
    kube::Client::new(svc, "default")
}

#[tokio::test]
async fn watch_decoder_through_the_client() {
    // SEMANTICS 9.7
    let client = canned(
        200,
        r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12746"}}}"#,
    );
    let mut w = ResourceClient::<Pod>::all(client)
        .watch(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        event_name(&next_event(&mut w).await),
        ("ADDED".into(), "a".into())
    );
    assert!(
        matches!(next_event(&mut w).await, WatchEvent::Bookmark(b) if b.resource_version == "12746")
    );
    assert!(w.next().await.is_none());

    // SEMANTICS 9.8
    let client = canned(200, r#"{"type":"FOO","object":{}}"#);
    let mut w = ResourceClient::<Pod>::all(client)
        .watch(&ListOptions::default())
        .await
        .unwrap();
    match next_event(&mut w).await {
        WatchEvent::Error(e) => {
            assert!(e.message().contains("got invalid watch event type: FOO"));
            assert!(e.has_cause(cause::CLIENT_WATCH_DECODING));
        }
        other => panic!("{other:?}"),
    }
    assert!(w.next().await.is_none());

    // SEMANTICS 3.21
    let client = canned(
        200,
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n}garbage{",
    );
    let mut w = ResourceClient::<Pod>::all(client)
        .watch(&ListOptions::default())
        .await
        .unwrap();
    assert!(matches!(next_event(&mut w).await, WatchEvent::Added(_)));
    match next_event(&mut w).await {
        WatchEvent::Error(e) => {
            assert_eq!(e.code(), 500);
            assert!(e.is_internal_error());
            assert!(e.has_cause(cause::CLIENT_WATCH_DECODING));
            assert!(e
                .message()
                .starts_with("unable to decode an event from the watch stream: "));
        }
        other => panic!("{other:?}"),
    }
    assert!(w.next().await.is_none());
}

#[tokio::test]
async fn error_classification_through_the_client() {
    // SEMANTICS 9.11
    let weird = canned(
        404,
        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Weird","code":404}"#,
    );
    let e = ResourceClient::<Pod>::all(weird)
        .get("x")
        .await
        .unwrap_err();
    assert!(e.status().unwrap().is_not_found());
    let conflict = canned(
        409,
        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","code":409}"#,
    );
    let e = ResourceClient::<Pod>::all(conflict)
        .get("x")
        .await
        .unwrap_err();
    assert!(e.status().unwrap().is_conflict());
    let exists = canned(
        409,
        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409}"#,
    );
    let e = ResourceClient::<Pod>::all(exists)
        .get("x")
        .await
        .unwrap_err();
    assert!(e.status().unwrap().is_already_exists());
    assert!(!e.status().unwrap().is_conflict());
    // A body that is not a Status is classified by the HTTP code.
    let plain = canned(404, "404 page not found");
    let e = ResourceClient::<Pod>::all(plain)
        .get("x")
        .await
        .unwrap_err();
    assert!(e.status().unwrap().is_not_found());
    assert_eq!(e.status().unwrap().message(), "404 page not found");
}

#[tokio::test]
async fn watch_from_a_compacted_version_is_expired() {
    // SEMANTICS 9.9, 9.21
    both(async |env: Env| {
        env.server.create("pods", pod("default", "a", &[])).unwrap();
        let old = env.server.resource_version();
        env.server.create("pods", pod("default", "b", &[])).unwrap();
        env.server.compact();
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        // A list at an exact compacted version is expired too.
        let e = pods
            .list(
                &ListOptions::default()
                    .resource_version(&old.to_string())
                    .resource_version_match(ResourceVersionMatch::Exact),
            )
            .await
            .unwrap_err();
        assert!(e.status().unwrap().is_expired());
        let mut w = pods
            .watch(&ListOptions::default().resource_version(&old.to_string()))
            .await
            .unwrap();
        match next_event(&mut w).await {
            WatchEvent::Error(e) => {
                assert_eq!(e.code(), 410);
                assert!(e.is_expired());
                assert!(!e.is_gone());
                assert!(e.message().starts_with("too old resource version:"));
            }
            other => panic!("expected ERROR 410, got {other:?}"),
        }
        assert!(w.next().await.is_none());
    })
    .await;
}

#[tokio::test]
async fn not_found_keeps_the_servers_message() {
    // SEMANTICS 9.10
    both(async |env: Env| {
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let e = pods.get("foo").await.unwrap_err();
        let st = e.status().unwrap();
        assert!(st.is_not_found());
        assert_eq!(st.message(), r#"pods "foo" not found"#);
        assert_eq!(st.details().unwrap().name, "foo");
        assert_eq!(st.details().unwrap().kind, "pods");
        let deps = ResourceClient::<Deployment>::namespaced(env.client.clone(), "default");
        let e = deps.get("web").await.unwrap_err();
        assert_eq!(
            e.status().unwrap().message(),
            r#"deployments.apps "web" not found"#
        );
    })
    .await;
}

#[tokio::test]
async fn list_resource_version_match_validation() {
    // SEMANTICS 9.18
    both(async |env: Env| {
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let e = pods
            .list(&ListOptions::default().resource_version_match(ResourceVersionMatch::Exact))
            .await
            .unwrap_err();
        let st = e.status().unwrap();
        assert!(st.is_invalid());
        assert_eq!(
            st.details().unwrap().causes[0].field,
            "resourceVersionMatch"
        );
        let e = pods
            .list(
                &ListOptions::default()
                    .resource_version("0")
                    .resource_version_match(ResourceVersionMatch::Exact),
            )
            .await
            .unwrap_err();
        assert!(e.status().unwrap().is_invalid());
        pods.list(
            &ListOptions::default()
                .resource_version("0")
                .resource_version_match(ResourceVersionMatch::NotOlderThan),
        )
        .await
        .unwrap();
        // sendInitialEvents is for watches only.
        let e = pods
            .list(&ListOptions::default().send_initial_events(true))
            .await
            .unwrap_err();
        assert!(e.status().unwrap().is_invalid());
    })
    .await;
}

#[tokio::test]
async fn expired_continue_token() {
    // SEMANTICS 9.19
    both(async |env: Env| {
        for i in 0..4 {
            env.server
                .create("pods", pod("default", &format!("p{i}"), &[]))
                .unwrap();
        }
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let page = pods.list(&ListOptions::default().limit(2)).await.unwrap();
        env.server.touch("pods", "default", "p3").unwrap();
        env.server.compact();
        let token = page.continue_token.unwrap();
        let e = pods
            .list(&ListOptions::default().limit(2).continue_token(&token))
            .await
            .unwrap_err();
        let st = e.status().unwrap();
        assert_eq!(st.code(), 410);
        assert!(st.is_expired());
        // The Status carries a token to continue inconsistently, from the current state.
        let fresh = st.status().metadata.continue_.clone().unwrap();
        let rest = pods
            .list(&ListOptions::default().limit(2).continue_token(&fresh))
            .await
            .unwrap();
        assert_eq!(names(&rest.items), ["p2", "p3"]);
    })
    .await;
}

#[tokio::test]
async fn send_initial_events_requires_not_older_than() {
    // SEMANTICS 9.20
    both(async |env: Env| {
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let e = pods
            .watch(
                &ListOptions::default()
                    .send_initial_events(true)
                    .bookmarks(true),
            )
            .await
            .unwrap_err();
        assert!(e.status().unwrap().is_invalid());
        // resourceVersionMatch on a watch without sendInitialEvents is forbidden too.
        let e = pods
            .watch(
                &ListOptions::default().resource_version_match(ResourceVersionMatch::NotOlderThan),
            )
            .await
            .unwrap_err();
        assert!(e.status().unwrap().is_invalid());
    })
    .await;
}

#[tokio::test]
async fn list_ahead_of_the_server_is_too_large() {
    // SEMANTICS 9.22
    both(async |env: Env| {
        let ahead = (env.server.resource_version() + 100).to_string();
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let e = pods
            .list(&ListOptions::default().resource_version(&ahead))
            .await
            .unwrap_err();
        let st = e.status().unwrap();
        assert_eq!(st.code(), 504);
        assert!(st.has_cause(cause::RESOURCE_VERSION_TOO_LARGE));
        assert!(st.is_too_large_resource_version());
    })
    .await;
}

#[tokio::test]
async fn pages_come_from_the_first_pages_snapshot() {
    both(async |env: Env| {
        for i in 0..6 {
            env.server
                .create("pods", pod("default", &format!("p{i}"), &[]))
                .unwrap();
        }
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let first = pods.list(&ListOptions::default().limit(2)).await.unwrap();
        let snapshot_rv = first.resource_version.clone();
        env.server.delete("pods", "default", "p3").unwrap();
        env.server.touch("pods", "default", "p4").unwrap();
        env.server
            .create("pods", pod("default", "p5a", &[]))
            .unwrap();
        let second = pods
            .list(
                &ListOptions::default()
                    .limit(10)
                    .continue_token(first.continue_token.as_deref().unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(names(&second.items), ["p2", "p3", "p4", "p5"]);
        assert_eq!(second.resource_version, snapshot_rv);
        assert_eq!(
            second.items[2].metadata.resource_version.as_deref(),
            Some("6")
        );
        // list_all walks every page and reports the first page's version.
        let all = pods
            .list_all(&ListOptions::default().limit(2))
            .await
            .unwrap();
        assert_eq!(names(&all.items), ["p0", "p1", "p2", "p4", "p5", "p5a"]);
        assert!(all.continue_token.is_none());
        // An exact older version is served from the history.
        let at = pods
            .list(
                &ListOptions::default()
                    .resource_version(&snapshot_rv)
                    .resource_version_match(ResourceVersionMatch::Exact),
            )
            .await
            .unwrap();
        assert_eq!(names(&at.items), ["p0", "p1", "p2", "p3", "p4", "p5"]);
        assert_eq!(at.resource_version, snapshot_rv);
        // Not older than: the current state.
        let now = pods
            .list(&ListOptions::default().resource_version(&snapshot_rv))
            .await
            .unwrap();
        assert_eq!(now.items.len(), 6);
        assert_eq!(
            now.resource_version,
            env.server.resource_version().to_string()
        );
    })
    .await;
}

#[tokio::test]
async fn pager_retries_a_full_list_once_when_a_page_expired() {
    // SEMANTICS 3.4 (the pager's side)
    let s = server();
    for i in 0..5 {
        s.create("pods", pod("default", &format!("p{i}"), &[]))
            .unwrap();
    }
    let inner = s.service();
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
    let (s2, seen2) = (s.clone(), seen.clone());
    let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let mut inner = inner.clone();
        let s = s2.clone();
        let seen = seen2.clone();
        async move {
            let q = req.uri().query().unwrap_or_default().to_owned();
            if q.contains("continue=") {
                // The snapshot of the first page is compacted before page 2 is asked for.
                s.touch("pods", "default", "p0").unwrap();
                s.compact();
            }
            seen.lock().push(q);
            tower::Service::call(&mut inner, req).await
        }
    });
    let client = kube::Client::new(svc, "default");
    let pods = ResourceClient::<Pod>::namespaced(client, "default");
    let all = pods
        .list_all(&ListOptions::default().limit(2).resource_version("0"))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 5);
    let seen = seen.lock().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[0], "resourceVersion=0&limit=2");
    assert!(seen[1].starts_with("limit=2&continue="));
    assert_eq!(seen[2], "resourceVersion=0");
}

#[tokio::test]
async fn selectors_on_lists_and_watches() {
    both(async |env: Env| {
        env.server
            .create("pods", pod("default", "a", &[("app", "web")]))
            .unwrap();
        env.server
            .create("pods", pod("default", "b", &[("app", "db")]))
            .unwrap();
        let mut other = pod("default", "c", &[("app", "web")]);
        other["spec"]["nodeName"] = json!("n2");
        env.server.create("pods", other).unwrap();
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let web = pods
            .list(&ListOptions::default().labels("app=web"))
            .await
            .unwrap();
        assert_eq!(names(&web.items), ["a", "c"]);
        // SEMANTICS 9.5: remainingItemCount is not computed with selectors.
        let page = pods
            .list(&ListOptions::default().labels("app=web").limit(1))
            .await
            .unwrap();
        assert_eq!(names(&page.items), ["a"]);
        assert!(page.continue_token.is_some());
        assert_eq!(page.remaining_item_count, None);
        let set = pods
            .list(&ListOptions::default().labels("app in (db, cache),!missing"))
            .await
            .unwrap();
        assert_eq!(names(&set.items), ["b"]);
        let e = pods
            .list(&ListOptions::default().labels("app in ("))
            .await
            .unwrap_err();
        assert!(e.status().unwrap().is_bad_request());
        let on_n1 = pods
            .list(&ListOptions::default().fields("spec.nodeName=n1,metadata.name!=a"))
            .await
            .unwrap();
        assert_eq!(names(&on_n1.items), ["b"]);
        let e = pods
            .list(&ListOptions::default().fields("spec.bogus=x"))
            .await
            .unwrap_err();
        assert!(e.status().unwrap().is_bad_request());

        // Watch: leaving the selection is DELETED, entering it is ADDED.
        let rv = env.server.resource_version().to_string();
        let mut w = pods
            .watch(
                &ListOptions::default()
                    .labels("app=web")
                    .resource_version(&rv),
            )
            .await
            .unwrap();
        let mut b = env.server.get("pods", "default", "b").unwrap().unwrap();
        b["metadata"]["labels"]["app"] = json!("web");
        env.server.update("pods", b).unwrap();
        let mut a = env.server.get("pods", "default", "a").unwrap().unwrap();
        a["metadata"]["labels"]["app"] = json!("db");
        env.server.update("pods", a).unwrap();
        env.server.touch("pods", "default", "a").unwrap();
        env.server.touch("pods", "default", "c").unwrap();
        assert_eq!(
            event_name(&next_change(&mut w).await),
            ("ADDED".into(), "b".into())
        );
        let gone = next_change(&mut w).await;
        assert_eq!(event_name(&gone), ("DELETED".into(), "a".into()));
        assert_eq!(
            event_name(&next_change(&mut w).await),
            ("MODIFIED".into(), "c".into())
        );
    })
    .await;
}

#[tokio::test]
async fn watch_without_version_starts_with_current_objects_and_ends_at_timeout() {
    both(async |env: Env| {
        env.server.create("pods", pod("default", "a", &[])).unwrap();
        env.server.create("pods", pod("other", "x", &[])).unwrap();
        let pods = ResourceClient::<Pod>::namespaced(env.client.clone(), "default");
        let mut w = pods
            .watch(&ListOptions::default().timeout(1))
            .await
            .unwrap();
        assert_eq!(
            event_name(&next_event(&mut w).await),
            ("ADDED".into(), "a".into())
        );
        env.server.create("pods", pod("other", "y", &[])).unwrap();
        env.server.delete("pods", "default", "a").unwrap();
        let e = next_event(&mut w).await;
        assert_eq!(event_name(&e), ("DELETED".into(), "a".into()));
        if let WatchEvent::Deleted(p) = e {
            assert_eq!(
                p.metadata.resource_version,
                Some(env.server.resource_version().to_string())
            );
        }
        let end = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .unwrap();
        assert!(end.is_none(), "the server ends the watch at timeoutSeconds");
    })
    .await;
}

#[tokio::test]
async fn minimal_writes_through_kube_api() {
    both(async |env: Env| {
        let pods: Api<Pod> = Api::namespaced(env.client.clone(), "default");
        let p: Pod = serde_json::from_value(pod("default", "w", &[])).unwrap();
        let created = pods.create(&PostParams::default(), &p).await.unwrap();
        assert!(created.metadata.uid.is_some());

        // SEMANTICS 9.13
        let e = pods.create(&PostParams::default(), &p).await.unwrap_err();
        let kube::Error::Api(st) = e else {
            panic!("{e:?}")
        };
        assert_eq!((st.code, st.reason.as_str()), (409, "AlreadyExists"));

        // SEMANTICS 9.12
        let mut stale = created.clone();
        env.server.touch("pods", "default", "w").unwrap();
        stale.metadata.labels = Some([("x".to_owned(), "y".to_owned())].into());
        let e = pods
            .replace("w", &PostParams::default(), &stale)
            .await
            .unwrap_err();
        let kube::Error::Api(st) = e else {
            panic!("{e:?}")
        };
        assert_eq!((st.code, st.reason.as_str()), (409, "Conflict"));
        assert!(st.message.contains("the object has been modified"));

        // SEMANTICS 9.14
        let nameless: Pod = serde_json::from_value(json!({"metadata": {}})).unwrap();
        let e = pods
            .create(&PostParams::default(), &nameless)
            .await
            .unwrap_err();
        let kube::Error::Api(st) = e else {
            panic!("{e:?}")
        };
        assert_eq!((st.code, st.reason.as_str()), (422, "Invalid"));
        let body = env
            .client
            .send(
                http::Request::post("/api/v1/namespaces/default/pods")
                    .body(kube::client::Body::from(br#"{"metadata":{}}"#.to_vec()))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(body.status(), 422);
        let bytes = http_body_util::BodyExt::collect(body.into_body())
            .await
            .unwrap()
            .to_bytes();
        let status: kubegen_runtime::errors::Status = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(status.details.unwrap().causes[0].field, "metadata.name");

        // SEMANTICS 9.15
        let generated: Pod = serde_json::from_value(json!({"metadata": {"generateName": "web-"},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .unwrap();
        let g = pods
            .create(&PostParams::default(), &generated)
            .await
            .unwrap();
        let name = g.metadata.name.unwrap();
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(name[4..]
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
        let long = "a".repeat(60);
        let generated: Pod = serde_json::from_value(json!({"metadata": {"generateName": long},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .unwrap();
        let g = pods
            .create(&PostParams::default(), &generated)
            .await
            .unwrap();
        assert_eq!(g.metadata.name.unwrap().len(), 63);

        // SEMANTICS 9.16
        let fin: Pod =
            serde_json::from_value(json!({"metadata": {"name": "f", "finalizers": ["x"]},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}))
            .unwrap();
        pods.create(&PostParams::default(), &fin).await.unwrap();
        let mut w = pods
            .watch(
                &WatchParams::default(),
                &env.server.resource_version().to_string(),
            )
            .await
            .unwrap()
            .boxed();
        let res = pods.delete("f", &DeleteParams::default()).await.unwrap();
        let pending = res.left().unwrap();
        assert!(pending.metadata.deletion_timestamp.is_some());
        let ev = w.try_next().await.unwrap().unwrap();
        assert!(matches!(ev, kube::core::WatchEvent::Modified(_)));
        let mut cur = pods.get("f").await.unwrap();
        cur.metadata.finalizers = None;
        pods.replace("f", &PostParams::default(), &cur)
            .await
            .unwrap();
        let ev = w.try_next().await.unwrap().unwrap();
        assert!(matches!(ev, kube::core::WatchEvent::Deleted(_)));
        assert!(pods.get_opt("f").await.unwrap().is_none());

        // SEMANTICS 9.17
        let fg: Pod = serde_json::from_value(json!({"metadata": {"name": "fg"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .unwrap();
        pods.create(&PostParams::default(), &fg).await.unwrap();
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..Default::default()
        };
        let res = pods.delete("fg", &dp).await.unwrap().left().unwrap();
        assert!(res.metadata.deletion_timestamp.is_some());
        assert_eq!(
            res.metadata.finalizers,
            Some(vec!["foregroundDeletion".to_owned()])
        );
    })
    .await;
}

#[tokio::test]
async fn kube_api_and_discovery_work_unchanged() {
    both(async |env: Env| {
        for i in 0..7 {
            env.server
                .create("pods", pod("default", &format!("p{i}"), &[("app", "web")]))
                .unwrap();
        }
        let pods: Api<Pod> = Api::default_namespaced(env.client.clone());
        let list = pods.list(&ListParams::default().limit(3)).await.unwrap();
        assert_eq!(list.items.len(), 3);
        assert!(list.metadata.continue_.is_some());
        assert_eq!(
            pods.get("p1").await.unwrap().metadata.name.as_deref(),
            Some("p1")
        );
        let mut w = pods
            .watch(
                &WatchParams::default().labels("app=web"),
                &env.server.resource_version().to_string(),
            )
            .await
            .unwrap()
            .boxed();
        env.server.touch("pods", "default", "p2").unwrap();
        match w.try_next().await.unwrap().unwrap() {
            kube::core::WatchEvent::Modified(p) => {
                assert_eq!(p.metadata.name.as_deref(), Some("p2"))
            }
            other => panic!("{other:?}"),
        }
        let discovery = kube::Discovery::new(env.client.clone())
            .run()
            .await
            .unwrap();
        assert!(discovery.has_group("apps"));
        let (ar, caps) = discovery
            .resolve_gvk(&kube::core::GroupVersionKind::gvk(
                "apps",
                "v1",
                "Deployment",
            ))
            .unwrap();
        assert_eq!(ar.plural, "deployments");
        assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
        let version = env.client.apiserver_version().await.unwrap();
        assert_eq!(version.major, "1");
    })
    .await;
}

#[tokio::test]
async fn kube_runtime_watcher_works_unchanged() {
    use kube_runtime::watcher::{self, Event};
    both(async |env: Env| {
        for i in 0..5 {
            env.server
                .create("pods", pod("default", &format!("p{i}"), &[]))
                .unwrap();
        }
        let pods: Api<Pod> = Api::default_namespaced(env.client.clone());
        for cfg in [
            watcher::Config::default().page_size(2),
            watcher::Config::default().streaming_lists(),
        ] {
            let mut s = watcher::watcher(pods.clone(), cfg).boxed();
            let mut listed = Vec::new();
            loop {
                match s.try_next().await.unwrap().unwrap() {
                    Event::Init => {}
                    Event::InitApply(p) => listed.push(p.metadata.name.unwrap()),
                    Event::InitDone => break,
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(listed, ["p0", "p1", "p2", "p3", "p4"]);
            env.server.touch("pods", "default", "p3").unwrap();
            match s.try_next().await.unwrap().unwrap() {
                Event::Apply(p) => assert_eq!(p.metadata.name.as_deref(), Some("p3")),
                other => panic!("{other:?}"),
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_watcher_behind_the_history_limit_gets_expired() {
    let s = ApiServer::builder().history_limit(5).build();
    s.create("pods", pod("default", "a", &[])).unwrap();
    let client = kube::Client::new(s.service(), "default");
    let pods = ResourceClient::<Pod>::namespaced(client, "default");
    let from = s.resource_version();
    let mut w = pods
        .watch(&ListOptions::default().resource_version(&from.to_string()))
        .await
        .unwrap();
    // Twenty changes before the watcher runs: the first fifteen leave the history.
    for _ in 0..20 {
        s.touch("pods", "default", "a").unwrap();
    }
    match next_event(&mut w).await {
        WatchEvent::Error(e) => {
            assert!(e.is_expired());
            assert_eq!(
                e.message(),
                format!("too old resource version: {from} ({})", from + 15)
            );
        }
        other => panic!("expected 410, got {other:?}"),
    }
    assert!(w.next().await.is_none());
}

#[tokio::test]
async fn tcp_shutdown_ends_watches_and_waits_for_connections() {
    let s = server();
    let tcp = s.serve_tcp().await.unwrap();
    let kubeconfig = tcp.kubeconfig_path().to_owned();
    assert!(kubeconfig.exists());
    let client = tcp.client().await.unwrap();
    let pods = ResourceClient::<Pod>::namespaced(client.clone(), "default");
    let mut w = pods.watch(&ListOptions::default()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), tcp.shutdown())
        .await
        .expect("shutdown completes with a watch open");
    assert!(!kubeconfig.exists());
    let end = tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .unwrap();
    assert!(end.is_none(), "the watch ended: {end:?}");
    assert!(pods.list(&ListOptions::default()).await.is_err());
}

#[test]
fn registrations_from_resource_types() {
    let pods = Registration::for_resource::<Pod>();
    assert_eq!(
        (
            pods.group.as_str(),
            pods.plural.as_str(),
            pods.kind.as_str()
        ),
        ("", "pods", "Pod")
    );
    assert!(pods.namespaced);
    let nodes = Registration::for_resource::<Node>();
    assert!(!nodes.namespaced);
    let deps = Registration::for_resource::<Deployment>();
    assert_eq!(deps.api_version(), "apps/v1");
    assert_eq!(deps.list_kind, "DeploymentList");
    let builtin = kubegen_runtime::testing::builtin();
    assert!(builtin
        .iter()
        .any(|r| r.plural == "leases" && r.group == "coordination.k8s.io"));
    assert!(builtin
        .iter()
        .find(|r| r.plural == "pods")
        .unwrap()
        .is_selectable("spec.nodeName"));
}

#[tokio::test]
async fn status_subresource_and_generation() {
    both(async |env: Env| {
        let deps: Api<Deployment> = Api::namespaced(env.client.clone(), "default");
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}},
        }))
        .unwrap();
        let created = deps.create(&PostParams::default(), &d).await.unwrap();
        assert_eq!(created.metadata.generation, Some(1));
        // The status subresource changes only the status.
        let mut with_status = created.clone();
        with_status.status = Some(serde_json::from_value(json!({"replicas": 1})).unwrap());
        with_status.spec.replicas = Some(5);
        let after = deps
            .replace_status("web", &PostParams::default(), &with_status)
            .await
            .unwrap();
        assert_eq!(after.status.unwrap().replicas, Some(1));
        assert_eq!(after.spec.replicas, Some(1));
        assert_eq!(after.metadata.generation, Some(1));
        // The main resource ignores status and bumps the generation on a spec change.
        let mut cur = deps.get("web").await.unwrap();
        cur.spec.replicas = Some(3);
        cur.status = None;
        let after = deps
            .replace("web", &PostParams::default(), &cur)
            .await
            .unwrap();
        assert_eq!(after.spec.replicas, Some(3));
        assert_eq!(after.status.unwrap().replicas, Some(1));
        assert_eq!(after.metadata.generation, Some(2));
    })
    .await;
}

#[tokio::test]
async fn a_continue_token_from_another_namespace_lists_nothing() {
    both(async |env: Env| {
        for ns in ["a", "z"] {
            for i in 0..2 {
                env.server
                    .create("pods", pod(ns, &format!("p{i}"), &[]))
                    .unwrap();
            }
        }
        let z = ResourceClient::<Pod>::namespaced(env.client.clone(), "z");
        let page = z.list(&ListOptions::default().limit(1)).await.unwrap();
        let token = page.continue_token.unwrap();
        let a = ResourceClient::<Pod>::namespaced(env.client.clone(), "a");
        let rest = a
            .list(&ListOptions::default().limit(1).continue_token(&token))
            .await
            .unwrap();
        assert!(rest.items.is_empty());
        assert!(rest.continue_token.is_none());
        let e = a
            .list(&ListOptions::default().continue_token("not-a-token"))
            .await
            .unwrap_err();
        assert!(e.status().unwrap().is_bad_request());
    })
    .await;
}
