//! JSON patch, merge patch, strategic merge patch and server-side apply.

use serde_json::{json, Value};

use super::{cms, configmap, deployment, register_crd, step, widget, widget_crd, widgets, CaseFn};
use crate::case::{Case, Cmp};
use crate::harness::{Pair, Req};

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE: &str = "application/merge-patch+json";
const SMP: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

pub const CASES: &[(&str, CaseFn)] = &[
    ("JSON patch", |p, ns, c| Box::pin(json_patch(p, ns, c))),
    ("merge patch", |p, ns, c| Box::pin(merge_patch(p, ns, c))),
    ("strategic merge: containers and env", |p, ns, c| {
        Box::pin(strategic(p, ns, c))
    }),
    ("patches on a custom resource", |p, ns, c| {
        Box::pin(custom_resource(p, ns, c))
    }),
    (
        "server-side apply: managers, conflicts, force",
        |p, ns, c| Box::pin(apply(p, ns, c)),
    ),
    ("server-side apply: errors", |p, ns, c| {
        Box::pin(apply_errors(p, ns, c))
    }),
];

async fn json_patch(p: Pair, ns: String, mut c: Case) -> Case {
    let item = format!("{}/jp", cms(&ns));
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("jp", json!({"a": "1", "b": "2"}))),
        Cmp::Body,
    )
    .await;
    let ops = [
        r#"[{"op":"add","path":"/data/c","value":"3"},{"op":"replace","path":"/data/a","value":"x"},{"op":"remove","path":"/data/b"}]"#,
        r#"[{"op":"test","path":"/data/a","value":"x"},{"op":"add","path":"/metadata/labels","value":{"t":"1"}}]"#,
        r#"[{"op":"test","path":"/data/a","value":"wrong"}]"#,
        r#"[{"op":"remove","path":"/data/absent"}]"#,
        r#"[{"op":"move","from":"/data/a","path":"/data/moved"},{"op":"copy","from":"/data/c","path":"/data/copied"}]"#,
        r#"[{"op":"frobnicate","path":"/data/a"}]"#,
        r#"{"op":"add"}"#,
        r#"[{"op":"replace","path":"/metadata/name","value":"renamed"}]"#,
        r#"[{"op":"add","path":"/data/n","value":5}]"#,
    ];
    for o in ops {
        let cmp = if o.contains("frobnicate") || o.starts_with('{') {
            Cmp::Outcome
        } else {
            Cmp::Body
        };
        step(&p, &mut c, Req::patch(&item, JSON_PATCH, o), cmp).await;
    }
    step(
        &p,
        &mut c,
        Req::patch(format!("{}/absent", cms(&ns)), JSON_PATCH, ops[0]),
        Cmp::Body,
    )
    .await;
    c
}

async fn merge_patch(p: Pair, ns: String, mut c: Case) -> Case {
    let item = format!("{}/mp", cms(&ns));
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("mp", json!({"a": "1", "b": "2"}))),
        Cmp::Body,
    )
    .await;
    for body in [
        r#"{"data":{"a":null,"c":"3"},"metadata":{"labels":{"x":"y"}}}"#,
        r#"{"metadata":{"labels":null}}"#,
        r#"{"data":null}"#,
        r#"{"metadata":{"resourceVersion":"1"},"data":{"z":"1"}}"#,
        r#"{"kind":"Secret"}"#,
        r#"not json"#,
    ] {
        let cmp = if body.contains("not json") {
            Cmp::Outcome
        } else {
            Cmp::Body
        };
        step(&p, &mut c, Req::patch(&item, MERGE, body), cmp).await;
    }
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{}/absent", cms(&ns)),
            MERGE,
            r#"{"data":{"a":"1"}}"#,
        ),
        Cmp::Body,
    )
    .await;
    c
}

async fn strategic(p: Pair, ns: String, mut c: Case) -> Case {
    let coll = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let item = format!("{coll}/smp");
    step(
        &p,
        &mut c,
        Req::post(&coll, &deployment("smp")),
        Cmp::Project(containers_and_finalizers),
    )
    .await;
    let merged = Cmp::Project(containers_and_finalizers);
    for body in [
        // A new container merges in by name; an existing one keeps its other fields.
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"},{"name":"main","image":"nginx"}]}}}}"#,
        // env merges by name: C appended, A changed in place.
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"main","env":[{"name":"C","value":"3"},{"name":"A","value":"9"}]}]}}}}"#,
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}"#,
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"main","env":[{"name":"B","$patch":"delete"}]}]}}}}"#,
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"main","$setElementOrder/env":[{"name":"C"},{"name":"A"}]}]}}}}"#,
        r#"{"metadata":{"finalizers":["a.example.com/x"]}}"#,
        r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.example.com/x"]}}"#,
        r#"{"spec":{"template":{"spec":{"containers":[{"image":"noname"}]}}}}"#,
        r#"{"spec":{"replicas":"three"}}"#,
    ] {
        step(&p, &mut c, Req::patch(&item, SMP, body), merged.clone()).await;
    }
    // Strategic merge on a ConfigMap: maps merge, null deletes.
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("smpcm", json!({"a": "1"}))),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{}/smpcm", cms(&ns)),
            SMP,
            r#"{"data":{"a":null,"b":"2"}}"#,
        ),
        Cmp::Body,
    )
    .await;
    c
}

