//! The keyed, indexed map under every [`Indexer`](super::Indexer) (client-go's
//! `ThreadSafeStore`).
//!
//! Contract:
//! - One `parking_lot::RwLock` guards the items and every index together, so a reader
//!   always sees the items and the indices agree: an object returned by `by_index(i, v)`
//!   is, at that instant, stored and has `v` among its index values, and every stored
//!   object with that value is returned.
//! - Readers hold the lock shared: readers never block each other. A writer holds it
//!   exclusively for the data-structure update only: index functions of the new object
//!   (and, for [`ThreadSafeStore::replace`], of every new object) run before the lock is
//!   taken; only the old object's index values are computed under the lock. A waiting
//!   writer makes new readers wait (parking_lot's fairness), so a writer cannot starve.
//! - Writes are linearizable: concurrent `add`/`update`/`delete`/`replace` calls behave as
//!   if they happened one after another.
//! - Index functions are expected to be pure and must not call into the store they
//!   index (the lock is not reentrant: that would deadlock). When one fails on the new
//!   object, the write returns [`StoreError::IndexFunc`] and changes nothing (client-go
//!   panics instead; we surface it as an error the caller must handle). When one fails on
//!   an object already stored (it succeeded before, so it is not deterministic), the key
//!   is removed from every value of that index by a scan, so the indices still never
//!   point at a stale object.
//! - A panicking index function leaves the store unchanged if it panics on the new
//!   object; parking_lot locks do not poison.
//! - Objects are shared `Arc`s: the store never copies or mutates them.
//!
//! - Layout, chosen for reads: each index value's bucket maps key -> object, so
//!   `by_index` copies `Arc`s out of one bucket without looking each key up in the items.
//!   The price is that every write also touches the buckets (to swap the shared object),
//!   even when the object's index values did not change.
//!
//! It does not order `list` results and does not copy objects.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::RwLock;

use super::{IndexError, IndexFunc, Indexers, StoreError};

/// Maps keyed by object keys and index values. aHash is randomly keyed per process, so
/// names chosen by API clients cannot be crafted to collide, and it hashes short strings
/// about twice as fast as std's SipHash.
type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

/// The objects stored under one index value, by key.
type Bucket<T> = HashMap<Arc<str>, Arc<T>>;

/// One registered index function.
struct IndexDef<T: ?Sized> {
    name: String,
    func: IndexFunc<T>,
}

/// Index value -> objects having that value. Buckets are never empty.
struct Index<T: ?Sized> {
    buckets: HashMap<String, Bucket<T>>,
}

impl<T: ?Sized> Default for Index<T> {
    fn default() -> Self {
        Index {
            buckets: HashMap::default(),
        }
    }
}

impl<T: ?Sized> Index<T> {
    /// Files `obj` under every value in `values` (duplicates are harmless).
    fn insert(&mut self, key: &Arc<str>, obj: &Arc<T>, values: Vec<String>) {
        for value in values {
            self.buckets
                .entry(value)
                .or_default()
                .insert(Arc::clone(key), Arc::clone(obj));
        }
    }

    /// Removes `key` from the bucket of `value`, dropping the bucket when it empties.
    fn remove_from(&mut self, key: &str, value: &str) {
        if let Some(bucket) = self.buckets.get_mut(value) {
            bucket.remove(key);
            if bucket.is_empty() {
                self.buckets.remove(value);
            }
        }
    }

    /// Removes `key` from every bucket: the recovery path when the old object's values
    /// cannot be computed.
    fn remove_everywhere(&mut self, key: &str) {
        self.buckets.retain(|_, bucket| {
            bucket.remove(key);
            !bucket.is_empty()
        });
    }

    /// Moves `key` from the values of its old object to `new_values`.
    fn update(
        &mut self,
        key: &Arc<str>,
        obj: &Arc<T>,
        old_values: Option<Result<Vec<String>, IndexError>>,
        new_values: Vec<String>,
    ) {
        match old_values {
            None => {}
            Some(Ok(old)) => {
                // The common case (a namespace, a node name): one value, unchanged. Only
                // the shared object needs replacing.
                if let ([old], [new]) = (old.as_slice(), new_values.as_slice())
                    && old == new
                    && let Some(slot) = self
                        .buckets
                        .get_mut(new.as_str())
                        .and_then(|b| b.get_mut(key))
                {
                    *slot = Arc::clone(obj);
                    return;
                }
                for value in &old {
                    if !new_values.contains(value) {
                        self.remove_from(key, value);
                    }
                }
            }
            Some(Err(_)) => self.remove_everywhere(key),
        }
        self.insert(key, obj, new_values);
    }
}

