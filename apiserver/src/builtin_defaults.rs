//! The defaults kube-apiserver gives the common built-in kinds, and what its admission
//! plugins add to a new Pod, so that a client reads back what it would read from a
//! cluster (checked against kube-apiserver 1.36.3).
//!
//! Contract:
//! - Applied to writes through the API (create, update, patch); objects seeded with the
//!   admin API are stored as given.
//! - Pod specs (Pods and the templates of Deployments, ReplicaSets, StatefulSets,
//!   DaemonSets, ReplicationControllers, Jobs, CronJobs, PodTemplates): `dnsPolicy`,
//!   `restartPolicy`, `schedulerName`, `securityContext`, `terminationGracePeriodSeconds`;
//!   each container's `imagePullPolicy` (`Always` for an untagged or `:latest` image,
//!   else `IfNotPresent`), `resources`, `terminationMessagePath`/`Policy`, port
//!   `protocol`, probe timings and HTTP probe `path`/`scheme`, the `apiVersion` of env
//!   `fieldRef`s; volumes' `defaultMode`.
//! - A new Pod also gets what admission adds: `enableServiceLinks`, `priority` and
//!   `preemptionPolicy`, the `default` service account with its projected token volume
//!   (`kube-api-access-<suffix>`) mounted in every container (unless
//!   `automountServiceAccountToken: false`), the two `NoExecute` tolerations, and
//!   requests defaulted from limits.
//! - A Secret's `stringData` goes into `data` (base64), as the Secret strategy does.
//! - Deployments (`replicas`, `strategy`, `revisionHistoryLimit`,
//!   `progressDeadlineSeconds`), ReplicaSets, StatefulSets, DaemonSets, Jobs (the
//!   generated selector and labels), CronJobs, Services (`type`, `sessionAffinity`, port
//!   `protocol` and `targetPort`, an allocated `clusterIP`/`clusterIPs`, node ports,
//!   IP family fields, traffic policies), and the status a new object starts with.
//! - Not done: defaults of the other kinds and of rarely used Pod fields.

use serde_json::{json, Map, Value};

use crate::registry::Registration;

/// Whether objects of this kind carry `metadata.generation` (kube-apiserver's strategies
/// set it for these kinds only; custom resources always have one).
pub(crate) fn has_generation(reg: &Registration) -> bool {
    if reg.custom {
        return true;
    }
    matches!(
        (reg.group.as_str(), reg.kind.as_str()),
        ("", "Pod" | "PodTemplate" | "ReplicationController")
            | (
                "apps",
                "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
            )
            | ("batch", "Job" | "CronJob")
            | ("policy", "PodDisruptionBudget")
            | (
                "networking.k8s.io",
                "NetworkPolicy" | "Ingress" | "IngressClass"
            )
            | ("discovery.k8s.io", "EndpointSlice")
            | ("scheduling.k8s.io", "PriorityClass")
            | ("apiextensions.k8s.io", _)
            | ("admissionregistration.k8s.io", _)
            | ("flowcontrol.apiserver.k8s.io", _)
    )
}

/// Defaults `obj`, a write of `reg` through the API; `prev` is the stored object on an
/// update (allocated values are kept from it).
pub(crate) fn apply(
    reg: &Registration,
    obj: &mut Map<String, Value>,
    prev: Option<&Map<String, Value>>,
) {
    if reg.custom {
        return;
    }
    omit_empty_maps(reg, obj);
    let creating = prev.is_none();
    match (reg.group.as_str(), reg.kind.as_str()) {
        ("", "Pod") => {
            if let Some(s) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                pod_spec(s);
                if creating {
                    pod_admission(s);
                }
            }
        }
        ("", "PodTemplate") => template(obj.get_mut("template")),
        ("", "ReplicationController") => {
            let s = spec_of(obj);
            or_insert(s, "replicas", json!(1));
            template(s.get_mut("template"));
        }
        ("", "Service") => service(spec_of(obj), prev.and_then(|p| p.get("spec"))),
        ("", "Secret") => string_data(obj),
        ("apps", kind) => workload(kind, spec_of(obj)),
        ("batch", "Job") => {
            let meta = obj.get("metadata");
            let uid = meta
                .and_then(|m| m.get("uid"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let name = meta
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if creating {
                job_selector(obj, &uid, &name);
            }
            job(spec_of(obj));
        }
        ("batch", "CronJob") => {
            let s = spec_of(obj);
            or_insert(s, "concurrencyPolicy", json!("Allow"));
            or_insert(s, "suspend", json!(false));
            or_insert(s, "successfulJobsHistoryLimit", json!(3));
            or_insert(s, "failedJobsHistoryLimit", json!(1));
            if let Some(jt) = s.get_mut("jobTemplate").and_then(Value::as_object_mut) {
                or_insert(jt, "metadata", json!({}));
                let js = jt
                    .entry("spec")
                    .or_insert_with(|| json!({}))
                    .as_object_mut();
                if let Some(js) = js {
                    if let Some(t) = js.get_mut("template").and_then(Value::as_object_mut) {
                        or_insert(t, "metadata", json!({}));
                    }
                    template(js.get_mut("template"));
                }
            }
        }
        _ => {}
    }
}

/// Empty maps kube-apiserver's Go types leave out (`omitempty`): labels and annotations,
/// and a ConfigMap's or Secret's data.
fn omit_empty_maps(reg: &Registration, obj: &mut Map<String, Value>) {
    let empty = |v: &Value| v.as_object().is_some_and(Map::is_empty);
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, v| !(matches!(k.as_str(), "labels" | "annotations") && empty(v)));
    }
    if reg.group.is_empty() && matches!(reg.kind.as_str(), "ConfigMap" | "Secret") {
        obj.retain(|k, v| !(matches!(k.as_str(), "data" | "binaryData") && empty(v)));
    }
}

