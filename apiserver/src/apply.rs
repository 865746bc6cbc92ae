//! Field ownership (`metadata.managedFields`) and server-side apply.
//!
//! Contract:
//! - An object's fields are the leaf paths of its JSON: object keys (`f:<name>`), items
//!   of keyed lists (`k:{"name":"app"}`), items of sets (`v:"x"`); any other list, and
//!   any empty object, is one atomic leaf. Which lists are keyed and by what comes from
//!   the schema where the resource has one (a custom resource: `x-kubernetes-list-type:
//!   map` with its `x-kubernetes-list-map-keys`, `set`; a list without a type is atomic;
//!   `x-kubernetes-map-type: atomic` maps and structs are one leaf), else from the
//!   built-in keys of [`super::patch::MERGE_KEYS`] and `metadata.finalizers` as a set. `apiVersion`, `kind` and the server-owned metadata (name, namespace,
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
//!   merges into the live object by the same structure: keyed items by their keys, set
//!   items by value, atomic lists and maps replaced (a strategic merge patch for
//!   resources without a schema).
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
    /// The `scale` subresource: the object's replicas field, applied through a Scale.
    Scale,
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
        Part::Main | Part::Scale => first != "f:status",
        Part::Status => first == "f:status",
    }
}

/// The leaf paths of `v` and their values, `schema` (a custom resource's structural
/// schema) deciding list and map types where given.
pub(crate) fn leaves(v: &Value, part: Part, schema: Option<&Value>) -> BTreeMap<Path, Value> {
    let mut out = BTreeMap::new();
    let mut path = Vec::new();
    walk(v, "", Shape::root(schema), &mut path, &mut out);
    out.retain(|p, _| included(p, part));
    out
}

/// How a list merges.
#[derive(Debug, Clone, PartialEq)]
enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// Where a value sits in the resource's schema (or that it has none: a built-in).
#[derive(Debug, Clone, Copy)]
enum Shape<'a> {
    /// No schema: the built-in keys of `MERGE_KEYS` decide.
    Builtin,
    /// A node of a custom resource's schema (`None`: beyond what the schema describes).
    Schema(Option<&'a Value>),
}

impl<'a> Shape<'a> {
    fn root(schema: Option<&'a Value>) -> Self {
        match schema {
            Some(s) => Shape::Schema(Some(s)),
            None => Shape::Builtin,
        }
    }

    /// The shape of field `key` of an object.
    fn field(self, key: &str, depth: usize) -> Self {
        match self {
            Shape::Builtin => Shape::Builtin,
            // The root's metadata is ObjectMeta whatever the schema says of it.
            Shape::Schema(_) if depth == 0 && key == "metadata" => Shape::Builtin,
            Shape::Schema(node) => Shape::Schema(node.map(deref).and_then(|n| {
                n.get("properties")
                    .and_then(|p| p.get(key))
                    .or_else(|| n.get("additionalProperties").filter(|a| a.is_object()))
            })),
        }
    }

    /// The shape of a list's items.
    fn item(self) -> Self {
        match self {
            Shape::Builtin => Shape::Builtin,
            Shape::Schema(node) => Shape::Schema(node.map(deref).and_then(|n| n.get("items"))),
        }
    }

    /// Whether a map or struct is one atomic leaf (said on the field or on the
    /// definition it references).
    fn atomic_map(self) -> bool {
        let atomic =
            |n: &Value| n.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        matches!(self, Shape::Schema(Some(n)) if atomic(n) || atomic(deref(n)))
    }

