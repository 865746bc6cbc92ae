//! kube-controller-manager's namespace controller (SEMANTICS 13, "Namespaces"): it
//! empties a Terminating namespace and then removes the `kubernetes` finalizer.
//!
//! Contract: see the `namespaces` module, whose strategy marks a namespace Terminating
//! and schedules this controller through the write's follow-up work.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::errors::{GroupResource, StatusError};
use crate::meta::{meta_str, now, spec_finalizers};
use crate::namespaces::{on_finalize, set_spec_finalizers};
use crate::server::Inner;
use crate::writes::{DeleteOpts, Propagation};

/// How long the controller waits between passes while content remains.
const PASS_INTERVAL: Duration = Duration::from_millis(50);

/// What one pass found in the namespace.
#[derive(Default)]
struct Remaining {
    /// `<resource>.<group>` -> count.
    objects: BTreeMap<String, usize>,
    /// finalizer -> count.
    finalizers: BTreeMap<String, usize>,
    /// Deletion errors.
    errors: Vec<String>,
}

fn condition(ty: &str, failed: bool, reason: &str, message: &str) -> Value {
    json!({
        "type": ty,
        "status": if failed { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "lastTransitionTime": now(),
    })
}

fn conditions(r: &Remaining) -> Vec<Value> {
    let join = |m: &BTreeMap<String, usize>, f: &dyn Fn(&String, &usize) -> String| {
        m.iter()
            .map(|(k, n)| f(k, n))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut errors = r.errors.clone();
    errors.sort();
    vec![
        condition(
            "NamespaceDeletionDiscoveryFailure",
            false,
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            false,
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        if errors.is_empty() {
            condition(
                "NamespaceDeletionContentFailure",
                false,
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            )
        } else {
            condition(
                "NamespaceDeletionContentFailure",
                true,
                "ContentDeletionFailed",
                &format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    errors.len(),
                    errors.join(", ")
                ),
            )
        },
        if r.objects.is_empty() {
            condition(
                "NamespaceContentRemaining",
                false,
                "ContentRemoved",
                "All content successfully removed",
            )
        } else {
            condition(
                "NamespaceContentRemaining",
                true,
                "SomeResourcesRemain",
                &format!(
                    "Some resources are remaining: {}",
                    join(&r.objects, &|k, n| format!(
                        "{k} has {n} resource instances"
                    ))
                ),
            )
        },
        if r.finalizers.is_empty() {
            condition(
                "NamespaceFinalizersRemaining",
                false,
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished",
            )
        } else {
            condition(
                "NamespaceFinalizersRemaining",
                true,
                "SomeFinalizersRemain",
                &format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    join(&r.finalizers, &|k, n| format!(
                        "{k} in {n} resource instances"
                    ))
                ),
            )
        },
    ]
}

/// New conditions keep the old `lastTransitionTime` of a condition whose status did not
/// change.
fn merge_conditions(old: Option<&Value>, mut new: Vec<Value>) -> Vec<Value> {
    let old = old.and_then(Value::as_array).cloned().unwrap_or_default();
    for c in &mut new {
        if let Some(prev) = old.iter().find(|o| o.get("type") == c.get("type")) {
            if prev.get("status") == c.get("status") {
                if let Some(t) = prev.get("lastTransitionTime") {
                    c["lastTransitionTime"] = t.clone();
                }
            }
        }
    }
    new
}

impl Inner {
    /// Runs the namespace controller for `name`: on a task when inside a tokio runtime,
    /// else one pass now.
    pub(crate) fn schedule_namespace(&self, name: String) {
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
                        if me.shutdown.is_cancelled() || me.namespace_pass(&name) {
                            return;
                        }
                    }
                });
            }
            Err(_) => {
                self.namespace_pass(&name);
            }
        }
    }

    /// One pass of the namespace controller; true when there is nothing more to do.
    pub(crate) fn namespace_pass(&self, name: &str) -> bool {
        let Some(ns_idx) = self.state.read().lookup("v1", "namespaces") else {
            return true;
        };
        let terminating = {
            let st = self.state.read();
            st.collections[ns_idx]
                .objects
                .get(name)
                .and_then(|s| s.to_value().ok())
                .is_some_and(|o| !meta_str(&o, "deletionTimestamp").is_empty())
        };
        if !terminating {
            return true;
        }
        let targets: Vec<usize> = {
            let st = self.state.read();
            (0..st.collections.len())
                .filter(|i| st.collections[*i].reg.namespaced)
                .collect()
        };
        let mut r = Remaining::default();
        let opts = DeleteOpts {
            propagation: Some(Propagation::Background),
            ..Default::default()
        };
        for idx in &targets {
            if let Err(e) = self.delete_collection(*idx, Some(name), |_| true, &opts) {
                r.errors.push(e.to_string());
            }
        }
        {
            let st = self.state.read();
            for idx in &targets {
                let c = &st.collections[*idx];
                let mut n = 0;
                c.visit(None, Some(name), None, |o| {
                    n += 1;
                    if let Ok(v) = o.to_value() {
                        for f in v
                            .get("metadata")
                            .and_then(|m| m.get("finalizers"))
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                        {
                            *r.finalizers.entry(f.to_owned()).or_default() += 1;
                        }
                    }
                    true
                });
                if n > 0 {
                    *r.objects
                        .entry(format!("{}.{}", c.reg.plural, c.reg.group))
                        .or_default() += n;
                }
            }
        }
        let done = r.objects.is_empty();
        let result = self.edit_object(ns_idx, name, |obj| {
            let status = obj.entry("status").or_insert_with(|| json!({}));
            if let Some(s) = status.as_object_mut() {
                s.insert("phase".into(), json!("Terminating"));
                let merged = merge_conditions(s.get("conditions"), conditions(&r));
                s.insert("conditions".into(), Value::Array(merged));
            }
            if done {
                let f: Vec<Value> = spec_finalizers(obj)
                    .into_iter()
                    .filter(|x| x != "kubernetes")
                    .collect();
                set_spec_finalizers(obj, f);
            }
        });
        // Other finalizers (spec or metadata) are someone else's to remove.
        done || result.is_err()
    }

    /// `PUT .../namespaces/<name>/finalize`.
    pub(crate) fn finalize_namespace(
        &self,
        idx: usize,
        name: &str,
        body: &Map<String, Value>,
        opts: &super::writes::WriteOpts,
    ) -> Result<Arc<super::store::Stored>, StatusError> {
        let reg = self.registration(idx);
        let ctx = super::writes::Ctx {
            idx,
            reg: &reg,
            opts,
        };
        let mut st = self.state.write();
        let old = st.collections[idx]
            .objects
            .get(name)
            .cloned()
            .ok_or_else(|| {
                StatusError::not_found(
                    GroupResource {
                        group: "",
                        resource: "namespaces",
                    },
                    name,
                )
            })?;
        let want_rv = meta_str(body, "resourceVersion");
        if !want_rv.is_empty() && want_rv != old.rv.to_string() {
            return Err(StatusError::conflict(
                GroupResource {
                    group: "",
                    resource: "namespaces",
                },
                name,
                StatusError::OPTIMISTIC_LOCK_MESSAGE,
            ));
        }
        let prev = old.to_value()?;
        let new = on_finalize(&prev, body);
        let (out, gc) = self.replace_locked(&mut st, &ctx, &old, &prev, new)?;
        drop(st);
        self.collect_garbage(gc);
        Ok(out)
    }
}