/// The status a new object of `reg` starts with, when kube-apiserver gives it one.
pub(crate) fn initial_status(reg: &Registration) -> Option<Value> {
    let status = match (reg.group.as_str(), reg.kind.as_str()) {
        ("", "Service") => json!({"loadBalancer": {}}),
        ("apps", "Deployment") | ("batch", "Job" | "CronJob") => json!({}),
        ("apps", "StatefulSet") => json!({"availableReplicas": 0, "replicas": 0}),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => json!({"replicas": 0}),
        ("apps", "DaemonSet") => json!({"currentNumberScheduled": 0,
            "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}),
        _ => return None,
    };
    Some(status)
}

/// A Secret's `stringData` is written into `data`, base64-encoded, and is not stored.
fn string_data(obj: &mut Map<String, Value>) {
    use base64::Engine;
    let Some(Value::Object(strings)) = obj.remove("stringData") else {
        return;
    };
    let data = obj.entry("data").or_insert_with(|| json!({}));
    if let Some(data) = data.as_object_mut() {
        for (k, v) in strings {
            let text = v.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(k, Value::String(encoded));
        }
    }
}

fn spec_of(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let s = obj.entry("spec").or_insert_with(|| json!({}));
    if !s.is_object() {
        *s = json!({});
    }
    s.as_object_mut().expect("made an object above")
}

fn or_insert(m: &mut Map<String, Value>, k: &str, v: Value) {
    if m.get(k).is_none_or(Value::is_null) {
        m.insert(k.into(), v);
    }
}

fn template(t: Option<&mut Value>) {
    if let Some(s) = t
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        pod_spec(s);
    }
}

fn workload(kind: &str, s: &mut Map<String, Value>) {
    match kind {
        "Deployment" => {
            or_insert(s, "replicas", json!(1));
            or_insert(s, "revisionHistoryLimit", json!(10));
            or_insert(s, "progressDeadlineSeconds", json!(600));
            let strategy = s.entry("strategy").or_insert_with(|| json!({}));
            if let Some(st) = strategy.as_object_mut() {
                or_insert(st, "type", json!("RollingUpdate"));
                if st.get("type") == Some(&json!("RollingUpdate")) {
                    let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
                    if let Some(ru) = ru.as_object_mut() {
                        or_insert(ru, "maxSurge", json!("25%"));
                        or_insert(ru, "maxUnavailable", json!("25%"));
                    }
                }
            }
        }
        "ReplicaSet" => or_insert(s, "replicas", json!(1)),
        "StatefulSet" => {
            or_insert(s, "replicas", json!(1));
            or_insert(s, "revisionHistoryLimit", json!(10));
            or_insert(s, "podManagementPolicy", json!("OrderedReady"));
            or_insert(s, "serviceName", json!(""));
            or_insert(
                s,
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
            let us = s.entry("updateStrategy").or_insert_with(|| json!({}));
            if let Some(us) = us.as_object_mut() {
                or_insert(us, "type", json!("RollingUpdate"));
                if us.get("type") == Some(&json!("RollingUpdate")) {
                    or_insert(us, "rollingUpdate", json!({"partition": 0}));
                }
            }
        }
        "DaemonSet" => {
            or_insert(s, "revisionHistoryLimit", json!(10));
            let us = s.entry("updateStrategy").or_insert_with(|| json!({}));
            if let Some(us) = us.as_object_mut() {
                or_insert(us, "type", json!("RollingUpdate"));
                if us.get("type") == Some(&json!("RollingUpdate")) {
                    or_insert(
                        us,
                        "rollingUpdate",
                        json!({"maxSurge": 0, "maxUnavailable": 1}),
                    );
                }
            }
        }
        _ => return,
    }
    template(s.get_mut("template"));
}

fn job(s: &mut Map<String, Value>) {
    or_insert(s, "parallelism", json!(1));
    or_insert(s, "completions", json!(1));
    or_insert(s, "backoffLimit", json!(6));
    or_insert(s, "completionMode", json!("NonIndexed"));
    or_insert(s, "suspend", json!(false));
    or_insert(s, "podReplacementPolicy", json!("TerminatingOrFailed"));
    or_insert(s, "manualSelector", json!(false));
    template(s.get_mut("template"));
}

/// A Job without `manualSelector` selects its pods by its uid, and labels its template
/// (and itself) with it.
fn job_selector(obj: &mut Map<String, Value>, uid: &str, name: &str) {
    let manual = obj
        .get("spec")
        .and_then(|s| s.get("manualSelector"))
        .and_then(Value::as_bool)
        == Some(true);
    if manual || uid.is_empty() {
        return;
    }
    let labels = json!({
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    });
    let s = spec_of(obj);
    or_insert(
        s,
        "selector",
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    let t = s.entry("template").or_insert_with(|| json!({}));
    if let Some(t) = t.as_object_mut() {
        let meta = t.entry("metadata").or_insert_with(|| json!({}));
        merge_labels(meta, &labels);
    }
    if let Some(meta) = obj.get_mut("metadata") {
        merge_labels(meta, &labels);
    }
}

fn merge_labels(meta: &mut Value, labels: &Value) {
    let Some(m) = meta.as_object_mut() else {
        return;
    };
    let l = m.entry("labels").or_insert_with(|| json!({}));
    if let (Some(l), Some(add)) = (l.as_object_mut(), labels.as_object()) {
        for (k, v) in add {
            l.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

fn pod_spec(s: &mut Map<String, Value>) {
    or_insert(s, "dnsPolicy", json!("ClusterFirst"));
    or_insert(s, "restartPolicy", json!("Always"));
    or_insert(s, "schedulerName", json!("default-scheduler"));
    or_insert(s, "securityContext", json!({}));
    or_insert(s, "terminationGracePeriodSeconds", json!(30));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        if let Some(cs) = s.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                container(c, list != "ephemeralContainers");
            }
        }
    }
    if let Some(vs) = s.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in vs.iter_mut().filter_map(Value::as_object_mut) {
            for source in ["secret", "configMap", "projected", "downwardAPI"] {
                if let Some(src) = v.get_mut(source).and_then(Value::as_object_mut) {
                    or_insert(src, "defaultMode", json!(420));
                }
            }
        }
    }
}

fn container(c: &mut Map<String, Value>, resources: bool) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
    let policy = if image_is_latest(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    or_insert(c, "imagePullPolicy", json!(policy));
    if resources {
        or_insert(c, "resources", json!({}));
    }
    or_insert(c, "terminationMessagePath", json!("/dev/termination-log"));
    or_insert(c, "terminationMessagePolicy", json!("File"));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            or_insert(p, "protocol", json!("TCP"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            or_insert(p, "timeoutSeconds", json!(1));
            or_insert(p, "periodSeconds", json!(10));
            or_insert(p, "successThreshold", json!(1));
            or_insert(p, "failureThreshold", json!(3));
            http_get(p);
        }
    }
    if let Some(lc) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lc.get_mut(hook).and_then(Value::as_object_mut) {
                http_get(h);
            }
        }
    }
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for e in env.iter_mut() {
            if let Some(fr) = e
                .pointer_mut("/valueFrom/fieldRef")
                .and_then(Value::as_object_mut)
            {
                or_insert(fr, "apiVersion", json!("v1"));
            }
        }
    }
}

