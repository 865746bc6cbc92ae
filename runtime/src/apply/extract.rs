//! `Extract`: the fields one manager owns, read from `metadata.managedFields`.
//!
//! A managed-fields entry's `fieldsV1` is a set of field paths as nested JSON objects:
//! `f:<name>` a field of a struct or map, `k:<json>` the item of a `listType=map` list
//! whose keys have those values, `v:<json>` the item of a `listType=set` list equal to
//! the value, `i:<n>` the n-th item, and `.` the node itself. An empty set (`{}`) under
//! a field owns its whole value (a scalar, or an atomic list or map). Walking the
//! object with the set keeps exactly the owned fields, in the object's order; the
//! list-type and map-type information that decides how the server merged them is
//! already in the set's shape, so no schema is needed.

use serde_json::{Map, Value};

/// The union of the `fieldsV1` sets `manager` owns through `Apply` at `subresource`
/// (`""` for the object itself, `"status"`, `"scale"`), over every API version it
/// applied at; `None` when it owns nothing there.
pub fn owned_fields(object: &Value, manager: &str, subresource: &str) -> Option<Value> {
    let entries = object.pointer("/metadata/managedFields")?.as_array()?;
    let mut set: Option<Value> = None;
    for e in entries {
        let matches = e.get("manager").and_then(Value::as_str) == Some(manager)
            && e.get("operation").and_then(Value::as_str) == Some("Apply")
            && e.get("subresource").and_then(Value::as_str).unwrap_or("") == subresource;
        if !matches {
            continue;
        }
        if let Some(fields) = e.get("fieldsV1") {
            match &mut set {
                Some(s) => union(s, fields),
                None => set = Some(fields.clone()),
            }
        }
    }
    set
}

fn union(into: &mut Value, other: &Value) {
    match (into, other) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(existing) => union(existing, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, other) => *slot = other.clone(),
    }
}

/// The object as `manager` applied it at `subresource`: its owned fields, plus the
/// `apiVersion`, `kind`, `metadata.name` and `metadata.namespace` an apply
/// configuration needs to be applied again (client-go's `ExtractInto`, then the
/// identity). A manager that owns nothing there gets the identity alone.
///
/// Without a schema it cannot tell an atomic object (owned whole, such as a
/// `LabelSelector`) from a struct the manager applied empty (`spec: {}`, which the
/// server may then fill with defaults the manager does not own): both are returned
/// whole. [`extract_with`] knows which objects are atomic; the generated
/// `extract_<kind>` functions use it.
pub fn extract(object: &Value, manager: &str, subresource: &str) -> Value {
    extract_impl(object, manager, subresource, None)
}

/// [`extract`] with the paths of the kind's atomic objects (`x-kubernetes-map-type:
/// atomic`), as [`atomic_object_paths`] derives them from a schema: dot-separated field
/// names, `*` for any list item or map value (`spec.selector`,
/// `spec.template.spec.topologySpreadConstraints.*.labelSelector`). An object the
/// manager owns as a whole is returned whole when its path is atomic, and empty (`{}`,
/// as it was applied) otherwise, so defaults the server added under it are left out.
pub fn extract_with(object: &Value, manager: &str, subresource: &str, atomic: &[&str]) -> Value {
    extract_impl(object, manager, subresource, Some(atomic))
}

