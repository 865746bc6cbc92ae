//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`),
//! decoded into the JSON the rest of the server works on.
//!
//! client-go's typed clients for built-in kinds always send protobuf (they never fall
//! back to JSON, not even on 415), and kubectl's `create namespace|configmap|secret|
//! deployment|service|serviceaccount|job|cronjob|role|rolebinding|clusterrole|
//! clusterrolebinding` use them; typed deletes send protobuf DeleteOptions. So the
//! server decodes those kinds.
//!
//! Contract:
//! - The envelope is the 4-byte magic `k8s\0` and a `runtime.Unknown` whose `raw` holds
//!   the object; its `typeMeta` gives `apiVersion` and `kind`.
//! - Only the kinds in [`MESSAGES`]' roots are decoded, and of them only the fields the
//!   table lists (the common ones). Anything else (another kind, a field number the
//!   table lacks, a malformed body) is an error, which the caller answers with 415 and
//!   the list of media types that always work: never a guess.
//! - Scalars equal to their zero value (`""`, `0`, `false`) and empty messages are
//!   dropped, as Go's `omitempty` JSON would drop them: protobuf cannot tell an unset
//!   field from a zero one. Fields that are pointers in Go (sent only when set:
//!   `replicas`, DeleteOptions' `gracePeriodSeconds` and `orphanDependents`) are kept.
//! - A `status` of a Service or Deployment is skipped (create drops it).
//! - `Time` becomes RFC 3339, `Quantity` its string, `IntOrString` a number or string,
//!   `bytes` (Secret data, binaryData) base64, `FieldsV1` its JSON.

use serde_json::{Map, Value};

/// The protobuf media type of Kubernetes objects.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// How a field is decoded.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Int,
    Bool,
    Msg(&'static str),
    MapStr,
    MapBytes,
    MapQuantity,
    Time,
    IntOrString,
    FieldsV1,
}