fn http_get(handler: &mut Map<String, Value>) {
    if let Some(h) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        or_insert(h, "path", json!("/"));
        or_insert(h, "scheme", json!("HTTP"));
    }
}

/// An image without a tag (or tagged `latest`) and without a digest.
fn image_is_latest(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        Some((_, tag)) => tag == "latest",
        None => true,
    }
}

/// What the ServiceAccount, Priority and DefaultTolerationSeconds admission plugins and
/// Pod defaulting add to a new Pod.
fn pod_admission(s: &mut Map<String, Value>) {
    or_insert(s, "enableServiceLinks", json!(true));
    if s.get("priorityClassName").is_none_or(Value::is_null) {
        or_insert(s, "priority", json!(0));
        or_insert(s, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
    let sa = s
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|x| !x.is_empty())
        .unwrap_or("default")
        .to_owned();
    s.insert("serviceAccountName".into(), json!(sa));
    s.insert("serviceAccount".into(), json!(sa));
    let tolerations = s.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(ts) = tolerations.as_array_mut() {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let has = ts.iter().any(|t| {
                t.get("key").and_then(Value::as_str) == Some(key)
                    && t.get("effect")
                        .and_then(Value::as_str)
                        .is_none_or(|e| e == "NoExecute")
            });
            if !has {
                ts.push(
                    json!({"effect": "NoExecute", "key": key, "operator": "Exists",
                    "tolerationSeconds": 300}),
                );
            }
        }
    }
    for list in ["initContainers", "containers"] {
        if let Some(cs) = s.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                requests_from_limits(c);
            }
        }
    }
    if s.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        != Some(false)
    {
        token_volume(s);
    }
}

fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    let req = res.entry("requests").or_insert_with(|| json!({}));
    if let Some(req) = req.as_object_mut() {
        for (k, v) in limits {
            req.entry(k).or_insert(v);
        }
    }
}

const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The projected service account token volume and its mounts.
fn token_volume(s: &mut Map<String, Value>) {
    let mounted = |c: &Value| {
        c.get("volumeMounts")
            .and_then(Value::as_array)
            .is_some_and(|ms| {
                ms.iter()
                    .any(|m| m.get("mountPath") == Some(&json!(TOKEN_PATH)))
            })
    };
    let name = format!("kube-api-access-{}", suffix());
    let mut used = false;
    for list in ["initContainers", "containers"] {
        if let Some(cs) = s.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut() {
                if mounted(c) {
                    continue;
                }
                if let Some(c) = c.as_object_mut() {
                    let ms = c.entry("volumeMounts").or_insert_with(|| json!([]));
                    if let Some(ms) = ms.as_array_mut() {
                        ms.push(json!({"mountPath": TOKEN_PATH, "name": name, "readOnly": true}));
                        used = true;
                    }
                }
            }
        }
    }
    if !used {
        return;
    }
    let vs = s.entry("volumes").or_insert_with(|| json!([]));
    if let Some(vs) = vs.as_array_mut() {
        vs.push(json!({"name": name, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}
        ]}}));
    }
}

/// Five characters of the alphabet generated names use.
fn suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

fn service(s: &mut Map<String, Value>, prev: Option<&Value>) {
    or_insert(s, "type", json!("ClusterIP"));
    or_insert(s, "sessionAffinity", json!("None"));
    let ty = s
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let node_ports = matches!(ty.as_str(), "NodePort" | "LoadBalancer");
    if let Some(ports) = s.get_mut("ports").and_then(Value::as_array_mut) {
        for (i, p) in ports.iter_mut().enumerate() {
            let Some(p) = p.as_object_mut() else { continue };
            or_insert(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                or_insert(p, "targetPort", port);
            }
            if node_ports {
                let old = prev
                    .and_then(|o| o.pointer(&format!("/ports/{i}/nodePort")))
                    .cloned();
                or_insert(p, "nodePort", old.unwrap_or_else(|| json!(node_port())));
            }
        }
    }
    if ty == "ExternalName" {
        return;
    }
    if node_ports {
        or_insert(s, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        or_insert(s, "allocateLoadBalancerNodePorts", json!(true));
    }
    or_insert(s, "internalTrafficPolicy", json!("Cluster"));
    let old_ip = prev.and_then(|o| o.get("clusterIP")).cloned();
    let ip = match (
        s.get("clusterIP").filter(|x| !x.is_null() && *x != ""),
        old_ip,
    ) {
        (Some(ip), _) => ip.clone(),
        (None, Some(old)) => old,
        (None, None) => json!(cluster_ip()),
    };
    s.insert("clusterIP".into(), ip.clone());
    or_insert(s, "clusterIPs", json!([ip]));
    or_insert(s, "ipFamilies", json!(["IPv4"]));
    or_insert(s, "ipFamilyPolicy", json!("SingleStack"));
}

/// An address of the default service range (10.96.0.0/12).
fn cluster_ip() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let n: u32 = rng.random_range(1..(1 << 20) - 1);
    format!("10.{}.{}.{}", 96 + (n >> 16), (n >> 8) & 0xff, n & 0xff)
}

fn node_port() -> u16 {
    use rand::Rng;
    rand::rng().random_range(30000..=32767)
}

#[cfg(test)]
mod tests;
