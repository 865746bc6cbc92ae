//! The informer's local cache: a thread-safe keyed store with indices (client-go's
//! `Store`, `Indexer` and `ThreadSafeStore`).
//!
//! Contract:
//! - [`ThreadSafeStore`] maps keys to shared objects (`Arc<T>`) and keeps any number of
//!   indices (index name -> index value -> objects) exactly in step with the items: after
//!   every write, `by_index(i, v)` returns precisely the stored objects whose index
//!   function `i` yields `v`, and an index value no object has any more is gone.
//! - [`Indexer`] wraps it with a key function (usually [`meta_namespace_key_func`]: the
//!   `namespace/name` key) and an optional transformer applied to objects on `add`,
//!   `update` and `replace` (never on `delete`). Clones of an `Indexer` share one store.
//! - [`ReadOnlyIndexer`] is an indexer's reads without its writes: what informers and
//!   listers hand out (only the informer writes its cache).
//! - Locking: one read-write lock (`parking_lot::RwLock`) per store. Reads (`get`,
//!   `list`, `by_index`, ...) take it shared, so readers never block each other; writes
//!   take it exclusively, only for the data-structure update (index functions of the new
//!   object run before). A queued writer makes new readers wait, so writers do not
//!   starve. Nothing is held across calls: every method returns owned snapshots.
//! - Objects are never copied or mutated: readers get the same `Arc`s the writer stored.
//!   Mutating an object behind an `Arc` (interior mutability) would desynchronise the
//!   indices; the types the runtime stores have none.
//! - An index function that fails on a new object makes that write fail with
//!   [`StoreError::IndexFunc`] and leave the store unchanged (client-go panics; a Rust
//!   caller gets an error it must handle instead). `delete` cannot fail.
//! - The namespace index ([`NAMESPACE_INDEX`], [`meta_namespace_index_func`]) is what
//!   namespace listers query.
//!
//! It does not order results (`list`, `by_index` are unordered; `index_keys` and
//! `list_index_func_values` are sorted), does not validate keys, and does not notify
//! anyone of changes: that is the informer's job.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::cache::keys::KnownObjects;
pub use crate::cache::keys::{KeyError, KeyFunc, TransformError, TransformFunc};
use crate::cache::DeletedFinalStateUnknown;
use crate::object::{meta_namespace_key, object_key, AnyObject};

mod thread_safe;

pub use thread_safe::ThreadSafeStore;

/// Computes the values an object is filed under in one index (zero, one or many).
pub type IndexFunc<T> = Arc<dyn Fn(&T) -> Result<Vec<String>, IndexError> + Send + Sync>;

/// Index functions by index name.
pub type Indexers<T> = HashMap<String, IndexFunc<T>>;

/// The name of the namespace index (client-go's `NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// An index function could not compute an object's index values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct IndexError {
    /// What went wrong.
    pub message: String,
}

