//! The families of cases and what they share: a namespace per case on both servers, a
//! case run as its own task (a panic is an error of that case, not of the run), and the
//! steps that send one request to both sides and compare.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{json, Value};

use crate::case::{Case, Cmp};
use crate::harness::{Pair, Req, Resp, Side, Which};

/// What a family needs from the command line.
pub struct Ctx {
    pub real: Side,
    pub crds: String,
    pub crd_limit: Option<usize>,
}

type FamilyFut = Pin<Box<dyn Future<Output = Vec<Case>> + Send>>;

pub struct Family {
    pub name: &'static str,
    pub run: fn(Ctx) -> FamilyFut,
}

/// The families, in the report's order.
pub const ALL: &[Family] = &[
    Family {
        name: "crd-corpus",
        run: |ctx| Box::pin(crate::crd_corpus::run(ctx)),
    },
    Family {
        name: "crud",
        run: |ctx| {
            Box::pin(async move { run_cases(&ctx, "crud", crate::families::crud::CASES).await })
        },
    },
    Family {
        name: "validation",
        run: |ctx| Box::pin(async move { run_cases(&ctx, "validation", validation::CASES).await }),
    },
    Family {
        name: "reads",
        run: |ctx| Box::pin(async move { run_cases(&ctx, "reads", reads::CASES).await }),
    },
    Family {
        name: "patch",
        run: |ctx| Box::pin(async move { run_cases(&ctx, "patch", patch::CASES).await }),
    },
    Family {
        name: "watch",
        run: |ctx| Box::pin(async move { run_cases(&ctx, "watch", crate::watch::CASES).await }),
    },
    Family {
        name: "deletion",
        run: |ctx| Box::pin(async move { run_cases(&ctx, "deletion", deletion::CASES).await }),
    },
    Family {
        name: "lifecycle",
        run: |ctx| Box::pin(async move { run_cases(&ctx, "lifecycle", lifecycle::CASES).await }),
    },
];

/// A case: given both servers and its namespace (present on both), fills in the case.
pub type CaseFn = fn(Pair, String, Case) -> Pin<Box<dyn Future<Output = Case> + Send>>;

/// Runs each case in a fresh namespace of one fresh in-memory server.
pub async fn run_cases(ctx: &Ctx, family: &str, cases: &[(&str, CaseFn)]) -> Vec<Case> {
    let (_server, pair) = match crate::fresh_pair(&ctx.real).await {
        Ok(x) => x,
        Err(e) => {
            let mut c = Case::new(family, "setup");
            c.fail(e);
            return vec![c];
        }
    };
    let mut out = Vec::new();
    for (i, (name, f)) in cases.iter().enumerate() {
        let ns = format!("d-{family}-{i}-{}", crate::run_id());
        let mut c = Case::new(family, *name);
        if let Err(e) = create_namespace(&pair, &ns).await {
            c.fail(e);
            out.push(c);
            continue;
        }
        let task = tokio::spawn(f(pair.clone(), ns.clone(), c.clone()));
        let c = match tokio::time::timeout(Duration::from_secs(180), task).await {
            Ok(Ok(done)) => done,
            Ok(Err(e)) => {
                c.fail(format!("the case panicked: {e}"));
                c
            }
            Err(_) => {
                c.fail("the case took over 180s");
                c
            }
        };
        out.push(c);
        let del = Req::delete(format!("/api/v1/namespaces/{ns}"));
        let _ = pair.both(&del).await;
    }
    out
}

/// Creates `ns` on both servers; fails unless both create it.
pub async fn create_namespace(p: &Pair, ns: &str) -> Result<(), String> {
    let req = Req::post(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    );
    let (a, b) = p.both(&req).await;
    if !a.ok() || !b.ok() {
        return Err(format!(
            "creating namespace {ns}: mem {} / real {}",
            a.summary(),
            b.summary()
        ));
    }
    Ok(())
}