    /// How the list `field` (at `path`) merges.
    fn list_type(self, field: &str, path: &[String], items: &[Value]) -> ListType {
        match self {
            Shape::Builtin => {
                if field == "finalizers" && path.len() == 2 {
                    ListType::Set
                } else {
                    match keyed(field, items) {
                        Some(k) => ListType::Map(vec![k.to_owned()]),
                        None => ListType::Atomic,
                    }
                }
            }
            Shape::Schema(node) => {
                let node = node.unwrap_or(&Value::Null);
                match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("set") => ListType::Set,
                    Some("map") => {
                        let keys: Vec<String> = node
                            .get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .map(|k| {
                                k.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default();
                        if keys.is_empty() {
                            ListType::Atomic
                        } else {
                            ListType::Map(keys)
                        }
                    }
                    Some(_) => ListType::Atomic,
                    // Built-in fields older than list types: a strategic-merge key makes
                    // the list a map by that key, a merge strategy without one a set (as
                    // kube-openapi's schema conversion reads them).
                    None => {
                        let merges = node
                            .get("x-kubernetes-patch-strategy")
                            .and_then(Value::as_str)
                            .is_some_and(|s| s.split(',').any(|p| p == "merge"));
                        match node
                            .get("x-kubernetes-patch-merge-key")
                            .and_then(Value::as_str)
                        {
                            Some(key) if merges => ListType::Map(vec![key.to_owned()]),
                            None if merges => ListType::Set,
                            _ => ListType::Atomic,
                        }
                    }
                }
            }
        }
    }
}

/// A built-in schema node that references a definition (`$ref`, or `allOf` with one
/// `$ref`), resolved; custom resources' schemas have no references.
fn deref(node: &Value) -> &Value {
    let mut n = node;
    for _ in 0..8 {
        let r = n.get("$ref").or_else(|| {
            match n.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
                Some([one]) => one.get("$ref"),
                _ => None,
            }
        });
        let target = r
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
            .and_then(crate::openapi::builtin_definition);
        match target {
            Some(t) => n = t,
            None => break,
        }
    }
    n
}

/// The `k:` path segment of a keyed item.
fn key_segment(item: &Value, keys: &[String]) -> String {
    let mut id = Map::new();
    for k in keys {
        if let Some(v) = item.get(k) {
            id.insert(k.clone(), v.clone());
        }
    }
    format!("k:{}", Value::Object(id))
}

fn walk(
    v: &Value,
    field: &str,
    shape: Shape<'_>,
    path: &mut Path,
    out: &mut BTreeMap<Path, Value>,
) {
    match v {
        Value::Object(m) if !m.is_empty() && !shape.atomic_map() => {
            for (k, x) in m {
                path.push(format!("f:{k}"));
                walk(x, k, shape.field(k, path.len() - 1), path, out);
                path.pop();
            }
        }
        Value::Array(items) => match shape.list_type(field, path, items) {
            ListType::Set => {
                for i in items {
                    path.push(format!("v:{i}"));
                    out.insert(path.clone(), i.clone());
                    path.pop();
                }
            }
            ListType::Map(keys) => {
                for i in items {
                    path.push(key_segment(i, &keys));
                    walk(i, "", shape.item(), path, out);
                    path.pop();
                }
            }
            ListType::Atomic => {
                out.insert(path.clone(), v.clone());
            }
        },
        _ => {
            out.insert(path.clone(), v.clone());
        }
    }
}

/// Merges an applied configuration into the live object by the resource's structure
/// (custom resources): objects field by field, keyed list items by their keys and set
/// items by value (live order kept, new items appended), atomic lists and maps
/// replaced.
fn merge_by_schema(
    live: &mut Value,
    applied: &Value,
    field: &str,
    shape: Shape<'_>,
    path: &mut Path,
) {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) if !shape.atomic_map() => {
            for (k, av) in a {
                path.push(format!("f:{k}"));
                let child = shape.field(k, path.len() - 1);
                match l.get_mut(k) {
                    Some(lv) => merge_by_schema(lv, av, k, child, path),
                    None => {
                        l.insert(k.clone(), av.clone());
                    }
                }
                path.pop();
            }
        }
        (Value::Array(l), Value::Array(a)) => match shape.list_type(field, path, a) {
            ListType::Set => {
                for item in a {
                    if !l.contains(item) {
                        l.push(item.clone());
                    }
                }
            }
            ListType::Map(keys) => {
                for item in a {
                    let seg = key_segment(item, &keys);
                    match l.iter_mut().find(|i| item_matches(i, &seg)) {
                        Some(existing) => {
                            path.push(seg);
                            merge_by_schema(existing, item, "", shape.item(), path);
                            path.pop();
                        }
                        None => l.push(item.clone()),
                    }
                }
            }
            ListType::Atomic => *l = a.clone(),
        },
        (live, applied) => *live = applied.clone(),
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

