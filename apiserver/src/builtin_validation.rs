//! The validation kube-apiserver makes of every object's metadata and of the common
//! built-in kinds, with its field paths, cause types and messages (checked against
//! kube-apiserver 1.36.3).
//!
//! Contract:
//! - Every kind, custom resources included: label keys are qualified names and label
//!   values valid label values (`metadata.labels`), annotation keys qualified names and
//!   annotations at most 256 KiB in all (`metadata.annotations`).
//! - ConfigMap and Secret: `data` (and `binaryData`) keys are config keys
//!   (`[-._a-zA-Z0-9]+`, not `.` or `..`, at most 253 characters), and a ConfigMap key
//!   is not in both `data` and `binaryData`.
//! - Pod specs (a Pod's `spec`, and the pod template of Deployments, ReplicaSets,
//!   StatefulSets, DaemonSets, Jobs and CronJobs): `containers` required; each
//!   container (and init container) has a DNS-1123 label `name`, unique in the pod, and an
//!   `image`; container ports within 1-65535; `imagePullPolicy` and `restartPolicy`
//!   from their enums.
//! - Deployments, ReplicaSets, StatefulSets, DaemonSets: `selector` required and not
//!   empty, valid operators, matching the template's labels, immutable on update;
//!   `replicas` not negative.
//! - Secrets: `type` immutable; a `kubernetes.io/tls` Secret has `tls.crt` and `tls.key`.
//! - Deployments: no `rollingUpdate` with the `Recreate` strategy.
//! - Services: a DNS-1123 label as name; `ports` required (except ExternalName and headless without selector),
//!   each port within 1-65535, names required when there are several, `type` from its
//!   enum.
//! - Container resources: no negative quantity in `limits` or `requests`, no request
//!   above its limit.
//! - Not done: the rest of each kind's validation (extended resources, hugepages,
//!   probes, volumes, security contexts, ...).

use serde_json::{Map, Value};

use kubegen_apimachinery::labels;

use crate::errors::{cause, StatusCause};
use crate::registry::Registration;

/// The causes kube-apiserver gives `obj` (`prev` on an update), empty when it is valid.
pub(crate) fn causes(
    reg: &Registration,
    obj: &Map<String, Value>,
    prev: Option<&Map<String, Value>>,
) -> Vec<StatusCause> {
    let mut c = Causes::default();
    c.metadata(obj.get("metadata"));
    if reg.custom {
        return c.0;
    }
    let spec = obj.get("spec");
    match (reg.group.as_str(), reg.kind.as_str()) {
        ("", "ConfigMap") => c.config_keys(obj, true),
        ("", "Secret") => {
            c.config_keys(obj, false);
            c.secret_type(obj, prev);
        }
        ("", "Pod") => c.pod_spec(spec, "spec"),
        ("", "Namespace") => c.label_name(obj),
        ("", "Service") => {
            c.label_name(obj);
            c.service(spec);
        }
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            c.workload(spec, prev.and_then(|p| p.get("spec")));
        }
        ("batch", "Job") => {
            c.pod_spec(
                spec.and_then(|s| s.pointer("/template/spec")),
                "spec.template.spec",
            );
        }
        ("batch", "CronJob") => c.pod_spec(
            spec.and_then(|s| s.pointer("/jobTemplate/spec/template/spec")),
            "spec.jobTemplate.spec.template.spec",
        ),
        _ => {}
    }
    c.0
}

#[derive(Default)]
struct Causes(Vec<StatusCause>);

fn shown(v: &Value) -> String {
    v.to_string()
}

impl Causes {
    fn push(&mut self, reason: &str, field: &str, message: String) {
        self.0.push(StatusCause {
            reason: reason.into(),
            message,
            field: field.into(),
        });
    }

    fn required(&mut self, field: &str) {
        self.push(cause::FIELD_VALUE_REQUIRED, field, "Required value".into());
    }

    fn invalid(&mut self, field: &str, value: &Value, why: &str) {
        self.push(
            cause::FIELD_VALUE_INVALID,
            field,
            format!("Invalid value: {}: {why}", shown(value)),
        );
    }

