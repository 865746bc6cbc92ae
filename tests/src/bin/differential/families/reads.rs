//! Reads: pagination, selectors, resourceVersion semantics of lists, Table and
//! PartialObjectMetadata responses, the scale subresource.

use serde_json::{json, Value};

use super::{cms, configmap, deployment, pick, step, step_each, with, CaseFn};
use crate::case::{Case, Cmp};
use crate::harness::{Pair, Req, Resp, Which};

pub const CASES: &[(&str, CaseFn)] = &[
    ("pagination", |p, ns, c| Box::pin(pagination(p, ns, c))),
    ("label and field selectors", |p, ns, c| {
        Box::pin(selectors(p, ns, c))
    }),
    ("list resourceVersion semantics", |p, ns, c| {
        Box::pin(list_rv(p, ns, c))
    }),
    ("Table and PartialObjectMetadata", |p, ns, c| {
        Box::pin(as_table(p, ns, c))
    }),
    ("Deployment scale subresource", |p, ns, c| {
        Box::pin(scale(p, ns, c))
    }),
];

async fn seed(p: &Pair, c: &mut Case, ns: &str) {
    for (name, tier) in [
        ("a1", "front"),
        ("a2", "back"),
        ("a3", "front"),
        ("a4", "back"),
        ("a5", "front"),
    ] {
        let obj = with(&configmap(name, json!({"k": name})), |o| {
            o["metadata"]["labels"] = json!({"tier": tier})
        });
        step(p, c, Req::post(cms(ns), &obj), Cmp::Outcome).await;
    }
}

/// The names of a list's items and whether it says there is more.
fn page(r: &Resp) -> Value {
    let names: Vec<&str> = r.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    let more = r.body["metadata"]["continue"]
        .as_str()
        .is_some_and(|c| !c.is_empty());
    json!({"code": r.code, "names": names, "continue": more,
           "remainingItemCount": r.body["metadata"]["remainingItemCount"]})
}

