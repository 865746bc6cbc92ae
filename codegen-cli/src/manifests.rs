//! `kubegen rbac` and `kubegen webhook`: the manifests an operator ships beside its CRDs,
//! from markers in its Rust code, as controller-gen's `rbac` and `webhook` generators
//! write them from Go comments.
//!
//! - `+kubebuilder:rbac:groups=..,resources=..,resourceNames=..,verbs=..,urls=..,namespace=..,roleName=..`
//!   -> one ClusterRole (or, with `namespace=`, a Role in it) per role name, its rules
//!   merged and sorted as controller-gen merges them (`role.yaml`);
//! - `+kubebuilder:webhook:path=..,mutating=..,failurePolicy=..,sideEffects=..,groups=..,resources=..,verbs=..,versions=..,name=..,admissionReviewVersions=..`
//!   (and `matchPolicy`, `timeoutSeconds`, `reinvocationPolicy`, `url`, `serviceName`,
//!   `serviceNamespace`, `servicePort`), with `+kubebuilder:webhookconfiguration:mutating=..,name=..`
//!   naming the configurations -> a MutatingWebhookConfiguration and a
//!   ValidatingWebhookConfiguration (`manifests.yaml`).
//!
//! The markers may stand in any comment of any Rust file given (`//`, `///`, `//!`): Go
//! projects put them above `Reconcile`, and a Rust operator can do the same above its
//! reconcile function. Lists are `a;b` (or `{a,b}`); values may be quoted. Every
//! problem (an unknown argument, a missing one, a value outside the API's enum) is an
//! error at the marker's file:line:col; nothing is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::error::Error;

/// One manifest file.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFile {
    /// `role.yaml` or `manifests.yaml`.
    pub file_name: String,
    /// The objects, in order.
    pub objects: Vec<Value>,
    /// The objects as YAML documents, each after `---`.
    pub yaml: String,
}

/// A marker found in a comment.
#[derive(Debug, Clone)]
struct Found {
    file: PathBuf,
    line: usize,
    column: usize,
    /// The text after `+kubebuilder:<family>:`.
    args: String,
}

impl Found {
    fn error(&self, problem: impl Into<String>, fix: impl Into<String>) -> Error {
        Error::in_source(&self.file, self.line, self.column, problem, fix)
    }
}

/// Every `+kubebuilder:<family>:...` marker in comments of `files`, in file and line
/// order.
fn collect(files: &[PathBuf], family: &str) -> Result<Vec<Found>, Error> {
    let prefix = format!("+kubebuilder:{family}:");
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| {
            Error::at(
                "",
                format!("cannot read {}: {e}", file.display()),
                "check the path and that the file is UTF-8",
            )
        })?;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            let Some(comment) = trimmed.strip_prefix("//") else {
                continue;
            };
            let body = comment.trim_start_matches(['/', '!']).trim_start();
            let Some(args) = body.strip_prefix(&prefix) else {
                continue;
            };
            let column = line.len() - body.len() + 1;
            out.push(Found {
                file: file.clone(),
                line: i + 1,
                column,
                args: args.trim_end().to_owned(),
            });
        }
    }
    Ok(out)
}

/// `key=value,key=value` at top-level commas (quotes and `{...}` lists kept whole).
fn arguments(m: &Found, allowed: &[&str]) -> Result<BTreeMap<String, String>, Error> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<char>, 0usize);
    let mut chars = m.args.char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '`') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                parts.push(&m.args[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err(m.error(
            format!("`{}` has an unterminated quoted value", m.args),
            "close every quote",
        ));
    }
    parts.push(&m.args[start..]);
    let mut out = BTreeMap::new();
    for p in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = p.split_once('=') else {
            return Err(m.error(
                format!("`{p}` is not `key=value`"),
                "write each argument as key=value, separated by commas",
            ));
        };
        let k = k.trim();
        if !allowed.contains(&k) {
            return Err(m.error(
                format!("the marker has no argument `{k}`"),
                format!("use {}", allowed.join("=, ") + "="),
            ));
        }
        out.insert(k.to_owned(), v.trim().to_owned());
    }
    Ok(out)
}