struct Inner<T: ?Sized> {
    items: HashMap<Arc<str>, Arc<T>>,
    /// Shared with writers computing index values outside the lock; replaced (never
    /// mutated) by `add_indexers`, so `Arc::ptr_eq` tells whether it changed.
    defs: Arc<Vec<IndexDef<T>>>,
    /// Parallel to `defs`.
    indices: Vec<Index<T>>,
    resource_version: String,
}

impl<T: ?Sized> Inner<T> {
    fn position(&self, index_name: &str) -> Result<usize, StoreError> {
        self.defs
            .iter()
            .position(|d| d.name == index_name)
            .ok_or_else(|| StoreError::IndexNotFound(index_name.to_owned()))
    }

    fn bucket(&self, index_name: &str, value: &str) -> Result<Option<&Bucket<T>>, StoreError> {
        let pos = self.position(index_name)?;
        Ok(self.indices[pos].buckets.get(value))
    }
}

/// A thread-safe map from key to shared object, with any number of indices (client-go's
/// `ThreadSafeStore`).
///
/// Most code uses it through an [`Indexer`](super::Indexer), which computes the keys.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Arc;
/// use kubegen_runtime::cache::store::{IndexFunc, ThreadSafeStore};
///
/// // Index words by their first letter.
/// let first: IndexFunc<String> = Arc::new(|w: &String| Ok(w.chars().take(1).map(String::from).collect()));
/// let store = ThreadSafeStore::new(HashMap::from([("first".to_string(), first)]));
/// store.add("1", Arc::new("apple".to_string())).unwrap();
/// store.add("2", Arc::new("avocado".to_string())).unwrap();
/// store.add("3", Arc::new("banana".to_string())).unwrap();
/// assert_eq!(store.index_keys("first", "a").unwrap(), ["1", "2"]);
/// store.delete("1");
/// assert_eq!(store.index_keys("first", "a").unwrap(), ["2"]);
/// ```
pub struct ThreadSafeStore<T: ?Sized> {
    inner: RwLock<Inner<T>>,
}

impl<T: ?Sized> std::fmt::Debug for ThreadSafeStore<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("ThreadSafeStore")
            .field("len", &inner.items.len())
            .field(
                "indexers",
                &inner
                    .defs
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("resource_version", &inner.resource_version)
            .finish()
    }
}

impl<T: ?Sized> Default for ThreadSafeStore<T> {
    fn default() -> Self {
        Self::new(Indexers::new())
    }
}

/// Computes every index's values for `obj`, in `defs` order.
fn values_of<T: ?Sized>(
    defs: &[IndexDef<T>],
    key: &str,
    obj: &T,
) -> Result<Vec<Vec<String>>, StoreError> {
    defs.iter()
        .map(|d| {
            (d.func)(obj).map_err(|source| StoreError::IndexFunc {
                index: d.name.clone(),
                key: key.to_owned(),
                source,
            })
        })
        .collect()
}

/// Builds one index from scratch over `items`.
fn build_index<T: ?Sized>(
    def: &IndexDef<T>,
    items: &HashMap<Arc<str>, Arc<T>>,
) -> Result<Index<T>, StoreError> {
    let mut index = Index::default();
    for (key, obj) in items {
        let values = (def.func)(obj).map_err(|source| StoreError::IndexFunc {
            index: def.name.clone(),
            key: key.to_string(),
            source,
        })?;
        index.insert(key, obj, values);
    }
    Ok(index)
}

fn build_indices<T: ?Sized>(
    defs: &[IndexDef<T>],
    items: &HashMap<Arc<str>, Arc<T>>,
) -> Result<Vec<Index<T>>, StoreError> {
    defs.iter().map(|d| build_index(d, items)).collect()
}

impl<T: ?Sized> ThreadSafeStore<T> {
    /// An empty store with the given index functions.
    pub fn new(indexers: Indexers<T>) -> Self {
        let mut defs: Vec<IndexDef<T>> = indexers
            .into_iter()
            .map(|(name, func)| IndexDef { name, func })
            .collect();
        defs.sort_by(|a, b| a.name.cmp(&b.name));
        let indices = defs.iter().map(|_| Index::default()).collect();
        ThreadSafeStore {
            inner: RwLock::new(Inner {
                items: HashMap::default(),
                defs: Arc::new(defs),
                indices,
                resource_version: String::new(),
            }),
        }
    }

