//! Discovery (`/api`, `/apis`, group and group-version resource lists, versions in
//! priority order), `/version`, the health endpoints, the OpenAPI endpoints and the
//! self reviews (`kubectl auth can-i`, `kubectl auth whoami`).

use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use serde_json::{json, Value};

use crate::errors::StatusError;

use super::body::Body;
use super::registry::{Registration, SubresourceKind};
use super::response::json_response;
use super::server::Inner;

/// The answer to a self review, as there is no authentication or authorization here:
/// `kubectl auth can-i` is always allowed, and `kubectl auth whoami` is an anonymous
/// user. The request's `spec` (JSON or protobuf) is echoed.
pub(crate) fn self_review(kind: &str, req: &Request<Bytes>) -> Value {
    let body = if super::media::content_type(req) == super::protobuf::MEDIA_TYPE {
        super::protobuf::decode(req.body()).ok().map(Value::Object)
    } else {
        serde_json::from_slice::<Value>(req.body()).ok()
    };
    let spec = body
        .and_then(|v| v.get("spec").cloned())
        .unwrap_or_else(|| json!({}));
    if kind == "SelfSubjectAccessReview" {
        json!({
            "kind": kind,
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {},
            "spec": spec,
            "status": {"allowed": true, "reason": "kubegen-apiserver has no authorization: everything is allowed"},
        })
    } else {
        json!({
            "kind": kind,
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {},
            "status": {"userInfo": {"username": "system:anonymous", "groups": ["system:unauthenticated"]}},
        })
    }
}

/// The Kubernetes release this server reports (the one k8s-openapi's `latest` names).
pub(crate) const GIT_VERSION: &str = "v1.37.0-kubegen";

fn text_response(code: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(Body::full(body.into_bytes()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut().insert(
        header::HeaderName::from_static("x-content-type-options"),
        header::HeaderValue::from_static("nosniff"),
    );
    r
}

/// `/healthz`, `/readyz`, `/livez` (and `/<which>/<check>`), as kube-apiserver answers:
/// `ok`, or with `?verbose` one `[+]<check> ok` line per check and `<which> check
/// passed`. After shutdown began, readyz's `shutdown` check fails (500).
pub(crate) fn health(
    inner: &Inner,
    which: &str,
    check: Option<&str>,
    query: Option<&str>,
) -> Response<Body> {
    let mut checks = vec!["ping", "log"];
    if which == "readyz" {
        checks.push("shutdown");
    }
    let failed = |c: &str| c == "shutdown" && inner.shutdown.is_cancelled();
    if let Some(c) = check {
        return if !checks.contains(&c) {
            text_response(StatusCode::NOT_FOUND, "404 page not found\n".into())
        } else if failed(c) {
            text_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal server error: reason withheld\n".into(),
            )
        } else {
            text_response(StatusCode::OK, "ok".into())
        };
    }
    let verbose = query
        .unwrap_or_default()
        .split('&')
        .any(|p| p == "verbose" || p.starts_with("verbose="));
    let bad = checks.iter().any(|c| failed(c));
    if !verbose && !bad {
        return text_response(StatusCode::OK, "ok".into());
    }
    let mut out = String::new();
    for c in &checks {
        if failed(c) {
            out.push_str(&format!("[-]{c} failed: reason withheld\n"));
        } else {
            out.push_str(&format!("[+]{c} ok\n"));
        }
    }
    if bad {
        out.push_str(&format!("{which} check failed\n"));
        text_response(StatusCode::INTERNAL_SERVER_ERROR, out)
    } else {
        out.push_str(&format!("{which} check passed\n"));
        text_response(StatusCode::OK, out)
    }
}

/// `/openapi/v2`: protobuf when asked for it (with no definitions), else JSON.
pub(crate) fn openapi_v2(inner: &Inner, req: &Request<Bytes>) -> Response<Body> {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if accept.contains(super::openapi::V2_PROTOBUF) {
        let mut r = Response::new(Body::full(super::openapi::v2_protobuf()));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(super::openapi::V2_PROTOBUF),
        );
        return r;
    }
    let st = inner.state.read();
    let regs: Vec<&Registration> = st
        .collections
        .iter()
        .filter(|c| c.served)
        .map(|c| &*c.reg)
        .collect();
    let doc = super::openapi::v2_document(&regs);
    json_response(StatusCode::OK, doc.to_string().into_bytes())
}

