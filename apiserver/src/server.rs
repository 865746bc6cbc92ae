//! The server object, its configuration, its writes and its admin API.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::{Map, Value};

use crate::meta::meta_str;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::errors::{GroupResource, StatusError};

use super::registry::{builtin, Registration};
use super::store::{storage_key, EventType, State, Stored};
use super::ApiService;

/// The in-memory Kubernetes API server.
///
/// Cloning is cheap: clones share one storage. Serve it in-process with
/// [`ApiServer::service`] (a tower Service for [`kube::Client::new`]) or on a TCP port
/// with [`ApiServer::serve_tcp`](ApiServer::serve_tcp).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kubegen_apiserver::ApiServer;
/// use serde_json::json;
///
/// let server = ApiServer::new();
/// server
///     .create("configmaps", json!({"metadata": {"name": "a", "namespace": "default"}}))
///     .unwrap();
/// let client = kube::Client::new(server.service(), "default");
/// let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::default_namespaced(client);
/// assert_eq!(cms.get("a").await.unwrap().metadata.name.as_deref(), Some("a"));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ApiServer {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub state: RwLock<State>,
    /// The global resourceVersion, for requests waiting for a version not yet reached.
    pub rv_tx: watch::Sender<u64>,
    pub bookmark_interval: Duration,
    pub rv_wait: Duration,
    pub shutdown: CancellationToken,
    /// Writes into a namespace that does not exist get 404.
    pub strict_namespaces: bool,
    /// Reads of built-in kinds answer protobuf when the Accept header asks for it.
    pub protobuf_responses: bool,
    /// About how many bytes of watch frames go into one chunk of a watch's body (0: a
    /// chunk per frame).
    pub watch_chunk: usize,
    /// How lists treat the client's `limit`.
    pub list_limit: ListLimit,
    /// Requests seen and the faults to inject.
    pub faults: super::faults::Faults,
    /// This server itself, for the tasks it starts (the namespace controller).
    pub me: std::sync::Weak<Inner>,
    /// The admission webhooks of the stored configurations, under the configuration
    /// collections' latest resourceVersions (see `admission::config::load`).
    pub admission_hooks: parking_lot::Mutex<Option<super::webhook_hooks::HooksAt>>,
}

/// Configuration of an [`ApiServer`], as a plain builder.
///
/// ```
/// use std::time::Duration;
/// use kubegen_apiserver::ApiServer;
///
/// let server = ApiServer::builder()
///     .history_limit(1000)
///     .bookmark_interval(Duration::from_secs(5))
///     .build();
/// assert_eq!(server.resource_version(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct ApiServerBuilder {
    registrations: Vec<Registration>,
    history_limit: usize,
    history_bytes: usize,
    collect_dangling: bool,
    bookmark_interval: Duration,
    rv_wait: Duration,
    strict_namespaces: bool,
    protobuf_responses: bool,
    watch_chunk: usize,
    list_limit: ListLimit,
}

/// About how many bytes of frames a watcher writes per chunk by default: small enough to
/// stay in the CPU cache between the copy and the socket write
/// ([`ApiServerBuilder::watch_chunk_bytes`]).
const WATCH_CHUNK: usize = 128 * 1024;

/// How a server answers a list's `limit` ([`ApiServerBuilder::list_limit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListLimit {
    /// Pages of at most `limit` items with a continue token, as kube-apiserver answers a
    /// list served from etcd (the default).
    #[default]
    Honour,
    /// The whole list in one answer whatever the `limit`, as kube-apiserver's watch
    /// cache answers a `resourceVersion=0` list on versions without paginated cache
    /// lists, and as many mock servers do.
    Ignore,
    /// Pages of at most this many items even where the client asks for more or for no
    /// limit, as a server with a page cap does; clients follow the continue tokens.
    AtMost(usize),
}

impl ListLimit {
    /// The page size a list asking for `asked` gets.
    pub(crate) fn page(self, asked: Option<usize>) -> Option<usize> {
        match self {
            ListLimit::Honour => asked,
            ListLimit::Ignore => None,
            ListLimit::AtMost(n) => Some(asked.map_or(n, |a| a.min(n)).max(1)),
        }
    }
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            registrations: builtin(),
            history_limit: 100_000,
            history_bytes: super::store::DEFAULT_HISTORY_BYTES,
            collect_dangling: false,
            bookmark_interval: Duration::from_secs(60),
            rv_wait: Duration::from_millis(250),
            strict_namespaces: false,
            protobuf_responses: false,
            watch_chunk: WATCH_CHUNK,
            list_limit: ListLimit::Honour,
        }
    }
}

