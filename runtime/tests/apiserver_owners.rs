//! Garbage collection of objects whose owners do not exist
//! (`ApiServerBuilder::collect_dangling_owners`), over the in-process tower Service and
//! over TCP, as kube-controller-manager's garbage collector treats them.

use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use kubegen_runtime::testing::ApiServer;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const RSS: &str = "/apis/apps/v1/namespaces/default/replicasets";

async fn both(collect: bool, f: impl AsyncFn(&kube::Client)) {
    for tcp in [false, true] {
        let server = ApiServer::builder()
            .collect_dangling_owners(collect)
            .build();
        if tcp {
            let t = server.serve_tcp().await.unwrap();
            f(&t.client().await.unwrap()).await;
            t.shutdown().await;
        } else {
            f(&kube::Client::new(server.service(), "default")).await;
        }
    }
}

async fn call(
    client: &kube::Client,
    method: Method,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let code = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn rs(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
}

fn owned(name: &str, owners: Vec<Value>) -> Value {
    json!({"metadata": {"name": name, "ownerReferences": owners}, "data": {"k": "v"}})
}

fn owner(kind: &str, api_version: &str, name: &str, uid: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid})
}

#[tokio::test]
async fn dependents_of_missing_owners_are_collected() {
    both(true, async |c: &kube::Client| {
        let (code, live) = call(c, Method::POST, RSS, rs("live")).await;
        assert_eq!(code, StatusCode::CREATED, "{live}");
        let uid = live["metadata"]["uid"].as_str().unwrap().to_owned();

        // An existing owner keeps its dependent.
        let (code, _) = call(
            c,
            Method::POST,
            CMS,
            owned("kept", vec![owner("ReplicaSet", "apps/v1", "live", &uid)]),
        )
        .await;
        assert_eq!(code, StatusCode::CREATED);
        assert_eq!(
            call(c, Method::GET, &format!("{CMS}/kept"), Value::Null)
                .await
                .0,
            StatusCode::OK
        );

        // A missing owner, or one with another uid: the write succeeds, then the object goes.
        for (name, r) in [
            ("missing", owner("ReplicaSet", "apps/v1", "nope", "u-1")),
            ("other-uid", owner("ReplicaSet", "apps/v1", "live", "u-2")),
        ] {
            let (code, created) = call(c, Method::POST, CMS, owned(name, vec![r])).await;
            assert_eq!(code, StatusCode::CREATED, "{created}");
            let (code, _) = call(c, Method::GET, &format!("{CMS}/{name}"), Value::Null).await;
            assert_eq!(code, StatusCode::NOT_FOUND, "{name} is collected");
        }

        // An owner that went before its dependent was written.
        let (_, gone) = call(c, Method::POST, RSS, rs("gone")).await;
        let gone_uid = gone["metadata"]["uid"].as_str().unwrap().to_owned();
        call(c, Method::DELETE, &format!("{RSS}/gone"), Value::Null).await;
        call(
            c,
            Method::POST,
            CMS,
            owned(
                "late",
                vec![owner("ReplicaSet", "apps/v1", "gone", &gone_uid)],
            ),
        )
        .await;
        assert_eq!(
            call(c, Method::GET, &format!("{CMS}/late"), Value::Null)
                .await
                .0,
            StatusCode::NOT_FOUND
        );

        // One owner exists, one does not: only the dangling reference goes.
        call(
            c,
            Method::POST,
            CMS,
            owned(
                "half",
                vec![
                    owner("ReplicaSet", "apps/v1", "live", &uid),
                    owner("ReplicaSet", "apps/v1", "nope", "u-3"),
                ],
            ),
        )
        .await;
        let (code, half) = call(c, Method::GET, &format!("{CMS}/half"), Value::Null).await;
        assert_eq!(code, StatusCode::OK);
        assert_eq!(
            half["metadata"]["ownerReferences"],
            json!([owner("ReplicaSet", "apps/v1", "live", &uid)])
        );

        // A kind the server does not serve cannot be resolved: the object stays.
        call(
            c,
            Method::POST,
            CMS,
            owned(
                "unknown",
                vec![owner("Widget", "example.com/v1", "w", "u-4")],
            ),
        )
        .await;
        assert_eq!(
            call(c, Method::GET, &format!("{CMS}/unknown"), Value::Null)
                .await
                .0,
            StatusCode::OK
        );

        // A finalizer holds a collected object, marked for deletion.
        let mut held = owned("held", vec![owner("ReplicaSet", "apps/v1", "nope", "u-5")]);
        held["metadata"]["finalizers"] = json!(["example.com/hold"]);
        call(c, Method::POST, CMS, held).await;
        let (code, held) = call(c, Method::GET, &format!("{CMS}/held"), Value::Null).await;
        assert_eq!(code, StatusCode::OK);
        assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");

        // An update that leaves the owner dangling collects too.
        let (_, mut kept) = call(c, Method::GET, &format!("{CMS}/kept"), Value::Null).await;
        kept["metadata"]["ownerReferences"][0]["uid"] = json!("u-6");
        let (code, _) = call(c, Method::PUT, &format!("{CMS}/kept"), kept).await;
        assert_eq!(code, StatusCode::OK);
        assert_eq!(
            call(c, Method::GET, &format!("{CMS}/kept"), Value::Null)
                .await
                .0,
            StatusCode::NOT_FOUND
        );
    })
    .await;
}

#[tokio::test]
async fn by_default_dependents_may_be_seeded_without_owners() {
    both(false, async |c: &kube::Client| {
        call(
            c,
            Method::POST,
            CMS,
            owned(
                "seeded",
                vec![owner("ReplicaSet", "apps/v1", "nope", "u-1")],
            ),
        )
        .await;
        assert_eq!(
            call(c, Method::GET, &format!("{CMS}/seeded"), Value::Null)
                .await
                .0,
            StatusCode::OK
        );
    })
    .await;
}
