//! The three patch formats of `PATCH` besides server-side apply: JSON merge patch
//! (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.
//!
//! Contract:
//! - [`merge_patch`] follows RFC 7386 exactly: `null` deletes a key, objects merge
//!   recursively, everything else (lists included) replaces.
//! - [`json_patch`] applies RFC 6902 operations (`add`, `remove`, `replace`, `move`,
//!   `copy`, `test`) in order, atomically (the caller gets the document only when every
//!   operation succeeded), with RFC 6901 pointers (`~0`, `~1`, `-` for the end of a list).
//! - [`strategic_merge_patch`] is a merge patch in which lists named in [`MERGE_KEYS`]
//!   merge item by item on their merge key (containers by `name`, conditions by `type`,
//!   ...), `metadata.finalizers` merges as a set, and the directives `$patch: replace`
//!   (in an object: replace it; as a list item: replace the whole list), `$patch: delete`
//!   (in an object: delete it; in a list item: delete the item with that key) and
//!   `$deleteFromPrimitiveList/<field>` are honoured; `$retainKeys` is accepted and
//!   ignored. A merged list is ordered as kube-apiserver orders it (SEMANTICS 9, PATCH): the
//!   items the patch names in the patch's order (or in `$setElementOrder/<field>`'s,
//!   when given), the other stored items in their stored order, interleaved so that two
//!   stored items keep their stored order and an item new to the list comes before the
//!   stored ones it meets (env `[A]` patched with `[B]` gives `[B, A]`). Merge keys come from the field's name, not
//!   from the Go type's schema: a field of another type with the same name merges the
//!   same way. Any other list replaces, as a merge patch does.

use serde_json::{Map, Value};

use crate::errors::StatusError;

/// Lists merged item by item in a strategic merge patch: the field name and the merge
/// key of its items (the keys the Kubernetes types declare as `patchMergeKey`).
pub const MERGE_KEYS: &[(&str, &str)] = &[
    ("containers", "name"),
    ("initContainers", "name"),
    ("ephemeralContainers", "name"),
    ("env", "name"),
    ("volumes", "name"),
    ("volumeMounts", "mountPath"),
    ("volumeDevices", "devicePath"),
    ("imagePullSecrets", "name"),
    ("hostAliases", "ip"),
    ("conditions", "type"),
    ("ownerReferences", "uid"),
    ("ports", "containerPort"),
];

/// Applies an RFC 7386 merge patch to `target`.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

fn bad(msg: impl Into<String>) -> StatusError {
    StatusError::new(422, crate::errors::reason::INVALID, msg.into())
}

fn unescape(tok: &str) -> String {
    tok.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<Vec<String>, StatusError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| bad(format!("invalid JSON pointer {path:?}")))?;
    Ok(rest.split('/').map(unescape).collect())
}

fn index(tok: &str, len: usize, allow_end: bool) -> Result<usize, StatusError> {
    if allow_end && tok == "-" {
        return Ok(len);
    }
    let i: usize = tok
        .parse()
        .map_err(|_| bad(format!("invalid array index {tok:?}")))?;
    let max = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if i > max || (!allow_end && len == 0) {
        return Err(bad(format!("array index {i} out of bounds")));
    }
    Ok(i)
}

fn parent_mut<'a>(
    doc: &'a mut Value,
    toks: &[String],
) -> Result<(&'a mut Value, String), StatusError> {
    let (last, init) = toks
        .split_last()
        .ok_or_else(|| bad("the path must not be the whole document"))?;
    let mut cur = doc;
    for t in init {
        cur = match cur {
            Value::Object(m) => m
                .get_mut(t)
                .ok_or_else(|| bad(format!("path element {t:?} not found")))?,
            Value::Array(a) => {
                let i = index(t, a.len(), false)?;
                &mut a[i]
            }
            _ => return Err(bad(format!("path element {t:?} is not a container"))),
        };
    }
    Ok((cur, last.clone()))
}

fn get_ptr<'a>(doc: &'a Value, path: &str) -> Result<&'a Value, StatusError> {
    doc.pointer(path)
        .ok_or_else(|| bad(format!("the path {path:?} does not exist")))
}

