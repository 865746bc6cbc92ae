//! Validation and defaulting of built-in kinds.

use serde_json::json;

use super::{cms, configmap, deployment, pod, service, step, wait_default_sa, with, CaseFn};
use crate::case::{Case, Cmp};
use crate::harness::{Pair, Req};

pub const CASES: &[(&str, CaseFn)] = &[
    ("Pod with spec {}", |p, ns, c| {
        Box::pin(pod_empty_spec(p, ns, c))
    }),
    ("Pod container errors", |p, ns, c| {
        Box::pin(pod_containers(p, ns, c))
    }),
    ("labels and annotations", |p, ns, c| {
        Box::pin(labels(p, ns, c))
    }),
    ("ConfigMap keys", |p, ns, c| {
        Box::pin(configmap_keys(p, ns, c))
    }),
    ("Deployment selector", |p, ns, c| {
        Box::pin(deployment_selector(p, ns, c))
    }),
    ("kind and apiVersion mismatch", |p, ns, c| {
        Box::pin(kind_mismatch(p, ns, c))
    }),
    ("Pod defaults", |p, ns, c| Box::pin(pod_defaults(p, ns, c))),
    ("Deployment defaults", |p, ns, c| {
        Box::pin(deployment_defaults(p, ns, c))
    }),
    ("Service defaults and validation", |p, ns, c| {
        Box::pin(service_defaults(p, ns, c))
    }),
    ("fieldValidation", |p, ns, c| {
        Box::pin(field_validation(p, ns, c))
    }),
    ("malformed bodies", |p, ns, c| Box::pin(malformed(p, ns, c))),
];

fn pods(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/pods")
}

async fn pod_empty_spec(p: Pair, ns: String, mut c: Case) -> Case {
    let body =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": {}});
    step(&p, &mut c, Req::post(pods(&ns), &body), Cmp::Body).await;
    let no_spec = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nospec"}});
    step(&p, &mut c, Req::post(pods(&ns), &no_spec), Cmp::Body).await;
    c
}

async fn pod_containers(p: Pair, ns: String, mut c: Case) -> Case {
    let variants = [
        ("no image", json!([{"name": "main"}])),
        (
            "duplicate names",
            json!([{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]),
        ),
        (
            "bad container name",
            json!([{"name": "Main_1", "image": "x"}]),
        ),
        (
            "port out of range",
            json!([{"name": "a", "image": "x", "ports": [{"containerPort": 70000}]}]),
        ),
        (
            "bad restartPolicy value",
            json!([{"name": "a", "image": "x", "imagePullPolicy": "Sometimes"}]),
        ),
        (
            "negative resources",
            json!([{"name": "a", "image": "x", "resources": {"limits": {"cpu": "-1"}}}]),
        ),
        (
            "request above limit",
            json!([{"name": "a", "image": "x", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}]),
        ),
    ];
    for (i, (_, containers)) in variants.iter().enumerate() {
        let body = with(&pod(&format!("p{i}")), |o| {
            o["spec"]["containers"] = containers.clone()
        });
        step(&p, &mut c, Req::post(pods(&ns), &body), Cmp::Outcome).await;
    }
    let bad_policy = with(&pod("policy"), |o| {
        o["spec"]["restartPolicy"] = json!("Sometimes")
    });
    step(&p, &mut c, Req::post(pods(&ns), &bad_policy), Cmp::Outcome).await;
    c
}

async fn labels(p: Pair, ns: String, mut c: Case) -> Case {
    let cases = [
        json!({"labels": {"bad key!": "v"}}),
        json!({"labels": {"ok": "bad value!"}}),
        json!({"labels": {"example.com/ok": "v", "Example.com/x": "v"}}),
        json!({"labels": {"k": "v".repeat(64)}}),
        json!({"labels": {"a/b/c": "v"}}),
        json!({"annotations": {"bad key!": "v"}}),
        json!({"labels": {"": "v"}}),
    ];
    for (i, meta) in cases.iter().enumerate() {
        let body = with(&configmap(&format!("l{i}"), json!({})), |o| {
            for (k, v) in meta.as_object().into_iter().flatten() {
                o["metadata"][k] = v.clone();
            }
        });
        step(&p, &mut c, Req::post(cms(&ns), &body), Cmp::Body).await;
    }
    c
}

async fn configmap_keys(p: Pair, ns: String, mut c: Case) -> Case {
    for (i, data) in [
        json!({"bad key": "v"}),
        json!({".": "v"}),
        json!({"..": "v"}),
        json!({"ok.key_-1": "v"}),
    ]
    .iter()
    .enumerate()
    {
        step(
            &p,
            &mut c,
            Req::post(cms(&ns), &configmap(&format!("k{i}"), data.clone())),
            Cmp::Body,
        )
        .await;
    }
    let empty =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "empty"}, "data": {}});
    step(&p, &mut c, Req::post(cms(&ns), &empty), Cmp::Body).await;
    let both = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"},
                      "data": {"a": "1"}, "binaryData": {"a": "MQ=="}});
    step(&p, &mut c, Req::post(cms(&ns), &both), Cmp::Body).await;
    c
}

