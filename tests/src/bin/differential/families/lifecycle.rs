//! Namespace and CRD lifecycle, discovery, OpenAPI.

use std::time::Duration;

use serde_json::{json, Value};

use super::{cms, configmap, poll_both, register_crd, step, widget, widget_crd, CaseFn};
use crate::case::{Case, Cmp};
use crate::harness::{Pair, Req, Resp};

pub const CASES: &[(&str, CaseFn)] = &[
    ("namespace deletion", |p, ns, c| {
        Box::pin(namespace(p, ns, c))
    }),
    ("protected and invalid namespaces", |p, ns, c| {
        Box::pin(namespaces_special(p, ns, c))
    }),
    ("CRD deletion takes its objects", |p, ns, c| {
        Box::pin(crd_lifecycle(p, ns, c))
    }),
    ("CRD validation", |p, ns, c| Box::pin(crd_invalid(p, ns, c))),
    ("discovery /api and /apis", |p, ns, c| {
        Box::pin(discovery(p, ns, c))
    }),
    ("aggregated discovery", |p, ns, c| {
        Box::pin(aggregated(p, ns, c))
    }),
    ("OpenAPI v2 and v3", |p, ns, c| Box::pin(openapi(p, ns, c))),
];

async fn namespace(p: Pair, _ns: String, mut c: Case) -> Case {
    let ns = format!("d-lifecycle-doomed-{}", crate::run_id());
    if let Err(e) = super::create_namespace(&p, &ns).await {
        c.fail(e);
        return c;
    }
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("inside", json!({}))),
        Cmp::Outcome,
    )
    .await;
    let del = Req::delete(format!("/api/v1/namespaces/{ns}"));
    step(&p, &mut c, del.clone(), Cmp::Body).await;
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("late", json!({}))),
        Cmp::Outcome,
    )
    .await;
    step(&p, &mut c, del, Cmp::Body).await;
    let get = Req::get(format!("/api/v1/namespaces/{ns}"));
    let (a, b) = poll_both(&p, &get, Duration::from_secs(90), |r| r.code == 404).await;
    c.check(&get, &a, &b, Cmp::Body);
    c
}

async fn namespaces_special(p: Pair, _ns: String, mut c: Case) -> Case {
    step(
        &p,
        &mut c,
        Req::delete("/api/v1/namespaces/kube-system"),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::delete("/api/v1/namespaces/default"),
        Cmp::Outcome,
    )
    .await;
    for name in ["Bad_NS", "has.dot", &"n".repeat(64)] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        step(
            &p,
            &mut c,
            Req::post("/api/v1/namespaces", &body),
            Cmp::Body,
        )
        .await;
    }
    step(
        &p,
        &mut c,
        Req::get("/api/v1/namespaces/default"),
        Cmp::Outcome,
    )
    .await;
    c
}

async fn crd_lifecycle(p: Pair, ns: String, mut c: Case) -> Case {
    let mut crd = widget_crd();
    let g = format!("life.{}", super::widget_group());
    crd["metadata"]["name"] = json!(format!("widgets.{g}"));
    crd["spec"]["group"] = json!(g.clone());
    if let Err(e) = register_crd(&p, &crd).await {
        c.fail(e);
        return c;
    }
    let coll = format!("/apis/{g}/v1/namespaces/{ns}/widgets");
    let mut obj = widget("w", 1);
    obj["apiVersion"] = json!(format!("{g}/v1"));
    step(&p, &mut c, Req::post(&coll, &obj), Cmp::Body).await;
    let crd_item = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{g}");
    step(&p, &mut c, Req::delete(&crd_item), Cmp::Outcome).await;
    let (a, b) = poll_both(&p, &Req::get(&crd_item), Duration::from_secs(60), |r| {
        r.code == 404
    })
    .await;
    c.check(&Req::get(&crd_item), &a, &b, Cmp::Outcome);
    step(&p, &mut c, Req::get(&coll), Cmp::Outcome).await;
    c
}

/// A change that makes a CRD invalid.
type CrdEdit = fn(&mut Value);

