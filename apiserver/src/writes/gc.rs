//! The garbage collector over ownerReferences (Background, Foreground, Orphan) and the
//! follow-up work other writes queue for it.

use std::collections::VecDeque;

use serde_json::{Map, Value};

use super::{finalizers, owner_uids, Ctx, DeleteOpts, Gc, WriteOpts};
use crate::meta::meta_str;
use crate::registry::Wake;
use crate::server::Inner;
use crate::store::storage_key;

impl Inner {
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
                Gc::Wake(Wake::Namespace(name)) => self.schedule_namespace(name),
                Gc::Wake(Wake::CrdNames(name)) => self.crd_names_pass(&name),
                Gc::Wake(Wake::CrdCleanup(name)) => self.schedule_crd_cleanup(name),
                // Handled under the storage lock by the write that removed the CRD.
                Gc::Wake(Wake::CrdRemoved) => {}
                Gc::Foreground(uid) => {
                    let deps = self.dependents(&uid);
                    let mut remaining = 0;
                    for (i, ns, name, obj) in deps {
                        // Only a dependent whose reference sets blockOwnerDeletion holds
                        // the owner back; every dependent is deleted.
                        let blocks = blocks_owner(&obj, &uid);
                        remaining += usize::from(blocks);
                        if meta_str(&obj, "deletionTimestamp").is_empty() {
                            if let Ok((_, pending, more)) =
                                self.delete_locked(i, &ns, &name, &DeleteOpts::default())
                            {
                                queue.extend(more);
                                if !pending && blocks {
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

/// Whether `obj`'s owner reference to `uid` sets `blockOwnerDeletion`.
fn blocks_owner(obj: &Map<String, Value>, uid: &str) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| {
            r.get("uid").and_then(Value::as_str) == Some(uid)
                && r.get("blockOwnerDeletion") == Some(&Value::Bool(true))
        })
}
