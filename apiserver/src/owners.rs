//! Garbage collection of objects whose owners do not exist (kube-controller-manager's
//! garbage collector, `attemptToDeleteItem`), when the server is built with
//! [`ApiServerBuilder::collect_dangling_owners`](super::ApiServerBuilder::collect_dangling_owners).
//!
//! Contract:
//! - After a write stores an object carrying `ownerReferences`, each reference is
//!   resolved: its apiVersion's group and its kind name a served resource (any version
//!   of the group), and the owner is looked up by name (in the dependent's namespace when
//!   the owner is namespaced) and must have the reference's uid. A namespaced owner of a
//!   cluster-scoped dependent is absent, as for the real collector.
//! - A reference to a kind the server does not serve is neither solid nor dangling: the
//!   real collector retries it forever, so the object is left alone.
//! - When every resolvable reference is dangling and none is unresolvable, the object is
//!   deleted (propagation `Background`, finalizers honoured). When some owners exist, the
//!   dangling references are removed from the object instead.
//! - It runs when the write that stored the object has answered, before the response is
//!   returned (the real collector is asynchronous; a test may rely on the object being gone
//!   once its write returned, but should not rely on seeing it first).

use serde_json::{Map, Value};

use super::meta::meta_str;
use super::server::Inner;
use super::store::storage_key;
use super::writes::{DeleteOpts, WriteOpts};

/// What became of one owner reference.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    Exists,
    Absent,
    Unresolvable,
}

impl Inner {
    /// Collects the objects written since the last call whose owners do not exist.
    pub(crate) fn collect_dangling(&self) {
        let checks = {
            let st = self.state.read();
            if st.owner_checks.is_empty() {
                return;
            }
            drop(st);
            std::mem::take(&mut self.state.write().owner_checks)
        };
        for (idx, key) in checks {
            let Some(obj) = self.state.read().collections[idx]
                .objects
                .get(&*key)
                .and_then(|s| s.to_value().ok())
            else {
                continue;
            };
            let refs: Vec<Value> = obj
                .get("metadata")
                .and_then(|m| m.get("ownerReferences"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let verdicts: Vec<Owner> = refs.iter().map(|r| self.owner(idx, &obj, r)).collect();
            let (ns, name) = (meta_str(&obj, "namespace"), meta_str(&obj, "name"));
            if verdicts.contains(&Owner::Unresolvable) || !verdicts.contains(&Owner::Absent) {
                continue;
            }
            if !verdicts.contains(&Owner::Exists) {
                // Already being deleted: the deletion goes on by itself.
                if meta_str(&obj, "deletionTimestamp").is_empty() {
                    let _ = self.delete(idx, ns, name, &DeleteOpts::default());
                }
                continue;
            }
            let mut kept = obj.clone();
            let live: Vec<Value> = refs
                .into_iter()
                .zip(&verdicts)
                .filter(|(_, v)| **v == Owner::Exists)
                .map(|(r, _)| r)
                .collect();
            if let Some(Value::Object(m)) = kept.get_mut("metadata") {
                m.insert("ownerReferences".into(), Value::Array(live));
            }
            // A conflict means someone wrote it meanwhile; that write queued a new check.
            let _ = self.update(idx, ns, name, kept, false, &WriteOpts::default());
        }
    }

    /// Whether the owner a reference names exists.
    fn owner(&self, dep_idx: usize, dep: &Map<String, Value>, r: &Value) -> Owner {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
        let group = s("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
        let (kind, name, uid) = (s("kind"), s("name"), s("uid"));
        let st = self.state.read();
        let Some(idx) = (0..st.collections.len()).find(|i| {
            let c = &st.collections[*i];
            c.served && c.reg.group == group && c.reg.kind == kind
        }) else {
            return Owner::Unresolvable;
        };
        let idx = st.storage_of(idx).map_or(idx, |(s, _, _)| s);
        let reg = &st.collections[idx].reg;
        let dep_namespaced = st.collections[dep_idx].reg.namespaced;
        if reg.namespaced && !dep_namespaced {
            return Owner::Absent;
        }
        let ns = if reg.namespaced {
            meta_str(dep, "namespace")
        } else {
            ""
        };
        let found = st.collections[idx]
            .objects
            .get(&storage_key(ns, name))
            .and_then(|o| o.to_value().ok());
        match found {
            Some(o) if meta_str(&o, "uid") == uid => Owner::Exists,
            _ => Owner::Absent,
        }
    }
}
