//! Admission webhooks: the server calls the webhooks of the stored
//! `admissionregistration.k8s.io/v1` Mutating- and ValidatingWebhookConfigurations on
//! every create, update, patch and delete they match, as kube-apiserver's admission
//! chain does (its `webhook/mutating` and `webhook/validating` dispatchers).
//!
//! Contract:
//! - Writes no webhook matches are served untouched (one read of the configurations).
//! - Mutating webhooks run first, one after the other in configuration-name order; each
//!   sees the object as the previous one left it and its JSON patch is applied. When a
//!   webhook changed the object after a webhook with `reinvocationPolicy: IfNeeded` ran,
//!   that one is called once more. Then every validating webhook is called with the
//!   object as it will be stored; the first denial (in order) is the answer.
//! - The object a webhook sees is the one the write produces: the server's own
//!   defaulting, patching and validation come first (a dry run of the request). This
//!   differs from kube-apiserver, whose mutating webhooks run before its validation, so
//!   here a mutating webhook cannot repair an object the server itself refuses.
//! - An update is admitted against the stored object it replaces: when the client sent
//!   no resourceVersion the write is made conditional on the one read, and a concurrent
//!   write makes the server admit again (up to five times), as kube-apiserver's
//!   `GuaranteedUpdate` does. A write a mutating webhook changed is stored as a create or
//!   update of the mutated object by the request's field manager.
//! - Warnings of every webhook become `Warning` headers of the response; a denial is the
//!   webhook's Status (see [`review`]); a dry-run request gets `dryRun: true` and stores
//!   nothing.
//! - `matchPolicy: Equivalent` (the default): a webhook whose rules name another served
//!   version of the resource (a CRD's, or a built-in kind's served at several versions)
//!   is called at that version, the objects converted to it and its patch converted
//!   back; `requestKind` and `requestResource` keep the version asked for.
//! - `matchConditions` (CEL over `object`, `oldObject`, `request`) are evaluated after
//!   the rules and selectors, on the objects at the webhook's version: a false one skips
//!   the webhook, an error is a failed call (403 under `failurePolicy: Fail`).
//! - Not done: the `authorizer` CEL variable, webhooks on `deletecollection` and on the
//!   POST subresources (`eviction`, `binding`), ValidatingAdmissionPolicy.
//!
//! The whole of it wraps the HTTP handler (`http::handle`): it sees requests and
//! responses only, and asks the server what it needs through further requests.

mod config;
mod review;

use std::collections::BTreeMap;
use std::future::Future;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};

use crate::body::Body;
use crate::conversion::Conversion;
use crate::errors::StatusError;
use crate::response::{error_response, with_warnings};
use crate::server::Inner;
use config::Hook;

/// The admission operation of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// What webhooks are told about a request (kube-apiserver's `admission.Attributes`).
#[derive(Debug, Clone)]
pub(crate) struct Attributes {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub kind: String,
    /// The version the request names (`version` is the one a webhook is called at).
    pub request_version: String,
    pub namespace: String,
    pub name: String,
    pub namespaced: bool,
    pub operation: Operation,
    pub dry_run: bool,
    /// CreateOptions, UpdateOptions, PatchOptions or DeleteOptions.
    pub options: Value,
}

impl Attributes {
    /// The same request at another version of the resource.
    pub(crate) fn at_version(&self, version: &str) -> Attributes {
        Attributes {
            version: version.to_owned(),
            ..self.clone()
        }
    }

    fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.resource == "namespaces" && self.subresource.is_empty()
    }
}

/// Serves `req` through `next` (the server's own handler), calling the admission
/// webhooks it matches.
pub(crate) async fn wrap<F, Fut>(inner: &Inner, req: Request<Bytes>, next: F) -> Response<Body>
where
    F: Fn(Request<Bytes>) -> Fut,
    Fut: Future<Output = Response<Body>>,
{
    if !matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return next(req).await;
    }
    let hooks = config::load(inner);
    if hooks.mutating.is_empty() && hooks.validating.is_empty() {
        return next(req).await;
    }
    let Some(a) = attributes(inner, &req) else {
        return next(req).await;
    };
    let (versions, conversion) = equivalents(inner, &a);
    let mutating: Vec<Hook> = hooks
        .mutating
        .iter()
        .filter_map(|h| h.clone().matching(&a, &versions))
        .collect();
    let validating: Vec<Hook> = hooks
        .validating
        .iter()
        .filter_map(|h| h.clone().matching(&a, &versions))
        .collect();
    if mutating.is_empty() && validating.is_empty() {
        return next(req).await;
    }
    let chain = Chain {
        inner,
        mutating,
        validating,
        conversion,
    };
    match chain.admit(a, req, &next).await {
        Ok(r) | Err(r) => r,
    }
}

