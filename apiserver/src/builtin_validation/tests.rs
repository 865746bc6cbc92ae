use super::*;
use serde_json::json;

fn reg(group: &str, kind: &str) -> Registration {
    Registration::new(group, "v1", &format!("{}s", kind.to_lowercase()), kind)
}

/// The (field, reason) of each cause, sorted.
fn check(group: &str, kind: &str, obj: Value, prev: Option<Value>) -> Vec<(String, String)> {
    let r = reg(group, kind);
    let prev = prev.as_ref().and_then(Value::as_object);
    let mut got: Vec<(String, String)> = causes(&r, obj.as_object().unwrap(), prev)
        .into_iter()
        .map(|c| (c.field, c.reason))
        .collect();
    got.sort();
    got
}

fn pair(f: &str, r: &str) -> (String, String) {
    (f.to_owned(), r.to_owned())
}

#[test]
fn labels_and_annotations_of_every_kind() {
    let cm = |meta: Value| json!({"metadata": meta});
    for labels in [
        json!({"bad key!": "v"}),
        json!({"ok": "bad value!"}),
        json!({"Example.com/x": "v"}),
        json!({"k": "v".repeat(64)}),
        json!({"a/b/c": "v"}),
        json!({"": "v"}),
    ] {
        assert_eq!(
            check("", "ConfigMap", cm(json!({"labels": labels})), None),
            vec![pair("metadata.labels", "FieldValueInvalid")],
            "{labels}"
        );
    }
    let ok = json!({"labels": {"example.com/app": "web", "tier": ""},
        "annotations": {"Example.com/Note": "anything at all!"}});
    assert!(check("", "ConfigMap", cm(ok), None).is_empty());
    assert_eq!(
        check(
            "",
            "ConfigMap",
            cm(json!({"annotations": {"bad key!": "v"}})),
            None
        ),
        vec![pair("metadata.annotations", "FieldValueInvalid")]
    );
    let big = json!({"annotations": {"a": "x".repeat(256 * 1024)}});
    assert_eq!(
        check("", "ConfigMap", cm(big), None),
        vec![pair("metadata.annotations", "FieldValueTooLong")]
    );
    let mut custom = Registration::new("example.com", "v1", "foos", "Foo");
    custom.custom = true;
    let bad = json!({"metadata": {"labels": {"bad key!": "v"}}, "spec": {}});
    assert_eq!(causes(&custom, bad.as_object().unwrap(), None).len(), 1);
}

#[test]
fn config_map_and_secret_keys() {
    for key in ["bad key", ".", "..", "..x"] {
        let obj = json!({"data": {key: "v"}});
        assert_eq!(
            check("", "ConfigMap", obj.clone(), None),
            vec![pair(&format!("data[{key}]"), "FieldValueInvalid")]
        );
        assert_eq!(
            check("", "Secret", obj, None),
            vec![pair(&format!("data[{key}]"), "FieldValueInvalid")]
        );
    }
    let dup = json!({"data": {"a": "1"}, "binaryData": {"a": "MQ=="}});
    assert_eq!(
        check("", "ConfigMap", dup, None),
        vec![pair("data[a]", "FieldValueInvalid")]
    );
    assert!(check("", "ConfigMap", json!({"data": {"a.b-c_D": "1"}}), None).is_empty());
}

#[test]
fn pod_spec_rules() {
    let pod = |spec: Value| json!({"metadata": {"name": "p"}, "spec": spec});
    assert_eq!(
        check("", "Pod", pod(json!({})), None),
        vec![pair("spec.containers", "FieldValueRequired")]
    );
    assert_eq!(
        check("", "Pod", json!({"metadata": {"name": "p"}}), None),
        vec![pair("spec.containers", "FieldValueRequired")]
    );
    let cases = [
        (
            json!([{"name": "main"}]),
            pair("spec.containers[0].image", "FieldValueRequired"),
        ),
        (
            json!([{"image": "x", "name": "a"}, {"image": "y", "name": "a"}]),
            pair("spec.containers[1].name", "FieldValueDuplicate"),
        ),
        (
            json!([{"image": "x", "name": "Main_1"}]),
            pair("spec.containers[0].name", "FieldValueInvalid"),
        ),
        (
            json!([{"image": "x", "name": "a", "ports": [{"containerPort": 70000}]}]),
            pair(
                "spec.containers[0].ports[0].containerPort",
                "FieldValueInvalid",
            ),
        ),
        (
            json!([{"image": "x", "name": "a", "imagePullPolicy": "Sometimes"}]),
            pair(
                "spec.containers[0].imagePullPolicy",
                "FieldValueNotSupported",
            ),
        ),
    ];
    for (containers, want) in cases {
        assert_eq!(
            check("", "Pod", pod(json!({"containers": containers})), None),
            vec![want]
        );
    }
    let policy = json!({"containers": [{"image": "x", "name": "a"}], "restartPolicy": "Sometimes"});
    assert_eq!(
        check("", "Pod", pod(policy), None),
        vec![pair("spec.restartPolicy", "FieldValueNotSupported")]
    );
    let ok = json!({"containers": [{"image": "x", "name": "a", "ports": [{"containerPort": 80}]}],
        "initContainers": [{"image": "y", "name": "init"}], "restartPolicy": "Never"});
    assert!(check("", "Pod", pod(ok), None).is_empty());
}

