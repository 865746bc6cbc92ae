//! The write verbs as HTTP: decoding bodies and options, then calling the storage's
//! write ([`crate::writes`]) and shaping its answer (201 on create, the object or a
//! success `Status` on delete, `Warning` headers for unknown fields).

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};

use crate::body::Body;
use crate::errors::{cause, StatusCause, StatusError};
use crate::media;
use crate::query::{not_supported, Query};
use crate::registry::Registration;
use crate::response::{json_response, object_response, with_warnings};
use crate::select::Filter;
use crate::server::Inner;
use crate::writes::Propagation;
use crate::writes::{DeleteOpts, PatchKind, WriteOpts};

/// The object a PUT, PATCH or DELETE names.
pub(crate) struct ObjectRequest<'a> {
    pub idx: usize,
    pub reg: &'a Registration,
    pub ns: &'a str,
    pub name: &'a str,
    /// The `status` subresource.
    pub status_only: bool,
}

/// POST to a collection.
pub(crate) fn create(
    inner: &Inner,
    idx: usize,
    ns: Option<&str>,
    q: &Query,
    req: &Request<Bytes>,
    wopts: &WriteOpts,
) -> Result<Response<Body>, StatusError> {
    let reg = inner.registration(idx);
    let mut obj = media::decode_object(req, &reg)?;
    media::check_type(&obj, &reg)?;
    media::check_duplicates(req, &reg, q.field_validation)?;
    let warnings = media::check_fields(&reg, &mut obj, q.field_validation, true)?;
    crate::writes::on_client_create(&reg, &mut obj);
    let s = inner.create(idx, ns.unwrap_or_default(), obj, wopts)?;
    let r = if wopts.dry_run {
        // Nothing was stored, so the answer carries no resourceVersion.
        let mut v = s.to_value()?;
        crate::meta::meta_mut(&mut v)?.remove("resourceVersion");
        let bytes = serde_json::to_vec(&v).map_err(StatusError::internal)?;
        json_response(StatusCode::CREATED, bytes)
    } else {
        object_response(StatusCode::CREATED, &s)
    };
    Ok(with_warnings(r, &warnings))
}

/// DELETE of a collection: the deleted objects, as a list.
pub(crate) fn delete_collection(
    inner: &Inner,
    idx: usize,
    ns: Option<&str>,
    q: &Query,
    req: &Request<Bytes>,
) -> Result<Response<Body>, StatusError> {
    let opts = delete_options(q, req)?;
    let reg = inner.registration(idx);
    let filter = Filter::parse(
        &reg,
        q.label_selector.as_deref(),
        q.field_selector.as_deref(),
    )?;
    let items =
        inner.delete_collection(idx, ns, |o| filter.matches(&o.labels, &o.fields), &opts)?;
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{\"resourceVersion\":\"{}\"}},\"items\":[",
        Value::String(reg.list_kind.clone()),
        Value::String(reg.api_version()),
        inner.state.read().rv
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

/// PUT of a namespace's `finalize` subresource.
pub(crate) fn finalize_namespace(
    inner: &Inner,
    idx: usize,
    name: &str,
    req: &Request<Bytes>,
    wopts: &WriteOpts,
) -> Result<Response<Body>, StatusError> {
    let reg = inner.registration(idx);
    let body = media::decode_object(req, &reg)?;
    let s = inner.finalize_namespace(idx, name, &body, wopts)?;
    Ok(object_response(StatusCode::OK, &s))
}

/// PUT of an object or its status.
pub(crate) fn update(
    inner: &Inner,
    o: &ObjectRequest<'_>,
    q: &Query,
    req: &Request<Bytes>,
    wopts: &WriteOpts,
) -> Result<Response<Body>, StatusError> {
    let mut obj = media::decode_object(req, o.reg)?;
    media::check_type(&obj, o.reg)?;
    media::check_duplicates(req, o.reg, q.field_validation)?;
    let warnings = media::check_fields(o.reg, &mut obj, q.field_validation, true)?;
    // A kind whose strategy allows it (a Service, a Lease, ...) is created by a PUT to
    // a name that does not exist yet.
    if !o.status_only
        && o.reg.strategy.allow_create_on_update()
        && inner
            .stored(o.idx, o.ns, o.name)
            .is_err_and(|e| e.is_not_found())
    {
        let body_name = obj.get("metadata").and_then(|m| m.get("name"));
        if body_name
            .and_then(Value::as_str)
            .is_some_and(|n| n != o.name)
        {
            return Err(StatusError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                body_name.and_then(Value::as_str).unwrap_or_default(),
                o.name
            )));
        }
        crate::meta::meta_mut(&mut obj)?.insert("name".into(), Value::String(o.name.into()));
        crate::writes::on_client_create(o.reg, &mut obj);
        let s = inner.create(o.idx, o.ns, obj, wopts)?;
        return Ok(with_warnings(
            object_response(StatusCode::CREATED, &s),
            &warnings,
        ));
    }
    let s = inner.update(o.idx, o.ns, o.name, obj, o.status_only, wopts)?;
    Ok(with_warnings(
        object_response(StatusCode::OK, &s),
        &warnings,
    ))
}

