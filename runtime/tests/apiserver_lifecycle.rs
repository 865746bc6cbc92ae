//! API server lifecycles (SEMANTICS 13) and what kubectl needs, each test body run over
//! the in-process tower Service and over TCP via a kubeconfig, with raw HTTP requests
//! (status codes, headers and bodies as kubectl sees them): namespaces, request bodies
//! and media types, Table and PartialObjectMetadata, OpenAPI, health and version.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use kubegen_runtime::testing::ApiServer;
use serde_json::{json, Value};

/// A CRD with printer columns, a status subresource, categories and a short name.
const GIZMOS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [gz], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Mode, type: string, jsonPath: .spec.mode, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        description: A gizmo.
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, description: How many.}
              mode: {type: string}
          status:
            type: object
            properties:
              a: {type: integer}
"#;

/// A CRD whose version has no printer columns and no status subresource.
const PLAIN: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: plains.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: plains, singular: plain, kind: Plain}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

struct Env {
    server: ApiServer,
    client: kube::Client,
}

/// A response as the client saw it.
struct Resp {
    code: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn strict_server() -> ApiServer {
    let s = ApiServer::builder().strict_namespaces(true).build();
    s.register_crd(GIZMOS).unwrap();
    s.register_crd(PLAIN).unwrap();
    s
}

/// Runs the body over the tower Service, then over TCP.
async fn both(f: impl AsyncFn(Env)) {
    let s = strict_server();
    let client = kube::Client::new(s.service(), "default");
    f(Env { server: s, client }).await;

    let s = strict_server();
    let tcp = s.serve_tcp().await.unwrap();
    let client = tcp.client().await.unwrap();
    f(Env { server: s, client }).await;
    tcp.shutdown().await;
}

async fn call(
    env: &Env,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Vec<u8>>,
) -> Resp {
    let mut b = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let req = b.body(body.into()).unwrap();
    let resp = env
        .client
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    let code = resp.status();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Resp {
        code,
        headers,
        body,
    }
}

async fn get(env: &Env, path: &str) -> Resp {
    call(env, Method::GET, path, &[], Vec::new()).await
}

async fn get_as(env: &Env, path: &str, accept: &str) -> Resp {
    call(env, Method::GET, path, &[("accept", accept)], Vec::new()).await
}

async fn post(env: &Env, path: &str, body: Value) -> Resp {
    call(
        env,
        Method::POST,
        path,
        &[("content-type", "application/json")],
        body.to_string(),
    )
    .await
}

async fn put(env: &Env, path: &str, body: Value) -> Resp {
    call(
        env,
        Method::PUT,
        path,
        &[("content-type", "application/json")],
        body.to_string(),
    )
    .await
}

async fn patch(env: &Env, path: &str, ct: &str, body: Value) -> Resp {
    call(
        env,
        Method::PATCH,
        path,
        &[("content-type", ct)],
        body.to_string(),
    )
    .await
}

async fn delete(env: &Env, path: &str, body: Option<Value>) -> Resp {
    let (h, b): (&[(&str, &str)], Vec<u8>) = match body {
        Some(v) => (
            &[("content-type", "application/json")],
            v.to_string().into_bytes(),
        ),
        None => (&[], Vec::new()),
    };
    call(env, Method::DELETE, path, h, b).await
}

/// Polls until `f` holds (the namespace controller runs on its own task).
async fn eventually(what: &str, mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting until {what}");
}

fn conditions(ns: &Value) -> Vec<(String, String, String)> {
    ns["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or_default().to_owned(),
                c["status"].as_str().unwrap_or_default().to_owned(),
                c["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn condition<'a>(ns: &'a Value, ty: &str) -> &'a Value {
    ns["status"]["conditions"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["type"] == ty))
        .unwrap_or_else(|| panic!("no condition {ty} in {ns}"))
}

async fn create_ns(env: &Env, name: &str, finalizers: &[&str]) {
    let r = post(
        env,
        "/api/v1/namespaces",
        json!({"metadata": {"name": name}, "spec": {"finalizers": finalizers}}),
    )
    .await;
    assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
}

/// Reads watch events (one JSON object per line) until `n` arrived.
async fn watch_events(resp: hyper_like::Stream, n: usize) -> Vec<Value> {
    resp.take(n).await
}

mod hyper_like {
    //! A small line reader over a streaming response body.
    use bytes::Bytes;
    use http_body_util::BodyExt;
    use serde_json::Value;

    pub struct Stream {
        pub body: kube::client::Body,
        pub buf: Vec<u8>,
    }

    impl Stream {
        pub async fn take(mut self, n: usize) -> Vec<Value> {
            let mut out = Vec::new();
            while out.len() < n {
                if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = self.buf.drain(..=i).collect();
                    out.push(serde_json::from_slice(&line).unwrap());
                    continue;
                }
                let frame =
                    tokio::time::timeout(std::time::Duration::from_secs(5), self.body.frame())
                        .await
                        .expect("a watch event in time")
                        .expect("the watch is still open")
                        .unwrap();
                if let Ok(d) = frame.into_data() {
                    let d: Bytes = d;
                    self.buf.extend_from_slice(&d);
                }
            }
            out
        }
    }
}

async fn open_watch(env: &Env, path: &str, accept: &str) -> hyper_like::Stream {
    let req = Request::builder()
        .uri(path)
        .header("accept", accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = env.client.send(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    hyper_like::Stream {
        body: resp.into_body(),
        buf: Vec::new(),
    }
}

// ---------------------------------------------------------------- namespaces

#[tokio::test]
async fn system_namespaces_exist_at_start() {
    // SEMANTICS 13.1
    both(async |env: Env| {
        let list = get(&env, "/api/v1/namespaces").await.json();
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["default", "kube-node-lease", "kube-public", "kube-system"]
        );
        for n in list["items"].as_array().unwrap() {
            let name = &n["metadata"]["name"];
            assert_eq!(n["status"]["phase"], "Active");
            assert_eq!(n["spec"]["finalizers"], json!(["kubernetes"]));
            assert_eq!(
                n["metadata"]["labels"]["kubernetes.io/metadata.name"],
                *name
            );
        }
    })
    .await;
}

#[tokio::test]
async fn lenient_server_starts_without_namespaces() {
    let s = ApiServer::new();
    let ns = s.get("namespaces", "", "default").unwrap();
    assert!(ns.is_none());
    s.create(
        "configmaps",
        json!({"metadata": {"name": "c", "namespace": "anywhere"}}),
    )
    .unwrap();
}

#[tokio::test]
async fn namespace_create_forces_active_and_kubernetes_finalizer() {
    // SEMANTICS 13.2
    both(async |env: Env| {
        let r = post(
            &env,
            "/api/v1/namespaces",
            json!({"metadata": {"name": "ns1"}, "spec": {"finalizers": ["example.com/x"]},
                "status": {"phase": "Terminating"}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED);
        let ns = r.json();
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(
            ns["spec"]["finalizers"],
            json!(["example.com/x", "kubernetes"])
        );
        assert_eq!(
            ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "ns1"
        );
        // An update cannot change spec.finalizers.
        let mut upd = ns.clone();
        upd["spec"]["finalizers"] = json!([]);
        let r = put(&env, "/api/v1/namespaces/ns1", upd).await;
        assert_eq!(r.code, StatusCode::OK);
        assert_eq!(
            r.json()["spec"]["finalizers"],
            json!(["example.com/x", "kubernetes"])
        );
    })
    .await;
}

#[tokio::test]
async fn system_namespaces_cannot_be_deleted_but_kube_node_lease_can() {
    // SEMANTICS 13.3
    both(async |env: Env| {
        for ns in ["default", "kube-system", "kube-public"] {
            let r = delete(&env, &format!("/api/v1/namespaces/{ns}"), None).await;
            assert_eq!(r.code, StatusCode::FORBIDDEN);
            assert_eq!(
                r.json()["message"],
                format!("namespaces \"{ns}\" is forbidden: this namespace may not be deleted")
            );
        }
        let r = delete(&env, "/api/v1/namespaces/kube-node-lease", None).await;
        assert_eq!(r.code, StatusCode::OK);
        assert_eq!(r.json()["status"]["phase"], "Terminating");
    })
    .await;
}

#[tokio::test]
async fn deleting_an_empty_namespace_terminates_then_removes_it() {
    // SEMANTICS 13.4
    both(async |env: Env| {
        create_ns(&env, "ns1", &[]).await;
        let list = get(&env, "/api/v1/namespaces").await.json();
        let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
        let w = open_watch(
            &env,
            &format!("/api/v1/namespaces?watch=true&fieldSelector=metadata.name%3Dns1&resourceVersion={rv}"),
            "application/json",
        )
        .await;
        let r = delete(&env, "/api/v1/namespaces/ns1", None).await;
        assert_eq!(r.code, StatusCode::OK);
        let ns = r.json();
        assert_eq!(ns["status"]["phase"], "Terminating");
        assert!(ns["metadata"]["deletionTimestamp"].is_string());
        let events = watch_events(w, 2).await;
        assert_eq!(events[0]["type"], "MODIFIED");
        assert_eq!(events[0]["object"]["status"]["phase"], "Terminating");
        assert_eq!(events[1]["type"], "DELETED");
        // The last state carries the five conditions with their success reasons.
        let mut conds = conditions(&events[1]["object"]);
        conds.sort();
        let s = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
        assert_eq!(
            conds,
            vec![
                s("NamespaceContentRemaining", "False", "ContentRemoved"),
                s("NamespaceDeletionContentFailure", "False", "ContentDeleted"),
                s("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered"),
                s("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions"),
                s("NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers"),
            ]
        );
        let r = get(&env, "/api/v1/namespaces/ns1").await;
        assert_eq!(r.code, StatusCode::NOT_FOUND);
        assert_eq!(r.json()["message"], "namespaces \"ns1\" not found");
    })
    .await;
}

#[tokio::test]
async fn creating_in_a_terminating_namespace_is_forbidden() {
    // SEMANTICS 13.5
    both(async |env: Env| {
        create_ns(&env, "ns1", &["example.com/x"]).await;
        assert_eq!(delete(&env, "/api/v1/namespaces/ns1", None).await.code, StatusCode::OK);
        let r = post(
            &env,
            "/api/v1/namespaces/ns1/configmaps",
            json!({"metadata": {"name": "cm"}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::FORBIDDEN);
        let st = r.json();
        assert_eq!(st["reason"], "Forbidden");
        assert_eq!(
            st["message"],
            "configmaps \"cm\" is forbidden: unable to create new content in namespace ns1 because it is being terminated"
        );
        assert_eq!(
            st["details"]["causes"],
            json!([{"reason": "NamespaceTerminating", "message": "namespace ns1 is being terminated", "field": "metadata.namespace"}])
        );
        let r = post(
            &env,
            "/apis/apps/v1/namespaces/ns1/deployments",
            json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        )
        .await;
        assert!(r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("deployments.apps \"web\" is forbidden: unable to create new content"));
        let r = post(
            &env,
            "/api/v1/namespaces/ns1/configmaps",
            json!({"metadata": {"generateName": "web-"}}),
        )
        .await;
        assert!(r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("configmaps \"web-\" is forbidden: "));
    })
    .await;
}

#[tokio::test]
async fn existing_content_of_a_terminating_namespace_can_be_changed() {
    // SEMANTICS 13.6, 13.8
    both(async |env: Env| {
        create_ns(&env, "ns1", &[]).await;
        let r = post(
            &env,
            "/api/v1/namespaces/ns1/configmaps",
            json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {"a": "1"}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED);
        assert_eq!(delete(&env, "/api/v1/namespaces/ns1", None).await.code, StatusCode::OK);
        let path = "/api/v1/namespaces/ns1/configmaps/held";
        eventually("the configmap is marked for deletion", async || {
            get(&env, path).await.json()["metadata"]["deletionTimestamp"].is_string()
        })
        .await;
        eventually("the namespace reports what remains", async || {
            let ns = get(&env, "/api/v1/namespaces/ns1").await.json();
            ns["status"]["conditions"].is_array()
        })
        .await;
        let ns = get(&env, "/api/v1/namespaces/ns1").await.json();
        assert_eq!(ns["status"]["phase"], "Terminating");
        let c = condition(&ns, "NamespaceContentRemaining");
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "SomeResourcesRemain");
        assert_eq!(
            c["message"],
            "Some resources are remaining: configmaps. has 1 resource instances"
        );
        let c = condition(&ns, "NamespaceFinalizersRemaining");
        assert_eq!(c["reason"], "SomeFinalizersRemain");
        assert_eq!(
            c["message"],
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        );
        // PUT, PATCH and DELETE of the existing object work.
        let mut cm = get(&env, path).await.json();
        cm["data"]["a"] = json!("2");
        assert_eq!(put(&env, path, cm).await.code, StatusCode::OK);
        let r = patch(&env, path, "application/merge-patch+json", json!({"data": {"b": "3"}})).await;
        assert_eq!(r.code, StatusCode::OK);
        assert_eq!(delete(&env, path, None).await.code, StatusCode::OK);
        // Removing the finalizer lets the configmap, then the namespace, go.
        let r = patch(
            &env,
            path,
            "application/merge-patch+json",
            json!({"metadata": {"finalizers": null}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::OK);
        assert_eq!(get(&env, path).await.code, StatusCode::NOT_FOUND);
        eventually("the namespace is gone", async || {
            get(&env, "/api/v1/namespaces/ns1").await.code == StatusCode::NOT_FOUND
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn creating_in_a_missing_namespace_is_not_found() {
    // SEMANTICS 13.7
    both(async |env: Env| {
        let r = post(
            &env,
            "/api/v1/namespaces/nope/configmaps",
            json!({"metadata": {"name": "cm"}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::NOT_FOUND);
        let st = r.json();
        assert_eq!(st["reason"], "NotFound");
        assert_eq!(st["message"], "namespaces \"nope\" not found");
        assert_eq!(st["details"]["name"], "nope");
        assert_eq!(st["details"]["kind"], "namespaces");
    })
    .await;
}

#[tokio::test]
async fn other_spec_finalizers_hold_the_namespace_until_finalize() {
    // SEMANTICS 13.9
    both(async |env: Env| {
        create_ns(&env, "ns1", &["example.com/x"]).await;
        assert_eq!(
            delete(&env, "/api/v1/namespaces/ns1", None).await.code,
            StatusCode::OK
        );
        eventually("the kubernetes finalizer is removed", async || {
            get(&env, "/api/v1/namespaces/ns1").await.json()["spec"]["finalizers"]
                == json!(["example.com/x"])
        })
        .await;
        let before = get(&env, "/api/v1/namespaces/ns1").await.json();
        assert_eq!(before["status"]["phase"], "Terminating");
        let r = delete(&env, "/api/v1/namespaces/ns1", None).await;
        assert_eq!(r.code, StatusCode::OK);
        assert_eq!(r.json(), before, "a DELETE in between changes nothing");
        let mut fin = before.clone();
        fin["spec"]["finalizers"] = json!([]);
        let r = put(&env, "/api/v1/namespaces/ns1/finalize", fin).await;
        assert_eq!(r.code, StatusCode::OK, "{}", r.text());
        assert_eq!(
            get(&env, "/api/v1/namespaces/ns1").await.code,
            StatusCode::NOT_FOUND
        );
    })
    .await;
}

#[tokio::test]
async fn namespace_delete_checks_uid_precondition() {
    // SEMANTICS 13.10
    both(async |env: Env| {
        create_ns(&env, "ns1", &[]).await;
        let r = delete(
            &env,
            "/api/v1/namespaces/ns1",
            Some(json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "nope"}})),
        )
        .await;
        assert_eq!(r.code, StatusCode::CONFLICT);
        assert!(r.json()["message"]
            .as_str()
            .unwrap()
            .contains("Precondition failed: UID in precondition"));
    })
    .await;
}

// ---------------------------------------------------------------- writes

#[tokio::test]
async fn create_drops_status_of_kinds_with_a_status_subresource() {
    // SEMANTICS 13.23, 13.25
    both(async |env: Env| {
        let r = post(
            &env,
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "web", "labels": {"l": "1"}}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
                "status": {"replicas": 5}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED);
        let d = r.json();
        // The client's status is dropped; a Deployment starts with an empty one.
        assert_eq!(d.get("status"), Some(&json!({})), "{d}");
        // /status takes the annotations but not the labels.
        let mut d2 = d.clone();
        d2["metadata"]["labels"]["l"] = json!("2");
        d2["metadata"]["annotations"] = json!({"n": "1"});
        d2["status"] = json!({"replicas": 1});
        let r = put(&env, "/apis/apps/v1/namespaces/default/deployments/web/status", d2).await;
        let d3 = r.json();
        assert_eq!(d3["metadata"]["labels"]["l"], "1");
        assert_eq!(d3["metadata"]["annotations"]["n"], "1");
        assert_eq!(d3["status"]["replicas"], 1);

        // A new Pod is Pending whatever status it was sent with.
        let r = post(
            &env,
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Running"}}),
        )
        .await;
        assert_eq!(
            r.json()["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        let r = post(
            &env,
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "g"}, "spec": {"containers": [{"name": "c", "image": "i",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}),
        )
        .await;
        assert_eq!(r.json()["status"]["qosClass"], "Guaranteed");
        let r = post(
            &env,
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "i",
                "resources": {"requests": {"cpu": "1"}}}]}}),
        )
        .await;
        assert_eq!(r.json()["status"]["qosClass"], "Burstable");

        // A custom resource with the status subresource.
        let base = "/apis/example.com/v1/namespaces/default/gizmos";
        let r = post(&env, base, json!({"metadata": {"name": "g"}, "spec": {"replicas": 1}, "status": {"a": 1}})).await;
        let g = r.json();
        assert!(g.get("status").is_none());
        assert_eq!(g["metadata"]["generation"], 1);
        let mut g2 = g.clone();
        g2["spec"]["replicas"] = json!(2);
        g2["status"] = json!({"a": 2});
        let g3 = put(&env, &format!("{base}/g"), g2).await.json();
        assert_eq!(g3["spec"]["replicas"], 2);
        assert!(g3.get("status").is_none());
        assert_eq!(g3["metadata"]["generation"], 2);
        let mut g4 = g3.clone();
        g4["spec"]["replicas"] = json!(9);
        g4["metadata"]["labels"] = json!({"x": "y"});
        g4["status"] = json!({"a": 3});
        let g5 = put(&env, &format!("{base}/g/status"), g4).await.json();
        assert_eq!(g5["spec"]["replicas"], 2);
        assert!(g5["metadata"].get("labels").is_none());
        assert_eq!(g5["status"]["a"], 3);
        assert_eq!(g5["metadata"]["generation"], 2);
        assert_ne!(g5["metadata"]["resourceVersion"], g3["metadata"]["resourceVersion"]);
    })
    .await;
}

#[tokio::test]
async fn custom_resource_without_status_subresource_keeps_status() {
    // SEMANTICS 13.24
    both(async |env: Env| {
        let base = "/apis/example.com/v1/namespaces/default/plains";
        let p = post(
            &env,
            base,
            json!({"metadata": {"name": "p"}, "status": {"a": 1}}),
        )
        .await
        .json();
        assert_eq!(p["status"]["a"], 1);
        let mut p2 = p.clone();
        p2["status"] = json!({"a": 2});
        let p3 = put(&env, &format!("{base}/p"), p2.clone()).await.json();
        assert_eq!(p3["status"]["a"], 2);
        assert_eq!(p3["metadata"]["generation"], 2);
        let r = put(&env, &format!("{base}/p/status"), p3).await;
        assert_eq!(r.code, StatusCode::NOT_FOUND);
    })
    .await;
}

#[tokio::test]
async fn bodies_over_three_mebibytes_get_413() {
    // SEMANTICS 13.26
    both(async |env: Env| {
        let make = |total: usize| {
            let head = r#"{"metadata":{"name":"big"},"data":{"k":""#;
            let tail = r#""}}"#;
            let fill = total - head.len() - tail.len();
            format!("{head}{}{tail}", "x".repeat(fill))
        };
        let path = "/api/v1/namespaces/default/configmaps";
        let ct = [("content-type", "application/json")];
        let r = call(&env, Method::POST, path, &ct, make(3_145_728)).await;
        assert_eq!(
            r.code,
            StatusCode::CREATED,
            "{}",
            r.text().chars().take(300).collect::<String>()
        );
        let r = call(&env, Method::POST, path, &ct, make(3_145_729)).await;
        assert_eq!(r.code, StatusCode::PAYLOAD_TOO_LARGE);
        let st = r.json();
        assert_eq!(st["reason"], "RequestEntityTooLarge");
        assert_eq!(st["message"], "Request entity too large: limit is 3145728");
    })
    .await;
}

#[tokio::test]
async fn unsupported_media_types_get_415() {
    // SEMANTICS 13.27
    both(async |env: Env| {
        let r = call(
            &env,
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            &[("content-type", "text/plain")],
            "hello",
        )
        .await;
        assert_eq!(r.code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(r.json()["reason"], "UnsupportedMediaType");
        assert_eq!(
            r.json()["message"],
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        // A protobuf body of a custom resource is not accepted.
        let r = call(
            &env,
            Method::POST,
            "/apis/example.com/v1/namespaces/default/gizmos",
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            b"k8s\0".to_vec(),
        )
        .await;
        assert_eq!(r.code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let g = "/apis/example.com/v1/namespaces/default/gizmos";
        assert_eq!(post(&env, g, json!({"metadata": {"name": "g"}})).await.code, StatusCode::CREATED);
        let r = patch(&env, &format!("{g}/g"), "application/strategic-merge-patch+json", json!({})).await;
        assert_eq!(r.code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(
            r.json()["message"],
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
        let r = patch(
            &env,
            &format!("{g}/g"),
            "application/merge-patch+json; charset=utf-8",
            json!({"spec": {"mode": "x"}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::OK);
    })
    .await;
}

/// A protobuf request body: the `k8s\0` envelope around `raw`, typed `api_version`/`kind`.
fn pb_envelope(api_version: &[u8], kind: &[u8], raw: &[u8]) -> Vec<u8> {
    let mut tm = pb_field(1, api_version);
    tm.extend(pb_field(2, kind));
    let mut body = b"k8s\0".to_vec();
    body.extend(pb_field(1, &tm));
    if !raw.is_empty() {
        body.extend(pb_field(2, raw));
    }
    body
}

/// A protobuf field of length-delimited type.
fn pb_field(num: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 128);
    let mut out = vec![num << 3 | 2, payload.len() as u8];
    out.extend_from_slice(payload);
    out
}

#[tokio::test]
async fn protobuf_bodies_of_built_in_kinds_are_decoded() {
    both(async |env: Env| {
        // What `kubectl create namespace x` sends: the k8s envelope around a Namespace
        // whose ObjectMeta carries its empty strings.
        let mut meta = pb_field(1, b"pbns");
        meta.extend(pb_field(2, b""));
        let body = pb_envelope(b"v1", b"Namespace", &pb_field(1, &meta));
        let r = call(
            &env,
            Method::POST,
            "/api/v1/namespaces",
            &[
                ("content-type", "application/vnd.kubernetes.protobuf"),
                (
                    "accept",
                    "application/vnd.kubernetes.protobuf,application/json",
                ),
            ],
            body,
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        assert_eq!(r.headers["content-type"], "application/json");
        let ns = r.json();
        assert_eq!(ns["metadata"]["name"], "pbns");
        assert!(ns["metadata"].get("generateName").is_none());
        assert_eq!(ns["status"]["phase"], "Active");

        // Every built-in kind decodes: a Pod with a container, as client-go sends it.
        let mut container = pb_field(1, b"c");
        container.extend(pb_field(2, b"nginx"));
        let mut raw = pb_field(1, &pb_field(1, b"pbpod"));
        raw.extend(pb_field(2, &pb_field(2, &container)));
        let body = pb_envelope(b"v1", b"Pod", &raw);
        let r = call(
            &env,
            Method::POST,
            "/api/v1/namespaces/default/pods",
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            body,
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        let pod = r.json();
        assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");
        assert_eq!(pod["status"]["phase"], "Pending");

        // A kind that is not built in (protobuf exists only for those): 415, not 400.
        let body = pb_envelope(b"example.com/v1", b"Gizmo", &[]);
        let r = call(
            &env,
            Method::POST,
            "/api/v1/namespaces/default/pods",
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            body,
        )
        .await;
        assert_eq!(r.code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    })
    .await;
}

#[tokio::test]
async fn yaml_bodies_are_accepted() {
    both(async |env: Env| {
        let r = call(
            &env,
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            &[("content-type", "application/yaml")],
            "metadata:\n  name: y\ndata:\n  a: b\n",
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        assert_eq!(r.json()["data"]["a"], "b");
    })
    .await;
}

#[tokio::test]
async fn bodies_must_decode_into_the_built_in_kind() {
    both(async |env: Env| {
        let r = post(
            &env,
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "n"}, "data": {"a": 1}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::BAD_REQUEST);
        assert!(r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: "));
    })
    .await;
}

#[tokio::test]
async fn field_validation_strict_warn_ignore() {
    both(async |env: Env| {
        let cm = |name: &str| json!({"metadata": {"name": name}, "data": {"a": "b"}, "bogus": 1});
        let base = "/api/v1/namespaces/default/configmaps";
        let r = post(&env, &format!("{base}?fieldValidation=Strict"), cm("s")).await;
        assert_eq!(r.code, StatusCode::BAD_REQUEST);
        assert_eq!(
            r.json()["message"],
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
        );
        let r = post(&env, &format!("{base}?fieldValidation=Warn"), cm("w")).await;
        assert_eq!(r.code, StatusCode::CREATED);
        assert_eq!(r.headers["warning"], "299 - \"unknown field \\\"bogus\\\"\"");
        // Warn is the default.
        let r = post(&env, base, cm("d")).await;
        assert_eq!(r.code, StatusCode::CREATED);
        assert!(r.headers.contains_key("warning"));
        let r = post(&env, &format!("{base}?fieldValidation=Ignore"), cm("i")).await;
        assert_eq!(r.code, StatusCode::CREATED);
        assert!(!r.headers.contains_key("warning"));
        // Custom resources: fields the schema would prune.
        let g = "/apis/example.com/v1/namespaces/default/gizmos?fieldValidation=Strict";
        let r = post(&env, g, json!({"metadata": {"name": "g"}, "spec": {"replicas": 1, "extra": 2}})).await;
        assert_eq!(r.code, StatusCode::BAD_REQUEST);
        assert_eq!(
            r.json()["message"],
            "Gizmo in version \"v1\" cannot be handled as a Gizmo: strict decoding error: unknown field \"spec.extra\""
        );
        // Server-side apply bodies are checked too.
        let r = call(
            &env,
            Method::PATCH,
            &format!("{base}/applied?fieldManager=t&fieldValidation=Strict"),
            &[("content-type", "application/apply-patch+yaml")],
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\nnope: 1\n",
        )
        .await;
        assert_eq!(r.code, StatusCode::BAD_REQUEST);
    })
    .await;
}

// ---------------------------------------------------------------- output forms

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

#[tokio::test]
async fn partial_object_metadata() {
    // SEMANTICS 13.28
    both(async |env: Env| {
        post(
            &env,
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "c"}, "data": {"a": "b"}}),
        )
        .await;
        let pom = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        let poml = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        let one = get_as(&env, "/api/v1/namespaces/default/configmaps/c", pom)
            .await
            .json();
        assert_eq!(one["kind"], "PartialObjectMetadata");
        assert_eq!(one["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(one["metadata"]["name"], "c");
        assert!(one.get("data").is_none());
        let list = get_as(&env, "/api/v1/namespaces/default/configmaps", poml)
            .await
            .json();
        assert_eq!(list["kind"], "PartialObjectMetadataList");
        assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
        assert_eq!(list["items"][0]["apiVersion"], "meta.k8s.io/v1");
        let r = get_as(&env, "/api/v1/namespaces/default/configmaps", pom).await;
        assert_eq!(r.code, StatusCode::NOT_ACCEPTABLE);
        let w = open_watch(
            &env,
            "/api/v1/namespaces/default/configmaps?watch=true",
            pom,
        )
        .await;
        let ev = watch_events(w, 1).await;
        assert_eq!(ev[0]["type"], "ADDED");
        assert_eq!(ev[0]["object"]["kind"], "PartialObjectMetadata");
        assert!(ev[0]["object"].get("data").is_none());
    })
    .await;
}

#[tokio::test]
async fn custom_resource_tables_use_printer_columns() {
    // SEMANTICS 13.29
    both(async |env: Env| {
        let g = "/apis/example.com/v1/namespaces/default/gizmos";
        post(
            &env,
            g,
            json!({"metadata": {"name": "a"}, "spec": {"replicas": 3, "mode": "fast"}}),
        )
        .await;
        post(
            &env,
            g,
            json!({"metadata": {"name": "b"}, "spec": {"replicas": 1}}),
        )
        .await;
        let t = get_as(&env, g, TABLE).await.json();
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        let cols: Vec<(&str, i64)> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["priority"].as_i64().unwrap()))
            .collect();
        assert_eq!(cols, [("Name", 0), ("Replicas", 0), ("Mode", 1)]);
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        assert_eq!(
            t["columnDefinitions"][1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.replicas"
        );
        assert_eq!(t["rows"][0]["cells"], json!(["a", 3, "fast"]));
        assert_eq!(t["rows"][1]["cells"], json!(["b", 1, null]));
        let p = "/apis/example.com/v1/namespaces/default/plains";
        post(&env, p, json!({"metadata": {"name": "a"}})).await;
        let t = get_as(&env, p, TABLE).await.json();
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "Age"]);
        assert_eq!(t["rows"][0]["cells"][0], "a");
        let age = t["rows"][0]["cells"][1].as_str().unwrap();
        assert!(age.ends_with('s'), "{age}");
    })
    .await;
}

#[tokio::test]
async fn table_include_object() {
    // SEMANTICS 13.30
    both(async |env: Env| {
        let g = "/apis/example.com/v1/namespaces/default/gizmos";
        post(&env, g, json!({"metadata": {"name": "a"}, "spec": {"replicas": 3}})).await;
        let t = get_as(&env, g, TABLE).await.json();
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        let t = get_as(&env, &format!("{g}?includeObject=Object"), TABLE).await.json();
        assert_eq!(t["rows"][0]["object"]["kind"], "Gizmo");
        assert_eq!(t["rows"][0]["object"]["spec"]["replicas"], 3);
        let t = get_as(&env, &format!("{g}?includeObject=None"), TABLE).await.json();
        assert!(t["rows"][0]["object"].is_null());
        let r = get_as(&env, &format!("{g}?includeObject=Foo"), TABLE).await;
        assert_eq!(r.code, StatusCode::BAD_REQUEST);
        assert_eq!(
            r.json()["message"],
            "Unable to convert to Table as requested: includeObject: Invalid value: \"Foo\": must be 'Metadata', 'Object', 'None', or empty"
        );
        // One object as a Table too.
        let t = get_as(&env, &format!("{g}/a"), TABLE).await.json();
        assert_eq!(t["rows"][0]["cells"][0], "a");
    })
    .await;
}

#[tokio::test]
async fn table_watch_sends_columns_once() {
    // SEMANTICS 13.31
    both(async |env: Env| {
        let g = "/apis/example.com/v1/namespaces/default/gizmos";
        post(
            &env,
            g,
            json!({"metadata": {"name": "a"}, "spec": {"replicas": 3}}),
        )
        .await;
        let w = open_watch(&env, &format!("{g}?watch=true"), TABLE).await;
        post(
            &env,
            g,
            json!({"metadata": {"name": "b"}, "spec": {"replicas": 4}}),
        )
        .await;
        let ev = watch_events(w, 2).await;
        assert_eq!(ev[0]["object"]["kind"], "Table");
        assert!(ev[0]["object"]["columnDefinitions"].is_array());
        assert_eq!(ev[0]["object"]["rows"][0]["cells"], json!(["a", 3, null]));
        assert!(ev[1]["object"].get("columnDefinitions").is_none());
        assert_eq!(ev[1]["object"]["rows"][0]["cells"], json!(["b", 4, null]));
    })
    .await;
}

#[tokio::test]
async fn built_in_tables_and_accept_negotiation() {
    // SEMANTICS 13.32
    both(async |env: Env| {
        let r = post(
            &env,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            json!({"metadata": {"name": "r"}, "rules": []}),
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        let created = r.json()["metadata"]["creationTimestamp"].clone();
        let t = get_as(
            &env,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            TABLE,
        )
        .await
        .json();
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "Created At"]);
        assert_eq!(t["rows"][0]["cells"], json!(["r", created]));
        let cms = "/api/v1/namespaces/default/configmaps";
        let r = get_as(
            &env,
            cms,
            "application/json;as=Foo;v=v1;g=meta.k8s.io, application/json",
        )
        .await;
        assert_eq!(r.json()["kind"], "ConfigMapList");
        let r = get_as(&env, cms, "application/json;as=Foo;v=v1;g=meta.k8s.io").await;
        assert_eq!(r.code, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(r.json()["reason"], "NotAcceptable");
    })
    .await;
}

#[tokio::test]
async fn kubectl_columns_for_common_built_ins() {
    both(async |env: Env| {
        post(
            &env,
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        )
        .await;
        post(
            &env,
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
        .await;
        let cols = |t: &Value| -> Vec<(String, i64)> {
            t["columnDefinitions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c["name"].as_str().unwrap().to_owned(), c["priority"].as_i64().unwrap()))
                .filter(|(_, p)| *p == 0)
                .collect()
        };
        let names = |t: &Value| cols(t).into_iter().map(|c| c.0).collect::<Vec<_>>();
        let t = get_as(&env, "/api/v1/namespaces/default/pods", TABLE).await.json();
        assert_eq!(names(&t), ["Name", "Ready", "Status", "Restarts", "Age"]);
        assert_eq!(t["rows"][0]["cells"].as_array().unwrap()[..4], [json!("p"), json!("0/1"), json!("Pending"), json!(0)]);
        let t = get_as(&env, "/apis/apps/v1/namespaces/default/deployments", TABLE).await.json();
        assert_eq!(names(&t), ["Name", "Ready", "Up-to-date", "Available", "Age"]);
        assert_eq!(t["rows"][0]["cells"].as_array().unwrap()[..4], [json!("web"), json!("0/2"), json!(0), json!(0)]);
        let wide: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["priority"] == 1)
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(wide, ["Containers", "Images", "Selector"]);
        let t = get_as(&env, "/api/v1/namespaces", TABLE).await.json();
        assert_eq!(names(&t), ["Name", "Status", "Age"]);
        assert_eq!(t["rows"][0]["cells"][1], "Active");
    })
    .await;
}

// ---------------------------------------------------------------- discovery, OpenAPI, health

#[tokio::test]
async fn discovery_reports_categories_and_short_names() {
    both(async |env: Env| {
        let core = get(&env, "/api/v1").await.json();
        let pods = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pods")
            .unwrap();
        assert_eq!(pods["categories"], json!(["all"]));
        assert_eq!(pods["shortNames"], json!(["po"]));
        let g = get(&env, "/apis/example.com/v1").await.json();
        let gz = g["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "gizmos")
            .unwrap();
        assert_eq!(gz["categories"], json!(["all"]));
        assert_eq!(gz["shortNames"], json!(["gz"]));
    })
    .await;
}

#[tokio::test]
async fn openapi_v3_documents_follow_the_registrations() {
    both(async |env: Env| {
        let index = get(&env, "/openapi/v3").await.json();
        let url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(url.starts_with("/openapi/v3/apis/example.com/v1?hash="));
        let r = get(&env, &url).await;
        assert_eq!(r.headers["cache-control"], "public, immutable");
        let doc = r.json();
        let item = &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/gizmos/{name}"];
        assert_eq!(
            item["patch"]["x-kubernetes-group-version-kind"]["kind"],
            "Gizmo"
        );
        let params: Vec<&str> = item["patch"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(params.contains(&"fieldValidation"), "{params:?}");
        let schema = &doc["components"]["schemas"]["com.example.v1.Gizmo"];
        assert_eq!(schema["description"], "A gizmo.");
        assert_eq!(
            schema["properties"]["spec"]["properties"]["replicas"]["description"],
            "How many."
        );
        assert_eq!(
            schema["x-kubernetes-group-version-kind"][0]["kind"],
            "Gizmo"
        );
        assert!(index["paths"]["api/v1"].is_object());
        assert!(index["paths"]["apis/apps/v1"].is_object());

        // A CRD created through the API shows at once, under a new group-version.
        let crd: Value = serde_yaml::from_str(
            &PLAIN
                .replace("plains", "things")
                .replace("Plain", "Thing")
                .replace("plain", "thing")
                .replace("example.com", "other.example.com"),
        )
        .unwrap();
        let r = post(
            &env,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd,
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        let index2 = get(&env, "/openapi/v3").await.json();
        assert!(index2["paths"]["apis/other.example.com/v1"].is_object());
        assert_eq!(
            index2["paths"]["apis/example.com/v1"],
            index["paths"]["apis/example.com/v1"]
        );
    })
    .await;
}

#[tokio::test]
async fn openapi_v2_as_json_and_protobuf() {
    both(async |env: Env| {
        let doc = get(&env, "/openapi/v2").await.json();
        assert_eq!(doc["swagger"], "2.0");
        assert!(doc["definitions"]["com.example.v1.Gizmo"].is_object());
        let r = get_as(
            &env,
            "/openapi/v2",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )
        .await;
        assert_eq!(r.code, StatusCode::OK);
        assert_eq!(
            r.headers["content-type"],
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        );
        // Field 1 (swagger) = "2.0".
        assert_eq!(&r.body[..5], b"\x0a\x032.0");
    })
    .await;
}

#[tokio::test]
async fn health_endpoints_and_version() {
    both(async |env: Env| {
        for which in ["healthz", "readyz", "livez"] {
            let r = get(&env, &format!("/{which}")).await;
            assert_eq!(r.code, StatusCode::OK);
            assert_eq!(r.text(), "ok");
            let r = get(&env, &format!("/{which}?verbose")).await;
            assert!(r.text().starts_with("[+]ping ok\n"), "{}", r.text());
            assert!(r.text().ends_with(&format!("{which} check passed\n")));
            assert_eq!(get(&env, &format!("/{which}/ping")).await.text(), "ok");
            assert_eq!(
                get(&env, &format!("/{which}/nope")).await.code,
                StatusCode::NOT_FOUND
            );
        }
        let v = get(&env, "/version").await.json();
        for k in [
            "major",
            "minor",
            "gitVersion",
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform",
        ] {
            assert!(v[k].is_string(), "{k} in {v}");
        }
        assert!(v["gitVersion"].as_str().unwrap().starts_with(&format!(
            "v{}.{}.",
            v["major"].as_str().unwrap(),
            v["minor"].as_str().unwrap()
        )));
    })
    .await;
}

#[tokio::test]
async fn readyz_fails_once_shutdown_began() {
    let s = strict_server();
    let client = kube::Client::new(s.service(), "default");
    let env = Env { server: s, client };
    env.server.shutdown();
    let r = get(&env, "/readyz?verbose").await;
    assert_eq!(r.code, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(r.text().contains("[-]shutdown failed"));
}

// ---------------------------------------------------------------- test controls

/// Reads a watch body to its end and returns the names of the objects it carried.
async fn names_until_end(mut w: hyper_like::Stream) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), w.body.frame()).await {
            Ok(Some(Ok(f))) => {
                if let Ok(d) = f.into_data() {
                    w.buf.extend_from_slice(&d);
                }
            }
            Ok(_) => break,
            Err(_) => panic!("a dropped watch did not end"),
        }
    }
    for line in w.buf.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).unwrap();
        out.push(
            v["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_watches_is_a_clean_cut() {
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), "default");
    let env = Env { server, client };
    let path = "/api/v1/namespaces/default/configmaps";
    for i in 0..200 {
        let rv = get(&env, path).await.json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        let w = open_watch(
            &env,
            &format!("{path}?watch=true&resourceVersion={rv}"),
            "application/json",
        )
        .await;
        let before = format!("before-{i}");
        env.server
            .create(
                "configmaps",
                json!({"metadata": {"name": before, "namespace": "default"}}),
            )
            .unwrap();
        env.server.drop_watches();
        let after = format!("after-{i}");
        env.server
            .create(
                "configmaps",
                json!({"metadata": {"name": after, "namespace": "default"}}),
            )
            .unwrap();
        let names = names_until_end(w).await;
        assert!(
            !names.contains(&after),
            "iteration {i}: a change written after drop_watches reached a dropped watch: {names:?}"
        );
    }
}

// ---------------------------------------------------------------- CustomResourceDefinitions

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn foo_crd(name: &str, group: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}],
        },
    })
}

#[tokio::test]
async fn crd_name_must_be_plural_dot_group() {
    // SEMANTICS 13.11
    both(async |env: Env| {
        let r = post(&env, CRDS, foo_crd("foos.wrong.com", "example.com")).await;
        assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY);
        let st = r.json();
        assert_eq!(
            st["message"],
            "CustomResourceDefinition.apiextensions.k8s.io \"foos.wrong.com\" is invalid: metadata.name: Invalid value: \"foos.wrong.com\": must be spec.names.plural+\".\"+spec.group"
        );
        assert_eq!(st["details"]["causes"][0]["reason"], "FieldValueInvalid");
        assert_eq!(st["details"]["causes"][0]["field"], "metadata.name");
    })
    .await;
}

#[tokio::test]
async fn crd_validation_errors() {
    // SEMANTICS 13.12
    both(async |env: Env| {
        let message = async |crd: Value| -> String {
            let r = post(&env, CRDS, crd).await;
            assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text());
            r.json()["message"].as_str().unwrap().to_owned()
        };
        let mut two = foo_crd("foos.example.com", "example.com");
        let v1 = two["spec"]["versions"][0].clone();
        let mut v2 = v1.clone();
        v2["name"] = json!("v2");
        two["spec"]["versions"] = json!([v1, v2]);
        assert!(message(two).await.contains("must have exactly one version marked as storage version"));
        assert!(message(foo_crd("foos.example", "example"))
            .await
            .contains("should be a domain with at least one dot"));
        let mut no_schema = foo_crd("foos.example.com", "example.com");
        no_schema["spec"]["versions"][0]
            .as_object_mut()
            .unwrap()
            .remove("schema");
        assert!(message(no_schema)
            .await
            .contains("spec.versions[0].schema.openAPIV3Schema: Required value"));
        let mut untyped = foo_crd("foos.example.com", "example.com");
        untyped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            .as_object_mut()
            .unwrap()
            .remove("type");
        // kube-apiserver names a schema every version shares at its internal path.
        assert!(message(untyped).await.contains(
            "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        ));
    })
    .await;
}

/// CRDs kube-apiserver rejects for a CEL rule that does not parse, a list-map key, a
/// printer column type or a protected group's missing approval are rejected over HTTP
/// with its message (kube-apiserver 1.36.3's answers to the same CRDs, `kubectl create
/// --dry-run=server`; the rules are `kubegen_apimachinery::crd_validation`'s).
#[tokio::test]
async fn crds_kube_apiserver_rejects_get_its_messages() {
    both(async |env: Env| {
        let message = async |crd: Value| -> String {
            let r = post(&env, CRDS, crd).await;
            assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text());
            let st = r.json();
            assert!(st["details"]["causes"][0]["reason"]
                .as_str()
                .unwrap()
                .starts_with("FieldValue"));
            st["message"].as_str().unwrap().to_owned()
        };
        let pre = "CustomResourceDefinition.apiextensions.k8s.io \"foos.example.com\" is invalid: ";
        let mut cel = foo_crd("foos.example.com", "example.com");
        cel["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["x-kubernetes-validations"] = json!([{"rule": "self.size >"}]);
        assert!(message(cel).await.starts_with(&format!(
            "{pre}spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {{\"Rule\":\"self.size \\u003e\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}}: compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>'"
        )));
        let mut keys = foo_crd("foos.example.com", "example.com");
        keys["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map",
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}});
        assert_eq!(
            message(keys).await,
            format!("{pre}spec.validation.openAPIV3Schema.properties[spec].properties[ports].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map")
        );
        let mut column = foo_crd("foos.example.com", "example.com");
        column["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Size", "type": "int", "jsonPath": ".spec.size"}]);
        assert_eq!(
            message(column).await,
            format!("{pre}spec.additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string")
        );
        assert_eq!(
            message(foo_crd("foos.samplecontroller.k8s.io", "samplecontroller.k8s.io")).await,
            "CustomResourceDefinition.apiextensions.k8s.io \"foos.samplecontroller.k8s.io\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        );
        let mut approved = foo_crd("foos.samplecontroller.k8s.io", "samplecontroller.k8s.io");
        approved["metadata"]["annotations"] =
            json!({"api-approved.kubernetes.io": "unapproved, experimental-only"});
        assert_eq!(post(&env, CRDS, approved).await.code, StatusCode::CREATED);
    })
    .await;
}

#[tokio::test]
async fn crd_gets_stored_versions_then_names_accepted_and_established() {
    // SEMANTICS 13.13
    both(async |env: Env| {
        let r = post(&env, CRDS, foo_crd("foos.example.com", "example.com")).await;
        assert_eq!(r.code, StatusCode::CREATED);
        let crd = r.json();
        assert_eq!(crd["metadata"]["generation"], 1);
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        assert!(crd["status"].get("conditions").is_none());
        let crd = get(&env, &format!("{CRDS}/foos.example.com")).await.json();
        let c = condition(&crd, "NamesAccepted");
        assert_eq!(
            (&c["status"], &c["reason"], &c["message"]),
            (
                &json!("True"),
                &json!("NoConflicts"),
                &json!("no conflicts found")
            )
        );
        let c = condition(&crd, "Established");
        assert_eq!(
            (&c["status"], &c["reason"], &c["message"]),
            (
                &json!("True"),
                &json!("InitialNamesAccepted"),
                &json!("the initial names have been accepted")
            )
        );
        assert_eq!(crd["status"]["acceptedNames"]["kind"], "Foo");
        assert_eq!(crd["status"]["acceptedNames"]["plural"], "foos");
        let r = get(&env, "/apis/example.com/v1/namespaces/default/foos").await;
        assert_eq!(r.code, StatusCode::OK);
        let r = get(&env, "/apis/example.com/v9/namespaces/default/foos").await;
        assert_eq!(r.code, StatusCode::NOT_FOUND);
    })
    .await;
}

#[tokio::test]
async fn put_of_a_crd_or_custom_resource_needs_a_resource_version() {
    // SEMANTICS 13.16
    both(async |env: Env| {
        let crd = post(&env, CRDS, foo_crd("foos.example.com", "example.com")).await.json();
        let mut no_rv = crd.clone();
        no_rv["metadata"].as_object_mut().unwrap().remove("resourceVersion");
        let r = put(&env, &format!("{CRDS}/foos.example.com"), no_rv).await;
        assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(r.json()["message"].as_str().unwrap().contains("must be specified for an update"));
        // A spec change raises generation by one; a status sent to the main resource is
        // ignored.
        let mut crd = get(&env, &format!("{CRDS}/foos.example.com")).await.json();
        crd["spec"]["names"]["shortNames"] = json!(["fo"]);
        crd["status"]["storedVersions"] = json!(["v1", "v0"]);
        let r = put(&env, &format!("{CRDS}/foos.example.com"), crd).await;
        assert_eq!(r.code, StatusCode::OK, "{}", r.text());
        let crd = r.json();
        assert_eq!(crd["metadata"]["generation"], 2);
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        // Custom resources too, with the resource as qualifier.
        let g = "/apis/example.com/v1/namespaces/default/gizmos";
        let obj = post(&env, g, json!({"metadata": {"name": "g"}})).await.json();
        let mut no_rv = obj.clone();
        no_rv["metadata"].as_object_mut().unwrap().remove("resourceVersion");
        let r = put(&env, &format!("{g}/g"), no_rv).await;
        assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            r.json()["message"],
            "gizmos.example.com \"g\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
        );
    })
    .await;
}

#[tokio::test]
async fn crd_changes_apply_to_the_next_request() {
    both(async |env: Env| {
        post(&env, CRDS, foo_crd("foos.example.com", "example.com")).await;
        let foos = "/apis/example.com/v1/namespaces/default/foos";
        post(
            &env,
            foos,
            json!({"metadata": {"name": "a"}, "spec": {"size": 3}}),
        )
        .await;
        let mut crd = get(&env, &format!("{CRDS}/foos.example.com")).await.json();
        crd["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]);
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] =
            json!(["size"]);
        assert_eq!(
            put(&env, &format!("{CRDS}/foos.example.com"), crd)
                .await
                .code,
            StatusCode::OK
        );
        let t = get_as(&env, foos, TABLE).await.json();
        assert_eq!(t["columnDefinitions"][1]["name"], "Size");
        assert_eq!(t["rows"][0]["cells"], json!(["a", 3]));
        let r = post(&env, foos, json!({"metadata": {"name": "b"}, "spec": {}})).await;
        assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY);
        let doc = get(&env, "/openapi/v3/apis/example.com/v1").await.json();
        assert_eq!(
            doc["components"]["schemas"]["com.example.v1.Foo"]["properties"]["spec"]["required"],
            json!(["size"])
        );
    })
    .await;
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_custom_resources_then_stops_serving() {
    // SEMANTICS 13.22
    both(async |env: Env| {
        post(&env, CRDS, foo_crd("foos.example.com", "example.com")).await;
        let foos = "/apis/example.com/v1/namespaces/default/foos";
        post(
            &env,
            foos,
            json!({"metadata": {"name": "a", "finalizers": ["example.com/hold"]}, "spec": {"size": 1}}),
        )
        .await;
        post(&env, foos, json!({"metadata": {"name": "b"}})).await;
        let rv = get(&env, foos).await.json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        let w = open_watch(&env, &format!("{foos}?watch=true&resourceVersion={rv}"), "application/json").await;
        let r = delete(&env, &format!("{CRDS}/foos.example.com"), None).await;
        assert_eq!(r.code, StatusCode::OK);
        let crd = r.json();
        assert!(crd["metadata"]["deletionTimestamp"].is_string());
        assert_eq!(
            crd["metadata"]["finalizers"],
            json!(["customresourcecleanup.apiextensions.k8s.io"])
        );
        let c = condition(&crd, "Terminating");
        assert_eq!((&c["status"], &c["reason"]), (&json!("True"), &json!("InstanceDeletionPending")));
        let r = post(&env, foos, json!({"metadata": {"name": "x"}})).await;
        assert_eq!(r.code, StatusCode::FORBIDDEN);
        assert_eq!(
            r.json()["message"],
            "foos.example.com \"x\" is forbidden: create not allowed while custom resource definition is terminating"
        );
        // Existing custom resources can still be read and deleted meanwhile.
        assert_eq!(get(&env, &format!("{foos}/a")).await.code, StatusCode::OK);
        let events = watch_events(w, 2).await;
        let kinds: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e["type"].as_str().unwrap(), e["object"]["metadata"]["name"].as_str().unwrap()))
            .collect();
        assert!(kinds.contains(&("DELETED", "b")), "{kinds:?}");
        assert!(kinds.contains(&("MODIFIED", "a")), "{kinds:?}");
        // The finalizer of "a" holds it, and the CRD with it; once removed, everything goes.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let crd = get(&env, &format!("{CRDS}/foos.example.com")).await.json();
        assert_eq!(condition(&crd, "Terminating")["reason"], "InstanceDeletionInProgress");
        patch(
            &env,
            &format!("{foos}/a"),
            "application/merge-patch+json",
            json!({"metadata": {"finalizers": null}}),
        )
        .await;
        eventually("the CRD is gone", async || {
            get(&env, &format!("{CRDS}/foos.example.com")).await.code == StatusCode::NOT_FOUND
        })
        .await;
        assert_eq!(get(&env, foos).await.code, StatusCode::NOT_FOUND);
        let g = get(&env, "/apis/example.com/v1").await.json();
        assert!(!g.to_string().contains("\"foos\""), "{g}");
    })
    .await;
}

#[tokio::test]
async fn stored_versions_follow_the_storage_version() {
    // SEMANTICS 13.17
    both(async |env: Env| {
        let url = format!("{CRDS}/foos.example.com");
        post(&env, CRDS, foo_crd("foos.example.com", "example.com")).await;
        let mut crd = get(&env, &url).await.json();
        let v1 = crd["spec"]["versions"][0].clone();
        let mut v2 = v1.clone();
        v2["name"] = json!("v2");
        let mut v1_old = v1.clone();
        v1_old["storage"] = json!(false);
        crd["spec"]["versions"] = json!([v1_old, v2]);
        let r = put(&env, &url, crd).await;
        assert_eq!(r.code, StatusCode::OK, "{}", r.text());
        assert_eq!(r.json()["status"]["storedVersions"], json!(["v1", "v2"]));
        let mut only_v2 = r.json();
        let v2 = only_v2["spec"]["versions"][1].clone();
        only_v2["spec"]["versions"] = json!([v2]);
        let r = put(&env, &url, only_v2.clone()).await;
        assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(r.json()["message"]
            .as_str()
            .unwrap()
            .contains("missing from spec.versions; v1 was previously a storage version"));
        let mut st = get(&env, &url).await.json();
        st["status"]["storedVersions"] = json!(["v2"]);
        let r = put(&env, &format!("{url}/status"), st).await;
        assert_eq!(r.code, StatusCode::OK, "{}", r.text());
        only_v2["metadata"]["resourceVersion"] = r.json()["metadata"]["resourceVersion"].clone();
        let r = put(&env, &url, only_v2).await;
        assert_eq!(r.code, StatusCode::OK, "{}", r.text());
        let mut empty = r.json();
        empty["status"]["storedVersions"] = json!([]);
        let r = put(&env, &format!("{url}/status"), empty).await;
        assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(r.json()["message"]
            .as_str()
            .unwrap()
            .contains("must have at least one stored version"));
    })
    .await;
}

#[tokio::test]
async fn discovery_orders_versions_by_priority() {
    // SEMANTICS 13.21
    both(async |env: Env| {
        let mut crd = foo_crd("foos.example.com", "example.com");
        let v = crd["spec"]["versions"][0].clone();
        let names = [
            "v1alpha1", "foo", "v2", "v1beta1", "v10", "bar", "v1", "v1beta2", "v2alpha1",
        ];
        crd["spec"]["versions"] = Value::Array(
            names
                .iter()
                .map(|n| {
                    let mut x = v.clone();
                    x["name"] = json!(n);
                    x["storage"] = json!(*n == "v1");
                    x
                })
                .collect(),
        );
        assert_eq!(post(&env, CRDS, crd).await.code, StatusCode::CREATED);
        let g = get(&env, "/apis/example.com").await.json();
        let order: Vec<&str> = g["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        assert_eq!(
            order,
            ["v10", "v2", "v1", "v1beta2", "v1beta1", "v2alpha1", "v1alpha1", "bar", "foo"]
        );
        assert_eq!(g["preferredVersion"]["version"], "v10");
    })
    .await;
}

#[tokio::test]
async fn conflicting_names_are_not_accepted_until_released() {
    // SEMANTICS 13.14
    both(async |env: Env| {
        post(&env, CRDS, foo_crd("foos.example.com", "example.com")).await;
        let mut bars = foo_crd("bars.example.com", "example.com");
        bars["spec"]["names"] = json!({"plural": "bars", "singular": "bar", "kind": "Foo"});
        assert_eq!(post(&env, CRDS, bars).await.code, StatusCode::CREATED);
        let b = get(&env, &format!("{CRDS}/bars.example.com")).await.json();
        let c = condition(&b, "NamesAccepted");
        assert_eq!(
            (&c["status"], &c["reason"], &c["message"]),
            (
                &json!("False"),
                &json!("KindConflict"),
                &json!("\"Foo\" is already in use")
            )
        );
        let c = condition(&b, "Established");
        assert_eq!(
            (&c["status"], &c["reason"], &c["message"]),
            (
                &json!("False"),
                &json!("NotAccepted"),
                &json!("not all names are accepted")
            )
        );
        assert_eq!(
            get(&env, "/apis/example.com/v1/namespaces/default/bars")
                .await
                .code,
            StatusCode::NOT_FOUND
        );
        let mut bazs = foo_crd("bazs.example.com", "example.com");
        bazs["spec"]["names"] = json!({"plural": "bazs", "singular": "foos", "kind": "Baz"});
        post(&env, CRDS, bazs).await;
        let z = get(&env, &format!("{CRDS}/bazs.example.com")).await.json();
        assert_eq!(condition(&z, "NamesAccepted")["reason"], "SingularConflict");
        // Once foos is gone, bars gets its names.
        assert_eq!(
            delete(&env, &format!("{CRDS}/foos.example.com"), None)
                .await
                .code,
            StatusCode::OK
        );
        eventually("bars is established", async || {
            let b = get(&env, &format!("{CRDS}/bars.example.com")).await.json();
            b["status"]["conditions"].as_array().is_some_and(|a| {
                a.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            })
        })
        .await;
        assert_eq!(
            get(&env, "/apis/example.com/v1/namespaces/default/bars")
                .await
                .code,
            StatusCode::OK
        );
    })
    .await;
}

#[tokio::test]
async fn reads_and_writes_follow_a_changed_schema_at_once() {
    // SEMANTICS 13.15
    both(async |env: Env| {
        let mut crd = foo_crd("foos.example.com", "example.com");
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] =
            json!({"size": {"type": "integer"}, "mode": {"type": "string"}, "old": {"type": "string"}});
        post(&env, CRDS, crd).await;
        let foos = "/apis/example.com/v1/namespaces/default/foos";
        let r = post(&env, foos, json!({"metadata": {"name": "a"}, "spec": {"size": 1, "old": "x"}})).await;
        assert_eq!(r.code, StatusCode::CREATED);
        let url = format!("{CRDS}/foos.example.com");
        let mut crd = get(&env, &url).await.json();
        let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        spec["properties"] = json!({"size": {"type": "integer"}, "mode": {"type": "string", "default": "slow"}});
        spec["required"] = json!(["size"]);
        crd["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Mode", "type": "string", "jsonPath": ".spec.mode"}]);
        assert_eq!(put(&env, &url, crd).await.code, StatusCode::OK);
        let a = get(&env, &format!("{foos}/a")).await.json();
        assert_eq!(a["spec"], json!({"size": 1, "mode": "slow"}));
        let list = get(&env, foos).await.json();
        assert_eq!(list["items"][0]["spec"], json!({"size": 1, "mode": "slow"}));
        let r = post(&env, foos, json!({"metadata": {"name": "b"}, "spec": {}})).await;
        assert_eq!(r.code, StatusCode::UNPROCESSABLE_ENTITY);
        let t = get_as(&env, foos, TABLE).await.json();
        assert_eq!(t["columnDefinitions"][1]["name"], "Mode");
        assert_eq!(t["rows"][0]["cells"], json!(["a", "slow"]));
        let w = open_watch(&env, &format!("{foos}?watch=true"), "application/json").await;
        let ev = watch_events(w, 1).await;
        assert_eq!(ev[0]["object"]["spec"], json!({"size": 1, "mode": "slow"}));
    })
    .await;
}