/// One field of a message: number, JSON name, type, repeated.
struct F(u64, &'static str, Ty, bool);

use Ty::*;

/// The messages this server decodes, by name; a root kind's message has the kind's name.
const MESSAGES: &[(&str, &[F])] = &[
    (
        "ObjectMeta",
        &[
            F(1, "name", Str, false),
            F(2, "generateName", Str, false),
            F(3, "namespace", Str, false),
            F(4, "selfLink", Str, false),
            F(5, "uid", Str, false),
            F(6, "resourceVersion", Str, false),
            F(7, "generation", Int, false),
            F(8, "creationTimestamp", Time, false),
            F(9, "deletionTimestamp", Time, false),
            F(10, "deletionGracePeriodSeconds", Int, false),
            F(11, "labels", MapStr, false),
            F(12, "annotations", MapStr, false),
            F(13, "ownerReferences", Msg("OwnerReference"), true),
            F(14, "finalizers", Str, true),
            F(17, "managedFields", Msg("ManagedFieldsEntry"), true),
        ],
    ),
    (
        "OwnerReference",
        &[
            F(1, "kind", Str, false),
            F(3, "name", Str, false),
            F(4, "uid", Str, false),
            F(5, "apiVersion", Str, false),
            F(6, "controller", Bool, false),
            F(7, "blockOwnerDeletion", Bool, false),
        ],
    ),
    (
        "ManagedFieldsEntry",
        &[
            F(1, "manager", Str, false),
            F(2, "operation", Str, false),
            F(3, "apiVersion", Str, false),
            F(4, "time", Time, false),
            F(6, "fieldsType", Str, false),
            F(7, "fieldsV1", FieldsV1, false),
            F(8, "subresource", Str, false),
        ],
    ),
    (
        "LabelSelector",
        &[
            F(1, "matchLabels", MapStr, false),
            F(2, "matchExpressions", Msg("LabelSelectorRequirement"), true),
        ],
    ),
    (
        "LabelSelectorRequirement",
        &[
            F(1, "key", Str, false),
            F(2, "operator", Str, false),
            F(3, "values", Str, true),
        ],
    ),
    (
        "DeleteOptions",
        &[
            F(1, "gracePeriodSeconds", Int, false),
            F(2, "preconditions", Msg("Preconditions"), false),
            F(3, "orphanDependents", Bool, false),
            F(4, "propagationPolicy", Str, false),
            F(5, "dryRun", Str, true),
            F(
                6,
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                Bool,
                false,
            ),
        ],
    ),
    (
        "Preconditions",
        &[F(1, "uid", Str, false), F(2, "resourceVersion", Str, false)],
    ),
    (
        "Namespace",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "spec", Msg("NamespaceSpec"), false),
            F(3, "status", Msg("NamespaceStatus"), false),
        ],
    ),
    ("NamespaceSpec", &[F(1, "finalizers", Str, true)]),
    ("NamespaceStatus", &[F(1, "phase", Str, false)]),
    (
        "ConfigMap",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "data", MapStr, false),
            F(3, "binaryData", MapBytes, false),
            F(4, "immutable", Bool, false),
        ],
    ),
    (
        "Secret",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "data", MapBytes, false),
            F(3, "type", Str, false),
            F(4, "stringData", MapStr, false),
            F(5, "immutable", Bool, false),
        ],
    ),
    (
        "ServiceAccount",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "secrets", Msg("ObjectReference"), true),
            F(3, "imagePullSecrets", Msg("LocalObjectReference"), true),
            F(4, "automountServiceAccountToken", Bool, false),
        ],
    ),
    (
        "ObjectReference",
        &[
            F(1, "kind", Str, false),
            F(2, "namespace", Str, false),
            F(3, "name", Str, false),
            F(4, "uid", Str, false),
            F(5, "apiVersion", Str, false),
            F(6, "resourceVersion", Str, false),
            F(7, "fieldPath", Str, false),
        ],
    ),
    ("LocalObjectReference", &[F(1, "name", Str, false)]),
    (
        "Service",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "spec", Msg("ServiceSpec"), false),
            F(3, "status", Msg("Ignored"), false),
        ],
    ),
    (
        "ServiceSpec",
        &[
            F(1, "ports", Msg("ServicePort"), true),
            F(2, "selector", MapStr, false),
            F(3, "clusterIP", Str, false),
            F(4, "type", Str, false),
            F(5, "externalIPs", Str, true),
            F(7, "sessionAffinity", Str, false),
            F(8, "loadBalancerIP", Str, false),
            F(9, "loadBalancerSourceRanges", Str, true),
            F(10, "externalName", Str, false),
            F(11, "externalTrafficPolicy", Str, false),
            F(12, "healthCheckNodePort", Int, false),
            F(13, "publishNotReadyAddresses", Bool, false),
            F(17, "ipFamilyPolicy", Str, false),
            F(18, "clusterIPs", Str, true),
            F(19, "ipFamilies", Str, true),
            F(20, "allocateLoadBalancerNodePorts", Bool, false),
            F(21, "loadBalancerClass", Str, false),
            F(22, "internalTrafficPolicy", Str, false),
            F(23, "trafficDistribution", Str, false),
        ],
    ),
    (
        "ServicePort",
        &[
            F(1, "name", Str, false),
            F(2, "protocol", Str, false),
            F(3, "port", Int, false),
            F(4, "targetPort", IntOrString, false),
            F(5, "nodePort", Int, false),
            F(6, "appProtocol", Str, false),
        ],
    ),
    (
        "Deployment",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "spec", Msg("DeploymentSpec"), false),
            F(3, "status", Msg("Ignored"), false),
        ],
    ),
    (
        "DeploymentSpec",
        &[
            F(1, "replicas", Int, false),
            F(2, "selector", Msg("LabelSelector"), false),
            F(3, "template", Msg("PodTemplateSpec"), false),
            F(4, "strategy", Msg("DeploymentStrategy"), false),
            F(5, "minReadySeconds", Int, false),
            F(6, "revisionHistoryLimit", Int, false),
            F(7, "paused", Bool, false),
            F(9, "progressDeadlineSeconds", Int, false),
        ],
    ),
    (
        "DeploymentStrategy",
        &[
            F(1, "type", Str, false),
            F(2, "rollingUpdate", Msg("RollingUpdateDeployment"), false),
        ],
    ),
    (
        "RollingUpdateDeployment",
        &[
            F(1, "maxUnavailable", IntOrString, false),
            F(2, "maxSurge", IntOrString, false),
        ],
    ),
    (
        "Job",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "spec", Msg("JobSpec"), false),
            F(3, "status", Msg("Ignored"), false),
        ],
    ),
    (
        "JobSpec",
        &[
            F(1, "parallelism", Int, false),
            F(2, "completions", Int, false),
            F(3, "activeDeadlineSeconds", Int, false),
            F(4, "selector", Msg("LabelSelector"), false),
            F(5, "manualSelector", Bool, false),
            F(6, "template", Msg("PodTemplateSpec"), false),
            F(7, "backoffLimit", Int, false),
            F(8, "ttlSecondsAfterFinished", Int, false),
            F(9, "completionMode", Str, false),
            F(10, "suspend", Bool, false),
            F(12, "backoffLimitPerIndex", Int, false),
            F(13, "maxFailedIndexes", Int, false),
            F(14, "podReplacementPolicy", Str, false),
            F(15, "managedBy", Str, false),
        ],
    ),
    (
        "CronJob",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "spec", Msg("CronJobSpec"), false),
            F(3, "status", Msg("Ignored"), false),
        ],
    ),
    (
        "CronJobSpec",
        &[
            F(1, "schedule", Str, false),
            F(2, "startingDeadlineSeconds", Int, false),
            F(3, "concurrencyPolicy", Str, false),
            F(4, "suspend", Bool, false),
            F(5, "jobTemplate", Msg("JobTemplateSpec"), false),
            F(6, "successfulJobsHistoryLimit", Int, false),
            F(7, "failedJobsHistoryLimit", Int, false),
            F(8, "timeZone", Str, false),
        ],
    ),
    (
        "JobTemplateSpec",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "spec", Msg("JobSpec"), false),
        ],
    ),
    (
        "Role",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "rules", Msg("PolicyRule"), true),
        ],
    ),
    (
        "ClusterRole",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "rules", Msg("PolicyRule"), true),
            F(3, "aggregationRule", Msg("AggregationRule"), false),
        ],
    ),
    (
        "AggregationRule",
        &[F(1, "clusterRoleSelectors", Msg("LabelSelector"), true)],
    ),
    (
        "PolicyRule",
        &[
            F(1, "verbs", Str, true),
            F(2, "apiGroups", Str, true),
            F(3, "resources", Str, true),
            F(4, "resourceNames", Str, true),
            F(5, "nonResourceURLs", Str, true),
        ],
    ),
    (
        "RoleBinding",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "subjects", Msg("Subject"), true),
            F(3, "roleRef", Msg("RoleRef"), false),
        ],
    ),
    (
        "ClusterRoleBinding",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "subjects", Msg("Subject"), true),
            F(3, "roleRef", Msg("RoleRef"), false),
        ],
    ),
    (
        "Subject",
        &[
            F(1, "kind", Str, false),
            F(2, "apiGroup", Str, false),
            F(3, "name", Str, false),
            F(4, "namespace", Str, false),
        ],
    ),
    (
        "RoleRef",
        &[
            F(1, "apiGroup", Str, false),
            F(2, "kind", Str, false),
            F(3, "name", Str, false),
        ],
    ),
    (
        "PodTemplateSpec",
        &[
            F(1, "metadata", Msg("ObjectMeta"), false),
            F(2, "spec", Msg("PodSpec"), false),
        ],
    ),
    (
        "PodSpec",
        &[
            F(2, "containers", Msg("Container"), true),
            F(3, "restartPolicy", Str, false),
            F(4, "terminationGracePeriodSeconds", Int, false),
            F(5, "activeDeadlineSeconds", Int, false),
            F(6, "dnsPolicy", Str, false),
            F(7, "nodeSelector", MapStr, false),
            F(8, "serviceAccountName", Str, false),
            F(9, "serviceAccount", Str, false),
            F(10, "nodeName", Str, false),
            F(11, "hostNetwork", Bool, false),
            F(12, "hostPID", Bool, false),
            F(13, "hostIPC", Bool, false),
            F(15, "imagePullSecrets", Msg("LocalObjectReference"), true),
            F(16, "hostname", Str, false),
            F(17, "subdomain", Str, false),
            F(19, "schedulerName", Str, false),
            F(20, "initContainers", Msg("Container"), true),
            F(21, "automountServiceAccountToken", Bool, false),
            F(24, "priorityClassName", Str, false),
            F(25, "priority", Int, false),
            F(27, "shareProcessNamespace", Bool, false),
            F(29, "runtimeClassName", Str, false),
            F(30, "enableServiceLinks", Bool, false),
            F(31, "preemptionPolicy", Str, false),
            F(35, "setHostnameAsFQDN", Bool, false),
            F(37, "hostUsers", Bool, false),
            F(41, "hostnameOverride", Str, false),
        ],
    ),
    (
        "Container",
        &[
            F(1, "name", Str, false),
            F(2, "image", Str, false),
            F(3, "command", Str, true),
            F(4, "args", Str, true),
            F(5, "workingDir", Str, false),
            F(6, "ports", Msg("ContainerPort"), true),
            F(7, "env", Msg("EnvVar"), true),
            F(8, "resources", Msg("ResourceRequirements"), false),
            F(13, "terminationMessagePath", Str, false),
            F(14, "imagePullPolicy", Str, false),
            F(16, "stdin", Bool, false),
            F(17, "stdinOnce", Bool, false),
            F(18, "tty", Bool, false),
            F(20, "terminationMessagePolicy", Str, false),
            F(24, "restartPolicy", Str, false),
        ],
    ),
    (
        "ContainerPort",
        &[
            F(1, "name", Str, false),
            F(2, "hostPort", Int, false),
            F(3, "containerPort", Int, false),
            F(4, "protocol", Str, false),
            F(5, "hostIP", Str, false),
        ],
    ),
    (
        "EnvVar",
        &[F(1, "name", Str, false), F(2, "value", Str, false)],
    ),
    (
        "ResourceRequirements",
        &[
            F(1, "limits", MapQuantity, false),
            F(2, "requests", MapQuantity, false),
        ],
    ),
];

