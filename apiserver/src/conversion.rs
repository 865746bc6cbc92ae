//! Conversion of custom resources between the versions of their CRD: strategy `None`
//! (only `apiVersion` changes) and strategy `Webhook` (a `ConversionReview` posted to the
//! CRD's webhook), as kube-apiserver's apiextensions converter does (SEMANTICS 13,
//! "Versions and conversion").
//!
//! Contract:
//! - [`Conversion::from_crd_spec`] reads `spec.conversion` of an `apiextensions.k8s.io/v1`
//!   CRD: strategy, `webhook.clientConfig` (`url`, `service`, `caBundle`) and
//!   `webhook.conversionReviewVersions`.
//! - [`convert`] converts a batch of objects to one apiVersion. Objects already at that
//!   apiVersion are left alone and never sent; when none needs converting no request is
//!   made. A webhook gets one `ConversionReview` (the first of its
//!   `conversionReviewVersions` the server knows, `v1` or `v1beta1`) with a new uid and
//!   every object to convert, in order.
//! - A reply is checked as kube-apiserver checks it: a `v1` review must come back as
//!   `apiextensions.k8s.io/v1` `ConversionReview` with the request's uid; the result must be
//!   `Success`; there must be as many converted objects as sent, each at the desired
//!   apiVersion with the same kind, name, namespace and uid. Metadata other than labels
//!   and annotations is restored from the original. Any failure is a [`ConversionError`]
//!   whose text is kube-apiserver's (`conversion webhook for example.com/v1, Kind=Foo
//!   failed: ...`).
//! - The webhook is reached over HTTP or HTTPS at `clientConfig.url` (HTTPS trusts
//!   `caBundle` when given, else the system roots), with a 30 s timeout as
//!   kube-apiserver's default. A `clientConfig.service` reference names a Service of a
//!   cluster, which an in-memory server cannot reach: conversion through it fails with an
//!   error saying so (use `url`, for instance a webhook served by the test itself).
//! - Not done: the label and annotation syntax checks kube-apiserver makes on converted
//!   metadata, and the conversion webhook metrics.

use std::time::Duration;

use serde_json::{json, Map, Value};

/// How a CRD converts objects between its versions (`spec.conversion`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Conversion {
    /// Strategy `None`: only `apiVersion` changes.
    #[default]
    None,
    /// Strategy `Webhook`: a `ConversionReview` is posted to the webhook.
    Webhook(ConversionWebhook),
    /// A built-in kind served at several versions, converted by the server itself.
    Builtin(super::builtin_conversion::BuiltinConversion),
}

/// Where and how a conversion webhook is called (`spec.conversion.webhook`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConversionWebhook {
    /// `clientConfig.url`, empty when the webhook is a Service reference.
    pub url: String,
    /// `clientConfig.service` as `namespace/name:port/path`, empty when `url` is set.
    pub service: String,
    /// `clientConfig.caBundle`: PEM certificates trusted for an HTTPS `url`.
    pub ca_bundle: Vec<u8>,
    /// `conversionReviewVersions`, in the CRD's order of preference.
    pub review_versions: Vec<String>,
}

