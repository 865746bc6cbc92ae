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

//!
//! One file per verb (`create`, `update`, `patch`, `delete`, `scale`), the garbage
//! collector in `gc`; what they share (options, the storage step, the merge of a body
//! over the stored object, [`Preconditions`]) is here.

mod actions;
pub(crate) use actions::actions_of;
mod create;
mod delete;
mod gc;
mod patch;
mod scale;
mod update;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::apply::{self, Manager, Part};
use crate::errors::{cause, GroupResource, StatusCause, StatusError};
use crate::meta::{has_finalizers, meta_mut, meta_str, now};
use crate::registry::{Registration, Wake};
use crate::server::Inner;
use crate::store::{encode, storage_key, EventType, State, Stored};

pub(crate) use create::on_client_create;

/// Options of create, update and patch.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOpts {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub force: bool,
    /// The apiVersion a custom resource write came through when another version stores
    /// the objects: its schema is the one that validates.
    pub schema_version: Option<String>,
    /// The write came through the API (not the admin API, which seeds fixtures as
    /// given): built-in kinds are defaulted and validated as kube-apiserver does.
    pub from_client: bool,
}

/// How a deletion propagates to dependents (`DeleteOptions.propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

/// Options of a deletion (`DeleteOptions`).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOpts {
    pub propagation: Option<Propagation>,
    pub grace_period_seconds: Option<i64>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub dry_run: bool,
    /// The deletion came through the API: a kind that deletes gracefully (Pods) is
    /// marked first, as kube-apiserver does; the admin API and the controllers remove
    /// at once.
    pub from_client: bool,
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

/// What a write requires of the stored object before it goes ahead; one check for every
/// verb, so each failure reads as kube-apiserver's (409 Conflict).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Preconditions<'a> {
    /// The `metadata.resourceVersion` the written body carries (optimistic concurrency;
    /// empty: an unconditional write).
    pub body_resource_version: &'a str,
    /// `DeleteOptions.preconditions.uid`.
    pub uid: Option<&'a str>,
    /// `DeleteOptions.preconditions.resourceVersion`.
    pub resource_version: Option<&'a str>,
}

impl<'a> Preconditions<'a> {
    /// The optimistic-concurrency precondition of an update or patch body.
    pub(crate) fn body(resource_version: &'a str) -> Self {
        Preconditions {
            body_resource_version: resource_version,
            ..Default::default()
        }
    }