/// The paths of the atomic objects (`x-kubernetes-map-type: atomic`) of a structural
/// schema (a CRD version's `openAPIV3Schema`), in [`extract_with`]'s form.
pub fn atomic_object_paths(schema: &Value) -> Vec<String> {
    fn walk(s: &Value, path: &mut Vec<String>, out: &mut Vec<String>) {
        if path.len() > 32 {
            return;
        }
        if s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
            out.push(path.join("."));
            return;
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (name, p) in props {
                path.push(name.clone());
                walk(p, path, out);
                path.pop();
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = s.get(key).filter(|v| v.is_object()) {
                path.push("*".to_owned());
                walk(inner, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out);
    out
}

fn extract_impl(
    object: &Value,
    manager: &str,
    subresource: &str,
    atomic: Option<&[&str]>,
) -> Value {
    let mut out = match owned_fields(object, manager, subresource) {
        Some(set) => filter(object, &set, &mut Vec::new(), atomic),
        None => Value::Object(Map::new()),
    };
    let Value::Object(m) = &mut out else {
        return out;
    };
    for key in ["apiVersion", "kind"] {
        if let Some(v) = object.get(key) {
            m.insert(key.to_owned(), v.clone());
        }
    }
    let meta = m
        .entry("metadata".to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        for key in ["name", "namespace"] {
            if let Some(v) = object.pointer(&format!("/metadata/{key}")) {
                meta.insert(key.to_owned(), v.clone());
            }
        }
    }
    out
}

/// Whether `path` matches one of the atomic patterns (`*` matches any segment).
fn is_atomic(path: &[String], atomic: &[&str]) -> bool {
    atomic.iter().any(|pattern| {
        let mut segments = pattern.split('.');
        let matched = path
            .iter()
            .all(|p| segments.next().is_some_and(|s| s == "*" || s == p));
        matched && segments.next().is_none()
    })
}

/// The part of `value` that `set` names (`path`: where `value` is, for `atomic`).
fn filter(value: &Value, set: &Value, path: &mut Vec<String>, atomic: Option<&[&str]>) -> Value {
    let Some(set) = set.as_object().filter(|s| s.keys().any(|k| k != ".")) else {
        // `{}` (or only `.`): the whole value is owned, unless it is an object that is
        // not atomic: then the manager applied it empty.
        return match (value, atomic) {
            (Value::Object(_), Some(atomic)) if !is_atomic(path, atomic) => {
                Value::Object(Map::new())
            }
            _ => value.clone(),
        };
    };
    match value {
        Value::Object(obj) => {
            let mut out = Map::new();
            for (k, child) in set {
                if let Some(name) = k.strip_prefix("f:")
                    && let Some(v) = obj.get(name)
                {
                    path.push(name.to_owned());
                    out.insert(name.to_owned(), filter(v, child, path, atomic));
                    path.pop();
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            path.push("*".to_owned());
            for (i, item) in items.iter().enumerate() {
                if let Some(kept) = list_item(item, i, set, path, atomic) {
                    out.push(kept);
                }
            }
            path.pop();
            Value::Array(out)
        }
        scalar => scalar.clone(),
    }
}

/// The owned part of one list item, if the set names it.
fn list_item(
    item: &Value,
    index: usize,
    set: &Map<String, Value>,
    path: &mut Vec<String>,
    atomic: Option<&[&str]>,
) -> Option<Value> {
    for (k, child) in set {
        if let Some(key) = k.strip_prefix("k:") {
            let Ok(Value::Object(key)) = serde_json::from_str::<Value>(key) else {
                continue;
            };
            let matches = key.iter().all(|(f, v)| item.get(f) == Some(v));
            if matches {
                // The key fields identify the item: they are always part of it.
                let mut kept = filter(item, child, path, atomic);
                if let Value::Object(m) = &mut kept {
                    for (f, v) in &key {
                        m.entry(f.clone()).or_insert_with(|| v.clone());
                    }
                }
                return Some(kept);
            }
        } else if let Some(v) = k.strip_prefix("v:") {
            if serde_json::from_str::<Value>(v).ok().as_ref() == Some(item) {
                return Some(item.clone());
            }
        } else if let Some(i) = k.strip_prefix("i:")
            && i.parse::<usize>().ok() == Some(index)
        {
            return Some(filter(item, child, path, atomic));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "uid": "u-1",
                "labels": {"app": "web", "team": "a"},
                "managedFields": [
                    {
                        "manager": "alice",
                        "operation": "Apply",
                        "apiVersion": "apps/v1",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            "f:metadata": {"f:labels": {"f:app": {}}},
                            "f:spec": {
                                "f:replicas": {},
                                "f:template": {"f:spec": {"f:containers": {
                                    "k:{\"name\":\"app\"}": {".": {}, "f:name": {}, "f:image": {}}
                                }}}
                            }
                        }
                    },
                    {
                        "manager": "alice",
                        "operation": "Apply",
                        "apiVersion": "apps/v1",
                        "fieldsType": "FieldsV1",
                        "subresource": "status",
                        "fieldsV1": {"f:status": {"f:conditions": {
                            "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}
                        }}}
                    },
                    {
                        "manager": "bob",
                        "operation": "Apply",
                        "apiVersion": "apps/v1",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            "f:metadata": {"f:labels": {"f:team": {}}, "f:finalizers": {"v:\"b/f\"": {}}},
                            "f:spec": {"f:template": {"f:spec": {"f:containers": {
                                "k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}}
                            }}}}
                        }
                    },
                    {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}}
                ],
                "finalizers": ["a/f", "b/f"]
            },
            "spec": {
                "replicas": 3,
                "paused": false,
                "template": {"spec": {"containers": [
                    {"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]},
                    {"name": "sidecar", "image": "envoy"}
                ]}}
            },
            "status": {"conditions": [
                {"type": "Available", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "Starting"}
            ]}
        })
    }

    #[test]
    fn a_manager_gets_exactly_what_it_applied() {
        assert_eq!(
            extract(&object(), "alice", ""),
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
                "spec": {
                    "replicas": 3,
                    "template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}
                }
            })
        );
    }

    #[test]
    fn list_map_items_keep_their_keys_and_set_items_their_value() {
        assert_eq!(
            extract(&object(), "bob", ""),
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default", "labels": {"team": "a"}, "finalizers": ["b/f"]},
                "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "envoy"}]}}}
            })
        );
    }

    #[test]
    fn an_object_applied_empty_is_empty_unless_atomic() {
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "managedFields": [{
                "manager": "m", "operation": "Apply", "apiVersion": "apps/v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:strategy": {}, "f:selector": {}}}
            }]},
            "spec": {
                "strategy": {"type": "RollingUpdate"},
                "selector": {"matchLabels": {"app": "web"}}
            }
        });
        let schema = json!({"properties": {"spec": {"properties": {
            "strategy": {"type": "object", "properties": {"type": {"type": "string"}}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic"}
        }}}});
        let atomic = atomic_object_paths(&schema);
        assert_eq!(atomic, ["spec.selector"]);
        let atomic: Vec<&str> = atomic.iter().map(String::as_str).collect();
        // The strategy was applied as `{}` and defaulted by the server; the selector is
        // owned whole (as client-go's ExtractDeployment reads them).
        assert_eq!(
            extract_with(&obj, "m", "", &atomic)["spec"],
            json!({"strategy": {}, "selector": {"matchLabels": {"app": "web"}}})
        );
        // Without the schema both come back whole.
        assert_eq!(extract(&obj, "m", "")["spec"], obj["spec"]);
        assert!(is_atomic(&["a".into(), "x".into(), "b".into()], &["a.*.b"]));
        assert!(!is_atomic(&["a".into()], &["a.*.b"]));
    }

    #[test]
    fn subresources_and_update_managers_are_apart() {
        assert_eq!(
            extract(&object(), "alice", "status")["status"],
            json!({"conditions": [{"type": "Ready", "status": "False"}]})
        );
        // `kubectl` wrote with Update, not Apply: it has applied nothing.
        let none = extract(&object(), "kubectl", "");
        assert_eq!(none.get("spec"), None);
        assert_eq!(
            none["metadata"],
            json!({"name": "web", "namespace": "default"})
        );
    }
}