/// PATCH of an object or its status, in any of the four patch types.
pub(crate) fn patch(
    inner: &Inner,
    o: &ObjectRequest<'_>,
    q: &Query,
    req: &Request<Bytes>,
    wopts: &WriteOpts,
) -> Result<Response<Body>, StatusError> {
    let reg = o.reg;
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let kind = PatchKind::from_content_type(ct).ok_or_else(|| {
        StatusError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml{}",
            if reg.supports_strategic_merge() { ", application/strategic-merge-patch+json" } else { "" }
        ))
    })?;
    let mut body = patch_body(kind, req.body())?;
    let warnings = match (&mut body, kind) {
        (Value::Object(m), PatchKind::Apply) => {
            media::check_fields(reg, m, q.field_validation, false)?
        }
        _ => Vec::new(),
    };
    if q.force && kind != PatchKind::Apply {
        return Err(StatusError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![StatusCause {
                reason: cause::FIELD_VALUE_FORBIDDEN.into(),
                message: "Forbidden: may not be specified for non-apply patch".into(),
                field: "force".into(),
            }],
        ));
    }
    let (s, created) = inner.patch(o.idx, o.ns, o.name, kind, &body, o.status_only, wopts)?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(with_warnings(object_response(code, &s), &warnings))
}

/// DELETE of an object: the object while its deletion is pending (or when the resource
/// returns deleted objects), a success `Status` otherwise.
pub(crate) fn delete(
    inner: &Inner,
    o: &ObjectRequest<'_>,
    q: &Query,
    req: &Request<Bytes>,
) -> Result<Response<Body>, StatusError> {
    let opts = delete_options(q, req)?;
    let (s, pending) = inner.delete(o.idx, o.ns, o.name, &opts)?;
    // A pending deletion answers 200 with the object, as the real server does unless
    // orphanDependents=false was sent.
    if pending || o.reg.return_deleted_object {
        return Ok(object_response(StatusCode::OK, &s));
    }
    let uid = s
        .to_value()
        .ok()
        .and_then(|v| {
            v.get("metadata")
                .and_then(|m| m.get("uid"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let mut details =
        json!({"name": o.name, "group": o.reg.group, "kind": o.reg.plural, "uid": uid});
    // Go leaves the empty group of the core API out (`omitempty`).
    if o.reg.group.is_empty() {
        details.as_object_mut().map(|d| d.remove("group"));
    }
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    });
    Ok(json_response(
        StatusCode::OK,
        status.to_string().into_bytes(),
    ))
}

/// GET, PUT and PATCH (JSON, merge, or server-side apply of a Scale) of the `scale`
/// subresource.
pub(crate) fn scale(
    inner: &Inner,
    idx: usize,
    ns: &str,
    name: &str,
    m: &Method,
    req: &Request<Bytes>,
    wopts: &WriteOpts,
) -> Result<Response<Body>, StatusError> {
    let scale = match *m {
        Method::GET => inner.get_scale(idx, ns, name)?,
        Method::PUT => {
            let body = Value::Object(body_object(req.body())?);
            inner.update_scale(idx, ns, name, &body, wopts)?
        }
        Method::PATCH => {
            let ct = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            let kind = PatchKind::from_content_type(ct);
            if kind == Some(PatchKind::Apply) {
                let body = patch_body(PatchKind::Apply, req.body())?;
                let scale = inner.apply_scale(idx, ns, name, &body, wopts)?;
                return Ok(json_response(
                    StatusCode::OK,
                    scale.to_string().into_bytes(),
                ));
            }
            let body = patch_body(PatchKind::Merge, req.body())?;
            let mut cur = inner.get_scale(idx, ns, name)?;
            match kind {
                Some(PatchKind::Merge) | Some(PatchKind::Strategic) => {
                    crate::patch::merge_patch(&mut cur, &body)
                }
                Some(PatchKind::Json) => cur = crate::patch::json_patch(&cur, &body)?,
                _ => {
                    return Err(StatusError::unsupported_media_type(
                        "the scale subresource accepts application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json and application/apply-patch+yaml",
                    ))
                }
            }
            inner.update_scale(idx, ns, name, &cur, wopts)?
        }
        ref other => {
            return Err(StatusError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {other}"
            )))
        }
    };
    Ok(json_response(
        StatusCode::OK,
        scale.to_string().into_bytes(),
    ))
}

