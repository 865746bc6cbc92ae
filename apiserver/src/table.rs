//! Response media types: plain JSON, `as=Table` (server-side printing, what kubectl
//! asks for) and `as=PartialObjectMetadata[List]` (SEMANTICS 13, "Table",
//! "PartialObjectMetadata" and the Accept header).
//!
//! Contract:
//! - Accept clauses are tried in order; a clause this server cannot produce (protobuf,
//!   YAML, an unknown `as=`, a Table with another group/version) is skipped; nothing
//!   acceptable -> 406 NotAcceptable. No Accept header, `*/*` or `application/json` ->
//!   plain JSON.
//! - A Table has `columnDefinitions` (every column with its priority: hiding priority > 0
//!   unless `-o wide` is kubectl's job) and one row per object whose `object` follows
//!   `includeObject`: `Metadata` (default) a PartialObjectMetadata, `Object` the whole
//!   object, `None` null; other values -> 400.
//! - Columns: a custom resource's `additionalPrinterColumns` after `Name` (or `Name`,
//!   `Age` when it has none); for built-in kinds kubectl's usual columns (Pods: Name,
//!   Ready, Status, Restarts, Age + wide IP, Node; Deployments: Name, Ready, Up-to-date,
//!   Available, Age + wide Containers, Images, Selector; Namespaces: Name, Status, Age;
//!   ConfigMaps, Secrets, Services, ReplicaSets, ... their usual ones) and, for kinds
//!   kube-apiserver has no printer for (and Roles, ClusterRoles, CRDs, whose printers
//!   show the same), the default table: Name, Created At (RFC 3339). Ages are kube's human durations (`5m`,
//!   `3h2m`, `<invalid>`).

use serde_json::{json, Map, Value};

use crate::errors::StatusError;

use super::registry::{PrinterColumn, Registration};

/// What a GET or LIST answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Json,
    Table,
    PartialObjectMetadata,
    PartialObjectMetadataList,
    /// `application/vnd.kubernetes.protobuf`: built-in kinds only.
    Protobuf,
}

/// Picks the first acceptable clause of an Accept header (never protobuf).
#[cfg(test)]
pub(crate) fn negotiate(accept: Option<&str>) -> Result<Output, StatusError> {
    negotiate_for(accept, false)
}

/// Picks the first acceptable clause of an Accept header; protobuf only when `protobuf`
/// (a built-in kind: kube-apiserver has no protobuf for custom resources, and skips the
/// clause for them as for any other it cannot produce).
pub(crate) fn negotiate_for(accept: Option<&str>, protobuf: bool) -> Result<Output, StatusError> {
    let accept = match accept {
        None => return Ok(Output::Json),
        Some(a) if a.trim().is_empty() => return Ok(Output::Json),
        Some(a) => a,
    };
    for clause in accept.split(',') {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut params = Map::new();
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                params.insert(k.trim().to_owned(), Value::String(v.trim().to_owned()));
            }
        }
        if media == crate::protobuf::MEDIA_TYPE && protobuf && params.is_empty() {
            return Ok(Output::Protobuf);
        }
        if !matches!(media.as_str(), "application/json" | "*/*" | "application/*") {
            continue;
        }
        let p = |k: &str| params.get(k).and_then(Value::as_str).unwrap_or_default();
        let meta_gv = p("g") == "meta.k8s.io" && matches!(p("v"), "v1" | "v1beta1");
        match p("as") {
            "" => return Ok(Output::Json),
            "Table" if meta_gv => return Ok(Output::Table),
            "PartialObjectMetadata" if meta_gv => return Ok(Output::PartialObjectMetadata),
            "PartialObjectMetadataList" if meta_gv => return Ok(Output::PartialObjectMetadataList),
            _ => continue,
        }
    }
    Err(StatusError::new(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/json;as=Table;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    ))
}

/// `includeObject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    Metadata,
    Object,
    None,
}

pub(crate) fn include(v: Option<&str>) -> Result<Include, StatusError> {
    match v.unwrap_or_default() {
        "" | "Metadata" => Ok(Include::Metadata),
        "Object" => Ok(Include::Object),
        "None" => Ok(Include::None),
        other => Err(StatusError::bad_request(format!(
            "Unable to convert to Table as requested: includeObject: Invalid value: {other:?}: must be 'Metadata', 'Object', 'None', or empty"
        ))),
    }
}

