//! Patch: JSON patch, merge patch, strategic merge patch (built-in kinds) and
//! server-side apply (which creates the object when absent).

use std::sync::Arc;

use serde_json::Value;

use super::{gr, part_of, to_map, Ctx, PatchKind, Preconditions, WriteOpts};
use crate::apply::{self, Part};
use crate::errors::StatusError;
use crate::meta::{meta_mut, meta_str, now};
use crate::patch;
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
                let mgr = apply::Manager {
                    schema: reg.schema.as_ref(),
                    ..self.manager(&manager, part, &time, &av)
                };
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
                        schema: reg.schema.as_ref(),
                        ..self.manager(&manager, part, &time, &av)
                    };
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
