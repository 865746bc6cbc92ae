//! Request bodies: size limit, media types, decoding into a built-in kind's schema, and
//! `fieldValidation` (SEMANTICS 13, "Request bodies and media types").
//!
//! Contract:
//! - A create, update, patch or delete body over 3 MiB (3145728 bytes) gets 413
//!   RequestEntityTooLarge; reading stops there.
//! - Object bodies (POST, PUT) and DELETE bodies (DeleteOptions) may be JSON (also when no Content-Type is sent), YAML, or
//!   for built-in kinds protobuf (the kinds [`super::protobuf`] decodes); any other media
//!   type gets 415 UnsupportedMediaType naming what is accepted, never 400.
//! - A body that does not decode into its built-in kind's type (a ConfigMap whose `data`
//!   holds a number) gets 400 BadRequest `<Kind> in version "<v>" cannot be handled as a
//!   <Kind>: <why>`, as kube-apiserver's decoder answers. Custom resources are checked
//!   against their schema elsewhere (422).
//! - Unknown fields (fields a built-in type does not have, or a custom resource's schema
//!   would prune) follow `fieldValidation`: `Strict` -> 400 `... strict decoding error:
//!   unknown field "<path>"`, `Warn` (the default without the parameter, as on
//!   kube-apiserver since 1.27) -> one `Warning` header per field, `Ignore` -> nothing.
//!   Null values count as known (they decode to "absent").

use bytes::Bytes;
use http::{header, Request};
use serde_json::{Map, Value};

use crate::errors::StatusError;

use super::registry::Registration;

/// The largest request body accepted, as kube-apiserver's default `--max-request-bytes`
/// for API bodies.
pub(crate) const BODY_LIMIT: usize = 3 * 1024 * 1024;

/// 413 for a body over [`BODY_LIMIT`].
pub(crate) fn check_size(body: &Bytes) -> Result<(), StatusError> {
    if body.len() > BODY_LIMIT {
        return Err(too_large());
    }
    Ok(())
}

/// Reads a request body, stopping at [`BODY_LIMIT`]: the answer to a longer one (413)
/// or to a body that cannot be read (400) is the error.
pub(crate) async fn read_body<B>(body: B) -> Result<Bytes, StatusError>
where
    B: http_body::Body,
    B::Error: std::fmt::Display,
{
    use bytes::Buf;
    use http_body_util::BodyExt;

    let mut body = std::pin::pin!(body);
    let mut out = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| StatusError::bad_request(format!("reading the body: {e}")))?;
        if let Ok(mut data) = frame.into_data() {
            if out.len() + data.remaining() > BODY_LIMIT {
                return Err(too_large());
            }
            while data.has_remaining() {
                let chunk = data.chunk();
                out.extend_from_slice(chunk);
                let n = chunk.len();
                data.advance(n);
            }
        }
    }
    Ok(out.freeze())
}

fn too_large() -> StatusError {
    StatusError::new(
        413,
        "RequestEntityTooLarge",
        format!("Request entity too large: limit is {BODY_LIMIT}"),
    )
}

/// The media type of the request body, lowercased, without parameters.
pub(crate) fn content_type<B>(req: &Request<B>) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn unsupported(reg: &Registration, why: Option<&str>) -> StatusError {
    let accepted = if reg.custom {
        "application/json, application/yaml"
    } else {
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    };
    let mut msg =
        format!("the body of the request was in an unknown format - accepted media types include: {accepted}");
    if let Some(w) = why {
        msg.push_str(&format!(" ({w})"));
    }
    StatusError::unsupported_media_type(msg)
}

/// Decodes an object body (POST, PUT) by its media type.
pub(crate) fn decode_object(
    req: &Request<Bytes>,
    reg: &Registration,
) -> Result<Map<String, Value>, StatusError> {
    let body = req.body();
    check_size(body)?;
    let v: Value = match content_type(req).as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice(body).map_err(|e| {
            StatusError::bad_request(format!("the body of the request was not valid JSON: {e}"))
        })?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => serde_yaml::from_slice(body)
            .map_err(|e| {
                StatusError::bad_request(format!("the body of the request was not valid YAML: {e}"))
            })?,
        super::protobuf::MEDIA_TYPE if !reg.custom => {
            return super::protobuf::decode(body).map_err(|e| unsupported(reg, Some(&e.0)))
        }
        _ => return Err(unsupported(reg, None)),
    };
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(StatusError::bad_request("the body must be an object")),
    }
}