impl IndexError {
    /// An index error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        IndexError {
            message: message.into(),
        }
    }
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The key function failed (client-go's `KeyError`; its message starts "couldn't
    /// create key for object").
    #[error(transparent)]
    Key(#[from] KeyError),
    /// No index with this name is registered.
    #[error("Index with name {0} does not exist")]
    IndexNotFound(String),
    /// `add_indexers` was given names already registered (all of them, sorted).
    #[error("indexer conflict: {}", .0.join(", "))]
    IndexerConflict(Vec<String>),
    /// An index function failed on an object being stored; nothing was changed.
    #[error("unable to calculate an index entry for key {key:?} on index {index:?}: {source}")]
    IndexFunc {
        /// The index.
        index: String,
        /// The key of the object.
        key: String,
        /// The index function's error.
        source: IndexError,
    },
    /// An index function failed on the object given to [`ThreadSafeStore::index`].
    #[error("unable to calculate index values on index {index:?}: {source}")]
    IndexQuery {
        /// The index.
        index: String,
        /// The index function's error.
        source: IndexError,
    },
    /// The transformer rejected an object; nothing was changed.
    #[error("transforming: {0}")]
    Transform(#[from] TransformError),
}

/// A key given explicitly instead of computed from an object (client-go's
/// `ExplicitKey`): its key is the string itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExplicitKey(pub String);

/// Whatever has a `namespace/name` key, as client-go's `MetaNamespaceKeyFunc` and
/// `DeletionHandlingMetaNamespaceKeyFunc` compute it.
///
/// Implemented for every [`kube::Resource`] and `dyn AnyObject` (`namespace/name`, or
/// `name` when cluster-scoped), for [`ExplicitKey`] (the string) and for
/// [`DeletedFinalStateUnknown`] (the key it records; this is what makes
/// [`meta_namespace_key_func`] deletion-handling). Typed objects always have metadata, so
/// unlike client-go's function this cannot fail.
pub trait MetaNamespaceKey {
    /// The key.
    fn meta_namespace_key(&self) -> String;
}

impl<K: kube::Resource> MetaNamespaceKey for K {
    fn meta_namespace_key(&self) -> String {
        object_key(self)
    }
}

impl MetaNamespaceKey for dyn AnyObject {
    fn meta_namespace_key(&self) -> String {
        meta_namespace_key(self.object_meta())
    }
}

impl MetaNamespaceKey for ExplicitKey {
    fn meta_namespace_key(&self) -> String {
        self.0.clone()
    }
}

impl<T> MetaNamespaceKey for DeletedFinalStateUnknown<T> {
    fn meta_namespace_key(&self) -> String {
        self.key.clone()
    }
}

/// The `namespace/name` key function (client-go's `MetaNamespaceKeyFunc`, and its
/// `DeletionHandlingMetaNamespaceKeyFunc` for tombstones; see [`MetaNamespaceKey`]).
///
/// ```
/// use kubegen_runtime::cache::store::{meta_namespace_key_func, ExplicitKey};
/// use kubegen_runtime::cache::DeletedFinalStateUnknown;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("ns".into());
/// pod.metadata.name = Some("foo".into());
/// assert_eq!(meta_namespace_key_func::<Pod>()(&pod).unwrap(), "ns/foo");
/// assert_eq!(meta_namespace_key_func()(&ExplicitKey("a/b".into())).unwrap(), "a/b");
/// let gone = DeletedFinalStateUnknown::<Pod> { key: "ns/x".into(), obj: None };
/// assert_eq!(meta_namespace_key_func()(&gone).unwrap(), "ns/x");
/// ```
pub fn meta_namespace_key_func<T: MetaNamespaceKey + ?Sized>() -> KeyFunc<T> {
    Arc::new(|obj: &T| Ok(obj.meta_namespace_key()))
}

/// The namespace index function (client-go's `MetaNamespaceIndexFunc`): an object's
/// namespace, `""` for a cluster-scoped object.
///
/// Works for every typed object and for `dyn AnyObject`.
pub fn meta_namespace_index_func<T: AnyObject + ?Sized>() -> IndexFunc<T> {
    Arc::new(|obj: &T| {
        Ok(vec![obj
            .object_meta()
            .namespace
            .clone()
            .unwrap_or_default()])
    })
}

/// The indexers every informer installs: just the namespace index.
pub fn namespace_indexers<T: AnyObject + ?Sized>() -> Indexers<T> {
    Indexers::from([(NAMESPACE_INDEX.to_owned(), meta_namespace_index_func())])
}

/// A [`ThreadSafeStore`] with a key function and an optional transformer (client-go's
/// `cache` behind `NewStore` and `NewIndexer`).
///
/// Clones share the same store. A store without indices is an `Indexer` created with no
/// indexers.
///
/// ```
/// use std::sync::Arc;
/// use kubegen_runtime::cache::store::{
///     meta_namespace_key_func, namespace_indexers, Indexer, NAMESPACE_INDEX,
/// };
/// use k8s_openapi::api::core::v1::Pod;
///
/// fn pod(ns: &str, name: &str) -> Pod {
///     let mut pod = Pod::default();
///     pod.metadata.namespace = Some(ns.into());
///     pod.metadata.name = Some(name.into());
///     pod
/// }
///
/// let indexer = Indexer::new(meta_namespace_key_func(), namespace_indexers());
/// indexer.add(pod("ns1", "a")).unwrap();
/// indexer.add(pod("ns2", "b")).unwrap();
/// assert!(indexer.get_by_key("ns1/a").is_some());
/// assert_eq!(indexer.index_keys(NAMESPACE_INDEX, "ns2").unwrap(), ["ns2/b"]);
/// indexer.delete_by_key("ns1/a");
/// assert_eq!(indexer.len(), 1);
/// ```
pub struct Indexer<T: ?Sized> {
    view: ReadOnlyIndexer<T>,
    transformer: Option<TransformFunc<T>>,
}

/// A read-only view of an [`Indexer`]: every read of the indexer, none of its writes
/// (kube-runtime's `Store` beside its `Writer`). It is what an informer and a lister hand
/// out, so that "only the informer writes its cache" is a type, not a comment. Clones and
/// the indexer it came from share one store; an `&Indexer` derefs to it.
///
/// ```
/// use kubegen_runtime::cache::store::{meta_namespace_key_func, namespace_indexers, Indexer};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let indexer: Indexer<Pod> = Indexer::new(meta_namespace_key_func(), namespace_indexers());
/// let view = indexer.read_only();
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web".into());
/// indexer.add(pod).unwrap();
/// assert!(view.get_by_key("web").is_some());
/// ```
///
/// Writing through the view does not compile:
///
/// ```compile_fail
/// use kubegen_runtime::cache::store::{meta_namespace_key_func, namespace_indexers, Indexer};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let indexer: Indexer<Pod> = Indexer::new(meta_namespace_key_func(), namespace_indexers());
/// indexer.read_only().add(Pod::default());
/// ```
pub struct ReadOnlyIndexer<T: ?Sized> {
    store: Arc<ThreadSafeStore<T>>,
    key_func: KeyFunc<T>,
}

impl<T: ?Sized> Clone for ReadOnlyIndexer<T> {
    fn clone(&self) -> Self {
        ReadOnlyIndexer {
            store: Arc::clone(&self.store),
            key_func: Arc::clone(&self.key_func),
        }
    }
}

impl<T: ?Sized> fmt::Debug for ReadOnlyIndexer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadOnlyIndexer")
            .field("store", &self.store)
            .finish()
    }
}