/// A PartialObjectMetadata of an object.
pub(crate) fn partial(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A column: definition, and how a cell is computed from the object.
struct Col {
    name: &'static str,
    ty: &'static str,
    format: &'static str,
    description: &'static str,
    priority: i64,
    cell: fn(&Value) -> Value,
}

fn s<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    v.pointer(path)
}

fn name_cell(o: &Value) -> Value {
    s(o, "/metadata/name").cloned().unwrap_or(Value::Null)
}

fn age_cell(o: &Value) -> Value {
    match s(o, "/metadata/creationTimestamp").and_then(Value::as_str) {
        Some(t) => Value::String(age(t)),
        None => Value::String("<unknown>".into()),
    }
}

fn int_at(o: &Value, path: &str) -> i64 {
    s(o, path).and_then(Value::as_i64).unwrap_or(0)
}

const NAME: Col = Col {
    name: "Name",
    ty: "string",
    format: "name",
    description: "Name must be unique within a namespace.",
    priority: 0,
    cell: name_cell,
};
const AGE: Col = Col {
    name: "Age",
    ty: "string",
    format: "",
    description: "Time since the object was created.",
    priority: 0,
    cell: age_cell,
};

fn col(name: &'static str, priority: i64, cell: fn(&Value) -> Value) -> Col {
    Col {
        name,
        ty: "string",
        format: "",
        description: "",
        priority,
        cell,
    }
}

fn int_col(name: &'static str, cell: fn(&Value) -> Value) -> Col {
    Col {
        ty: "integer",
        ..col(name, 0, cell)
    }
}

fn count(v: Option<&Value>) -> usize {
    match v {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

fn pod_status(o: &Value) -> Value {
    if s(o, "/metadata/deletionTimestamp").is_some() {
        return json!("Terminating");
    }
    let waiting = s(o, "/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|c| s(c, "/state/waiting/reason").and_then(Value::as_str));
    let reason = s(o, "/status/reason").and_then(Value::as_str);
    let phase = s(o, "/status/phase").and_then(Value::as_str);
    json!(waiting.or(reason).or(phase).unwrap_or("Pending"))
}

fn containers(o: &Value, field: &str) -> Value {
    let list: Vec<&str> = s(o, "/spec/template/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get(field).and_then(Value::as_str))
        .collect();
    json!(list.join(","))
}

fn selector(o: &Value) -> Value {
    let mut parts: Vec<String> = s(o, "/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    if parts.is_empty() {
        if let Some(m) = s(o, "/spec/selector").and_then(Value::as_object) {
            parts = m
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
                .collect();
        }
    }
    if parts.is_empty() {
        json!("<none>")
    } else {
        json!(parts.join(","))
    }
}

fn str_at<'a>(o: &'a Value, path: &str) -> &'a str {
    s(o, path).and_then(Value::as_str).unwrap_or_default()
}

/// An int-or-string cell, "N/A" when unset (kubectl's PodDisruptionBudget columns).
fn not_applicable(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Number(n)) => json!(n.to_string()),
        Some(Value::String(x)) => json!(x),
        _ => json!("N/A"),
    }
}

/// `cpu: 0/1, memory: 0/1G`: used over hard for each resource, the `limits.*` ones in
/// the Limit column and the others in the Request column (kubectl's ResourceQuota).
fn quota_usage(o: &Value, limits: bool) -> Value {
    let hard = s(o, "/status/hard")
        .or_else(|| s(o, "/spec/hard"))
        .and_then(Value::as_object);
    let used = s(o, "/status/used").and_then(Value::as_object);
    let cells: Vec<String> = hard
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("limits.") == limits)
        .map(|(k, h)| {
            let u = used
                .and_then(|u| u.get(k))
                .and_then(Value::as_str)
                .unwrap_or("0");
            format!("{k}: {u}/{}", h.as_str().unwrap_or_default())
        })
        .collect();
    json!(cells.join(", "))
}

