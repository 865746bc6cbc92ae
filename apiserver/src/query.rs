//! A request's query parameters (apimachinery's ListOptions, DeleteOptions and
//! PatchOptions as query strings), their validation, and continue tokens.
//!
//! Contract:
//! - Parameters are percent-decoded; unknown ones are ignored, as kube-apiserver ignores
//!   them; a malformed number is a 400.
//! - [`validate`] rejects the combinations of `resourceVersion`,
//!   `resourceVersionMatch`, `sendInitialEvents` and `continue` that kube-apiserver
//!   rejects, with its causes (422 Invalid on `ListOptions`).
//! - A continue token names a snapshot version and the last key returned; it is opaque
//!   to clients and decoding a foreign one is a 400.
//!
//! Shared by the HTTP handlers and the watch module, which depends on nothing else of
//! the handlers.

use serde_json::{json, Value};

use crate::errors::{cause, StatusCause, StatusError};
use crate::media::FieldValidation;

/// The query parameters of a list or watch.
#[derive(Debug, Default, Clone)]
pub(crate) struct Query {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub limit: Option<u64>,
    pub continue_: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub watch: bool,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub propagation_policy: Option<String>,
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub force: bool,
    pub grace_period_seconds: Option<i64>,
    pub field_validation: FieldValidation,
    /// A `fieldValidation` value that is none of the supported ones: a write answers
    /// 422 for it (its options kind depends on the verb).
    pub bad_field_validation: Option<String>,
    pub include_object: Option<String>,
}

pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_bool(v: &str) -> bool {
    matches!(v, "true" | "1" | "True" | "TRUE")
}

impl Query {
    pub(crate) fn parse(q: Option<&str>) -> Result<Query, StatusError> {
        let mut out = Query::default();
        for pair in q.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode(v);
            let some = |v: String| (!v.is_empty()).then_some(v);
            match k {
                "labelSelector" => out.label_selector = some(v),
                "fieldSelector" => out.field_selector = some(v),
                "resourceVersion" => out.resource_version = some(v),
                "resourceVersionMatch" => out.resource_version_match = some(v),
                "continue" => out.continue_ = some(v),
                "limit" if !v.is_empty() => {
                    let n: i64 = v.parse().map_err(|_| {
                        StatusError::bad_request(format!("invalid value for limit: {v:?}"))
                    })?;
                    out.limit = (n > 0).then_some(n as u64);
                }
                "timeoutSeconds" if !v.is_empty() => {
                    let n: i64 = v.parse().map_err(|_| {
                        StatusError::bad_request(format!("invalid value for timeoutSeconds: {v:?}"))
                    })?;
                    out.timeout_seconds = (n > 0).then_some(n as u64);
                }
                "watch" => out.watch = parse_bool(&v),
                "allowWatchBookmarks" => out.allow_watch_bookmarks = parse_bool(&v),
                "sendInitialEvents" if !v.is_empty() => {
                    out.send_initial_events = Some(parse_bool(&v))
                }
                "propagationPolicy" => out.propagation_policy = some(v),
                "dryRun" => out.dry_run = v == "All",
                "fieldManager" => out.field_manager = some(v),
                "fieldValidation" => match FieldValidation::parse(&v) {
                    Ok(f) => out.field_validation = f,
                    Err(_) => out.bad_field_validation = Some(v),
                },
                "includeObject" => out.include_object = Some(v),
                "force" => out.force = parse_bool(&v),
                "gracePeriodSeconds" => out.grace_period_seconds = v.parse().ok(),
                _ => {}
            }
        }
        Ok(out)
    }
}

/// A resourceVersion query value as a number.
pub(crate) fn parse_rv(v: &str) -> Result<u64, StatusError> {
    v.parse()
        .map_err(|_| StatusError::bad_request(format!("invalid resource version {v:?}")))
}

fn forbidden(field: &str, message: &str) -> StatusCause {
    StatusCause {
        reason: cause::FIELD_VALUE_FORBIDDEN.into(),
        message: format!("Forbidden: {message}"),
        field: field.into(),
    }
}

pub(crate) fn not_supported(field: &str, value: &str, supported: &[&str]) -> StatusCause {
    let list = supported
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    StatusCause {
        reason: cause::FIELD_VALUE_NOT_SUPPORTED.into(),
        message: format!("Unsupported value: {value:?}: supported values: {list}"),
        field: field.into(),
    }
}

/// apimachinery's ListOptions validation for lists and watches.
pub(crate) fn validate(q: &Query) -> Result<(), StatusError> {
    let mut causes = Vec::new();
    let m = q.resource_version_match.as_deref();
    if q.watch {
        if q.send_initial_events.is_some() && m != Some("NotOlderThan") {
            causes.push(forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = m {
            if q.send_initial_events.is_none() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                causes.push(not_supported("resourceVersionMatch", m, &["NotOlderThan"]));
            }
            if q.continue_.is_some() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if let Some(m) = m {
            if q.resource_version.is_none() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if q.continue_.is_some() {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m != "Exact" && m != "NotOlderThan" {
                causes.push(not_supported(
                    "resourceVersionMatch",
                    m,
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if m == "Exact" && q.resource_version.as_deref() == Some("0") {
                causes.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if q.send_initial_events.is_some() {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(StatusError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            causes,
        ))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// A continue token: the snapshot version (0: the current state, for an inconsistent
/// resume) and the last key returned.
pub(crate) fn encode_continue(rv: u64, start: &str) -> String {
    hex(json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
        .to_string()
        .as_bytes())
}

pub(crate) fn decode_continue(tok: &str) -> Result<(u64, String), StatusError> {
    let bad = || StatusError::bad_request(format!("continue key is not valid: {tok:?}"));
    let v: Value = unhex(tok)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(bad)?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, start.to_owned()))
}
