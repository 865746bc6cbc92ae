//! The versions of a custom resource: every version of a CRD serves the objects of one
//! storage (the storage version's collection), converted to the version asked for
//! (SEMANTICS 13, "Versions and conversion"; the conversion itself is the `conversion`
//! module's).
//!
//! Contract:
//! - A request names a [`View`] when its CRD version is not the storage version, or when
//!   the storage holds objects written at another version (the storage version changed
//!   since). Requests without a view are served untouched.
//! - Reads: a response's objects (the object, a list's items, a Table's row objects, a
//!   watch event's object) of the resource's kind and group are converted to the
//!   requested apiVersion, and a list names that apiVersion. A conversion error answers
//!   HTTP 500 with the converter's message (kube-apiserver's storage returns the error
//!   unwrapped, so the Status has no reason); a watch whose event cannot be converted
//!   ends, as kube-apiserver's watch handler ends on an encoding error. Bookmarks only
//!   change apiVersion (they carry no data to convert).
//! - Writes (strategy `Webhook`): a create or update body is converted to the storage
//!   version before it is admitted, and the stored object back to the requested version
//!   in the response. A JSON or merge patch is applied to the object converted to the
//!   requested version, then written back as an update at the resourceVersion it was read
//!   at (a concurrent write makes it a 409 Conflict, where kube-apiserver retries). An
//!   apply patch is converted to the storage version as a whole (a webhook must accept
//!   a partial object there). Strategy `None` needs nothing on writes: the storage stores
//!   its own apiVersion.
//! - Tables: the columns and cells are the requested version's printer columns over the
//!   converted objects (the storage handler is asked for whole objects; the client's
//!   `includeObject` is applied afterwards). Not done: Tables streamed by a watch keep
//!   the storage version's columns.

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response};
use http_body_util::BodyExt;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::body::Body;
use super::conversion::{convert, Conversion, ConversionError};
use super::registry::PrinterColumn;
use super::server::Inner;
use super::store::storage_key;
use super::table::{self, Include, Output};
use crate::errors::StatusError;

/// How the responses (and, for a webhook, the requests) of one request are converted.
#[derive(Debug, Clone)]
pub(crate) struct View {
    group: String,
    kind: String,
    /// The apiVersion the request names.
    target: String,
    /// The storage version's apiVersion.
    storage: String,
    storage_idx: usize,
    conversion: Conversion,
    /// `namespace/name` of the object the path names (empty for a collection).
    key: String,
    /// The requested version's printer columns: a Table's columns and cells.
    columns: Vec<PrinterColumn>,
    /// What a Table request asked of its rows' objects (None: not a Table request); the
    /// storage handler is asked for whole objects, to compute the requested version's
    /// cells from.
    table: Option<Include>,
}

/// The path's group, version, plural, namespace, name and subresource.
fn parse_path(path: &str) -> Option<(&str, &str, &str, &str, &str, &str)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (g, v, rest) = match segs.as_slice() {
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (ns, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (*ns, rest),
        _ => ("", rest),
    };
    match rest {
        [plural] => Some((g, v, plural, ns, "", "")),
        [plural, name] => Some((g, v, plural, ns, name, "")),
        [plural, name, sub] => Some((g, v, plural, ns, name, sub)),
        _ => None,
    }
}

impl View {
    /// The view a request needs, if any.
    pub(crate) fn of(inner: &Inner, path: &str) -> Option<View> {
        let (g, v, plural, ns, name, _) = parse_path(path)?;
        let st = inner.state.read();
        let idx = st.lookup(&format!("{g}/{v}"), plural)?;
        let reg = &st.collections[idx].reg;
        if !reg.custom && !matches!(reg.conversion, Conversion::Builtin(_)) {
            return None;
        }
        let storage_idx = match st.storage_of(idx) {
            Some((s, _, _)) => s,
            None if st.collections[idx].mixed_versions => idx,
            None => return None,
        };
        let storage = st.collections[storage_idx].reg.api_version();
        Some(View {
            group: reg.group.clone(),
            kind: reg.kind.clone(),
            target: reg.api_version(),
            storage,
            storage_idx,
            conversion: reg.conversion.clone(),
            key: if name.is_empty() {
                String::new()
            } else {
                storage_key(if reg.namespaced { ns } else { "" }, name)
            },
            columns: reg.printer_columns.clone(),
            table: None,
        })
    }

