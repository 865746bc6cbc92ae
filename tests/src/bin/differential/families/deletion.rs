//! Deletion: finalizers, preconditions, propagation policies and the garbage collector
//! (on the real side, kube-controller-manager's; its answers are polled for).

use std::time::Duration;

use serde_json::{json, Value};

use super::{cms, configmap, pick, poll_both, step, step_each, with, CaseFn};
use crate::case::{Case, Cmp};
use crate::harness::{Pair, Req, Resp, Which};

pub const CASES: &[(&str, CaseFn)] = &[
    ("finalizer holds the object", |p, ns, c| {
        Box::pin(finalizer(p, ns, c))
    }),
    ("preconditions and dryRun", |p, ns, c| {
        Box::pin(preconditions(p, ns, c))
    }),
    ("propagation Background", |p, ns, c| {
        Box::pin(propagation(p, ns, c, "Background"))
    }),
    ("propagation Foreground", |p, ns, c| {
        Box::pin(propagation(p, ns, c, "Foreground"))
    }),
    ("propagation Orphan", |p, ns, c| {
        Box::pin(propagation(p, ns, c, "Orphan"))
    }),
    ("delete collection", |p, ns, c| {
        Box::pin(collection(p, ns, c))
    }),
];

async fn finalizer(p: Pair, ns: String, mut c: Case) -> Case {
    let item = format!("{}/fin", cms(&ns));
    let obj = with(&configmap("fin", json!({})), |o| {
        o["metadata"]["finalizers"] = json!(["example.com/hold"])
    });
    step(&p, &mut c, Req::post(cms(&ns), &obj), Cmp::Body).await;
    step(&p, &mut c, Req::delete(&item), Cmp::Body).await;
    let got = step(&p, &mut c, Req::get(&item), Cmp::Body).await;
    step(&p, &mut c, Req::delete(&item), Cmp::Body).await;
    step_each(
        &p,
        &mut c,
        "adding a finalizer while deleting",
        |w| {
            Req::put(
                &item,
                &with(&pick(w, &got).body, |o| {
                    o["metadata"]["finalizers"] = json!(["example.com/hold", "example.com/new"])
                }),
            )
        },
        Cmp::Body,
    )
    .await;
    step_each(
        &p,
        &mut c,
        "changing data while deleting",
        |w| {
            Req::put(
                &item,
                &with(&pick(w, &got).body, |o| o["data"] = json!({"late": "1"})),
            )
        },
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            &item,
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":null}}"#,
        ),
        Cmp::Body,
    )
    .await;
    step(&p, &mut c, Req::get(&item), Cmp::Body).await;
    c
}

async fn preconditions(p: Pair, ns: String, mut c: Case) -> Case {
    let item = format!("{}/pre", cms(&ns));
    let created = step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("pre", json!({}))),
        Cmp::Body,
    )
    .await;
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}});
    step(
        &p,
        &mut c,
        Req::with_body(http::Method::DELETE, &item, &body),
        Cmp::Outcome,
    )
    .await;
    let stale = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}});
    step(
        &p,
        &mut c,
        Req::with_body(http::Method::DELETE, &item, &stale),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::delete(format!("{item}?dryRun=All")),
        Cmp::Body,
    )
    .await;
    step(&p, &mut c, Req::get(&item), Cmp::Body).await;
    step(
        &p,
        &mut c,
        Req::delete(format!("{item}?gracePeriodSeconds=-5")),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::delete(format!("{item}?propagationPolicy=Sideways")),
        Cmp::Outcome,
    )
    .await;
    step_each(
        &p,
        &mut c,
        "delete with the right uid precondition",
        |w: Which| {
            let uid = pick(w, &created).uid();
            Req::with_body(
                http::Method::DELETE,
                &item,
                &json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}),
            )
        },
        Cmp::Body,
    )
    .await;
    c
}

