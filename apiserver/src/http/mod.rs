//! HTTP: one request in, one response out, as a real API server answers it
//! (SEMANTICS 9).
//!
//! Contract:
//! - [`handle`] routes the path ([`route`]), checks the body size, parses the query
//!   ([`crate::query`]), logs the request and lets the first matching reactor act before
//!   anything is read or written, then dispatches: discovery, OpenAPI and health to
//!   [`crate::discovery`], reads to [`read`], writes to [`write`], watches to
//!   [`crate::watch`].
//! - Every failure is a `Status` response ([`crate::response::error_response`]).
//! - A CRD version served from its storage version's objects gets its `apiVersion`
//!   rewritten on the way out ([`crate::versions`]).

mod read;
mod route;
mod write;

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::body::Body;
use crate::discovery;
use crate::errors::StatusError;
use crate::faults::RequestRecord;
use crate::media;
use crate::query::Query;
use crate::registry::{Registration, SubresourceKind};
use crate::response::{error_response, json_response, with_warnings};
use crate::server::Inner;
use crate::watch;
use crate::writes::WriteOpts;
use route::{route, Target};

/// The apiVersion whose schema validates a write (see `WriteOpts::schema_version`).
#[derive(Clone)]
struct SchemaVersion(String);

/// Answers one request: admission webhooks ([`crate::admission`]) around the server's
/// own handling.
pub(crate) async fn handle(
    inner: Arc<Inner>,
    req: Request<Bytes>,
    stop: CancellationToken,
) -> Response<Body> {
    let next = |r| serve(inner.clone(), r, stop.clone());
    crate::admission::wrap(&inner, req, next).await
}

/// Answers one request, without admission webhooks.
async fn serve(inner: Arc<Inner>, req: Request<Bytes>, stop: CancellationToken) -> Response<Body> {
    // Conversion between a CRD's versions wraps the handlers (the `versions` module).
    let mut conv = crate::versions::View::of(&inner, req.uri().path());
    let req = match &mut conv {
        Some(c) => match c.request(&inner, req).await {
            Ok(mut r) => {
                if let Some(v) = c.schema_version() {
                    r.extensions_mut().insert(SchemaVersion(v.to_owned()));
                }
                r
            }
            Err(e) => return error_response(&e),
        },
        None => req,
    };
    let warning = deprecation_warning(&inner, req.uri().path());
    let resp = respond(inner.clone(), req, stop, &mut None).await;
    // Objects the write left without owners (the `owners` module).
    inner.collect_dangling();
    let resp = match resp {
        Ok(r) => match conv {
            Some(c) => c.response(r).await,
            None => r,
        },
        Err(e) => error_response(&e),
    };
    match warning {
        Some(w) => with_warnings(resp, &[w]),
        None => resp,
    }
}

