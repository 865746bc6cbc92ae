//! Versions of a custom resource without conversion (strategy None): a CRD version
//! that is not the storage version serves the storage version's objects, and only
//! `apiVersion` differs (SEMANTICS 13, "Versions and conversion").
//!
//! Contract: requests to such a version read and write the storage version's objects
//! (writes store the storage apiVersion); every response carries the requested
//! apiVersion instead: on the object, on a list and its items, on a Table's row objects
//! and on watch events' objects. Status objects and other apiVersions are left alone.

use std::sync::Arc;

use bytes::Bytes;
use http::Response;
use serde_json::Value;

use super::body::Body;

fn swap(v: &mut Value, from: &str, to: &str) {
    if let Some(av) = v.get_mut("apiVersion") {
        if av == from {
            *av = Value::String(to.to_owned());
        }
    }
}

/// Rewrites `from` to `to` where a response names the served objects' apiVersion.
fn rewrite_value(v: &mut Value, from: &str, to: &str) {
    swap(v, from, to);
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for i in items {
            swap(i, from, to);
        }
    }
    if let Some(rows) = v.get_mut("rows").and_then(Value::as_array_mut) {
        for r in rows {
            if let Some(o) = r.get_mut("object") {
                swap(o, from, to);
            }
        }
    }
    if let Some(o) = v.get_mut("object") {
        rewrite_value(o, from, to);
    }
}

fn rewrite_bytes(b: &[u8], from: &str, to: &str) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(b).ok()?;
    rewrite_value(&mut v, from, to);
    serde_json::to_vec(&v).ok()
}

/// A response of the storage version as the requested version.
pub(crate) fn rewrite(resp: Response<Body>, from: &str, to: &str) -> Response<Body> {
    let (parts, body) = resp.into_parts();
    let (from, to) = (from.to_owned(), to.to_owned());
    if body.is_stream() {
        let f = move |chunk: Bytes| -> Bytes {
            let mut out = Vec::with_capacity(chunk.len() + 16);
            for line in chunk.split(|c| *c == b'\n').filter(|l| !l.is_empty()) {
                match rewrite_bytes(line, &from, &to) {
                    Some(b) => out.extend_from_slice(&b),
                    None => out.extend_from_slice(line),
                }
                out.push(b'\n');
            }
            out.into()
        };
        return Response::from_parts(parts, body.mapped(Arc::new(f)));
    }
    let bytes = body.into_bytes().unwrap_or_default();
    let out = rewrite_bytes(&bytes, &from, &to)
        .map(Bytes::from)
        .unwrap_or(bytes);
    let mut parts = parts;
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::full(out))
}