/// `/openapi/v3/<gv>`: the group-version's document; immutable when the hash matches.
pub(crate) fn openapi_v3(
    inner: &Inner,
    gv: &str,
    query: Option<&str>,
) -> Result<Response<Body>, StatusError> {
    let doc = {
        let st = inner.state.read();
        let regs: Vec<&Registration> = st
            .collections
            .iter()
            .filter(|c| c.served)
            .map(|c| &*c.reg)
            .collect();
        super::openapi::v3_document(&regs, gv)
    };
    let doc = doc.ok_or_else(|| {
        StatusError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    })?;
    let hash = super::openapi::hash(&doc);
    let asked = query
        .unwrap_or_default()
        .split('&')
        .find_map(|p| p.strip_prefix("hash="));
    let mut r = json_response(StatusCode::OK, doc.to_string().into_bytes());
    let cache = if asked == Some(hash.as_str()) {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static(cache),
    );
    if let Ok(v) = header::HeaderValue::from_str(&format!("\"{hash}\"")) {
        r.headers_mut().insert(header::ETAG, v);
    }
    Ok(r)
}

pub(crate) fn version() -> Vec<u8> {
    json!({
        "major": "1",
        "minor": "37",
        "emulationMajor": "1",
        "emulationMinor": "37",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "36",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
    .to_string()
    .into_bytes()
}

pub(crate) fn api_versions() -> Vec<u8> {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:0"}]
    })
    .to_string()
    .into_bytes()
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

fn group_versions(inner: &Inner) -> Vec<(String, Vec<String>)> {
    let st = inner.state.read();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for c in st.collections.iter().filter(|c| c.served) {
        if c.reg.group.is_empty() {
            continue;
        }
        match out.iter_mut().find(|(g, _)| *g == c.reg.group) {
            Some((_, vs)) => {
                if !vs.contains(&c.reg.version) {
                    vs.push(c.reg.version.clone());
                }
            }
            None => out.push((c.reg.group.clone(), vec![c.reg.version.clone()])),
        }
    }
    // Discovery lists versions by priority; the first is the preferred one.
    for (_, vs) in &mut out {
        vs.sort_by(|a, b| super::registry::version_priority(a, b));
    }
    out
}

pub(crate) fn groups(inner: &Inner) -> Vec<u8> {
    let gs: Vec<Value> = group_versions(inner)
        .iter()
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
        .to_string()
        .into_bytes()
}

pub(crate) fn group(inner: &Inner, name: &str) -> Result<Response<Body>, StatusError> {
    let gv = group_versions(inner);
    let (g, vs) = gv.iter().find(|(g, _)| g == name).ok_or_else(|| {
        StatusError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    })?;
    let mut v = group_json(g, vs);
    if let Some(m) = v.as_object_mut() {
        m.insert("kind".into(), json!("APIGroup"));
        m.insert("apiVersion".into(), json!("v1"));
    }
    Ok(json_response(StatusCode::OK, v.to_string().into_bytes()))
}

pub(crate) fn resources(inner: &Inner, gv: &str) -> Vec<u8> {
    let rs = resource_entries(inner, gv);
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": rs})
        .to_string()
        .into_bytes()
}

/// The `APIResource` entries of a group version: each resource, then its subresources.
fn resource_entries(inner: &Inner, gv: &str) -> Vec<Value> {
    let st = inner.state.read();
    let mut rs = Vec::new();
    for c in st
        .collections
        .iter()
        .filter(|c| c.served && c.reg.api_version() == gv)
    {
        let r = &c.reg;
        rs.push(json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": r.short_names,
            "categories": r.categories,
        }));
        // The subresources that read and write (part of) the object itself.
        let own = r.strategy.subresources().iter();
        let entries = r
            .status
            .then_some(("status", SubresourceKind::Status))
            .into_iter()
            .chain(own.map(|e| (e.name, e.kind)));
        for (sub, kind) in entries {
            let verbs = match kind {
                SubresourceKind::Status => json!(["get", "patch", "update"]),
                SubresourceKind::Finalize => json!(["update"]),
            };
            rs.push(json!({
                "name": format!("{}/{sub}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": verbs,
            }));
        }
        for (sub, group, version, kind) in crate::writes::actions_of(r) {
            rs.push(json!({
                "name": format!("{}/{sub}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "group": group,
                "version": version,
                "kind": kind,
                "verbs": ["create"],
            }));
        }
        if r.scale {
            rs.push(json!({
                "name": format!("{}/scale", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    rs
}

/// The media type of aggregated discovery (kubectl 1.30+ and client-go ask for it
/// first, and read the answer as one when its Content-Type says so).
pub(crate) const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether a request asks for aggregated discovery (`apidiscovery.k8s.io/v2`).
pub(crate) fn wants_aggregated(req: &Request<Bytes>) -> bool {
    req.headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|m| {
            let params: Vec<&str> = m.split(';').map(str::trim).collect();
            params.contains(&"g=apidiscovery.k8s.io")
                && params.contains(&"v=v2")
                && params.contains(&"as=APIGroupDiscoveryList")
        })
}

/// `GET /api` (`core`) or `/apis` as an `APIGroupDiscoveryList`: every group with
/// its versions (by priority) and each version's resources and subresources.
pub(crate) fn aggregated(inner: &Inner, core: bool) -> Response<Body> {
    let groups = if core {
        vec![(String::new(), vec!["v1".to_owned()])]
    } else {
        group_versions(inner)
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| {
                    let gv = if g.is_empty() {
                        v.clone()
                    } else {
                        format!("{g}/{v}")
                    };
                    let resources = discovery_resources(&resource_entries(inner, &gv));
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g}, "versions": versions})
        })
        .collect();
    let body = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {}, "items": items});
    let mut r = json_response(StatusCode::OK, body.to_string().into_bytes());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(AGGREGATED),
    );
    r
}