impl<T: ?Sized> Clone for Indexer<T> {
    fn clone(&self) -> Self {
        Indexer {
            view: self.view.clone(),
            transformer: self.transformer.clone(),
        }
    }
}

impl<T: ?Sized> fmt::Debug for Indexer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Indexer")
            .field("store", &self.view.store)
            .field("transformer", &self.transformer.is_some())
            .finish()
    }
}

/// Every read of an indexer is a read of its view.
impl<T: ?Sized> std::ops::Deref for Indexer<T> {
    type Target = ReadOnlyIndexer<T>;

    fn deref(&self) -> &ReadOnlyIndexer<T> {
        &self.view
    }
}

impl<T: ?Sized> From<Indexer<T>> for ReadOnlyIndexer<T> {
    fn from(indexer: Indexer<T>) -> Self {
        indexer.view
    }
}

impl<T: ?Sized> ReadOnlyIndexer<T> {
    /// The store, for the crate's own reads (listers' filtered index reads).
    pub(crate) fn store(&self) -> &ThreadSafeStore<T> {
        &self.store
    }

    /// The key `obj` is stored under.
    pub fn key_of(&self, obj: &T) -> Result<String, StoreError> {
        Ok((self.key_func)(obj)?)
    }

    /// The object stored under `obj`'s key.
    pub fn get(&self, obj: &T) -> Result<Option<Arc<T>>, StoreError> {
        Ok(self.store.get(&self.key_of(obj)?))
    }

    /// The object stored under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        self.store.get(key)
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Arc<T>> {
        self.store.list()
    }

    /// The stored objects `keep` accepts, in no particular order.
    pub fn list_filtered(&self, keep: impl FnMut(&T) -> bool) -> Vec<Arc<T>> {
        self.store.list_filtered(keep)
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.store.list_keys()
    }

    /// The number of stored objects.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// See [`ThreadSafeStore::index`].
    pub fn index(&self, index_name: &str, obj: &T) -> Result<Vec<Arc<T>>, StoreError> {
        self.store.index(index_name, obj)
    }

    /// See [`ThreadSafeStore::by_index`].
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<T>>, StoreError> {
        self.store.by_index(index_name, value)
    }

    /// See [`ThreadSafeStore::index_keys`].
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>, StoreError> {
        self.store.index_keys(index_name, value)
    }

