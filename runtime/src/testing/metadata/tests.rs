//! The server's metadata-only answers, over the tower Service and over TCP.

use http::{header, HeaderMap, HeaderValue, Request};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::{wanted, Form, Wanted};
use crate::testing::ApiServer;

const OBJECT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

fn accept(v: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::ACCEPT, HeaderValue::from_str(v).expect("header"));
    h
}

#[test]
fn accept_entries_are_read_in_order() {
    assert_eq!(wanted(&HeaderMap::new()), Wanted::default());
    assert_eq!(wanted(&accept("application/json")), Wanted::default());
    assert_eq!(wanted(&accept(OBJECT)).form, Some(Form::Object));
    assert_eq!(wanted(&accept(LIST)).form, Some(Form::List));
    // client-go's metadata client: protobuf first, then JSON, then plain JSON.
    let w = wanted(&accept(&format!(
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{LIST},application/json"
    )));
    assert_eq!((w.form, w.fallback), (Some(Form::List), true));
    // Plain JSON first wins; other forms and versions are not metadata.
    assert_eq!(
        wanted(&accept(&format!("application/json,{LIST}"))).form,
        None
    );
    assert_eq!(
        wanted(&accept("application/json;as=Table;g=meta.k8s.io;v=v1")).form,
        None
    );
    assert_eq!(
        wanted(&accept(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"
        ))
        .form,
        None
    );
}

