//! One call of one admission webhook: the `AdmissionReview` sent, the reply checked and
//! read as kube-apiserver's webhook dispatchers read it.
//!
//! Contract:
//! - The review is `admission.k8s.io/v1` (or `v1beta1`, the first of the webhook's
//!   `admissionReviewVersions` the server speaks) with a fresh uid, the request's kind,
//!   resource and subresource (at the version the webhook's rules name), requestKind,
//!   requestResource and requestSubResource (as requested), name, namespace, operation,
//!   userInfo, object, oldObject, dryRun and options.
//! - The URL gets `?timeout=<n>s` as kube-apiserver adds it; the call is bounded by
//!   `timeoutSeconds`.
//! - A reply must be a `v1` review with the request's uid (`v1beta1`: any review).
//!   `allowed: false` is a denial: the webhook's Status, with code 400 when it gave none
//!   of 400 or more (checked against kube-apiserver 1.36), and message `admission webhook "<name>" denied the request: <message>`
//!   (its reason when there is no message, `without explanation` when neither).
//! - A mutating reply's `patch` must be a `JSONPatch`; a validating webhook's patch is
//!   ignored.
//! - A failed call (unreachable, timeout, malformed reply) is an HTTP 500
//!   `failed calling webhook "<name>": ...` under `failurePolicy: Fail`, and skipped
//!   under `Ignore`; denials are never ignored.
//! - A dry-run request is refused (400) by a webhook whose `sideEffects` is neither
//!   `None` nor `NoneOnDryRun`, before it is called.

use crate::cel_rules::Matched;
use serde_json::{json, Value};

use super::config::Hook;
use super::Attributes;
use crate::errors::{StatusCause, StatusDetails, StatusError};

/// What a webhook answered, when it let the request through.
#[derive(Debug, Default)]
pub(crate) struct Allowed {
    /// A mutating webhook's JSON patch (operations array).
    pub patch: Option<Value>,
    pub warnings: Vec<String>,
}

/// Calls `hook` about the request; `Err` is the Status the client gets.
pub(crate) async fn call(
    hook: &Hook,
    a: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<Allowed, StatusError> {
    // The review is built once: `matchConditions` read its request (with the uid the
    // webhook would get), and the call sends it.
    let version = hook
        .review_versions
        .iter()
        .find(|v| *v == "v1" || *v == "v1beta1")
        .cloned();
    let uid = crate::meta::uid();
    let review = request(version.as_deref().unwrap_or("v1"), &uid, a, object, old);
    // `matchConditions`, on the request as the webhook would see it: a false one skips
    // the webhook; one that cannot be evaluated is a failed call (`failurePolicy`).
    if !hook.match_conditions.is_empty() {
        let variables = [
            ("object", object),
            ("oldObject", old),
            ("request", review.get("request")),
        ];
        match hook.match_conditions.evaluate(&variables) {
            Matched::Yes => {}
            Matched::No => return Ok(Allowed::default()),
            Matched::Error(_) if hook.ignore_failure => {
                tracing::warn!(webhook = %hook.name, "match conditions failed to evaluate, failing open");
                return Ok(Allowed::default());
            }
            // kube-apiserver answers 403, naming the resource, the object and the
            // expression (checked against 1.36).
            Matched::Error(why) => {
                let resource = if a.group.is_empty() {
                    a.resource.clone()
                } else {
                    format!("{}.{}", a.resource, a.group)
                };
                return Err(StatusError::new(
                    403,
                    "Forbidden",
                    format!("{resource} {:?} is forbidden: {why}", a.name),
                ));
            }
        }
    }
    if a.dry_run && !matches!(hook.side_effects.as_str(), "None" | "NoneOnDryRun") {
        return Err(StatusError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        )));
    }
    match exchange(hook, version.as_deref(), &uid, &review).await {
        Ok(Reply::Allowed(allowed)) => Ok(allowed),
        Ok(Reply::Denied(status)) => Err(status),
        Err(_) if hook.ignore_failure => {
            tracing::warn!(webhook = %hook.name, "failed calling webhook, failing open");
            Ok(Allowed::default())
        }
        Err(why) => {
            // kube-apiserver's InternalError: the cause repeats the message.
            let why = format!("failed calling webhook {:?}: {why}", hook.name);
            Err(StatusError::internal(&why).with_details(StatusDetails {
                causes: vec![StatusCause {
                    message: why,
                    ..Default::default()
                }],
                ..Default::default()
            }))
        }
    }
}

enum Reply {
    Allowed(Allowed),
    Denied(StatusError),
}

/// One round trip; `Err` is a failed call (subject to `failurePolicy`).
async fn exchange(
    hook: &Hook,
    version: Option<&str>,
    uid: &str,
    review: &Value,
) -> Result<Reply, String> {
    let version = version.ok_or_else(|| {
        format!(
            "webhook does not accept known AdmissionReview versions: {:?}",
            hook.review_versions
        )
    })?;
    let url = with_timeout(&hook.url, hook.timeout.as_secs());
    let target = crate::webhook_client::Target {
        url: &url,
        service: &hook.service,
        ca_bundle: &hook.ca_bundle,
    };
    let reply = crate::webhook_client::post(&target, hook.timeout, review)
        .await
        .map_err(|e| format!("failed to call webhook: {e}"))?;
    read_reply(hook, version, uid, &reply)
}