/// kubectl's HPA TARGETS: `<current>/<target>` per metric (`<unknown>` before status).
fn hpa_targets(o: &Value) -> Value {
    let metrics = s(o, "/spec/metrics").and_then(Value::as_array);
    let current = s(o, "/status/currentMetrics").and_then(Value::as_array);
    let cells: Vec<String> = metrics
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, m)| {
            let target = m
                .pointer("/resource/target")
                .or_else(|| m.pointer("/containerResource/target"));
            let (want, unit) = match target {
                Some(t) if t.get("averageUtilization").is_some() => {
                    (t["averageUtilization"].to_string(), "%")
                }
                Some(t) => (
                    t.get("averageValue")
                        .or_else(|| t.get("value"))
                        .and_then(Value::as_str)
                        .unwrap_or("<unknown>")
                        .to_owned(),
                    "",
                ),
                None => ("<unknown>".to_owned(), ""),
            };
            let now = current
                .and_then(|c| c.get(i))
                .and_then(|c| c.pointer("/resource/current/averageUtilization"))
                .map_or("<unknown>".to_owned(), |v| format!("{v}{unit}"));
            format!("{now}/{want}{unit}")
        })
        .collect();
    json!(if cells.is_empty() {
        "<none>".to_owned()
    } else {
        cells.join(", ")
    })
}

fn or_none(v: Option<&Value>) -> Value {
    match v.and_then(Value::as_str) {
        Some(x) if !x.is_empty() => json!(x),
        _ => json!("<none>"),
    }
}