/// The root kinds this server decodes from protobuf, with their group/version.
const ROOTS: &[(&str, &str)] = &[
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("v1", "DeleteOptions"),
    ("meta.k8s.io/v1", "DeleteOptions"),
];

/// Fields sent only when set (Go pointers), so a zero value is meaningful.
const KEEP_ZERO: &[(&str, &str)] = &[
    ("DeploymentSpec", "replicas"),
    ("DeleteOptions", "gracePeriodSeconds"),
    ("DeleteOptions", "orphanDependents"),
];

/// Why a protobuf body was not decoded.
#[derive(Debug)]
pub(crate) struct Unsupported(pub String);

fn fields(message: &str) -> Option<&'static [F]> {
    MESSAGES
        .iter()
        .find(|(n, _)| *n == message)
        .map(|(_, f)| *f)
}

/// Decodes a protobuf request body into the JSON object it stands for.
pub(crate) fn decode(body: &[u8]) -> Result<Map<String, Value>, Unsupported> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| Unsupported("the body does not start with the k8s protobuf magic".into()))?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    for field in Reader(rest) {
        let (num, v) = field?;
        match (num, v) {
            (1, Wire::Len(tm)) => {
                for f in Reader(tm) {
                    match f? {
                        (1, Wire::Len(s)) => api_version = utf8(s)?,
                        (2, Wire::Len(s)) => kind = utf8(s)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Len(r)) => raw = r,
            (3, Wire::Len(enc)) if !enc.is_empty() => {
                return Err(Unsupported(format!(
                    "content encoding {:?} is not supported",
                    String::from_utf8_lossy(enc)
                )))
            }
            _ => {}
        }
    }
    if !ROOTS.contains(&(api_version.as_str(), kind.as_str())) {
        return Err(Unsupported(format!(
            "this server decodes protobuf only for {}; {api_version:?} {kind:?} is not one of them",
            ROOTS
                .iter()
                .map(|(_, k)| *k)
                .filter(|k| *k != "DeleteOptions")
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut obj = message(raw, &kind)?;
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    Ok(obj)
}

fn utf8(b: &[u8]) -> Result<String, Unsupported> {
    String::from_utf8(b.to_vec()).map_err(|_| Unsupported("a string is not UTF-8".into()))
}

/// One field's wire value.
enum Wire<'a> {
    Varint(u64),
    Len(&'a [u8]),
    Fixed,
}

/// Iterates over the fields of a message.
struct Reader<'a>(&'a [u8]);

fn varint(b: &mut &[u8]) -> Result<u64, Unsupported> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b
            .split_first()
            .ok_or_else(|| Unsupported("truncated varint".into()))?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Unsupported("varint too long".into()))
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<(u64, Wire<'a>), Unsupported>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let mut step = || -> Result<(u64, Wire<'a>), Unsupported> {
            let key = varint(&mut self.0)?;
            let v = match key & 7 {
                0 => Wire::Varint(varint(&mut self.0)?),
                2 => {
                    let n = usize::try_from(varint(&mut self.0)?)
                        .map_err(|_| Unsupported("length too large".into()))?;
                    if n > self.0.len() {
                        return Err(Unsupported("truncated field".into()));
                    }
                    let (v, rest) = self.0.split_at(n);
                    self.0 = rest;
                    Wire::Len(v)
                }
                1 | 5 => {
                    let n = if key & 7 == 1 { 8 } else { 4 };
                    if n > self.0.len() {
                        return Err(Unsupported("truncated field".into()));
                    }
                    self.0 = &self.0[n..];
                    Wire::Fixed
                }
                w => return Err(Unsupported(format!("wire type {w} is not supported"))),
            };
            Ok((key >> 3, v))
        };
        let r = step();
        if r.is_err() {
            self.0 = &[];
        }
        Some(r)
    }
}

fn message(b: &[u8], name: &str) -> Result<Map<String, Value>, Unsupported> {
    // A status on create is dropped by the server anyway: skip it whole.
    if name == "Ignored" {
        return Ok(Map::new());
    }
    let fs = fields(name).ok_or_else(|| Unsupported(format!("no schema for {name}")))?;
    let mut out = Map::new();
    for field in Reader(b) {
        let (num, wire) = field?;
        let f = fs.iter().find(|f| f.0 == num).ok_or_else(|| {
            Unsupported(format!(
                "field {num} of {name} is not known to this server's protobuf decoder"
            ))
        })?;
        let v = value(f, wire, name)?;
        if f.3 {
            if let Value::Array(a) = out.entry(f.1).or_insert_with(|| Value::Array(Vec::new())) {
                a.push(v);
            }
        } else if let Some(Value::Object(m)) = out.get_mut(f.1) {
            // Map entries arrive one per field occurrence.
            if let Value::Object(more) = v {
                m.extend(more);
            }
        } else {
            out.insert(f.1.into(), v);
        }
    }
    out.retain(|k, v| !is_zero(v) || KEEP_ZERO.contains(&(name, k.as_str())));
    Ok(out)
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Object(m) => m.is_empty(),
        Value::Array(_) => false,
    }
}

