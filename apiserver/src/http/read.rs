//! The read verbs: get and list (pages, continue tokens, resourceVersion semantics of
//! SEMANTICS 9), answered as JSON, Table or PartialObjectMetadata.

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use serde_json::{json, Map, Value};

use crate::body::Body;
use crate::errors::StatusError;
use crate::query::{decode_continue, encode_continue, parse_rv, validate, Query};
use crate::registry::Registration;
use crate::response::{json_response, object_response};
use crate::select::Filter;
use crate::server::Inner;
use crate::store::Stored;
use crate::table::{self, Output};

/// A custom resource as reads show it: through the current schema (pruned and
/// defaulted), since a CRD change does not rewrite stored objects.
pub(crate) fn read_view(reg: &Registration, mut obj: Value) -> Value {
    if let (true, Some(schema)) = (reg.custom, &reg.schema) {
        crate::crd::read_view(&mut obj, schema);
    }
    obj
}

/// The response form the Accept header asks for (protobuf only for built-in kinds, on a
/// server built with `protobuf_responses`).
pub(crate) fn output(
    inner: &Inner,
    req: &Request<Bytes>,
    reg: &Registration,
) -> Result<Output, StatusError> {
    table::negotiate_for(
        req.headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
        inner.protobuf_responses && !reg.custom,
    )
}

/// A protobuf response.
pub(crate) fn protobuf_response(body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Body::full(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(crate::protobuf::MEDIA_TYPE),
    );
    r
}

/// A list's objects in the form `out` asks for (not plain JSON).
fn converted_list(
    reg: &Registration,
    items: &[Arc<Stored>],
    meta: Map<String, Value>,
    q: &Query,
    out: Output,
) -> Result<Response<Body>, StatusError> {
    if out == Output::PartialObjectMetadataList {
        return Ok(partial_list(items, &meta));
    }
    let objects = items
        .iter()
        .map(|s| s.to_value().map(|o| read_view(reg, Value::Object(o))))
        .collect::<Result<Vec<_>, _>>()?;
    if out == Output::Protobuf {
        let body = crate::protobuf::encode_list(
            &reg.api_version(),
            &reg.list_kind,
            &meta,
            objects.iter().filter_map(Value::as_object),
        )
        .map_err(|e| StatusError::internal(format!("encoding the list as protobuf: {e}")))?;
        return Ok(protobuf_response(body));
    }
    let v = match out {
        Output::Table => {
            let include = table::include(q.include_object.as_deref())?;
            table::table(reg, &objects, Value::Object(meta), include)
        }
        Output::PartialObjectMetadataList => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": meta,
            "items": objects.iter().map(table::partial).collect::<Vec<_>>(),
        }),
        Output::PartialObjectMetadata => {
            return Err(StatusError::new(
                406,
                "NotAcceptable",
                format!(
                    "you requested PartialObjectMetadata, but the requested object is a list ({})",
                    reg.list_kind
                ),
            ))
        }
        Output::Json | Output::Protobuf => {
            let items: Vec<Value> = objects
                .into_iter()
                .map(|mut o| {
                    if !reg.list_items_type_meta {
                        if let Some(m) = o.as_object_mut() {
                            m.remove("kind");
                            m.remove("apiVersion");
                        }
                    }
                    o
                })
                .collect();
            json!({"kind": reg.list_kind, "apiVersion": reg.api_version(), "metadata": meta, "items": items})
        }
    };
    Ok(json_response(StatusCode::OK, v.to_string().into_bytes()))
}

/// A PartialObjectMetadataList written from the stored bytes: each object's `metadata`
/// is copied as it is stored, the rest of the object skipped unparsed (metadata
/// informers list whole collections, so building every object as a JSON value first
/// cost them most of the answer's time). Reads never change metadata, so no view is
/// applied.
fn partial_list(items: &[Arc<Stored>], meta: &Map<String, Value>) -> Response<Body> {
    #[derive(serde::Deserialize)]
    struct MetadataOnly<'a> {
        #[serde(borrow)]
        metadata: Option<&'a serde_json::value::RawValue>,
    }
    let mut out = Vec::with_capacity(64 + items.len() * 512);
    out.extend_from_slice(
        br#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":"#,
    );
    out.extend_from_slice(Value::Object(meta.clone()).to_string().as_bytes());
    out.extend_from_slice(br#","items":["#);
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(
            br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#,
        );
        match serde_json::from_slice::<MetadataOnly<'_>>(&s.bytes) {
            Ok(MetadataOnly { metadata: Some(m) }) => out.extend_from_slice(m.get().as_bytes()),
            _ => out.extend_from_slice(b"{}"),
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    json_response(StatusCode::OK, out)
}