    /// Stores `obj` under `key`, replacing any object there, and re-indexes it.
    ///
    /// Same as [`ThreadSafeStore::update`]. Fails, changing nothing, when an index
    /// function fails on `obj`.
    pub fn add(&self, key: &str, obj: Arc<T>) -> Result<(), StoreError> {
        self.update(key, obj)
    }

    /// Stores `obj` under `key`, replacing any object there, and re-indexes it: the key
    /// leaves the index values of the old object that the new one does not have.
    ///
    /// Fails, changing nothing, when an index function fails on `obj`.
    pub fn update(&self, key: &str, obj: Arc<T>) -> Result<(), StoreError> {
        let mut defs = Arc::clone(&self.inner.read().defs);
        let mut new_values = values_of(&defs, key, &obj)?;
        let mut guard = self.inner.write();
        if !Arc::ptr_eq(&defs, &guard.defs) {
            // Indexers were added meanwhile: compute again for the current set.
            defs = Arc::clone(&guard.defs);
            new_values = values_of(&defs, key, &obj)?;
        }
        let inner = &mut *guard;
        let key: Arc<str> = match inner.items.get_key_value(key) {
            Some((k, _)) => Arc::clone(k),
            None => Arc::from(key),
        };
        let old = inner.items.insert(Arc::clone(&key), Arc::clone(&obj));
        for ((def, index), values) in defs.iter().zip(&mut inner.indices).zip(new_values) {
            let old_values = old.as_deref().map(|o| (def.func)(o));
            index.update(&key, &obj, old_values, values);
        }
        drop(guard);
        // The old object may be freed here: outside the lock.
        drop(old);
        Ok(())
    }

    /// Removes the object under `key` from the store and every index; an index value left
    /// with no objects disappears. Removing an absent key does nothing.
    pub fn delete(&self, key: &str) {
        let mut guard = self.inner.write();
        let inner = &mut *guard;
        let Some(old) = inner.items.remove(key) else {
            return;
        };
        for (def, index) in inner.defs.iter().zip(&mut inner.indices) {
            match (def.func)(&old) {
                Ok(values) => {
                    for value in &values {
                        index.remove_from(key, value);
                    }
                }
                Err(_) => index.remove_everywhere(key),
            }
        }
        drop(guard);
        drop(old);
    }

    /// The object stored under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<T>> {
        self.inner.read().items.get(key).cloned()
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.inner.read().items.contains_key(key)
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Arc<T>> {
        self.inner.read().items.values().cloned().collect()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.inner
            .read()
            .items
            .keys()
            .map(|k| k.to_string())
            .collect()
    }

    /// Stored objects for which `keep` returns true, in no particular order.
    ///
    /// `keep` runs under the read lock: it must be quick and must not call into this
    /// store (the lock is not reentrant).
    pub fn list_filtered(&self, mut keep: impl FnMut(&T) -> bool) -> Vec<Arc<T>> {
        self.inner
            .read()
            .items
            .values()
            .filter(|o| keep(o))
            .cloned()
            .collect()
    }

