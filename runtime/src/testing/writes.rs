//! The write verbs: create, update (main resource and status), patch (JSON, merge,
//! strategic merge, server-side apply), delete with finalizers and preconditions, delete
//! collection, and a minimal garbage collector over ownerReferences.
//!
//! Contract:
//! - Every write happens under the storage lock: a patch reads, patches and stores the
//!   object atomically, so concurrent writers see exactly one winner per resourceVersion
//!   (the others get 409 Conflict when they sent that resourceVersion).
//! - A write that changes nothing (the same object apart from its resourceVersion) is not
//!   stored and emits no event, as etcd3's store does.
//! - `metadata.generation` starts at 1 and goes up by one on every change outside
//!   `metadata` (and outside `status` when the resource has a status subresource).
//! - The main resource ignores `status` when the status subresource is served; the
//!   status subresource ignores everything but `status`.
//! - An object with finalizers is only marked for deletion (deletionTimestamp and
//!   deletionGracePeriodSeconds); it goes when its last finalizer is removed. New
//!   finalizers cannot be added to an object being deleted (422).
//! - Garbage collection runs synchronously after the write that triggers it (the real
//!   collector is asynchronous, so clients must not depend on the order either way):
//!   Background deletes dependents once the owner is gone (a dependent with other owners
//!   only loses the reference), Foreground deletes the dependents while the owner waits
//!   under the `foregroundDeletion` finalizer, Orphan strips the owner's references from
//!   dependents and then removes the `orphan` finalizer. Dependents are found by the
//!   owner's uid; objects whose owner never existed are left alone.
//! - Dry-run writes validate and answer as a real write would, and store nothing.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::errors::{cause, GroupResource, StatusCause, StatusError};

use super::apply::{self, Manager, Part};
use super::crd_lifecycle;
use super::namespaces;
use super::patch;
use super::registry::Registration;
use super::server::{
    has_finalizers, meta_mut, meta_str, now, random_suffix, uid, Inner, Propagation,
};
use super::store::{encode, storage_key, EventType, State, Stored};

/// Options of create, update and patch.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOpts {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub force: bool,
}

/// Options of a deletion (`DeleteOptions`).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOpts {
    pub propagation: Option<Propagation>,
    pub grace_period_seconds: Option<i64>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub dry_run: bool,
}

/// The four PATCH content types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchKind {
    /// The patch type of a Content-Type (parameters ignored).
    pub(crate) fn from_content_type(ct: &str) -> Option<PatchKind> {
        let media = ct.split(';').next().unwrap_or_default().trim();
        match media {
            "application/json-patch+json" => Some(PatchKind::Json),
            "application/merge-patch+json" => Some(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Some(PatchKind::Strategic),
            "application/apply-patch+yaml" => Some(PatchKind::Apply),
            _ => None,
        }
    }
}

fn gr(reg: &Registration) -> GroupResource<'_> {
    GroupResource {
        group: &reg.group,
        resource: &reg.plural,
    }
}

const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// Whether `s` is a DNS-1123 subdomain (object names).
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

fn part_of(reg: &Registration, status_only: bool) -> Part {
    if status_only {
        Part::Status
    } else if reg.status {
        Part::Main
    } else {
        Part::All
    }
}