fn add(doc: &mut Value, path: &str, v: Value) -> Result<(), StatusError> {
    let toks = split_pointer(path)?;
    if toks.is_empty() {
        *doc = v;
        return Ok(());
    }
    let (parent, last) = parent_mut(doc, &toks)?;
    match parent {
        Value::Object(m) => {
            m.insert(last, v);
        }
        Value::Array(a) => {
            let i = index(&last, a.len(), true)?;
            a.insert(i, v);
        }
        _ => return Err(bad(format!("cannot add at {path:?}"))),
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, StatusError> {
    let toks = split_pointer(path)?;
    let (parent, last) = parent_mut(doc, &toks)?;
    match parent {
        Value::Object(m) => m
            .remove(&last)
            .ok_or_else(|| bad(format!("the path {path:?} does not exist"))),
        Value::Array(a) => {
            let i = index(&last, a.len(), false)?;
            Ok(a.remove(i))
        }
        _ => Err(bad(format!("cannot remove {path:?}"))),
    }
}

/// Applies an RFC 6902 JSON patch (a list of operations) to `doc`.
pub(crate) fn json_patch(doc: &Value, ops: &Value) -> Result<Value, StatusError> {
    let ops = ops
        .as_array()
        .ok_or_else(|| StatusError::bad_request("a JSON patch must be a list of operations"))?;
    let mut out = doc.clone();
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or_default();
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("an operation needs a path"))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| bad(format!("operation {kind:?} needs a value")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("operation {kind:?} needs from")))
        };
        match kind {
            "add" => add(&mut out, path, value()?)?,
            "remove" => {
                remove(&mut out, path)?;
            }
            "replace" => {
                get_ptr(&out, path)?;
                if path.is_empty() {
                    out = value()?;
                } else {
                    remove(&mut out, path)?;
                    add(&mut out, path, value()?)?;
                }
            }
            "move" => {
                let v = remove(&mut out, from()?)?;
                add(&mut out, path, v)?;
            }
            "copy" => {
                let v = get_ptr(&out, from()?)?.clone();
                add(&mut out, path, v)?;
            }
            "test" => {
                // As kube-apiserver's json-patch library: a missing value tests equal
                // to null.
                let want = value()?;
                let have = get_ptr(&out, path).ok();
                if have.unwrap_or(&Value::Null) != &want {
                    return Err(bad(format!("testing value at {path:?} failed")));
                }
            }
            other => return Err(bad(format!("unknown operation {other:?}"))),
        }
    }
    Ok(out)
}

/// The merge key of a list field in a strategic merge patch, if it has one.
pub(crate) fn merge_key_for(field: &str, items: &[Value]) -> Option<&'static str> {
    if field == "ports" {
        // Container ports merge on containerPort, service ports on port.
        let any = |k: &str| items.iter().any(|i| i.get(k).is_some());
        return if any("containerPort") {
            Some("containerPort")
        } else if any("port") {
            Some("port")
        } else {
            None
        };
    }
    MERGE_KEYS
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(_, k)| *k)
}

/// Applies a strategic merge patch to an object.
pub(crate) fn strategic_merge_patch(target: &mut Value, patch: &Value) -> Result<(), StatusError> {
    smp_map(target, patch, "")
}

fn smp_map(target: &mut Value, patch: &Value, field: &str) -> Result<(), StatusError> {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut m = p.clone();
            m.remove("$patch");
            *target = Value::Object(m);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => {
            return Err(StatusError::bad_request(format!(
                "unknown patch type {other:?} in {field:?}"
            )))
        }
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else {
        return Ok(());
    };
    // The stored lists a `$setElementOrder` orders, as they were before the patch.
    let ordered: Vec<(&str, &Value, Vec<Value>)> = p
        .iter()
        .filter_map(|(k, order)| {
            let f = k.strip_prefix("$setElementOrder/")?;
            let stored = t
                .get(f)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            Some((f, order, stored))
        })
        .collect();
    for (k, v) in p {
        if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(f) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(cur)), Some(del)) = (t.get_mut(f), v.as_array()) {
                cur.retain(|x| !del.contains(x));
                // The Go types leave an emptied list out (`omitempty`).
                if cur.is_empty() {
                    t.remove(f);
                }
            }
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        let slot = t.entry(k.clone()).or_insert(Value::Null);
        match v {
            Value::Object(_) => {
                smp_map(slot, v, k)?;
                if slot.is_null() {
                    t.remove(k);
                }
            }
            Value::Array(items) => smp_list(slot, items, k)?,
            _ => *slot = v.clone(),
        }
    }
    for (f, order, stored) in ordered {
        let (Some(Value::Array(cur)), Some(order)) = (t.get_mut(f), order.as_array()) else {
            continue;
        };
        let key = merge_key_for(f, order);
        let merged = std::mem::take(cur);
        *cur = normalize_order(merged, order, &stored, key);
    }
    Ok(())
}