impl ApiServerBuilder {
    /// Adds a resource to serve.
    pub fn register(mut self, reg: Registration) -> Self {
        self.registrations.push(reg);
        self
    }

    /// Serves no built-in resources (only those registered afterwards).
    pub fn without_builtins(mut self) -> Self {
        self.registrations.clear();
        self
    }

    /// How many changes each resource's history keeps (default 100 000); older versions
    /// are compacted.
    pub fn history_limit(mut self, n: usize) -> Self {
        self.history_limit = n;
        self
    }

    /// How many bytes of changes each resource's history keeps at most (default 64 MiB,
    /// estimated from the encoded objects); older versions are compacted, as with
    /// [`history_limit`](Self::history_limit). The newest change is always kept.
    ///
    /// ```
    /// use kubegen_apiserver::ApiServer;
    ///
    /// let server = ApiServer::builder().history_bytes(1 << 20).build();
    /// assert_eq!(server.resource_version(), 1);
    /// ```
    pub fn history_bytes(mut self, n: usize) -> Self {
        self.history_bytes = n;
        self
    }

    /// Garbage-collects objects whose owners do not exist, as kube-controller-manager's
    /// garbage collector does: an object whose every `ownerReferences` entry names a
    /// missing owner (or one with another uid) is deleted, and dangling references next to
    /// existing owners are removed (see the `owners` module). Off by default, so that
    /// tests may seed dependents (pods of a ReplicaSet) without their owners; the
    /// `kubegen-apiserver` binary turns it on.
    ///
    /// ```
    /// use kubegen_apiserver::ApiServer;
    /// use serde_json::json;
    ///
    /// let server = ApiServer::builder().collect_dangling_owners(true).build();
    /// server.create("configmaps", json!({"metadata": {"name": "c", "namespace": "a",
    ///     "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "1"}]}})).unwrap();
    /// assert!(server.get("configmaps", "a", "c").unwrap().is_none());
    /// ```
    pub fn collect_dangling_owners(mut self, on: bool) -> Self {
        self.collect_dangling = on;
        self
    }