    fn not_supported(&mut self, field: &str, value: &Value, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        self.push(
            cause::FIELD_VALUE_NOT_SUPPORTED,
            field,
            format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                list.join(", ")
            ),
        );
    }

    fn metadata(&mut self, meta: Option<&Value>) {
        let Some(meta) = meta else { return };
        if let Some(l) = meta.get("labels").and_then(Value::as_object) {
            for (k, v) in l {
                if let Err(why) = labels::validate_key(k) {
                    self.invalid("metadata.labels", &Value::String(k.clone()), why);
                }
                match v.as_str() {
                    Some(x) => {
                        if let Err(why) = labels::validate_value(x) {
                            self.invalid("metadata.labels", v, why);
                        }
                    }
                    None => self.invalid("metadata.labels", v, "must be a string"),
                }
            }
        }
        if let Some(a) = meta.get("annotations").and_then(Value::as_object) {
            let mut size = 0;
            for (k, v) in a {
                if let Err(why) = labels::validate_key(&k.to_lowercase()) {
                    self.invalid("metadata.annotations", &Value::String(k.clone()), why);
                }
                size += k.len() + v.as_str().map_or(0, str::len);
            }
            const MAX: usize = 256 * 1024;
            if size > MAX {
                self.push(
                    cause::FIELD_VALUE_TOO_LONG,
                    "metadata.annotations",
                    format!("Too long: may not be more than {MAX} bytes"),
                );
            }
        }
    }

    fn config_keys(&mut self, obj: &Map<String, Value>, config_map: bool) {
        let data = obj.get("data").and_then(Value::as_object);
        let keys = |k: &str| obj.get(k).and_then(Value::as_object).into_iter().flatten();
        for (field, (k, _)) in keys("data")
            .map(|e| ("data", e))
            .chain(keys("binaryData").map(|e| ("binaryData", e)))
            .chain(keys("stringData").map(|e| ("stringData", e)))
        {
            let path = format!("{field}[{k}]");
            if let Err(why) = config_key(k) {
                self.invalid(&path, &Value::String(k.clone()), why);
            }
            if config_map && field == "binaryData" && data.is_some_and(|d| d.contains_key(k)) {
                let data_path = format!("data[{k}]");
                self.invalid(
                    &data_path,
                    &Value::String(k.clone()),
                    "duplicate of key present in binaryData",
                );
            }
        }
    }

    /// A Service's or Namespace's name is a DNS label, not a subdomain (it becomes a
    /// DNS name); kube-apiserver 1.34+ takes RFC 1123 labels (`1abc` too).
    fn label_name(&mut self, obj: &Map<String, Value>) {
        let name = obj.get("metadata").and_then(|m| m.get("name"));
        if let Some(Value::String(n)) = name {
            if !is_dns1123_label(n) {
                self.invalid("metadata.name", &Value::String(n.clone()), DNS1123_LABEL);
            }
        }
    }

    /// A Secret's `type` is immutable, and a TLS Secret carries its keys.
    fn secret_type(&mut self, obj: &Map<String, Value>, prev: Option<&Map<String, Value>>) {
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("Opaque");
        if let Some(old) = prev.map(|p| p.get("type").and_then(Value::as_str).unwrap_or("Opaque")) {
            if old != ty {
                self.invalid("type", &Value::String(ty.to_owned()), "field is immutable");
            }
        }
        let data = obj.get("data").and_then(Value::as_object);
        let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
        if ty == "kubernetes.io/tls" {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    self.required(&format!("data[{k}]"));
                }
            }
        }
    }

    fn pod_spec(&mut self, spec: Option<&Value>, at: &str) {
        let containers = spec
            .and_then(|s| s.get("containers"))
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty());
        if containers.is_none() {
            self.required(&format!("{at}.containers"));
        }
        let mut names: Vec<&str> = Vec::new();
        for list in ["initContainers", "containers"] {
            let items = spec.and_then(|s| s.get(list)).and_then(Value::as_array);
            for (i, c) in items.into_iter().flatten().enumerate() {
                let p = format!("{at}.{list}[{i}]");
                match c
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                {
                    None => self.required(&format!("{p}.name")),
                    Some(n) => {
                        if !is_dns1123_label(n) {
                            self.invalid(&format!("{p}.name"), &c["name"], DNS1123_LABEL);
                        } else if names.contains(&n) {
                            self.push(
                                cause::FIELD_VALUE_DUPLICATE,
                                &format!("{p}.name"),
                                format!("Duplicate value: {:?}", n),
                            );
                        }
                        names.push(n);
                    }
                }
                if c.get("image")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    self.required(&format!("{p}.image"));
                }
                if let Some(policy) = c.get("imagePullPolicy").filter(|v| !v.is_null()) {
                    const PULL: &[&str] = &["Always", "IfNotPresent", "Never"];
                    if !policy.as_str().is_some_and(|x| PULL.contains(&x)) {
                        self.not_supported(&format!("{p}.imagePullPolicy"), policy, PULL);
                    }
                }
                self.resources(c.get("resources"), &format!("{p}.resources"));
                let ports = c.get("ports").and_then(Value::as_array);
                for (j, port) in ports.into_iter().flatten().enumerate() {
                    let field = format!("{p}.ports[{j}].containerPort");
                    match port.get("containerPort") {
                        Some(n) if port_ok(n) => {}
                        Some(n) => self.invalid(&field, n, PORT_RANGE),
                        None => self.required(&field),
                    }
                }
            }
        }
        if let Some(policy) = spec.and_then(|s| s.get("restartPolicy")) {
            const RESTART: &[&str] = &["Always", "OnFailure", "Never"];
            if !policy.as_str().is_some_and(|x| RESTART.contains(&x)) {
                self.not_supported(&format!("{at}.restartPolicy"), policy, RESTART);
            }
        }
    }

    /// A container's `resources`: no negative quantity, and no request above its
    /// limit (requests are defaulted from limits before this runs).
    fn resources(&mut self, resources: Option<&Value>, at: &str) {
        let list = |k: &str| resources.and_then(|r| r.get(k)).and_then(Value::as_object);
        let (limits, requests) = (list("limits"), list("requests"));
        for (k, entries) in [("limits", limits), ("requests", requests)] {
            for (name, q) in entries.into_iter().flatten() {
                if q.as_str().and_then(quantity).is_some_and(|v| v < 0.0) {
                    self.invalid(
                        &format!("{at}.{k}[{name}]"),
                        q,
                        "must be greater than or equal to 0",
                    );
                }
            }
        }
        for (name, req) in requests.into_iter().flatten() {
            let Some(lim) = limits.and_then(|l| l.get(name)) else {
                continue;
            };
            let value = |v: &Value| v.as_str().and_then(quantity);
            if let (Some(r), Some(l)) = (value(req), value(lim)) {
                if r > l {
                    let shown = lim.as_str().unwrap_or_default();
                    self.invalid(
                        &format!("{at}.requests"),
                        req,
                        &format!("must be less than or equal to {name} limit of {shown}"),
                    );
                }
            }
        }
    }

    fn workload(&mut self, spec: Option<&Value>, prev: Option<&Value>) {
        let strategy = spec.and_then(|s| s.get("strategy"));
        let recreate =
            strategy.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("Recreate");
        if recreate
            && strategy
                .and_then(|s| s.get("rollingUpdate"))
                .is_some_and(|r| !r.is_null())
        {
            self.push(
                cause::FIELD_VALUE_FORBIDDEN,
                "spec.strategy.rollingUpdate",
                "Forbidden: may not be specified when strategy `type` is 'Recreate'".into(),
            );
        }
        if let Some(r) = spec.and_then(|s| s.get("replicas")) {
            if r.as_i64().is_some_and(|n| n < 0) {
                self.invalid("spec.replicas", r, "must be greater than or equal to 0");
            }
        }
        let selector = spec
            .and_then(|s| s.get("selector"))
            .filter(|s| !s.is_null());
        let template_labels = spec
            .and_then(|s| s.pointer("/template/metadata/labels"))
            .and_then(Value::as_object);
        let mut check_template = true;
        match selector {
            None => self.required("spec.selector"),
            Some(sel) => {
                let labels = sel.get("matchLabels").and_then(Value::as_object);
                let exprs = sel.get("matchExpressions").and_then(Value::as_array);
                if labels.is_none_or(Map::is_empty) && exprs.is_none_or(Vec::is_empty) {
                    self.invalid(
                        "spec.selector",
                        sel,
                        "empty selector is invalid for deployment",
                    );
                }
                let mut bad_operator = false;
                let empty_selector =
                    labels.is_none_or(Map::is_empty) && exprs.is_none_or(Vec::is_empty);
                for (i, e) in exprs.into_iter().flatten().enumerate() {
                    let op = e.get("operator").unwrap_or(&Value::Null);
                    let known = ["In", "NotIn", "Exists", "DoesNotExist"];
                    if !op.as_str().is_some_and(|o| known.contains(&o)) {
                        bad_operator = true;
                        self.invalid(
                            &format!("spec.selector.matchExpressions[{i}].operator"),
                            op,
                            "not a valid selector operator",
                        );
                    }
                }
                if bad_operator {
                    self.invalid("spec.selector", sel, "invalid label selector");
                }
                if bad_operator || empty_selector {
                    check_template = false;
                }
                if let Some(old) = prev.and_then(|p| p.get("selector")) {
                    if old != sel {
                        self.invalid("spec.selector", sel, "field is immutable");
                    }
                }
            }
        }
        let empty = Map::new();
        let tl = template_labels.unwrap_or(&empty);
        if check_template && !selector.is_some_and(|s| selects(s, tl)) {
            self.invalid(
                "spec.template.metadata.labels",
                &Value::Object(tl.clone()),
                "`selector` does not match template `labels`",
            );
        }
        self.pod_spec(
            spec.and_then(|s| s.pointer("/template/spec")),
            "spec.template.spec",
        );
    }

    fn service(&mut self, spec: Option<&Value>) {
        let ty = spec.and_then(|s| s.get("type")).filter(|t| !t.is_null());
        const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
        if let Some(t) = ty {
            if !t.as_str().is_some_and(|x| TYPES.contains(&x)) {
                self.not_supported("spec.type", t, TYPES);
                return;
            }
        }
        let external = ty.and_then(Value::as_str) == Some("ExternalName");
        let headless = spec
            .and_then(|s| s.get("clusterIP"))
            .and_then(Value::as_str)
            == Some("None");
        let ports = spec
            .and_then(|s| s.get("ports"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if ports.is_empty() && !external && !headless {
            self.required("spec.ports");
        }
        for (i, p) in ports.iter().enumerate() {
            let at = format!("spec.ports[{i}]");
            if ports.len() > 1
                && p.get("name")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                self.required(&format!("{at}.name"));
            }
            match p.get("port") {
                Some(n) if port_ok(n) => {}
                Some(n) => self.invalid(&format!("{at}.port"), n, PORT_RANGE),
                None => self.required(&format!("{at}.port")),
            }
            // targetPort defaults to port: a number must be a port too.
            match p.get("targetPort").or_else(|| p.get("port")) {
                Some(n) if n.is_number() && !port_ok(n) => {
                    self.invalid(&format!("{at}.targetPort"), n, PORT_RANGE)
                }
                _ => {}
            }
        }
    }
}

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