fn owned(name: &str, owner: &Resp, block: bool) -> Value {
    with(&configmap(name, json!({})), |o| {
        o["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner.body["metadata"]["name"],
            "uid": owner.uid(), "blockOwnerDeletion": block}]);
    })
}

async fn propagation(p: Pair, ns: String, mut c: Case, policy: &'static str) -> Case {
    let owner_item = format!("{}/owner", cms(&ns));
    let owner = step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("owner", json!({}))),
        Cmp::Body,
    )
    .await;
    step_each(
        &p,
        &mut c,
        "a dependent",
        |w| Req::post(cms(&ns), &owned("dep", pick(w, &owner), true)),
        Cmp::Body,
    )
    .await;
    // On the foreground path a finalizer keeps the owner until the dependents are gone.
    if policy == "Foreground" {
        let fin = with(&configmap("dep-held", json!({})), |o| {
            o["metadata"]["finalizers"] = json!(["example.com/hold"])
        });
        let held = Req::post(cms(&ns), &fin);
        let _ = p.both(&held).await;
        step_each(
            &p,
            &mut c,
            "owner reference added to a held dependent",
            |w| {
                let mut o = owned("dep-held", pick(w, &owner), true);
                o["metadata"]["finalizers"] = json!(["example.com/hold"]);
                Req::patch(
                    format!("{}/dep-held", cms(&ns)),
                    "application/merge-patch+json",
                    &json!({"metadata": o["metadata"]}).to_string(),
                )
            },
            Cmp::Outcome,
        )
        .await;
    }
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy});
    step(
        &p,
        &mut c,
        Req::with_body(http::Method::DELETE, &owner_item, &body),
        Cmp::Body,
    )
    .await;
    let dep = Req::get(format!("{}/dep", cms(&ns)));
    let settled = |r: &Resp| match policy {
        "Orphan" => r.ok() && r.body["metadata"]["ownerReferences"].is_null(),
        _ => r.code == 404,
    };
    let (a, b) = poll_both(&p, &dep, Duration::from_secs(60), settled).await;
    c.check(&dep, &a, &b, Cmp::Body);
    if policy == "Foreground" {
        let owner_get = Req::get(&owner_item);
        step(&p, &mut c, owner_get.clone(), Cmp::Body).await;
        let unhold = Req::patch(
            format!("{}/dep-held", cms(&ns)),
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":null}}"#,
        );
        step(&p, &mut c, unhold, Cmp::Outcome).await;
        let (a, b) = poll_both(&p, &owner_get, Duration::from_secs(60), |r| r.code == 404).await;
        c.check(&owner_get, &a, &b, Cmp::Body);
    } else {
        // Orphan: the garbage collector removes the owner's `orphan` finalizer after it
        // has freed the dependents, so the owner goes a moment later: poll for it.
        let owner_get = Req::get(&owner_item);
        let (a, b) = poll_both(&p, &owner_get, Duration::from_secs(60), |r| r.code == 404).await;
        c.check(&owner_get, &a, &b, Cmp::Body);
    }
    c
}

async fn collection(p: Pair, ns: String, mut c: Case) -> Case {
    for (name, tier) in [("c1", "a"), ("c2", "a"), ("c3", "b")] {
        let obj = with(&configmap(name, json!({})), |o| {
            o["metadata"]["labels"] = json!({"tier": tier})
        });
        step(&p, &mut c, Req::post(cms(&ns), &obj), Cmp::Outcome).await;
    }
    step(
        &p,
        &mut c,
        Req::delete(format!("{}?labelSelector=tier%3Da&dryRun=All", cms(&ns))),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::delete(format!("{}?labelSelector=tier%3Da", cms(&ns))),
        Cmp::Body,
    )
    .await;
    step(&p, &mut c, Req::get(cms(&ns)), Cmp::Body).await;
    step(
        &p,
        &mut c,
        Req::delete(format!("{}?labelSelector=%21%21bad", cms(&ns))),
        Cmp::Outcome,
    )
    .await;
    c
}