/// Orders a merged list as kube-apiserver's strategic merge does: the items `order`
/// names sorted by it, the others by their place in `stored`, then the two interleaved,
/// an item of the second kind first only when both are stored and it was stored before.
/// Items are the same when their merge `key` is (scalars: when equal).
fn normalize_order(
    merged: Vec<Value>,
    order: &[Value],
    stored: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let same = |a: &Value, b: &Value| match key {
        Some(k) => a.get(k).is_some() && a.get(k) == b.get(k),
        None => a == b,
    };
    let pos = |list: &[Value], v: &Value| list.iter().position(|x| same(x, v));
    let (mut named, mut rest): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| pos(order, v).is_some());
    named.sort_by_key(|v| pos(order, v));
    // Items not stored (None) sort first, as Go's index -1 does.
    rest.sort_by_key(|v| pos(stored, v));
    let mut out = Vec::with_capacity(named.len() + rest.len());
    let (mut named, mut rest) = (named.into_iter().peekable(), rest.into_iter().peekable());
    loop {
        let take_rest = match (rest.peek(), named.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(r), Some(n)) => matches!(
                (pos(stored, r), pos(stored, n)),
                (Some(a), Some(b)) if a < b
            ),
        };
        let next = if take_rest { rest.next() } else { named.next() };
        out.extend(next);
    }
    out
}

