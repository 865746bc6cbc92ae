//! Delete and delete collection: preconditions, finalizers, propagation policies (by
//! finalizer, for the collector), and the namespace and CRD deletions that only mark.

use std::sync::Arc;

use serde_json::Value;

use super::Propagation;
use super::{finalizers, gr, DeleteOpts, Gc, Preconditions};
use crate::errors::StatusError;
use crate::meta::{has_finalizers, meta_mut, meta_str, now};
use crate::server::Inner;
use crate::store::{storage_key, EventType, Stored};

impl Inner {
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

    pub(super) fn delete_locked(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<(Arc<Stored>, bool, Vec<Gc>), StatusError> {
        let reg = self.registration(idx);
        reg.strategy.check_deletable(name)?;
        let key = storage_key(if reg.namespaced { ns } else { "" }, name);
        let mut st = self.state.write();
        let old = st.collections[idx]
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| StatusError::not_found(gr(&reg), name))?;
        let mut obj = old.to_value()?;
        Preconditions {
            uid: opts.uid.as_deref(),
            resource_version: opts.resource_version.as_deref(),
            ..Default::default()
        }
        .check(&reg, name, &old, &obj)?;
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
        // Some kinds' first DELETE only marks the object (a namespace Terminating, a
        // CRD under its cleanup finalizer) and wakes the controller that finishes it.
        if meta_str(&obj, "deletionTimestamp").is_empty() {
            if let Some(wake) = reg.strategy.begin_deletion(&mut obj)? {
                let out =
                    self.store(&mut st, idx, &reg, &obj, EventType::Modified, opts.dry_run)?;
                let mut gc = Vec::new();
                if !opts.dry_run {
                    let fins = finalizers(&obj);
                    if fins.iter().any(|f| f == "orphan") {
                        gc.push(Gc::Orphan(idx, key.clone(), uid.clone()));
                    }
                    if fins.iter().any(|f| f == "foregroundDeletion") {
                        gc.push(Gc::Foreground(uid));
                    }
                    gc.push(Gc::Wake(wake));
                }
                return Ok((out, true, gc));
            }
        }
        let graceful = opts.from_client
            && meta_str(&obj, "deletionTimestamp").is_empty()
            && reg
                .strategy
                .mark_graceful_deletion(&mut obj, opts.grace_period_seconds)?;
        if has_finalizers(&obj) {
            if !graceful && !meta_str(&obj, "deletionTimestamp").is_empty() && finalizer.is_none() {
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
        // A graceful deletion stores the marked object first (watchers see it MODIFIED,
        // then DELETED), and answers with it.
        let old = if graceful {
            self.store(&mut st, idx, &reg, &obj, EventType::Modified, opts.dry_run)?
        } else {
            old
        };
        let out = if opts.dry_run {
            old.clone()
        } else {
            let rv = st.rv + 1;
            let (frame, stored) = crate::store::respliced(&old, rv, EventType::Deleted);
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
}