async fn crd_invalid(p: Pair, _ns: String, mut c: Case) -> Case {
    let base = widget_crd();
    let coll = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let g = super::widget_group();
    let mutations: Vec<(&str, CrdEdit)> = vec![
        ("name not plural.group", |o| {
            o["metadata"]["name"] = json!("wrong.example.com")
        }),
        ("no storage version", |o| {
            o["spec"]["versions"][0]["storage"] = json!(false)
        }),
        ("non-structural schema", |o| {
            o["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["properties"]["size"] = json!({})
        }),
        ("bad scope", |o| o["spec"]["scope"] = json!("Galaxy")),
        ("uppercase plural", |o| {
            o["spec"]["names"]["plural"] = json!("Widgets");
            let g = o["spec"]["group"].as_str().unwrap_or_default().to_owned();
            o["metadata"]["name"] = json!(format!("Widgets.{g}"));
        }),
        ("default violates the schema", |o| {
            o["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["properties"]["color"]["default"] = json!("green")
        }),
        ("invalid CEL rule", |o| {
            o["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["x-kubernetes-validations"] = json!([{"rule": "self.size >"}])
        }),
        ("list-map keys missing", |o| {
            o["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["properties"]["ports"]["x-kubernetes-list-map-keys"] = json!([])
        }),
    ];
    for (i, (label, m)) in mutations.iter().enumerate() {
        let mut crd = base.clone();
        crd["metadata"]["name"] = json!(format!("widgets.bad{i}.{g}"));
        crd["spec"]["group"] = json!(format!("bad{i}.{g}"));
        m(&mut crd);
        let req = Req::post(format!("{coll}?dryRun=All"), &crd);
        let (a, b) = p.both(&req).await;
        c.check_described(
            format!("{label}: POST {coll}?dryRun=All"),
            &a,
            &b,
            Cmp::Outcome,
        );
    }
    c
}

fn names(r: &Resp, list: &str, key: &str) -> Value {
    let mut v: Vec<String> = r.body[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g[key].as_str().map(str::to_owned))
        .collect();
    v.sort();
    json!(v)
}

async fn discovery(p: Pair, _ns: String, mut c: Case) -> Case {
    let (a, b) = p.both(&Req::get("/api")).await;
    c.check(&Req::get("/api"), &a, &b, Cmp::Outcome);
    c.check_values(
        "GET /api: versions".into(),
        &a.body["versions"],
        &b.body["versions"],
    );
    let (a, b) = p.both(&Req::get("/apis")).await;
    c.check(&Req::get("/apis"), &a, &b, Cmp::Outcome);
    c.check_values(
        "GET /apis: group names".into(),
        &names(&a, "groups", "name"),
        &names(&b, "groups", "name"),
    );
    for path in ["/api/v1", "/apis/apps/v1", "/apis/batch/v1"] {
        let (a, b) = p.both(&Req::get(path)).await;
        c.check(&Req::get(path), &a, &b, Cmp::Outcome);
        c.check_values(
            format!("GET {path}: resource names"),
            &names(&a, "resources", "name"),
            &names(&b, "resources", "name"),
        );
    }
    step(&p, &mut c, Req::get("/apis/apps"), Cmp::Body).await;
    step(
        &p,
        &mut c,
        Req::get("/apis/nonexistent.example.com/v1"),
        Cmp::Outcome,
    )
    .await;
    c
}

async fn aggregated(p: Pair, _ns: String, mut c: Case) -> Case {
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;q=0.9";
    for path in ["/api", "/apis"] {
        let req = Req::get(path).accept(accept);
        let (a, b) = p.both(&req).await;
        c.check(&req, &a, &b, Cmp::Outcome);
        c.check_values(
            format!("GET {path} (aggregated): kind and apiVersion"),
            &json!([a.body["kind"], a.body["apiVersion"]]),
            &json!([b.body["kind"], b.body["apiVersion"]]),
        );
        c.check_values(
            format!("GET {path} (aggregated): group names"),
            &names(&a, "items", "metadata"),
            &names(&b, "items", "metadata"),
        );
    }
    c
}

async fn openapi(p: Pair, _ns: String, mut c: Case) -> Case {
    let (a, b) = p.both(&Req::get("/openapi/v2")).await;
    c.check(&Req::get("/openapi/v2"), &a, &b, Cmp::Outcome);
    c.check_values(
        "GET /openapi/v2: swagger and a ConfigMap definition".into(),
        &json!([
            a.body["swagger"],
            a.body["definitions"]["io.k8s.api.core.v1.ConfigMap"].is_object()
        ]),
        &json!([
            b.body["swagger"],
            b.body["definitions"]["io.k8s.api.core.v1.ConfigMap"].is_object()
        ]),
    );
    let (a, b) = p.both(&Req::get("/openapi/v3")).await;
    c.check(&Req::get("/openapi/v3"), &a, &b, Cmp::Outcome);
    let has = |r: &Resp| json!(["api/v1", "apis/apps/v1"].map(|k| r.body["paths"][k].is_object()));
    c.check_values(
        "GET /openapi/v3: api/v1 and apis/apps/v1 listed".into(),
        &has(&a),
        &has(&b),
    );
    let (a, b) = p.both(&Req::get("/openapi/v3/apis/apps/v1")).await;
    c.check(&Req::get("/openapi/v3/apis/apps/v1"), &a, &b, Cmp::Outcome);
    c.check_values(
        "GET /openapi/v3/apis/apps/v1: a Deployment schema".into(),
        &json!(a.body["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"].is_object()),
        &json!(b.body["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"].is_object()),
    );
    if let Err(e) = register_crd(&p, &widget_crd()).await {
        c.fail(e);
        return c;
    }
    let path = format!("/openapi/v3/apis/{}/v1", super::widget_group());
    let (a, b) = super::poll_both(&p, &Req::get(&path), Duration::from_secs(30), Resp::ok).await;
    c.check(&Req::get(&path), &a, &b, Cmp::Outcome);
    c
}