/// Waits until the real server's service-account controller made `default` in `ns`
/// (Pods are refused before).
pub async fn wait_default_sa(p: &Pair, ns: &str) -> Result<(), String> {
    let req = Req::get(format!("/api/v1/namespaces/{ns}/serviceaccounts/default"));
    for _ in 0..120 {
        if p.real.send(&req).await.ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(format!(
        "no default ServiceAccount in {ns} on the real server after 30s"
    ))
}

/// Polls `req` on one side until `done` holds for the answer or `timeout` passes;
/// returns the last answer.
pub async fn poll(side: &Side, req: &Req, timeout: Duration, done: impl Fn(&Resp) -> bool) -> Resp {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let r = side.send(req).await;
        if done(&r) || tokio::time::Instant::now() >= deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls on both sides at once.
pub async fn poll_both(
    p: &Pair,
    req: &Req,
    timeout: Duration,
    done: impl Fn(&Resp) -> bool + Copy,
) -> (Resp, Resp) {
    tokio::join!(
        poll(&p.mem, req, timeout, done),
        poll(&p.real, req, timeout, done)
    )
}

/// Sends `req` to both, compares, returns both answers.
pub async fn step(p: &Pair, c: &mut Case, req: Req, cmp: Cmp) -> (Resp, Resp) {
    let (a, b) = p.both(&req).await;
    c.check(&req, &a, &b, cmp);
    (a, b)
}

/// Sends a request built per side (e.g. carrying that side's resourceVersion),
/// described in the report by `what`.
pub async fn step_each(
    p: &Pair,
    c: &mut Case,
    what: &str,
    build: impl Fn(Which) -> Req,
    cmp: Cmp,
) -> (Resp, Resp) {
    let (rm, rr) = (build(Which::Mem), build(Which::Real));
    let (a, b) = tokio::join!(p.mem.send(&rm), p.real.send(&rr));
    c.check_described(format!("{what}: {}", rm.describe()), &a, &b, cmp);
    (a, b)
}

/// Picks the answer of one side.
pub fn pick(w: Which, pair: &(Resp, Resp)) -> &Resp {
    match w {
        Which::Mem => &pair.0,
        Which::Real => &pair.1,
    }
}

/// `obj` with `f` applied (for per-side update bodies).
pub fn with(obj: &Value, f: impl FnOnce(&mut Value)) -> Value {
    let mut v = obj.clone();
    f(&mut v);
    v
}

/// A ConfigMap; an empty `data` is left out (kube-apiserver drops empty maps when it
/// serializes, the in-memory server keeps them: one case shows that, the rest avoid it).
pub fn configmap(name: &str, data: Value) -> Value {
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    if data.as_object().is_some_and(|m| !m.is_empty()) {
        cm["data"] = data;
    }
    cm
}

pub fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
           "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}})
}

pub fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                                          "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}}}})
}

pub fn service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
           "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}})
}

pub fn cms(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

pub mod crud;
pub mod deletion;
pub mod lifecycle;
pub mod patch;
pub mod reads;
pub mod validation;

/// The group of the suite's own CRD kind (per run, so a rerun never meets a CRD still
/// being deleted).
pub fn widget_group() -> String {
    format!("r{}.diff.kubegen.dev", crate::run_id())
}

/// A small namespaced CRD with constraints, a default and the status subresource.
pub fn widget_crd() -> Value {
    let g = widget_group();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{g}")},
        "spec": {"group": g, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "required": ["size"], "properties": {
                                       "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                       "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                                       "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                                       "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                                                 "items": {"type": "object", "required": ["name"], "properties": {
                                                     "name": {"type": "string"}, "port": {"type": "integer"}}}}}},
                                   "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}
    })
}

pub fn widget(name: &str, size: i64) -> Value {
    json!({"apiVersion": format!("{}/v1", widget_group()), "kind": "Widget",
           "metadata": {"name": name}, "spec": {"size": size}})
}

pub fn widgets(ns: &str) -> String {
    format!("/apis/{}/v1/namespaces/{ns}/widgets", widget_group())
}

/// Creates a CRD on both servers (an existing one is kept) and waits until both serve
/// it; returns the create answers.
pub async fn register_crd(p: &Pair, crd: &Value) -> Result<(Resp, Resp), String> {
    let req = Req::post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd,
    );
    let (a, b) = p.both(&req).await;
    for (side, r) in [("mem", &a), ("real", &b)] {
        if !r.ok() && r.code != 409 {
            return Err(format!("creating the CRD on {side}: {}", r.summary()));
        }
    }
    wait_established(p, crd).await?;
    Ok((a, b))
}

/// Waits until both servers report the CRD Established and serve a list of its kind.
pub async fn wait_established(p: &Pair, crd: &Value) -> Result<(), String> {
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let get = Req::get(format!(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
    ));
    let established = |r: &Resp| {
        r.body["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
    };
    let (a, b) = poll_both(p, &get, Duration::from_secs(60), established).await;
    if !established(&a) || !established(&b) {
        return Err(format!(
            "CRD {name} not established: mem {} / real {}",
            a.summary(),
            b.summary()
        ));
    }
    // Established comes a moment before the handler serves the kind on a real server.
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
    for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
        if v["served"] != true {
            continue;
        }
        let list = Req::get(format!(
            "/apis/{group}/{}/{plural}?limit=1",
            v["name"].as_str().unwrap_or_default()
        ));
        let (a, b) = poll_both(p, &list, Duration::from_secs(30), Resp::ok).await;
        if !a.ok() || !b.ok() {
            return Err(format!(
                "CRD {name} not served: mem {} / real {}",
                a.summary(),
                b.summary()
            ));
        }
    }
    Ok(())
}