/// The `AdmissionReview` of the request.
fn request(
    version: &str,
    uid: &str,
    a: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let (group, kind_version, kind) = kind_of(object.or(old), a);
    let request_kind = if a.request_version == a.version {
        json!({"group": group, "version": kind_version, "kind": kind})
    } else {
        json!({"group": a.group, "version": a.request_version, "kind": a.kind})
    };
    let kind = json!({"group": group, "version": kind_version, "kind": kind});
    let resource = json!({"group": a.group, "version": a.version, "resource": a.resource});
    let request_resource =
        json!({"group": a.group, "version": a.request_version, "resource": a.resource});
    let mut req = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": request_kind,
        "requestResource": request_resource,
        "name": a.name,
        "operation": a.operation.as_str(),
        "userInfo": {"username": "system:anonymous", "groups": ["system:unauthenticated"]},
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": a.dry_run,
        "options": a.options.clone(),
    });
    if !a.subresource.is_empty() {
        req["subResource"] = json!(a.subresource);
        req["requestSubResource"] = json!(a.subresource);
    }
    if !a.namespace.is_empty() {
        req["namespace"] = json!(a.namespace);
    }
    json!({
        "apiVersion": format!("admission.k8s.io/{version}"),
        "kind": "AdmissionReview",
        "request": req,
    })
}

/// The group, version and kind of the object (a subresource such as `scale` has its own
/// kind), else the resource's.
fn kind_of(o: Option<&Value>, a: &Attributes) -> (String, String, String) {
    let av = o
        .and_then(|o| o.get("apiVersion"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = o
        .and_then(|o| o.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if av.is_empty() || kind.is_empty() {
        return (a.group.clone(), a.version.clone(), a.kind.clone());
    }
    let (g, v) = av.split_once('/').unwrap_or(("", av));
    (g.to_owned(), v.to_owned(), kind.to_owned())
}

fn with_timeout(url: &str, secs: u64) -> String {
    if url.is_empty() {
        return String::new();
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}timeout={secs}s")
}

fn read_reply(hook: &Hook, version: &str, uid: &str, reply: &Value) -> Result<Reply, String> {
    if version == "v1" {
        let av = reply
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = reply.get("kind").and_then(Value::as_str).unwrap_or("");
        if av != "admission.k8s.io/v1" || kind != "AdmissionReview" {
            let av = if av.contains('/') {
                av.to_owned()
            } else {
                format!("/{av}")
            };
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {av}, Kind={kind}"
            ));
        }
    }
    let resp = reply
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    if version == "v1" {
        let got = resp.get("uid").and_then(Value::as_str).unwrap_or("");
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let warnings = resp
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| {
            w.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if resp.get("allowed").and_then(Value::as_bool) != Some(true) {
        return Ok(Reply::Denied(denial(&hook.name, resp.get("status"))));
    }
    let patch = match (resp.get("patch"), hook.mutating) {
        (Some(Value::String(p)), true) if !p.is_empty() => {
            match resp.get("patchType").and_then(Value::as_str) {
                Some("JSONPatch") => {}
                None => {
                    return Err("webhook returned response.patch but not response.patchType".into())
                }
                Some(other) => return Err(format!("unsupported patch type {other:?}")),
            }
            let raw = crate::webhook_client::decode_base64(p)
                .ok_or("webhook returned a response.patch that is not base64")?;
            let ops: Value = serde_json::from_slice(&raw)
                .map_err(|e| format!("webhook returned a response.patch that is not JSON: {e}"))?;
            Some(ops)
        }
        _ => None,
    };
    Ok(Reply::Allowed(Allowed { patch, warnings }))
}

/// The Status of a denial, as apiserver's `webhookerrors.ToStatusErr` makes it.
fn denial(name: &str, status: Option<&Value>) -> StatusError {
    let s = |k: &str| {
        status
            .and_then(|st| st.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let code = status
        .and_then(|st| st.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let (message, reason) = (s("message"), s("reason"));
    let denied = format!("admission webhook {name:?} denied the request");
    let message = if !message.is_empty() {
        format!("{denied}: {message}")
    } else if !reason.is_empty() {
        format!("{denied}: {reason}")
    } else {
        format!("{denied} without explanation")
    };
    let err = StatusError::new(code, &reason, message);
    match status
        .and_then(|st| st.get("details"))
        .and_then(|d| serde_json::from_value::<StatusDetails>(d.clone()).ok())
    {
        Some(d) => err.with_details(d),
        None => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_read_as_kube_apiserver_writes_them() {
        let e = denial(
            "v.example.com",
            Some(&json!({"message": "no", "code": 200})),
        );
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.message(),
            "admission webhook \"v.example.com\" denied the request: no"
        );
        let e = denial(
            "v.example.com",
            Some(&json!({"reason": "Invalid", "code": 422})),
        );
        assert_eq!((e.code(), e.reason()), (422, "Invalid"));
        assert_eq!(
            e.message(),
            "admission webhook \"v.example.com\" denied the request: Invalid"
        );
        let e = denial("v.example.com", None);
        assert_eq!(
            e.message(),
            "admission webhook \"v.example.com\" denied the request without explanation"
        );
    }

    #[test]
    fn the_timeout_goes_on_the_url() {
        assert_eq!(
            with_timeout("https://h:1/v", 10),
            "https://h:1/v?timeout=10s"
        );
        assert_eq!(
            with_timeout("https://h:1/v?a=b", 3),
            "https://h:1/v?a=b&timeout=3s"
        );
    }
}
