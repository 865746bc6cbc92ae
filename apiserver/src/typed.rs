//! The typed admin API: a test's direct access to the server's objects of one Rust
//! type, beside the JSON one that names resources by plural ([`ApiServer::create`]).
//!
//! Contract:
//! - [`ApiServer::objects`] resolves `K` by its `apiVersion` and plural
//!   ([`kube::Resource`]); a type the server does not serve gets 404 NotFound on every
//!   call.
//! - Each call is the same write or read as the JSON API's (no request is logged, no
//!   reactor runs, no admission of the HTTP path such as dropping a new object's
//!   status), and returns the object as stored, decoded into `K`.
//! - Reads see the stored objects of `K`'s own version.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::errors::{GroupResource, StatusError};
use crate::meta::meta_str;
use crate::server::ApiServer;
use crate::store::{storage_key, Stored};

/// The objects of type `K` on an [`ApiServer`]: create, get, list, update and delete
/// them as typed values. Made by [`ApiServer::objects`].
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubegen_apiserver::ApiServer;
///
/// let server = ApiServer::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// cm.metadata.namespace = Some("default".into());
/// let stored = server.objects().create(&cm)?;
/// assert!(stored.metadata.uid.is_some());
///
/// let got = server.objects::<ConfigMap>().get("default", "settings")?;
/// assert_eq!(got, Some(stored));
/// assert_eq!(server.objects::<ConfigMap>().list(Some("default"))?.len(), 1);
/// server.objects::<ConfigMap>().delete("default", "settings")?;
/// assert_eq!(server.objects::<ConfigMap>().get("default", "settings")?, None);
/// # Ok::<(), kubegen_apiserver::errors::StatusError>(())
/// ```
pub struct Objects<'a, K> {
    server: &'a ApiServer,
    kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for Objects<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects")
            .field("type", &std::any::type_name::<K>())
            .finish()
    }
}

impl<K> Clone for Objects<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Objects<'_, K> {}

impl ApiServer {
    /// The typed admin API for objects of type `K` (see [`Objects`]).
    pub fn objects<K>(&self) -> Objects<'_, K>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        Objects {
            server: self,
            kind: PhantomData,
        }
    }
}

impl<K> Objects<'_, K>
where
    K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
{
    fn index(&self) -> Result<usize, StatusError> {
        let (av, plural) = (K::api_version(&()), K::plural(&()));
        self.server
            .inner
            .state
            .read()
            .lookup(&av, &plural)
            .ok_or_else(|| {
                StatusError::not_found(
                    GroupResource {
                        group: &K::group(&()),
                        resource: &plural,
                    },
                    "",
                )
            })
    }

    /// Creates `obj` in its own namespace and returns it as stored (uid,
    /// resourceVersion, creationTimestamp and generation set; a `generateName` filled
    /// in). Its status is kept, as test fixtures need.
    pub fn create(&self, obj: &K) -> Result<K, StatusError> {
        let idx = self.index()?;
        let stored = self
            .server
            .inner
            .create(idx, "", encode(obj)?, &Default::default())?;
        decode(&stored)
    }

    /// The stored object `namespace/name` (`namespace` empty for cluster-scoped kinds),
    /// or `None`.
    pub fn get(&self, namespace: &str, name: &str) -> Result<Option<K>, StatusError> {
        let idx = self.index()?;
        let st = self.server.inner.state.read();
        st.collections[idx]
            .objects
            .get(&storage_key(namespace, name))
            .map(|s| decode(s))
            .transpose()
    }

    /// Every stored object in `namespace` (`None`: in all namespaces), by namespace
    /// and name.
    pub fn list(&self, namespace: Option<&str>) -> Result<Vec<K>, StatusError> {
        let idx = self.index()?;
        let st = self.server.inner.state.read();
        let mut out = Vec::new();
        let mut failed = None;
        st.collections[idx].visit(None, namespace, None, |s| match decode(s) {
            Ok(k) => {
                out.push(k);
                true
            }
            Err(e) => {
                failed = Some(e);
                false
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Replaces the object `obj` names (409 Conflict when it carries a stale
    /// resourceVersion; none: an unconditional update) and returns it as stored. Its
    /// status is ignored when the kind has a status subresource, as on a cluster.
    pub fn update(&self, obj: &K) -> Result<K, StatusError> {
        self.replace(obj, false)
    }

    /// Replaces only the status of the object `obj` names (the status subresource).
    pub fn update_status(&self, obj: &K) -> Result<K, StatusError> {
        self.replace(obj, true)
    }

    fn replace(&self, obj: &K, status_only: bool) -> Result<K, StatusError> {
        let idx = self.index()?;
        let obj = encode(obj)?;
        let (ns, name) = (
            meta_str(&obj, "namespace").to_owned(),
            meta_str(&obj, "name").to_owned(),
        );
        let stored =
            self.server
                .inner
                .update(idx, &ns, &name, obj, status_only, &Default::default())?;
        decode(&stored)
    }

    /// Deletes `namespace/name`: an object with finalizers only gets a
    /// deletionTimestamp (and is returned as `Some`); otherwise it goes (`None`).
    pub fn delete(&self, namespace: &str, name: &str) -> Result<Option<K>, StatusError> {
        let idx = self.index()?;
        let (stored, pending) =
            self.server
                .inner
                .delete(idx, namespace, name, &Default::default())?;
        pending.then(|| decode(&stored)).transpose()
    }
}

fn encode<K: Serialize>(obj: &K) -> Result<Map<String, Value>, StatusError> {
    match serde_json::to_value(obj).map_err(StatusError::internal)? {
        Value::Object(m) => Ok(m),
        _ => Err(StatusError::bad_request("the object must be a JSON object")),
    }
}

fn decode<K: DeserializeOwned>(stored: &Stored) -> Result<K, StatusError> {
    serde_json::from_slice(&stored.bytes).map_err(StatusError::internal)
}

/// An object to seed a server or a fake clientset with: a typed object
/// (`SeedObject::from(&pod)`, any kind with `apiVersion` and `kind` from
/// [`kube::Resource`]) or JSON with `apiVersion` and `kind`
/// (`SeedObject::from(json!({...}))`), so one list can hold objects of several kinds.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubegen_apiserver::{ApiServer, SeedObject};
/// use serde_json::json;
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("typed".into());
/// cm.metadata.namespace = Some("default".into());
/// let seed = [
///     SeedObject::from(&cm),
///     SeedObject::from(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}})),
/// ];
/// let server = ApiServer::new();
/// for obj in seed {
///     server.create_object(obj.into_value()?)?;
/// }
/// assert!(server.objects::<ConfigMap>().get("default", "typed")?.is_some());
/// # Ok::<(), kubegen_apiserver::errors::StatusError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SeedObject(Result<Value, StatusError>);

impl SeedObject {
    /// The object as JSON, or the error serializing it.
    pub fn into_value(self) -> Result<Value, StatusError> {
        self.0
    }
}

impl From<Value> for SeedObject {
    fn from(obj: Value) -> Self {
        SeedObject(Ok(obj))
    }
}

impl<K> From<&K> for SeedObject
where
    K: kube::Resource<DynamicType = ()> + Serialize,
{
    fn from(obj: &K) -> Self {
        SeedObject(encode(obj).map(|mut m| {
            // Types without type metadata of their own still name their kind.
            m.entry("apiVersion")
                .or_insert_with(|| Value::String(K::api_version(&()).into_owned()));
            m.entry("kind")
                .or_insert_with(|| Value::String(K::kind(&()).into_owned()));
            Value::Object(m)
        }))
    }
}
