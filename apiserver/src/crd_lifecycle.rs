//! The lifecycle of a CustomResourceDefinition as kube-apiserver's apiextensions server
//! and its controllers run it (SEMANTICS 13, "CustomResourceDefinitions"): here what the
//! CRD strategy does to an object and the names the controllers decide; the names
//! controller and the cleanup that run them are `crd_controller`.
//!
//! Contract:
//! - Writes of a CRD are validated: name `<plural>.<group>`, a group with a dot, unique
//!   version names, exactly one storage version, a schema per version, a type on every
//!   specified property (unless int-or-string or preserving unknown fields), plural and
//!   kind present; violations -> 422 Invalid with one cause per problem.
//! - Create: status becomes `{storedVersions: [<storage version>]}`; an update of the
//!   main resource appends the storage version to `storedVersions` when missing (never
//!   removes one); every update must leave `storedVersions` non-empty, holding the
//!   storage version, and within `spec.versions` (422 otherwise).
//! - Right after every write the names controller runs (synchronously, after the
//!   response was computed): `acceptedNames` = `spec.names`, conditions NamesAccepted
//!   True NoConflicts and Established True InitialNamesAccepted, and the resource is
//!   served with the new schema, printer columns and subresources (OpenAPI included).
//!   A name another CRD of the group has accepted (plural, singular and short names
//!   share one pool, kind and list kind another) gives NamesAccepted False
//!   `<Plural|Singular|ShortNames|Kind|ListKind>Conflict` and Established False
//!   NotAccepted, and the resource is not served; names once accepted stay accepted.
//!   Deleting a CRD looks at the others of its group again.
//! - DELETE: deletionTimestamp, finalizer `customresourcecleanup.apiextensions.k8s.io`,
//!   condition Terminating True InstanceDeletionPending; creating a custom resource of it
//!   -> 403; the cleanup (a task polling every 50 ms, or one synchronous pass outside a
//!   tokio runtime) deletes every custom resource and, once none is left (finalizers
//!   done), sets Terminating False InstanceDeletionCompleted and removes the finalizer;
//!   the CRD goes and its URLs answer 404.

use serde_json::{json, Map, Value};

use crate::errors::{cause, StatusCause, StatusError};

use crate::meta::{meta_mut, meta_str, now};
use crate::registry::{Object, Registration, Strategy, Wake};

/// The finalizer that holds a CRD until its custom resources are deleted.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn invalid_cause(field: &str, value: &str, why: &str) -> StatusCause {
    StatusCause {
        reason: cause::FIELD_VALUE_INVALID.into(),
        message: format!("Invalid value: {value:?}: {why}"),
        field: field.into(),
    }
}

fn forbidden_cause(field: &str, why: &str) -> StatusCause {
    StatusCause {
        reason: cause::FIELD_VALUE_FORBIDDEN.into(),
        message: format!("Forbidden: {why}"),
        field: field.into(),
    }
}

fn required_cause(field: &str, why: &str) -> StatusCause {
    StatusCause {
        reason: cause::FIELD_VALUE_REQUIRED.into(),
        message: if why.is_empty() {
            "Required value".into()
        } else {
            format!("Required value: {why}")
        },
        field: field.into(),
    }
}