pub(crate) fn get(
    inner: &Inner,
    idx: usize,
    reg: &Registration,
    ns: &str,
    name: &str,
    q: &Query,
    out: Output,
) -> Result<Response<Body>, StatusError> {
    let key = crate::store::storage_key(ns, name);
    let st = inner.state.read();
    let coll = &st.collections[idx];
    match coll.objects.get(&key) {
        Some(s) if out == Output::Json && !coll.schema_changed => {
            Ok(object_response(StatusCode::OK, s))
        }
        Some(s) if out == Output::Json => {
            let obj = read_view(reg, Value::Object(s.to_value()?));
            Ok(json_response(StatusCode::OK, obj.to_string().into_bytes()))
        }
        Some(s) if out == Output::Protobuf => {
            let obj = s.to_value()?;
            let body = crate::protobuf::encode_object(&obj).map_err(|e| {
                StatusError::internal(format!("encoding the object as protobuf: {e}"))
            })?;
            Ok(protobuf_response(body))
        }
        Some(s) => {
            let obj = read_view(reg, Value::Object(s.to_value()?));
            let v = match out {
                Output::PartialObjectMetadata => table::partial(&obj),
                Output::PartialObjectMetadataList => {
                    return Err(StatusError::new(
                        406,
                        "NotAcceptable",
                        format!(
                            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                            reg.kind
                        ),
                    ))
                }
                _ => {
                    let include = table::include(q.include_object.as_deref())?;
                    let meta = json!({"resourceVersion": s.rv.to_string()});
                    table::table(reg, &[obj], meta, include)
                }
            };
            Ok(json_response(StatusCode::OK, v.to_string().into_bytes()))
        }
        None => Err(StatusError::not_found(
            crate::errors::GroupResource {
                group: &reg.group,
                resource: &reg.plural,
            },
            name,
        )),
    }
}

/// Which state a list reads.
#[derive(Debug, Clone, Copy)]
enum At {
    /// The current state.
    Current,
    /// The state at exactly this version.
    Exact(u64),
}

pub(crate) async fn list(
    inner: &Inner,
    idx: usize,
    ns: Option<&str>,
    q: &Query,
    out: Output,
) -> Result<Response<Body>, StatusError> {
    validate(q)?;
    let reg = inner.registration(idx);
    let filter = Filter::parse(
        &reg,
        q.label_selector.as_deref(),
        q.field_selector.as_deref(),
    )?;
    let (at, start_after, from_token) = match &q.continue_ {
        Some(tok) => {
            if q.resource_version.as_deref().is_some_and(|v| v != "0") {
                return Err(StatusError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let (rv, start) = decode_continue(tok)?;
            let at = if rv == 0 { At::Current } else { At::Exact(rv) };
            (at, Some(start), true)
        }
        None => {
            let m = q.resource_version_match.as_deref();
            let at = match q.resource_version.as_deref() {
                None | Some("0") => At::Current,
                Some(v) => {
                    let x = parse_rv(v)?;
                    let exact = m == Some("Exact") || (m.is_none() && q.limit.is_some());
                    if x > inner.state.read().rv && !inner.wait_for(x).await {
                        let cur = inner.state.read().rv;
                        return Err(StatusError::resource_version_too_large(format!(
                            "Too large resource version: {x}, current: {cur}"
                        )));
                    }
                    if exact {
                        At::Exact(x)
                    } else {
                        At::Current
                    }
                }
            };
            (at, None, false)
        }
    };
    let limit = inner.list_limit.page(q.limit.map(|l| l as usize));
    let count_remaining = filter.is_everything();
    let st = inner.state.read();
    let coll = &st.collections[idx];
    let (snapshot_at, list_rv) = match at {
        At::Current => (None, st.rv),
        At::Exact(x) if x >= st.rv => (None, x),
        At::Exact(x) => {
            if x < coll.oldest {
                if from_token {
                    let mut e = StatusError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    )
                    .into_status();
                    e.metadata.continue_ = Some(encode_continue(
                        0,
                        start_after.as_deref().unwrap_or_default(),
                    ));
                    return Err(e.into());
                }
                return Err(StatusError::expired(
                    "The resourceVersion for the provided list is too old.",
                ));
            }
            (Some(x), x)
        }
    };
    let mut items: Vec<Arc<Stored>> = Vec::new();
    let mut more = false;
    coll.visit(snapshot_at, ns, start_after.as_deref(), |obj| {
        if !filter.matches(&obj.labels, &obj.fields) {
            return true;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            more = true;
            return false;
        }
        items.push(obj.clone());
        true
    });
    // Counted over the keys alone: reading every remaining object to count it made each
    // page cost O(objects left) in cache misses (30 ms for the first of 200 pages of
    // 100k Pods).
    let remaining = match items.last() {
        Some(last) if more && count_remaining => coll.count(snapshot_at, ns, Some(&last.key)),
        _ => 0,
    };
    let token_rv = snapshot_at.unwrap_or(list_rv);
    let schema_changed = coll.schema_changed;
    drop(st);
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), Value::String(list_rv.to_string()));
    if more {
        if let Some(last) = items.last() {
            meta.insert(
                "continue".into(),
                Value::String(encode_continue(token_rv, &last.key)),
            );
            if count_remaining {
                meta.insert("remainingItemCount".into(), Value::from(remaining));
            }
        }
    } else if reg.custom {
        // The apiextensions server's unstructured lists always carry the field.
        meta.insert("continue".into(), Value::String(String::new()));
    }
    if out != Output::Json || schema_changed {
        return converted_list(&reg, &items, meta, q, out);
    }
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
        Value::String(reg.list_kind.clone()),
        Value::String(reg.api_version()),
        Value::Object(meta)
    );
    let mut r = Response::new(Body::list(
        Bytes::from(head),
        items,
        reg.list_items_type_meta,
        Bytes::from_static(b"]}"),
    ));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    Ok(r)
}