/// The object without what does not count for `metadata.generation`.
fn generation_view(obj: &Map<String, Value>, with_status: bool) -> Map<String, Value> {
    obj.iter()
        .filter(|(k, _)| {
            let skipped = matches!(k.as_str(), "metadata" | "kind" | "apiVersion")
                || (with_status && k.as_str() == "status");
            !skipped
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn finalizers(obj: &Map<String, Value>) -> Vec<Value> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn owner_uids(obj: &Map<String, Value>) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Work for the garbage collector.
#[derive(Debug)]
pub(crate) enum Gc {
    /// An object is gone: collect its dependents.
    Deleted(String),
    /// An owner waits under `orphan`.
    Orphan(usize, String, String),
    /// An owner waits under `foregroundDeletion`.
    Foreground(String),
    /// A namespace began terminating: run the namespace controller.
    Namespace(String),
    /// A CRD was written: run the names controller.
    CrdNames(String),
    /// A CRD began terminating: delete its custom resources.
    CrdCleanup(String),
}

/// What a write needs besides the object.
pub(crate) struct Ctx<'a> {
    pub idx: usize,
    pub reg: &'a Registration,
    pub opts: &'a WriteOpts,
}

impl Inner {
    /// Fills the server-set metadata of a new object and validates it.
    fn prepare_new(
        &self,
        reg: &Registration,
        ns: &str,
        obj: &mut Map<String, Value>,
    ) -> Result<bool, StatusError> {
        obj.insert("kind".into(), Value::String(reg.kind.clone()));
        obj.insert("apiVersion".into(), Value::String(reg.api_version()));
        let meta = meta_mut(obj)?;
        if reg.namespaced {
            let own = meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if !ns.is_empty() && !own.is_empty() && own != ns {
                return Err(StatusError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            let ns = if ns.is_empty() { own } else { ns.to_owned() };
            if ns.is_empty() {
                return Err(StatusError::bad_request(
                    "the server could not find the requested resource: a namespace is required",
                ));
            }
            meta.insert("namespace".into(), Value::String(ns));
        } else {
            meta.remove("namespace");
        }
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut generated = false;
        if name.is_empty() {
            let generate = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if generate.is_empty() {
                return Err(StatusError::invalid(
                    &reg.group,
                    &reg.kind,
                    "",
                    vec![StatusCause {
                        reason: cause::FIELD_VALUE_REQUIRED.into(),
                        message: "Required value: name or generateName is required".into(),
                        field: "metadata.name".into(),
                    }],
                ));
            }
            let prefix: String = generate.chars().take(58).collect();
            meta.insert(
                "name".into(),
                Value::String(format!("{prefix}{}", random_suffix())),
            );
            generated = true;
        }
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !is_dns1123_subdomain(&name) {
            return Err(StatusError::invalid(
                &reg.group,
                &reg.kind,
                &name,
                vec![StatusCause {
                    reason: cause::FIELD_VALUE_INVALID.into(),
                    message: format!("Invalid value: {name:?}: {DNS1123_SUBDOMAIN}"),
                    field: "metadata.name".into(),
                }],
            ));
        }
        meta.insert("uid".into(), Value::String(uid()));
        meta.insert("creationTimestamp".into(), Value::String(now()));
        meta.insert("generation".into(), Value::from(1));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("resourceVersion");
        if namespaces::is_namespaces(reg) {
            namespaces::on_create(obj)?;
        }
        if reg.group.is_empty() && reg.kind == "Secret" && obj.get("type").is_none_or(|t| t == "") {
            obj.insert("type".into(), Value::String("Opaque".into()));
        }
        self.admit(reg, obj, true)?;
        Ok(generated)
    }

    /// Custom-resource schema (pruning, defaults and validation), and the built-in
    /// validation the server implements (Events) on create or update.
    fn admit(
        &self,
        reg: &Registration,
        obj: &mut Map<String, Value>,
        creating: bool,
    ) -> Result<(), StatusError> {
        match &reg.schema {
            Some(schema) => super::crd::admit(reg, schema, obj),
            None if super::events::is_event(reg) => super::events::validate(reg, obj, creating),
            None => Ok(()),
        }
    }

    /// Namespace admission for creates: 403 into a Terminating namespace; in strict mode
    /// 404 into a missing one.
    fn check_namespace(
        &self,
        st: &State,
        reg: &Registration,
        obj: &Map<String, Value>,
        generated: bool,
    ) -> Result<(), StatusError> {
        let ns = meta_str(obj, "namespace");
        if !reg.namespaced || ns.is_empty() {
            return Ok(());
        }
        let Some(i) = st.lookup("v1", "namespaces") else {
            return Ok(());
        };
        match st.collections[i].objects.get(ns) {
            Some(n) => {
                let v = n.to_value()?;
                if meta_str(&v, "deletionTimestamp").is_empty() {
                    return Ok(());
                }
                // Admission runs before a name is generated.
                let name = if generated { "" } else { meta_str(obj, "name") };
                let name = [name, meta_str(obj, "generateName")]
                    .into_iter()
                    .find(|n| !n.is_empty())
                    .unwrap_or("Unknown");
                Err(namespaces::terminating(reg, ns, name))
            }
            None if !self.strict_namespaces => Ok(()),
            None => Err(StatusError::not_found(
                GroupResource {
                    group: "",
                    resource: "namespaces",
                },
                ns,
            )),
        }
    }

    fn store(
        &self,
        st: &mut State,
        idx: usize,
        reg: &Registration,
        obj: &Map<String, Value>,
        ty: EventType,
        dry_run: bool,
    ) -> Result<Arc<Stored>, StatusError> {
        if dry_run {
            let (_, stored) = encode(reg, obj, st.rv, ty)?;
            return Ok(Arc::new(stored));
        }
        let rv = st.rv + 1;
        let (frame, stored) = encode(reg, obj, rv, ty)?;
        st.rv = rv;
        let out = st.commit(idx, ty, frame, stored);
        self.rv_tx.send_replace(st.rv);
        Ok(out)
    }

    fn insert_locked(
        &self,
        st: &mut State,
        ctx: &Ctx<'_>,
        mut obj: Map<String, Value>,
        generated: bool,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = ctx.reg;
        self.check_namespace(st, reg, &obj, generated)?;
        let mut tries = 0;
        loop {
            let key = storage_key(meta_str(&obj, "namespace"), meta_str(&obj, "name"));
            if !st.collections[ctx.idx].objects.contains_key(&key) {
                break;
            }
            tries += 1;
            if !generated || tries > 8 {
                return Err(StatusError::already_exists(gr(reg), meta_str(&obj, "name")));
            }
            let generate = meta_str(&obj, "generateName")
                .chars()
                .take(58)
                .collect::<String>();
            meta_mut(&mut obj)?.insert(
                "name".into(),
                Value::String(format!("{generate}{}", random_suffix())),
            );
        }
        if self.crd_terminating(st, reg) {
            return Err(crd_lifecycle::terminating(reg, meta_str(&obj, "name")));
        }
        if crd_lifecycle::is_crds(reg) {
            crd_lifecycle::validate(&obj)?;
            crd_lifecycle::on_create(&mut obj);
            // Checked now, so that a CRD this server cannot serve is refused; the names
            // controller (run right after) serves it once its names are accepted.
            Registration::from_crd_value(&Value::Object(obj.clone()))?;
        }
        self.store(st, ctx.idx, reg, &obj, EventType::Added, ctx.opts.dry_run)
    }

    fn manager<'a>(&self, name: &'a str, part: Part, time: &'a str, av: &'a str) -> Manager<'a> {
        Manager {
            name,
            api_version: av,
            time,
            part,
        }
    }

    /// Creates an object in namespace `ns` (`""`: the object's own namespace).
    pub(crate) fn create(
        &self,
        idx: usize,
        ns: &str,
        mut obj: Map<String, Value>,
        opts: &WriteOpts,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = self.registration(idx);
        let generated = self.prepare_new(&reg, ns, &mut obj)?;
        let mut v = Value::Object(obj);
        if let Some(m) = opts.field_manager.as_deref() {
            let (time, av) = (now(), reg.api_version());
            let mgr = self.manager(m, Part::All, &time, &av);
            apply::record_update(None, &mut v, Some(&mgr));
        }
        let obj = to_map(v)?;
        let out = {
            let mut st = self.state.write();
            let ctx = Ctx {
                idx,
                reg: &reg,
                opts,
            };
            self.insert_locked(&mut st, &ctx, obj, generated)?
        };
        if crd_lifecycle::is_crds(&reg) && !opts.dry_run {
            self.crd_names_pass(&out.key);
        }
        Ok(out)
    }

    /// The new state of an object after a write of `body` over `prev`.
    fn merge_update(
        &self,
        ctx: &Ctx<'_>,
        prev: &Map<String, Value>,
        mut body: Map<String, Value>,
        part: Part,
    ) -> Result<Map<String, Value>, StatusError> {
        let reg = ctx.reg;
        let mut new = if part == Part::Status {
            let mut n = prev.clone();
            match body.remove("status") {
                Some(s) => n.insert("status".into(), s),
                None => n.remove("status"),
            };
            // Field ownership of the status (server-side apply on `status`) is kept.
            if let Some(mf) = body.get("metadata").and_then(|m| m.get("managedFields")) {
                meta_mut(&mut n)?.insert("managedFields".into(), mf.clone());
            }
            // Deployment's status strategy takes annotations too (not labels).
            if reg.group == "apps" && reg.kind == "Deployment" {
                match body.get("metadata").and_then(|m| m.get("annotations")) {
                    Some(a) => meta_mut(&mut n)?.insert("annotations".into(), a.clone()),
                    None => meta_mut(&mut n)?.remove("annotations"),
                };
            }
            n
        } else {
            let prev_meta = prev
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            {
                let meta = meta_mut(&mut body)?;
                for k in [
                    "name",
                    "uid",
                    "creationTimestamp",
                    "namespace",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                ] {
                    match prev_meta.get(k) {
                        Some(v) => meta.insert(k.into(), v.clone()),
                        None => meta.remove(k),
                    };
                }
                if !meta.contains_key("managedFields") {
                    if let Some(m) = prev_meta.get("managedFields") {
                        meta.insert("managedFields".into(), m.clone());
                    }
                }
            }
            if part == Part::Main {
                match prev.get("status") {
                    Some(s) => body.insert("status".into(), s.clone()),
                    None => body.remove("status"),
                };
            }
            body.insert("kind".into(), Value::String(reg.kind.clone()));
            body.insert("apiVersion".into(), Value::String(reg.api_version()));
            body
        };
        self.admit(reg, &mut new, false)?;
        // Finalizers cannot be added to an object being deleted.
        if !meta_str(prev, "deletionTimestamp").is_empty() {
            let old = finalizers(prev);
            let added: Vec<String> = finalizers(&new)
                .into_iter()
                .filter(|f| !old.contains(f))
                .map(|f| f.as_str().unwrap_or_default().to_owned())
                .collect();
            if !added.is_empty() {
                let name = meta_str(prev, "name").to_owned();
                return Err(StatusError::invalid(
                    &reg.group,
                    &reg.kind,
                    &name,
                    vec![StatusCause {
                        reason: cause::FIELD_VALUE_FORBIDDEN.into(),
                        message: format!(
                            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                        ),
                        field: "metadata.finalizers".into(),
                    }],
                ));
            }
        }
        let changed = generation_view(prev, reg.status) != generation_view(&new, reg.status);
        if changed {
            let g = prev
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta_mut(&mut new)?.insert("generation".into(), Value::from(g + 1));
        }
        let mut v = Value::Object(new);
        let (time, av) = (now(), reg.api_version());
        let mgr = ctx
            .opts
            .field_manager
            .as_deref()
            .map(|m| self.manager(m, part, &time, &av));
        apply::record_update(Some(&Value::Object(prev.clone())), &mut v, mgr.as_ref());
        to_map(v)
    }

    /// Stores `new` over `old` (or deletes it when its last finalizer went).
    pub(crate) fn replace_locked(
        &self,
        st: &mut State,
        ctx: &Ctx<'_>,
        old: &Arc<Stored>,
        prev: &Map<String, Value>,
        mut new: Map<String, Value>,
    ) -> Result<(Arc<Stored>, Vec<Gc>), StatusError> {
        if namespaces::is_namespaces(ctx.reg) {
            namespaces::label(&mut new)?;
        }
        let is_crd = crd_lifecycle::is_crds(ctx.reg);
        if is_crd {
            crd_lifecycle::validate(&new)?;
            crd_lifecycle::validate_stored_versions(&new)?;
        }
        // A write that changes nothing is not stored.
        let mut cmp = new.clone();
        meta_mut(&mut cmp)?.insert("resourceVersion".into(), Value::String(old.rv.to_string()));
        let mut prev_cmp = prev.clone();
        strip_times(&mut cmp);
        strip_times(&mut prev_cmp);
        if cmp == prev_cmp {
            return Ok((old.clone(), Vec::new()));
        }
        meta_mut(&mut new)?.remove("resourceVersion");
        let deleting = !meta_str(&new, "deletionTimestamp").is_empty() && !has_finalizers(&new);
        let ty = if deleting {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        let out = self.store(st, ctx.idx, ctx.reg, &new, ty, ctx.opts.dry_run)?;
        let mut gc = Vec::new();
        if deleting && !ctx.opts.dry_run {
            gc.push(Gc::Deleted(meta_str(&new, "uid").to_owned()));
        }
        // A changed CRD is served anew by the names controller; a deleted one stops
        // serving, and the CRDs of its group whose names it held are looked at again.
        if is_crd && !ctx.opts.dry_run {
            if deleting {
                for r in Registration::from_crd_value(&Value::Object(new.clone()))? {
                    st.unserve(&r);
                }
                gc.extend(
                    crd_lifecycle::group_crds(st, ctx.idx, &new)
                        .into_iter()
                        .map(Gc::CrdNames),
                );
            } else {
                gc.push(Gc::CrdNames(meta_str(&new, "name").to_owned()));
            }
        }
        Ok((out, gc))
    }

    /// Replaces an object (`status_only`: only its status, for the status subresource).
    pub(crate) fn update(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        obj: Map<String, Value>,
        status_only: bool,
        opts: &WriteOpts,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = self.registration(idx);
        let body_name = meta_str(&obj, "name").to_owned();
        if !body_name.is_empty() && body_name != name {
            return Err(StatusError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let want_rv = meta_str(&obj, "resourceVersion").to_owned();
        // The apiextensions server requires a resourceVersion on PUT (CRDs and custom
        // resources); built-in kinds allow an unconditional update.
        if want_rv.is_empty() && (reg.custom || crd_lifecycle::is_crds(&reg)) {
            let kind = if reg.custom { &reg.plural } else { &reg.kind };
            return Err(StatusError::invalid(
                &reg.group,
                kind,
                name,
                vec![StatusCause {
                    reason: cause::FIELD_VALUE_INVALID.into(),
                    message: "Invalid value: 0: must be specified for an update".into(),
                    field: "metadata.resourceVersion".into(),
                }],
            ));
        }
        let ctx = Ctx {
            idx,
            reg: &reg,
            opts,
        };
        let part = part_of(&reg, status_only);
        let (out, gc) = {
            let mut st = self.state.write();
            let key = storage_key(if reg.namespaced { ns } else { "" }, name);
            let old = st.collections[idx]
                .objects
                .get(&key)
                .cloned()
                .ok_or_else(|| StatusError::not_found(gr(&reg), name))?;
            if !want_rv.is_empty() && want_rv != old.rv.to_string() {
                return Err(StatusError::conflict(
                    gr(&reg),
                    name,
                    StatusError::OPTIMISTIC_LOCK_MESSAGE,
                ));
            }
            let prev = old.to_value()?;
            let mut new = self.merge_update(&ctx, &prev, obj, part)?;
            if namespaces::is_namespaces(&reg) && part != Part::Status {
                namespaces::on_update(&prev, &mut new);
            }
            if crd_lifecycle::is_crds(&reg) && part != Part::Status {
                crd_lifecycle::on_update(&mut new);
            }
            self.replace_locked(&mut st, &ctx, &old, &prev, new)?
        };
        self.collect_garbage(gc);
        Ok(out)
    }

    /// Patches an object; an apply patch creates it when absent.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn patch(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        kind: PatchKind,
        body: &Value,
        status_only: bool,
        opts: &WriteOpts,
    ) -> Result<(Arc<Stored>, bool), StatusError> {
        let reg = self.registration(idx);
        let part = part_of(&reg, status_only);
        let ctx = Ctx {
            idx,
            reg: &reg,
            opts,
        };
        if kind == PatchKind::Strategic && !reg.supports_strategic_merge() {
            return Err(StatusError::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            ));
        }
        let manager = opts.field_manager.clone().unwrap_or_default();
        if kind == PatchKind::Apply && manager.is_empty() {
            return Err(StatusError::bad_request(
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            ));
        }
        let (time, av) = (now(), reg.api_version());
        let (out, created, gc) = {
            let mut st = self.state.write();
            let key = storage_key(if reg.namespaced { ns } else { "" }, name);
            let old = st.collections[idx].objects.get(&key).cloned();
            let Some(old) = old else {
                if kind != PatchKind::Apply {
                    return Err(StatusError::not_found(gr(&reg), name));
                }
                let mgr = self.manager(&manager, part, &time, &av);
                let mut applied = body.clone();
                set_identity(&mut applied, reg.namespaced.then_some(ns), name)?;
                let mut v = apply::apply(
                    &Value::Null,
                    &applied,
                    &mgr,
                    opts.force,
                    (&reg.group, &reg.plural),
                )?;
                // The managed fields survive prepare_new; the rest is server-set.
                let mut obj = to_map(std::mem::take(&mut v))?;
                let generated = self.prepare_new(&reg, ns, &mut obj)?;
                let out = self.insert_locked(&mut st, &ctx, obj, generated)?;
                drop(st);
                if crd_lifecycle::is_crds(&reg) && !opts.dry_run {
                    self.crd_names_pass(&out.key);
                }
                return Ok((out, true));
            };
            let prev = old.to_value()?;
            let prev_v = Value::Object(prev.clone());
            let patched = match kind {
                PatchKind::Merge => {
                    let mut v = prev_v.clone();
                    patch::merge_patch(&mut v, body);
                    v
                }
                PatchKind::Json => patch::json_patch(&prev_v, body)?,
                PatchKind::Strategic => {
                    let mut v = prev_v.clone();
                    patch::strategic_merge_patch(&mut v, body)?;
                    v
                }
                PatchKind::Apply => {
                    let mut applied = body.clone();
                    set_identity(&mut applied, reg.namespaced.then_some(ns), name)?;
                    let mgr = self.manager(&manager, part, &time, &av);
                    apply::apply(
                        &prev_v,
                        &applied,
                        &mgr,
                        opts.force,
                        (&reg.group, &reg.plural),
                    )?
                }
            };
            let patched = to_map(patched)?;
            let want_rv = meta_str(&patched, "resourceVersion").to_owned();
            if !want_rv.is_empty() && want_rv != old.rv.to_string() {
                return Err(StatusError::conflict(
                    gr(&reg),
                    name,
                    StatusError::OPTIMISTIC_LOCK_MESSAGE,
                ));
            }
            let patched_name = meta_str(&patched, "name").to_owned();
            if patched_name != name {
                return Err(StatusError::bad_request(format!(
                    "the name of the object ({patched_name}) does not match the name on the URL ({name})"
                )));
            }
            // Apply already recorded its ownership; other patches are updates.
            let apply_opts = WriteOpts {
                dry_run: opts.dry_run,
                field_manager: None,
                force: false,
            };
            let uctx = Ctx {
                idx,
                reg: &reg,
                opts: &apply_opts,
            };
            let ctx_ref = if kind == PatchKind::Apply {
                &uctx
            } else {
                &ctx
            };
            let mut new = self.merge_update(ctx_ref, &prev, patched, part)?;
            if namespaces::is_namespaces(&reg) && part != Part::Status {
                namespaces::on_update(&prev, &mut new);
            }
            if crd_lifecycle::is_crds(&reg) && part != Part::Status {
                crd_lifecycle::on_update(&mut new);
            }
            let (out, gc) = self.replace_locked(&mut st, ctx_ref, &old, &prev, new)?;
            (out, false, gc)
        };
        self.collect_garbage(gc);
        Ok((out, created))
    }

    /// Deletes an object; one with finalizers only gets a deletionTimestamp. Returns the
    /// object and whether its deletion is still pending.
    pub(crate) fn delete(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<(Arc<Stored>, bool), StatusError> {
        let (out, pending, gc) = self.delete_locked(idx, ns, name, opts)?;
        self.collect_garbage(gc);
        Ok((out, pending))
    }

    fn delete_locked(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<(Arc<Stored>, bool, Vec<Gc>), StatusError> {
        let reg = self.registration(idx);
        let is_ns = namespaces::is_namespaces(&reg);
        if is_ns {
            namespaces::check_deletable(name)?;
        }
        let key = storage_key(if reg.namespaced { ns } else { "" }, name);
        let mut st = self.state.write();
        let old = st.collections[idx]
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| StatusError::not_found(gr(&reg), name))?;
        let mut obj = old.to_value()?;
        if let Some(u) = opts.uid.as_deref() {
            let have = meta_str(&obj, "uid");
            if u != have {
                return Err(StatusError::conflict(
                    gr(&reg),
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {u}, UID in object meta: {have}"
                    ),
                ));
            }
        }
        if let Some(rv) = opts.resource_version.as_deref() {
            if rv != old.rv.to_string() {
                return Err(StatusError::conflict(
                    gr(&reg),
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        old.rv
                    ),
                ));
            }
        }
        let finalizer = match opts.propagation {
            Some(Propagation::Foreground) => Some("foregroundDeletion"),
            Some(Propagation::Orphan) => Some("orphan"),
            _ => None,
        };
        if let Some(f) = finalizer {
            let meta = meta_mut(&mut obj)?;
            let list = meta
                .entry("finalizers")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(a) = list.as_array_mut() {
                if !a.iter().any(|v| v == f) {
                    a.push(Value::String(f.into()));
                }
            }
        }
        let uid = meta_str(&obj, "uid").to_owned();
        // A CRD's first DELETE holds it under the cleanup finalizer until its custom
        // resources are gone.
        if crd_lifecycle::is_crds(&reg) && meta_str(&obj, "deletionTimestamp").is_empty() {
            crd_lifecycle::mark_terminating(&mut obj)?;
            let meta = meta_mut(&mut obj)?;
            meta.insert("deletionTimestamp".into(), Value::String(now()));
            meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
            let out = self.store(&mut st, idx, &reg, &obj, EventType::Modified, opts.dry_run)?;
            let gc = if opts.dry_run {
                Vec::new()
            } else {
                vec![Gc::CrdCleanup(name.to_owned())]
            };
            return Ok((out, true, gc));
        }
        // A namespace's first DELETE only marks it; the namespace controller empties it.
        if is_ns && meta_str(&obj, "deletionTimestamp").is_empty() {
            namespaces::mark_terminating(&mut obj)?;
            let out = self.store(&mut st, idx, &reg, &obj, EventType::Modified, opts.dry_run)?;
            let mut gc = Vec::new();
            if !opts.dry_run {
                let fins = finalizers(&obj);
                if fins.iter().any(|f| f == "orphan") {
                    gc.push(Gc::Orphan(idx, key.clone(), uid.clone()));
                }
                if fins.iter().any(|f| f == "foregroundDeletion") {
                    gc.push(Gc::Foreground(uid));
                }
                gc.push(Gc::Namespace(name.to_owned()));
            }
            return Ok((out, true, gc));
        }
        if has_finalizers(&obj) {
            if !meta_str(&obj, "deletionTimestamp").is_empty() && finalizer.is_none() {
                return Ok((old, true, Vec::new()));
            }
            let meta = meta_mut(&mut obj)?;
            if !meta.contains_key("deletionTimestamp") {
                meta.insert("deletionTimestamp".into(), Value::String(now()));
                meta.insert(
                    "deletionGracePeriodSeconds".into(),
                    Value::from(opts.grace_period_seconds.unwrap_or(0)),
                );
            }
            let out = self.store(&mut st, idx, &reg, &obj, EventType::Modified, opts.dry_run)?;
            let mut gc = Vec::new();
            if !opts.dry_run {
                let fins = finalizers(&obj);
                if fins.iter().any(|f| f == "orphan") {
                    gc.push(Gc::Orphan(idx, key.clone(), uid.clone()));
                }
                if fins.iter().any(|f| f == "foregroundDeletion") {
                    gc.push(Gc::Foreground(uid));
                }
            }
            return Ok((out, true, gc));
        }
        let out = if opts.dry_run {
            old.clone()
        } else {
            let rv = st.rv + 1;
            let (frame, stored) = super::store::respliced(&old, rv, EventType::Deleted);
            st.rv = rv;
            let out = st.commit(idx, EventType::Deleted, frame, stored);
            self.rv_tx.send_replace(st.rv);
            out
        };
        let gc = if opts.dry_run {
            Vec::new()
        } else {
            vec![Gc::Deleted(uid)]
        };
        Ok((out, false, gc))
    }

    /// Deletes every object of `idx` in `ns` that `keep` selects; returns them.
    pub(crate) fn delete_collection(
        &self,
        idx: usize,
        ns: Option<&str>,
        select: impl Fn(&Stored) -> bool,
        opts: &DeleteOpts,
    ) -> Result<Vec<Arc<Stored>>, StatusError> {
        let targets: Vec<(String, String)> = {
            let st = self.state.read();
            let mut out = Vec::new();
            st.collections[idx].visit(None, ns, None, |o| {
                if select(o) {
                    let name = o.key.rsplit('/').next().unwrap_or_default().to_owned();
                    out.push((o.namespace.to_string(), name));
                }
                true
            });
            out
        };
        let mut deleted = Vec::new();
        for (ns, name) in targets {
            match self.delete(idx, &ns, &name, opts) {
                Ok((s, _)) => deleted.push(s),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }

    /// Objects whose ownerReferences name `uid`: (collection, namespace, name, object).
    fn dependents(&self, uid: &str) -> Vec<(usize, String, String, Map<String, Value>)> {
        let st = self.state.read();
        let mut out = Vec::new();
        let needle = uid.as_bytes();
        for (i, c) in st.collections.iter().enumerate() {
            for o in c.objects.values() {
                if needle.is_empty() || !contains(&o.bytes, needle) {
                    continue;
                }
                let Ok(v) = o.to_value() else { continue };
                if owner_uids(&v).iter().any(|u| u == uid) {
                    out.push((
                        i,
                        meta_str(&v, "namespace").to_owned(),
                        meta_str(&v, "name").to_owned(),
                        v,
                    ));
                }
            }
        }
        out
    }

    /// Rewrites an object with `f` applied to its current state (for the collector).
    fn gc_edit(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Map<String, Value>),
    ) -> Vec<Gc> {
        let reg = self.registration(idx);
        let opts = WriteOpts::default();
        let ctx = Ctx {
            idx,
            reg: &reg,
            opts: &opts,
        };
        let mut st = self.state.write();
        let key = storage_key(ns, name);
        let Some(old) = st.collections[idx].objects.get(&key).cloned() else {
            return Vec::new();
        };
        let Ok(prev) = old.to_value() else {
            return Vec::new();
        };
        let mut new = prev.clone();
        f(&mut new);
        match self.replace_locked(&mut st, &ctx, &old, &prev, new) {
            Ok((_, gc)) => gc,
            Err(_) => Vec::new(),
        }
    }

    /// Runs the garbage collector until it has nothing left to do.
    pub(crate) fn collect_garbage(&self, work: Vec<Gc>) {
        let mut queue: VecDeque<Gc> = work.into();
        while let Some(item) = queue.pop_front() {
            match item {
                Gc::Deleted(uid) => {
                    for (i, ns, name, obj) in self.dependents(&uid) {
                        let others = owner_uids(&obj).iter().filter(|u| **u != uid).count();
                        if others > 0 {
                            let gone = uid.clone();
                            queue.extend(self.gc_edit(i, &ns, &name, |o| {
                                remove_owner(o, &gone);
                            }));
                        } else if let Ok((_, _, more)) =
                            self.delete_locked(i, &ns, &name, &DeleteOpts::default())
                        {
                            queue.extend(more);
                        }
                    }
                    // An owner waiting for its dependents may be done now.
                    queue.extend(self.foreground_owners().into_iter().map(Gc::Foreground));
                }
                Gc::Orphan(idx, key, uid) => {
                    for (i, ns, name, _) in self.dependents(&uid) {
                        let gone = uid.clone();
                        queue.extend(self.gc_edit(i, &ns, &name, |o| remove_owner(o, &gone)));
                    }
                    let (ns, name) = match key.split_once('/') {
                        Some((n, m)) => (n.to_owned(), m.to_owned()),
                        None => (String::new(), key.clone()),
                    };
                    queue.extend(self.gc_edit(idx, &ns, &name, |o| {
                        remove_finalizer(o, "orphan");
                    }));
                }
                Gc::Namespace(name) => self.schedule_namespace(name),
                Gc::CrdNames(name) => self.crd_names_pass(&name),
                Gc::CrdCleanup(name) => self.schedule_crd_cleanup(name),
                Gc::Foreground(uid) => {
                    let deps = self.dependents(&uid);
                    let mut remaining = 0;
                    for (i, ns, name, obj) in deps {
                        remaining += 1;
                        if meta_str(&obj, "deletionTimestamp").is_empty() {
                            if let Ok((_, pending, more)) =
                                self.delete_locked(i, &ns, &name, &DeleteOpts::default())
                            {
                                queue.extend(more);
                                if !pending {
                                    remaining -= 1;
                                }
                            }
                        }
                    }
                    if remaining == 0 {
                        if let Some((idx, ns, name)) = self.find_uid(&uid) {
                            queue.extend(self.gc_edit(idx, &ns, &name, |o| {
                                remove_finalizer(o, "foregroundDeletion");
                            }));
                        }
                    }
                }
            }
        }
    }

    /// Where the object with this uid is.
    fn find_uid(&self, uid: &str) -> Option<(usize, String, String)> {
        let st = self.state.read();
        for (i, c) in st.collections.iter().enumerate() {
            for o in c.objects.values() {
                if !contains(&o.bytes, uid.as_bytes()) {
                    continue;
                }
                let Ok(v) = o.to_value() else { continue };
                if meta_str(&v, "uid") == uid {
                    return Some((
                        i,
                        meta_str(&v, "namespace").to_owned(),
                        meta_str(&v, "name").to_owned(),
                    ));
                }
            }
        }
        None
    }

    /// The uids of the objects waiting under `foregroundDeletion`.
    fn foreground_owners(&self) -> Vec<String> {
        {
            let st = self.state.read();
            let mut v = Vec::new();
            for c in &st.collections {
                for o in c.objects.values() {
                    if !contains(&o.bytes, b"foregroundDeletion") {
                        continue;
                    }
                    if let Ok(obj) = o.to_value() {
                        if finalizers(&obj).iter().any(|f| f == "foregroundDeletion") {
                            v.push(meta_str(&obj, "uid").to_owned());
                        }
                    }
                }
            }
            v
        }
    }
}

/// What kube-apiserver's create strategies do to a client's new object: the status of a
/// kind with a status subresource is dropped (a Pod's becomes `{phase: Pending,
/// qosClass}`).
/// Objects seeded through [`super::ApiServer`]'s own methods keep the status they are
/// given, as test fixtures need.
pub(crate) fn on_client_create(reg: &Registration, obj: &mut Map<String, Value>) {
    if reg.group.is_empty() && reg.kind == "Pod" {
        let qos = qos_class(obj);
        obj.insert(
            "status".into(),
            serde_json::json!({"phase": "Pending", "qosClass": qos}),
        );
    } else if reg.status && !namespaces::is_namespaces(reg) {
        obj.remove("status");
    }
}

/// A Pod's QoS class from its containers' resources: BestEffort without any request
/// or limit, Guaranteed when every container limits cpu and memory and requests what
/// it limits (a missing request defaults to the limit), Burstable otherwise.
fn qos_class(pod: &Map<String, Value>) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| {
            pod.get("spec")
                .and_then(|s| s.get(*k))
                .and_then(Value::as_array)
        })
        .flatten()
        .collect();
    let res = |c: &Value, k: &str| {
        c.get("resources")
            .and_then(|r| r.get(k))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let any = containers
        .iter()
        .any(|c| !res(c, "requests").is_empty() || !res(c, "limits").is_empty());
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let (req, lim) = (res(c, "requests"), res(c, "limits"));
        ["cpu", "memory"].iter().all(|r| lim.contains_key(*r))
            && req.iter().all(|(k, v)| lim.get(k) == Some(v))
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fn remove_owner(o: &mut Map<String, Value>, uid: &str) {
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        let empty = match meta
            .get_mut("ownerReferences")
            .and_then(Value::as_array_mut)
        {
            Some(refs) => {
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
                refs.is_empty()
            }
            None => false,
        };
        if empty {
            meta.remove("ownerReferences");
        }
    }
}

fn remove_finalizer(o: &mut Map<String, Value>, f: &str) {
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        let empty = match meta.get_mut("finalizers").and_then(Value::as_array_mut) {
            Some(list) => {
                list.retain(|x| x != f);
                list.is_empty()
            }
            None => false,
        };
        if empty {
            meta.remove("finalizers");
        }
    }
}

/// Ignores managedFields timestamps when deciding whether a write changed anything.
fn strip_times(o: &mut Map<String, Value>) {
    if let Some(list) = o
        .get_mut("metadata")
        .and_then(|m| m.get_mut("managedFields"))
        .and_then(Value::as_array_mut)
    {
        for e in list {
            if let Some(m) = e.as_object_mut() {
                m.remove("time");
            }
        }
    }
}

fn set_identity(v: &mut Value, ns: Option<&str>, name: &str) -> Result<(), StatusError> {
    let m = v
        .as_object_mut()
        .ok_or_else(|| StatusError::bad_request("the apply configuration must be an object"))?;
    let meta = meta_mut(m)?;
    let body_name = meta.get("name").and_then(Value::as_str).unwrap_or_default();
    if !body_name.is_empty() && body_name != name {
        return Err(StatusError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    meta.insert("name".into(), Value::String(name.to_owned()));
    if let Some(ns) = ns.filter(|n| !n.is_empty()) {
        meta.insert("namespace".into(), Value::String(ns.to_owned()));
    }
    Ok(())
}

fn to_map(v: Value) -> Result<Map<String, Value>, StatusError> {
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(StatusError::bad_request("the object must be a JSON object")),
    }
}

fn path_segments(path: &str) -> Vec<&str> {
    path.split('.').filter(|s| !s.is_empty()).collect()
}

fn at_path<'a>(v: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let segs = path_segments(path);
    let (first, rest) = segs.split_first()?;
    let mut cur = v.get(*first)?;
    for s in rest {
        cur = cur.get(*s)?;
    }
    Some(cur)
}

fn set_path(v: &mut Map<String, Value>, path: &str, x: Value) {
    let segs = path_segments(path);
    let Some((last, init)) = segs.split_last() else {
        return;
    };
    let mut cur = v;
    for s in init {
        let next = cur
            .entry((*s).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        match next {
            Value::Object(m) => cur = m,
            _ => return,
        }
    }
    cur.insert((*last).to_owned(), x);
}

/// A `LabelSelector` object in the selector string syntax.
fn format_selector(sel: &Value) -> String {
    if let Some(s) = sel.as_str() {
        return s.to_owned();
    }
    let mut parts = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let op = e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let vals: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            parts.push(match op {
                "In" => format!("{key} in ({})", vals.join(",")),
                "NotIn" => format!("{key} notin ({})", vals.join(",")),
                "Exists" => key.to_owned(),
                "DoesNotExist" => format!("!{key}"),
                _ => continue,
            });
        }
    }
    parts.join(",")
}

