//! Field ownership (`metadata.managedFields`) and server-side apply.
//!
//! Contract:
//! - An object's fields are the leaf paths of its JSON: object keys (`f:<name>`), items
//!   of the keyed lists of [`super::patch::MERGE_KEYS`] (`k:{"name":"app"}`), items of
//!   `metadata.finalizers` (`v:"x"`); any other list, and any empty object, is one
//!   atomic leaf. `apiVersion`, `kind` and the server-owned metadata (name, namespace,
//!   uid, resourceVersion, generation, creationTimestamp, managedFields, deletion*) are
//!   never owned.
//! - One `managedFields` entry per (manager, operation); `fieldsV1` nests the paths as
//!   the real server writes them (leaves are `{}`), entries with no fields are dropped.
//! - Apply: the applied configuration's leaves are owned by the (manager, `Apply`)
//!   entry; a leaf owned by another entry whose live value differs from the applied value
//!   is a conflict (409 Conflict, one `FieldManagerConflict` cause per field), unless
//!   `force` moves the ownership. kubectl's first server-side apply (field manager
//!   `kubectl`) over a client-side applied object takes the conflicting fields without
//!   `force` when the `last-applied-configuration` annotation set each of them to the
//!   value it still has (kube-apiserver's last-applied manager), so moving from
//!   `kubectl apply` to `kubectl apply --server-side` does not conflict. Conflicts are
//!   detected at leaf depth (the depth above);
//!   an atomic list is one leaf. Leaves the manager applied before and omits now are
//!   removed from the object when no other manager owns them. The applied configuration
//!   merges into the live object as a strategic merge patch does.
//! - Update (any non-apply write with a `fieldManager`): the leaves it changed move to
//!   the (manager, `Update`) entry. Writes without a field manager are not tracked,
//!   except that leaves no longer present are dropped from every entry.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use crate::errors::{cause, reason, StatusCause, StatusDetails, StatusError};

use super::patch::{merge_key_for, strategic_merge_patch};

type Path = Vec<String>;

/// Which part of the object a write concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// Everything (the resource has no status subresource).
    All,
    /// Everything but `status` (main resource of a type with a status subresource).
    Main,
    /// Only `status`.
    Status,
}

const SERVER_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "generateName",
];

fn included(path: &[String], part: Part) -> bool {
    let Some(first) = path.first() else {
        return false;
    };
    if first == "f:apiVersion" || first == "f:kind" {
        return false;
    }
    if first == "f:metadata" {
        if let Some(second) = path.get(1) {
            if SERVER_META.iter().any(|m| second == &format!("f:{m}")) {
                return false;
            }
        }
    }
    match part {
        Part::All => true,
        Part::Main => first != "f:status",
        Part::Status => first == "f:status",
    }
}

/// The leaf paths of `v` and their values.
pub(crate) fn leaves(v: &Value, part: Part) -> BTreeMap<Path, Value> {
    let mut out = BTreeMap::new();
    let mut path = Vec::new();
    walk(v, "", &mut path, &mut out);
    out.retain(|p, _| included(p, part));
    out
}

fn walk(v: &Value, field: &str, path: &mut Path, out: &mut BTreeMap<Path, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                path.push(format!("f:{k}"));
                walk(x, k, path, out);
                path.pop();
            }
        }
        Value::Array(items) if field == "finalizers" && path.len() == 2 => {
            for i in items {
                path.push(format!("v:{i}"));
                out.insert(path.clone(), i.clone());
                path.pop();
            }
        }
        Value::Array(items) => match keyed(field, items) {
            Some(key) => {
                for i in items {
                    let mut id = Map::new();
                    id.insert(key.to_owned(), i.get(key).cloned().unwrap_or(Value::Null));
                    path.push(format!("k:{}", Value::Object(id)));
                    walk(i, "", path, out);
                    path.pop();
                }
            }
            None => {
                out.insert(path.clone(), v.clone());
            }
        },
        _ => {
            out.insert(path.clone(), v.clone());
        }
    }
}

fn keyed(field: &str, items: &[Value]) -> Option<&'static str> {
    let key = merge_key_for(field, items)?;
    items.iter().all(|i| i.get(key).is_some()).then_some(key)
}

/// The value at a path, if present.
fn lookup<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for seg in path {
        cur = step(cur, seg)?;
    }
    Some(cur)
}