impl Conversion {
    /// The conversion a CRD's `spec` asks for (`None` when `spec.conversion` is absent).
    ///
    /// ```
    /// use kubegen_apiserver::Conversion;
    /// use serde_json::json;
    ///
    /// let spec = json!({"conversion": {"strategy": "Webhook", "webhook": {
    ///     "clientConfig": {"url": "http://127.0.0.1:9443/convert"},
    ///     "conversionReviewVersions": ["v1"]}}});
    /// let Conversion::Webhook(hook) = Conversion::from_crd_spec(&spec) else { panic!() };
    /// assert_eq!(hook.url, "http://127.0.0.1:9443/convert");
    /// assert_eq!(Conversion::from_crd_spec(&json!({})), Conversion::None);
    /// ```
    pub fn from_crd_spec(spec: &Value) -> Conversion {
        let Some(c) = spec.get("conversion") else {
            return Conversion::None;
        };
        if c.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return Conversion::None;
        }
        let hook = c.get("webhook");
        let cc = hook.and_then(|h| h.get("clientConfig"));
        let s = |v: Option<&Value>, k: &str| {
            v.and_then(|v| v.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let service = cc.and_then(|c| c.get("service")).map(|svc| {
            let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
            format!(
                "{}/{}:{port}{}",
                s(Some(svc), "namespace"),
                s(Some(svc), "name"),
                s(Some(svc), "path")
            )
        });
        let ca_bundle = cc
            .and_then(|c| c.get("caBundle"))
            .and_then(Value::as_str)
            .and_then(|b| crate::webhook_client::decode_base64(b.trim()))
            .unwrap_or_default();
        let review_versions = hook
            .and_then(|h| h.get("conversionReviewVersions"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Conversion::Webhook(ConversionWebhook {
            url: s(cc, "url"),
            service: service.unwrap_or_default(),
            ca_bundle,
            review_versions,
        })
    }
}

/// A conversion that failed, with kube-apiserver's message; the client sees it as an
/// HTTP 500 `Status` with that message and no reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConversionError(pub String);

/// What is being converted, for error messages: the source objects' group, version and
/// kind as Go's `GroupVersionKind.String()` writes them.
fn gvk_of(obj: &Map<String, Value>) -> String {
    let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let av = if av.contains('/') {
        av.to_owned()
    } else {
        format!("/{av}")
    };
    format!("{av}, Kind={kind}")
}

/// Converts `objects` to `desired` (`group/version`) in place. Objects already at
/// `desired` are not sent; `list` selects the error texts of a list conversion.
pub(crate) async fn convert(
    conversion: &Conversion,
    desired: &str,
    objects: &mut [Map<String, Value>],
    list: bool,
) -> Result<(), ConversionError> {
    let todo: Vec<usize> = (0..objects.len())
        .filter(|i| objects[*i].get("apiVersion").and_then(Value::as_str) != Some(desired))
        .collect();
    let Some(first) = todo.first() else {
        return Ok(());
    };
    let hook = match conversion {
        Conversion::None => {
            for i in todo {
                objects[i].insert("apiVersion".into(), Value::String(desired.to_owned()));
            }
            return Ok(());
        }
        Conversion::Builtin(b) => {
            for i in todo {
                b.convert(&mut objects[i], desired)
                    .map_err(ConversionError)?;
            }
            return Ok(());
        }
        Conversion::Webhook(h) => h,
    };
    let what = gvk_of(&objects[*first]);
    let failed =
        |cause: String| ConversionError(format!("conversion webhook for {what} failed: {cause}"));
    let review = hook
        .review_versions
        .iter()
        .find(|v| *v == "v1" || *v == "v1beta1")
        .ok_or_else(|| ConversionError("no supported conversion review versions".into()))?;
    let uid = super::meta::uid();
    let request = json!({
        "apiVersion": format!("apiextensions.k8s.io/{review}"),
        "kind": "ConversionReview",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired,
            "objects": todo.iter().map(|i| Value::Object(objects[*i].clone())).collect::<Vec<_>>(),
        },
    });
    let reply = post(hook, &request).await.map_err(failed)?;
    let converted = converted_objects(review == "v1", &uid, reply).map_err(failed)?;
    if converted.len() != todo.len() {
        return Err(ConversionError(format!(
            "conversion webhook for {what} returned {} objects, expected {}",
            converted.len(),
            todo.len()
        )));
    }
    let (invalid, invalid_meta) = if list {
        (
            "invalid converted object at index",
            "invalid metadata in object at index",
        )
    } else {
        ("invalid object", "invalid metadata")
    };
    for (n, (i, out)) in todo.iter().zip(converted).enumerate() {
        let at = if list { format!(" {n}") } else { String::new() };
        let bad = |e: String| {
            ConversionError(format!(
                "conversion webhook for {what} returned {invalid}{at}: {e}"
            ))
        };
        let Value::Object(mut out) = out else {
            return Err(bad("not an object".into()));
        };
        let original = &objects[*i];
        let got = out.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if got != desired {
            return Err(bad(format!(
                "invalid groupVersion (expected {desired}, received {got})"
            )));
        }
        check_identity(original, &out).map_err(bad)?;
        restore_metadata(original, &mut out).map_err(|e| {
            ConversionError(format!(
                "conversion webhook for {what} returned {invalid_meta}{at}: {e}"
            ))
        })?;
        objects[*i] = out;
    }
    Ok(())
}

/// The converted objects of a webhook's reply, after kube-apiserver's checks.
fn converted_objects(v1: bool, uid: &str, reply: Value) -> Result<Vec<Value>, String> {
    if v1 {
        let av = reply
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = reply.get("kind").and_then(Value::as_str).unwrap_or("");
        if av != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            let got = gvk_of(reply.as_object().unwrap_or(&Map::new()));
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}"
            ));
        }
    }
    let Some(resp) = reply.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".into());
    };
    if v1 {
        let got = resp.get("uid").and_then(Value::as_str).unwrap_or("");
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let result = resp.get("result");
    let status = result
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = result
            .and_then(|r| r.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !message.is_empty() {
            return Err(message.to_owned());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(resp
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

fn meta_field<'a>(o: &'a Map<String, Value>, k: &str) -> &'a str {
    o.get("metadata")
        .and_then(|m| m.get(k))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A converted object must name the same object as its original.
fn check_identity(original: &Map<String, Value>, out: &Map<String, Value>) -> Result<(), String> {
    let kind = |o: &Map<String, Value>| {
        o.get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (a, b) = (kind(original), kind(out));
    if a != b {
        return Err(format!("invalid kind (expected {a}, received {b})"));
    }
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (a, b) = (meta_field(original, field), meta_field(out, field));
        if a != b {
            return Err(format!("must have the same {what}: {a} != {b}"));
        }
    }
    Ok(())
}

/// The original's metadata, with the converted object's labels and annotations.
fn restore_metadata(
    original: &Map<String, Value>,
    out: &mut Map<String, Value>,
) -> Result<(), String> {
    let Some(Value::Object(converted)) = out.get("metadata") else {
        return Err("missing metadata in converted object".into());
    };
    let mut meta = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        match converted.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(m)) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string, but is {} in converted object",
                        go_type(v)
                    ));
                }
                meta.insert(field.into(), Value::Object(m.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ))
            }
        }
    }
    out.insert("metadata".into(), Value::Object(meta));
    Ok(())
}

