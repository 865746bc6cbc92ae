//! Create, get, list, update (and a stale update), delete on built-in kinds and a custom
//! resource; 404, 409 AlreadyExists, name validation.

use serde_json::{json, Value};

use super::{
    cms, configmap, deployment, pick, pod, register_crd, service, step, step_each, wait_default_sa,
    widget, widget_crd, widgets, with, CaseFn,
};
use crate::case::{Case, Cmp};
use crate::harness::{Pair, Req};

pub const CASES: &[(&str, CaseFn)] = &[
    ("ConfigMap lifecycle", |p, ns, c| {
        Box::pin(lifecycle(p, ns, c, Kind::ConfigMap))
    }),
    ("Secret lifecycle", |p, ns, c| {
        Box::pin(lifecycle(p, ns, c, Kind::Secret))
    }),
    ("Pod lifecycle", |p, ns, c| {
        Box::pin(lifecycle(p, ns, c, Kind::Pod))
    }),
    ("Service lifecycle", |p, ns, c| {
        Box::pin(lifecycle(p, ns, c, Kind::Service))
    }),
    ("Deployment lifecycle", |p, ns, c| {
        Box::pin(lifecycle(p, ns, c, Kind::Deployment))
    }),
    ("custom resource lifecycle", |p, ns, c| {
        Box::pin(lifecycle(p, ns, c, Kind::Widget))
    }),
    ("create twice: 409 AlreadyExists", |p, ns, c| {
        Box::pin(already_exists(p, ns, c))
    }),
    (
        "names: invalid, too long, missing, generateName",
        |p, ns, c| Box::pin(names(p, ns, c)),
    ),
    ("namespace in the body differs from the path", |p, ns, c| {
        Box::pin(ns_mismatch(p, ns, c))
    }),
    ("unknown resource and missing object", |p, ns, c| {
        Box::pin(not_found(p, ns, c))
    }),
    ("Secret type is immutable", |p, ns, c| {
        Box::pin(secret_type(p, ns, c))
    }),
    ("custom resource status subresource", |p, ns, c| {
        Box::pin(status_subresource(p, ns, c))
    }),
    (
        "full comparison: create, dry-run create, delete",
        |p, ns, c| Box::pin(full(p, ns, c)),
    ),
];

#[derive(Clone, Copy)]
enum Kind {
    ConfigMap,
    Secret,
    Pod,
    Service,
    Deployment,
    Widget,
}

impl Kind {
    fn collection(self, ns: &str) -> String {
        match self {
            Kind::ConfigMap => cms(ns),
            Kind::Secret => format!("/api/v1/namespaces/{ns}/secrets"),
            Kind::Pod => format!("/api/v1/namespaces/{ns}/pods"),
            Kind::Service => format!("/api/v1/namespaces/{ns}/services"),
            Kind::Deployment => format!("/apis/apps/v1/namespaces/{ns}/deployments"),
            Kind::Widget => widgets(ns),
        }
    }

    fn object(self, name: &str) -> Value {
        match self {
            Kind::ConfigMap => configmap(name, json!({"a": "1"})),
            Kind::Secret => {
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                                   "type": "Opaque", "stringData": {"password": "hunter2"}, "data": {"user": "YWRtaW4="}})
            }
            Kind::Pod => pod(name),
            Kind::Service => service(name),
            Kind::Deployment => deployment(name),
            Kind::Widget => widget(name, 3),
        }
    }

    /// A change an update makes.
    fn change(self, obj: &mut Value) {
        match self {
            Kind::ConfigMap => obj["data"]["b"] = json!("2"),
            Kind::Secret => obj["data"]["extra"] = json!("eA=="),
            Kind::Pod => obj["spec"]["containers"][0]["image"] = json!("registry.k8s.io/pause:3.9"),
            Kind::Service => obj["spec"]["ports"][0]["port"] = json!(81),
            Kind::Deployment => obj["spec"]["replicas"] = json!(2),
            Kind::Widget => obj["spec"]["size"] = json!(4),
        }
        obj["metadata"]["labels"]["changed"] = json!("yes");
    }
}

