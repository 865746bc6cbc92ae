//! The namespace lifecycle of kube-apiserver (SEMANTICS 13, "Namespaces"): what the
//! Namespace strategy does to an object; kube-controller-manager's namespace controller
//! is `namespace_controller`.
//!
//! Contract:
//! - Every write of a Namespace sets the label `kubernetes.io/metadata.name` to its name;
//!   a created Namespace gets status `{phase: Active}` and `kubernetes` appended to
//!   `spec.finalizers`. Updates ignore changes to `spec.finalizers` (only
//!   `PUT .../finalize` changes them).
//! - `default`, `kube-system` and `kube-public` cannot be deleted (403). The first DELETE
//!   of another namespace sets `deletionTimestamp` and phase `Terminating` and answers 200
//!   with it; it is never removed by that request. A namespace goes once both
//!   `spec.finalizers` and `metadata.finalizers` are empty.
//! - The namespace controller then deletes every namespaced object in it (background
//!   propagation; objects with finalizers wait for them), writes the five deletion
//!   conditions, and, when nothing is left, removes `kubernetes` from `spec.finalizers`.
//!   It runs on a tokio task (in passes about 50 ms apart, while content remains), or,
//!   when the DELETE came from outside a tokio runtime, once, synchronously.
//! - Creating a namespaced object in a Terminating namespace -> 403 Forbidden with cause
//!   `NamespaceTerminating`, in both namespace modes; in strict mode a missing namespace
//!   -> 404. Updates, patches and deletes in a Terminating namespace are allowed.

use serde_json::{json, Map, Value};

use crate::errors::{GroupResource, StatusCause, StatusDetails, StatusError};

use crate::meta::{meta_mut, meta_str, now, spec_finalizers};
use crate::registry::{Object, Registration, Strategy, Subresource, SubresourceKind, Wake};

/// The namespaces a cluster starts with (strict mode creates them).
pub(crate) const SYSTEM: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];

/// The namespaces that cannot be deleted.
const UNDELETABLE: [&str; 3] = ["default", "kube-system", "kube-public"];

const LABEL: &str = "kubernetes.io/metadata.name";

pub(crate) fn set_spec_finalizers(obj: &mut Map<String, Value>, f: Vec<Value>) {
    let spec = obj.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    if let Some(s) = spec.as_object_mut() {
        s.insert("finalizers".into(), Value::Array(f));
    }
}

/// The label every write sets.
pub(crate) fn label(obj: &mut Map<String, Value>) -> Result<(), StatusError> {
    let name = meta_str(obj, "name").to_owned();
    let meta = meta_mut(obj)?;
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(l) = labels.as_object_mut() {
        l.insert(LABEL.into(), Value::String(name));
    }
    Ok(())
}

/// Create: status Active, `kubernetes` finalizer, label.
pub(crate) fn on_create(obj: &mut Map<String, Value>) -> Result<(), StatusError> {
    obj.insert("status".into(), json!({"phase": "Active"}));
    let mut f = spec_finalizers(obj);
    if !f.iter().any(|x| x == "kubernetes") {
        f.push(json!("kubernetes"));
    }
    set_spec_finalizers(obj, f);
    label(obj)
}

/// Update of the main resource: `spec.finalizers` stay as stored.
pub(crate) fn on_update(prev: &Map<String, Value>, new: &mut Map<String, Value>) {
    set_spec_finalizers(new, spec_finalizers(prev));
}

/// `PUT .../namespaces/<n>/finalize`: only `spec.finalizers` from the body.
pub(crate) fn on_finalize(
    prev: &Map<String, Value>,
    body: &Map<String, Value>,
) -> Map<String, Value> {
    let mut new = prev.clone();
    set_spec_finalizers(&mut new, spec_finalizers(body));
    new
}

/// 403 for the namespaces that may not be deleted.
pub(crate) fn check_deletable(name: &str) -> Result<(), StatusError> {
    if UNDELETABLE.contains(&name) {
        return Err(StatusError::new(
            403,
            "Forbidden",
            format!("namespaces {name:?} is forbidden: this namespace may not be deleted"),
        )
        .with_details(StatusDetails {
            name: name.into(),
            kind: "namespaces".into(),
            ..Default::default()
        }));
    }
    Ok(())
}

/// The first DELETE: deletionTimestamp and phase Terminating.
pub(crate) fn mark_terminating(obj: &mut Map<String, Value>) -> Result<(), StatusError> {
    let meta = meta_mut(obj)?;
    // kube-apiserver sets no deletionGracePeriodSeconds on a Namespace.
    meta.insert("deletionTimestamp".into(), Value::String(now()));
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(s) = status.as_object_mut() {
        s.insert("phase".into(), json!("Terminating"));
    }
    Ok(())
}

/// 403 for content created in a Terminating namespace.
pub(crate) fn terminating(reg: &Registration, ns: &str, name: &str) -> StatusError {
    let gr = GroupResource {
        group: &reg.group,
        resource: &reg.plural,
    };
    StatusError::new(
        403,
        "Forbidden",
        format!("{gr} {name:?} is forbidden: unable to create new content in namespace {ns} because it is being terminated"),
    )
    .with_details(StatusDetails {
        name: name.into(),
        group: reg.group.clone(),
        kind: reg.plural.clone(),
        causes: vec![StatusCause {
            reason: "NamespaceTerminating".into(),
            message: format!("namespace {ns} is being terminated"),
            field: "metadata.namespace".into(),
        }],
        ..Default::default()
    })
}

/// The Namespace strategy: the label, the `kubernetes` finalizer and phase Active on
/// create, `spec.finalizers` kept on update (only `finalize` writes them), the
/// undeletable namespaces, and a first DELETE that marks the namespace Terminating and
/// wakes the namespace controller.
pub(crate) struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn name(&self) -> &'static str {
        "namespaces"
    }
    fn prepare_for_create(&self, obj: &mut Object) -> Result<(), StatusError> {
        on_create(obj)
    }
    fn reset_status(&self, _reg: &Registration, _obj: &mut Object) {
        // The status is the one `prepare_for_create` sets ({phase: Active}).
    }
    fn prepare_for_update(&self, prev: &Object, new: &mut Object) {
        on_update(prev, new);
    }
    fn before_update(&self, new: &mut Object) -> Result<(), StatusError> {
        label(new)
    }
    fn check_deletable(&self, name: &str) -> Result<(), StatusError> {
        check_deletable(name)
    }
    fn begin_deletion(&self, obj: &mut Object) -> Result<Option<Wake>, StatusError> {
        mark_terminating(obj)?;
        Ok(Some(Wake::Namespace(meta_str(obj, "name").to_owned())))
    }
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource {
            name: "finalize",
            kind: SubresourceKind::Finalize,
        }]
    }
}