/// One string: `"..."` (JSON escapes), `` `...` `` or bare.
fn string(v: &str) -> String {
    let t = v.trim();
    if t.starts_with('"') {
        serde_json::from_str(t).unwrap_or_else(|_| t.trim_matches('"').to_owned())
    } else if let Some(raw) = t.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        raw.to_owned()
    } else {
        t.to_owned()
    }
}

/// A list: `a;b;c` or `{a,b,c}`, items possibly quoted.
fn list(v: &str) -> Vec<String> {
    let t = v.trim();
    let (items, sep) = match t.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        Some(inner) => (inner, ','),
        None => (t, ';'),
    };
    items.split(sep).map(string).collect()
}

fn yaml_of(objects: &[Value]) -> Result<String, Error> {
    let mut out = String::new();
    for o in objects {
        out.push_str("---\n");
        out.push_str(&crate::crdgen::to_yaml(o)?);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// RBAC
// ---------------------------------------------------------------------------------

const RBAC_ARGS: &[&str] = &[
    "groups",
    "resources",
    "resourceNames",
    "verbs",
    "urls",
    "namespace",
    "roleName",
];

#[derive(Debug, Clone, Default)]
struct Rule {
    groups: Vec<String>,
    resources: Vec<String>,
    resource_names: Vec<String>,
    verbs: Vec<String>,
    urls: Vec<String>,
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

impl Rule {
    fn normalize(&mut self) {
        for list in [
            &mut self.groups,
            &mut self.resources,
            &mut self.resource_names,
            &mut self.verbs,
            &mut self.urls,
        ] {
            *list = sorted(std::mem::take(list));
        }
    }

    /// controller-gen's rule key: groups + resources + resource names + URLs.
    fn key(&self) -> String {
        format!(
            "{} + {} + {} + {}",
            self.groups.join("&"),
            self.resources.join("&"),
            self.resource_names.join("&"),
            self.urls.join("&")
        )
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: &Vec<String>| {
            if !v.is_empty() {
                m.insert(k.into(), json!(v));
            }
        };
        put("apiGroups", &self.groups);
        put("resources", &self.resources);
        put("resourceNames", &self.resource_names);
        put("nonResourceURLs", &self.urls);
        m.insert("verbs".into(), json!(self.verbs));
        Value::Object(m)
    }
}

/// Merges rules that differ in one dimension, as controller-gen does: the same key's
/// verbs, then resources of rules alike but for them, then groups, then URLs.
fn normalize_rules(rules: Vec<Rule>) -> Vec<Value> {
    let mut by_key: BTreeMap<String, Rule> = BTreeMap::new();
    for mut r in rules {
        for g in &mut r.groups {
            if g == "core" {
                g.clear();
            }
        }
        r.normalize();
        match by_key.get_mut(&r.key()) {
            Some(existing) => {
                existing.verbs.extend(r.verbs);
                existing.normalize();
            }
            None => {
                by_key.insert(r.key(), r);
            }
        }
    }
    type Dim = fn(&mut Rule) -> &mut Vec<String>;
    type Key = fn(&Rule) -> String;
    let merges: [(Key, Dim); 3] = [
        (
            |r| {
                format!(
                    "{:?}{:?}{:?}{:?}",
                    r.groups, r.resource_names, r.urls, r.verbs
                )
            },
            |r| &mut r.resources,
        ),
        (
            |r| {
                format!(
                    "{:?}{:?}{:?}{:?}",
                    r.resources, r.resource_names, r.urls, r.verbs
                )
            },
            |r| &mut r.groups,
        ),
        (
            |r| {
                format!(
                    "{:?}{:?}{:?}{:?}",
                    r.groups, r.resources, r.resource_names, r.verbs
                )
            },
            |r| &mut r.urls,
        ),
    ];
    for (group_key, dim) in merges {
        let mut grouped: BTreeMap<String, Rule> = BTreeMap::new();
        for (_, r) in by_key {
            match grouped.get_mut(&group_key(&r)) {
                Some(into) => {
                    let mut r = r;
                    let extra = std::mem::take(dim(&mut r));
                    dim(into).extend(extra);
                    into.normalize();
                }
                None => {
                    grouped.insert(group_key(&r), r);
                }
            }
        }
        by_key = grouped.into_values().map(|r| (r.key(), r)).collect();
    }
    by_key
        .into_values()
        .map(|mut r| {
            if r.verbs.iter().any(|v| v == "*") {
                r.verbs = vec!["*".to_owned()];
            }
            r.to_json()
        })
        .collect()
}

/// The RBAC manifest of `files`' `+kubebuilder:rbac` markers: ClusterRoles (Roles for
/// rules with `namespace=`) named `role_name` unless a rule says `roleName=`; `None`
/// when there is no marker.
pub fn rbac(files: &[PathBuf], role_name: &str) -> Result<Option<ManifestFile>, Vec<Error>> {
    let found = collect(files, "rbac").map_err(|e| vec![e])?;
    let mut by_role: BTreeMap<(String, String), Vec<Rule>> = BTreeMap::new();
    let mut errors = Vec::new();
    for m in &found {
        let args = match arguments(m, RBAC_ARGS) {
            Ok(a) => a,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let Some(verbs) = args.get("verbs") else {
            errors.push(m.error(
                "the rbac marker has no verbs",
                "add verbs=get;list;watch (the verbs the controller needs)",
            ));
            continue;
        };
        let get = |k: &str| args.get(k).map(|v| list(v)).unwrap_or_default();
        let namespace = args.get("namespace").map(|v| string(v)).unwrap_or_default();
        let role = args
            .get("roleName")
            .map(|v| string(v))
            .unwrap_or_else(|| role_name.to_owned());
        let base = Rule {
            groups: get("groups"),
            resources: Vec::new(),
            resource_names: get("resourceNames"),
            verbs: list(verbs),
            urls: get("urls"),
        };
        let rules = by_role.entry((namespace, role)).or_default();
        let resources = get("resources");
        if resources.is_empty() {
            rules.push(base);
        } else {
            for r in resources {
                rules.push(Rule {
                    resources: vec![r],
                    ..base.clone()
                });
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut objects = Vec::new();
    for ((namespace, role), rules) in by_role {
        let rules = normalize_rules(rules);
        if rules.is_empty() {
            continue;
        }
        let mut metadata = json!({ "name": role });
        let kind = if namespace.is_empty() {
            "ClusterRole"
        } else {
            metadata["namespace"] = json!(namespace);
            "Role"
        };
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": metadata,
            "rules": rules,
        }));
    }
    if objects.is_empty() {
        return Ok(None);
    }
    let yaml = yaml_of(&objects).map_err(|e| vec![e])?;
    Ok(Some(ManifestFile {
        file_name: "role.yaml".to_owned(),
        objects,
        yaml,
    }))
}

// ---------------------------------------------------------------------------------
// Webhooks
// ---------------------------------------------------------------------------------

const WEBHOOK_ARGS: &[&str] = &[
    "mutating",
    "failurePolicy",
    "matchPolicy",
    "sideEffects",
    "timeoutSeconds",
    "groups",
    "resources",
    "verbs",
    "versions",
    "name",
    "serviceName",
    "serviceNamespace",
    "path",
    "servicePort",
    "webhookVersions",
    "admissionReviewVersions",
    "reinvocationPolicy",
    "url",
];

/// One of a closed set of values, matched case-insensitively as controller-gen does.
fn one_of(v: &str, values: &[&str]) -> Option<String> {
    values
        .iter()
        .find(|x| x.eq_ignore_ascii_case(v))
        .map(|x| (*x).to_owned())
}

fn webhook(m: &Found) -> Result<(bool, String, Value), Error> {
    let args = arguments(m, WEBHOOK_ARGS)?;
    let required = |k: &str| {
        args.get(k).ok_or_else(|| {
            m.error(
                format!("the webhook marker has no `{k}`"),
                format!("add {k}=... (controller-gen requires it)"),
            )
        })
    };
    let mutating = match string(required("mutating")?).as_str() {
        "true" => true,
        "false" => false,
        other => {
            return Err(m.error(
                format!("mutating={other} is not a boolean"),
                "write mutating=true or mutating=false",
            ))
        }
    };
    let name = string(required("name")?);
    let failure_policy = string(required("failurePolicy")?);
    let failure_policy = one_of(&failure_policy, &["Ignore", "Fail"]).unwrap_or(failure_policy);
    let operations: Vec<String> = list(required("verbs")?)
        .into_iter()
        .map(|v| one_of(&v, &["CREATE", "UPDATE", "DELETE", "CONNECT", "*"]).unwrap_or(v))
        .collect();
    let groups: Vec<String> = list(required("groups")?)
        .into_iter()
        .map(|g| if g == "core" { String::new() } else { g })
        .collect();
    let rule = json!({
        "apiGroups": groups,
        "apiVersions": list(required("versions")?),
        "operations": operations,
        "resources": list(required("resources")?),
    });
    let review_versions = list(required("admissionReviewVersions")?);
    let side_effects = args
        .get("sideEffects")
        .and_then(|s| one_of(&string(s), &["None", "NoneOnDryRun", "Some", "Unknown"]));
    match side_effects.as_deref() {
        None => {
            return Err(m.error(
                "the webhook has no sideEffects (required by admissionregistration.k8s.io/v1)",
                "add sideEffects=None (or NoneOnDryRun)",
            ))
        }
        Some("Some" | "Unknown") => {
            return Err(m.error(
                "sideEffects Some and Unknown are not allowed by admissionregistration.k8s.io/v1",
                "use sideEffects=None or NoneOnDryRun",
            ))
        }
        _ => {}
    }
    let path = args.get("path").map(|p| string(p));
    let url = args.get("url").map(|u| string(u));
    let client_config =
        match (path, url) {
            (Some(path), None) => {
                let mut service = Map::new();
                service.insert(
                    "name".into(),
                    json!(args
                        .get("serviceName")
                        .map(|s| string(s))
                        .unwrap_or_else(|| "webhook-service".into())),
                );
                service.insert(
                    "namespace".into(),
                    json!(args
                        .get("serviceNamespace")
                        .map(|s| string(s))
                        .unwrap_or_else(|| "system".into())),
                );
                service.insert("path".into(), json!(path));
                if let Some(port) = args.get("servicePort") {
                    let port: i32 = string(port).parse().map_err(|_| {
                        m.error(
                            format!("servicePort={port} is not a port"),
                            "write servicePort=443",
                        )
                    })?;
                    service.insert("port".into(), json!(port));
                }
                json!({ "service": service })
            }
            (None, Some(url)) => json!({ "url": url }),
            _ => return Err(m.error(
                "the webhook needs exactly one of `path` (served by the webhook Service) and `url`",
                "write path=/validate-... (or url=https://...)",
            )),
        };
    let mut w = Map::new();
    w.insert("admissionReviewVersions".into(), json!(review_versions));
    w.insert("clientConfig".into(), client_config);
    w.insert("failurePolicy".into(), json!(failure_policy));
    if let Some(mp) = args.get("matchPolicy") {
        let mp = string(mp);
        let Some(mp) = one_of(&mp, &["Exact", "Equivalent"]) else {
            return Err(m.error(
                format!("unknown value {mp:?} for matchPolicy"),
                "write matchPolicy=Exact or matchPolicy=Equivalent",
            ));
        };
        w.insert("matchPolicy".into(), json!(mp));
    }
    w.insert("name".into(), json!(name));
    if mutating {
        if let Some(rp) = args
            .get("reinvocationPolicy")
            .and_then(|r| one_of(&string(r), &["Never", "IfNeeded"]))
        {
            w.insert("reinvocationPolicy".into(), json!(rp));
        }
    }
    w.insert("rules".into(), json!([rule]));
    w.insert("sideEffects".into(), json!(side_effects));
    if let Some(t) = args.get("timeoutSeconds") {
        let t: i32 = string(t).parse().unwrap_or(0);
        if t != 0 {
            if !(1..=30).contains(&t) {
                return Err(m.error(
                    format!("timeoutSeconds={t}: it must be between 1 and 30 seconds"),
                    "write timeoutSeconds=10",
                ));
            }
            w.insert("timeoutSeconds".into(), json!(t));
        }
    }
    if let Some(v) = args.get("webhookVersions") {
        if list(v).iter().any(|v| v != "v1") {
            return Err(m.error(
                format!("webhookVersions={v}: only v1 is supported"),
                "drop webhookVersions (v1 is the default)",
            ));
        }
    }
    Ok((mutating, name, Value::Object(w)))
}

/// The webhook configurations of `files`' `+kubebuilder:webhook` markers (webhooks
/// sorted by name, mutating first); `None` when there is no marker.
pub fn webhooks(files: &[PathBuf]) -> Result<Option<ManifestFile>, Vec<Error>> {
    let found = collect(files, "webhook").map_err(|e| vec![e])?;
    let configs = collect(files, "webhookconfiguration").map_err(|e| vec![e])?;
    let mut errors = Vec::new();
    let (mut mutating_name, mut validating_name) = (None::<String>, None::<String>);
    for m in &configs {
        match arguments(m, &["mutating", "name"]) {
            Ok(a) => {
                let mutating = a.get("mutating").map(|v| string(v)) == Some("true".into());
                let name = a.get("name").map(|v| string(v)).unwrap_or_default();
                let slot = if mutating {
                    &mut mutating_name
                } else {
                    &mut validating_name
                };
                if slot.is_some() {
                    errors.push(m.error(
                        format!(
                            "a second {} webhookconfiguration marker ({name})",
                            if mutating { "mutating" } else { "validating" }
                        ),
                        "keep one per kind of configuration",
                    ));
                }
                *slot = Some(name);
            }
            Err(e) => errors.push(e),
        }
    }
    let mut mutating = Vec::new();
    let mut validating = Vec::new();
    for m in &found {
        match webhook(m) {
            Ok((true, name, w)) => mutating.push((name, w)),
            Ok((false, name, w)) => validating.push((name, w)),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut objects = Vec::new();
    for (kind, mut hooks, name) in [
        (
            "MutatingWebhookConfiguration",
            mutating,
            mutating_name.unwrap_or_else(|| "mutating-webhook-configuration".into()),
        ),
        (
            "ValidatingWebhookConfiguration",
            validating,
            validating_name.unwrap_or_else(|| "validating-webhook-configuration".into()),
        ),
    ] {
        if hooks.is_empty() {
            continue;
        }
        hooks.sort_by(|a, b| a.0.cmp(&b.0));
        objects.push(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": { "name": name },
            "webhooks": hooks.into_iter().map(|(_, w)| w).collect::<Vec<_>>(),
        }));
    }
    if objects.is_empty() {
        return Ok(None);
    }
    let yaml = yaml_of(&objects).map_err(|e| vec![e])?;
    Ok(Some(ManifestFile {
        file_name: "manifests.yaml".to_owned(),
        objects,
        yaml,
    }))
}

/// The Rust files among `inputs` (files or directories, searched recursively).
pub fn rust_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    Ok(crate::input_files(inputs)?
        .into_iter()
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("rs"))
        .collect())
}

/// Writes `file` into `dir` (created if missing) when it changed; returns whether it did.
pub fn write(dir: &Path, file: &ManifestFile) -> Result<bool, Error> {
    crate::write_files(dir, [(file.file_name.as_str(), file.yaml.as_str())]).map(|n| n > 0)
}
