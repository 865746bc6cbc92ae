//! Conversion of custom resources between CRD versions by a conversion webhook
//! (SEMANTICS 13.19, 13.20), each test body run over the in-process tower Service and
//! over TCP via a kubeconfig, against a webhook served by the test on a local port.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use kubegen_runtime::testing::ApiServer;
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const V1: &str = "/apis/example.com/v1/namespaces/default/foos";
const V2: &str = "/apis/example.com/v2/namespaces/default/foos";

/// How the test webhook answers a review (the default converts).
type Answer = Box<dyn Fn(&Value) -> Value + Send>;

/// A conversion webhook on a local port: v1 `spec.size` is v2 `spec.replicas`.
#[derive(Clone)]
struct Webhook {
    url: String,
    reviews: Arc<Mutex<Vec<Value>>>,
    answer: Arc<Mutex<Answer>>,
}

impl Webhook {
    async fn start() -> Webhook {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/convert", listener.local_addr().unwrap());
        let hook = Webhook {
            url,
            reviews: Arc::default(),
            answer: Arc::new(Mutex::new(Box::new(convert))),
        };
        let h = hook.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let h = h.clone();
                tokio::spawn(async move {
                    let svc =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let h = h.clone();
                            async move {
                                let body = req.into_body().collect().await?.to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                h.reviews.lock().unwrap().push(review.clone());
                                let reply = (h.answer.lock().unwrap())(&review);
                                Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(
                                    reply.to_string(),
                                ))))
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        hook
    }

    fn answer(&self, f: impl Fn(&Value) -> Value + Send + 'static) {
        *self.answer.lock().unwrap() = Box::new(f);
    }

    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.reviews.lock().unwrap())
    }
}

/// A successful review reply converting every object (size <-> replicas).
fn convert(review: &Value) -> Value {
    let req = &review["request"];
    let desired = req["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects: Vec<Value> = req["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut o| {
            let from_v1 = o["apiVersion"] == "example.com/v1";
            if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
                let (from, to) = if from_v1 {
                    ("size", "replicas")
                } else {
                    ("replicas", "size")
                };
                if let Some(v) = spec.remove(from) {
                    spec.insert(to.into(), v);
                }
            }
            o["apiVersion"] = json!(desired);
            o
        })
        .collect();
    reply(&req["uid"], json!({"status": "Success"}), objects)
}

fn reply(uid: &Value, result: Value, objects: Vec<Value>) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": uid, "result": result, "convertedObjects": objects}})
}

/// foos.example.com: v1 (spec.size) and v2 (spec.replicas), converted by `url`.
fn crd(url: &str, storage: &str) -> Value {
    let version = |name: &str, field: &str| {
        json!({"name": name, "served": true, "storage": name == storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo"},
            "versions": [version("v1", "size"), version("v2", "replicas")],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": url}, "conversionReviewVersions": ["v1"]}},
        },
    })
}

struct Env {
    client: kube::Client,
    hook: Webhook,
}

/// Runs the body over the tower Service, then over TCP, each with a fresh server, a
/// fresh webhook and the CRD created.
async fn both(f: impl AsyncFn(Env)) {
    for tcp in [false, true] {
        let server = ApiServer::new();
        let hook = Webhook::start().await;
        let (client, tcp) = if tcp {
            let t = server.serve_tcp().await.unwrap();
            (t.client().await.unwrap(), Some(t))
        } else {
            (kube::Client::new(server.service(), "default"), None)
        };
        let env = Env { client, hook };
        let r = call(
            &env,
            Method::POST,
            CRDS,
            "application/json",
            crd(&env.hook.url, "v1"),
        )
        .await;
        assert_eq!(r.0, StatusCode::CREATED, "{}", r.1);
        f(env).await;
        if let Some(t) = tcp {
            t.shutdown().await;
        }
    }
}

async fn call(env: &Env, method: Method, path: &str, ct: &str, body: Value) -> (StatusCode, Value) {
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", ct)
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = env.client.send(req).await.unwrap();
    let code = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| json!(String::from_utf8_lossy(&bytes)));
    (code, v)
}