const DNS1123_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn port_ok(n: &Value) -> bool {
    n.as_i64().is_some_and(|n| (1..=65535).contains(&n))
}

fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.len() <= 63
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// The value of a resource quantity (`500m`, `1Gi`, `1e3`, `-1`), None when it is not
/// one. Precise enough to compare a request with its limit.
fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '+' | '-' | '.')))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    let n: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e => {
            let exp: i32 = e.strip_prefix(['e', 'E'])?.parse().ok()?;
            10f64.powi(exp)
        }
    };
    Some(n * scale)
}

fn config_key(k: &str) -> Result<(), &'static str> {
    if k.len() > 253 {
        return Err("must be no more than 253 characters");
    }
    if k.is_empty()
        || !k
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        return Err("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");
    }
    match k {
        "." => Err("must not be '.'"),
        ".." => Err("must not be '..'"),
        _ if k.starts_with("..") => Err("must not start with '..'"),
        _ => Ok(()),
    }
}

/// Whether a `LabelSelector` (JSON) selects `labels`.
fn selects(sel: &Value, labels: &Map<String, Value>) -> bool {
    let has = |k: &str| labels.get(k).and_then(Value::as_str);
    let match_labels = sel.get("matchLabels").and_then(Value::as_object);
    let labels_ok = match_labels
        .into_iter()
        .flatten()
        .all(|(k, v)| has(k).is_some() && has(k) == v.as_str());
    let exprs = sel.get("matchExpressions").and_then(Value::as_array);
    let exprs_ok = exprs.into_iter().flatten().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match e.get("operator").and_then(Value::as_str) {
            Some("In") => has(key).is_some_and(|v| values.contains(&v)),
            Some("NotIn") => has(key).is_none_or(|v| !values.contains(&v)),
            Some("Exists") => has(key).is_some(),
            Some("DoesNotExist") => has(key).is_none(),
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

#[cfg(test)]
mod tests;