#[tokio::test]
async fn versions_without_conversion_share_objects() {
    // SEMANTICS 13.18
    both(async |env: Env| {
        let mut crd = foo_crd("foos.example.com", "example.com");
        let v1 = crd["spec"]["versions"][0].clone();
        let mut v2 = v1.clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        crd["spec"]["versions"] = json!([v1, v2]);
        crd["spec"]["conversion"] = json!({"strategy": "None"});
        assert_eq!(post(&env, CRDS, crd).await.code, StatusCode::CREATED);
        let r = post(
            &env,
            "/apis/example.com/v1/namespaces/default/foos",
            json!({"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "a"}, "spec": {"size": 2}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED);
        let via1 = r.json();
        let mut via2 = get(&env, "/apis/example.com/v2/namespaces/default/foos/a").await.json();
        assert_eq!(via2["apiVersion"], "example.com/v2");
        via2["apiVersion"] = json!("example.com/v1");
        assert_eq!(via2, via1, "identical except apiVersion");
        let list = get(&env, "/apis/example.com/v2/namespaces/default/foos").await.json();
        assert_eq!(list["apiVersion"], "example.com/v2");
        assert_eq!(list["items"][0]["apiVersion"], "example.com/v2");
        // A write through v2 is stored once, as v1.
        let r = post(
            &env,
            "/apis/example.com/v2/namespaces/default/foos",
            json!({"apiVersion": "example.com/v2", "kind": "Foo", "metadata": {"name": "b"}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED);
        assert_eq!(r.json()["apiVersion"], "example.com/v2");
        let b = get(&env, "/apis/example.com/v1/namespaces/default/foos/b").await.json();
        assert_eq!(b["apiVersion"], "example.com/v1");
        // Watch events too.
        let w = open_watch(&env, "/apis/example.com/v2/namespaces/default/foos?watch=true", "application/json").await;
        let ev = watch_events(w, 2).await;
        assert!(ev.iter().all(|e| e["object"]["apiVersion"] == "example.com/v2"), "{ev:?}");
    })
    .await;
}

#[tokio::test]
async fn self_reviews_allow_everything() {
    both(async |env: Env| {
        let r = post(
            &env,
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            json!({"spec": {"resourceAttributes": {"verb": "delete", "resource": "pods"}}}),
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED);
        let v = r.json();
        assert_eq!(v["status"]["allowed"], true);
        assert_eq!(v["spec"]["resourceAttributes"]["verb"], "delete");
        let r = post(
            &env,
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json!({}),
        )
        .await;
        assert_eq!(
            r.json()["status"]["userInfo"]["username"],
            "system:anonymous"
        );
    })
    .await;
}

#[tokio::test]
async fn the_ga_built_in_kinds_are_served_with_kubectl_names() {
    both(async |env: Env| {
        for (path, kind) in [
            ("/api/v1/namespaces/default/resourcequotas", "ResourceQuota"),
            (
                "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                "PodDisruptionBudget",
            ),
            (
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                "PriorityClass",
            ),
            ("/apis/storage.k8s.io/v1/storageclasses", "StorageClass"),
            (
                "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
                "NetworkPolicy",
            ),
            (
                "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                "EndpointSlice",
            ),
        ] {
            let r = call(&env, Method::GET, path, &[], "").await;
            assert_eq!(r.code, StatusCode::OK, "{path}: {}", r.text());
            assert_eq!(r.json()["kind"], format!("{kind}List"));
        }
        let r = call(&env, Method::GET, "/apis/policy/v1", &[], "").await;
        let pdb = r.json()["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == "poddisruptionbudgets")
            .cloned()
            .unwrap();
        assert_eq!(pdb["shortNames"], json!(["pdb"]));
        let r = call(&env, Method::GET, "/api/v1", &[], "").await;
        let names: Vec<String> = r.json()["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap().to_owned())
            .collect();
        for sub in ["pods/eviction", "pods/binding", "serviceaccounts/token"] {
            assert!(names.iter().any(|n| n == sub), "{sub} not in {names:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn unknown_fields_of_built_in_kinds_are_dropped_with_a_warning() {
    both(async |env: Env| {
        let r = post(
            &env,
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u"},
                "data": {"a": "b"}, "bogus": 1}),
        )
        .await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        let warning = r.headers["warning"].to_str().unwrap();
        assert!(
            warning.contains("unknown field") && warning.contains("bogus"),
            "{warning}"
        );
        assert!(r.json().get("bogus").is_none());
        assert_eq!(r.json()["data"]["a"], "b");
    })
    .await;
}

#[tokio::test]
async fn eviction_respects_a_disruption_budget_and_deletes_the_pod() {
    both(async |env: Env| {
        let pods = "/api/v1/namespaces/default/pods";
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        assert_eq!(post(&env, pods, pod).await.code, StatusCode::CREATED);
        let running = json!({"status": {"phase": "Running"}});
        let r = patch(&env, &format!("{pods}/p/status"), "application/merge-patch+json", running).await;
        assert_eq!(r.code, StatusCode::OK, "{}", r.text());
        let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
        let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}});
        assert_eq!(post(&env, pdbs, pdb).await.code, StatusCode::CREATED);
        let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": "p", "namespace": "default"}});
        // No disruption controller has computed the budget: 429, as kube-apiserver.
        let r = post(&env, &format!("{pods}/p/eviction"), eviction.clone()).await;
        assert_eq!(r.code, StatusCode::TOO_MANY_REQUESTS, "{}", r.text());
        assert!(r.text().contains("disruption budget b"), "{}", r.text());
        let status = json!({"status": {"observedGeneration": 1, "disruptionsAllowed": 1,
            "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}});
        let r = patch(&env, &format!("{pdbs}/b/status"), "application/merge-patch+json", status).await;
        assert_eq!(r.code, StatusCode::OK, "{}", r.text());
        let r = post(&env, &format!("{pods}/p/eviction"), eviction).await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        assert_eq!(r.json()["status"], "Success");
        let r = call(&env, Method::GET, &format!("{pods}/p"), &[], "").await;
        assert_eq!(r.code, StatusCode::NOT_FOUND);
        let r = call(&env, Method::GET, &format!("{pdbs}/b"), &[], "").await;
        assert_eq!(r.json()["status"]["disruptionsAllowed"], 0);
    })
    .await;
}

#[tokio::test]
async fn binding_assigns_a_node_once_and_token_requests_answer_a_token() {
    both(async |env: Env| {
        let pods = "/api/v1/namespaces/default/pods";
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        assert_eq!(post(&env, pods, pod).await.code, StatusCode::CREATED);
        let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
            "target": {"kind": "Node", "name": "n1"}});
        let r = post(&env, &format!("{pods}/p/binding"), binding.clone()).await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        let r = call(&env, Method::GET, &format!("{pods}/p"), &[], "").await;
        assert_eq!(r.json()["spec"]["nodeName"], "n1");
        let r = post(&env, &format!("{pods}/p/binding"), binding).await;
        assert_eq!(r.code, StatusCode::CONFLICT, "{}", r.text());

        let sas = "/api/v1/namespaces/default/serviceaccounts";
        let sa =
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
        assert_eq!(post(&env, sas, sa).await.code, StatusCode::CREATED);
        let req = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": ["api"], "expirationSeconds": 3600}});
        let r = post(&env, &format!("{sas}/robot/token"), req.clone()).await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        let tr = r.json();
        assert_eq!(tr["kind"], "TokenRequest");
        let token = tr["status"]["token"].as_str().unwrap();
        assert_eq!(token.split('.').count(), 3);
        assert!(tr["status"]["expirationTimestamp"].is_string());
        let r = post(&env, &format!("{sas}/nobody/token"), req).await;
        assert_eq!(r.code, StatusCode::NOT_FOUND);
    })
    .await;
}

#[tokio::test]
async fn an_hpa_written_at_autoscaling_v1_is_stored_at_v2_and_read_at_both() {
    both(async |env: Env| {
        let v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
        let v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
        let hpa = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 4, "targetCPUUtilizationPercentage": 60}});
        let r = post(&env, v1, hpa).await;
        assert_eq!(r.code, StatusCode::CREATED, "{}", r.text());
        assert_eq!(r.json()["apiVersion"], "autoscaling/v1");
        assert_eq!(r.json()["spec"]["targetCPUUtilizationPercentage"], 60);
        let r = call(&env, Method::GET, &format!("{v2}/web"), &[], "").await;
        let got = r.json();
        assert_eq!(got["apiVersion"], "autoscaling/v2");
        assert_eq!(got["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 60);
        assert!(got["spec"].get("targetCPUUtilizationPercentage").is_none());
        let r = call(&env, Method::GET, v1, &[], "").await;
        assert_eq!(r.json()["apiVersion"], "autoscaling/v1");
        assert_eq!(r.json()["items"][0]["spec"]["targetCPUUtilizationPercentage"], 60);
        let r = call(&env, Method::GET, "/apis/autoscaling", &[], "").await;
        assert_eq!(r.json()["preferredVersion"]["version"], "v2");
    })
    .await;
}