    /// How often a watch that allows bookmarks gets one (default 60 s).
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every;
        self
    }

    /// How long a request for a resourceVersion the server has not reached waits before
    /// failing with 504 `ResourceVersionTooLarge` (default 250 ms).
    pub fn resource_version_wait(mut self, wait: Duration) -> Self {
        self.rv_wait = wait;
        self
    }

    /// Makes namespaces behave as on a cluster: the server starts with `default`,
    /// `kube-system`, `kube-public` and `kube-node-lease`, and creating an object in a
    /// namespace that does not exist fails with 404 `namespaces "x" not found`. The
    /// default (lenient) starts with no namespaces and accepts any; Terminating
    /// namespaces refuse new content in both modes.
    ///
    /// ```
    /// use kubegen_apiserver::ApiServer;
    ///
    /// let server = ApiServer::builder().strict_namespaces(true).build();
    /// assert!(server.get("namespaces", "", "kube-system").unwrap().is_some());
    /// let e = server
    ///     .create("configmaps", serde_json::json!({"metadata": {"name": "c", "namespace": "nope"}}))
    ///     .unwrap_err();
    /// assert_eq!(e.code(), 404);
    /// ```
    pub fn strict_namespaces(mut self, strict: bool) -> Self {
        self.strict_namespaces = strict;
        self
    }

    /// Answers get, list and watch of built-in kinds in protobuf when the `Accept` header
    /// asks for `application/vnd.kubernetes.protobuf` first, as kube-apiserver does
    /// (lists as `<Kind>List`, watches as `;stream=watch` frames); custom resources stay
    /// JSON. Off by default: the server's JSON keeps what clients sent (an absent
    /// `status`, an empty `omitempty` string), and its protobuf, like kube-apiserver's,
    /// is what Go writes for the object, so turning it on changes what a test that
    /// compares a read object with the one it wrote sees.
    ///
    /// ```
    /// use kubegen_apiserver::ApiServer;
    ///
    /// let server = ApiServer::builder().protobuf_responses(true).build();
    /// assert_eq!(server.resource_version(), 1);
    /// ```
    pub fn protobuf_responses(mut self, on: bool) -> Self {
        self.protobuf_responses = on;
        self
    }

    /// About how many bytes of watch frames the server copies into one chunk of a
    /// watch's body when several events are ready at once (default 128 KiB). 0 sends every
    /// event as a chunk of its own, as a server that writes and flushes each event does:
    /// benchmarks use it to measure a client's cost per event rather than per read.
    ///
    /// ```
    /// use kubegen_apiserver::ApiServer;
    ///
    /// let server = ApiServer::builder().watch_chunk_bytes(0).build();
    /// assert_eq!(server.resource_version(), 1);
    /// ```
    pub fn watch_chunk_bytes(mut self, bytes: usize) -> Self {
        self.watch_chunk = bytes;
        self
    }

    /// How lists treat the client's `limit` (default [`ListLimit::Honour`]). The other
    /// settings stand for servers that page differently: clients must sync the same
    /// objects whatever the server's pages.
    ///
    /// ```
    /// use kubegen_apiserver::{ApiServer, ListLimit};
    ///
    /// let server = ApiServer::builder().list_limit(ListLimit::AtMost(100)).build();
    /// assert_eq!(server.resource_version(), 1);
    /// ```
    pub fn list_limit(mut self, limit: ListLimit) -> Self {
        self.list_limit = limit;
        self
    }

    /// Builds the server.
    pub fn build(self) -> ApiServer {
        let mut state = State::new(self.history_limit);
        state.history_bytes = self.history_bytes;
        state.collect_dangling = self.collect_dangling;
        for r in self.registrations {
            state.register(super::strategies::attach(r));
        }
        let rv = state.rv;
        let server = ApiServer {
            inner: Arc::new_cyclic(|me| Inner {
                state: RwLock::new(state),
                rv_tx: watch::channel(rv).0,
                bookmark_interval: self.bookmark_interval,
                rv_wait: self.rv_wait,
                shutdown: CancellationToken::new(),
                strict_namespaces: self.strict_namespaces,
                protobuf_responses: self.protobuf_responses,
                watch_chunk: self.watch_chunk,
                list_limit: self.list_limit,
                faults: Default::default(),
                me: me.clone(),
                admission_hooks: Default::default(),
            }),
        };
        if self.strict_namespaces {
            for ns in super::namespaces::SYSTEM {
                // The namespaces resource may not be registered (without_builtins).
                let _ = server.create("namespaces", serde_json::json!({"metadata": {"name": ns}}));
            }
        }
        server
    }
}

/// New versions of objects, computed ahead of their writes
/// ([`ApiServer::prepare_changes`], [`ApiServer::write_prepared`]).
#[derive(Debug)]
pub struct PreparedChanges {
    idx: usize,
    objects: Vec<Stored>,
}

impl PreparedChanges {
    /// How many changes there are.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether there are none (the resource holds no objects).
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

impl Default for ApiServer {
    fn default() -> Self {
        Self::new()
    }
}

impl Inner {
    pub(crate) fn registration(&self, idx: usize) -> Arc<Registration> {
        self.state.read().collections[idx].reg.clone()
    }

    /// Resolves `pods`, `deployments.apps` or `foos.samplecontroller.k8s.io` (the first
    /// served version).
    pub(crate) fn resolve(&self, resource: &str) -> Result<usize, StatusError> {
        let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
        let st = self.state.read();
        st.collections
            .iter()
            .position(|c| c.reg.plural == plural && c.reg.group == group)
            .ok_or_else(|| {
                StatusError::not_found(
                    GroupResource {
                        group,
                        resource: plural,
                    },
                    "",
                )
            })
    }

    fn committed(&self, st: &State) {
        self.rv_tx.send_replace(st.rv);
    }

