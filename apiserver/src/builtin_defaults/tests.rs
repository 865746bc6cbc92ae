use super::*;

fn reg(group: &str, kind: &str) -> Registration {
    Registration::new(group, "v1", &format!("{}s", kind.to_lowercase()), kind)
}

fn defaulted(group: &str, kind: &str, obj: Value) -> Value {
    let mut m = obj.as_object().cloned().unwrap();
    apply(&reg(group, kind), &mut m, None);
    Value::Object(m)
}

fn container() -> Value {
    json!({"image": "nginx", "imagePullPolicy": "Always", "name": "main", "resources": {},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
}

fn template_spec() -> Value {
    json!({"containers": [container()], "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
        "schedulerName": "default-scheduler", "securityContext": {},
        "terminationGracePeriodSeconds": 30})
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"image": "nginx", "name": "main"}]}})
}

/// Deployment, StatefulSet and DaemonSet defaults, as kube-apiserver 1.36.3 answered a
/// dry-run create of the same objects.
#[test]
fn workloads_get_kube_apiservers_defaults() {
    let sel = json!({"matchLabels": {"app": "x"}});
    let mut want_template = template();
    want_template["spec"] = template_spec();
    let d = defaulted(
        "apps",
        "Deployment",
        json!({"spec": {"selector": sel, "template": template()}}),
    );
    assert_eq!(
        d["spec"],
        json!({"progressDeadlineSeconds": 600, "replicas": 1, "revisionHistoryLimit": 10,
            "selector": sel, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            "type": "RollingUpdate"}, "template": want_template})
    );
    let s = defaulted(
        "apps",
        "StatefulSet",
        json!({"spec": {"selector": sel, "template": template()}}),
    );
    assert_eq!(
        s["spec"],
        json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "podManagementPolicy": "OrderedReady", "replicas": 1, "revisionHistoryLimit": 10,
            "selector": sel, "serviceName": "", "template": want_template,
            "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"}})
    );
    let ds = defaulted(
        "apps",
        "DaemonSet",
        json!({"spec": {"selector": sel, "template": template()}}),
    );
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "type": "RollingUpdate"})
    );
    let recreate = defaulted(
        "apps",
        "Deployment",
        json!({"spec": {"strategy": {"type": "Recreate"}}}),
    );
    assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn a_new_pod_gets_defaults_and_what_admission_adds() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"image": "registry.k8s.io/pause:3.10",
        "name": "main", "ports": [{"containerPort": 80}], "livenessProbe": {"httpGet": {"port": 80}},
        "env": [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "resources": {"limits": {"cpu": "1"}}}]}});
    let got = defaulted("", "Pod", pod);
    let s = &got["spec"];
    let c = &s["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(
        c["livenessProbe"],
        json!({"failureThreshold": 3, "httpGet": {"path": "/", "port": 80, "scheme": "HTTP"},
            "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1})
    );
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(c["resources"]["requests"], json!({"cpu": "1"}));
    let name = c["volumeMounts"][0]["name"].as_str().unwrap();
    assert!(
        name.starts_with("kube-api-access-") && name.len() == 21,
        "{name}"
    );
    assert_eq!(s["volumes"][0]["name"], name);
    assert_eq!(s["serviceAccountName"], "default");
    assert_eq!(s["serviceAccount"], "default");
    assert_eq!(s["priority"], 0);
    assert_eq!(s["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(s["enableServiceLinks"], true);
    assert_eq!(s["tolerations"].as_array().unwrap().len(), 2);
    for (k, v) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("securityContext", json!({})),
        ("terminationGracePeriodSeconds", json!(30)),
    ] {
        assert_eq!(s[k], v, "{k}");
    }
    let no_token = defaulted(
        "",
        "Pod",
        json!({"spec": {"automountServiceAccountToken": false,
        "containers": [{"image": "x:latest", "name": "a"}]}}),
    );
    assert!(no_token["spec"].get("volumes").is_none());
    assert_eq!(
        no_token["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
}

#[test]
fn services_get_types_ports_and_a_cluster_ip() {
    let s = defaulted(
        "",
        "Service",
        json!({"spec": {"ports": [{"port": 80}], "selector": {"app": "x"}}}),
    );
    let ip = s["spec"]["clusterIP"].as_str().unwrap().to_owned();
    assert!(ip.starts_with("10."), "{ip}");
    assert_eq!(
        s["spec"],
        json!({"clusterIP": ip, "clusterIPs": [ip], "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
            "selector": {"app": "x"}, "sessionAffinity": "None", "type": "ClusterIP"})
    );
    let np = defaulted(
        "",
        "Service",
        json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}}),
    );
    let n = np["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    assert!((30000..=32767).contains(&n));
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    let ext = defaulted(
        "",
        "Service",
        json!({"spec": {"type": "ExternalName", "externalName": "x.io"}}),
    );
    assert_eq!(
        ext["spec"],
        json!({"type": "ExternalName", "externalName": "x.io", "sessionAffinity": "None"})
    );
    let headless = defaulted(
        "",
        "Service",
        json!({"spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
    );
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    // An update keeps the allocated address.
    let mut m = json!({"spec": {"ports": [{"port": 80}]}})
        .as_object()
        .cloned()
        .unwrap();
    let prev = s.as_object().unwrap();
    apply(&reg("", "Service"), &mut m, Some(prev));
    assert_eq!(m["spec"]["clusterIP"], json!(ip));
}

#[test]
fn jobs_select_their_pods_by_uid() {
    let job = json!({"metadata": {"name": "j", "uid": "u-1"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"image": "x:1", "name": "a"}]}}}});
    let got = defaulted("batch", "Job", job);
    assert_eq!(
        got["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
    );
    assert_eq!(
        got["spec"]["template"]["metadata"]["labels"]["job-name"],
        "j"
    );
    assert_eq!(got["metadata"]["labels"]["controller-uid"], "u-1");
    for (k, v) in [
        ("backoffLimit", json!(6)),
        ("completions", json!(1)),
        ("parallelism", json!(1)),
        ("completionMode", json!("NonIndexed")),
        ("suspend", json!(false)),
        ("manualSelector", json!(false)),
        ("podReplacementPolicy", json!("TerminatingOrFailed")),
    ] {
        assert_eq!(got["spec"][k], v, "{k}");
    }
    let cron = defaulted(
        "batch",
        "CronJob",
        json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"image": "x:1", "name": "a"}]}}}}}}),
    );
    assert_eq!(cron["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(cron["spec"]["jobTemplate"]["metadata"], json!({}));
    assert_eq!(
        cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"],
        "ClusterFirst"
    );
}

#[test]
fn generation_only_for_kinds_that_have_one() {
    assert!(has_generation(&reg("apps", "Deployment")));
    assert!(has_generation(&reg("", "Pod")));
    assert!(!has_generation(&reg("", "ConfigMap")));
    assert!(!has_generation(&reg("", "Service")));
    let mut cr = reg("example.com", "Foo");
    cr.custom = true;
    assert!(has_generation(&cr));
}

#[test]
fn secret_string_data_goes_into_data() {
    let s = defaulted(
        "",
        "Secret",
        json!({"data": {"a": "MQ=="}, "stringData": {"password": "hunter2"}}),
    );
    assert_eq!(
        s,
        json!({"data": {"a": "MQ==", "password": "aHVudGVyMg=="}})
    );
}

#[test]
fn empty_maps_are_left_out_as_go_leaves_them_out() {
    let cm = defaulted(
        "",
        "ConfigMap",
        json!({"metadata": {"name": "c", "labels": {}}, "data": {}}),
    );
    assert_eq!(cm, json!({"metadata": {"name": "c"}}));
}