/// The matching webhooks of one request.
struct Chain<'a> {
    inner: &'a Inner,
    mutating: Vec<Hook>,
    validating: Vec<Hook>,
    /// How objects convert between the resource's versions (`matchPolicy: Equivalent`).
    conversion: Conversion,
}

/// The other served versions of the request's resource that share its objects (a CRD's
/// versions, a built-in kind served at several versions), and how to convert to them.
fn equivalents(inner: &Inner, a: &Attributes) -> (Vec<String>, Conversion) {
    let st = inner.state.read();
    let av = if a.group.is_empty() {
        a.version.clone()
    } else {
        format!("{}/{}", a.group, a.version)
    };
    let Some(reg) = st.lookup(&av, &a.resource).map(|i| &st.collections[i].reg) else {
        return (Vec::new(), Conversion::None);
    };
    if !reg.custom && !matches!(reg.conversion, Conversion::Builtin(_)) {
        return (Vec::new(), Conversion::None);
    }
    let versions = st
        .collections
        .iter()
        .filter(|c| c.served && c.reg.group == a.group && c.reg.plural == a.resource)
        .map(|c| c.reg.version.clone())
        .filter(|v| *v != a.version)
        .collect();
    (versions, reg.conversion.clone())
}

/// A response to give the client now (an error, or the server's own refusal).
type Early = Response<Body>;