async fn lifecycle(p: Pair, ns: String, mut c: Case, kind: Kind) -> Case {
    if matches!(kind, Kind::Pod) {
        if let Err(e) = wait_default_sa(&p, &ns).await {
            c.fail(e);
            return c;
        }
    }
    if matches!(kind, Kind::Widget) {
        if let Err(e) = register_crd(&p, &widget_crd()).await {
            c.fail(e);
            return c;
        }
    }
    let coll = kind.collection(&ns);
    let name = "one";
    let item = format!("{coll}/{name}");
    let created = step(&p, &mut c, Req::post(&coll, &kind.object(name)), Cmp::Body).await;
    let got = step(&p, &mut c, Req::get(&item), Cmp::Body).await;
    step(&p, &mut c, Req::get(&coll), Cmp::Body).await;
    let updated = step_each(
        &p,
        &mut c,
        "update with the current resourceVersion",
        |w| Req::put(&item, &with(&pick(w, &got).body, |o| kind.change(o))),
        Cmp::Body,
    )
    .await;
    if updated.0.rv() == created.0.rv() || updated.1.rv() == created.1.rv() {
        c.check_values(
            "the update changes metadata.resourceVersion".into(),
            &json!(updated.0.rv() != created.0.rv()),
            &json!(updated.1.rv() != created.1.rv()),
        );
    }
    step_each(
        &p,
        &mut c,
        "update with a stale resourceVersion",
        |w| {
            Req::put(
                &item,
                &with(&pick(w, &created).body, |o| {
                    o["metadata"]["labels"]["stale"] = json!("1")
                }),
            )
        },
        Cmp::Body,
    )
    .await;
    step_each(
        &p,
        &mut c,
        "update without a resourceVersion",
        |w| {
            Req::put(
                &item,
                &with(&pick(w, &updated).body, |o| {
                    if let Some(m) = o["metadata"].as_object_mut() {
                        m.remove("resourceVersion");
                    }
                    o["metadata"]["labels"]["norv"] = json!("1");
                }),
            )
        },
        Cmp::Body,
    )
    .await;
    step(&p, &mut c, Req::delete(&item), Cmp::Body).await;
    step(&p, &mut c, Req::get(&item), Cmp::Body).await;
    step(&p, &mut c, Req::delete(&item), Cmp::Body).await;
    step(&p, &mut c, Req::put(&item, &kind.object(name)), Cmp::Body).await;
    c
}

async fn already_exists(p: Pair, ns: String, mut c: Case) -> Case {
    let req = Req::post(cms(&ns), &configmap("twice", json!({})));
    step(&p, &mut c, req.clone(), Cmp::Body).await;
    step(&p, &mut c, req, Cmp::Body).await;
    c
}

async fn names(p: Pair, ns: String, mut c: Case) -> Case {
    let coll = cms(&ns);
    for name in [
        "Bad_Name",
        "has.dots.ok",
        "-leading-dash",
        &"x".repeat(254),
        &"y".repeat(253),
    ] {
        step(
            &p,
            &mut c,
            Req::post(&coll, &configmap(name, json!({}))),
            Cmp::Body,
        )
        .await;
    }
    let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}});
    step(&p, &mut c, Req::post(&coll, &nameless), Cmp::Body).await;
    let generated =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}});
    step(&p, &mut c, Req::post(&coll, &generated), Cmp::Body).await;
    let bad_gen =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Gen_"}});
    step(&p, &mut c, Req::post(&coll, &bad_gen), Cmp::Body).await;
    // A Service name is a DNS-1035 label: no leading digit, no dots.
    let svc = format!("/api/v1/namespaces/{ns}/services");
    step(&p, &mut c, Req::post(&svc, &service("1abc")), Cmp::Body).await;
    step(&p, &mut c, Req::post(&svc, &service("a.b")), Cmp::Body).await;
    c
}