/// A create or update body whose `kind` or `apiVersion` names another type than the
/// endpoint's is a 400, as kube-apiserver's decoder answers (a Secret POSTed to the
/// configmaps endpoint is not stored as a ConfigMap). Absent ones are taken from the
/// endpoint; a custom resource may name any version of its group (the versions share a
/// storage).
pub(crate) fn check_type(obj: &Map<String, Value>, reg: &Registration) -> Result<(), StatusError> {
    let field = |k: &str| obj.get(k).and_then(Value::as_str).filter(|x| !x.is_empty());
    let kind = field("kind").unwrap_or(&reg.kind);
    if let Some(av) = field("apiVersion") {
        let group = av.rsplit_once('/').map_or("", |(g, _)| g);
        let other_version = (reg.custom || !reg.storage_version.is_empty()) && group == reg.group;
        if av != reg.api_version() && !other_version {
            return Err(StatusError::bad_request(format!(
                "{kind} in version \"{}\" cannot be handled as a {}: no kind \"{kind}\" is registered for version \"{av}\" in scheme \"pkg/runtime/scheme.go:111\"",
                reg.version, reg.kind
            )));
        }
    }
    if kind != reg.kind {
        let internal = if reg.group.is_empty() {
            "core"
        } else {
            &reg.group
        };
        let group = internal.split('.').next().unwrap_or(internal);
        return Err(StatusError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {k}: converting ({v}.{kind}) to ({group}.{k}): unknown conversion",
            v = reg.version,
            k = reg.kind
        )));
    }
    Ok(())
}

/// The fields a JSON body names twice (`data.a`), which `fieldValidation=Strict` refuses
/// (400 "strict decoding error: duplicate field"), as kube-apiserver's strict decoder does.
pub(crate) fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let found = std::cell::RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let seed = Dups {
        path: String::new(),
        found: &found,
    };
    // A body that is not JSON is the decoder's error to report, not this one's.
    let _ = serde::de::DeserializeSeed::deserialize(seed, &mut de);
    found.into_inner()
}

struct Dups<'a> {
    path: String,
    found: &'a std::cell::RefCell<Vec<String>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Dups<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Dups<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                k.clone()
            } else {
                format!("{}.{k}", self.path)
            };
            if !seen.insert(k) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Dups {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(Dups {
                path: self.path.clone(),
                found: self.found,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// `fieldValidation=Strict`'s refusal of a JSON body that names a field twice.
pub(crate) fn check_duplicates(
    req: &Request<Bytes>,
    reg: &Registration,
    policy: FieldValidation,
) -> Result<(), StatusError> {
    let json = matches!(content_type(req).as_str(), "" | "application/json" | "*/*");
    if policy != FieldValidation::Strict || !json {
        return Ok(());
    }
    let dups = duplicate_fields(req.body());
    if dups.is_empty() {
        return Ok(());
    }
    let list = dups
        .iter()
        .map(|p| format!("duplicate field {p:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(StatusError::bad_request(format!(
        "{kind} in version {v:?} cannot be handled as a {kind}: strict decoding error: {list}",
        kind = reg.kind,
        v = reg.version
    )))
}

/// A DELETE body (DeleteOptions) as JSON, by its media type; `None` when empty.
pub(crate) fn decode_delete_options(req: &Request<Bytes>) -> Result<Option<Value>, StatusError> {
    let body = req.body();
    if body.is_empty() {
        return Ok(None);
    }
    let v = match content_type(req).as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice(body)
            .map_err(|e| StatusError::bad_request(format!("the body of the request was not valid JSON: {e}")))?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => serde_yaml::from_slice(body)
            .map_err(|e| StatusError::bad_request(format!("the body of the request was not valid YAML: {e}")))?,
        super::protobuf::MEDIA_TYPE => Value::Object(super::protobuf::decode(body).map_err(|e| {
            StatusError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf ({})",
                e.0
            ))
        })?),
        _ => {
            return Err(StatusError::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            ))
        }
    };
    Ok(Some(v))
}