impl Chain<'_> {
    async fn admit<F, Fut>(
        &self,
        mut a: Attributes,
        req: Request<Bytes>,
        next: &F,
    ) -> Result<Response<Body>, Early>
    where
        F: Fn(Request<Bytes>) -> Fut,
        Fut: Future<Output = Response<Body>>,
    {
        let path = req.uri().path().to_owned();
        for _ in 0..5 {
            // A POST names the collection: there is no old object.
            let old = if *req.method() == Method::POST {
                None
            } else {
                get(next, &path).await?
            };
            if a.operation == Operation::Delete {
                let Some(old) = old else {
                    return Ok(next(req).await);
                };
                let warnings = self.run(&a, None, Some(&old)).await.map_err(fail)?.1;
                return Ok(with_warnings(next(req).await, &warnings));
            }
            if old.is_none() && *req.method() == Method::PATCH {
                // An apply patch that creates the object.
                a.operation = Operation::Create;
            }
            let old_rv = old
                .as_ref()
                .and_then(|o| o.pointer("/metadata/resourceVersion"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let (write, conditional) = match &old_rv {
                Some(rv) => with_resource_version(&req, rv),
                None => (clone(&req), false),
            };
            let (dry, mut object) = served(next, dry_run(&write)).await?;
            if a.operation == Operation::Create {
                strip_server_set(&mut object);
            }
            let (mutated, mut warnings) = self
                .mutate(&a, object.clone(), old.as_ref())
                .await
                .map_err(fail)?;
            let (write, dry) = if mutated != object {
                let w = rewrite(&a, &write, &path, mutated, old_rv.as_deref());
                let d = served(next, dry_run(&w)).await?;
                (w, d)
            } else {
                (write, (dry, object))
            };
            let (validated_dry, validated) = dry;
            warnings.extend(
                self.validate(&a, &validated, old.as_ref())
                    .await
                    .map_err(fail)?,
            );
            if a.dry_run {
                return Ok(with_warnings(validated_dry, &warnings));
            }
            let out = next(write).await;
            if out.status() == StatusCode::CONFLICT && conditional {
                continue;
            }
            return Ok(with_warnings(out, &warnings));
        }
        Err(fail(StatusError::new(
            409,
            "Conflict",
            "the object kept changing while its admission webhooks were called; try again",
        )))
    }

    /// The mutating webhooks over `object`: the object they leave and their warnings.
    async fn mutate(
        &self,
        a: &Attributes,
        mut object: Value,
        old: Option<&Value>,
    ) -> Result<(Value, Vec<String>), StatusError> {
        let ns = self.namespace_labels(a);
        let mut warnings = Vec::new();
        // How many changes the object had seen when each webhook last ran.
        let mut seen: Vec<Option<usize>> = vec![None; self.mutating.len()];
        let mut changes = 0;
        for (i, hook) in self.mutating.iter().enumerate() {
            if !selects(hook, a, Some(&object), old, &ns)? {
                continue;
            }
            changes += self
                .mutate_once(hook, a, &mut object, old, &mut warnings)
                .await?;
            seen[i] = Some(changes);
        }
        for (i, hook) in self.mutating.iter().enumerate() {
            let stale = seen[i].is_some_and(|at| at < changes);
            if hook.reinvoke && stale && selects(hook, a, Some(&object), old, &ns)? {
                self.mutate_once(hook, a, &mut object, old, &mut warnings)
                    .await?;
            }
        }
        Ok((object, warnings))
    }

    /// One mutating call; 1 when it changed the object.
    async fn mutate_once(
        &self,
        hook: &Hook,
        a: &Attributes,
        object: &mut Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<usize, StatusError> {
        let sent = (a.operation != Operation::Delete).then_some(&*object);
        let (at, sent, old) = self.at_version(hook, a, sent, old).await?;
        let allowed = review::call(hook, &at, sent.as_ref(), old.as_ref()).await?;
        warnings.extend(allowed.warnings);
        let Some(ops) = allowed.patch.filter(|_| a.operation != Operation::Delete) else {
            return Ok(0);
        };
        let patched =
            crate::patch::json_patch(sent.as_ref().unwrap_or(object), &ops).map_err(|e| {
                StatusError::internal(format!(
                    "the patch of admission webhook {:?} does not apply: {}",
                    hook.name,
                    e.message()
                ))
            })?;
        let patched = match &hook.call_version {
            Some(_) => {
                self.convert(patched, &api_version(&a.group, &a.version))
                    .await?
            }
            None => patched,
        };
        let changed = usize::from(patched != *object);
        *object = patched;
        Ok(changed)
    }

    /// Every validating webhook; the first denial in order wins, as kube-apiserver
    /// calls them all at once and reports the first.
    async fn validate(
        &self,
        a: &Attributes,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<Vec<String>, StatusError> {
        let ns = self.namespace_labels(a);
        let object = (a.operation != Operation::Delete).then_some(object);
        let mut warnings = Vec::new();
        let mut first = None;
        for hook in &self.validating {
            if !selects(hook, a, object, old, &ns)? {
                continue;
            }
            let (at, object, old) = self.at_version(hook, a, object, old).await?;
            match review::call(hook, &at, object.as_ref(), old.as_ref()).await {
                Ok(allowed) => warnings.extend(allowed.warnings),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        match first {
            Some(e) => Err(e),
            None => Ok(warnings),
        }
    }

    /// The request and its objects as `hook` is to see them: at the version its rules
    /// name (`matchPolicy: Equivalent`), else as they are.
    async fn at_version(
        &self,
        hook: &Hook,
        a: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(Attributes, Option<Value>, Option<Value>), StatusError> {
        let Some(v) = &hook.call_version else {
            return Ok((a.clone(), object.cloned(), old.cloned()));
        };
        let desired = api_version(&a.group, v);
        let mut converted = [None, None];
        for (slot, o) in converted.iter_mut().zip([object, old]) {
            if let Some(o) = o {
                *slot = Some(self.convert(o.clone(), &desired).await?);
            }
        }
        let [object, old] = converted;
        Ok((a.at_version(v), object, old))
    }

    /// `o` converted to `desired` (`group/version`).
    async fn convert(&self, o: Value, desired: &str) -> Result<Value, StatusError> {
        let Value::Object(m) = o else {
            return Ok(o);
        };
        let mut objects = [m];
        crate::conversion::convert(&self.conversion, desired, &mut objects, false)
            .await
            .map_err(|e| StatusError::internal(e.0))?;
        let [m] = objects;
        Ok(Value::Object(m))
    }

    /// Calls mutating then validating webhooks about a deletion.
    async fn run(
        &self,
        a: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(Value, Vec<String>), StatusError> {
        let (object, mut warnings) = self
            .mutate(a, object.cloned().unwrap_or(Value::Null), old)
            .await?;
        warnings.extend(self.validate(a, &object, old).await?);
        Ok((object, warnings))
    }

    /// The labels of the request's namespace (none when it is not stored).
    fn namespace_labels(&self, a: &Attributes) -> BTreeMap<String, String> {
        if !a.namespaced {
            return BTreeMap::new();
        }
        let st = self.inner.state.read();
        let ns = st.lookup("v1", "namespaces").and_then(|i| {
            st.collections[i]
                .objects
                .get(&crate::store::storage_key("", &a.namespace))
                .and_then(|s| s.to_value().ok())
        });
        config::labels_of(ns.map(Value::Object).as_ref())
    }
}

fn selects(
    hook: &Hook,
    a: &Attributes,
    object: Option<&Value>,
    old: Option<&Value>,
    ns: &BTreeMap<String, String>,
) -> Result<bool, StatusError> {
    hook.selects(a, object, old, ns)
        .map_err(|e| StatusError::internal(format!("failed calling webhook {:?}: {e}", hook.name)))
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

fn fail(e: StatusError) -> Early {
    error_response(&e)
}

/// What a request names, when it is a write webhooks can see.
fn attributes(inner: &Inner, req: &Request<Bytes>) -> Option<Attributes> {
    let segs: Vec<String> = req
        .uri()
        .path()
        .trim_matches('/')
        .split('/')
        .map(crate::query::percent_decode)
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let av = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let st = inner.state.read();
    let served = |plural: &str| st.lookup(&av, plural);
    let (namespace, resource, name, sub) = match rest {
        ["namespaces", ns, plural, tail @ ..] if served(plural).is_some() => {
            (*ns, *plural, tail.first().copied(), tail.get(1).copied())
        }
        [plural, tail @ ..] => ("", *plural, tail.first().copied(), tail.get(1).copied()),
        _ => return None,
    };
    if rest.len() > 5 || [config::MUTATING, config::VALIDATING].contains(&resource) {
        return None;
    }
    let reg = &st.collections[served(resource)?].reg;
    let (name, sub) = (name.unwrap_or_default(), sub.unwrap_or_default());
    let operation = match (req.method(), name.is_empty(), sub) {
        (&Method::POST, true, _) => Operation::Create,
        (&Method::PUT | &Method::PATCH, false, _) => Operation::Update,
        (&Method::DELETE, false, "") => Operation::Delete,
        _ => return None,
    };
    let q = crate::query::Query::parse(req.uri().query()).ok()?;
    let name = if operation == Operation::Create {
        body_name(req)
    } else {
        name.to_owned()
    };
    let mut a = Attributes {
        group: group.to_owned(),
        version: version.to_owned(),
        resource: resource.to_owned(),
        subresource: sub.to_owned(),
        kind: reg.kind.clone(),
        request_version: version.to_owned(),
        // A Namespace's own admission names it as its namespace, as kube-apiserver does.
        namespace: if reg.namespaced || (group.is_empty() && resource == "namespaces") {
            if reg.namespaced {
                namespace.to_owned()
            } else {
                name.clone()
            }
        } else {
            String::new()
        },
        name,
        namespaced: reg.namespaced,
        operation,
        dry_run: q.dry_run,
        options: Value::Null,
    };
    a.options = options(&a, req, &q);
    Some(a)
}

/// The name a create's body gives (empty when it has a generateName, or is not JSON).
fn body_name(req: &Request<Bytes>) -> String {
    serde_json::from_slice::<Value>(req.body())
        .ok()
        .and_then(|v| {
            v.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// The options object of the request, as webhooks get it.
fn options(a: &Attributes, req: &Request<Bytes>, q: &crate::query::Query) -> Value {
    let kind = match (a.operation, req.method()) {
        (Operation::Delete, _) => "DeleteOptions",
        (_, &Method::PATCH) => "PatchOptions",
        (Operation::Create, _) => "CreateOptions",
        (Operation::Update, _) => "UpdateOptions",
    };
    let mut o = if a.operation == Operation::Delete {
        serde_json::from_slice::<Value>(req.body())
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}))
    } else {
        json!({})
    };
    o["kind"] = json!(kind);
    o["apiVersion"] = json!("meta.k8s.io/v1");
    if q.dry_run {
        o["dryRun"] = json!(["All"]);
    }
    if let Some(m) = &q.field_manager {
        if a.operation != Operation::Delete {
            o["fieldManager"] = json!(m);
        }
    }
    if q.force && kind == "PatchOptions" {
        o["force"] = json!(true);
    }
    o
}

fn clone(req: &Request<Bytes>) -> Request<Bytes> {
    let mut out = Request::new(req.body().clone());
    *out.method_mut() = req.method().clone();
    *out.uri_mut() = req.uri().clone();
    *out.headers_mut() = req.headers().clone();
    out
}

/// The request with `query` as its query string.
fn with_query(req: Request<Bytes>, query: &str) -> Request<Bytes> {
    let (mut parts, body) = req.into_parts();
    let pq = if query.is_empty() {
        parts.uri.path().to_owned()
    } else {
        format!("{}?{query}", parts.uri.path())
    };
    if let Ok(uri) = pq.parse() {
        parts.uri = uri;
    }
    Request::from_parts(parts, body)
}

/// The request as a dry run answered in JSON.
fn dry_run(req: &Request<Bytes>) -> Request<Bytes> {
    let query = req.uri().query().unwrap_or_default();
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("dryRun="))
        .chain(["dryRun=All"])
        .collect();
    let mut out = with_query(clone(req), &kept.join("&"));
    out.headers_mut()
        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    out
}

/// The write made conditional on `rv` when the client set no resourceVersion (a JSON
/// body only); `true` when it was.
fn with_resource_version(req: &Request<Bytes>, rv: &str) -> (Request<Bytes>, bool) {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let body: Option<Value> = if ct.starts_with("application/apply-patch+yaml") {
        serde_yaml::from_slice(req.body()).ok()
    } else {
        serde_json::from_slice(req.body()).ok()
    };
    let Some(mut body) = body else {
        return (clone(req), false);
    };
    match &mut body {
        Value::Array(ops) if ct.starts_with("application/json-patch+json") => {
            ops.push(json!({"op": "add", "path": "/metadata/resourceVersion", "value": rv}));
        }
        Value::Object(m) => {
            let meta = m.entry("metadata").or_insert_with(|| json!({}));
            let Some(meta) = meta.as_object_mut() else {
                return (clone(req), false);
            };
            let set = meta
                .get("resourceVersion")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            if set {
                return (clone(req), false);
            }
            meta.insert("resourceVersion".into(), json!(rv));
        }
        _ => return (clone(req), false),
    }
    let mut out = clone(req);
    *out.body_mut() = Bytes::from(body.to_string());
    (out, true)
}

/// Metadata kube-apiserver sets after mutating admission on a create.
fn strip_server_set(o: &mut Value) {
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["uid", "creationTimestamp", "resourceVersion", "generation"] {
            m.remove(k);
        }
    }
}

/// The write of the object a mutating webhook changed: a create (POST to the
/// collection) or an update (PUT, conditional on the stored resourceVersion).
fn rewrite(
    a: &Attributes,
    req: &Request<Bytes>,
    path: &str,
    mut object: Value,
    old_rv: Option<&str>,
) -> Request<Bytes> {
    let (method, path) = if a.operation == Operation::Create {
        if let Some(m) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        let collection = if *req.method() == Method::PATCH {
            path.rsplit_once('/').map(|(c, _)| c).unwrap_or(path)
        } else {
            path
        };
        (Method::POST, collection.to_owned())
    } else {
        if let (Some(rv), Some(m)) = (
            old_rv,
            object.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            m.insert("resourceVersion".into(), json!(rv));
        }
        (Method::PUT, path.to_owned())
    };
    let query: Vec<&str> = req
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("force="))
        .collect();
    let mut out = Request::new(Bytes::from(object.to_string()));
    *out.method_mut() = method;
    *out.headers_mut() = req.headers().clone();
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out.headers_mut().remove(header::CONTENT_LENGTH);
    let pq = if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    };
    if let Ok(uri) = pq.parse() {
        *out.uri_mut() = uri;
    }
    out
}

/// The stored object at `path` (`None` when there is none).
async fn get<F, Fut>(next: &F, path: &str) -> Result<Option<Value>, Early>
where
    F: Fn(Request<Bytes>) -> Fut,
    Fut: Future<Output = Response<Body>>,
{
    let mut req = Request::new(Bytes::new());
    if let Ok(uri) = path.parse() {
        *req.uri_mut() = uri;
    }
    req.headers_mut()
        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    let resp = next(req).await;
    if resp.status() == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    served(next, Pending::Response(resp))
        .await
        .map(|(_, v)| Some(v))
}

/// A request to send, or the answer already in hand.
enum Pending {
    Request(Request<Bytes>),
    Response(Response<Body>),
}

impl From<Request<Bytes>> for Pending {
    fn from(r: Request<Bytes>) -> Self {
        Pending::Request(r)
    }
}

/// The server's answer and its JSON object; a failure answer is given to the client.
async fn served<F, Fut>(next: &F, req: impl Into<Pending>) -> Result<(Response<Body>, Value), Early>
where
    F: Fn(Request<Bytes>) -> Fut,
    Fut: Future<Output = Response<Body>>,
{
    let resp = match req.into() {
        Pending::Request(r) => next(r).await,
        Pending::Response(r) => r,
    };
    if !resp.status().is_success() {
        return Err(resp);
    }
    let (parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(c) => c.to_bytes(),
        Err(never) => match never {},
    };
    let value = serde_json::from_slice(&bytes).map_err(|e| {
        fail(StatusError::internal(format!(
            "admission: the server's answer is not JSON: {e}"
        )))
    })?;
    Ok((Response::from_parts(parts, Body::full(bytes)), value))
}