    /// Waits until the server reaches `rv`; false if it did not within the wait.
    pub(crate) async fn wait_for(&self, rv: u64) -> bool {
        let mut rx = self.rv_tx.subscribe();
        tokio::time::timeout(self.rv_wait, rx.wait_for(|v| *v >= rv))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// MODIFIED changes that only bump each object's resourceVersion, under one lock,
    /// waking watchers once; returns the last version.
    pub(crate) fn touch_many<'k>(
        &self,
        idx: usize,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<u64, StatusError> {
        let mut st = self.state.write();
        let mut result = Ok(st.rv);
        for key in keys {
            let Some(old) = st.collections[idx].objects.get(key).cloned() else {
                let reg = st.collections[idx].reg.clone();
                result = Err(StatusError::not_found(
                    GroupResource {
                        group: &reg.group,
                        resource: &reg.plural,
                    },
                    key,
                ));
                break;
            };
            result = Ok(st.record_respliced(idx, &old));
        }
        self.wake(&st, idx);
        result
    }

    /// Wakes a resource's watchers, and the requests waiting for a version, once after a
    /// batch of changes recorded under `st`.
    fn wake(&self, st: &State, idx: usize) {
        let coll = &st.collections[idx];
        coll.notify.send_replace(coll.last_rv);
        self.committed(st);
    }
}

fn to_map(obj: Value) -> Result<Map<String, Value>, StatusError> {
    match obj {
        Value::Object(m) => Ok(m),
        _ => Err(StatusError::bad_request("the object must be a JSON object")),
    }
}

fn to_value(stored: &Stored) -> Result<Value, StatusError> {
    serde_json::from_slice(&stored.bytes).map_err(StatusError::internal)
}

impl ApiServer {
    /// A server with the built-in registrations and default settings.
    pub fn new() -> Self {
        ApiServerBuilder::default().build()
    }

    /// A builder to configure a server.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    /// Registers one more resource on a running server (a CRD being installed).
    pub fn register(&self, reg: Registration) {
        self.inner
            .state
            .write()
            .register(super::strategies::attach(reg));
    }

    /// Registers `reg` unless its group, version and resource are served already (the
    /// server's own registration of a built-in kind knows more: selectable fields,
    /// printer columns); returns whether it was added. Generated fake clientsets
    /// register their kinds so.
    pub fn register_if_absent(&self, reg: Registration) -> bool {
        let mut st = self.inner.state.write();
        if st.lookup(&reg.api_version(), &reg.plural).is_some() {
            return false;
        }
        st.register(super::strategies::attach(reg));
        true
    }

    /// Registers every served version of a CustomResourceDefinition (YAML or JSON, see
    /// [`Registration::from_crd`]) and returns the registrations.
    pub fn register_crd(&self, crd: &str) -> Result<Vec<Registration>, StatusError> {
        let regs = Registration::from_crd(crd)?;
        let mut st = self.inner.state.write();
        for r in &regs {
            st.register(r.clone());
        }
        Ok(regs)
    }

    /// The tower Service serving this server in-process, for
    /// `kube::Client::new(server.service(), "default")`.
    pub fn service(&self) -> ApiService {
        ApiService::new(self.inner.clone(), self.inner.shutdown.clone())
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.inner.state.read().rv
    }

    /// Creates an object of `resource` (`pods`, `deployments.apps`, ...) and returns it as
    /// stored; its namespace is the object's own.
    pub fn create(&self, resource: &str, obj: Value) -> Result<Value, StatusError> {
        let idx = self.inner.resolve(resource)?;
        let out = to_value(
            &*self
                .inner
                .create(idx, "", to_map(obj)?, &Default::default())?,
        );
        self.inner.collect_dangling();
        out
    }

    /// Creates an object of whatever registered resource its `apiVersion` and `kind`
    /// name (for loading manifests); a CustomResourceDefinition also registers its
    /// resource.
    pub fn create_object(&self, obj: Value) -> Result<Value, StatusError> {
        let av = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let idx = {
            let st = self.inner.state.read();
            st.collections
                .iter()
                .position(|c| c.reg.api_version() == av && c.reg.kind == kind)
        };
        let idx = idx.ok_or_else(|| {
            StatusError::new(
                404,
                crate::errors::reason::NOT_FOUND,
                format!("no resource is registered for kind {kind:?} in {av:?}"),
            )
        })?;
        let out = to_value(
            &*self
                .inner
                .create(idx, "", to_map(obj)?, &Default::default())?,
        );
        self.inner.collect_dangling();
        out
    }