async fn deployment_selector(p: Pair, ns: String, mut c: Case) -> Case {
    let coll = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let mismatch = with(&deployment("mismatch"), |o| {
        o["spec"]["selector"]["matchLabels"] = json!({"app": "other"})
    });
    step(&p, &mut c, Req::post(&coll, &mismatch), Cmp::Body).await;
    let empty = with(&deployment("empty-sel"), |o| {
        o["spec"]["selector"] = json!({})
    });
    step(&p, &mut c, Req::post(&coll, &empty), Cmp::Outcome).await;
    let missing = with(&deployment("no-sel"), |o| {
        if let Some(s) = o["spec"].as_object_mut() {
            s.remove("selector");
        }
    });
    step(&p, &mut c, Req::post(&coll, &missing), Cmp::Outcome).await;
    let negative = with(&deployment("neg"), |o| o["spec"]["replicas"] = json!(-1));
    step(&p, &mut c, Req::post(&coll, &negative), Cmp::Outcome).await;
    let bad_op = with(
        &deployment("badop"),
        |o| o["spec"]["selector"] = json!({"matchLabels": {"app": "badop"}, "matchExpressions": [{"key": "x", "operator": "Sometimes"}]}),
    );
    step(&p, &mut c, Req::post(&coll, &bad_op), Cmp::Outcome).await;
    c
}

async fn kind_mismatch(p: Pair, ns: String, mut c: Case) -> Case {
    let secret =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}});
    step(&p, &mut c, Req::post(cms(&ns), &secret), Cmp::Body).await;
    let wrong_version =
        json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "v"}});
    step(&p, &mut c, Req::post(cms(&ns), &wrong_version), Cmp::Body).await;
    let no_kind = json!({"metadata": {"name": "nokind"}, "data": {}});
    step(&p, &mut c, Req::post(cms(&ns), &no_kind), Cmp::Body).await;
    let dep = deployment("d");
    step(
        &p,
        &mut c,
        Req::post(format!("/apis/apps/v1/namespaces/{ns}/replicasets"), &dep),
        Cmp::Body,
    )
    .await;
    c
}

