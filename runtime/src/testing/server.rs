//! The server object, its configuration, its writes and its admin API.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::errors::{cause, GroupResource, StatusCause, StatusError};

use super::registry::{builtin, Registration};
use super::store::{encode, respliced, storage_key, EventType, State, Stored};
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
/// use kubegen_runtime::testing::ApiServer;
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
}

/// Configuration of an [`ApiServer`], as a plain builder.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::testing::ApiServer;
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
    bookmark_interval: Duration,
    rv_wait: Duration,
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            registrations: builtin(),
            history_limit: 100_000,
            bookmark_interval: Duration::from_secs(60),
            rv_wait: Duration::from_millis(250),
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

    /// Builds the server.
    pub fn build(self) -> ApiServer {
        let mut state = State::new(self.history_limit);
        for r in self.registrations {
            state.register(r);
        }
        let rv = state.rv;
        ApiServer {
            inner: Arc::new(Inner {
                state: RwLock::new(state),
                rv_tx: watch::channel(rv).0,
                bookmark_interval: self.bookmark_interval,
                rv_wait: self.rv_wait,
                shutdown: CancellationToken::new(),
            }),
        }
    }
}

impl Default for ApiServer {
    fn default() -> Self {
        Self::new()
    }
}

const CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn random_suffix() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..5)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