fn patch_body(kind: PatchKind, body: &Bytes) -> Result<Value, StatusError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => Ok(v),
        Err(e) if kind == PatchKind::Apply => serde_yaml::from_slice::<Value>(body).map_err(|y| {
            StatusError::bad_request(format!("error decoding YAML: {y} (as JSON: {e})"))
        }),
        Err(e) => Err(StatusError::bad_request(format!(
            "the body of the request was in an unknown format: {e}"
        ))),
    }
}

/// POST to `pods/<name>/eviction`, `pods/<name>/binding` or
/// `serviceaccounts/<name>/token` (the `writes::actions` module): a body in any media
/// type a create takes, 201 with a success `Status` or the TokenRequest.
pub(crate) fn action(
    inner: &Inner,
    o: &ObjectRequest<'_>,
    sub: &str,
    m: &Method,
    q: &Query,
    req: &Request<Bytes>,
    wopts: &WriteOpts,
) -> Result<Response<Body>, StatusError> {
    if *m != Method::POST {
        return Err(StatusError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {m}"
        )));
    }
    let body = media::decode_object(req, o.reg)?;
    let success = || {
        json_response(
            StatusCode::CREATED,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
                .to_string()
                .into_bytes(),
        )
    };
    match sub {
        "eviction" => {
            let opts = delete_options_from(q, body.get("deleteOptions").cloned())?;
            inner.evict(o.idx, o.ns, o.name, &opts)?;
            Ok(success())
        }
        "binding" => {
            inner.bind(o.idx, o.ns, o.name, &body, wopts)?;
            Ok(success())
        }
        _ => {
            let token = inner.token(o.idx, o.ns, o.name, &body)?;
            Ok(json_response(
                StatusCode::CREATED,
                token.to_string().into_bytes(),
            ))
        }
    }
}

/// DeleteOptions from the body, with query parameters as fallbacks.
fn delete_options(q: &Query, req: &Request<Bytes>) -> Result<DeleteOpts, StatusError> {
    delete_options_from(q, media::decode_delete_options(req)?)
}

/// DeleteOptions from a decoded body (`None`: none sent), with query parameters as
/// fallbacks.
fn delete_options_from(q: &Query, body: Option<Value>) -> Result<DeleteOpts, StatusError> {
    let mut policy = q.propagation_policy.clone();
    let mut opts = DeleteOpts {
        grace_period_seconds: q.grace_period_seconds,
        dry_run: q.dry_run,
        from_client: true,
        ..Default::default()
    };
    if let Some(v) = body {
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            policy = Some(p.to_owned());
        }
        if v.get("orphanDependents").and_then(Value::as_bool) == Some(true) && policy.is_none() {
            policy = Some("Orphan".into());
        }
        if let Some(g) = v.get("gracePeriodSeconds").and_then(Value::as_i64) {
            opts.grace_period_seconds = Some(g);
        }
        if let Some(p) = v.get("preconditions") {
            opts.uid = p.get("uid").and_then(Value::as_str).map(str::to_owned);
            opts.resource_version = p
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if let Some(d) = v.get("dryRun").and_then(Value::as_array) {
            opts.dry_run |= d.iter().any(|x| x == "All");
        }
    }
    opts.propagation = match policy.as_deref() {
        None => None,
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Orphan") => Some(Propagation::Orphan),
        Some("Background") => Some(Propagation::Background),
        Some(other) => {
            return Err(StatusError::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                vec![not_supported(
                    "propagationPolicy",
                    other,
                    &["Foreground", "Background", "Orphan"],
                )],
            ))
        }
    };
    Ok(opts)
}

fn body_object(body: &Bytes) -> Result<Map<String, Value>, StatusError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(StatusError::bad_request("the body must be a JSON object")),
        Err(e) => Err(StatusError::bad_request(format!(
            "the body of the request was in an unknown format: {e}"
        ))),
    }
}
