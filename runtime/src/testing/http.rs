//! HTTP: routing, discovery, list, get and the minimal writes, as a real API server
//! answers them (SEMANTICS 9).

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::errors::{cause, StatusCause, StatusError};

use super::body::Body;
use super::discovery;
use super::media::{self, FieldValidation};
use super::registry::Registration;
use super::select::Filter;
use super::server::{Inner, Propagation};
use super::store::Stored;
use super::table::{self, Output};
use super::watch;
use super::writes::{DeleteOpts, PatchKind, WriteOpts};

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
    pub include_object: Option<String>,
}

fn percent_decode(s: &str) -> String {
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
    fn parse(q: Option<&str>) -> Result<Query, StatusError> {
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
                "fieldValidation" => out.field_validation = FieldValidation::parse(&v)?,
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

fn not_supported(field: &str, value: &str, supported: &[&str]) -> StatusCause {
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

fn decode_continue(tok: &str) -> Result<(u64, String), StatusError> {
    let bad = || StatusError::bad_request(format!("continue key is not valid: {tok:?}"));
    let v: Value = unhex(tok)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(bad)?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, start.to_owned()))
}

pub(crate) fn json_response(code: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Body::full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

pub(crate) fn error_response(err: &StatusError) -> Response<Body> {
    let body = serde_json::to_vec(err.status()).unwrap_or_default();
    let code = StatusCode::from_u16(err.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json_response(code, body);
    if let Some(s) = err.retry_after_seconds() {
        if let Ok(v) = header::HeaderValue::from_str(&s.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    r
}

fn object_response(code: StatusCode, s: &Stored) -> Response<Body> {
    let mut r = Response::new(Body::full(s.bytes.clone()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

/// What a path names.
enum Target {
    Version,
    /// A self review (access or identity): answered, never stored.
    SelfReview(&'static str),
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3(String),
    Health(String, Option<String>),
    Api,
    Apis,
    Group(String),
    Resources(String),
    Collection {
        idx: usize,
        ns: Option<String>,
    },
    Object {
        idx: usize,
        ns: String,
        name: String,
        sub: Option<String>,
    },
}

/// What a path names; `view` is set when a CRD version serves its storage version's
/// objects (apiVersion to rewrite: from, to).
fn route(
    inner: &Inner,
    path: &str,
    view: &mut Option<(String, String)>,
) -> Result<Target, StatusError> {
    let not_found = || {
        StatusError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    };
    let segs: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let (gv, rest) = match segs.as_slice() {
        ["version"] => return Ok(Target::Version),
        ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"] => {
            return Ok(Target::SelfReview("SelfSubjectAccessReview"))
        }
        ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"] => {
            return Ok(Target::SelfReview("SelfSubjectReview"))
        }
        ["openapi", "v2"] => return Ok(Target::OpenApiV2),
        ["openapi", "v3"] => return Ok(Target::OpenApiV3Index),
        ["openapi", "v3", rest @ ..] => return Ok(Target::OpenApiV3(rest.join("/"))),
        [h @ ("healthz" | "readyz" | "livez")] => return Ok(Target::Health((*h).to_owned(), None)),
        [h @ ("healthz" | "readyz" | "livez"), check] => {
            return Ok(Target::Health((*h).to_owned(), Some((*check).to_owned())))
        }
        ["api"] => return Ok(Target::Api),
        ["apis"] => return Ok(Target::Apis),
        ["apis", g] => return Ok(Target::Group((*g).to_owned())),
        ["api", v, rest @ ..] => ((*v).to_owned(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return Err(not_found()),
    };
    if rest.is_empty() {
        let st = inner.state.read();
        if st
            .collections
            .iter()
            .any(|c| c.served && c.reg.api_version() == gv)
        {
            return Ok(Target::Resources(gv));
        }
        return Err(not_found());
    }
    let st = inner.state.read();
    let lookup = |plural: &str| st.lookup(&gv, plural);
    let storage = |idx: usize, view: &mut Option<(String, String)>| match st.storage_of(idx) {
        Some((s, from, to)) => {
            *view = Some((from, to));
            s
        }
        None => idx,
    };
    let namespaced_lookup = |plural: &str| {
        st.lookup(&gv, plural)
            .filter(|i| st.collections[*i].reg.namespaced)
    };
    let target = match rest {
        ["namespaces", ns, res, tail @ ..] if namespaced_lookup(res).is_some() => {
            let idx = namespaced_lookup(res).ok_or_else(not_found)?;
            let idx = storage(idx, view);
            match tail {
                [] => Target::Collection {
                    idx,
                    ns: Some((*ns).to_owned()),
                },
                [name] => Target::Object {
                    idx,
                    ns: (*ns).to_owned(),
                    name: (*name).to_owned(),
                    sub: None,
                },
                [name, sub] => Target::Object {
                    idx,
                    ns: (*ns).to_owned(),
                    name: (*name).to_owned(),
                    sub: Some((*sub).to_owned()),
                },
                _ => return Err(not_found()),
            }
        }
        [res, tail @ ..] => {
            let idx = lookup(res).ok_or_else(not_found)?;
            let idx = storage(idx, view);
            let namespaced = st.collections[idx].reg.namespaced;
            match tail {
                [] => Target::Collection { idx, ns: None },
                [name] if !namespaced => Target::Object {
                    idx,
                    ns: String::new(),
                    name: (*name).to_owned(),
                    sub: None,
                },
                [name, sub] if !namespaced => Target::Object {
                    idx,
                    ns: String::new(),
                    name: (*name).to_owned(),
                    sub: Some((*sub).to_owned()),
                },
                _ => return Err(not_found()),
            }
        }
        [] => return Err(not_found()),
    };
    Ok(target)
}

/// Answers one request.
pub(crate) async fn handle(
    inner: Arc<Inner>,
    req: Request<Bytes>,
    stop: CancellationToken,
) -> Response<Body> {
    // Conversion between a CRD's versions wraps the handlers (the `versions` module).
    let conv = super::versions::View::of(&inner, req.uri().path());
    let req = match &conv {
        Some(c) => match c.request(&inner, req).await {
            Ok(r) => r,
            Err(e) => return error_response(&e),
        },
        None => req,
    };
    let resp = respond(inner.clone(), req, stop, &mut None).await;
    // Objects the write left without owners (the `owners` module).
    inner.collect_dangling();
    match resp {
        Ok(r) => match conv {
            Some(c) => c.response(r).await,
            None => r,
        },
        Err(e) => error_response(&e),
    }
}

fn verb_of(target: &Target, method: &Method, watch: bool) -> &'static str {
    match (target, method) {
        (Target::Collection { .. }, &Method::GET) if watch => "watch",
        (Target::Collection { .. }, &Method::GET) => "list",
        (Target::Collection { .. }, &Method::POST) => "create",
        (Target::Collection { .. }, &Method::DELETE) => "deletecollection",
        (Target::Object { .. }, &Method::GET) => "get",
        (Target::Object { .. }, &Method::PUT) => "update",
        (Target::Object { .. }, &Method::PATCH) => "patch",
        (Target::Object { .. }, &Method::DELETE) => "delete",
        _ => "",
    }
}

async fn respond(
    inner: Arc<Inner>,
    req: Request<Bytes>,
    stop: CancellationToken,
    view: &mut Option<(String, String)>,
) -> Result<Response<Body>, StatusError> {
    let target = route(&inner, req.uri().path(), view)?;
    media::check_size(req.body())?;
    let q = Query::parse(req.uri().query())?;
    let method = req.method().clone();
    let verb = verb_of(&target, &method, q.watch);
    if !verb.is_empty() {
        let (idx, ns, name, sub) = match &target {
            Target::Collection { idx, ns } => (
                *idx,
                ns.clone().unwrap_or_default(),
                String::new(),
                String::new(),
            ),
            Target::Object { idx, ns, name, sub } => (
                *idx,
                ns.clone(),
                name.clone(),
                sub.clone().unwrap_or_default(),
            ),
            _ => (0, String::new(), String::new(), String::new()),
        };
        let body = if req.body().is_empty() {
            None
        } else {
            serde_json::from_slice(req.body()).ok().or_else(|| {
                Some(Value::String(
                    String::from_utf8_lossy(req.body()).into_owned(),
                ))
            })
        };
        let record = super::faults::RequestRecord {
            verb: verb.into(),
            resource: inner.registration(idx).plural.clone(),
            subresource: sub,
            namespace: ns,
            name,
            content_type: req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
            query: req.uri().query().unwrap_or_default().to_owned(),
            body,
        };
        let reaction = inner.faults.observe(record);
        if let Some(d) = reaction.delay {
            tokio::time::sleep(d).await;
        }
        if let Some(e) = reaction.error {
            return Err(e);
        }
    }
    let wopts = WriteOpts {
        dry_run: q.dry_run,
        field_manager: q.field_manager.clone(),
        force: q.force,
    };
    match (target, method) {
        (Target::Version, Method::GET) => Ok(json_response(StatusCode::OK, discovery::version())),
        (Target::SelfReview(kind), Method::POST) => {
            media::check_size(req.body())?;
            Ok(json_response(
                StatusCode::CREATED,
                discovery::self_review(kind, &req).to_string().into_bytes(),
            ))
        }
        (Target::OpenApiV2, Method::GET) => Ok(discovery::openapi_v2(&inner, &req)),
        (Target::OpenApiV3Index, Method::GET) => {
            let st = inner.state.read();
            let regs: Vec<&Registration> = st
                .collections
                .iter()
                .filter(|c| c.served)
                .map(|c| &*c.reg)
                .collect();
            let doc = super::openapi::v3_index(&regs);
            Ok(json_response(StatusCode::OK, doc.to_string().into_bytes()))
        }
        (Target::OpenApiV3(gv), Method::GET) => {
            discovery::openapi_v3(&inner, &gv, req.uri().query())
        }
        (Target::Health(which, check), Method::GET) => Ok(discovery::health(
            &inner,
            &which,
            check.as_deref(),
            req.uri().query(),
        )),
        (Target::Api, Method::GET) => Ok(json_response(StatusCode::OK, discovery::api_versions())),
        (Target::Apis, Method::GET) => Ok(json_response(StatusCode::OK, discovery::groups(&inner))),
        (Target::Group(g), Method::GET) => discovery::group(&inner, &g),
        (Target::Resources(gv), Method::GET) => Ok(json_response(
            StatusCode::OK,
            discovery::resources(&inner, &gv),
        )),
        (Target::Collection { idx, ns }, Method::GET) => {
            if q.watch {
                let out = output(&req)?;
                watch::start(inner, idx, ns, q, out, stop).await
            } else {
                list(&inner, idx, ns.as_deref(), &q, output(&req)?).await
            }
        }
        (Target::Collection { idx, ns }, Method::POST) => {
            let reg = inner.registration(idx);
            let mut obj = media::decode_object(&req, &reg)?;
            let warnings = media::check_fields(&reg, &typed(&reg, &obj), q.field_validation, true)?;
            super::writes::on_client_create(&reg, &mut obj);
            let s = inner.create(idx, ns.as_deref().unwrap_or_default(), obj, &wopts)?;
            Ok(with_warnings(
                object_response(StatusCode::CREATED, &s),
                &warnings,
            ))
        }
        (Target::Collection { idx, ns }, Method::DELETE) => {
            let opts = delete_options(&q, &req)?;
            let reg = inner.registration(idx);
            let filter = Filter::parse(
                &reg,
                q.label_selector.as_deref(),
                q.field_selector.as_deref(),
            )?;
            let items = inner.delete_collection(
                idx,
                ns.as_deref(),
                |o| filter.matches(&o.labels, &o.fields),
                &opts,
            )?;
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
        (Target::Object { idx, ns, name, sub }, m) => {
            let reg = inner.registration(idx);
            let status_only = match sub.as_deref() {
                None => false,
                Some("status") if reg.status => true,
                Some("finalize") if super::namespaces::is_namespaces(&reg) && m == Method::PUT => {
                    let body = media::decode_object(&req, &reg)?;
                    let s = inner.finalize_namespace(idx, &name, &body, &wopts)?;
                    return Ok(object_response(StatusCode::OK, &s));
                }
                Some("scale") if reg.scale => {
                    return scale_request(&inner, idx, &ns, &name, &m, &req, &wopts);
                }
                Some(_) => {
                    return Err(StatusError::new(
                        404,
                        "NotFound",
                        "the server could not find the requested resource",
                    ))
                }
            };
            match m {
                Method::GET => get(&inner, idx, &reg, &ns, &name, &q, output(&req)?),
                Method::PUT => {
                    let obj = media::decode_object(&req, &reg)?;
                    let warnings =
                        media::check_fields(&reg, &typed(&reg, &obj), q.field_validation, true)?;
                    let s = inner.update(idx, &ns, &name, obj, status_only, &wopts)?;
                    Ok(with_warnings(
                        object_response(StatusCode::OK, &s),
                        &warnings,
                    ))
                }
                Method::PATCH => {
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
                    let body = patch_body(kind, req.body())?;
                    let warnings = match (&body, kind) {
                        (Value::Object(m), PatchKind::Apply) => {
                            media::check_fields(&reg, &typed(&reg, m), q.field_validation, false)?
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
                                message: "Forbidden: may not be specified for non-apply patch"
                                    .into(),
                                field: "force".into(),
                            }],
                        ));
                    }
                    let (s, created) =
                        inner.patch(idx, &ns, &name, kind, &body, status_only, &wopts)?;
                    let code = if created {
                        StatusCode::CREATED
                    } else {
                        StatusCode::OK
                    };
                    Ok(with_warnings(object_response(code, &s), &warnings))
                }
                Method::DELETE if !status_only => {
                    let opts = delete_options(&q, &req)?;
                    let (s, pending) = inner.delete(idx, &ns, &name, &opts)?;
                    // A pending deletion answers 200 with the object, as the real server
                    // does unless orphanDependents=false was sent.
                    if pending {
                        return Ok(object_response(StatusCode::OK, &s));
                    }
                    if reg.return_deleted_object {
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
                    let status = json!({
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": {"name": name, "group": reg.group, "kind": reg.plural, "uid": uid},
                    });
                    Ok(json_response(
                        StatusCode::OK,
                        status.to_string().into_bytes(),
                    ))
                }
                other => Err(StatusError::method_not_allowed(format!(
                    "the server does not allow this method on the requested resource: {other}"
                ))),
            }
        }
        (_, other) => Err(StatusError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {other}"
        ))),
    }
}

/// GET, PUT and PATCH (JSON or merge) of the `scale` subresource.
fn scale_request(
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
            let body = patch_body(PatchKind::Merge, req.body())?;
            let mut cur = inner.get_scale(idx, ns, name)?;
            match kind {
                Some(PatchKind::Merge) | Some(PatchKind::Strategic) => {
                    super::patch::merge_patch(&mut cur, &body)
                }
                Some(PatchKind::Json) => cur = super::patch::json_patch(&cur, &body)?,
                _ => {
                    return Err(StatusError::unsupported_media_type(
                        "the scale subresource accepts application/json-patch+json, application/merge-patch+json and application/strategic-merge-patch+json",
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

/// DeleteOptions from the body, with query parameters as fallbacks.
fn delete_options(q: &Query, req: &Request<Bytes>) -> Result<DeleteOpts, StatusError> {
    let mut policy = q.propagation_policy.clone();
    let mut opts = DeleteOpts {
        grace_period_seconds: q.grace_period_seconds,
        dry_run: q.dry_run,
        ..Default::default()
    };
    if let Some(v) = media::decode_delete_options(req)? {
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

/// The object with its registration's `apiVersion` and `kind`, as a decoder sees it.
fn typed(reg: &Registration, obj: &Map<String, Value>) -> Map<String, Value> {
    let mut m = obj.clone();
    m.insert("apiVersion".into(), Value::String(reg.api_version()));
    m.insert("kind".into(), Value::String(reg.kind.clone()));
    m
}

/// Adds one `Warning` header per message.
fn with_warnings(mut r: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        if let Some(v) = media::warning_header(w) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
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

/// A custom resource as reads show it: through the current schema (pruned and
/// defaulted), since a CRD change does not rewrite stored objects.
fn read_view(reg: &Registration, mut obj: Value) -> Value {
    if let (true, Some(schema)) = (reg.custom, &reg.schema) {
        super::crd::read_view(&mut obj, schema);
    }
    obj
}

/// The response form the Accept header asks for.
fn output(req: &Request<Bytes>) -> Result<Output, StatusError> {
    table::negotiate(
        req.headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    )
}

/// A list's objects in the form `out` asks for (not plain JSON).
fn converted_list(
    reg: &Registration,
    items: &[Arc<Stored>],
    meta: Map<String, Value>,
    q: &Query,
    out: Output,
) -> Result<Response<Body>, StatusError> {
    let objects = items
        .iter()
        .map(|s| s.to_value().map(|o| read_view(reg, Value::Object(o))))
        .collect::<Result<Vec<_>, _>>()?;
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
        Output::Json => {
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

fn get(
    inner: &Inner,
    idx: usize,
    reg: &Registration,
    ns: &str,
    name: &str,
    q: &Query,
    out: Output,
) -> Result<Response<Body>, StatusError> {
    let key = super::store::storage_key(ns, name);
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

async fn list(
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
    let limit = q.limit.map(|l| l as usize);
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