/// `APIResource` entries in aggregated discovery's shape: one per resource, its
/// subresources inside it.
/// As kube-apiserver, a response kind names a group and version only when they are
/// not the resource's own.
fn discovery_resources(entries: &[Value]) -> Vec<Value> {
    let s = |e: &Value, k: &str| e[k].as_str().unwrap_or_default().to_owned();
    let kind_of = |e: &Value| json!({"group": s(e, "group"), "version": s(e, "version"), "kind": s(e, "kind")});
    let mut out: Vec<Value> = Vec::new();
    for e in entries {
        let name = s(e, "name");
        match name.split_once('/') {
            None => {
                let scope = if e["namespaced"] == true {
                    "Namespaced"
                } else {
                    "Cluster"
                };
                let mut r = json!({"resource": name, "responseKind": kind_of(e), "scope": scope,
                    "singularResource": s(e, "singularName"), "verbs": e["verbs"]});
                for k in ["shortNames", "categories"] {
                    if e[k].as_array().is_some_and(|a| !a.is_empty()) {
                        r[k] = e[k].clone();
                    }
                }
                out.push(r);
            }
            Some((parent, sub)) => {
                let entry =
                    json!({"subresource": sub, "responseKind": kind_of(e), "verbs": e["verbs"]});
                if let Some(p) = out.iter_mut().find(|r| r["resource"] == parent) {
                    match p["subresources"].as_array_mut() {
                        Some(list) => list.push(entry),
                        None => p["subresources"] = json!([entry]),
                    }
                }
            }
        }
    }
    out
}