async fn pod_defaults(p: Pair, ns: String, mut c: Case) -> Case {
    if let Err(e) = wait_default_sa(&p, &ns).await {
        c.fail(e);
        return c;
    }
    let full = with(&pod("full"), |o| {
        o["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80}]);
        o["spec"]["containers"][0]["livenessProbe"] = json!({"httpGet": {"port": 80}});
        o["spec"]["containers"][0]["env"] =
            json!([{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]);
        o["spec"]["volumes"] =
            json!([{"name": "cfg", "configMap": {"name": "x"}}, {"name": "e", "emptyDir": {}}]);
        o["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "cfg", "mountPath": "/cfg"}]);
    });
    step(&p, &mut c, Req::post(pods(&ns), &pod("minimal")), Cmp::Body).await;
    step(&p, &mut c, Req::post(pods(&ns), &full), Cmp::Body).await;
    c
}

async fn deployment_defaults(p: Pair, ns: String, mut c: Case) -> Case {
    let coll = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let minimal = with(&deployment("minimal"), |o| {
        if let Some(s) = o["spec"].as_object_mut() {
            s.remove("replicas");
        }
    });
    step(&p, &mut c, Req::post(&coll, &minimal), Cmp::Body).await;
    let recreate = with(&deployment("recreate"), |o| {
        o["spec"]["strategy"] = json!({"type": "Recreate"})
    });
    step(&p, &mut c, Req::post(&coll, &recreate), Cmp::Body).await;
    let both = with(&deployment("recreate-bad"), |o| {
        o["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}})
    });
    step(&p, &mut c, Req::post(&coll, &both), Cmp::Outcome).await;
    c
}

async fn service_defaults(p: Pair, ns: String, mut c: Case) -> Case {
    let coll = format!("/api/v1/namespaces/{ns}/services");
    step(&p, &mut c, Req::post(&coll, &service("plain")), Cmp::Body).await;
    let headless = with(&service("headless"), |o| {
        o["spec"]["clusterIP"] = json!("None")
    });
    step(&p, &mut c, Req::post(&coll, &headless), Cmp::Body).await;
    let ext = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"},
                     "spec": {"type": "ExternalName", "externalName": "example.com"}});
    step(&p, &mut c, Req::post(&coll, &ext), Cmp::Body).await;
    let no_ports = with(&service("noports"), |o| o["spec"]["ports"] = json!([]));
    step(&p, &mut c, Req::post(&coll, &no_ports), Cmp::Outcome).await;
    let bad_port = with(&service("badport"), |o| {
        o["spec"]["ports"] = json!([{"port": 0}])
    });
    step(&p, &mut c, Req::post(&coll, &bad_port), Cmp::Outcome).await;
    let two_unnamed = with(&service("twounnamed"), |o| {
        o["spec"]["ports"] = json!([{"port": 80}, {"port": 81}])
    });
    step(&p, &mut c, Req::post(&coll, &two_unnamed), Cmp::Outcome).await;
    let bad_type = with(&service("badtype"), |o| o["spec"]["type"] = json!("Magic"));
    step(&p, &mut c, Req::post(&coll, &bad_type), Cmp::Outcome).await;
    c
}

async fn field_validation(p: Pair, ns: String, mut c: Case) -> Case {
    let body = with(&configmap("fv", json!({})), |o| {
        o["unknownField"] = json!(1)
    });
    for (i, mode) in ["Strict", "Warn", "Ignore", "Bogus"].iter().enumerate() {
        let b = with(&body, |o| o["metadata"]["name"] = json!(format!("fv{i}")));
        step(
            &p,
            &mut c,
            Req::post(format!("{}?fieldValidation={mode}", cms(&ns)), &b),
            Cmp::Body,
        )
        .await;
    }
    let dup = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dupkey"},"data":{"a":"1","a":"2"}}"#;
    let mut req = Req::patch(
        format!("{}?fieldValidation=Strict", cms(&ns)),
        "application/json",
        dup,
    );
    req.method = http::Method::POST;
    step(&p, &mut c, req, Cmp::Outcome).await;
    c
}

async fn malformed(p: Pair, ns: String, mut c: Case) -> Case {
    let mut req = Req::patch(cms(&ns), "application/json", "{not json");
    req.method = http::Method::POST;
    step(&p, &mut c, req.clone(), Cmp::Outcome).await;
    req.body = Some(b"[1,2]".to_vec());
    step(&p, &mut c, req.clone(), Cmp::Outcome).await;
    req.content_type = "text/plain".into();
    step(&p, &mut c, req, Cmp::Outcome).await;
    let wrong_type = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wt"}, "data": {"a": 1}});
    step(&p, &mut c, Req::post(cms(&ns), &wrong_type), Cmp::Outcome).await;
    c
}