fn server_with_pods() -> ApiServer {
    let server = ApiServer::new();
    for i in 0..3 {
        server
            .create(
                "pods",
                json!({
                    "metadata": {"name": format!("p{i}"), "namespace": "ns", "labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                }),
            )
            .expect("create");
    }
    server
}

async fn send(server: &ApiServer, uri: &str, accept: Option<&str>) -> (u16, Value) {
    let mut req = Request::get(uri);
    if let Some(a) = accept {
        req = req.header(header::ACCEPT, a);
    }
    let req = req
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .expect("request");
    let res = server.service().oneshot(req).await.expect("infallible");
    let code = res.status().as_u16();
    let body = res.into_body().collect().await.expect("body").to_bytes();
    (code, serde_json::from_slice(&body).expect("json"))
}

fn assert_partial(obj: &Value, name: &str) {
    assert_eq!(obj["kind"], "PartialObjectMetadata", "{obj}");
    assert_eq!(obj["apiVersion"], "meta.k8s.io/v1", "{obj}");
    assert_eq!(obj["metadata"]["name"], name, "{obj}");
    assert_eq!(obj["metadata"]["labels"]["app"], "web", "{obj}");
    assert!(obj["metadata"]["uid"].is_string(), "{obj}");
    assert!(
        obj.get("spec").is_none() && obj.get("status").is_none(),
        "{obj}"
    );
}

#[tokio::test]
async fn get_answers_partial_object_metadata() {
    let server = server_with_pods();
    let (code, obj) = send(&server, "/api/v1/namespaces/ns/pods/p1", Some(OBJECT)).await;
    assert_eq!(code, 200);
    assert_partial(&obj, "p1");
    // Without the header: the full object, as before.
    let (_, full) = send(&server, "/api/v1/namespaces/ns/pods/p1", None).await;
    assert_eq!(full["kind"], "Pod");
    assert!(full.get("spec").is_some());
    // A miss stays a Status.
    let (code, st) = send(&server, "/api/v1/namespaces/ns/pods/nope", Some(OBJECT)).await;
    assert_eq!((code, st["kind"].as_str()), (404, Some("Status")));
}

#[tokio::test]
async fn list_answers_partial_object_metadata_list_page_by_page() {
    let server = server_with_pods();
    let (code, list) = send(&server, "/api/v1/pods?limit=2", Some(LIST)).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        list["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
    assert_eq!(list["metadata"]["remainingItemCount"], 1);
    let token = list["metadata"]["continue"].as_str().expect("continue");
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    assert_partial(&items[0], "p0");
    assert_partial(&items[1], "p1");
    let (_, rest) = send(
        &server,
        &format!("/api/v1/pods?limit=2&continue={token}"),
        Some(LIST),
    )
    .await;
    assert_eq!(rest["items"].as_array().map(Vec::len), Some(1));
    assert_partial(&rest["items"][0], "p2");
}

#[tokio::test]
async fn mismatched_forms_are_not_acceptable_unless_json_may_follow() {
    let server = server_with_pods();
    let (code, st) = send(&server, "/api/v1/pods", Some(OBJECT)).await;
    assert_eq!(code, 406, "{st}");
    assert_eq!(st["reason"], "NotAcceptable");
    assert_eq!(
        st["message"],
        "you requested PartialObjectMetadata, but the requested object is a list"
    );
    let (code, st) = send(&server, "/api/v1/namespaces/ns/pods/p0", Some(LIST)).await;
    assert_eq!(code, 406, "{st}");
    let (code, full) = send(
        &server,
        "/api/v1/namespaces/ns/pods/p0",
        Some(&format!("{LIST},application/json")),
    )
    .await;
    assert_eq!((code, full["kind"].as_str()), (200, Some("Pod")));
}

/// Reads watch frames until `n` arrived.
async fn frames(body: crate::testing::Body, n: usize) -> Vec<Value> {
    let mut body = body;
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let Some(frame) = body.frame().await else {
            break;
        };
        let Ok(data) = frame.expect("infallible").into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        let mut it = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
        let mut used = 0;
        while let Some(Ok(v)) = it.next() {
            out.push(v);
            used = it.byte_offset();
        }
        buf.drain(..used);
    }
    out
}

#[tokio::test]
async fn watch_events_carry_partial_object_metadata() {
    let server = server_with_pods();
    let req = Request::get("/api/v1/namespaces/ns/pods?watch=true")
        .header(header::ACCEPT, OBJECT)
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .expect("request");
    let res = server.service().oneshot(req).await.expect("infallible");
    assert_eq!(res.status(), 200);
    server.touch("pods", "ns", "p0").expect("touch");
    let events = frames(res.into_body(), 4).await;
    assert_eq!(events.len(), 4);
    for (e, ty, name) in [
        (&events[0], "ADDED", "p0"),
        (&events[1], "ADDED", "p1"),
        (&events[2], "ADDED", "p2"),
        (&events[3], "MODIFIED", "p0"),
    ] {
        assert_eq!(e["type"], ty);
        assert_partial(&e["object"], name);
    }
}

#[tokio::test]
async fn over_tcp_lists_and_watches_answer_metadata() {
    let server = server_with_pods();
    let tcp = server.serve_tcp().await.expect("tcp");
    let client = tcp.client().await.expect("client");
    let list = Request::get("/api/v1/pods")
        .header(header::ACCEPT, LIST)
        .body(Vec::new())
        .expect("request");
    let list: Value = client.request(list).await.expect("list");
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(3));
    assert_partial(&list["items"][2], "p2");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_owned();
    let watch = Request::get(format!(
        "/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=30"
    ))
    .header(header::ACCEPT, OBJECT)
    .body(Vec::new())
    .expect("request");
    let res = client
        .send(watch.map(kube::client::Body::from))
        .await
        .expect("watch");
    server.touch("pods", "ns", "p1").expect("touch");
    let mut body = res.into_body();
    let mut buf = Vec::new();
    let event: Value = loop {
        let frame = body.frame().await.expect("a frame").expect("transport");
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
        if let Some(end) = buf.iter().position(|b| *b == b'\n') {
            break serde_json::from_slice(&buf[..end]).expect("json");
        }
    };
    assert_eq!(event["type"], "MODIFIED");
    assert_partial(&event["object"], "p1");
    tcp.shutdown().await;
}