/// Whether `path` is a key field of the keyed item `item` (`k:{"name":..}` then `f:name`).
fn is_key_field(item: &[String], path: &[String]) -> bool {
    let (Some(seg), Some(field)) = (item.last(), path.get(item.len())) else {
        return false;
    };
    let Some(id) = seg.strip_prefix("k:") else {
        return false;
    };
    path.len() == item.len() + 1
        && serde_json::from_str::<Map<String, Value>>(id)
            .is_ok_and(|id| field.strip_prefix("f:").is_some_and(|f| id.contains_key(f)))
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
    /// The resource's structural schema (its list and map types): a custom resource's,
    /// or a built-in kind's OpenAPI schema with its merge facts; `None`: the built-in
    /// merge keys decide.
    pub schema: Option<&'a Value>,
}

impl Manager<'_> {
    fn subresource(&self) -> String {
        match self.part {
            Part::Status => "status".into(),
            Part::Scale => "scale".into(),
            Part::All | Part::Main => String::new(),
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
        let changed: BTreeSet<Path> = leaves(new, mgr.part, mgr.schema)
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
    let allowed: BTreeSet<Path> = leaves(&last, mgr.part, mgr.schema)
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
) -> Result<Value, StatusError> {
    let mut entries = read_entries(live);
    let mine = leaves(applied, mgr.part, mgr.schema);
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
        return Err(StatusError::new(
            409,
            reason::CONFLICT,
            format!(
                "Apply failed with {n} conflict{plural}: {}",
                list.join("\n")
            ),
        )
        // kube-apiserver's conflict names no group or kind, only the fields.
        .with_details(StatusDetails {
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
    // What stays owned: the other entries' fields and what this apply sets.
    let kept: Vec<&Path> = entries
        .iter()
        .filter(|e| !(e.manager == mgr.name && e.operation == "Apply" && e.subresource == sub))
        .flat_map(|e| e.fields.iter())
        .chain(mine.keys())
        .collect();
    for p in previous.iter().filter(|p| !mine.contains_key(*p)) {
        if kept.contains(&p) {
            continue;
        }
        // A keyed item nobody owns any field of any more goes whole (its key fields
        // with it); one someone still owns keeps its keys.
        let item = p
            .iter()
            .rposition(|seg| seg.starts_with("k:") || seg.starts_with("v:"))
            .map(|i| &p[..=i]);
        match item {
            Some(item) if !kept.iter().any(|k| k.starts_with(item)) => remove_at(&mut out, item),
            Some(item) if is_key_field(item, p) => {}
            _ => remove_at(&mut out, p),
        }
    }
    let mut patch = applied.clone();
    if let Some(m) = patch.as_object_mut() {
        match mgr.part {
            Part::Main | Part::Scale => {
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
    match mgr.schema {
        Some(schema) => merge_by_schema(
            &mut out,
            &patch,
            "",
            Shape::Schema(Some(schema)),
            &mut Vec::new(),
        ),
        None => strategic_merge_patch(&mut out, &patch)?,
    }
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
            schema: None,
        }
    }

    #[test]
    fn fields_round_trip_through_fields_v1() {
        let obj = json!({"metadata": {"name": "x", "labels": {"a": "b"}},
            "spec": {"replicas": 1, "containers": [{"name": "c", "image": "i"}], "args": ["x"]}});
        let paths: BTreeSet<Path> = leaves(&obj, Part::All, None).into_keys().collect();
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
        // Another manager conflicts; kubectl takes the field over.
        assert!(apply(&live, &applied, &mgr("other"), false).is_err());
        let out = apply(&live, &applied, &mgr("kubectl"), false).unwrap();
        assert_eq!(out["spec"]["replicas"], 3);
        // A field the annotation does not show with its live value still conflicts.
        let mut drifted = live.clone();
        drifted["metadata"]["annotations"][LAST_APPLIED] = json!(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2}})
                .to_string()
        );
        let err = apply(&drifted, &applied, &mgr("kubectl"), false).unwrap_err();
        assert!(err.is_conflict());
        let paused = json!({"spec": {"paused": true}});
        assert!(apply(&live, &paused, &mgr("kubectl"), false).is_err());
    }

    #[test]
    fn apply_conflicts_then_force_moves_ownership() {
        let a = apply(
            &Value::Null,
            &json!({"spec": {"replicas": 1, "x": 1}}),
            &mgr("a"),
            false,
        )
        .unwrap();
        let err = apply(&a, &json!({"spec": {"replicas": 2}}), &mgr("b"), false).unwrap_err();
        assert!(err.is_conflict());
        assert!(err.has_cause(cause::FIELD_MANAGER_CONFLICT));
        // Same value: shared ownership, no conflict.
        apply(&a, &json!({"spec": {"replicas": 1}}), &mgr("b"), false).unwrap();
        let b = apply(&a, &json!({"spec": {"replicas": 2}}), &mgr("b"), true).unwrap();
        assert_eq!(b["spec"]["replicas"], 2);
        // a omits x now: removed, as nobody else owns it.
        let a2 = apply(&b, &json!({"spec": {}}), &mgr("a"), false).unwrap();
        assert!(a2["spec"].get("x").is_none());
        assert_eq!(a2["spec"]["replicas"], 2);
    }

    #[test]
    fn schema_list_maps_merge_by_their_keys_and_sets_by_value() {
        // A custom resource's `listType=map` list (keys `name` and `port`) and `set`
        // list: two managers own one entry each, as kube-apiserver records them.
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "listeners": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name", "port"],
                        "items": {"type": "object", "properties": {
                            "name": {"type": "string"}, "port": {"type": "integer"},
                            "tls": {"type": "boolean"}
                        }}
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "args": {"type": "array", "items": {"type": "string"}}
                }}
            }
        });
        let manager = |name| Manager {
            schema: Some(&schema),
            ..mgr(name)
        };
        let a = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "o"},
            "spec": {"listeners": [{"name": "web", "port": 80}], "tags": ["a"], "args": ["x"]}});
        let live = apply(&Value::Null, &a, &manager("alice"), false).unwrap();
        let b = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "o"},
            "spec": {"listeners": [{"name": "web", "port": 443, "tls": true}], "tags": ["b"]}});
        let live = apply(&live, &b, &manager("bob"), false).unwrap();
        assert_eq!(
            live["spec"]["listeners"],
            json!([{"name": "web", "port": 80}, {"name": "web", "port": 443, "tls": true}])
        );
        assert_eq!(live["spec"]["tags"], json!(["a", "b"]));
        let fields = |who: &str| {
            live["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["manager"] == who)
                .unwrap()["fieldsV1"]
                .clone()
        };
        assert_eq!(
            fields("bob"),
            json!({"f:spec": {
                "f:listeners": {"k:{\"name\":\"web\",\"port\":443}": {
                    "f:name": {}, "f:port": {}, "f:tls": {}
                }},
                "f:tags": {"v:\"b\"": {}}
            }})
        );
        // An atomic list (no list type) is one field: bob taking `args` conflicts.
        let c = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "o"},
            "spec": {"args": ["y"]}});
        let err = apply(&live, &c, &manager("bob"), false).unwrap_err();
        assert_eq!(err.code(), 409, "{err:?}");
    }
}
