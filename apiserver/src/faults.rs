//! Fault injection and the request log, for tests.
//!
//! Contract:
//! - Every request the server answers is logged (verb, resource, subresource,
//!   namespace, name, body) before any reactor runs; the log is kept until cleared.
//! - A [`Reactor`] matches a verb (`get`, `list`, `watch`, `create`, `update`, `patch`,
//!   `delete`, `deletecollection`, or `*`), a resource (plural, or `*`), optionally a
//!   subresource, a name, a part of the body, query parameters and a predicate over the
//!   whole request; the first reactor that matches, still has uses left and handles the
//!   request acts: it delays the request, then fails it with its `Status` or answers
//!   with its object (the server's storage is not touched), or lets the server answer.
//!   A reaction function ([`Reactor::reaction`]) may decline (client-go's
//!   `handled == false`): the next matching reactor is consulted, and the declined one's
//!   uses are not counted. Reactors added first are consulted first.
//! - [`ApiServer::drop_watches`](super::ApiServer::drop_watches) ends every watch open at
//!   that moment (the client sees the body end, as on a dropped connection); it is a
//!   clean cut: such a watch may still deliver changes written before the call, never
//!   one written after it returned;
//!   [`ApiServer::expire_next_watch`](super::ApiServer::expire_next_watch) makes the next
//!   watch answer with a 410 Expired ERROR event and end;
//!   [`ApiServer::expire_watches_up_to`](super::ApiServer::expire_watches_up_to) does so
//!   for every watch from a resourceVersion at or below a bound, until cleared.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::errors::StatusError;
use crate::query::percent_decode;

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection` (as in Kubernetes audit logs and RBAC).
    pub verb: String,
    /// The plural resource (`pods`).
    pub resource: String,
    /// The subresource (`status`), empty if none.
    pub subresource: String,
    /// The namespace, empty for cluster-scoped or all-namespace requests.
    pub namespace: String,
    /// The object's name, empty for collections.
    pub name: String,
    /// The Content-Type header, empty if none.
    pub content_type: String,
    /// The query string, without `?`.
    pub query: String,
    /// The request body parsed as JSON, if it had one.
    pub body: Option<Value>,
}

/// Which requests a [`Reactor`] acts on and what it does.
///
/// ```
/// use std::time::Duration;
/// use kubegen_apiserver::errors::StatusError;
/// use kubegen_apiserver::Reactor;
/// use serde_json::json;
///
/// // Fail the first two updates of `web` that set three replicas.
/// let r = Reactor::new("update", "deployments")
///     .name("web")
///     .body_contains(json!({"spec": {"replicas": 3}}))
///     .times(2)
///     .error(StatusError::too_many_requests("slow down", 1))
///     .delay(Duration::from_millis(10));
/// assert_eq!(r.verb, "update");
///
/// // Answer dry-run creates with a fixed object, without storing anything.
/// let r = Reactor::new("create", "configmaps")
///     .query_param("dryRun", "All")
///     .respond(json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}}));
/// ```
#[derive(Debug, Clone)]
pub struct Reactor {
    /// The verb it matches, or `*`.
    pub verb: String,
    /// The plural resource it matches, or `*`.
    pub resource: String,
    /// The subresource it matches; `None` matches any.
    pub subresource: Option<String>,
    /// The name it matches; `None` matches any.
    pub name: Option<String>,
    /// How many more times it acts; `None`: always.
    pub remaining: Option<usize>,
    /// The error it answers with.
    pub error: Option<StatusError>,
    /// How long it delays the request.
    pub delay: Option<Duration>,
    /// A JSON value the request body must contain (see [`Reactor::body_contains`]).
    body: Option<Value>,
    /// Query parameters the request must carry, decoded.
    query: Vec<(String, String)>,
    /// A predicate over the whole request.
    when: Option<Predicate>,
    /// The object it answers with.
    response: Option<Value>,
    /// A reaction function deciding per request.
    reaction: Option<ReactionFn>,
}

/// What a reaction function decides for one request it matched (client-go's
/// `ReactionFunc` result `(handled, ret, err)`).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Not handled: the next matching reactor, or the server, answers.
    Pass,
    /// Handled: answer with this object (200, 201 for `create`); storage is untouched.
    Object(Value),
    /// Handled: fail with this error.
    Error(StatusError),
}

type PredicateFn = dyn Fn(&RequestRecord) -> bool + Send + Sync;
type ReactionFnDyn = dyn Fn(&RequestRecord) -> Answer + Send + Sync;