impl Inner {
    /// The `autoscaling/v1` Scale of an object.
    pub(crate) fn scale_of(reg: &Registration, obj: &Map<String, Value>) -> Value {
        let p = &reg.scale_paths;
        let meta = obj.get("metadata").cloned().unwrap_or_default();
        let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
        let mut m = Map::new();
        for k in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if !pick(k).is_null() {
                m.insert(k.into(), pick(k));
            }
        }
        let mut status = serde_json::json!({
            "replicas": at_path(obj, &p.status_replicas).cloned().unwrap_or(Value::from(0)),
        });
        if !p.label_selector.is_empty() {
            if let Some(sel) = at_path(obj, &p.label_selector) {
                status["selector"] = Value::String(format_selector(sel));
            }
        }
        serde_json::json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": Value::Object(m),
            "spec": {"replicas": at_path(obj, &p.spec_replicas).cloned().unwrap_or(Value::from(0))},
            "status": status,
        })
    }

    /// Reads the scale subresource.
    pub(crate) fn get_scale(&self, idx: usize, ns: &str, name: &str) -> Result<Value, StatusError> {
        let reg = self.registration(idx);
        let key = storage_key(if reg.namespaced { ns } else { "" }, name);
        let st = self.state.read();
        let old = st.collections[idx]
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| StatusError::not_found(gr(&reg), name))?;
        Ok(Self::scale_of(&reg, &old.to_value()?))
    }

    /// Writes the scale subresource: `spec.replicas` of the Scale goes to the object
    /// (409 on a stale `metadata.resourceVersion` in the Scale).
    pub(crate) fn update_scale(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        scale: &Value,
        opts: &WriteOpts,
    ) -> Result<Value, StatusError> {
        let reg = self.registration(idx);
        let replicas = scale
            .pointer("/spec/replicas")
            .filter(|r| r.is_i64() || r.is_u64())
            .cloned()
            .ok_or_else(|| {
                StatusError::invalid(
                    "autoscaling",
                    "Scale",
                    name,
                    vec![StatusCause {
                        reason: cause::FIELD_VALUE_REQUIRED.into(),
                        message: "Required value".into(),
                        field: "spec.replicas".into(),
                    }],
                )
            })?;
        if replicas.as_i64().is_some_and(|r| r < 0) {
            return Err(StatusError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![StatusCause {
                    reason: cause::FIELD_VALUE_INVALID.into(),
                    message: format!(
                        "Invalid value: {replicas}: must be greater than or equal to 0"
                    ),
                    field: "spec.replicas".into(),
                }],
            ));
        }
        let want_rv = scale
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let ctx = Ctx {
            idx,
            reg: &reg,
            opts,
        };
        let (out, gc) = {
            let mut st = self.state.write();
            let key = storage_key(if reg.namespaced { ns } else { "" }, name);
            let old = st.collections[idx]
                .objects
                .get(&key)
                .cloned()
                .ok_or_else(|| StatusError::not_found(gr(&reg), name))?;
            if !want_rv.is_empty() && want_rv != old.rv.to_string() {
                return Err(StatusError::conflict(
                    gr(&reg),
                    name,
                    StatusError::OPTIMISTIC_LOCK_MESSAGE,
                ));
            }
            let prev = old.to_value()?;
            let mut body = prev.clone();
            set_path(&mut body, &reg.scale_paths.spec_replicas, replicas);
            let new = self.merge_update(&ctx, &prev, body, part_of(&reg, false))?;
            self.replace_locked(&mut st, &ctx, &old, &prev, new)?
        };
        self.collect_garbage(gc);
        Ok(Self::scale_of(&reg, &out.to_value()?))
    }
}