fn bytes_of<'a>(wire: &Wire<'a>, name: &str) -> Result<&'a [u8], Unsupported> {
    match wire {
        Wire::Len(b) => Ok(b),
        _ => Err(Unsupported(format!(
            "a field of {name} has an unexpected wire type"
        ))),
    }
}

fn value(f: &F, wire: Wire<'_>, name: &str) -> Result<Value, Unsupported> {
    Ok(match f.2 {
        Int => match wire {
            // Go's int32/int64 are sent as two's complement varints.
            Wire::Varint(v) => Value::from(v as i64),
            _ => return Err(Unsupported(format!("{name}.{} is not a varint", f.1))),
        },
        Bool => match wire {
            Wire::Varint(v) => Value::Bool(v != 0),
            _ => return Err(Unsupported(format!("{name}.{} is not a varint", f.1))),
        },
        Str => Value::String(utf8(bytes_of(&wire, name)?)?),
        Msg(m) => Value::Object(message(bytes_of(&wire, name)?, m)?),
        MapStr | MapBytes | MapQuantity => {
            let mut k = String::new();
            let mut v = Value::String(String::new());
            for e in Reader(bytes_of(&wire, name)?) {
                match e? {
                    (1, Wire::Len(s)) => k = utf8(s)?,
                    (2, Wire::Len(s)) => {
                        v = match f.2 {
                            MapBytes => Value::String(base64(s)),
                            MapQuantity => quantity(s)?,
                            _ => Value::String(utf8(s)?),
                        }
                    }
                    _ => return Err(Unsupported(format!("a malformed map entry in {name}"))),
                }
            }
            let mut m = Map::new();
            m.insert(k, v);
            Value::Object(m)
        }
        Time => {
            let mut secs = 0i64;
            for e in Reader(bytes_of(&wire, name)?) {
                if let (1, Wire::Varint(s)) = e? {
                    secs = s as i64;
                }
            }
            if secs == 0 {
                Value::Null
            } else {
                Value::String(rfc3339(secs))
            }
        }
        IntOrString => {
            let (mut ty, mut int, mut s) = (0u64, 0i64, String::new());
            for e in Reader(bytes_of(&wire, name)?) {
                match e? {
                    (1, Wire::Varint(t)) => ty = t,
                    (2, Wire::Varint(i)) => int = i as i64,
                    (3, Wire::Len(b)) => s = utf8(b)?,
                    _ => {}
                }
            }
            if ty == 1 {
                Value::String(s)
            } else {
                Value::from(int)
            }
        }
        FieldsV1 => {
            let mut raw = Value::Null;
            for e in Reader(bytes_of(&wire, name)?) {
                if let (1, Wire::Len(b)) = e? {
                    raw = serde_json::from_slice(b)
                        .map_err(|e| Unsupported(format!("fieldsV1 is not JSON: {e}")))?;
                }
            }
            raw
        }
    })
}