#[derive(Clone)]
struct Predicate(Arc<PredicateFn>);

impl std::fmt::Debug for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Predicate(..)")
    }
}

#[derive(Clone)]
struct ReactionFn(Arc<ReactionFnDyn>);

impl std::fmt::Debug for ReactionFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReactionFn(..)")
    }
}

impl Reactor {
    /// A reactor for a verb and resource that does nothing until told to.
    pub fn new(verb: &str, resource: &str) -> Self {
        Reactor {
            verb: verb.into(),
            resource: resource.into(),
            subresource: None,
            name: None,
            remaining: None,
            error: None,
            delay: None,
            body: None,
            query: Vec::new(),
            when: None,
            response: None,
            reaction: None,
        }
    }

    /// Only for this object name.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Only for this subresource (`status`).
    pub fn subresource(mut self, sub: &str) -> Self {
        self.subresource = Some(sub.into());
        self
    }

    /// Only for requests whose JSON body contains `part`: every key of an object in
    /// `part` is in the body's object at the same place with a value that contains
    /// the pattern's; arrays and scalars compare equal. A request without a body, or
    /// with one that is not JSON, does not match.
    pub fn body_contains(mut self, part: Value) -> Self {
        self.body = Some(part);
        self
    }

    /// Only for requests whose query carries `key=value` (after percent-decoding);
    /// call it again for more parameters (all must be there).
    pub fn query_param(mut self, key: &str, value: &str) -> Self {
        self.query.push((key.into(), value.into()));
        self
    }

    /// Only for requests `f` accepts (anything the [`RequestRecord`] holds).
    pub fn when(mut self, f: impl Fn(&RequestRecord) -> bool + Send + Sync + 'static) -> Self {
        self.when = Some(Predicate(Arc::new(f)));
        self
    }

    /// Acts the first `n` times only.
    pub fn times(mut self, n: usize) -> Self {
        self.remaining = Some(n);
        self
    }

    /// Answers with this error.
    pub fn error(mut self, err: StatusError) -> Self {
        self.error = Some(err);
        self
    }

    /// Answers with this object (JSON, e.g. `serde_json::to_value(&pod)`): 200, or 201
    /// for `create`. Nothing is stored; for a `list`, give a list object. Not for
    /// `watch`.
    pub fn respond(mut self, obj: Value) -> Self {
        self.response = Some(obj);
        self
    }

    /// Decides per request with `f` (client-go's `ReactionFunc`): [`Answer::Pass`]
    /// lets the next reactor or the server answer (and does not count against
    /// [`Reactor::times`]); an object or error it returns replaces the reactor's own.
    /// The reactor's delay applies only when `f` handles the request. `f` runs under
    /// the reactor lock: it must not add or clear reactors.
    pub fn reaction(
        mut self,
        f: impl Fn(&RequestRecord) -> Answer + Send + Sync + 'static,
    ) -> Self {
        self.reaction = Some(ReactionFn(Arc::new(f)));
        self
    }

    /// Delays the request by this long.
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = Some(d);
        self
    }

    fn matches(&self, r: &RequestRecord) -> bool {
        (self.verb == "*" || self.verb == r.verb)
            && (self.resource == "*" || self.resource == r.resource)
            && self
                .subresource
                .as_ref()
                .is_none_or(|s| *s == r.subresource)
            && self.name.as_ref().is_none_or(|n| *n == r.name)
            && self.remaining != Some(0)
            && self
                .body
                .as_ref()
                .is_none_or(|want| r.body.as_ref().is_some_and(|b| contains(b, want)))
            && self
                .query
                .iter()
                .all(|(k, v)| r.query_pairs().any(|(rk, rv)| rk == *k && rv == *v))
            && self.when.as_ref().is_none_or(|p| (p.0)(r))
    }

    /// What this reactor does with a request it matched; `None`: it declines.
    fn react(&self, r: &RequestRecord) -> Option<Reaction> {
        let mut out = Reaction {
            delay: self.delay,
            error: self.error.clone(),
            response: self.response.clone(),
        };
        if let Some(f) = &self.reaction {
            match (f.0)(r) {
                Answer::Pass => return None,
                Answer::Object(v) => (out.response, out.error) = (Some(v), None),
                Answer::Error(e) => (out.response, out.error) = (None, Some(e)),
            }
        }
        Some(out)
    }
}

impl Answer {
    /// Handled: answer with `obj` serialized (an error answers 500 if it does not
    /// serialize).
    pub fn object<T: serde::Serialize>(obj: &T) -> Answer {
        match serde_json::to_value(obj) {
            Ok(v) => Answer::Object(v),
            Err(e) => Answer::Error(StatusError::internal(e)),
        }
    }
}

