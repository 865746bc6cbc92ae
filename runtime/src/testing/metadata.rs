//! Metadata-only responses: `PartialObjectMetadata` and `PartialObjectMetadataList`, as
//! kube-apiserver serves them to client-go's metadata client.
//!
//! Contract:
//! - A request whose `Accept` header lists
//!   `application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (or the `List` form)
//!   gets its successful answer as metadata only: an object becomes
//!   `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{..}}`
//!   with the object's whole `metadata`; a list becomes a `PartialObjectMetadataList`
//!   with the list's own metadata (resourceVersion, continue, remainingItemCount) and
//!   such items; every watch event (BOOKMARK included) carries a `PartialObjectMetadata`,
//!   ERROR events keep their `Status`.
//! - The entries of `Accept` are tried in order: `as=PartialObjectMetadata` fits an object
//!   or a watch, `as=PartialObjectMetadataList` fits a list. When the first metadata
//!   entry does not fit the answer and no plain `application/json` (or `*/*`) entry
//!   follows it, the answer is 406 NotAcceptable, as kube-apiserver says it ("you
//!   requested PartialObjectMetadataList, but the requested object is not a list").
//! - Errors and `Status` answers (a deletion's) pass unchanged; so does every answer
//!   to a request that asks for no metadata form (other `as=` forms, such as `Table`,
//!   are not implemented and get the full object, as before).
//! - Objects are never re-serialized: the stored `metadata` bytes are copied as they are,
//!   and lists and watches stay streamed.
//!
//! Only `meta.k8s.io/v1` is served (not the deprecated `v1beta1`), and only as JSON.

use bytes::Bytes;
use http::{header, HeaderMap, Response, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::errors::{reason, StatusError};

use super::body::{Body, Shape};
use super::http::error_response;
use super::store::Stored;

/// The head every converted object starts with.
const OBJECT_HEAD: &[u8] =
    b"{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":";
/// The head of a converted list, before its metadata.
const LIST_HEAD: &[u8] =
    b"{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":";

/// A metadata form an `Accept` entry asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `as=PartialObjectMetadata`: one object, or the objects of watch events.
    Object,
    /// `as=PartialObjectMetadataList`: a list.
    List,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Object => "PartialObjectMetadata",
            Form::List => "PartialObjectMetadataList",
        }
    }
}

/// What a request's `Accept` header asks of its answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// The first metadata form asked for, if any.
    form: Option<Form>,
    /// Whether a plain JSON answer is acceptable after it.
    fallback: bool,
}

/// Reads the `Accept` header(s) of a request.
pub(crate) fn wanted(headers: &HeaderMap) -> Wanted {
    let mut w = Wanted::default();
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for entry in value.split(',') {
            let mut parts = entry.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            if !matches!(media, "application/json" | "application/*" | "*/*") {
                continue;
            }
            let (mut as_, mut g, mut v) = (None, None, None);
            for p in parts {
                match p.split_once('=') {
                    Some(("as", x)) => as_ = Some(x),
                    Some(("g", x)) => g = Some(x),
                    Some(("v", x)) => v = Some(x),
                    _ => {}
                }
            }
            let form = match (as_, g, v) {
                // Plain JSON before any metadata form is what the server answers.
                (None, _, _) if w.form.is_none() => return Wanted::default(),
                (None, _, _) => {
                    w.fallback = true;
                    continue;
                }
                (Some("PartialObjectMetadata"), Some("meta.k8s.io"), Some("v1")) => Form::Object,
                (Some("PartialObjectMetadataList"), Some("meta.k8s.io"), Some("v1")) => Form::List,
                _ => continue,
            };
            if w.form.is_none() {
                w.form = Some(form);
            }
        }
    }
    w
}