/// The containers' names, images and env, and the finalizers: what the strategic merge
/// patches here change, apart from the defaults the servers add.
fn containers_and_finalizers(d: &Value) -> Value {
    let containers: Vec<Value> = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!({"name": c["name"], "image": c["image"], "env": c["env"]}))
        .collect();
    json!({"containers": containers, "finalizers": d["metadata"]["finalizers"]})
}

async fn custom_resource(p: Pair, ns: String, mut c: Case) -> Case {
    if let Err(e) = register_crd(&p, &widget_crd()).await {
        c.fail(e);
        return c;
    }
    let item = format!("{}/pw", widgets(&ns));
    step(
        &p,
        &mut c,
        Req::post(widgets(&ns), &widget("pw", 2)),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(&item, SMP, r#"{"spec":{"size":3}}"#),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(&item, MERGE, r#"{"spec":{"size":11}}"#),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(&item, MERGE, r#"{"spec":{"size":5,"tags":["a","b"]}}"#),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            &item,
            JSON_PATCH,
            r#"[{"op":"add","path":"/spec/tags/-","value":"a"}]"#,
        ),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            &item,
            MERGE,
            r#"{"spec":{"ports":[{"name":"x","port":1},{"name":"x","port":2}]}}"#,
        ),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(&item, MERGE, r#"{"spec":{"color":null}}"#),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(&item, MERGE, r#"{"spec":{"undeclared":1}}"#),
        Cmp::Body,
    )
    .await;
    let apply = format!(
        "apiVersion: {}/v1\nkind: Widget\nmetadata:\n  name: pw\nspec:\n  ports:\n  - name: y\n    port: 7\n",
        super::widget_group()
    );
    step(
        &p,
        &mut c,
        Req::patch(format!("{item}?fieldManager=m1"), APPLY, &apply),
        Cmp::Body,
    )
    .await;
    c
}

async fn apply(p: Pair, ns: String, mut c: Case) -> Case {
    let item = format!("{}/ssa", cms(&ns));
    let doc = |data: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n{data}")
    };
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{item}?fieldManager=alice"),
            APPLY,
            &doc("  a: \"1\"\n  b: \"2\"\n"),
        ),
        Cmp::Full,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{item}?fieldManager=alice"),
            APPLY,
            &doc("  a: \"1\"\n  b: \"2\"\n"),
        ),
        Cmp::Full,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{item}?fieldManager=bob"),
            APPLY,
            &doc("  a: \"other\"\n"),
        ),
        Cmp::Full,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{item}?fieldManager=bob"),
            APPLY,
            &doc("  a: \"1\"\n  c: \"3\"\n"),
        ),
        Cmp::Full,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{item}?fieldManager=bob&force=true"),
            APPLY,
            &doc("  a: \"bob\"\n"),
        ),
        Cmp::Full,
    )
    .await;
    // alice drops b: it goes; a is bob's now.
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{item}?fieldManager=alice"),
            APPLY,
            &doc("  a: \"1\"\n"),
        ),
        Cmp::Full,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(&item, MERGE, r#"{"data":{"a":"merged"}}"#),
        Cmp::Full,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::put(&item, &configmap("ssa", json!({"only": "put"}))),
        Cmp::Full,
    )
    .await;
    step(&p, &mut c, Req::get(&item), Cmp::Full).await;
    c
}

async fn apply_errors(p: Pair, ns: String, mut c: Case) -> Case {
    let item = format!("{}/ssae", cms(&ns));
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssae\ndata:\n  a: \"1\"\n";
    step(&p, &mut c, Req::patch(&item, APPLY, doc), Cmp::Body).await;
    step(
        &p,
        &mut c,
        Req::patch(format!("{item}?fieldManager=m&force=maybe"), APPLY, doc),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{item}?fieldManager=m"),
            APPLY,
            "kind: ConfigMap\nmetadata:\n  name: ssae\n",
        ),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            format!("{item}?fieldManager=m"),
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
        ),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(format!("{item}?fieldManager=m"), APPLY, ": not yaml ["),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(format!("{item}?fieldManager=m&dryRun=All"), APPLY, doc),
        Cmp::Body,
    )
    .await;
    step(&p, &mut c, Req::get(&item), Cmp::Body).await;
    c
}