fn item_matches(item: &Value, seg: &str) -> bool {
    if let Some(id) = seg.strip_prefix("k:") {
        match serde_json::from_str::<Map<String, Value>>(id) {
            Ok(id) => id.iter().all(|(k, x)| item.get(k) == Some(x)),
            Err(_) => false,
        }
    } else if let Some(val) = seg.strip_prefix("v:") {
        serde_json::from_str::<Value>(val).is_ok_and(|x| &x == item)
    } else {
        false
    }
}

fn step<'a>(v: &'a Value, seg: &str) -> Option<&'a Value> {
    match seg.strip_prefix("f:") {
        Some(k) => v.as_object()?.get(k),
        None => v.as_array()?.iter().find(|i| item_matches(i, seg)),
    }
}

fn remove_at(v: &mut Value, path: &[String]) {
    let Some((last, init)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for seg in init {
        let next = match seg.strip_prefix("f:") {
            Some(k) => cur.as_object_mut().and_then(|m| m.get_mut(k)),
            None => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|i| item_matches(i, seg))),
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last.strip_prefix("f:") {
        Some(k) => {
            if let Some(m) = cur.as_object_mut() {
                m.remove(k);
            }
        }
        None => {
            if let Some(a) = cur.as_array_mut() {
                a.retain(|i| !item_matches(i, last));
            }
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: String,
    fields: BTreeSet<Path>,
}

fn fields_to_paths(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
    let Some(m) = v.as_object() else {
        return;
    };
    let children: Vec<_> = m.iter().filter(|(k, _)| k.as_str() != ".").collect();
    if !path.is_empty() && (children.is_empty() || m.contains_key(".")) {
        out.insert(path.clone());
    }
    for (k, c) in children {
        path.push(k.clone());
        fields_to_paths(c, path, out);
        path.pop();
    }
}

fn paths_to_fields(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut cur = &mut root;
        for seg in p {
            let next = cur
                .entry(seg.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            match next {
                Value::Object(m) => cur = m,
                _ => break,
            }
        }
    }
    Value::Object(root)
}

fn read_entries(obj: &Value) -> Vec<Entry> {
    let Some(list) = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .map(|e| {
            let s = |k: &str| {
                e.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let mut fields = BTreeSet::new();
            if let Some(f) = e.get("fieldsV1") {
                fields_to_paths(f, &mut Vec::new(), &mut fields);
            }
            Entry {
                manager: s("manager"),
                operation: s("operation"),
                api_version: s("apiVersion"),
                time: s("time"),
                subresource: s("subresource"),
                fields,
            }
        })
        .collect()
}

fn write_entries(obj: &mut Value, entries: Vec<Entry>) {
    let list: Vec<Value> = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut m = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": paths_to_fields(&e.fields),
            });
            if !e.subresource.is_empty() {
                m["subresource"] = Value::String(e.subresource);
            }
            m
        })
        .collect();
    if list.is_empty() && obj.get("metadata").is_none() {
        return;
    }
    if let Some(m) = obj.as_object_mut() {
        m.entry("metadata").or_insert_with(|| json!({}));
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

fn dotted(path: &[String]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg.strip_prefix("f:") {
            Some(k) => {
                s.push('.');
                s.push_str(k);
            }
            None => {
                s.push('[');
                s.push_str(&seg[2..]);
                s.push(']');
            }
        }
    }
    s
}

/// What a write needs to know to record ownership.
pub(crate) struct Manager<'a> {
    pub name: &'a str,
    pub api_version: &'a str,
    pub time: &'a str,
    pub part: Part,
}

impl Manager<'_> {
    fn subresource(&self) -> String {
        if self.part == Part::Status {
            "status".into()
        } else {
            String::new()
        }
    }

    fn entry<'e>(&self, entries: &'e mut Vec<Entry>, operation: &str) -> &'e mut Entry {
        let sub = self.subresource();
        let pos = entries.iter().position(|e| {
            e.manager == self.name && e.operation == operation && e.subresource == sub
        });
        match pos {
            Some(i) => {
                entries[i].time = self.time.to_owned();
                entries[i].api_version = self.api_version.to_owned();
                &mut entries[i]
            }
            None => {
                entries.push(Entry {
                    manager: self.name.to_owned(),
                    operation: operation.to_owned(),
                    api_version: self.api_version.to_owned(),
                    time: self.time.to_owned(),
                    subresource: sub,
                    fields: BTreeSet::new(),
                });
                let last = entries.len() - 1;
                &mut entries[last]
            }
        }
    }
}