/// Validates a CRD (422 with every problem found).
pub(crate) fn validate(obj: &Map<String, Value>) -> Result<(), StatusError> {
    let name = meta_str(obj, "name").to_owned();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let s = |p: &str| spec.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let (group, plural, kind) = (s("/group"), s("/names/plural"), s("/names/kind"));
    let mut causes = Vec::new();
    if name != format!("{plural}.{group}") {
        causes.push(invalid_cause(
            "metadata.name",
            &name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        causes.push(required_cause("spec.group", ""));
    } else if !group.contains('.') {
        causes.push(invalid_cause(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        causes.push(required_cause("spec.names.plural", ""));
    }
    names_causes(&spec, &mut causes);
    let scope = s("/scope");
    if scope.is_empty() {
        causes.push(required_cause("spec.scope", ""));
    } else if !matches!(scope, "Cluster" | "Namespaced") {
        causes.push(StatusCause {
            reason: cause::FIELD_VALUE_NOT_SUPPORTED.into(),
            message: format!(
                "Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""
            ),
            field: "spec.scope".into(),
        });
    }
    if kind.is_empty() {
        causes.push(required_cause("spec.names.kind", ""));
    }
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push(required_cause(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    }
    let mut seen = Vec::new();
    let mut storage = 0;
    for (i, v) in versions.iter().enumerate() {
        let vname = v.get("name").and_then(Value::as_str).unwrap_or_default();
        if seen.contains(&vname) {
            causes.push(invalid_cause(
                "spec.versions",
                vname,
                "must contain unique version names",
            ));
        }
        seen.push(vname);
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        // The schema's structural rules are crd_validation's (crd_rule_causes below).
        if v.pointer("/schema/openAPIV3Schema").is_none() {
            causes.push(required_cause(
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "",
            ));
        }
    }
    if !versions.is_empty() && storage != 1 {
        causes.push(invalid_cause(
            "spec.versions",
            &format!("{storage} storage versions"),
            "must have exactly one version marked as storage version",
        ));
    }
    // A new CRD's storedVersions are its storage version: none without one.
    let stored = obj
        .get("status")
        .and_then(|st| st.get("storedVersions"))
        .and_then(Value::as_array);
    if storage == 0 && stored.is_none_or(|s| s.is_empty()) {
        causes.push(StatusCause {
            reason: cause::FIELD_VALUE_INVALID.into(),
            message: "Invalid value: null: must have at least one stored version".into(),
            field: "status.storedVersions".into(),
        });
    }
    if let Some(c) = spec.get("conversion") {
        conversion_causes(c, &mut causes);
    }
    let whole = Value::Object(obj.clone());
    causes.extend(crate::crd::crd_rule_causes(&whole));
    causes.extend(crate::crd::default_causes(&whole));
    if causes.is_empty() {
        Ok(())
    } else {
        Err(StatusError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            &name,
            causes,
        ))
    }
}

const DNS1035_LABEL: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Whether `s` is a DNS-1035 label (a CRD's plural, singular and short names).
fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() <= 63
        && b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// `spec.names`: plural, singular and short names are DNS-1035 labels.
fn names_causes(spec: &Value, causes: &mut Vec<StatusCause>) {
    let names = spec.get("names");
    let mut check = |field: String, v: &str| {
        if !v.is_empty() && !is_dns1035_label(v) {
            causes.push(invalid_cause(&field, v, DNS1035_LABEL));
        }
    };
    for k in ["plural", "singular"] {
        let v = names.and_then(|n| n.get(k)).and_then(Value::as_str);
        check(format!("spec.names.{k}"), v.unwrap_or_default());
    }
    let short = names
        .and_then(|n| n.get("shortNames"))
        .and_then(Value::as_array);
    for (i, v) in short.into_iter().flatten().enumerate() {
        check(
            format!("spec.names.shortNames[{i}]"),
            v.as_str().unwrap_or_default(),
        );
    }
}

/// `spec.conversion`, checked as kube-apiserver checks it (its field paths name the
/// internal `webhookClientConfig`, as its messages do).
fn conversion_causes(c: &Value, causes: &mut Vec<StatusCause>) {
    let strategy = c
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let hook = c.get("webhook");
    let cc = hook.and_then(|h| h.get("clientConfig"));
    let review: Vec<&str> = hook
        .and_then(|h| h.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match strategy {
        "" => causes.push(required_cause("spec.conversion.strategy", "")),
        "None" => {
            if cc.is_some() {
                causes.push(forbidden_cause(
                    "spec.conversion.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if !review.is_empty() {
                causes.push(forbidden_cause(
                    "spec.conversion.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        "Webhook" => {
            match cc {
                None => causes.push(required_cause(
                    "spec.conversion.webhookClientConfig",
                    "required when strategy is set to Webhook",
                )),
                Some(cc) if cc.get("url").is_some() == cc.get("service").is_some() => {
                    causes.push(required_cause(
                        "spec.conversion.webhookClientConfig",
                        "exactly one of url or service is required",
                    ))
                }
                Some(_) => {}
            }
            if review.is_empty() {
                causes.push(required_cause(
                    "spec.conversion.conversionReviewVersions",
                    "",
                ));
            } else if !review.iter().any(|v| *v == "v1" || *v == "v1beta1") {
                causes.push(StatusCause {
                    reason: cause::FIELD_VALUE_INVALID.into(),
                    message: format!(
                        "Invalid value: []string{{\"{}\"}}: must include at least one of v1, v1beta1",
                        review.join("\", \"")
                    ),
                    field: "spec.conversion.conversionReviewVersions".into(),
                });
            }
        }
        other => causes.push(StatusCause {
            reason: cause::FIELD_VALUE_NOT_SUPPORTED.into(),
            message: format!(
                "Unsupported value: \"{other}\": supported values: \"None\", \"Webhook\""
            ),
            field: "spec.conversion.strategy".into(),
        }),
    }
}

fn storage_version(obj: &Map<String, Value>) -> Option<String> {
    obj.get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Create: status cleared, then `storedVersions` = the storage version.
pub(crate) fn on_create(obj: &mut Map<String, Value>) {
    let stored: Vec<Value> = storage_version(obj)
        .into_iter()
        .map(Value::String)
        .collect();
    obj.insert("status".into(), json!({"storedVersions": stored}));
}

/// Update: the storage version joins `storedVersions` when missing.
pub(crate) fn on_update(obj: &mut Map<String, Value>) {
    let Some(v) = storage_version(obj) else {
        return;
    };
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(s) = status.as_object_mut() {
        let list = s
            .entry("storedVersions")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(a) = list.as_array_mut() {
            if !a.iter().any(|x| x == v.as_str()) {
                a.push(Value::String(v));
            }
        }
    }
}

/// `status.storedVersions` rules, checked on every update: not empty, holding the
/// storage version, every entry still in `spec.versions`.
pub(crate) fn validate_stored_versions(obj: &Map<String, Value>) -> Result<(), StatusError> {
    let stored: Vec<String> = obj
        .get("status")
        .and_then(|s| s.get("storedVersions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let versions: Vec<&str> = obj
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    let shown = format!("{stored:?}");
    let mut causes = Vec::new();
    if stored.is_empty() {
        causes.push(invalid_cause(
            "status.storedVersions",
            &shown,
            "must have at least one stored version",
        ));
    } else if let Some(v) = storage_version(obj) {
        if !stored.contains(&v) {
            causes.push(invalid_cause(
                "status.storedVersions",
                &shown,
                &format!("must have the storage version {v}"),
            ));
        }
    }
    for (i, v) in stored.iter().enumerate() {
        if !versions.contains(&v.as_str()) {
            causes.push(invalid_cause(
                &format!("status.storedVersions[{i}]"),
                v,
                &format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
            ));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(StatusError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            meta_str(obj, "name"),
            causes,
        ))
    }
}

/// Sets (or replaces) a condition, keeping `lastTransitionTime` when the status stays.
pub(crate) fn set_condition(
    obj: &mut Map<String, Value>,
    ty: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let st = obj.entry("status").or_insert_with(|| json!({}));
    if !st.is_object() {
        *st = json!({});
    }
    let Some(st) = st.as_object_mut() else {
        return;
    };
    let conds = st
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(conds) = conds.as_array_mut() else {
        return;
    };
    let mut c = json!({"type": ty, "status": status, "reason": reason, "message": message, "lastTransitionTime": now()});
    match conds
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
    {
        Some(old) => {
            if old.get("status").and_then(Value::as_str) == Some(status) {
                if let Some(t) = old.get("lastTransitionTime") {
                    c["lastTransitionTime"] = t.clone();
                }
            }
            *old = c;
        }
        None => conds.push(c),
    }
}

/// The names controller: names accepted, CRD established.
pub(crate) fn accept_names(obj: &mut Map<String, Value>) {
    if let Some(names) = obj.get("spec").and_then(|s| s.get("names")).cloned() {
        let mut names = names;
        if let Some(n) = names.as_object_mut() {
            let kind = n
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            n.entry("singular")
                .or_insert_with(|| Value::String(kind.to_lowercase()));
            n.entry("listKind")
                .or_insert_with(|| Value::String(format!("{kind}List")));
        }
        if let Some(Value::Object(st)) = obj.get_mut("status") {
            st.insert("acceptedNames".into(), names);
        }
    }
    set_condition(
        obj,
        "NamesAccepted",
        "True",
        "NoConflicts",
        "no conflicts found",
    );
    set_condition(
        obj,
        "Established",
        "True",
        "InitialNamesAccepted",
        "the initial names have been accepted",
    );
}

pub(crate) fn condition_true(obj: &Map<String, Value>, ty: &str) -> bool {
    obj.get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some(ty)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

fn strs(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// The names of the other CRDs of `crd`'s group.
pub(crate) fn group_crds(
    st: &super::store::State,
    idx: usize,
    crd: &Map<String, Value>,
) -> Vec<String> {
    let group = crd.get("spec").and_then(|s| s.get("group"));
    let me = meta_str(crd, "name");
    st.collections[idx]
        .objects
        .values()
        .filter_map(|o| o.to_value().ok())
        .filter(|o| {
            o.get("spec").and_then(|s| s.get("group")) == group && meta_str(o, "name") != me
        })
        .map(|o| meta_str(&o, "name").to_owned())
        .collect()
}

/// The first name of `crd` another CRD of its group has accepted: reason and message.
pub(crate) fn conflict(
    st: &super::store::State,
    idx: usize,
    crd: &Map<String, Value>,
) -> Option<(&'static str, String)> {
    let names = crd.get("spec").and_then(|s| s.get("names"))?;
    let group = crd.get("spec").and_then(|s| s.get("group"));
    let me = meta_str(crd, "name");
    let mut resource_pool = Vec::new();
    let mut kind_pool = Vec::new();
    for o in st.collections[idx].objects.values() {
        let Ok(o) = o.to_value() else { continue };
        if meta_str(&o, "name") == me || o.get("spec").and_then(|s| s.get("group")) != group {
            continue;
        }
        let Some(acc) = o.get("status").and_then(|s| s.get("acceptedNames")) else {
            continue;
        };
        for k in ["plural", "singular", "shortNames"] {
            resource_pool.extend(strs(acc.get(k)));
        }
        for k in ["kind", "listKind"] {
            kind_pool.extend(strs(acc.get(k)));
        }
    }
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let checks: [(&str, &'static str, Vec<String>, &Vec<String>); 5] = [
        (
            "plural",
            "PluralConflict",
            strs(names.get("plural")),
            &resource_pool,
        ),
        (
            "singular",
            "SingularConflict",
            strs(names.get("singular")),
            &resource_pool,
        ),
        (
            "shortNames",
            "ShortNamesConflict",
            strs(names.get("shortNames")),
            &resource_pool,
        ),
        ("kind", "KindConflict", strs(names.get("kind")), &kind_pool),
        (
            "listKind",
            "ListKindConflict",
            strs(names.get("listKind"))
                .into_iter()
                .chain((names.get("listKind").is_none()).then(|| format!("{kind}List")))
                .collect(),
            &kind_pool,
        ),
    ];
    for (_, reason, mine, pool) in checks {
        if let Some(n) = mine.iter().find(|n| pool.contains(n)) {
            return Some((reason, format!("{n:?} is already in use")));
        }
    }
    None
}

/// Names not accepted: NamesAccepted False, and Established False unless it already was
/// established.
pub(crate) fn reject_names(obj: &mut Map<String, Value>, reason: &str, message: &str) {
    let established = condition_true(obj, "Established");
    set_condition(obj, "NamesAccepted", "False", reason, message);
    if !established {
        set_condition(
            obj,
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        );
    }
}

/// The first DELETE of a CRD: the cleanup finalizer and condition.
pub(crate) fn mark_terminating(obj: &mut Map<String, Value>) -> Result<(), StatusError> {
    let meta = meta_mut(obj)?;
    let fins = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(a) = fins.as_array_mut() {
        if !a.iter().any(|f| f == CLEANUP_FINALIZER) {
            a.push(Value::String(CLEANUP_FINALIZER.into()));
        }
    }
    set_condition(
        obj,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    );
    let meta = meta_mut(obj)?;
    meta.insert("deletionTimestamp".into(), Value::String(now()));
    meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
    Ok(())
}

/// 403 for a custom resource created while its CRD terminates.
pub(crate) fn terminating(reg: &Registration, name: &str) -> StatusError {
    StatusError::new(
        403,
        "Forbidden",
        format!(
            "{}.{} {name:?} is forbidden: create not allowed while custom resource definition is terminating",
            reg.plural, reg.group
        ),
    )
}

/// The CRD strategy: validation of every write, `storedVersions` kept, a PUT needs a
/// resourceVersion, a first DELETE holds the CRD under the cleanup finalizer; after
/// every write the names controller runs, and a CRD that is gone stops being served.
pub(crate) struct CrdStrategy;

impl Strategy for CrdStrategy {
    fn name(&self) -> &'static str {
        "customresourcedefinitions"
    }
    fn validate(
        &self,
        _reg: &Registration,
        obj: &Object,
        _prev: Option<&Object>,
    ) -> Result<(), StatusError> {
        validate(obj)
    }
    fn before_insert(&self, obj: &mut Object) -> Result<(), StatusError> {
        validate(obj)?;
        on_create(obj);
        // Checked now, so that a CRD this server cannot serve is refused; the names
        // controller (run right after) serves it once its names are accepted.
        Registration::from_crd_value(&Value::Object(obj.clone()))?;
        Ok(())
    }
    fn prepare_for_update(&self, _prev: &Object, new: &mut Object) {
        on_update(new);
    }
    fn before_update(&self, new: &mut Object) -> Result<(), StatusError> {
        validate(new)?;
        validate_stored_versions(new)
    }
    fn update_requires_resource_version(&self, _reg: &Registration) -> bool {
        true
    }
    fn begin_deletion(&self, obj: &mut Object) -> Result<Option<Wake>, StatusError> {
        mark_terminating(obj)?;
        Ok(Some(Wake::CrdCleanup(meta_str(obj, "name").to_owned())))
    }
    fn after_write(&self, obj: &Object, removed: bool) -> Vec<Wake> {
        if removed {
            vec![Wake::CrdRemoved]
        } else {
            vec![Wake::CrdNames(meta_str(obj, "name").to_owned())]
        }
    }
}