/// The warning of a deprecated CRD version a path names (before any conversion view
/// rewrites it), as kube-apiserver sends it with every answer from that version.
fn deprecation_warning(inner: &Inner, path: &str) -> Option<String> {
    let mut parts = path.strip_prefix("/apis/")?.split('/');
    let (group, version) = (parts.next()?, parts.next()?);
    let mut resource = parts.next()?;
    if resource == "namespaces" {
        resource = parts.nth(1).unwrap_or(resource);
    }
    let st = inner.state.read();
    st.collections
        .iter()
        .find(|c| c.reg.group == group && c.reg.version == version && c.reg.plural == resource)
        .and_then(|c| c.reg.deprecation_warning.clone())
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

/// The request as the log and the reactors see it, for requests on a resource.
fn record(inner: &Inner, target: &Target, verb: &str, req: &Request<Bytes>) -> RequestRecord {
    let (idx, ns, name, sub) = match target {
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
    RequestRecord {
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
    if let Some(bad) = &q.bad_field_validation {
        let options = match *req.method() {
            Method::POST => Some("CreateOptions"),
            Method::PUT => Some("UpdateOptions"),
            Method::PATCH => Some("PatchOptions"),
            _ => None,
        };
        if let Some(kind) = options {
            return Err(StatusError::invalid(
                "meta.k8s.io",
                kind,
                "",
                vec![crate::errors::StatusCause {
                    reason: crate::errors::cause::FIELD_VALUE_NOT_SUPPORTED.into(),
                    message: format!(
                        "Unsupported value: {bad:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                    field: "fieldValidation".into(),
                }],
            ));
        }
    }
    let method = req.method().clone();
    let verb = verb_of(&target, &method, q.watch);
    if !verb.is_empty() {
        let reaction = inner.faults.observe(record(&inner, &target, verb, &req));
        if let Some(d) = reaction.delay {
            tokio::time::sleep(d).await;
        }
        if let Some(e) = reaction.error {
            return Err(e);
        }
        if let Some(obj) = reaction.response {
            let code = if verb == "create" {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            return Ok(json_response(code, obj.to_string().into_bytes()));
        }
    }
    let wopts = WriteOpts {
        dry_run: q.dry_run,
        field_manager: q.field_manager.clone(),
        force: q.force,
        schema_version: req.extensions().get::<SchemaVersion>().map(|v| v.0.clone()),
        from_client: true,
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
            let doc = crate::openapi::v3_index(&regs);
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
        (Target::Api, Method::GET) if discovery::wants_aggregated(&req) => {
            Ok(discovery::aggregated(&inner, true))
        }
        (Target::Apis, Method::GET) if discovery::wants_aggregated(&req) => {
            Ok(discovery::aggregated(&inner, false))
        }
        (Target::Api, Method::GET) => Ok(json_response(StatusCode::OK, discovery::api_versions())),
        (Target::Apis, Method::GET) => Ok(json_response(StatusCode::OK, discovery::groups(&inner))),
        (Target::Group(g), Method::GET) => discovery::group(&inner, &g),
        (Target::Resources(gv), Method::GET) => Ok(json_response(
            StatusCode::OK,
            discovery::resources(&inner, &gv),
        )),
        (Target::Collection { idx, ns }, Method::GET) => {
            let out = read::output(&inner, &req, &inner.registration(idx))?;
            if q.watch {
                watch::start(inner, idx, ns, q, out, stop).await
            } else {
                read::list(&inner, idx, ns.as_deref(), &q, out).await
            }
        }
        (Target::Collection { idx, ns }, Method::POST) => {
            write::create(&inner, idx, ns.as_deref(), &q, &req, &wopts)
        }
        (Target::Collection { idx, ns }, Method::DELETE) => {
            write::delete_collection(&inner, idx, ns.as_deref(), &q, &req)
        }
        (Target::Object { idx, ns, name, sub }, m) => {
            let reg = inner.registration(idx);
            // The kind's own subresources (a CSR's `approval`, a Namespace's `finalize`).
            let own = sub.as_deref().and_then(|s| {
                let entries = reg.strategy.subresources();
                entries.iter().find(|e| e.name == s).map(|e| e.kind)
            });
            let status_only = match sub.as_deref() {
                None => false,
                Some("status") if reg.status => true,
                // `kubectl certificate approve|deny`: the CSR's status conditions.
                Some(_) if own == Some(SubresourceKind::Status) => true,
                Some(_) if own == Some(SubresourceKind::Finalize) && m == Method::PUT => {
                    return write::finalize_namespace(&inner, idx, &name, &req, &wopts);
                }
                Some("scale") if reg.scale => {
                    return write::scale(&inner, idx, &ns, &name, &m, &req, &wopts);
                }
                Some(sub) if crate::writes::actions_of(&reg).iter().any(|a| a.0 == sub) => {
                    let obj = write::ObjectRequest {
                        idx,
                        reg: &reg,
                        ns: &ns,
                        name: &name,
                        status_only: false,
                    };
                    return write::action(&inner, &obj, sub, &m, &q, &req, &wopts);
                }
                Some(_) => {
                    return Err(StatusError::new(
                        404,
                        "NotFound",
                        "the server could not find the requested resource",
                    ))
                }
            };
            let obj = write::ObjectRequest {
                idx,
                reg: &reg,
                ns: &ns,
                name: &name,
                status_only,
            };
            match m {
                Method::GET => {
                    let out = read::output(&inner, &req, &reg)?;
                    read::get(&inner, idx, &reg, &ns, &name, &q, out)
                }
                Method::PUT => write::update(&inner, &obj, &q, &req, &wopts),
                Method::PATCH => write::patch(&inner, &obj, &q, &req, &wopts),
                Method::DELETE if !status_only => write::delete(&inner, &obj, &q, &req),
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