/// Records ownership after a non-apply write from `old` to `new` (in place on `new`).
/// `new` carries the old entries (the caller keeps them when the body had none).
pub(crate) fn record_update(old: Option<&Value>, new: &mut Value, mgr: Option<&Manager<'_>>) {
    let mut entries = read_entries(new);
    if let Some(mgr) = mgr {
        let empty = Value::Null;
        let old = old.unwrap_or(&empty);
        let changed: BTreeSet<Path> = leaves(new, mgr.part)
            .into_iter()
            .filter(|(p, v)| lookup(old, p) != Some(v))
            .map(|(p, _)| p)
            .collect();
        if !changed.is_empty() {
            for e in entries.iter_mut() {
                e.fields.retain(|p| !changed.contains(p));
            }
            mgr.entry(&mut entries, "Update").fields.extend(changed);
        }
    }
    if entries.is_empty() && new.pointer("/metadata/managedFields").is_none() {
        return;
    }
    for e in entries.iter_mut() {
        e.fields.retain(|p| lookup(new, p).is_some());
    }
    write_entries(new, entries);
}

/// The annotation `kubectl apply` (client-side) keeps the applied configuration in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Whether kubectl's first server-side apply over a client-side applied object may take
/// the conflicting fields, as kube-apiserver's last-applied manager allows: only for the
/// field manager `kubectl`, and only when every conflicting field is one the
/// last-applied configuration set to the value the object still has.
fn upgrades_client_side_apply(
    live: &Value,
    mgr: &Manager<'_>,
    conflicts: &[(String, Path)],
) -> bool {
    if mgr.name != "kubectl" || conflicts.is_empty() {
        return false;
    }
    let Some(text) = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
    else {
        return false;
    };
    let Ok(last) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    if last.get("apiVersion") != live.get("apiVersion") {
        return false;
    }
    let allowed: BTreeSet<Path> = leaves(&last, mgr.part)
        .into_iter()
        .filter(|(p, v)| lookup(live, p) == Some(v))
        .map(|(p, _)| p)
        .collect();
    conflicts.iter().all(|(_, p)| allowed.contains(p))
}