fn quantity(b: &[u8]) -> Result<Value, Unsupported> {
    let mut s = String::new();
    for e in Reader(b) {
        if let (1, Wire::Len(x)) = e? {
            s = utf8(x)?;
        }
    }
    Ok(Value::String(s))
}

/// Standard base64 with padding, as Go's JSON encodes `[]byte`.
pub(crate) fn base64(b: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(char::from(T[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Seconds since the epoch as RFC 3339 UTC (`2006-01-02T15:04:05Z`).
fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(num: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, num << 3 | 2);
        put_varint(&mut out, payload.len() as u64);
        out.extend_from_slice(payload);
        out
    }

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut tm = field(1, api_version.as_bytes());
        tm.extend(field(2, kind.as_bytes()));
        let mut out = MAGIC.to_vec();
        out.extend(field(1, &tm));
        out.extend(field(2, raw));
        out
    }

    #[test]
    fn secret_with_bytes_and_empty_fields() {
        let mut meta = field(1, b"s");
        meta.extend(field(2, b""));
        let mut entry = field(1, b"k");
        entry.extend(field(2, b"hello"));
        let mut raw = field(1, &meta);
        raw.extend(field(2, &entry));
        raw.extend(field(3, b"Opaque"));
        let obj = decode(&envelope("v1", "Secret", &raw)).unwrap();
        assert_eq!(
            Value::Object(obj),
            serde_json::json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s"}, "data": {"k": "aGVsbG8="}, "type": "Opaque"})
        );
    }

    #[test]
    fn delete_options_keep_a_zero_grace_period() {
        let mut raw = vec![1 << 3, 0];
        raw.extend(field(4, b"Foreground"));
        let obj = decode(&envelope("meta.k8s.io/v1", "DeleteOptions", &raw)).unwrap();
        assert_eq!(obj["gracePeriodSeconds"], 0);
        assert_eq!(obj["propagationPolicy"], "Foreground");
    }

    #[test]
    fn unknown_kind_and_field_are_errors() {
        assert!(decode(&envelope("v1", "Pod", &[])).is_err());
        let raw = field(99, b"x");
        assert!(decode(&envelope("v1", "ConfigMap", &raw)).is_err());
        assert!(decode(b"{}").is_err());
    }

    #[test]
    fn helpers() {
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
