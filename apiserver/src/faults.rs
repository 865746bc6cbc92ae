//! Fault injection and the request log, for tests.
//!
//! Contract:
//! - Every request the server answers is logged (verb, resource, subresource,
//!   namespace, name, body) before any reactor runs; the log is kept until cleared.
//! - A [`Reactor`] matches a verb (`get`, `list`, `watch`, `create`, `update`, `patch`,
//!   `delete`, `deletecollection`, or `*`), a resource (plural, or `*`), optionally a
//!   subresource and a name; the first reactor that matches and still has uses left acts:
//!   it delays the request, fails it with its `Status`, or both (delay first). Reactors
//!   added first are consulted first.
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
///
/// let r = Reactor::new("update", "pods")
///     .name("web")
///     .times(2)
///     .error(StatusError::too_many_requests("slow down", 1))
///     .delay(Duration::from_millis(10));
/// assert_eq!(r.verb, "update");
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
}

impl Faults {
    /// Logs a request and returns what the first matching reactor does.
    pub(crate) fn observe(&self, r: RequestRecord) -> Reaction {
        let mut out = Reaction::default();
        {
            let mut rs = self.reactors.lock();
            if let Some(re) = rs.iter_mut().find(|re| re.matches(&r)) {
                if let Some(n) = re.remaining.as_mut() {
                    *n -= 1;
                }
                out.delay = re.delay;
                out.error = re.error.clone();
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