/// The answer to a request that asked for `wanted`: converted to metadata only when
/// asked for and successful (see the module docs).
pub(crate) fn answer(wanted: &Wanted, res: Response<Body>) -> Response<Body> {
    let Some(form) = wanted.form else { return res };
    if !res.status().is_success() {
        return res;
    }
    let fits = match res.body().shape() {
        Shape::Object => form == Form::Object,
        Shape::Watch => form == Form::Object,
        Shape::List => form == Form::List,
    };
    if !fits {
        if wanted.fallback {
            return res;
        }
        let what = match res.body().shape() {
            Shape::List => "is a list",
            _ => "is not a list",
        };
        return error_response(&StatusError::new(
            StatusCode::NOT_ACCEPTABLE.as_u16(),
            reason::NOT_ACCEPTABLE,
            format!(
                "you requested {}, but the requested object {what}",
                form.name()
            ),
        ));
    }
    let (parts, body) = res.into_parts();
    match body.into_partial() {
        Ok(body) => Response::from_parts(parts, body),
        Err(e) => error_response(&e),
    }
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(default)]
    kind: Option<&'a str>,
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
}

fn push_partial(out: &mut Vec<u8>, metadata: Option<&RawValue>) {
    out.extend_from_slice(OBJECT_HEAD);
    out.extend_from_slice(metadata.map_or("{}", RawValue::get).as_bytes());
    out.push(b'}');
}

/// One object's JSON as `PartialObjectMetadata`; a `Status` stays as it is.
pub(crate) fn partial_object(bytes: Bytes) -> Result<Bytes, StatusError> {
    let m: Meta<'_> = serde_json::from_slice(&bytes).map_err(StatusError::internal)?;
    if m.kind == Some("Status") {
        return Ok(bytes);
    }
    let mut out = Vec::with_capacity(OBJECT_HEAD.len() + 1024);
    push_partial(&mut out, m.metadata);
    Ok(out.into())
}

/// A stored object as a `PartialObjectMetadata` list item.
pub(crate) fn write_item(obj: &Stored, out: &mut Vec<u8>) {
    // Stored bytes were written by the server itself and always decode; a failure
    // would leave the item's metadata empty rather than break the stream.
    let m = serde_json::from_slice::<Meta<'_>>(&obj.bytes).ok();
    push_partial(out, m.and_then(|m| m.metadata));
}

/// The head of a list body (`{"kind":..,"apiVersion":..,"metadata":{..},"items":[`) as
/// the head of a `PartialObjectMetadataList`.
pub(crate) fn list_head(head: &[u8]) -> Result<Bytes, StatusError> {
    let mut whole = head.to_vec();
    whole.extend_from_slice(b"]}");
    let m: Meta<'_> = serde_json::from_slice(&whole).map_err(StatusError::internal)?;
    let mut out = LIST_HEAD.to_vec();
    out.extend_from_slice(m.metadata.map_or("{}", RawValue::get).as_bytes());
    out.extend_from_slice(b",\"items\":[");
    Ok(out.into())
}

#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type", borrow)]
    ty: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// Whole watch frames (each ending in a newline, as the server writes them) with their
/// objects as `PartialObjectMetadata`; ERROR frames and anything unreadable pass as
/// they are.
pub(crate) fn watch_frames(chunk: Bytes) -> Bytes {
    let mut out = Vec::with_capacity(chunk.len() / 4 + 256);
    for line in chunk.split_inclusive(|b| *b == b'\n') {
        let frame = match serde_json::from_slice::<Frame<'_>>(line) {
            Ok(f) if f.ty != "ERROR" => f,
            _ => {
                out.extend_from_slice(line);
                continue;
            }
        };
        let m = serde_json::from_str::<Meta<'_>>(frame.object.get()).ok();
        out.extend_from_slice(b"{\"type\":");
        // The type came out of JSON as a plain string; writing it back cannot fail.
        let _ = serde_json::to_writer(&mut out, frame.ty);
        out.extend_from_slice(b",\"object\":");
        push_partial(&mut out, m.and_then(|m| m.metadata));
        out.extend_from_slice(b"}\n");
    }
    out.into()
}

#[cfg(test)]
mod tests;