    /// The number of stored objects.
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.inner.read().items.is_empty()
    }

    /// Swaps in `items` (later entries win over earlier ones with the same key) as the
    /// whole content, rebuilds every index from scratch, and records `resource_version`
    /// as the last one synced.
    ///
    /// The indices are built before the lock is taken. Fails, changing nothing, when an
    /// index function fails on any of the new objects.
    pub fn replace(
        &self,
        items: impl IntoIterator<Item = (String, Arc<T>)>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let items: HashMap<Arc<str>, Arc<T>> =
            items.into_iter().map(|(k, v)| (Arc::from(k), v)).collect();
        let defs = Arc::clone(&self.inner.read().defs);
        let mut indices = build_indices(&defs, &items)?;
        let mut inner = self.inner.write();
        if !Arc::ptr_eq(&defs, &inner.defs) {
            indices = build_indices(&inner.defs, &items)?;
        }
        let old_items = std::mem::replace(&mut inner.items, items);
        let old_indices = std::mem::replace(&mut inner.indices, indices);
        inner.resource_version = resource_version.to_owned();
        drop(inner);
        // Free the old content after unlocking: dropping 100k objects takes a while.
        drop((old_items, old_indices));
        Ok(())
    }

    /// The objects sharing at least one of `obj`'s values of index `index_name`, each
    /// once.
    ///
    /// Fails when there is no such index or its function fails on `obj`.
    pub fn index(&self, index_name: &str, obj: &T) -> Result<Vec<Arc<T>>, StoreError> {
        let inner = self.inner.read();
        let pos = inner.position(index_name)?;
        let values = (inner.defs[pos].func)(obj).map_err(|source| StoreError::IndexQuery {
            index: index_name.to_owned(),
            source,
        })?;
        let buckets = &inner.indices[pos].buckets;
        if let [value] = values.as_slice() {
            return Ok(buckets
                .get(value.as_str())
                .map(|b| b.values().cloned().collect())
                .unwrap_or_default());
        }
        let mut seen: HashSet<&str, ahash::RandomState> = HashSet::default();
        let mut out = Vec::new();
        for bucket in values.iter().filter_map(|v| buckets.get(v.as_str())) {
            for (key, obj) in bucket {
                if seen.insert(key) {
                    out.push(Arc::clone(obj));
                }
            }
        }
        Ok(out)
    }

    /// The objects with `value` among their values of index `index_name`, in no
    /// particular order; empty when none has it.
    ///
    /// Fails only when there is no such index.
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<T>>, StoreError> {
        self.by_index_filtered(index_name, value, |_| true)
    }

    /// The objects of [`ThreadSafeStore::by_index`] for which `keep` returns true.
    ///
    /// `keep` runs under the read lock: it must be quick and must not call into this
    /// store (the lock is not reentrant). Fails only when there is no such index.
    pub fn by_index_filtered(
        &self,
        index_name: &str,
        value: &str,
        mut keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<Arc<T>>, StoreError> {
        let inner = self.inner.read();
        Ok(inner
            .bucket(index_name, value)?
            .map(|b| b.values().filter(|o| keep(o)).cloned().collect())
            .unwrap_or_default())
    }

    /// The keys of the objects with `value` among their values of index `index_name`,
    /// sorted.
    ///
    /// Fails only when there is no such index.
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>, StoreError> {
        let mut keys: Vec<String> = {
            let inner = self.inner.read();
            inner
                .bucket(index_name, value)?
                .map(|b| b.keys().map(|k| k.to_string()).collect())
                .unwrap_or_default()
        };
        keys.sort_unstable();
        Ok(keys)
    }

    /// Every value of index `index_name` that at least one stored object has, sorted;
    /// empty (not an error) when there is no such index.
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        let mut values: Vec<String> = {
            let inner = self.inner.read();
            match inner.position(index_name) {
                Ok(pos) => inner.indices[pos].buckets.keys().cloned().collect(),
                Err(_) => Vec::new(),
            }
        };
        values.sort_unstable();
        values
    }

    /// The registered index functions, by name.
    pub fn get_indexers(&self) -> Indexers<T> {
        self.inner
            .read()
            .defs
            .iter()
            .map(|d| (d.name.clone(), Arc::clone(&d.func)))
            .collect()
    }

    /// Whether an index named `index_name` is registered.
    pub fn has_index(&self, index_name: &str) -> bool {
        self.inner.read().position(index_name).is_ok()
    }

    /// Registers more index functions and indexes the objects already stored with them,
    /// so they are queryable at once.
    ///
    /// Fails, changing nothing, when a name is already registered
    /// ([`StoreError::IndexerConflict`], naming all such names) or a new function fails
    /// on a stored object.
    pub fn add_indexers(&self, indexers: Indexers<T>) -> Result<(), StoreError> {
        let mut inner = self.inner.write();
        let mut conflicts: Vec<String> = indexers
            .keys()
            .filter(|name| inner.position(name).is_ok())
            .cloned()
            .collect();
        if !conflicts.is_empty() {
            conflicts.sort_unstable();
            return Err(StoreError::IndexerConflict(conflicts));
        }
        let mut added: Vec<IndexDef<T>> = indexers
            .into_iter()
            .map(|(name, func)| IndexDef { name, func })
            .collect();
        added.sort_by(|a, b| a.name.cmp(&b.name));
        let new_indices = build_indices(&added, &inner.items)?;
        let defs: Vec<IndexDef<T>> = inner
            .defs
            .iter()
            .map(|d| IndexDef {
                name: d.name.clone(),
                func: Arc::clone(&d.func),
            })
            .chain(added)
            .collect();
        inner.defs = Arc::new(defs);
        inner.indices.extend(new_indices);
        Ok(())
    }

    /// Records `resource_version` as the last one the store is synced to, without
    /// changing its content (a watch bookmark).
    pub fn bookmark(&self, resource_version: &str) {
        resource_version.clone_into(&mut self.inner.write().resource_version);
    }

    /// The resource version given to the last [`ThreadSafeStore::replace`] or
    /// [`ThreadSafeStore::bookmark`]; empty before either.
    pub fn last_store_sync_resource_version(&self) -> String {
        self.inner.read().resource_version.clone()
    }
}