    /// See [`ThreadSafeStore::list_index_func_values`].
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.store.list_index_func_values(index_name)
    }

    /// See [`ThreadSafeStore::get_indexers`].
    pub fn get_indexers(&self) -> Indexers<T> {
        self.store.get_indexers()
    }

    /// Whether an index of this name exists.
    pub fn has_index(&self, index_name: &str) -> bool {
        self.store.has_index(index_name)
    }

    /// See [`ThreadSafeStore::last_store_sync_resource_version`].
    pub fn last_store_sync_resource_version(&self) -> String {
        self.store.last_store_sync_resource_version()
    }
}

impl<T: ?Sized> Indexer<T> {
    /// An empty store keyed by `key_func`, with the given indices.
    pub fn new(key_func: KeyFunc<T>, indexers: Indexers<T>) -> Self {
        Indexer {
            view: ReadOnlyIndexer {
                store: Arc::new(ThreadSafeStore::new(indexers)),
                key_func,
            },
            transformer: None,
        }
    }

    /// Applies `transformer` to every object given to `add`, `update` and `replace`
    /// before it is stored (not to `delete`).
    ///
    /// Set it before cloning the indexer: clones made earlier keep the old setting.
    pub fn with_transformer(mut self, transformer: TransformFunc<T>) -> Self {
        self.transformer = Some(transformer);
        self
    }

    /// A read-only view of this indexer, for whoever must not write it.
    pub fn read_only(&self) -> ReadOnlyIndexer<T> {
        self.view.clone()
    }

    /// The underlying store, for key-level operations.
    pub fn thread_safe_store(&self) -> &ThreadSafeStore<T> {
        &self.view.store
    }

    fn transform(&self, obj: Arc<T>) -> Result<Arc<T>, StoreError> {
        match &self.transformer {
            Some(t) => Ok(t(obj)?),
            None => Ok(obj),
        }
    }

    /// Stores `obj` under its key (replacing any object there) and indexes it.
    pub fn add(&self, obj: impl Into<Arc<T>>) -> Result<(), StoreError> {
        self.update(obj)
    }

    /// Stores `obj` under its key (replacing any object there) and re-indexes it. The key
    /// is computed before the transformer runs.
    pub fn update(&self, obj: impl Into<Arc<T>>) -> Result<(), StoreError> {
        let obj = obj.into();
        let key = self.key_of(&obj)?;
        let obj = self.transform(obj)?;
        self.view.store.update(&key, obj)
    }

    /// Removes the object stored under `obj`'s key; nothing happens when there is none.
    /// Fails only when the key function fails.
    pub fn delete(&self, obj: &T) -> Result<(), StoreError> {
        let key = self.key_of(obj)?;
        self.view.store.delete(&key);
        Ok(())
    }

    /// Removes the object stored under `key` (e.g. the key of a
    /// [`DeletedFinalStateUnknown`]); nothing happens when there is none.
    pub fn delete_by_key(&self, key: &str) {
        self.view.store.delete(key);
    }

    /// Replaces the whole content with `objs` (transformed, keyed) and rebuilds the
    /// indices; records `resource_version`. Fails, changing nothing, when a key function,
    /// the transformer or an index function fails on any object.
    pub fn replace(
        &self,
        objs: impl IntoIterator<Item = Arc<T>>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let items = objs
            .into_iter()
            .map(|obj| {
                let key = self.key_of(&obj)?;
                Ok((key, self.transform(obj)?))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.view.store.replace(items, resource_version)
    }

    /// Does nothing: a store has nothing to resync (client-go's `Resync` on a store).
    pub fn resync(&self) {}

    /// See [`ThreadSafeStore::add_indexers`].
    pub fn add_indexers(&self, indexers: Indexers<T>) -> Result<(), StoreError> {
        self.view.store.add_indexers(indexers)
    }

    /// See [`ThreadSafeStore::bookmark`].
    pub fn bookmark(&self, resource_version: &str) {
        self.view.store.bookmark(resource_version)
    }
}

/// An indexer is the DeltaFIFO's "known objects" (client-go's `KeyListerGetter`): what
/// the informer already holds, consulted for deletions and resyncs.
impl<T: Send + Sync> KnownObjects<T> for Indexer<T> {
    fn list_keys(&self) -> Vec<String> {
        self.store.list_keys()
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        self.store.get(key)
    }
}

#[cfg(test)]
mod tests;