/// The Go type a JSON value decodes to, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Posts a review to the webhook and returns the decoded reply.
async fn post(hook: &ConversionWebhook, review: &Value) -> Result<Value, String> {
    let target = crate::webhook_client::Target {
        url: &hook.url,
        service: &hook.service,
        ca_bundle: &hook.ca_bundle,
    };
    crate::webhook_client::post(&target, TIMEOUT, review).await
}

/// kube-apiserver's default timeout for a conversion webhook call.
const TIMEOUT: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(av: &str, name: &str) -> Map<String, Value> {
        match json!({"apiVersion": av, "kind": "Foo", "metadata": {"name": name, "namespace": "default", "uid": "u1", "resourceVersion": "5", "labels": {"a": "1"}}})
        {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[tokio::test]
    async fn strategy_none_rewrites_only_api_version() {
        // SEMANTICS 13.18
        let mut objs = vec![obj("example.com/v1", "a"), obj("example.com/v2", "b")];
        convert(&Conversion::None, "example.com/v2", &mut objs, true)
            .await
            .unwrap();
        assert_eq!(objs[0], obj("example.com/v2", "a"));
        assert_eq!(objs[1], obj("example.com/v2", "b"));
    }

    #[test]
    fn replies_are_checked_as_kube_apiserver_checks_them() {
        // SEMANTICS 13.20
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "x", "result": {"status": "Success"}, "convertedObjects": [1]}});
        assert_eq!(
            converted_objects(true, "x", ok.clone()).unwrap(),
            vec![json!(1)]
        );
        assert_eq!(
            converted_objects(true, "y", ok.clone()).unwrap_err(),
            r#"expected response.uid="y", got "x""#
        );
        // v1beta1 reviews are not checked for uid or kind.
        assert!(converted_objects(false, "y", ok).is_ok());
        let beta = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "response": {}});
        assert_eq!(
            converted_objects(true, "x", beta).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"
        );
        let none = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"});
        assert_eq!(
            converted_objects(true, "x", none).unwrap_err(),
            "no response provided"
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "x", "result": {"status": "Failure"}}});
        assert_eq!(
            converted_objects(true, "x", failed).unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
    }

    #[test]
    fn metadata_is_restored_except_labels_and_annotations() {
        // SEMANTICS 13.20
        let original = obj("example.com/v1", "a");
        let mut out = obj("example.com/v2", "a");
        out["metadata"]["labels"] = json!({"b": "2"});
        out["metadata"]["resourceVersion"] = json!("99");
        out["metadata"]["annotations"] = json!({"n": 1});
        assert_eq!(
            restore_metadata(&original, &mut out.clone()).unwrap_err(),
            "metadata.annotations[n] must be a string, but is int64 in converted object"
        );
        out["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("annotations");
        restore_metadata(&original, &mut out).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(out["metadata"]["resourceVersion"], "5");
        let mut renamed = obj("example.com/v2", "b");
        assert_eq!(
            check_identity(&original, &renamed).unwrap_err(),
            "must have the same name: a != b"
        );
        renamed["kind"] = json!("Bar");
        assert_eq!(
            check_identity(&original, &renamed).unwrap_err(),
            "invalid kind (expected Foo, received Bar)"
        );
    }
}
