//! Patch: JSON patch, merge patch, strategic merge patch (built-in kinds) and
//! server-side apply (which creates the object when absent).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{gr, part_of, to_map, Ctx, PatchKind, Preconditions, WriteOpts};
use crate::apply::{self, Part};
use crate::errors::{cause, StatusCause, StatusError};
use crate::meta::{meta_mut, meta_str, now};
use crate::patch;
use crate::registry::Registration;
use crate::server::Inner;
use crate::store::{storage_key, Stored};

impl Inner {
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
        let part = part_of(&self.registration(idx), status_only);
        self.patch_part(idx, ns, name, kind, body, part, opts)
    }

    /// Server-side apply of an `autoscaling/v1` Scale to the `scale` subresource: its
    /// `spec.replicas` is applied to the object's replicas field, owned by the manager
    /// with subresource `scale` (so a manager of the object's own replicas conflicts, as
    /// in kube-apiserver). The object must exist. Answers the new Scale.
    pub(crate) fn apply_scale(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        scale: &Value,
        opts: &WriteOpts,
    ) -> Result<Value, StatusError> {
        let reg = self.registration(idx);
        let kind = scale.get("kind").and_then(Value::as_str).unwrap_or("Scale");
        let api_version = scale
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("autoscaling/v1");
        if kind != "Scale" || api_version != "autoscaling/v1" {
            return Err(StatusError::bad_request(format!(
                "the scale subresource applies an autoscaling/v1 Scale, not {api_version} {kind}"
            )));
        }
        // Apply to a subresource never creates the object.
        self.get_scale(idx, ns, name)?;
        let mut applied = serde_json::json!({
            "apiVersion": reg.api_version(),
            "kind": reg.kind,
            "metadata": {"name": name},
        });
        if let (Some(replicas), Some(obj)) =
            (scale.pointer("/spec/replicas"), applied.as_object_mut())
        {
            super::scale::set_path(obj, &reg.scale_paths.spec_replicas, replicas.clone());
        }
        let (out, _) =
            self.patch_part(idx, ns, name, PatchKind::Apply, &applied, Part::Scale, opts)?;
        Ok(Self::scale_of(&reg, &out.to_value()?))
    }

    #[allow(clippy::too_many_arguments)]
    fn patch_part(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        kind: PatchKind,
        body: &Value,
        part: Part,
        opts: &WriteOpts,
    ) -> Result<(Arc<Stored>, bool), StatusError> {
        let reg = self.registration(idx);
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
        if kind == PatchKind::Apply {
            check_apply(&reg, &manager, body)?;
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
                let mgr = apply::Manager {
                    schema: crate::openapi::merge_schema(&reg),
                    ..self.manager(&manager, part, &time, &av)
                };
                let mut applied = body.clone();
                set_identity(&mut applied, reg.namespaced.then_some(ns), name)?;
                let mut v = apply::apply(&Value::Null, &applied, &mgr, opts.force)?;
                // The managed fields survive prepare_new; the rest is server-set.
                let mut obj = to_map(std::mem::take(&mut v))?;
                let generated = self.prepare_new(&reg, ns, &mut obj, opts)?;
                let out = self.insert_locked(&mut st, &ctx, obj, generated)?;
                drop(st);
                self.after_create(&reg, &out, opts)?;
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
                    let mgr = apply::Manager {
                        schema: crate::openapi::merge_schema(&reg),
                        ..self.manager(&manager, part, &time, &av)
                    };
                    let mut out = apply::apply(&prev_v, &applied, &mgr, opts.force)?;
                    if manager == "kubectl" {
                        keep_last_applied(&prev, &mut out, body)?;
                    }
                    out
                }
            };
            let patched = to_map(patched)?;
            if kind != PatchKind::Apply {
                check_patched_type(&reg, &patched)?;
            }
            Preconditions::body(meta_str(&patched, "resourceVersion"))
                .check(&reg, name, &old, &prev)?;
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
                schema_version: opts.schema_version.clone(),
                from_client: opts.from_client,
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
            if part != Part::Status {
                reg.strategy.prepare_for_update(&prev, &mut new);
            }
            let (out, gc) = self.replace_locked(&mut st, ctx_ref, &old, &prev, new)?;
            (out, false, gc)
        };
        self.collect_garbage(gc);
        Ok((out, created))
    }
}

/// What kube-apiserver requires of an apply patch before anything else: a field
/// manager (422 naming `fieldManager`) and the type of the URL (400).
fn check_apply(reg: &Registration, manager: &str, body: &Value) -> Result<(), StatusError> {
    if manager.is_empty() {
        return Err(StatusError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![StatusCause {
                reason: cause::FIELD_VALUE_REQUIRED.into(),
                message: "Required value: is required for apply patch".into(),
                field: "fieldManager".into(),
            }],
        ));
    }
    let field = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default();
    let (av, k) = (field("apiVersion"), field("kind"));
    // The group and kind must be the resource's; the version may be any version the
    // request was served at (a custom resource without a conversion webhook reaches
    // here at the requested version, not converted to the storage version).
    let (group, version) = av.split_once('/').unwrap_or(("", av));
    if group != reg.group || version.is_empty() || k != reg.kind {
        return Err(StatusError::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={k}"
        )));
    }
    Ok(())
}

/// A JSON, merge or strategic patch must leave a built-in object of its type: the same
/// kind and apiVersion, and values of the types' fields' types (a number in a
/// ConfigMap's `data` is 422 `patch`, as kube-apiserver's decoder makes it).
fn check_patched_type(reg: &Registration, patched: &Map<String, Value>) -> Result<(), StatusError> {
    if reg.custom {
        return Ok(());
    }
    let field = |k: &str| patched.get(k).and_then(Value::as_str).unwrap_or_default();
    let why = if field("apiVersion") != reg.api_version() || field("kind") != reg.kind {
        Some(format!(
            "the patch changes the object's type to {} {}",
            field("apiVersion"),
            field("kind")
        ))
    } else {
        let v = Value::Object(patched.clone());
        match crate::builtin_types::round_trip(&reg.api_version(), &reg.kind, &v) {
            // A missing required field is for validation to name, as Go's decoder
            // takes it; a value of the wrong type is the patch's fault.
            Some(Err(e)) if e.contains("invalid type") || e.contains("invalid value") => Some(e),
            _ => None,
        }
    };
    let Some(why) = why else {
        return Ok(());
    };
    let shown = serde_json::to_string(patched).unwrap_or_default();
    Err(StatusError::invalid(
        "",
        "",
        "",
        vec![StatusCause {
            reason: cause::FIELD_VALUE_INVALID.into(),
            message: format!("Invalid value: {shown:?}: {why}"),
            field: "patch".into(),
        }],
    ))
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `kubectl apply --server-side` over an object a client-side apply wrote: as
/// kube-apiserver does, the `last-applied-configuration` annotation becomes the new
/// configuration (Go's JSON of it: keys sorted, a final newline), so that a later
/// client-side apply diffs against it. Objects without the annotation are left alone.
fn keep_last_applied(
    live: &Map<String, Value>,
    out: &mut Value,
    config: &Value,
) -> Result<(), StatusError> {
    let had = live
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(LAST_APPLIED))
        .is_some();
    if !had {
        return Ok(());
    }
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let text = format!("{}\n", sorted(config));
    let obj = out
        .as_object_mut()
        .ok_or_else(|| StatusError::bad_request("the applied object must be an object"))?;
    let meta = meta_mut(obj)?;
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(LAST_APPLIED.into(), Value::String(text));
    }
    Ok(())
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
