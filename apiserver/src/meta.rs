//! The object vocabulary every write shares: server-generated values (uid, name
//! suffixes, timestamps) and access to an object's `metadata`.
//!
//! Contract: functions here read or edit one JSON object and nothing else; they know no
//! resource, registration or storage, so every module may use them (this module imports
//! only the error type).

use serde_json::{Map, Value};

use crate::errors::StatusError;

const CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The five characters `generateName` gets, from kube-apiserver's alphabet (no vowels).
pub(crate) fn random_suffix() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..5)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

/// A random version-4 UUID, as `metadata.uid` carries.
pub(crate) fn uid() -> String {
    let b: [u8; 16] = rand::random();
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// The current time as Kubernetes writes timestamps (RFC 3339, seconds, UTC).
pub(crate) fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The object's `metadata`, created when absent or null (400 when it is not an object).
pub(crate) fn meta_mut(
    obj: &mut Map<String, Value>,
) -> Result<&mut Map<String, Value>, StatusError> {
    let m = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if m.is_null() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut()
        .ok_or_else(|| StatusError::bad_request("metadata must be an object"))
}

/// A string field of `metadata` (`""` when absent).
pub(crate) fn meta_str<'a>(obj: &'a Map<String, Value>, k: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(k))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A Namespace's `spec.finalizers` (empty for other objects' absent field).
pub(crate) fn spec_finalizers(obj: &Map<String, Value>) -> Vec<Value> {
    obj.get("spec")
        .and_then(|s| s.get("finalizers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Whether a v1 Namespace still has `spec.finalizers` (it is not removed while it has).
pub(crate) fn has_spec_finalizers(obj: &Map<String, Value>) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Namespace")
        && obj.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && !spec_finalizers(obj).is_empty()
}

/// Whether anything still holds the object back from removal: `metadata.finalizers`,
/// or a Namespace's `spec.finalizers`.
pub(crate) fn has_finalizers(obj: &Map<String, Value>) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
        || has_spec_finalizers(obj)
}