/// `fieldValidation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    pub(crate) fn parse(v: &str) -> Result<Self, StatusError> {
        match v {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(StatusError::bad_request(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Warn\", \"Strict\""
            ))),
        }
    }
}

/// Checks an object body against its kind: decoding (built-ins) and unknown fields.
/// Returns the warnings to send (`Warn`); errors for `Strict` or an undecodable body.
/// `decode_errors`: whether a body that does not decode is an error (not for patches,
/// whose bodies are partial). A built-in kind's unknown fields are then dropped from
/// `obj`, as kube-apiserver's typed decoder drops them (custom resources are pruned by
/// their schema on admission).
pub(crate) fn check_fields(
    reg: &Registration,
    obj: &mut Map<String, Value>,
    policy: FieldValidation,
    decode_errors: bool,
) -> Result<Vec<String>, StatusError> {
    let mut input = Value::Object(obj.clone());
    input["apiVersion"] = Value::String(reg.api_version());
    input["kind"] = Value::String(reg.kind.clone());
    let known = if reg.custom {
        match &reg.schema {
            Some(schema) => {
                let mut v = input.clone();
                super::crd::prune_value(&mut v, schema);
                Some(v)
            }
            None => None,
        }
    } else {
        match super::builtin_types::round_trip(&reg.api_version(), &reg.kind, &input) {
            None => None,
            Some(Ok(v)) => Some(v),
            Some(Err(e)) if decode_errors => {
                return Err(StatusError::bad_request(format!(
                    "{kind} in version {v:?} cannot be handled as a {kind}: {e}",
                    kind = reg.kind,
                    v = reg.version
                )))
            }
            Some(Err(_)) => None,
        }
    };
    let Some(known) = known else {
        return Ok(Vec::new());
    };
    let mut unknown = Vec::new();
    missing(&input, &known, "", &mut unknown);
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    if !reg.custom && policy != FieldValidation::Strict {
        let mut v = Value::Object(std::mem::take(obj));
        drop_unknown(&mut v, &known);
        if let Value::Object(m) = v {
            *obj = m;
        }
    }
    if policy == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    match policy {
        FieldValidation::Strict => {
            let list = unknown
                .iter()
                .map(|p| format!("unknown field {p:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            Err(StatusError::bad_request(format!(
                "{kind} in version {v:?} cannot be handled as a {kind}: strict decoding error: {list}",
                kind = reg.kind,
                v = reg.version
            )))
        }
        _ => Ok(unknown
            .iter()
            .map(|p| format!("unknown field {p:?}"))
            .collect()),
    }
}

/// Removes what `missing` reports: keys with a non-null value that `known` lacks.
fn drop_unknown(v: &mut Value, known: &Value) {
    match (v, known) {
        (Value::Object(a), Value::Object(b)) => {
            a.retain(|k, x| x.is_null() || b.contains_key(k));
            for (k, x) in a.iter_mut() {
                if let Some(y) = b.get(k) {
                    drop_unknown(x, y);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (x, y) in a.iter_mut().zip(b) {
                drop_unknown(x, y);
            }
        }
        _ => {}
    }
}

/// Paths present in `input` (with a non-null value) but absent from `known`.
fn missing(input: &Value, known: &Value, path: &str, out: &mut Vec<String>) {
    match (input, known) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match b.get(k) {
                    Some(x) => missing(v, x, &p, out),
                    None if v.is_null() => {}
                    None => out.push(p),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                missing(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The `Warning` header value for a message (RFC 7234 style, code 299, as
/// kube-apiserver writes it).
pub(crate) fn warning_header(message: &str) -> Option<header::HeaderValue> {
    let escaped = message.replace('\\', "\\\\").replace('"', "\\\"");
    header::HeaderValue::from_str(&format!("299 - \"{escaped}\"")).ok()
}