fn smp_list(target: &mut Value, items: &[Value], field: &str) -> Result<(), StatusError> {
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *target = Value::Array(
            items
                .iter()
                .filter(|i| i.get("$patch").is_none())
                .cloned()
                .collect(),
        );
        return Ok(());
    }
    let stored = target.as_array().cloned().unwrap_or_default();
    if field == "finalizers" {
        let mut cur = stored.clone();
        for i in items {
            if !cur.contains(i) {
                cur.push(i.clone());
            }
        }
        *target = Value::Array(normalize_order(cur, items, &stored, None));
        return Ok(());
    }
    let Some(key) = merge_key_for(field, items) else {
        *target = Value::Array(items.to_vec());
        return Ok(());
    };
    let mut cur = stored.clone();
    for item in items {
        let Some(id) = item.get(key) else {
            return Err(StatusError::bad_request(format!(
                "map: {item} does not contain declared merge key: {key}"
            )));
        };
        let pos = cur.iter().position(|c| c.get(key) == Some(id));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(p), true) => {
                cur.remove(p);
            }
            (None, true) => {}
            (Some(p), false) => smp_map(&mut cur[p], item, field)?,
            (None, false) => {
                let mut fresh = Value::Null;
                smp_map(&mut fresh, item, field)?;
                cur.push(fresh);
            }
        }
    }
    *target = Value::Array(normalize_order(cur, items, &stored, Some(key)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc7386() {
        let mut doc = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        merge_patch(&mut doc, &json!({"a": "z", "c": {"f": null}, "l": [3]}));
        assert_eq!(doc, json!({"a": "z", "c": {"d": "e"}, "l": [3]}));
    }

    #[test]
    fn json_patch_applies_every_operation() {
        let doc = json!({"a": {"b": [1, 2]}, "x": 1});
        let out = json_patch(
            &doc,
            &json!([
                {"op": "add", "path": "/a/b/-", "value": 3},
                {"op": "replace", "path": "/x", "value": 2},
                {"op": "copy", "from": "/x", "path": "/y"},
                {"op": "move", "from": "/y", "path": "/z"},
                {"op": "remove", "path": "/a/b/0"},
                {"op": "test", "path": "/z", "value": 2},
                {"op": "add", "path": "/k~1l", "value": true},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"a": {"b": [2, 3]}, "x": 2, "z": 2, "k/l": true})
        );
        let err = json_patch(&doc, &json!([{"op": "test", "path": "/x", "value": 9}]));
        assert!(err.unwrap_err().is_invalid());
        assert!(json_patch(&doc, &json!([{"op": "remove", "path": "/nope"}])).is_err());
        // A missing value tests equal to null, and only to null.
        let null = json!([{"op": "test", "path": "/nope", "value": null}]);
        assert_eq!(json_patch(&doc, &null).unwrap(), doc);
        assert!(json_patch(&doc, &json!([{"op": "test", "path": "/nope", "value": 1}])).is_err());
    }

    #[test]
    fn strategic_merge_merges_keyed_lists_and_honours_directives() {
        let mut pod = json!({"metadata": {"finalizers": ["a"]}, "spec": {"containers": [
            {"name": "app", "image": "v1", "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "s1"}
        ], "tolerations": [{"key": "k"}]}});
        strategic_merge_patch(
            &mut pod,
            &json!({"metadata": {"finalizers": ["b"]}, "spec": {"containers": [
                {"name": "app", "env": [{"name": "B", "value": "2"}]},
                {"name": "side", "$patch": "delete"},
                {"name": "new", "image": "n"}
            ], "tolerations": [{"key": "t"}]}}),
        )
        .unwrap();
        assert_eq!(
            pod,
            json!({"metadata": {"finalizers": ["b", "a"]}, "spec": {"containers": [
                {"name": "app", "image": "v1", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]},
                {"name": "new", "image": "n"}
            ], "tolerations": [{"key": "t"}]}})
        );
        strategic_merge_patch(
            &mut pod,
            &json!({"spec": {"containers": [{"name": "only"}, {"$patch": "replace"}]}}),
        )
        .unwrap();
        assert_eq!(pod["spec"]["containers"], json!([{"name": "only"}]));
        strategic_merge_patch(&mut pod, &json!({"spec": {"$patch": "delete"}})).unwrap();
        assert!(pod.get("spec").is_none());
    }

    fn names(list: &Value) -> Vec<&str> {
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i.get("name").and_then(Value::as_str))
            .collect()
    }

    /// The order kube-apiserver 1.36 gives merged lists (checked against it: env `[A, B]`
    /// patched with `[C, A]` is `[C, A, B]`; finalizers `[a]` with `[b]` are `[b, a]`).
    #[test]
    fn strategic_merge_puts_new_items_first_and_keeps_stored_order() {
        let mut d = json!({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]});
        let patch = json!({"env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}]});
        strategic_merge_patch(&mut d, &patch).unwrap();
        assert_eq!(names(&d["env"]), ["C", "A", "B"]);
        assert_eq!(d["env"][1]["value"], "9");
        // The patch's order wins among the items it names; stored ones keep theirs.
        let mut d = json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]});
        let patch = json!({"containers": [{"name": "c", "image": "x"}, {"name": "a"}]});
        strategic_merge_patch(&mut d, &patch).unwrap();
        assert_eq!(names(&d["containers"]), ["b", "c", "a"]);
        let mut d = json!({"metadata": {"finalizers": ["a"]}});
        strategic_merge_patch(&mut d, &json!({"metadata": {"finalizers": ["b"]}})).unwrap();
        assert_eq!(d["metadata"]["finalizers"], json!(["b", "a"]));
        // A list emptied by $deleteFromPrimitiveList is left out.
        let delete = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "b"]}});
        strategic_merge_patch(&mut d, &delete).unwrap();
        assert!(d["metadata"].get("finalizers").is_none(), "{d}");
    }

    #[test]
    fn set_element_order_orders_the_list_it_names() {
        let mut d = json!({"env": [{"name": "A"}, {"name": "B"}, {"name": "C"}]});
        let patch = json!({"$setElementOrder/env": [{"name": "C"}, {"name": "A"}, {"name": "B"}]});
        strategic_merge_patch(&mut d, &patch).unwrap();
        assert_eq!(names(&d["env"]), ["C", "A", "B"]);
        // With a patch list, the directive's order rules the named items, not the list's.
        let patch = json!({
            "$setElementOrder/env": [{"name": "A"}, {"name": "D"}],
            "env": [{"name": "D", "value": "4"}, {"name": "A", "value": "1"}]
        });
        strategic_merge_patch(&mut d, &patch).unwrap();
        assert_eq!(names(&d["env"]), ["C", "A", "D", "B"]);
        assert!(d.get("$setElementOrder/env").is_none());
    }
}