    /// Checks the stored object `old` (parsed: `prev`) of `reg` named `name`.
    pub(crate) fn check(
        &self,
        reg: &Registration,
        name: &str,
        old: &Stored,
        prev: &Map<String, Value>,
    ) -> Result<(), StatusError> {
        let rv = old.rv.to_string();
        if !self.body_resource_version.is_empty() && self.body_resource_version != rv {
            return Err(StatusError::conflict(
                gr(reg),
                name,
                StatusError::OPTIMISTIC_LOCK_MESSAGE,
            ));
        }
        if let Some(u) = self.uid {
            let have = meta_str(prev, "uid");
            if u != have {
                return Err(StatusError::conflict(
                    gr(reg),
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {u}, UID in object meta: {have}"
                    ),
                ));
            }
        }
        if let Some(want) = self.resource_version {
            if want != rv {
                return Err(StatusError::conflict(
                    gr(reg),
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {rv}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn gr(reg: &Registration) -> GroupResource<'_> {
    GroupResource {
        group: &reg.group,
        resource: &reg.plural,
    }
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
    /// A controller a resource's strategy asked for.
    Wake(Wake),
}

/// What a write needs besides the object.
pub(crate) struct Ctx<'a> {
    pub idx: usize,
    pub reg: &'a Registration,
    pub opts: &'a WriteOpts,
}

impl Inner {
    /// Metadata and built-in kinds' validation (the `builtin_validation` module),
    /// custom-resource schema (pruning, defaults and validation, CEL rules included), and
    /// Events' validation, on create (`prev` None) or update.
    fn admit(
        &self,
        reg: &Registration,
        obj: &mut Map<String, Value>,
        prev: Option<&Map<String, Value>>,
        opts: &WriteOpts,
    ) -> Result<(), StatusError> {
        if opts.from_client {
            reg.strategy.defaults(reg, obj, prev);
            let causes = crate::builtin_validation::causes(reg, obj, prev);
            if !causes.is_empty() {
                let name = meta_str(obj, "name").to_owned();
                return Err(StatusError::invalid(&reg.group, &reg.kind, &name, causes));
            }
        }
        let through = opts
            .schema_version
            .as_deref()
            .and_then(|v| reg.version_schemas.get(v));
        match (&reg.schema, through) {
            (Some(_), Some(other)) => crate::crd::admit(reg, other, obj, prev),
            (Some(schema), None) => crate::crd::admit(reg, (schema, &reg.cel), obj, prev),
            (None, _) => reg.strategy.validate(reg, obj, prev),
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

    fn manager<'a>(&self, name: &'a str, part: Part, time: &'a str, av: &'a str) -> Manager<'a> {
        Manager {
            name,
            api_version: av,
            time,
            part,
            schema: None,
        }
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
            // Some status strategies take metadata too (Deployment's: annotations).
            for &k in reg.strategy.status_metadata() {
                match body.get("metadata").and_then(|m| m.get(k)) {
                    Some(a) => meta_mut(&mut n)?.insert(k.into(), a.clone()),
                    None => meta_mut(&mut n)?.remove(k),
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
            if part == Part::Main || (part == Part::Scale && reg.status) {
                match prev.get("status") {
                    Some(s) => body.insert("status".into(), s.clone()),
                    None => body.remove("status"),
                };
            }
            body.insert("kind".into(), Value::String(reg.kind.clone()));
            body.insert("apiVersion".into(), Value::String(reg.api_version()));
            body
        };
        // A status write is not a change of the spec: the built-in kinds' spec rules and
        // defaults are not applied to it (kube-apiserver's status strategies validate
        // the status), so a fixture seeded as given can have its status written.
        let status_opts;
        let opts = if part == Part::Status && ctx.opts.from_client {
            status_opts = WriteOpts {
                from_client: false,
                ..ctx.opts.clone()
            };
            &status_opts
        } else {
            ctx.opts
        };
        self.admit(reg, &mut new, Some(prev), opts)?;
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
        if changed && crate::builtin_defaults::has_generation(reg) {
            let g = prev
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta_mut(&mut new)?.insert("generation".into(), Value::from(g + 1));
        }
        let mut v = Value::Object(new);
        let (time, av) = (now(), reg.api_version());
        let mgr = ctx.opts.field_manager.as_deref().map(|m| Manager {
            schema: crate::openapi::merge_schema(ctx.reg),
            ..self.manager(m, part, &time, &av)
        });
        apply::record_update(Some(&Value::Object(prev.clone())), &mut v, mgr.as_ref());
        to_map(v)
    }

    /// The stored object `name` (404 when there is none).
    pub(crate) fn stored(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = self.registration(idx);
        let key = storage_key(if reg.namespaced { ns } else { "" }, name);
        self.state.read().collections[idx]
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| StatusError::not_found(gr(&reg), name))
    }

    /// Reads an object, lets `change` edit a copy (its main part, or only its status
    /// when `status_only`), and writes it back, all under the write lock: updates and
    /// the subresources that change one object in place (scale, binding, a budget's
    /// disruptions). `change` sees the stored object first, for preconditions.
    pub(crate) fn modify(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        opts: &WriteOpts,
        status_only: bool,
        change: impl FnOnce(&Arc<Stored>, &mut Map<String, Value>) -> Result<(), StatusError>,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = self.registration(idx);
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
            let prev = old.to_value()?;
            let mut body = prev.clone();
            change(&old, &mut body)?;
            let part = part_of(&reg, status_only);
            let mut new = self.merge_update(&ctx, &prev, body, part)?;
            if part != Part::Status {
                reg.strategy.prepare_for_update(&prev, &mut new);
            }
            self.replace_locked(&mut st, &ctx, &old, &prev, new)?
        };
        self.collect_garbage(gc);
        Ok(out)
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
        ctx.reg.strategy.before_update(&mut new)?;
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
        if !ctx.opts.dry_run {
            for wake in ctx.reg.strategy.after_write(&new, deleting) {
                match wake {
                    // Under the lock, so that no write reaches the resource once its
                    // definition is gone.
                    Wake::CrdRemoved => gc.extend(self.crd_removed(st, ctx.idx, &new)?),
                    other => gc.push(Gc::Wake(other)),
                }
            }
        }
        Ok((out, gc))
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

fn to_map(v: Value) -> Result<Map<String, Value>, StatusError> {
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(StatusError::bad_request("the object must be a JSON object")),
    }
}
