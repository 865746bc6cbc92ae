//! The `scale` subresource: an `autoscaling/v1` Scale read from and written to the
//! object at its registration's replica and selector paths.

use serde_json::{Map, Value};

use super::{Preconditions, WriteOpts};
use crate::errors::{cause, StatusCause, StatusError};
use crate::registry::Registration;
use crate::server::Inner;

impl Inner {
    /// The `autoscaling/v1` Scale of an object.
    pub(crate) fn scale_of(reg: &Registration, obj: &Map<String, Value>) -> Value {
        let p = &reg.scale_paths;
        let meta = obj.get("metadata").cloned().unwrap_or_default();
        let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
        let mut m = Map::new();
        for k in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if !pick(k).is_null() {
                m.insert(k.into(), pick(k));
            }
        }
        let mut status = serde_json::json!({
            "replicas": at_path(obj, &p.status_replicas).cloned().unwrap_or(Value::from(0)),
        });
        if !p.label_selector.is_empty() {
            if let Some(sel) = at_path(obj, &p.label_selector) {
                status["selector"] = Value::String(format_selector(sel));
            }
        }
        // Go's `ScaleSpec.Replicas` is `omitempty`: kube-apiserver answers `spec: {}` for
        // zero replicas (and `status.replicas: 0`, which is not).
        let mut spec = Map::new();
        match at_path(obj, &p.spec_replicas) {
            Some(r) if r.as_i64() != Some(0) => {
                spec.insert("replicas".into(), r.clone());
            }
            _ => {}
        }
        serde_json::json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": Value::Object(m),
            "spec": Value::Object(spec),
            "status": status,
        })
    }

    /// Reads the scale subresource.
    pub(crate) fn get_scale(&self, idx: usize, ns: &str, name: &str) -> Result<Value, StatusError> {
        let reg = self.registration(idx);
        Ok(Self::scale_of(
            &reg,
            &self.stored(idx, ns, name)?.to_value()?,
        ))
    }

    /// Writes the scale subresource: `spec.replicas` of the Scale goes to the object
    /// (409 on a stale `metadata.resourceVersion` in the Scale).
    pub(crate) fn update_scale(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        scale: &Value,
        opts: &WriteOpts,
    ) -> Result<Value, StatusError> {
        let reg = self.registration(idx);
        let replicas = scale
            .pointer("/spec/replicas")
            .filter(|r| r.is_i64() || r.is_u64())
            .cloned()
            .ok_or_else(|| {
                StatusError::invalid(
                    "autoscaling",
                    "Scale",
                    name,
                    vec![StatusCause {
                        reason: cause::FIELD_VALUE_REQUIRED.into(),
                        message: "Required value".into(),
                        field: "spec.replicas".into(),
                    }],
                )
            })?;
        if replicas.as_i64().is_some_and(|r| r < 0) {
            return Err(StatusError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![StatusCause {
                    reason: cause::FIELD_VALUE_INVALID.into(),
                    message: format!(
                        "Invalid value: {replicas}: must be greater than or equal to 0"
                    ),
                    field: "spec.replicas".into(),
                }],
            ));
        }
        let want_rv = scale
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let out = self.modify(idx, ns, name, opts, false, |old, body| {
            Preconditions::body(&want_rv).check(&reg, name, old, body)?;
            set_path(body, &reg.scale_paths.spec_replicas, replicas);
            Ok(())
        })?;
        Ok(Self::scale_of(&reg, &out.to_value()?))
    }
}

fn path_segments(path: &str) -> Vec<&str> {
    path.split('.').filter(|s| !s.is_empty()).collect()
}

fn at_path<'a>(v: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let segs = path_segments(path);
    let (first, rest) = segs.split_first()?;
    let mut cur = v.get(*first)?;
    for s in rest {
        cur = cur.get(*s)?;
    }
    Some(cur)
}

pub(super) fn set_path(v: &mut Map<String, Value>, path: &str, x: Value) {
    let segs = path_segments(path);
    let Some((last, init)) = segs.split_last() else {
        return;
    };
    let mut cur = v;
    for s in init {
        let next = cur
            .entry((*s).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        match next {
            Value::Object(m) => cur = m,
            _ => return,
        }
    }
    cur.insert((*last).to_owned(), x);
}

/// A `LabelSelector` object in the selector string syntax.
fn format_selector(sel: &Value) -> String {
    if let Some(s) = sel.as_str() {
        return s.to_owned();
    }
    let mut parts = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let op = e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let vals: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            parts.push(match op {
                "In" => format!("{key} in ({})", vals.join(",")),
                "NotIn" => format!("{key} notin ({})", vals.join(",")),
                "Exists" => key.to_owned(),
                "DoesNotExist" => format!("!{key}"),
                _ => continue,
            });
        }
    }
    parts.join(",")
}