    /// A Table request asks the storage handler for whole objects; the client's
    /// `includeObject` is applied when the response is converted.
    fn table_request(&mut self, req: Request<Bytes>) -> Result<Request<Bytes>, StatusError> {
        let accept = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok());
        if table::negotiate_for(accept, false).ok() != Some(Output::Table) {
            return Ok(req);
        }
        let query = req.uri().query().unwrap_or_default();
        let asked = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("includeObject="));
        self.table = Some(table::include(asked)?);
        let mut kept: Vec<&str> = query
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("includeObject="))
            .collect();
        kept.push("includeObject=Object");
        let uri = format!("{}?{}", req.uri().path(), kept.join("&"));
        let (mut parts, body) = req.into_parts();
        parts.uri = uri
            .parse()
            .map_err(|e| StatusError::bad_request(format!("invalid request URI {uri:?}: {e}")))?;
        Ok(Request::from_parts(parts, body))
    }

    /// A Table's columns and cells as the requested version's printer columns give
    /// them, and its rows' objects as the client asked.
    fn table_response(&self, v: &mut Map<String, Value>) {
        let Some(include) = self.table else {
            return;
        };
        v.insert(
            "columnDefinitions".into(),
            Value::Array(table::custom_definitions(&self.columns)),
        );
        if let Some(Value::Array(rows)) = v.get_mut("rows") {
            for r in rows.iter_mut() {
                let obj = r.get("object").cloned().unwrap_or(Value::Null);
                *r = table::row(&obj, table::custom_cells(&self.columns, &obj), include);
            }
        }
    }

    /// Whether writes convert too (a webhook or a built-in conversion; strategy `None`
    /// only rewrites `apiVersion`, which storage does not need).
    fn webhook(&self) -> bool {
        matches!(
            self.conversion,
            Conversion::Webhook(_) | Conversion::Builtin(_)
        )
    }

    /// The requested apiVersion when its schema validates the write: the body is then
    /// the requested version's (strategy `None` only rewrites `apiVersion`; a webhook
    /// converts the body to the storage version first).
    pub(crate) fn schema_version(&self) -> Option<&str> {
        (!self.webhook() && self.target != self.storage).then_some(self.target.as_str())
    }

    /// Whether `o` is one of the served objects (of this group and kind).
    fn ours(&self, o: &Map<String, Value>) -> bool {
        o.get("kind").and_then(Value::as_str) == Some(self.kind.as_str())
            && o.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|av| av.split_once('/').is_some_and(|(g, _)| g == self.group))
    }

    /// The request as the storage version's handlers take it.
    pub(crate) async fn request(
        &mut self,
        inner: &Inner,
        req: Request<Bytes>,
    ) -> Result<Request<Bytes>, StatusError> {
        let req = self.table_request(req)?;
        if !self.webhook() {
            return Ok(req);
        }
        let method = req.method().clone();
        let ct = content_type(&req);
        match method {
            Method::POST | Method::PUT if self.target != self.storage => {
                let Some(mut obj) = decode(req.body(), &ct) else {
                    return Ok(req);
                };
                obj.entry("apiVersion")
                    .or_insert_with(|| Value::String(self.target.clone()));
                let mut objs = [obj];
                convert(&self.conversion, &self.storage, &mut objs, false)
                    .await
                    .map_err(internal)?;
                let [obj] = objs;
                Ok(with_json_body(req, &obj))
            }
            Method::PATCH if ct == "application/apply-patch+yaml" => {
                if self.target == self.storage {
                    return Ok(req);
                }
                let Some(mut obj) = decode(req.body(), &ct) else {
                    return Ok(req);
                };
                obj.entry("apiVersion")
                    .or_insert_with(|| Value::String(self.target.clone()));
                let mut objs = [obj];
                convert(&self.conversion, &self.storage, &mut objs, false)
                    .await
                    .map_err(internal)?;
                let [obj] = objs;
                let (mut parts, _) = req.into_parts();
                parts.headers.remove(header::CONTENT_LENGTH);
                let body = serde_json::to_vec(&Value::Object(obj)).unwrap_or_default();
                Ok(Request::from_parts(parts, Bytes::from(body)))
            }
            Method::PATCH => self.patch_as_update(inner, req, &ct).await,
            _ => Ok(req),
        }
    }

    /// A JSON or merge patch applied to the object at the requested version, sent on as
    /// an update of the storage version.
    async fn patch_as_update(
        &self,
        inner: &Inner,
        req: Request<Bytes>,
        ct: &str,
    ) -> Result<Request<Bytes>, StatusError> {
        let stored = {
            let st = inner.state.read();
            st.collections[self.storage_idx]
                .objects
                .get(&self.key)
                .cloned()
        };
        let Some(stored) = stored else {
            return Ok(req);
        };
        let current = stored.to_value()?;
        let stored_av = current
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if self.target == self.storage && stored_av == self.target {
            return Ok(req);
        }
        if !matches!(
            ct,
            "application/json-patch+json" | "application/merge-patch+json"
        ) {
            // Other media types get their 415 from the handler.
            return Ok(req);
        }
        let patch: Value = serde_json::from_slice(req.body())
            .map_err(|e| StatusError::bad_request(format!("error decoding patch: {e}")))?;
        let mut objs = [current];
        convert(&self.conversion, &self.target, &mut objs, false)
            .await
            .map_err(internal)?;
        let [current] = objs;
        let mut doc = Value::Object(current);
        match ct {
            "application/json-patch+json" => doc = super::patch::json_patch(&doc, &patch)?,
            _ => super::patch::merge_patch(&mut doc, &patch),
        }
        let Value::Object(mut obj) = doc else {
            return Err(StatusError::bad_request(
                "the patched object is not an object",
            ));
        };
        // The version read, unless the patch names one (a precondition, as on a cluster).
        if let Some(Value::Object(m)) = obj.get_mut("metadata") {
            m.entry("resourceVersion")
                .or_insert_with(|| Value::String(stored.rv.to_string()));
        }
        let mut objs = [obj];
        convert(&self.conversion, &self.storage, &mut objs, false)
            .await
            .map_err(internal)?;
        let [obj] = objs;
        let mut req = with_json_body(req, &obj);
        *req.method_mut() = Method::PUT;
        Ok(req)
    }

    /// The storage version's response as the requested version.
    pub(crate) async fn response(self, resp: Response<Body>) -> Response<Body> {
        let (parts, body) = resp.into_parts();
        if body.is_stream() {
            return Response::from_parts(parts, self.stream(body));
        }
        let bytes = body.into_bytes().unwrap_or_default();
        let Ok(Value::Object(mut v)) = serde_json::from_slice::<Value>(&bytes) else {
            return Response::from_parts(parts, Body::full(bytes));
        };
        if v.get("kind").and_then(Value::as_str) == Some("Status") {
            return Response::from_parts(parts, Body::full(bytes));
        }
        if let Err(e) = self.convert_value(&mut v).await {
            return super::response::error_response(&internal(e));
        }
        let mut parts = parts;
        parts.headers.remove(header::CONTENT_LENGTH);
        let out = serde_json::to_vec(&Value::Object(v)).unwrap_or_default();
        Response::from_parts(parts, Body::full(out))
    }

    /// Converts an object, a list's items or a Table's row objects.
    async fn convert_value(&self, v: &mut Map<String, Value>) -> Result<(), ConversionError> {
        let list_av = v.get("apiVersion").cloned();
        if let Some(Value::Array(items)) = v.get_mut("items") {
            // A built-in list's items carry no apiVersion and kind (kube-apiserver's
            // don't): they are the list's, for the conversion only.
            let mut bare = Vec::new();
            for (i, item) in items.iter_mut().enumerate() {
                if let (Some(o), Some(av)) = (item.as_object_mut(), &list_av) {
                    if !o.contains_key("apiVersion") {
                        o.insert("apiVersion".into(), av.clone());
                        o.insert("kind".into(), Value::String(self.kind.clone()));
                        bare.push(i);
                    }
                }
            }
            let r = self.convert_all(items, |i| Some(i)).await;
            for i in bare {
                if let Some(o) = items[i].as_object_mut() {
                    o.remove("apiVersion");
                    o.remove("kind");
                }
            }
            r?;
            if v.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|av| av.split_once('/').is_some_and(|(g, _)| g == self.group))
            {
                v.insert("apiVersion".into(), Value::String(self.target.clone()));
            }
            return Ok(());
        }
        if let Some(Value::Array(rows)) = v.get_mut("rows") {
            self.convert_all(rows, |r| r.as_object_mut()?.get_mut("object"))
                .await?;
            self.table_response(v);
            return Ok(());
        }
        if self.ours(v) {
            let mut objs = [std::mem::take(v)];
            let r = convert(&self.conversion, &self.target, &mut objs, false).await;
            let [o] = objs;
            *v = o;
            r?;
        }
        Ok(())
    }

    /// Converts, in one batch, the objects `at` finds in `values`.
    async fn convert_all(
        &self,
        values: &mut [Value],
        at: impl Fn(&mut Value) -> Option<&mut Value>,
    ) -> Result<(), ConversionError> {
        let mut picked = Vec::new();
        let mut objs = Vec::new();
        for (i, val) in values.iter_mut().enumerate() {
            if let Some(Value::Object(o)) = at(val) {
                if self.ours(o) {
                    picked.push(i);
                    objs.push(std::mem::take(o));
                }
            }
        }
        let r = convert(&self.conversion, &self.target, &mut objs, true).await;
        for (i, o) in picked.into_iter().zip(objs) {
            if let Some(slot) = at(&mut values[i]) {
                *slot = Value::Object(o);
            }
        }
        r
    }

    /// A watch stream whose events' objects are converted; it ends at the first event
    /// that cannot be.
    fn stream(self, mut body: Body) -> Body {
        let (tx, rx) = mpsc::channel::<Vec<Bytes>>(16);
        let view = Arc::new(self);
        tokio::spawn(async move {
            loop {
                let frame = tokio::select! {
                    f = body.frame() => f,
                    () = tx.closed() => return,
                };
                let Some(Ok(frame)) = frame else {
                    return;
                };
                let Ok(chunk) = frame.into_data() else {
                    continue;
                };
                let mut out = Vec::new();
                for line in chunk.split(|c| *c == b'\n').filter(|l| !l.is_empty()) {
                    match view.convert_event(line).await {
                        Ok(b) => out.push(b),
                        Err(e) => {
                            tracing::warn!("ending a watch: {}", e.0);
                            let _ = tx.send(out).await;
                            return;
                        }
                    }
                }
                if tx.send(out).await.is_err() {
                    return;
                }
            }
        });
        Body::watch(rx)
    }

    /// One watch frame (a JSON event and its newline) as the requested version.
    async fn convert_event(&self, line: &[u8]) -> Result<Bytes, ConversionError> {
        let mut ev: Map<String, Value> = match serde_json::from_slice(line) {
            Ok(Value::Object(m)) => m,
            _ => return Ok(Bytes::from([line, b"\n"].concat())),
        };
        let bookmark = ev.get("type").and_then(Value::as_str) == Some("BOOKMARK");
        if let Some(Value::Object(o)) = ev.get_mut("object") {
            if bookmark {
                // A bookmark carries a resourceVersion and no data: nothing for a webhook.
                convert(
                    &Conversion::None,
                    &self.target,
                    std::slice::from_mut(o),
                    false,
                )
                .await?;
            } else {
                self.convert_value(o).await?;
            }
        }
        let mut out = serde_json::to_vec(&Value::Object(ev)).unwrap_or_default();
        out.push(b'\n');
        Ok(out.into())
    }
}