impl RequestRecord {
    /// The query parameters, percent-decoded, in order.
    pub fn query_pairs(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.query.split('&').filter(|p| !p.is_empty()).map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
    }
}

/// Whether `have` contains `want` (objects: by key, recursively; anything else: equal).
fn contains(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(h), Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| h.get(k).is_some_and(|hv| contains(hv, wv))),
        _ => have == want,
    }
}

/// Where [`super::ApiServer::drop_watches`] cut the watches open at that moment.
#[derive(Debug)]
pub(crate) struct WatchCut {
    /// Cancelled at the cut.
    pub token: CancellationToken,
    /// The last version such a watch may send (`u64::MAX` until cut).
    cut: AtomicU64,
}

impl Default for WatchCut {
    fn default() -> Self {
        WatchCut {
            token: CancellationToken::new(),
            cut: AtomicU64::new(u64::MAX),
        }
    }
}

impl WatchCut {
    /// The last version a watch under this cut may send.
    pub(crate) fn limit(&self) -> u64 {
        self.cut.load(Ordering::SeqCst)
    }
}

/// The server's log, reactors and watch faults.
#[derive(Debug)]
pub(crate) struct Faults {
    log: Mutex<Vec<RequestRecord>>,
    reactors: Mutex<Vec<Reactor>>,
    drop_token: Mutex<Arc<WatchCut>>,
    expire_next: Mutex<usize>,
    expire_up_to: Mutex<Option<u64>>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            log: Mutex::new(Vec::new()),
            reactors: Mutex::new(Vec::new()),
            drop_token: Mutex::new(Arc::new(WatchCut::default())),
            expire_next: Mutex::new(0),
            expire_up_to: Mutex::new(None),
        }
    }
}

/// What a reactor decided for one request.
#[derive(Debug, Default)]
pub(crate) struct Reaction {
    pub delay: Option<Duration>,
    pub error: Option<StatusError>,
    pub response: Option<Value>,
}

impl Faults {
    /// Logs a request and returns what the first matching reactor that handles it does.
    pub(crate) fn observe(&self, r: RequestRecord) -> Reaction {
        let mut out = Reaction::default();
        {
            let mut rs = self.reactors.lock();
            for re in rs.iter_mut().filter(|re| re.matches(&r)) {
                if let Some(reaction) = re.react(&r) {
                    if let Some(n) = re.remaining.as_mut() {
                        *n -= 1;
                    }
                    out = reaction;
                    break;
                }
            }
        }
        self.log.lock().push(r);
        out
    }

    pub(crate) fn requests(&self) -> Vec<RequestRecord> {
        self.log.lock().clone()
    }

    pub(crate) fn clear_requests(&self) {
        self.log.lock().clear();
    }

    pub(crate) fn add_reactor(&self, r: Reactor) {
        self.reactors.lock().push(r);
    }

    pub(crate) fn prepend_reactor(&self, r: Reactor) {
        self.reactors.lock().insert(0, r);
    }

    pub(crate) fn clear_reactors(&self) {
        self.reactors.lock().clear();
    }

    /// The cut that ends the watches open now; take it under the state lock that fixes
    /// a watch's starting point.
    pub(crate) fn watch_cut(&self) -> Arc<WatchCut> {
        self.drop_token.lock().clone()
    }

    /// Ends the watches open now at version `rv`: the caller holds the state lock, so
    /// every change a dropped watch may still send was written before the call.
    pub(crate) fn drop_watches(&self, rv: u64) {
        let old = std::mem::take(&mut *self.drop_token.lock());
        old.cut.store(rv, Ordering::SeqCst);
        old.token.cancel();
    }

    pub(crate) fn expire_next_watches(&self, n: usize) {
        *self.expire_next.lock() += n;
    }

    pub(crate) fn expire_watches_up_to(&self, rv: Option<u64>) {
        *self.expire_up_to.lock() = rv;
    }

    /// Whether the watch starting now (from `start_rv`, if any) must answer 410.
    pub(crate) fn take_expire(&self, start_rv: Option<u64>) -> bool {
        if let (Some(x), Some(limit)) = (start_rv, *self.expire_up_to.lock()) {
            if x <= limit {
                return true;
            }
        }
        let mut n = self.expire_next.lock();
        if *n > 0 {
            *n -= 1;
            true
        } else {
            false
        }
    }
}