    /// Replaces an object (409 Conflict if it carries a stale resourceVersion).
    pub fn update(&self, resource: &str, obj: Value) -> Result<Value, StatusError> {
        let idx = self.inner.resolve(resource)?;
        let obj = to_map(obj)?;
        let ns = meta_str(&obj, "namespace").to_owned();
        let name = meta_str(&obj, "name").to_owned();
        let out =
            to_value(
                &*self
                    .inner
                    .update(idx, &ns, &name, obj, false, &Default::default())?,
            );
        self.inner.collect_dangling();
        out
    }

    /// Deletes an object (an object with finalizers only gets a deletionTimestamp).
    pub fn delete(&self, resource: &str, namespace: &str, name: &str) -> Result<(), StatusError> {
        let idx = self.inner.resolve(resource)?;
        self.inner
            .delete(idx, namespace, name, &Default::default())
            .map(|_| ())
    }

    /// The stored object, if any.
    pub fn get(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, StatusError> {
        let idx = self.inner.resolve(resource)?;
        let st = self.inner.state.read();
        st.collections[idx]
            .objects
            .get(&storage_key(namespace, name))
            .map(|s| to_value(s))
            .transpose()
    }

    /// Creates a typed object: the same as
    /// [`server.objects::<K>().create(obj)`](crate::Objects::create).
    pub fn add<K>(&self, obj: &K) -> Result<K, StatusError>
    where
        K: kube::Resource<DynamicType = ()> + serde::Serialize + serde::de::DeserializeOwned,
    {
        self.objects::<K>().create(obj)
    }

    /// Creates `n` objects made by `make(i)` and returns the resourceVersion after the
    /// last one.
    pub fn seed(
        &self,
        resource: &str,
        n: usize,
        mut make: impl FnMut(usize) -> Value,
    ) -> Result<u64, StatusError> {
        let idx = self.inner.resolve(resource)?;
        for i in 0..n {
            self.inner
                .create(idx, "", to_map(make(i))?, &Default::default())?;
        }
        Ok(self.resource_version())
    }

    /// Bumps the resourceVersion of one object (a MODIFIED change with the same content)
    /// and returns the new version; the stored bytes are spliced, not re-serialized.
    pub fn touch(&self, resource: &str, namespace: &str, name: &str) -> Result<u64, StatusError> {
        let idx = self.inner.resolve(resource)?;
        let key = storage_key(namespace, name);
        self.inner.touch_many(idx, [key.as_str()])
    }

    /// Emits `m` MODIFIED changes as fast as possible, cycling over the resource's objects
    /// in key order; returns the resourceVersion after the last one.
    pub fn emit_modifications(&self, resource: &str, m: usize) -> Result<u64, StatusError> {
        // Batches keep the write lock short enough for readers and watchers.
        self.emit_modifications_by(resource, m, 256)
    }

    /// [`ApiServer::emit_modifications`], `per_write` changes under each lock (1: each
    /// change wakes the watchers on its own, as separate writes to kube-apiserver do).
    pub fn emit_modifications_by(
        &self,
        resource: &str,
        m: usize,
        per_write: usize,
    ) -> Result<u64, StatusError> {
        let idx = self.inner.resolve(resource)?;
        let keys: Vec<Arc<str>> = self.inner.state.read().collections[idx]
            .objects
            .values()
            .map(|o| o.key.clone())
            .collect();
        if keys.is_empty() {
            return Ok(self.resource_version());
        }
        let mut rv = self.resource_version();
        let mut done = 0;
        while done < m {
            let n = (m - done).min(per_write.max(1));
            rv = self
                .inner
                .touch_many(idx, (done..done + n).map(|i| &*keys[i % keys.len()]))?;
            done += n;
        }
        Ok(rv)
    }

    /// Computes new versions of `m` objects of `resource`, ahead of writing them with
    /// [`ApiServer::write_prepared`]: the objects in key order, wrapping around, each
    /// parsed, passed to `change` with its change's number (from 0) and encoded. The cost
    /// of a real write's JSON lives here, so that the writes themselves run at the
    /// speed of [`ApiServer::emit_modifications`] and a benchmark measures its clients,
    /// not the server.
    pub fn prepare_changes(
        &self,
        resource: &str,
        m: usize,
        mut change: impl FnMut(usize, &mut Value),
    ) -> Result<PreparedChanges, StatusError> {
        let idx = self.inner.resolve(resource)?;
        let (reg, olds): (_, Vec<Arc<Stored>>) = {
            let st = self.inner.state.read();
            let coll = &st.collections[idx];
            let all: Vec<&Arc<Stored>> = coll.objects.values().collect();
            let olds = if all.is_empty() {
                Vec::new()
            } else {
                (0..m).map(|i| all[i % all.len()].clone()).collect()
            };
            (coll.reg.clone(), olds)
        };
        let mut objects = Vec::with_capacity(olds.len());
        for (k, old) in olds.iter().enumerate() {
            let mut obj = to_value(old)?;
            change(k, &mut obj);
            let map = to_map(obj)?;
            let (_, stored) = super::store::encode(&reg, &map, old.rv, EventType::Modified)?;
            if stored.key != old.key {
                return Err(StatusError::bad_request(format!(
                    "a prepared change may not rename {} (to {})",
                    old.key, stored.key
                )));
            }
            objects.push(stored);
        }
        Ok(PreparedChanges { idx, objects })
    }

    /// Writes changes made by [`ApiServer::prepare_changes`] as MODIFIED events, each at
    /// a new resourceVersion, `per_write` of them under each lock (1: every change
    /// wakes the watchers on its own, as separate writes to kube-apiserver do); returns
    /// the last version. A change overwrites whatever the object holds then (no
    /// resourceVersion precondition).
    pub fn write_prepared(
        &self,
        prepared: PreparedChanges,
        per_write: usize,
    ) -> Result<u64, StatusError> {
        let PreparedChanges { idx, objects } = prepared;
        let mut rv = self.resource_version();
        for batch in objects.chunks(per_write.max(1)) {
            let mut st = self.inner.state.write();
            for obj in batch {
                rv = st.record_respliced(idx, obj);
            }
            self.inner.wake(&st, idx);
        }
        Ok(rv)
    }

    /// Compacts every resource's history up to the current version: lists and watches
    /// from older versions, and continue tokens issued before, get 410 Expired.
    pub fn compact(&self) {
        self.inner.state.write().compact();
    }

    /// Every request answered so far (since the last [`ApiServer::clear_requests`]).
    pub fn requests(&self) -> Vec<super::RequestRecord> {
        self.inner.faults.requests()
    }

    /// Forgets the logged requests.
    pub fn clear_requests(&self) {
        self.inner.faults.clear_requests();
    }

    /// Adds a reactor: matching requests are delayed or fail (see [`super::Reactor`]).
    pub fn react(&self, reactor: super::Reactor) {
        self.inner.faults.add_reactor(reactor);
    }

    /// Adds a reactor consulted before every reactor added so far (client-go's
    /// `PrependReactor`).
    pub fn react_first(&self, reactor: super::Reactor) {
        self.inner.faults.prepend_reactor(reactor);
    }

    /// Removes every reactor.
    pub fn clear_reactors(&self) {
        self.inner.faults.clear_reactors();
    }

    /// Ends every watch open now (watches started later are not affected). A clean cut:
    /// no change written after this returns reaches a dropped watch, so a client that
    /// resumes from its last resourceVersion sees each change exactly once.
    pub fn drop_watches(&self) {
        // Under the state lock no write is half done: every change the dropped watches
        // may still send was committed before this call returns, and none after.
        let st = self.inner.state.read();
        self.inner.faults.drop_watches(st.rv);
    }

    /// Makes the next watch request answer with a 410 Expired ERROR event and end.
    pub fn expire_next_watch(&self) {
        self.inner.faults.expire_next_watches(1);
    }

    /// Makes every watch starting from a resourceVersion at or below `rv` answer with a
    /// 410 Expired ERROR event (without compacting anything) until called with `None`.
    pub fn expire_watches_up_to(&self, rv: Option<u64>) {
        self.inner.faults.expire_watches_up_to(rv);
    }

    /// Ends every watch and stops every TCP listener of this server.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }
}