async fn pagination(p: Pair, ns: String, mut c: Case) -> Case {
    seed(&p, &mut c, &ns).await;
    let first = p.both(&Req::get(format!("{}?limit=2", cms(&ns)))).await;
    c.check_values(
        "GET ?limit=2: page 1".into(),
        &page(&first.0),
        &page(&first.1),
    );
    let token = |w: Which| {
        pick(w, &first).body["metadata"]["continue"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let (rm, rr) = (
        Req::get(format!(
            "{}?limit=2&continue={}",
            cms(&ns),
            token(Which::Mem)
        )),
        Req::get(format!(
            "{}?limit=2&continue={}",
            cms(&ns),
            token(Which::Real)
        )),
    );
    let second = tokio::join!(p.mem.send(&rm), p.real.send(&rr));
    // Each side's own token; the report shows neither (they encode per-run names).
    let what = format!("GET {}?limit=2&continue=<token of page 1>", cms(&ns));
    c.check_described(what, &second.0, &second.1, Cmp::Outcome);
    c.check_values(
        "GET ?limit=2&continue=: page 2".into(),
        &page(&second.0),
        &page(&second.1),
    );
    step(
        &p,
        &mut c,
        Req::get(format!("{}?limit=2&continue=garbage", cms(&ns))),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::get(format!("{}?limit=-1", cms(&ns))),
        Cmp::Outcome,
    )
    .await;
    let all = p.both(&Req::get(format!("{}?limit=0", cms(&ns)))).await;
    c.check_values("GET ?limit=0".into(), &page(&all.0), &page(&all.1));
    c
}

async fn selectors(p: Pair, ns: String, mut c: Case) -> Case {
    seed(&p, &mut c, &ns).await;
    for q in [
        "labelSelector=tier%3Dfront",
        "labelSelector=tier%21%3Dfront",
        "labelSelector=tier+in+%28back%29",
        "labelSelector=%21tier",
        "labelSelector=tier",
        "fieldSelector=metadata.name%3Da2",
        "fieldSelector=metadata.name%21%3Da2",
        "fieldSelector=metadata.namespace%3Dnowhere",
    ] {
        let req = Req::get(format!("{}?{q}", cms(&ns)));
        let (a, b) = p.both(&req).await;
        c.check(&req, &a, &b, Cmp::Outcome);
        c.check_values(format!("GET ?{q}: items"), &page(&a), &page(&b));
    }
    for bad in [
        "labelSelector=tier%3D%3D%3D",
        "fieldSelector=data.k%3Da1",
        "labelSelector=Bad+Key%3Dx",
    ] {
        step(
            &p,
            &mut c,
            Req::get(format!("{}?{bad}", cms(&ns))),
            Cmp::Outcome,
        )
        .await;
    }
    c
}

async fn list_rv(p: Pair, ns: String, mut c: Case) -> Case {
    seed(&p, &mut c, &ns).await;
    let now = p.both(&Req::get(cms(&ns))).await;
    let rv = |w: Which| pick(w, &now).rv();
    for m in [
        "",
        "&resourceVersionMatch=NotOlderThan",
        "&resourceVersionMatch=Exact",
    ] {
        let (a, b) = step_each(
            &p,
            &mut c,
            &format!("list at the current RV{m}"),
            |w| Req::get(format!("{}?resourceVersion={}{m}", cms(&ns), rv(w))),
            Cmp::Outcome,
        )
        .await;
        c.check_values(
            format!("list at the current RV{m}: items"),
            &page(&a),
            &page(&b),
        );
    }
    for q in [
        "resourceVersion=0",
        "resourceVersionMatch=Exact",
        "resourceVersion=abc",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "resourceVersionMatch=Sometimes&resourceVersion=1",
    ] {
        let req = Req::get(format!("{}?{q}", cms(&ns)));
        let (a, b) = p.both(&req).await;
        c.check(&req, &a, &b, Cmp::Outcome);
        if a.ok() && b.ok() {
            c.check_values(format!("GET ?{q}: items"), &page(&a), &page(&b));
        }
    }
    c
}

async fn as_table(p: Pair, ns: String, mut c: Case) -> Case {
    seed(&p, &mut c, &ns).await;
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let columns = |r: &Resp| {
        let cols: Vec<&str> = r.body["columnDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d["name"].as_str())
            .collect();
        let rows = r.body["rows"].as_array().map_or(0, Vec::len);
        json!({"code": r.code, "kind": r.body["kind"], "columns": cols, "rows": rows,
               "first cells": r.body["rows"][0]["cells"][0]})
    };
    for path in [
        cms(&ns),
        format!("{}/a1", cms(&ns)),
        format!("/api/v1/namespaces/{ns}/pods"),
        format!("/api/v1/namespaces/{ns}"),
    ] {
        let req = Req::get(&path).accept(table);
        let (a, b) = p.both(&req).await;
        c.check_values(format!("GET {path} as Table"), &columns(&a), &columns(&b));
    }
    let meta = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
    let (a, b) = p.both(&Req::get(cms(&ns)).accept(meta)).await;
    let shape = |r: &Resp| {
        json!({"code": r.code, "kind": r.body["kind"], "apiVersion": r.body["apiVersion"],
                                  "item keys": r.body["items"][0].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>())})
    };
    c.check_values(
        "GET configmaps as PartialObjectMetadataList".into(),
        &shape(&a),
        &shape(&b),
    );
    let single = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
    let req = Req::get(format!("{}/a1", cms(&ns))).accept(single);
    step(&p, &mut c, req, Cmp::Body).await;
    c
}

async fn scale(p: Pair, ns: String, mut c: Case) -> Case {
    let coll = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    step(
        &p,
        &mut c,
        Req::post(&coll, &deployment("sc")),
        Cmp::Outcome,
    )
    .await;
    let got = step(&p, &mut c, Req::get(format!("{coll}/sc/scale")), Cmp::Body).await;
    step_each(
        &p,
        &mut c,
        "PUT scale to 3",
        |w| {
            Req::put(
                format!("{coll}/sc/scale"),
                &with(&pick(w, &got).body, |o| o["spec"]["replicas"] = json!(3)),
            )
        },
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{coll}/sc/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":5}}"#,
        ),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{coll}/sc/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":-1}}"#,
        ),
        Cmp::Outcome,
    )
    .await;
    let (a, b) = p.both(&Req::get(format!("{coll}/sc"))).await;
    c.check_values(
        "the Deployment's replicas after scaling".into(),
        &a.body["spec"]["replicas"],
        &b.body["spec"]["replicas"],
    );
    step(
        &p,
        &mut c,
        Req::get(format!("/api/v1/namespaces/{ns}/configmaps/x/scale")),
        Cmp::Outcome,
    )
    .await;
    c
}
