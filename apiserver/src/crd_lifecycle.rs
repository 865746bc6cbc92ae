//! The lifecycle of a CustomResourceDefinition as kube-apiserver's apiextensions server
//! and its controllers run it (SEMANTICS 13, "CustomResourceDefinitions").
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

use super::registry::Registration;
use super::server::{meta_mut, meta_str, now, Inner, Propagation};
use super::writes::DeleteOpts;

/// How long the cleanup waits between passes while custom resources remain.
const PASS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// The finalizer that holds a CRD until its custom resources are deleted.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub(crate) fn is_crds(reg: &Registration) -> bool {
    reg.group == "apiextensions.k8s.io" && reg.plural == "customresourcedefinitions"
}

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
    if let Some(c) = spec.get("conversion") {
        conversion_causes(c, &mut causes);
    }
    causes.extend(super::crd::crd_rule_causes(&Value::Object(obj.clone())));
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
fn set_condition(
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
fn accept_names(obj: &mut Map<String, Value>) {
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

fn condition_true(obj: &Map<String, Value>, ty: &str) -> bool {
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
fn conflict(
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
fn reject_names(obj: &mut Map<String, Value>, reason: &str, message: &str) {
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

impl Inner {
    /// Whether the CRD serving `reg` is being deleted.
    pub(crate) fn crd_terminating(&self, st: &super::store::State, reg: &Registration) -> bool {
        if !reg.custom {
            return false;
        }
        let Some(i) = st.lookup("apiextensions.k8s.io/v1", "customresourcedefinitions") else {
            return false;
        };
        let key = format!("{}.{}", reg.plural, reg.group);
        st.collections[i]
            .objects
            .get(&key)
            .and_then(|s| s.to_value().ok())
            .is_some_and(|o| !meta_str(&o, "deletionTimestamp").is_empty())
    }

    /// Runs the names controller on a CRD (after a write): accepts its names and serves
    /// it, or reports the conflict and leaves it unserved.
    pub(crate) fn crd_names_pass(&self, name: &str) {
        let Some(idx) = self
            .state
            .read()
            .lookup("apiextensions.k8s.io/v1", "customresourcedefinitions")
        else {
            return;
        };
        let reg = self.registration(idx);
        let opts = Default::default();
        let ctx = super::writes::Ctx {
            idx,
            reg: &reg,
            opts: &opts,
        };
        let gc = {
            let mut st = self.state.write();
            let Some(old) = st.collections[idx].objects.get(name).cloned() else {
                return;
            };
            let Ok(prev) = old.to_value() else {
                return;
            };
            if !meta_str(&prev, "deletionTimestamp").is_empty() {
                return;
            }
            let mut new = prev.clone();
            // Names once accepted stay accepted.
            let conflict = if condition_true(&prev, "NamesAccepted") {
                None
            } else {
                conflict(&st, idx, &prev)
            };
            match conflict {
                None => {
                    accept_names(&mut new);
                    if let Ok(regs) = Registration::from_crd_value(&Value::Object(new.clone())) {
                        for r in regs {
                            st.register(r);
                        }
                    }
                }
                Some((reason, message)) => reject_names(&mut new, reason, &message),
            }
            match self.replace_locked(&mut st, &ctx, &old, &prev, new) {
                Ok((_, gc)) => gc,
                Err(_) => Vec::new(),
            }
        };
        self.collect_garbage(gc);
    }

    /// Starts the cleanup of a deleted CRD: on a task in a tokio runtime, else now.
    pub(crate) fn schedule_crd_cleanup(&self, name: String) {
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                // The task holds the server weakly: a server dropped without shutdown
                // ends it.
                let weak = self.me.clone();
                h.spawn(async move {
                    loop {
                        tokio::time::sleep(PASS_INTERVAL).await;
                        let Some(me) = weak.upgrade() else {
                            return;
                        };
                        if me.shutdown.is_cancelled() || me.crd_cleanup(&name) {
                            return;
                        }
                    }
                });
            }
            Err(_) => {
                self.crd_cleanup(&name);
            }
        }
    }

    /// Deletes every custom resource of a terminating CRD and, once none is left,
    /// releases the CRD; true when done.
    fn crd_cleanup(&self, name: &str) -> bool {
        let Some(idx) = self
            .state
            .read()
            .lookup("apiextensions.k8s.io/v1", "customresourcedefinitions")
        else {
            return true;
        };
        let _ = self.edit_object(idx, name, |o| {
            set_condition(
                o,
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            );
        });
        let targets: Vec<usize> = {
            let st = self.state.read();
            let (plural, group) = name.split_once('.').unwrap_or((name, ""));
            (0..st.collections.len())
                .filter(|i| {
                    let r = &st.collections[*i].reg;
                    r.custom && r.plural == plural && r.group == group
                })
                .collect()
        };
        let opts = DeleteOpts {
            propagation: Some(Propagation::Background),
            ..Default::default()
        };
        for i in &targets {
            let _ = self.delete_collection(*i, None, |_| true, &opts);
        }
        let remaining: usize = {
            let st = self.state.read();
            targets
                .iter()
                .map(|i| st.collections[*i].objects.len())
                .sum()
        };
        if remaining > 0 {
            // Custom resources with finalizers: poll until they are gone.
            return false;
        }
        let _ = self.edit_object(idx, name, |o| {
            set_condition(
                o,
                "Terminating",
                "False",
                "InstanceDeletionCompleted",
                "removed all instances",
            );
            if let Ok(meta) = meta_mut(o) {
                if let Some(Value::Array(a)) = meta.get_mut("finalizers") {
                    a.retain(|f| f != CLEANUP_FINALIZER);
                }
            }
        });
        true
    }

    /// Applies `f` to a stored cluster-scoped object and writes it.
    pub(crate) fn edit_object(
        &self,
        idx: usize,
        name: &str,
        f: impl FnOnce(&mut Map<String, Value>),
    ) -> Result<(), StatusError> {
        let reg = self.registration(idx);
        let opts = Default::default();
        let ctx = super::writes::Ctx {
            idx,
            reg: &reg,
            opts: &opts,
        };
        let gc = {
            let mut st = self.state.write();
            let Some(old) = st.collections[idx].objects.get(name).cloned() else {
                return Ok(());
            };
            let prev = old.to_value()?;
            let mut new = prev.clone();
            f(&mut new);
            self.replace_locked(&mut st, &ctx, &old, &prev, new)?.1
        };
        self.collect_garbage(gc);
        Ok(())
    }
}