/// Server-side apply of `applied` onto `live` (`Value::Null` when the object does not
/// exist yet). Returns the new object, with its managedFields.
pub(crate) fn apply(
    live: &Value,
    applied: &Value,
    mgr: &Manager<'_>,
    force: bool,
    conflict_target: (&str, &str),
) -> Result<Value, StatusError> {
    let mut entries = read_entries(live);
    let mine = leaves(applied, mgr.part);
    let sub = mgr.subresource();
    let mut conflicts: Vec<(String, Path)> = Vec::new();
    for e in &entries {
        if e.manager == mgr.name && e.operation == "Apply" && e.subresource == sub {
            continue;
        }
        for (p, v) in &mine {
            if e.fields.contains(p) && lookup(live, p) != Some(v) {
                conflicts.push((e.manager.clone(), p.clone()));
            }
        }
    }
    let force = force || upgrades_client_side_apply(live, mgr, &conflicts);
    if !conflicts.is_empty() && !force {
        let causes: Vec<StatusCause> = conflicts
            .iter()
            .map(|(m, p)| StatusCause {
                reason: cause::FIELD_MANAGER_CONFLICT.into(),
                message: format!("conflict with {m:?}: {}", dotted(p)),
                field: dotted(p),
            })
            .collect();
        let list: Vec<String> = causes.iter().map(|c| c.message.clone()).collect();
        let n = causes.len();
        let plural = if n == 1 { "" } else { "s" };
        let (group, plural_res) = conflict_target;
        return Err(StatusError::new(
            409,
            reason::CONFLICT,
            format!(
                "Apply failed with {n} conflict{plural}: {}",
                list.join("\n")
            ),
        )
        .with_details(StatusDetails {
            group: group.into(),
            kind: plural_res.into(),
            causes,
            ..Default::default()
        }));
    }
    let moved: BTreeSet<Path> = conflicts.into_iter().map(|(_, p)| p).collect();
    for e in entries.iter_mut() {
        if !(e.manager == mgr.name && e.operation == "Apply" && e.subresource == sub) {
            e.fields.retain(|p| !moved.contains(p));
        }
    }
    let previous: BTreeSet<Path> = entries
        .iter()
        .find(|e| e.manager == mgr.name && e.operation == "Apply" && e.subresource == sub)
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut out = if live.is_null() {
        json!({})
    } else {
        live.clone()
    };
    for p in previous.iter().filter(|p| !mine.contains_key(*p)) {
        let owned_elsewhere = entries.iter().any(|e| {
            !(e.manager == mgr.name && e.operation == "Apply" && e.subresource == sub)
                && e.fields.contains(p)
        });
        if !owned_elsewhere {
            remove_at(&mut out, p);
        }
    }
    let mut patch = applied.clone();
    if let Some(m) = patch.as_object_mut() {
        match mgr.part {
            Part::Main => {
                m.remove("status");
            }
            Part::Status => m.retain(|k, _| k == "status" || k == "metadata"),
            Part::All => {}
        }
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
            meta.remove("resourceVersion");
            if mgr.part == Part::Status {
                meta.retain(|k, _| k == "name" || k == "namespace");
            }
        }
    }
    strategic_merge_patch(&mut out, &patch)?;
    let e = mgr.entry(&mut entries, "Apply");
    e.fields = mine.into_keys().collect();
    for e in entries.iter_mut() {
        e.fields.retain(|p| lookup(&out, p).is_some());
    }
    write_entries(&mut out, entries);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mgr(name: &str) -> Manager<'_> {
        Manager {
            name,
            api_version: "apps/v1",
            time: "2026-01-01T00:00:00Z",
            part: Part::Main,
        }
    }

    #[test]
    fn fields_round_trip_through_fields_v1() {
        let obj = json!({"metadata": {"name": "x", "labels": {"a": "b"}},
            "spec": {"replicas": 1, "containers": [{"name": "c", "image": "i"}], "args": ["x"]}});
        let paths: BTreeSet<Path> = leaves(&obj, Part::All).into_keys().collect();
        let f = paths_to_fields(&paths);
        assert_eq!(
            f,
            json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:replicas": {}, "f:args": {},
                "f:containers": {"k:{\"name\":\"c\"}": {"f:name": {}, "f:image": {}}}}})
        );
        let mut back = BTreeSet::new();
        fields_to_paths(&f, &mut Vec::new(), &mut back);
        assert_eq!(back, paths);
    }

    #[test]
    fn kubectl_server_side_apply_takes_over_client_side_applied_fields() {
        // What `kubectl apply` leaves: the fields under an Update entry of
        // kubectl-client-side-apply and the configuration in the annotation.
        let last = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1}});
        let mut live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "annotations": {LAST_APPLIED: last.to_string()}},
            "spec": {"replicas": 1, "paused": false}});
        record_update(None, &mut live, Some(&mgr("kubectl-client-side-apply")));
        let applied = json!({"spec": {"replicas": 3}});
        let target = ("apps", "deployments");
        // Another manager conflicts; kubectl takes the field over.
        assert!(apply(&live, &applied, &mgr("other"), false, target).is_err());
        let out = apply(&live, &applied, &mgr("kubectl"), false, target).unwrap();
        assert_eq!(out["spec"]["replicas"], 3);
        // A field the annotation does not show with its live value still conflicts.
        let mut drifted = live.clone();
        drifted["metadata"]["annotations"][LAST_APPLIED] = json!(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2}})
                .to_string()
        );
        let err = apply(&drifted, &applied, &mgr("kubectl"), false, target).unwrap_err();
        assert!(err.is_conflict());
        let paused = json!({"spec": {"paused": true}});
        assert!(apply(&live, &paused, &mgr("kubectl"), false, target).is_err());
    }

    #[test]
    fn apply_conflicts_then_force_moves_ownership() {
        let a = apply(
            &Value::Null,
            &json!({"spec": {"replicas": 1, "x": 1}}),
            &mgr("a"),
            false,
            ("apps", "deployments"),
        )
        .unwrap();
        let err = apply(
            &a,
            &json!({"spec": {"replicas": 2}}),
            &mgr("b"),
            false,
            ("apps", "deployments"),
        )
        .unwrap_err();
        assert!(err.is_conflict());
        assert!(err.has_cause(cause::FIELD_MANAGER_CONFLICT));
        // Same value: shared ownership, no conflict.
        apply(
            &a,
            &json!({"spec": {"replicas": 1}}),
            &mgr("b"),
            false,
            ("apps", "deployments"),
        )
        .unwrap();
        let b = apply(
            &a,
            &json!({"spec": {"replicas": 2}}),
            &mgr("b"),
            true,
            ("apps", "deployments"),
        )
        .unwrap();
        assert_eq!(b["spec"]["replicas"], 2);
        // a omits x now: removed, as nobody else owns it.
        let a2 = apply(
            &b,
            &json!({"spec": {}}),
            &mgr("a"),
            false,
            ("apps", "deployments"),
        )
        .unwrap();
        assert!(a2["spec"].get("x").is_none());
        assert_eq!(a2["spec"]["replicas"], 2);
    }
}