fn builtin_columns(reg: &Registration) -> Vec<Col> {
    match (reg.group.as_str(), reg.kind.as_str()) {
        ("", "Pod") => vec![
            NAME,
            col("Ready", 0, |o| {
                let cs = s(o, "/status/containerStatuses").and_then(Value::as_array);
                let ready = cs
                    .into_iter()
                    .flatten()
                    .filter(|c| c.get("ready") == Some(&Value::Bool(true)))
                    .count();
                let total = count(s(o, "/spec/containers"));
                json!(format!("{ready}/{total}"))
            }),
            col("Status", 0, pod_status),
            int_col("Restarts", |o| {
                let n: i64 = s(o, "/status/containerStatuses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                    .sum();
                json!(n)
            }),
            AGE,
            col("IP", 1, |o| or_none(s(o, "/status/podIP"))),
            col("Node", 1, |o| or_none(s(o, "/spec/nodeName"))),
            col("Nominated Node", 1, |o| {
                or_none(s(o, "/status/nominatedNodeName"))
            }),
            col("Readiness Gates", 1, |o| {
                let n = count(s(o, "/spec/readinessGates"));
                if n == 0 {
                    json!("<none>")
                } else {
                    json!(format!("0/{n}"))
                }
            }),
        ],
        ("apps", "Deployment") => vec![
            NAME,
            col("Ready", 0, |o| {
                json!(format!(
                    "{}/{}",
                    int_at(o, "/status/readyReplicas"),
                    s(o, "/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
                ))
            }),
            int_col("Up-to-date", |o| {
                json!(int_at(o, "/status/updatedReplicas"))
            }),
            int_col("Available", |o| {
                json!(int_at(o, "/status/availableReplicas"))
            }),
            AGE,
            col("Containers", 1, |o| containers(o, "name")),
            col("Images", 1, |o| containers(o, "image")),
            col("Selector", 1, selector),
        ],
        ("apps", "ReplicaSet") | ("apps", "StatefulSet") => vec![
            NAME,
            int_col("Desired", |o| {
                json!(s(o, "/spec/replicas").and_then(Value::as_i64).unwrap_or(1))
            }),
            int_col("Current", |o| json!(int_at(o, "/status/replicas"))),
            int_col("Ready", |o| json!(int_at(o, "/status/readyReplicas"))),
            AGE,
        ],
        ("", "Namespace") => vec![
            NAME,
            col("Status", 0, |o| {
                s(o, "/status/phase").cloned().unwrap_or(json!(""))
            }),
            AGE,
        ],
        ("", "ConfigMap") => vec![
            NAME,
            int_col("Data", |o| {
                json!(count(s(o, "/data")) + count(s(o, "/binaryData")))
            }),
            AGE,
        ],
        ("", "Secret") => vec![
            NAME,
            col("Type", 0, |o| {
                s(o, "/type").cloned().unwrap_or(json!("Opaque"))
            }),
            int_col("Data", |o| json!(count(s(o, "/data")))),
            AGE,
        ],
        ("", "ServiceAccount") => vec![
            NAME,
            int_col("Secrets", |o| json!(count(s(o, "/secrets")))),
            AGE,
        ],
        ("", "Service") => vec![
            NAME,
            col("Type", 0, |o| {
                s(o, "/spec/type").cloned().unwrap_or(json!("ClusterIP"))
            }),
            col("Cluster-IP", 0, |o| or_none(s(o, "/spec/clusterIP"))),
            col("External-IP", 0, |o| {
                let ips: Vec<&str> = s(o, "/spec/externalIPs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if ips.is_empty() {
                    json!("<none>")
                } else {
                    json!(ips.join(","))
                }
            }),
            col("Port(s)", 0, |o| {
                let ports: Vec<String> = s(o, "/spec/ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        format!(
                            "{}/{}",
                            p.get("port").and_then(Value::as_i64).unwrap_or(0),
                            p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                        )
                    })
                    .collect();
                if ports.is_empty() {
                    json!("<none>")
                } else {
                    json!(ports.join(","))
                }
            }),
            AGE,
            col("Selector", 1, selector),
        ],
        ("apps", "DaemonSet") => vec![
            NAME,
            int_col("Desired", |o| {
                json!(int_at(o, "/status/desiredNumberScheduled"))
            }),
            int_col("Current", |o| {
                json!(int_at(o, "/status/currentNumberScheduled"))
            }),
            int_col("Ready", |o| json!(int_at(o, "/status/numberReady"))),
            AGE,
        ],
        ("batch", "Job") => vec![
            NAME,
            col("Completions", 0, |o| {
                json!(format!(
                    "{}/{}",
                    int_at(o, "/status/succeeded"),
                    s(o, "/spec/completions")
                        .and_then(Value::as_i64)
                        .unwrap_or(1)
                ))
            }),
            AGE,
        ],
        ("batch", "CronJob") => vec![
            NAME,
            col("Schedule", 0, |o| or_none(s(o, "/spec/schedule"))),
            col("Suspend", 0, |o| {
                json!(if s(o, "/spec/suspend") == Some(&Value::Bool(true)) {
                    "True"
                } else {
                    "False"
                })
            }),
            int_col("Active", |o| json!(count(s(o, "/status/active")))),
            AGE,
        ],
        ("", "Node") => vec![
            NAME,
            col("Status", 0, |o| {
                let ready = s(o, "/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|c| {
                        c.get("type") == Some(&json!("Ready"))
                            && c.get("status") == Some(&json!("True"))
                    });
                json!(if ready { "Ready" } else { "NotReady" })
            }),
            AGE,
        ],
        ("coordination.k8s.io", "Lease") => vec![
            NAME,
            col("Holder", 0, |o| {
                s(o, "/spec/holderIdentity").cloned().unwrap_or(json!(""))
            }),
            AGE,
        ],
        ("rbac.authorization.k8s.io", "RoleBinding")
        | ("rbac.authorization.k8s.io", "ClusterRoleBinding") => vec![
            NAME,
            col("Role", 0, |o| {
                json!(format!(
                    "{}/{}",
                    s(o, "/roleRef/kind")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                    s(o, "/roleRef/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ))
            }),
            AGE,
        ],
        ("", "ReplicationController") => vec![
            NAME,
            int_col("Desired", |o| json!(int_at(o, "/spec/replicas"))),
            int_col("Current", |o| json!(int_at(o, "/status/replicas"))),
            int_col("Ready", |o| json!(int_at(o, "/status/readyReplicas"))),
            AGE,
            col("Containers", 1, |o| containers(o, "name")),
            col("Images", 1, |o| containers(o, "image")),
            col("Selector", 1, selector),
        ],
        ("", "ResourceQuota") => vec![
            NAME,
            AGE,
            col("Request", 0, |o| quota_usage(o, false)),
            col("Limit", 0, |o| quota_usage(o, true)),
        ],
        ("policy", "PodDisruptionBudget") => vec![
            NAME,
            col("Min Available", 0, |o| {
                not_applicable(s(o, "/spec/minAvailable"))
            }),
            col("Max Unavailable", 0, |o| {
                not_applicable(s(o, "/spec/maxUnavailable"))
            }),
            int_col("Allowed Disruptions", |o| {
                json!(int_at(o, "/status/disruptionsAllowed"))
            }),
            AGE,
        ],
        ("autoscaling", "HorizontalPodAutoscaler") => vec![
            NAME,
            col("Reference", 0, |o| {
                json!(format!(
                    "{}/{}",
                    str_at(o, "/spec/scaleTargetRef/kind"),
                    str_at(o, "/spec/scaleTargetRef/name")
                ))
            }),
            col("Targets", 0, hpa_targets),
            col("MinPods", 0, |o| {
                json!(s(o, "/spec/minReplicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(1))
            }),
            int_col("MaxPods", |o| json!(int_at(o, "/spec/maxReplicas"))),
            int_col("Replicas", |o| json!(int_at(o, "/status/currentReplicas"))),
            AGE,
        ],
        ("scheduling.k8s.io", "PriorityClass") => vec![
            NAME,
            int_col("Value", |o| json!(int_at(o, "/value"))),
            col("Global-Default", 0, |o| {
                json!(s(o, "/globalDefault") == Some(&Value::Bool(true)))
            }),
            AGE,
            col("PreemptionPolicy", 0, |o| {
                json!(s(o, "/preemptionPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or("PreemptLowerPriority"))
            }),
        ],
        ("storage.k8s.io", "StorageClass") => vec![
            Col {
                cell: |o| {
                    let name = str_at(o, "/metadata/name");
                    let default = [
                        "storageclass.kubernetes.io/is-default-class",
                        "storageclass.beta.kubernetes.io/is-default-class",
                    ]
                    .iter()
                    .any(|a| {
                        o.pointer("/metadata/annotations")
                            .and_then(|m| m.get(*a))
                            .and_then(Value::as_str)
                            == Some("true")
                    });
                    json!(if default {
                        format!("{name} (default)")
                    } else {
                        name.to_owned()
                    })
                },
                ..NAME
            },
            col("Provisioner", 0, |o| json!(str_at(o, "/provisioner"))),
            col("ReclaimPolicy", 0, |o| {
                json!(s(o, "/reclaimPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or("Delete"))
            }),
            col("VolumeBindingMode", 0, |o| {
                json!(s(o, "/volumeBindingMode")
                    .and_then(Value::as_str)
                    .unwrap_or("Immediate"))
            }),
            col("AllowVolumeExpansion", 0, |o| {
                json!(s(o, "/allowVolumeExpansion") == Some(&Value::Bool(true)))
            }),
            AGE,
        ],
        ("networking.k8s.io", "NetworkPolicy") => vec![
            NAME,
            col("Pod-Selector", 0, |o| {
                let labels: Vec<String> = s(o, "/spec/podSelector/matchLabels")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect();
                json!(if labels.is_empty() {
                    "<none>".to_owned()
                } else {
                    labels.join(",")
                })
            }),
            AGE,
        ],
        ("networking.k8s.io", "IngressClass") => vec![
            NAME,
            col("Controller", 0, |o| json!(str_at(o, "/spec/controller"))),
            col("Parameters", 0, |o| or_none(s(o, "/spec/parameters/name"))),
            AGE,
        ],
        ("discovery.k8s.io", "EndpointSlice") => vec![
            NAME,
            col("AddressType", 0, |o| json!(str_at(o, "/addressType"))),
            col("Ports", 0, |o| {
                let ports: Vec<String> = s(o, "/ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.get("port").and_then(Value::as_i64))
                    .map(|p| p.to_string())
                    .collect();
                json!(if ports.is_empty() {
                    "<unset>".to_owned()
                } else {
                    ports.join(",")
                })
            }),
            col("Endpoints", 0, |o| {
                let addrs: Vec<&str> = s(o, "/endpoints")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.get("addresses").and_then(Value::as_array))
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                json!(if addrs.is_empty() {
                    "<unset>".to_owned()
                } else {
                    addrs.join(",")
                })
            }),
            AGE,
        ],
        ("certificates.k8s.io", "CertificateSigningRequest") => vec![
            NAME,
            AGE,
            col("SignerName", 0, |o| json!(str_at(o, "/spec/signerName"))),
            col("Requestor", 0, |o| json!(str_at(o, "/spec/username"))),
            col("RequestedDuration", 0, |o| {
                json!(
                    match s(o, "/spec/expirationSeconds").and_then(Value::as_i64) {
                        Some(secs) => format!("{}m", secs / 60),
                        None => "<none>".to_owned(),
                    }
                )
            }),
            col("Condition", 0, |o| {
                let mut conds: Vec<&str> = s(o, "/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("type").and_then(Value::as_str))
                    .collect();
                if s(o, "/status/certificate").is_some_and(|c| c.as_str() != Some("")) {
                    conds.push("Issued");
                }
                json!(if conds.is_empty() {
                    "Pending".to_owned()
                } else {
                    conds.join(",")
                })
            }),
        ],
        ("node.k8s.io", "RuntimeClass") => vec![
            NAME,
            col("Handler", 0, |o| json!(str_at(o, "/handler"))),
            AGE,
        ],
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration")
        | ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => vec![
            NAME,
            int_col("Webhooks", |o| json!(count(s(o, "/webhooks")))),
            AGE,
        ],
        ("apps", "ControllerRevision") => vec![
            NAME,
            col("Controller", 0, |o| {
                let owner = s(o, "/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|r| r.get("controller") == Some(&Value::Bool(true)));
                json!(owner.map_or(String::new(), |r| {
                    format!(
                        "{}/{}",
                        str_at(r, "/kind").to_lowercase(),
                        str_at(r, "/name")
                    )
                }))
            }),
            int_col("Revision", |o| json!(int_at(o, "/revision"))),
            AGE,
        ],
        ("", "Event") | ("events.k8s.io", "Event") => event_columns(),
        ("", "Endpoints")
        | ("", "PersistentVolume")
        | ("", "PersistentVolumeClaim")
        | ("networking.k8s.io", "Ingress") => vec![NAME, AGE],
        // No printer: kube-apiserver's default table.
        _ => vec![
            NAME,
            Col {
                name: "Created At",
                ty: "date",
                format: "",
                description: "",
                priority: 0,
                cell: |o| {
                    s(o, "/metadata/creationTimestamp")
                        .cloned()
                        .unwrap_or(Value::Null)
                },
            },
        ],
    }
}

/// The first string among the JSON pointers (core/v1 and events.k8s.io/v1 name an
/// Event's fields differently), empty when none is set.
fn event_str<'a>(o: &'a Value, paths: &[&str]) -> &'a str {
    paths
        .iter()
        .filter_map(|p| s(o, p).and_then(Value::as_str))
        .find(|v| !v.is_empty())
        .unwrap_or_default()
}

fn since(t: &str) -> String {
    if t.is_empty() {
        "<unknown>".into()
    } else {
        age(t)
    }
}

fn event_first_seen(o: &Value) -> String {
    let first = event_str(o, &["/firstTimestamp", "/deprecatedFirstTimestamp"]);
    since(if first.is_empty() {
        event_str(o, &["/eventTime"])
    } else {
        first
    })
}

fn event_last_seen(o: &Value) -> Value {
    let series = event_str(o, &["/series/lastObservedTime"]);
    let last = event_str(o, &["/lastTimestamp", "/deprecatedLastTimestamp"]);
    Value::String(match (series, last) {
        (t, _) if !t.is_empty() => since(t),
        ("", "") => event_first_seen(o),
        (_, t) => since(t),
    })
}

fn event_count(o: &Value) -> Value {
    let series = s(o, "/series/count").and_then(Value::as_i64);
    let count = ["/count", "/deprecatedCount"]
        .iter()
        .find_map(|p| s(o, p).and_then(Value::as_i64))
        .unwrap_or(0);
    Value::from(series.unwrap_or(if count == 0 { 1 } else { count }))
}

fn event_object(o: &Value) -> Value {
    let kind = event_str(o, &["/involvedObject/kind", "/regarding/kind"]).to_lowercase();
    let name = event_str(o, &["/involvedObject/name", "/regarding/name"]);
    Value::String(if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    })
}

fn event_source(o: &Value) -> Value {
    let component = event_str(
        o,
        &[
            "/source/component",
            "/deprecatedSource/component",
            "/reportingComponent",
            "/reportingController",
        ],
    );
    let instance = event_str(
        o,
        &[
            "/source/host",
            "/deprecatedSource/host",
            "/reportingInstance",
        ],
    );
    Value::String(if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    })
}

/// kube-apiserver's Event columns (`kubectl get events`; the wide ones at priority 1).
fn event_columns() -> Vec<Col> {
    let text = col;
    vec![
        text("Last Seen", 0, event_last_seen),
        text("Type", 0, |o| json!(event_str(o, &["/type"]))),
        text("Reason", 0, |o| json!(event_str(o, &["/reason"]))),
        text("Object", 0, event_object),
        text("Subobject", 1, |o| {
            json!(event_str(
                o,
                &["/involvedObject/fieldPath", "/regarding/fieldPath"]
            ))
        }),
        text("Source", 1, event_source),
        text("Message", 0, |o| {
            json!(event_str(o, &["/message", "/note"]).trim())
        }),
        text("First Seen", 1, |o| Value::String(event_first_seen(o))),
        text("Count", 1, event_count),
        Col {
            priority: 1,
            ..NAME
        },
    ]
}

fn definition(c: &Col) -> Value {
    json!({"name": c.name, "type": c.ty, "format": c.format, "description": c.description, "priority": c.priority})
}

/// A custom resource column's cell, from its JSONPath and type.
fn custom_cell(o: &Value, c: &PrinterColumn) -> Value {
    let Some(v) = json_path(o, &c.json_path) else {
        return Value::Null;
    };
    match c.ty.as_str() {
        "integer" => match v {
            Value::Number(n) => n
                .as_i64()
                .map(Value::from)
                .or_else(|| n.as_f64().map(|f| Value::from(f as i64)))
                .unwrap_or(Value::Null),
            _ => Value::Null,
        },
        "number" => match v {
            Value::Number(_) => v.clone(),
            _ => Value::Null,
        },
        "boolean" => match v {
            Value::Bool(_) => v.clone(),
            _ => Value::Null,
        },
        "date" => match v {
            Value::String(t) => Value::String(age(t)),
            _ => Value::Null,
        },
        _ => match v {
            Value::String(_) => v.clone(),
            other => Value::String(other.to_string()),
        },
    }
}

/// A simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`, `{.a.b}`).
fn json_path<'a>(o: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut cur = o;
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (seg, None),
        };
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

/// Builds a Table of `objects`; `meta` is the list metadata (resourceVersion, continue).
pub(crate) fn table(reg: &Registration, objects: &[Value], meta: Value, include: Include) -> Value {
    let (defs, rows): (Vec<Value>, Vec<Value>) = if reg.custom {
        let cols = &reg.printer_columns;
        let rows = objects
            .iter()
            .map(|o| row(o, custom_cells(cols, o), include))
            .collect();
        (custom_definitions(cols), rows)
    } else {
        let cols = builtin_columns(reg);
        let defs = cols.iter().map(definition).collect();
        let rows = objects
            .iter()
            .map(|o| row(o, cols.iter().map(|c| (c.cell)(o)).collect(), include))
            .collect();
        (defs, rows)
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": defs,
        "rows": rows,
    })
}

/// The column definitions of a custom resource version's printer columns (Name, then
/// Age when it declares none).
pub(crate) fn custom_definitions(cols: &[PrinterColumn]) -> Vec<Value> {
    let mut defs = vec![definition(&NAME)];
    if cols.is_empty() {
        defs.push(json!({"name": "Age", "type": "date", "format": "", "description": "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp", "priority": 0}));
    }
    for c in cols {
        let description = if c.description.is_empty() {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                c.json_path
            )
        } else {
            c.description.clone()
        };
        defs.push(json!({"name": c.name, "type": c.ty, "format": c.format, "description": description, "priority": c.priority}));
    }
    defs
}

/// A custom resource's cells under `custom_definitions(cols)`.
pub(crate) fn custom_cells(cols: &[PrinterColumn], o: &Value) -> Vec<Value> {
    let mut cells = vec![name_cell(o)];
    if cols.is_empty() {
        cells.push(age_cell(o));
    }
    cells.extend(cols.iter().map(|c| custom_cell(o, c)));
    cells
}

/// A row: its cells and the object as `include` asks.
pub(crate) fn row(o: &Value, cells: Vec<Value>, include: Include) -> Value {
    let object = match include {
        Include::Metadata => partial(o),
        Include::Object => o.clone(),
        Include::None => Value::Null,
    };
    json!({"cells": cells, "object": object})
}

/// Time since an RFC 3339 timestamp, as kube's `HumanDuration` writes it.
pub(crate) fn age(t: &str) -> String {
    let Ok(then) = t.parse::<k8s_openapi::jiff::Timestamp>() else {
        return "<invalid>".into();
    };
    let secs = k8s_openapi::jiff::Timestamp::now().as_second() - then.as_second();
    human_duration(secs)
}

/// kube's `HumanDuration` of a number of seconds.
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let (d, h) = (hours / 24, hours % 24);
        return if h == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{h}h")
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    let years = hours / 24 / 365;
    if hours < 24 * 365 * 8 {
        let d = hours / 24 % 365;
        return if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        };
    }
    format!("{years}y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(-5), "<invalid>");
        assert_eq!(human_duration(59), "59s");
        assert_eq!(human_duration(125), "2m5s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 120), "3h2m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration(100 * 86400), "100d");
    }

    #[test]
    fn accept_clauses_in_order() {
        assert_eq!(negotiate(None).unwrap(), Output::Json);
        assert_eq!(
            negotiate(Some(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
            ))
            .unwrap(),
            Output::Table
        );
        assert_eq!(
            negotiate(Some(
                "application/json;as=Foo;v=v1;g=meta.k8s.io, application/json"
            ))
            .unwrap(),
            Output::Json
        );
        assert_eq!(
            negotiate(Some("application/json;as=Foo;v=v1;g=meta.k8s.io"))
                .unwrap_err()
                .code(),
            406
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf,application/json")).unwrap(),
            Output::Json
        );
    }

    #[test]
    fn json_paths() {
        let o = json!({"spec": {"a": [{"b": 1}]}});
        assert_eq!(json_path(&o, ".spec.a[0].b"), Some(&json!(1)));
        assert_eq!(json_path(&o, ".spec.x"), None);
    }
}

#[cfg(test)]
mod event_tests {
    use super::*;
    use crate::registry::builtin;

    fn cells_of(group: &str, event: Value) -> (Vec<String>, Vec<Value>) {
        let reg = builtin()
            .into_iter()
            .find(|r| r.group == group && r.kind == "Event")
            .expect("an Event registration");
        let t = table(&reg, &[event], json!({}), Include::None);
        let names = t["columnDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect();
        (
            names,
            t["rows"][0]["cells"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        )
    }

    /// `kubectl get events` shows kube-apiserver's Event columns (issue 30).
    #[test]
    fn events_have_kube_apiservers_columns() {
        let core = json!({"metadata": {"name": "e1", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
            "reason": "Started", "message": " hi ", "type": "Normal", "count": 3,
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z"});
        let (names, cells) = cells_of("", core);
        assert_eq!(
            names,
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name"
            ]
        );
        assert_eq!(
            cells[1..7],
            [
                json!("Normal"),
                json!("Started"),
                json!("pod/p"),
                json!("spec.containers{a}"),
                json!("kubelet, n1"),
                json!("hi")
            ]
        );
        assert_eq!(cells[8..], [json!(3), json!("e1")]);
        // events.k8s.io/v1 names the same fields otherwise; a singleton counts 1.
        let v1 = json!({"metadata": {"name": "e2"}, "regarding": {"kind": "Node", "name": "n1"},
            "reason": "Ready", "note": "up", "type": "Normal", "reportingController": "kubelet",
            "eventTime": "2020-01-01T00:00:00.000000Z"});
        let (_, cells) = cells_of("events.k8s.io", v1);
        assert_eq!(
            cells[3..],
            [
                json!("node/n1"),
                json!(""),
                json!("kubelet"),
                json!("up"),
                cells[7].clone(),
                json!(1),
                json!("e2")
            ]
        );
        assert_ne!(cells[0], json!("<unknown>"));
    }
}