async fn get(env: &Env, path: &str) -> (StatusCode, Value) {
    call(env, Method::GET, path, "application/json", Value::Null).await
}

async fn post(env: &Env, path: &str, body: Value) -> (StatusCode, Value) {
    call(env, Method::POST, path, "application/json", body).await
}

fn foo(av: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": av, "kind": "Foo", "metadata": {"name": name}, "spec": spec})
}

/// The objects each review sent, by name.
fn sent(reviews: &[Value]) -> Vec<Vec<String>> {
    reviews
        .iter()
        .map(|r| {
            r["request"]["objects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn webhook_converts_reads_lists_watches_and_writes() {
    // SEMANTICS 13.19
    both(async |env: Env| {
        let (code, a) = post(&env, V1, foo("example.com/v1", "a", json!({"size": 2}))).await;
        assert_eq!(code, StatusCode::CREATED, "{a}");
        assert!(
            env.hook.take().is_empty(),
            "a write at the storage version converts nothing"
        );

        // A read at v2: one review, v1 review version, one object, desired v2.
        let (code, got) = get(&env, &format!("{V2}/a")).await;
        assert_eq!(code, StatusCode::OK, "{got}");
        assert_eq!(got["apiVersion"], "example.com/v2");
        assert_eq!(got["spec"], json!({"replicas": 2}));
        assert_eq!(got["metadata"], a["metadata"]);
        let reviews = env.hook.take();
        assert_eq!(reviews.len(), 1);
        assert_eq!(reviews[0]["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(reviews[0]["kind"], "ConversionReview");
        assert_eq!(reviews[0]["request"]["desiredAPIVersion"], "example.com/v2");
        assert!(!reviews[0]["request"]["uid"].as_str().unwrap().is_empty());
        assert_eq!(sent(&reviews), vec![vec!["a"]]);
        // A read at the storage version calls nobody.
        assert_eq!(
            get(&env, &format!("{V1}/a")).await.1["spec"],
            json!({"size": 2})
        );
        assert!(env.hook.take().is_empty());

        // A create at v2 is converted to v1 for storage, and back for the response.
        let (code, b) = post(&env, V2, foo("example.com/v2", "b", json!({"replicas": 3}))).await;
        assert_eq!(code, StatusCode::CREATED, "{b}");
        assert_eq!(b["apiVersion"], "example.com/v2");
        assert_eq!(b["spec"], json!({"replicas": 3}));
        let desired: Vec<Value> = env
            .hook
            .take()
            .iter()
            .map(|r| r["request"]["desiredAPIVersion"].clone())
            .collect();
        assert_eq!(
            desired,
            vec![json!("example.com/v1"), json!("example.com/v2")]
        );
        assert_eq!(
            get(&env, &format!("{V1}/b")).await.1["spec"],
            json!({"size": 3})
        );
        env.hook.take();

        // A list at v2: one review carrying both objects.
        let (_, list) = get(&env, V2).await;
        assert_eq!(list["apiVersion"], "example.com/v2");
        let specs: Vec<Value> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["spec"].clone())
            .collect();
        assert_eq!(specs, vec![json!({"replicas": 2}), json!({"replicas": 3})]);
        assert!(list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "example.com/v2"));
        assert_eq!(sent(&env.hook.take()), vec![vec!["a", "b"]]);

        // A merge patch at v2 patches the v2 object.
        let (code, p) = call(
            &env,
            Method::PATCH,
            &format!("{V2}/a"),
            "application/merge-patch+json",
            json!({"spec": {"replicas": 5}}),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{p}");
        assert_eq!(p["spec"], json!({"replicas": 5}));
        assert_eq!(
            get(&env, &format!("{V1}/a")).await.1["spec"],
            json!({"size": 5})
        );
        // A resourceVersion in the patch is a precondition; a stale one conflicts.
        let (code, st) = call(
            &env,
            Method::PATCH,
            &format!("{V2}/a"),
            "application/merge-patch+json",
            json!({"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 6}}),
        )
        .await;
        assert_eq!(code, StatusCode::CONFLICT, "{st}");
        // JSON patches too.
        let (code, p) = call(
            &env,
            Method::PATCH,
            &format!("{V2}/a"),
            "application/json-patch+json",
            json!([{"op": "replace", "path": "/spec/replicas", "value": 8}]),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{p}");
        assert_eq!(
            get(&env, &format!("{V1}/a")).await.1["spec"],
            json!({"size": 8})
        );
        // Strategic merge patches are not for custom resources: 415, as at the storage version.
        let (code, _) = call(
            &env,
            Method::PATCH,
            &format!("{V2}/a"),
            "application/strategic-merge-patch+json",
            json!({"spec": {"replicas": 9}}),
        )
        .await;
        assert_eq!(code, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        // A PUT at v2 too.
        let mut b2 = get(&env, &format!("{V2}/b")).await.1;
        b2["spec"]["replicas"] = json!(7);
        let (code, put) = call(
            &env,
            Method::PUT,
            &format!("{V2}/b"),
            "application/json",
            b2,
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{put}");
        assert_eq!(
            get(&env, &format!("{V1}/b")).await.1["spec"],
            json!({"size": 7})
        );
        env.hook.take();

        // A watch at v2 sees converted objects.
        let mut w = open_watch(&env, &format!("{V2}?watch=true")).await;
        let evs = w.take(2).await;
        assert!(
            evs.iter()
                .all(|e| e["object"]["apiVersion"] == "example.com/v2"),
            "{evs:?}"
        );
        assert_eq!(evs[0]["object"]["spec"], json!({"replicas": 8}));
        post(&env, V1, foo("example.com/v1", "c", json!({"size": 9}))).await;
        let ev = w.take(1).await;
        assert_eq!(ev[0]["type"], "ADDED");
        assert_eq!(ev[0]["object"]["spec"], json!({"replicas": 9}));
        call(
            &env,
            Method::DELETE,
            &format!("{V1}/c"),
            "application/json",
            Value::Null,
        )
        .await;

        // The storage version moves to v2: the objects stay as they were written, and a
        // list at v2 sends only those not at v2 yet.
        let (_, mut cur) = get(&env, &format!("{CRDS}/foos.example.com")).await;
        cur["spec"] = crd(&env.hook.url, "v2")["spec"].clone();
        let (code, r) = call(
            &env,
            Method::PUT,
            &format!("{CRDS}/foos.example.com"),
            "application/json",
            cur,
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{r}");
        let (code, d) = post(&env, V2, foo("example.com/v2", "d", json!({"replicas": 4}))).await;
        assert_eq!(code, StatusCode::CREATED, "{d}");
        env.hook.take();
        let (_, list) = get(&env, V2).await;
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["a", "b", "d"]);
        assert!(list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "example.com/v2"));
        assert_eq!(sent(&env.hook.take()), vec![vec!["a", "b"]]);
        // All already at v2: no call.
        let (_, only_d) = get(&env, &format!("{V2}?fieldSelector=metadata.name%3Dd")).await;
        assert_eq!(only_d["items"][0]["spec"], json!({"replicas": 4}));
        assert!(env.hook.take().is_empty());
        // And a list at v1 converts everything to v1.
        let (_, list) = get(&env, V1).await;
        assert!(list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "example.com/v1"));
        assert_eq!(sent(&env.hook.take()), vec![vec!["d"]]);
    })
    .await;
}

#[tokio::test]
async fn webhook_failures_surface_as_kube_apiserver_answers_them() {
    // SEMANTICS 13.20
    both(async |env: Env| {
        post(&env, V1, foo("example.com/v1", "a", json!({"size": 1}))).await;

        env.hook.answer(|r| reply(&r["request"]["uid"], json!({"status": "Failure", "message": "nope"}), vec![]));
        let (code, st) = get(&env, &format!("{V2}/a")).await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(st["message"], "conversion webhook for example.com/v1, Kind=Foo failed: nope");
        assert_eq!(st["code"], 500);
        assert!(st.get("reason").is_none_or(|r| r == ""), "{st}");
        // Lists and writes fail the same way; nothing is stored.
        let (code, st) = get(&env, V2).await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(st["message"], "conversion webhook for example.com/v1, Kind=Foo failed: nope");
        let (code, st) = post(&env, V2, foo("example.com/v2", "b", json!({"replicas": 1}))).await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(st["message"], "conversion webhook for example.com/v2, Kind=Foo failed: nope");
        assert_eq!(get(&env, &format!("{V1}/b")).await.0, StatusCode::NOT_FOUND);

        env.hook.answer(|r| reply(&r["request"]["uid"], json!({"status": "Failure"}), vec![]));
        let (_, st) = get(&env, &format!("{V2}/a")).await;
        assert_eq!(st["message"], "conversion webhook for example.com/v1, Kind=Foo failed: response.result.status was 'Failure', not 'Success'");

        env.hook.answer(|r| {
            let mut ok = convert(r);
            ok["response"]["uid"] = json!("other");
            ok
        });
        env.hook.take();
        let (_, st) = get(&env, &format!("{V2}/a")).await;
        let uid = env.hook.take()[0]["request"]["uid"].as_str().unwrap().to_owned();
        assert_eq!(
            st["message"],
            format!("conversion webhook for example.com/v1, Kind=Foo failed: expected response.uid=\"{uid}\", got \"other\"")
        );

        env.hook.answer(|r| {
            let mut ok = convert(r);
            ok["response"]["convertedObjects"][0]["metadata"]["name"] = json!("b");
            ok
        });
        let (_, st) = get(&env, &format!("{V2}/a")).await;
        assert_eq!(st["message"], "conversion webhook for example.com/v1, Kind=Foo returned invalid object: must have the same name: a != b");

        env.hook.answer(|r| {
            let mut ok = convert(r);
            ok["response"]["convertedObjects"] = json!([]);
            ok
        });
        let (_, st) = get(&env, &format!("{V2}/a")).await;
        assert_eq!(st["message"], "conversion webhook for example.com/v1, Kind=Foo returned 0 objects, expected 1");

        // Labels set by the webhook are kept; other metadata is restored.
        env.hook.answer(|r| {
            let mut ok = convert(r);
            let m = &mut ok["response"]["convertedObjects"][0]["metadata"];
            m["labels"] = json!({"converted": "yes"});
            m["resourceVersion"] = json!("12345");
            m["generation"] = json!(99);
            ok
        });
        let (code, got) = get(&env, &format!("{V2}/a")).await;
        assert_eq!(code, StatusCode::OK, "{got}");
        let stored = get(&env, &format!("{V1}/a")).await.1;
        assert_eq!(got["metadata"]["labels"], json!({"converted": "yes"}));
        assert_eq!(got["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"]);
        assert_eq!(got["metadata"]["generation"], stored["metadata"]["generation"]);

        // A watch whose event cannot be converted ends.
        env.hook.answer(|r| reply(&r["request"]["uid"], json!({"status": "Failure", "message": "nope"}), vec![]));
        let w = open_watch(&env, &format!("{V2}?watch=true")).await;
        assert!(w.ends().await, "the watch ends at an event it cannot convert");
    })
    .await;
}

#[tokio::test]
async fn unreachable_webhooks_and_invalid_conversion_settings() {
    // SEMANTICS 13.20
    both(async |env: Env| {
        post(&env, V1, foo("example.com/v1", "a", json!({"size": 1}))).await;
        // A Service reference cannot be reached from memory.
        let (_, mut cur) = get(&env, &format!("{CRDS}/foos.example.com")).await;
        cur["spec"]["conversion"]["webhook"]["clientConfig"] =
            json!({"service": {"namespace": "ns", "name": "conv", "path": "/convert"}});
        let (code, r) = call(&env, Method::PUT, &format!("{CRDS}/foos.example.com"), "application/json", cur.clone()).await;
        assert_eq!(code, StatusCode::OK, "{r}");
        let (code, st) = get(&env, &format!("{V2}/a")).await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            st["message"],
            "conversion webhook for example.com/v1, Kind=Foo failed: the webhook is the service ns/conv:443/convert, which the in-memory API server cannot reach; use clientConfig.url"
        );
        // Both url and service, or neither: 422.
        let mut bad = r.clone();
        bad["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = json!("http://127.0.0.1:1/x");
        let (code, st) = call(&env, Method::PUT, &format!("{CRDS}/foos.example.com"), "application/json", bad).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(st["message"].as_str().unwrap().contains("spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"), "{st}");
        let mut bad = r.clone();
        bad["spec"]["conversion"] = json!({"strategy": "Webhook"});
        let (_, st) = call(&env, Method::PUT, &format!("{CRDS}/foos.example.com"), "application/json", bad).await;
        assert!(st["message"].as_str().unwrap().contains("spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"), "{st}");
        let mut bad = r.clone();
        bad["spec"]["conversion"] = json!({"strategy": "None", "webhook": {"clientConfig": {"url": "http://x"}}});
        let (_, st) = call(&env, Method::PUT, &format!("{CRDS}/foos.example.com"), "application/json", bad).await;
        assert!(st["message"].as_str().unwrap().contains("spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"), "{st}");
        let mut bad = r.clone();
        bad["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v9"]);
        let (_, st) = call(&env, Method::PUT, &format!("{CRDS}/foos.example.com"), "application/json", bad).await;
        assert!(st["message"].as_str().unwrap().contains("must include at least one of v1, v1beta1"), "{st}");
        // A url nobody listens on: the connection error.
        let mut down = r.clone();
        down["spec"]["conversion"]["webhook"]["clientConfig"] = json!({"url": "http://127.0.0.1:1/convert"});
        let (code, r2) = call(&env, Method::PUT, &format!("{CRDS}/foos.example.com"), "application/json", down).await;
        assert_eq!(code, StatusCode::OK, "{r2}");
        let (code, st) = get(&env, &format!("{V2}/a")).await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            st["message"].as_str().unwrap().starts_with("conversion webhook for example.com/v1, Kind=Foo failed: Post \"http://127.0.0.1:1/convert\""),
            "{st}"
        );
    })
    .await;
}

#[tokio::test]
async fn bookmarks_are_not_sent_to_the_webhook() {
    // SEMANTICS 13.19
    both(async |env: Env| {
        post(&env, V1, foo("example.com/v1", "a", json!({"size": 1}))).await;
        env.hook.take();
        let mut w = open_watch(
            &env,
            &format!("{V2}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"),
        )
        .await;
        let evs = w.take(2).await;
        assert_eq!(evs[0]["type"], "ADDED");
        assert_eq!(evs[0]["object"]["spec"], json!({"replicas": 1}));
        assert_eq!(evs[1]["type"], "BOOKMARK");
        assert_eq!(evs[1]["object"]["apiVersion"], "example.com/v2");
        assert_eq!(sent(&env.hook.take()), vec![vec!["a"]], "one review, for the object only");
    })
    .await;
}

struct Watch {
    body: kube::client::Body,
    buf: Vec<u8>,
}

impl Watch {
    async fn take(&mut self, n: usize) -> Vec<Value> {
        let mut out = Vec::new();
        while out.len() < n {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                out.push(serde_json::from_slice(&line).unwrap());
                continue;
            }
            let frame = tokio::time::timeout(Duration::from_secs(5), self.body.frame())
                .await
                .expect("a watch event in time")
                .expect("the watch is still open")
                .unwrap();
            if let Ok(d) = frame.into_data() {
                self.buf.extend_from_slice(&d);
            }
        }
        out
    }

    /// Whether the stream ends (within 5 s) without another event.
    async fn ends(mut self) -> bool {
        loop {
            match tokio::time::timeout(Duration::from_secs(5), self.body.frame()).await {
                Ok(None) | Ok(Some(Err(_))) => return true,
                Ok(Some(Ok(f))) => {
                    if f.into_data().is_ok_and(|d| !d.is_empty()) {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
    }
}

async fn open_watch(env: &Env, path: &str) -> Watch {
    let req = Request::builder()
        .uri(path)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = env.client.send(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    Watch {
        body: resp.into_body(),
        buf: Vec::new(),
    }
}
