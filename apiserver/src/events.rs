//! Validation of Events (core/v1 and events.k8s.io/v1), as kube-apiserver's
//! `pkg/apis/core/validation/events.go` does it (SEMANTICS 11, server-side Event
//! validation).
//!
//! Contract:
//! - A core/v1 Event without `eventTime` only has its namespace checked against
//!   `involvedObject.namespace` (empty: the event namespace is `""` or `"default"`);
//!   reason and message have no limits.
//! - An Event with `eventTime` (either API) needs `reportingController`,
//!   `reportingInstance` (at most 128 characters), `action` and `reason` (at most 128
//!   each), a message or note of at most 1024 characters (reported at `message` for both
//!   APIs), and an event namespace of `"default"` or `"kube-system"` when the object it
//!   is about is cluster-scoped.
//! - Creating an events.k8s.io/v1 Event also needs `eventTime` and a type of `Normal` or
//!   `Warning`; the deprecated fields must be unset; a series needs a count of at least
//!   2 and a `lastObservedTime`.
//! - Failures are one 422 Invalid with every cause. Immutability of events.k8s.io fields
//!   on update and the qualified-name syntax of `reportingController` are not checked.

use serde_json::{Map, Value};

use crate::errors::{cause, StatusCause, StatusError};

use crate::registry::{Object, Registration, Strategy};

const LENGTH_LIMIT: usize = 128;
const NOTE_LENGTH_LIMIT: usize = 1024;

fn str_at<'a>(obj: &'a Map<String, Value>, path: &[&str]) -> &'a str {
    let mut v = obj.get(path[0]);
    for p in &path[1..] {
        v = v.and_then(|x| x.get(p));
    }
    v.and_then(Value::as_str).unwrap_or_default()
}

/// Whether a field holds more than Go's zero value: kube-apiserver validates the decoded
/// Go struct, where `deprecatedSource: {}` (what a protobuf client sends for an unset
/// struct) is as unset as an absent field.
fn set(obj: &Map<String, Value>, key: &str) -> bool {
    fn non_zero(v: &Value) -> bool {
        match v {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(m) => m.values().any(non_zero),
        }
    }
    obj.get(key).is_some_and(non_zero)
}

fn required(field: &str) -> StatusCause {
    StatusCause {
        reason: cause::FIELD_VALUE_REQUIRED.into(),
        message: "Required value".into(),
        field: field.into(),
    }
}

fn invalid(field: &str, value: &str, detail: &str) -> StatusCause {
    StatusCause {
        reason: cause::FIELD_VALUE_INVALID.into(),
        message: format!("Invalid value: {value:?}: {detail}"),
        field: field.into(),
    }
}

/// Validates an Event being created (`creating`) or updated.
pub(crate) fn validate(
    reg: &Registration,
    obj: &Map<String, Value>,
    creating: bool,
) -> Result<(), StatusError> {
    let v1 = reg.group == "events.k8s.io";
    let (about, text) = if v1 {
        ("regarding", "note")
    } else {
        ("involvedObject", "message")
    };
    let ns = str_at(obj, &["metadata", "namespace"]);
    let about_ns = str_at(obj, &[about, "namespace"]);
    let mut causes = Vec::new();
    if !set(obj, "eventTime") && !v1 {
        if about_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                causes.push(invalid(
                    "involvedObject.namespace",
                    about_ns,
                    "does not match event.namespace",
                ));
            }
        } else if about_ns != ns {
            causes.push(invalid(
                "involvedObject.namespace",
                about_ns,
                "does not match event.namespace",
            ));
        }
    } else {
        if about_ns.is_empty() && ns != "default" && ns != "kube-system" {
            causes.push(invalid(
                &format!("{about}.namespace"),
                about_ns,
                "does not match event.namespace",
            ));
        }
        for (field, limit) in [
            ("reportingController", None),
            ("reportingInstance", Some(LENGTH_LIMIT)),
            ("action", Some(LENGTH_LIMIT)),
            ("reason", Some(LENGTH_LIMIT)),
        ] {
            let value = str_at(obj, &[field]);
            if value.is_empty() {
                causes.push(required(field));
            } else if let Some(limit) = limit.filter(|l| value.chars().count() > *l) {
                causes.push(invalid(
                    field,
                    value,
                    &format!("can have at most {limit} characters"),
                ));
            }
        }
        let note = str_at(obj, &[text]);
        if note.chars().count() > NOTE_LENGTH_LIMIT {
            causes.push(invalid(
                "message",
                note,
                &format!("can have at most {NOTE_LENGTH_LIMIT} characters"),
            ));
        }
    }
    if v1 && creating {
        if !set(obj, "eventTime") {
            causes.push(required("eventTime"));
        }
        let t = str_at(obj, &["type"]);
        if t != "Normal" && t != "Warning" {
            causes.push(invalid("type", "", &format!("has invalid value: {t}")));
        }
        for field in [
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedSource",
        ] {
            if set(obj, field) {
                causes.push(invalid(field, "", "needs to be unset"));
            }
        }
        if obj
            .get("deprecatedCount")
            .and_then(Value::as_i64)
            .is_some_and(|c| c != 0)
        {
            causes.push(invalid("deprecatedCount", "", "needs to be unset"));
        }
        if let Some(series) = obj.get("series").filter(|s| !s.is_null()) {
            if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
                causes.push(invalid("series.count", "", "should be at least 2"));
            }
            if series.get("lastObservedTime").is_none_or(|t| t.is_null()) {
                causes.push(required("series.lastObservedTime"));
            }
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        let name = str_at(obj, &["metadata", "name"]);
        Err(StatusError::invalid(&reg.group, &reg.kind, name, causes))
    }
}

/// The Event strategy (core/v1 and events.k8s.io/v1): the validation above; a PUT
/// creates a missing Event.
pub(crate) struct EventStrategy;

impl Strategy for EventStrategy {
    fn name(&self) -> &'static str {
        "events"
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
    fn validate(
        &self,
        reg: &Registration,
        obj: &Object,
        prev: Option<&Object>,
    ) -> Result<(), StatusError> {
        validate(reg, obj, prev.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_of_zero_values_is_unset_as_go_sees_it() {
        let obj = serde_json::json!({
            "deprecatedSource": {}, "zeroSource": {"component": "", "host": ""},
            "source": {"component": "kubelet"}, "t": null, "count": 0,
        });
        let obj = obj.as_object().unwrap();
        assert!(!set(obj, "deprecatedSource"));
        assert!(!set(obj, "zeroSource"));
        assert!(!set(obj, "t") && !set(obj, "count") && !set(obj, "missing"));
        assert!(set(obj, "source"));
    }
}