/// A conversion error as kube-apiserver answers it: 500, no reason.
fn internal(e: ConversionError) -> StatusError {
    StatusError::new(500, "", e.0)
}

fn content_type(req: &Request<Bytes>) -> String {
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

/// A JSON or YAML body as an object; `None` leaves the request to the handler's errors.
fn decode(body: &[u8], ct: &str) -> Option<Map<String, Value>> {
    let v: Value = match ct {
        "application/yaml"
        | "application/x-yaml"
        | "text/yaml"
        | "application/apply-patch+yaml" => serde_yaml::from_slice(body).ok()?,
        // Built-in kinds only: a custom resource's protobuf body is refused later (415).
        crate::protobuf::MEDIA_TYPE => Value::Object(crate::protobuf::decode(body).ok()?),
        _ => serde_json::from_slice(body).ok()?,
    };
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

fn with_json_body(req: Request<Bytes>, obj: &Map<String, Value>) -> Request<Bytes> {
    let (mut parts, _) = req.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    let body = serde_json::to_vec(obj).unwrap_or_default();
    Request::from_parts(parts, Bytes::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_resource() {
        assert_eq!(
            parse_path("/apis/example.com/v2/namespaces/default/foos/a/status"),
            Some(("example.com", "v2", "foos", "default", "a", "status"))
        );
        assert_eq!(
            parse_path("/apis/example.com/v2/foos"),
            Some(("example.com", "v2", "foos", "", "", ""))
        );
        assert_eq!(
            parse_path("/apis/example.com/v2/namespaces/default/foos"),
            Some(("example.com", "v2", "foos", "default", "", ""))
        );
        assert_eq!(parse_path("/api/v1/pods"), None);
    }
}