fn uid() -> String {
    let b: [u8; 16] = rand::random();
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn meta_mut(obj: &mut Map<String, Value>) -> Result<&mut Map<String, Value>, StatusError> {
    let m = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if m.is_null() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut()
        .ok_or_else(|| StatusError::bad_request("metadata must be an object"))
}

fn meta_str<'a>(obj: &'a Map<String, Value>, k: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(k))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn has_finalizers(obj: &Map<String, Value>) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// How a deletion propagates to dependents (`DeleteOptions.propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
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

    /// Creates an object in namespace `ns` (`""`: the object's own namespace).
    pub(crate) fn create(
        &self,
        idx: usize,
        ns: &str,
        mut obj: Map<String, Value>,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = self.registration(idx);
        let gr = GroupResource {
            group: &reg.group,
            resource: &reg.plural,
        };
        {
            let meta = meta_mut(&mut obj)?;
            if reg.namespaced {
                let own = meta
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if !ns.is_empty() && !own.is_empty() && own != ns {
                    return Err(StatusError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                let ns = if ns.is_empty() { own } else { ns.to_owned() };
                if ns.is_empty() {
                    return Err(StatusError::bad_request(
                        "the server could not find the requested resource: a namespace is required",
                    ));
                }
                meta.insert("namespace".into(), Value::String(ns));
            } else {
                meta.remove("namespace");
            }
            let name = meta
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if name.is_empty() {
                let generate = meta
                    .get("generateName")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if generate.is_empty() {
                    return Err(StatusError::invalid(
                        &reg.group,
                        &reg.kind,
                        "",
                        vec![StatusCause {
                            reason: cause::FIELD_VALUE_REQUIRED.into(),
                            message: "Required value: name or generateName is required".into(),
                            field: "metadata.name".into(),
                        }],
                    ));
                }
                let prefix: String = generate.chars().take(58).collect();
                meta.insert(
                    "name".into(),
                    Value::String(format!("{prefix}{}", random_suffix())),
                );
            }
            meta.insert("uid".into(), Value::String(uid()));
            meta.insert("creationTimestamp".into(), Value::String(now()));
            meta.insert("generation".into(), Value::from(1));
            meta.remove("deletionTimestamp");
        }
        let key = storage_key(meta_str(&obj, "namespace"), meta_str(&obj, "name"));
        let mut st = self.state.write();
        if st.collections[idx].objects.contains_key(&key) {
            return Err(StatusError::already_exists(gr, meta_str(&obj, "name")));
        }
        let rv = st.rv + 1;
        let (frame, stored) = encode(&reg, &obj, rv, EventType::Added)?;
        st.rv = rv;
        let out = st.commit(idx, EventType::Added, frame, stored);
        self.committed(&st);
        Ok(out)
    }

    /// Replaces an object (`status_only`: only its status, for the status subresource).
    pub(crate) fn update(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        mut obj: Map<String, Value>,
        status_only: bool,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = self.registration(idx);
        let gr = GroupResource {
            group: &reg.group,
            resource: &reg.plural,
        };
        let body_name = meta_str(&obj, "name").to_owned();
        if !body_name.is_empty() && body_name != name {
            return Err(StatusError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let key = storage_key(if reg.namespaced { ns } else { "" }, name);
        let mut st = self.state.write();
        let old = st.collections[idx]
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| StatusError::not_found(gr, name))?;
        let want_rv = meta_str(&obj, "resourceVersion");
        if !want_rv.is_empty() && want_rv != old.rv.to_string() {
            return Err(StatusError::conflict(
                gr,
                name,
                StatusError::OPTIMISTIC_LOCK_MESSAGE,
            ));
        }
        let mut prev = old.to_value()?;
        let new = if status_only {
            match obj.remove("status") {
                Some(s) => prev.insert("status".into(), s),
                None => prev.remove("status"),
            };
            prev
        } else {
            let prev_meta = meta_mut(&mut prev)?.clone();
            let changed = prev.get("spec") != obj.get("spec");
            {
                let meta = meta_mut(&mut obj)?;
                meta.insert("name".into(), Value::String(name.to_owned()));
                for k in [
                    "uid",
                    "creationTimestamp",
                    "namespace",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                ] {
                    match prev_meta.get(k) {
                        Some(v) => meta.insert(k.into(), v.clone()),
                        None => meta.remove(k),
                    };
                }
                let generation = prev_meta
                    .get("generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                meta.insert(
                    "generation".into(),
                    Value::from(generation + i64::from(changed)),
                );
            }
            if reg.status {
                match prev.get("status") {
                    Some(s) => obj.insert("status".into(), s.clone()),
                    None => obj.remove("status"),
                };
            }
            obj
        };
        let rv = st.rv + 1;
        let deleting = !meta_str(&new, "deletionTimestamp").is_empty() && !has_finalizers(&new);
        let ty = if deleting {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        let (frame, stored) = encode(&reg, &new, rv, ty)?;
        st.rv = rv;
        let out = st.commit(idx, ty, frame, stored);
        self.committed(&st);
        Ok(out)
    }

    /// Deletes an object; one with finalizers only gets a deletionTimestamp. Returns the
    /// object and whether its deletion is still pending.
    pub(crate) fn delete(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        propagation: Propagation,
    ) -> Result<(Arc<Stored>, bool), StatusError> {
        let reg = self.registration(idx);
        let gr = GroupResource {
            group: &reg.group,
            resource: &reg.plural,
        };
        let key = storage_key(if reg.namespaced { ns } else { "" }, name);
        let mut st = self.state.write();
        let old = st.collections[idx]
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| StatusError::not_found(gr, name))?;
        let mut obj = old.to_value()?;
        let finalizer = match propagation {
            Propagation::Foreground => Some("foregroundDeletion"),
            Propagation::Orphan => Some("orphan"),
            Propagation::Background => None,
        };
        if let Some(f) = finalizer {
            let meta = meta_mut(&mut obj)?;
            let list = meta
                .entry("finalizers")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(a) = list.as_array_mut() {
                if !a.iter().any(|v| v == f) {
                    a.push(Value::String(f.into()));
                }
            }
        }
        let rv = st.rv + 1;
        if has_finalizers(&obj) {
            if !meta_str(&obj, "deletionTimestamp").is_empty() && finalizer.is_none() {
                return Ok((old, true));
            }
            let meta = meta_mut(&mut obj)?;
            if !meta.contains_key("deletionTimestamp") {
                meta.insert("deletionTimestamp".into(), Value::String(now()));
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
            }
            let (frame, stored) = encode(&reg, &obj, rv, EventType::Modified)?;
            st.rv = rv;
            let out = st.commit(idx, EventType::Modified, frame, stored);
            self.committed(&st);
            return Ok((out, true));
        }
        let (frame, stored) = respliced(&old, rv, EventType::Deleted);
        st.rv = rv;
        let out = st.commit(idx, EventType::Deleted, frame, stored);
        self.committed(&st);
        Ok((out, false))
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
            let rv = st.rv + 1;
            let (frame, stored) = respliced(&old, rv, EventType::Modified);
            st.rv = rv;
            st.record(idx, EventType::Modified, frame, stored);
            result = Ok(rv);
        }
        let coll = &st.collections[idx];
        coll.notify.send_replace(coll.last_rv);
        self.committed(&st);
        result
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
        self.inner.state.write().register(reg);
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
        to_value(&*self.inner.create(idx, "", to_map(obj)?)?)
    }

    /// Replaces an object (409 Conflict if it carries a stale resourceVersion).
    pub fn update(&self, resource: &str, obj: Value) -> Result<Value, StatusError> {
        let idx = self.inner.resolve(resource)?;
        let obj = to_map(obj)?;
        let ns = meta_str(&obj, "namespace").to_owned();
        let name = meta_str(&obj, "name").to_owned();
        to_value(&*self.inner.update(idx, &ns, &name, obj, false)?)
    }

    /// Deletes an object (an object with finalizers only gets a deletionTimestamp).
    pub fn delete(&self, resource: &str, namespace: &str, name: &str) -> Result<(), StatusError> {
        let idx = self.inner.resolve(resource)?;
        self.inner
            .delete(idx, namespace, name, Propagation::Background)
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

    /// Typed convenience for [`ApiServer::create`].
    pub fn add<K>(&self, obj: &K) -> Result<K, StatusError>
    where
        K: kube::Resource<DynamicType = ()> + serde::Serialize + serde::de::DeserializeOwned,
    {
        let idx = self.resolve_type::<K>()?;
        let value = serde_json::to_value(obj).map_err(StatusError::internal)?;
        let stored = self.inner.create(idx, "", to_map(value)?)?;
        serde_json::from_slice(&stored.bytes).map_err(StatusError::internal)
    }

    fn resolve_type<K: kube::Resource<DynamicType = ()>>(&self) -> Result<usize, StatusError> {
        let st = self.inner.state.read();
        st.lookup(&K::api_version(&()), &K::plural(&()))
            .ok_or_else(|| {
                StatusError::not_found(
                    GroupResource {
                        group: &K::group(&()),
                        resource: &K::plural(&()),
                    },
                    "",
                )
            })
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
            self.inner.create(idx, "", to_map(make(i))?)?;
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
            // Batches keep the write lock short enough for readers and watchers.
            let n = (m - done).min(256);
            rv = self
                .inner
                .touch_many(idx, (done..done + n).map(|i| &*keys[i % keys.len()]))?;
            done += n;
        }
        Ok(rv)
    }

    /// Compacts every resource's history up to the current version: lists and watches
    /// from older versions, and continue tokens issued before, get 410 Expired.
    pub fn compact(&self) {
        self.inner.state.write().compact();
    }

    /// Ends every watch and stops every TCP listener of this server.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }
}