fn deployment(selector: Option<Value>, labels: Value, replicas: i64) -> Value {
    let mut spec = json!({"replicas": replicas, "template": {"metadata": {"labels": labels},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]}}});
    if let Some(s) = selector {
        spec["selector"] = s;
    }
    json!({"metadata": {"name": "d"}, "spec": spec})
}

#[test]
fn workload_selectors_and_replicas() {
    let app = |v: &str| json!({"app": v});
    let ok = deployment(Some(json!({"matchLabels": app("x")})), app("x"), 1);
    assert!(check("apps", "Deployment", ok.clone(), None).is_empty());
    assert_eq!(
        check(
            "apps",
            "Deployment",
            deployment(Some(json!({"matchLabels": app("y")})), app("x"), 1),
            None
        ),
        vec![pair("spec.template.metadata.labels", "FieldValueInvalid")]
    );
    assert_eq!(
        check(
            "apps",
            "Deployment",
            deployment(Some(json!({})), app("x"), 1),
            None
        ),
        vec![pair("spec.selector", "FieldValueInvalid")]
    );
    assert_eq!(
        check("apps", "ReplicaSet", deployment(None, app("x"), 1), None),
        vec![
            pair("spec.selector", "FieldValueRequired"),
            pair("spec.template.metadata.labels", "FieldValueInvalid")
        ]
    );
    assert_eq!(
        check(
            "apps",
            "StatefulSet",
            deployment(Some(json!({"matchLabels": app("x")})), app("x"), -1),
            None
        ),
        vec![pair("spec.replicas", "FieldValueInvalid")]
    );
    let badop = json!({"matchLabels": app("x"), "matchExpressions": [{"key": "x", "operator": "Sometimes"}]});
    assert_eq!(
        check(
            "apps",
            "Deployment",
            deployment(Some(badop), app("x"), 1),
            None
        ),
        vec![
            pair("spec.selector", "FieldValueInvalid"),
            pair(
                "spec.selector.matchExpressions[0].operator",
                "FieldValueInvalid"
            )
        ]
    );
    let exprs = json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "z"]},
        {"key": "gone", "operator": "DoesNotExist"}]});
    assert!(check(
        "apps",
        "DaemonSet",
        deployment(Some(exprs), app("x"), 1),
        None
    )
    .is_empty());
    let moved = deployment(
        Some(json!({"matchLabels": {"app": "x", "v": "2"}})),
        json!({"app": "x", "v": "2"}),
        1,
    );
    assert_eq!(
        check("apps", "Deployment", moved, Some(ok)),
        vec![pair("spec.selector", "FieldValueInvalid")]
    );
    let job = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}});
    assert_eq!(
        check("batch", "Job", job, None),
        vec![pair(
            "spec.template.spec.containers[0].image",
            "FieldValueRequired"
        )]
    );
}

#[test]
fn service_ports_and_type() {
    let svc = |spec: Value| json!({"metadata": {"name": "s"}, "spec": spec});
    assert!(check(
        "",
        "Service",
        svc(json!({"ports": [{"port": 80, "targetPort": 8080}]})),
        None
    )
    .is_empty());
    assert!(check(
        "",
        "Service",
        svc(json!({"type": "ExternalName", "externalName": "x.io"})),
        None
    )
    .is_empty());
    assert_eq!(
        check("", "Service", svc(json!({"ports": []})), None),
        vec![pair("spec.ports", "FieldValueRequired")]
    );
    assert_eq!(
        check("", "Service", svc(json!({"ports": [{"port": 0}]})), None),
        vec![
            pair("spec.ports[0].port", "FieldValueInvalid"),
            pair("spec.ports[0].targetPort", "FieldValueInvalid")
        ]
    );
    assert_eq!(
        check(
            "",
            "Service",
            svc(json!({"ports": [{"port": 80}, {"port": 81}]})),
            None
        ),
        vec![
            pair("spec.ports[0].name", "FieldValueRequired"),
            pair("spec.ports[1].name", "FieldValueRequired")
        ]
    );
    assert_eq!(
        check(
            "",
            "Service",
            svc(json!({"ports": [{"port": 80}], "type": "Magic"})),
            None
        ),
        vec![pair("spec.type", "FieldValueNotSupported")]
    );
}

#[test]
fn secrets_services_and_strategies() {
    let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}});
    assert_eq!(
        check("", "Secret", tls, None),
        vec![pair("data[tls.key]", "FieldValueRequired")]
    );
    let opaque = json!({"data": {"a": "eA=="}});
    let retyped = json!({"type": "example.com/x", "data": {"a": "eA=="}});
    assert_eq!(
        check("", "Secret", retyped, Some(opaque)),
        vec![pair("type", "FieldValueInvalid")]
    );
    let svc = |name: &str| json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}});
    assert!(check("", "Service", svc("web-1"), None).is_empty());
    assert!(check("", "Service", svc("1web"), None).is_empty());
    assert_eq!(
        check("", "Service", svc("web.example"), None),
        vec![pair("metadata.name", "FieldValueInvalid")]
    );
    let bad_target = json!({"spec": {"ports": [{"port": 80, "targetPort": 70000}]}});
    assert_eq!(
        check("", "Service", bad_target, None),
        vec![pair("spec.ports[0].targetPort", "FieldValueInvalid")]
    );
    let mut recreate = deployment(
        Some(json!({"matchLabels": {"app": "x"}})),
        json!({"app": "x"}),
        1,
    );
    recreate["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}});
    assert_eq!(
        check("apps", "Deployment", recreate, None),
        vec![pair("spec.strategy.rollingUpdate", "FieldValueForbidden")]
    );
}