async fn ns_mismatch(p: Pair, ns: String, mut c: Case) -> Case {
    let obj = with(&configmap("mismatch", json!({})), |o| {
        o["metadata"]["namespace"] = json!("other")
    });
    step(&p, &mut c, Req::post(cms(&ns), &obj), Cmp::Body).await;
    let same = with(&configmap("matching", json!({})), |o| {
        o["metadata"]["namespace"] = json!(ns.clone())
    });
    step(&p, &mut c, Req::post(cms(&ns), &same), Cmp::Body).await;
    // Into a namespace that does not exist.
    step(
        &p,
        &mut c,
        Req::post(cms("d-missing-namespace"), &configmap("x", json!({}))),
        Cmp::Body,
    )
    .await;
    c
}

async fn not_found(p: Pair, ns: String, mut c: Case) -> Case {
    step(
        &p,
        &mut c,
        Req::get(format!("/api/v1/namespaces/{ns}/nothings")),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::get(format!(
            "/apis/nogroup.example.com/v1/namespaces/{ns}/things"
        )),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::get(format!("{}/absent", cms(&ns))),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::delete(format!("{}/absent", cms(&ns))),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::put(
            format!("{}/absent", cms(&ns)),
            &configmap("absent", json!({})),
        ),
        Cmp::Body,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::put(
            format!("{}/absent", cms(&ns)),
            &configmap("other-name", json!({})),
        ),
        Cmp::Body,
    )
    .await;
    c
}

async fn secret_type(p: Pair, ns: String, mut c: Case) -> Case {
    let coll = format!("/api/v1/namespaces/{ns}/secrets");
    let created = step(
        &p,
        &mut c,
        Req::post(&coll, &Kind::Secret.object("typed")),
        Cmp::Body,
    )
    .await;
    step_each(
        &p,
        &mut c,
        "change the type",
        |w| {
            Req::put(
                format!("{coll}/typed"),
                &with(&pick(w, &created).body, |o| {
                    o["type"] = json!("kubernetes.io/tls")
                }),
            )
        },
        Cmp::Body,
    )
    .await;
    let bad = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad-data"}, "data": {"k": "not base64!"}});
    step(&p, &mut c, Req::post(&coll, &bad), Cmp::Outcome).await;
    let tls = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {}});
    step(&p, &mut c, Req::post(&coll, &tls), Cmp::Body).await;
    c
}

async fn status_subresource(p: Pair, ns: String, mut c: Case) -> Case {
    if let Err(e) = register_crd(&p, &widget_crd()).await {
        c.fail(e);
        return c;
    }
    let coll = widgets(&ns);
    let with_status = with(&widget("st", 2), |o| o["status"] = json!({"ready": true}));
    let created = step(&p, &mut c, Req::post(&coll, &with_status), Cmp::Body).await;
    step_each(
        &p,
        &mut c,
        "status update changes status only",
        |w| {
            Req::put(
                format!("{coll}/st/status"),
                &with(&pick(w, &created).body, |o| {
                    o["status"] = json!({"ready": true});
                    o["spec"]["size"] = json!(9);
                }),
            )
        },
        Cmp::Body,
    )
    .await;
    step(&p, &mut c, Req::get(format!("{coll}/st")), Cmp::Body).await;
    step(&p, &mut c, Req::get(format!("{coll}/st/status")), Cmp::Body).await;
    c
}

/// The differences set aside elsewhere ([`crate::case::SET_ASIDE`]), compared in full
/// once.
async fn full(p: Pair, ns: String, mut c: Case) -> Case {
    let item = format!("{}/full", cms(&ns));
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("full", json!({"a": "1"}))),
        Cmp::Full,
    )
    .await;
    let dry = format!("{}?dryRun=All", cms(&ns));
    step(
        &p,
        &mut c,
        Req::post(dry, &configmap("dry", json!({"a": "1"}))),
        Cmp::Full,
    )
    .await;
    step(&p, &mut c, Req::delete(item), Cmp::Full).await;
    c
}
