//! The DeltaFIFO: the queue between a reflector and an informer (client-go's `DeltaFIFO`).
//!
//! A [`DeltaFifo`] holds, for every key, the list of changes ([`Delta`]s) seen for that
//! key since it was last popped, oldest first, and a FIFO of the keys. A reflector feeds
//! it ([`add`](DeltaFifo::add), [`update`](DeltaFifo::update),
//! [`delete`](DeltaFifo::delete), [`replace`](DeltaFifo::replace) after a list,
//! [`resync`](DeltaFifo::resync) on a timer); an informer drains it with
//! [`pop`](DeltaFifo::pop).
//!
//! # Contract
//!
//! - **Ordering.** Keys are popped in the order in which they got their first delta
//!   since they were last popped. A delta for a key that is already queued joins that
//!   key's list and does not move the key ("no line jumping").
//! - **Coalescing.** One pop hands over every delta queued for one key, oldest first.
//!   Nothing is dropped or merged, with one exception: when a `Deleted` delta follows a
//!   `Deleted` delta, the two collapse into one, which keeps the older object unless the
//!   older one is a [`DeletedFinalStateUnknown`] tombstone (then the newer one is kept).
//! - **Deletes of unknown keys are ignored.** Without known objects, a delete for a key
//!   that has no queued deltas adds nothing; with known objects, only when the key is in
//!   neither the queue nor the known objects.
//! - **Replace** (after a list) is atomic with respect to every other operation and has
//!   three phases: (1) a `Replaced` delta (or `Sync`, unless
//!   [`emit_delta_type_replaced`](DeltaFifoOptions::emit_delta_type_replaced) is set)
//!   for each listed object; (2) for each queued key not in the list, a `Deleted`
//!   tombstone carrying the newest object queued for it (queue order); (3) with known
//!   objects, for each known key that is neither listed nor queued, a `Deleted`
//!   tombstone carrying the known object (in [`KnownObjects::list_keys`] order).
//! - **Resync** queues a `Sync` delta with the known object for every known key that has
//!   no queued deltas; a queued key is skipped so that a stale known version never
//!   follows a newer queued one. Without known objects it does nothing.
//! - **`has_synced`** is true once the FIFO is populated and the first
//!   [`replace`](DeltaFifo::replace)'s items have all been popped: immediately after the
//!   first add/update/delete when that came before any replace, else once as many pops
//!   as the first replace queued keys (unique listed keys plus tombstones) have
//!   happened. Later replaces do not change it. A popper learns whether the deltas it
//!   got belong to the initial list through `pop`'s `is_in_initial_list` flag.
//! - **Keys** come from the key function applied to the object as received, before the
//!   transformer; a tombstone's key is its own `key`. A transformer must not change an
//!   object's key. The transformer runs once on every object passed to add, update,
//!   delete and replace; never on `Sync` deltas (their objects come from the known
//!   objects, already transformed) nor on tombstones. A transformer may reject an
//!   object ([`TransformError`]): the operation then fails with
//!   [`StoreError::Transform`] and changes nothing.
//! - **Errors from processing.** When the `process` closure given to `pop` fails, the
//!   popped deltas are dropped (not requeued) and the error is returned in
//!   [`PopError::Process`]. This is client-go's behaviour since 1.33, which removed
//!   `ErrRequeue`; a caller that needs a retry re-adds the object itself.
//! - **Close.** [`close`](DeltaFifo::close) wakes every waiting `pop`; those return
//!   [`PopError::Closed`] once the queue is empty. A closed FIFO still accepts changes
//!   and still hands out what it holds.
//!
//! # Concurrency
//!
//! Every method takes `&self`; share the FIFO as `Arc<DeltaFifo<T>>`. One mutex guards
//! the state. `pop` runs its `process` closure while holding that mutex, so no change and
//! no other `process` call interleaves with it: whatever `process` writes (the informer's
//! indexer) is consistent with the queue when the next operation runs. Consequently
//! `process` must be quick and synchronous, must not call back into the FIFO (the mutex
//! is not reentrant: it would deadlock), and several concurrent poppers are allowed but
//! their `process` calls run one at a time. The FIFO calls [`KnownObjects`] while holding
//! its mutex: the lock order is FIFO first, known objects second, and an implementation
//! of [`KnownObjects`] must never call into the FIFO. `pop` is cancel-safe: dropping a
//! waiting `pop` loses nothing.
//!
//! It does not bound its size, copy objects (they are shared as `Arc<T>`), or persist
//! anything.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::Notify;

pub use crate::cache::keys::{KeyError, KeyFunc, KnownObjects, TransformError, TransformFunc};
use crate::cache::store::StoreError;
use crate::cache::DeletedFinalStateUnknown;

/// What happened to an object (client-go's `DeltaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The object was created (a watch `ADDED` event).
    Added,
    /// The object was changed (a watch `MODIFIED` event).
    Updated,
    /// The object was deleted; the delta holds its last known state, possibly a
    /// tombstone.
    Deleted,
    /// The object was listed by a relist; whether it changed is unknown. Emitted only
    /// when [`DeltaFifoOptions::emit_delta_type_replaced`] is set (informers set it).
    Replaced,
    /// A periodic resync, or a relisted object when `Replaced` is not emitted.
    Sync,
}

/// The object a [`Delta`] carries: the object itself, or for a deletion whose final state
/// was missed, a tombstone.
pub enum DeltaObject<T> {
    /// The object's state after the change (for `Deleted`: its last known state).
    Object(Arc<T>),
    /// A deletion found by a relist: the key and the last known state, if any.
    Tombstone(DeletedFinalStateUnknown<T>),
}

impl<T> DeltaObject<T> {
    /// The object, or for a tombstone the last state it carries (if any).
    pub fn object(&self) -> Option<&Arc<T>> {
        match self {
            DeltaObject::Object(obj) => Some(obj),
            DeltaObject::Tombstone(tombstone) => tombstone.obj.as_ref(),
        }
    }

    /// The tombstone, when this is one.
    pub fn tombstone(&self) -> Option<&DeletedFinalStateUnknown<T>> {
        match self {
            DeltaObject::Object(_) => None,
            DeltaObject::Tombstone(tombstone) => Some(tombstone),
        }
    }

    /// Whether this is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeltaObject::Tombstone(_))
    }
}

impl<T> Clone for DeltaObject<T> {
    fn clone(&self) -> Self {
        match self {
            DeltaObject::Object(obj) => DeltaObject::Object(Arc::clone(obj)),
            DeltaObject::Tombstone(tombstone) => DeltaObject::Tombstone(DeletedFinalStateUnknown {
                key: tombstone.key.clone(),
                obj: tombstone.obj.clone(),
            }),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for DeltaObject<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeltaObject::Object(obj) => f.debug_tuple("Object").field(obj).finish(),
            DeltaObject::Tombstone(tombstone) => {
                f.debug_tuple("Tombstone").field(tombstone).finish()
            }
        }
    }
}

impl<T: PartialEq> PartialEq for DeltaObject<T> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (DeltaObject::Object(a), DeltaObject::Object(b)) => a == b,
            (DeltaObject::Tombstone(a), DeltaObject::Tombstone(b)) => a == b,
            _ => false,
        }
    }
}

/// One change to one object (client-go's `Delta`).
#[derive(Debug, PartialEq)]
pub struct Delta<T> {
    /// What happened.
    pub delta_type: DeltaType,
    /// The object after the change.
    pub object: DeltaObject<T>,
}

impl<T> Delta<T> {
    /// A delta carrying an object.
    pub fn new(delta_type: DeltaType, obj: Arc<T>) -> Self {
        Delta {
            delta_type,
            object: DeltaObject::Object(obj),
        }
    }

    /// A `Deleted` delta carrying a tombstone.
    pub fn tombstone(key: impl Into<String>, obj: Option<Arc<T>>) -> Self {
        Delta {
            delta_type: DeltaType::Deleted,
            object: DeltaObject::Tombstone(DeletedFinalStateUnknown {
                key: key.into(),
                obj,
            }),
        }
    }
}

impl<T> Clone for Delta<T> {
    fn clone(&self) -> Self {
        Delta {
            delta_type: self.delta_type,
            object: self.object.clone(),
        }
    }
}

/// The changes to one object, oldest first (client-go's `Deltas`). A `Deltas` handed out
/// by a FIFO is never empty.
#[derive(Debug, PartialEq)]
pub struct Deltas<T>(Vec<Delta<T>>);

impl<T> Deltas<T> {
    /// The oldest change.
    pub fn oldest(&self) -> Option<&Delta<T>> {
        self.0.first()
    }

    /// The newest change.
    pub fn newest(&self) -> Option<&Delta<T>> {
        self.0.last()
    }

    /// The changes, oldest first.
    pub fn into_vec(self) -> Vec<Delta<T>> {
        self.0
    }

    /// Appends `delta`, then collapses a trailing pair of deletions into one: the older
    /// one is kept, unless it is a tombstone.
    fn push_deduped(&mut self, delta: Delta<T>) {
        let both_deleted = delta.delta_type == DeltaType::Deleted
            && self
                .0
                .last()
                .is_some_and(|last| last.delta_type == DeltaType::Deleted);
        if !both_deleted {
            self.0.push(delta);
            return;
        }
        if let Some(older) = self.0.last_mut()
            && older.object.is_tombstone()
        {
            *older = delta;
        }
    }
}

impl<T> Clone for Deltas<T> {
    fn clone(&self) -> Self {
        Deltas(self.0.clone())
    }
}

impl<T> From<Vec<Delta<T>>> for Deltas<T> {
    fn from(deltas: Vec<Delta<T>>) -> Self {
        Deltas(deltas)
    }
}

impl<T> Deref for Deltas<T> {
    type Target = [Delta<T>];

    fn deref(&self) -> &[Delta<T>] {
        &self.0
    }
}

impl<T> IntoIterator for Deltas<T> {
    type Item = Delta<T>;
    type IntoIter = std::vec::IntoIter<Delta<T>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Deltas<T> {
    type Item = &'a Delta<T>;
    type IntoIter = std::slice::Iter<'a, Delta<T>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Why [`DeltaFifo::pop`] returned no result.
#[derive(Debug, thiserror::Error)]
pub enum PopError<E> {
    /// The FIFO is closed and empty (client-go's `ErrFIFOClosed`).
    #[error("DeltaFIFO: manipulating with closed queue")]
    Closed,
    /// The `process` closure failed; the popped deltas were dropped.
    #[error("processing popped deltas failed: {0}")]
    Process(#[source] E),
}

/// How a [`DeltaFifo`] is built (client-go's `DeltaFIFOOptions`).
///
/// For a [`kube::Resource`], `DeltaFifoOptions::default()` keys objects by
/// `namespace/name` ([`crate::object::object_key`]); any other type starts from
/// [`DeltaFifoOptions::new`] with its key function.
pub struct DeltaFifoOptions<T> {
    /// Computes the key of an object.
    pub key_function: KeyFunc<T>,
    /// The objects the consumer already holds, used by delete, replace and resync.
    pub known_objects: Option<Arc<dyn KnownObjects<T>>>,
    /// Whether `replace` emits `Replaced` deltas (else `Sync`, client-go's default for
    /// backward compatibility; informers set this).
    pub emit_delta_type_replaced: bool,
    /// Applied once to each object given to add, update, delete and replace.
    pub transformer: Option<TransformFunc<T>>,
}

impl<T> DeltaFifoOptions<T> {
    /// Options with the given key function, no known objects, `Sync` on replace and no
    /// transformer.
    pub fn new(
        key_function: impl Fn(&T) -> Result<String, KeyError> + Send + Sync + 'static,
    ) -> Self {
        DeltaFifoOptions {
            key_function: Arc::new(key_function),
            known_objects: None,
            emit_delta_type_replaced: false,
            transformer: None,
        }
    }

    /// Sets the known objects.
    pub fn known_objects(mut self, known_objects: Arc<dyn KnownObjects<T>>) -> Self {
        self.known_objects = Some(known_objects);
        self
    }

    /// Sets whether `replace` emits `Replaced` (true) or `Sync` (false) deltas.
    pub fn emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_delta_type_replaced = emit;
        self
    }

    /// Sets the transformer.
    pub fn transformer(
        mut self,
        transformer: impl Fn(Arc<T>) -> Result<Arc<T>, TransformError> + Send + Sync + 'static,
    ) -> Self {
        self.transformer = Some(Arc::new(transformer));
        self
    }
}

impl<K: kube::Resource + 'static> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        DeltaFifoOptions::new(|obj: &K| Ok(crate::object::object_key(obj)))
    }
}

impl<T> fmt::Debug for DeltaFifoOptions<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoOptions")
            .field("known_objects", &self.known_objects.is_some())
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced)
            .field("transformer", &self.transformer.is_some())
            .finish_non_exhaustive()
    }
}

/// What both FIFOs share: the lock around a queue and the first-list bookkeeping, the
/// wake-up for waiting poppers, and the intake (key function, transformer).
pub(crate) struct FifoCore<T, Q> {
    state: Mutex<CoreState<Q>>,
    /// Woken when something is queued or the FIFO closes.
    changed: Notify,
    key_function: KeyFunc<T>,
    transformer: Option<TransformFunc<T>>,
}

/// The state behind a FIFO's mutex: its queue and where it stands with its first list.
pub(crate) struct CoreState<Q> {
    pub(crate) queue: Q,
    /// The first add/update/delete or replace has happened.
    populated: bool,
    /// Pops left before the first replace's items are all out.
    initial_population_count: usize,
    closed: bool,
}

impl<Q> CoreState<Q> {
    fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0
    }

    /// An add, update or delete happened.
    pub(crate) fn mark_populated(&mut self) {
        self.populated = true;
    }

    /// A replace happened that queued `pops` pops; only one that populates the FIFO
    /// decides how many pops `has_synced` waits for.
    pub(crate) fn replaced(&mut self, pops: usize) {
        if !self.populated {
            self.populated = true;
            self.initial_population_count = pops;
        }
    }

    /// Counts one pop towards the first list; returns whether the popped item belongs to
    /// it (the FIFO had not synced before this pop).
    pub(crate) fn count_pop(&mut self) -> bool {
        let is_in_initial_list = !self.has_synced();
        self.initial_population_count = self.initial_population_count.saturating_sub(1);
        is_in_initial_list
    }
}

/// A FIFO's queue, as far as [`FifoCore`] needs to know it.
pub(crate) trait Queue {
    /// How many pops it holds.
    fn len(&self) -> usize;
}

impl<T, Q: Queue> FifoCore<T, Q> {
    pub(crate) fn new(
        queue: Q,
        key_function: KeyFunc<T>,
        transformer: Option<TransformFunc<T>>,
    ) -> Self {
        FifoCore {
            state: Mutex::new(CoreState {
                queue,
                populated: false,
                initial_population_count: 0,
                closed: false,
            }),
            changed: Notify::new(),
            key_function,
            transformer,
        }
    }

    pub(crate) fn key_of(&self, obj: &T) -> Result<String, KeyError> {
        (self.key_function)(obj)
    }

    /// A tombstone's own key, else the object's key.
    pub(crate) fn key_of_object(&self, obj: &DeltaObject<T>) -> Result<String, KeyError> {
        match obj {
            DeltaObject::Object(obj) => self.key_of(obj),
            DeltaObject::Tombstone(tombstone) => Ok(tombstone.key.clone()),
        }
    }

    pub(crate) fn transform(&self, obj: Arc<T>) -> Result<Arc<T>, TransformError> {
        match &self.transformer {
            Some(transform) => transform(obj),
            None => Ok(obj),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, CoreState<Q>> {
        self.state.lock()
    }

    /// To call after queueing something.
    pub(crate) fn wake_poppers(&self) {
        self.changed.notify_waiters();
    }

    /// Locks the state once something is queued or the FIFO is closed.
    pub(crate) async fn lock_for_pop(&self) -> MutexGuard<'_, CoreState<Q>> {
        loop {
            let mut notified = std::pin::pin!(self.changed.notified());
            // Register before looking, so a change between the look and the wait wakes us.
            notified.as_mut().enable();
            {
                let state = self.state.lock();
                if state.queue.len() > 0 || state.closed {
                    return state;
                }
            }
            notified.await;
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    pub(crate) fn has_synced(&self) -> bool {
        self.state.lock().has_synced()
    }

    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.wake_poppers();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

impl<T, Q: Queue> fmt::Debug for FifoCore<T, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("FifoCore")
            .field("len", &state.queue.len())
            .field("populated", &state.populated)
            .field("initial_population_count", &state.initial_population_count)
            .field("closed", &state.closed)
            .finish_non_exhaustive()
    }
}

/// The DeltaFIFO's queue. Invariant: a key is in `keys` iff it is in `items`, at most
/// once, and its `Deltas` are non-empty.
struct DeltaQueue<T> {
    items: HashMap<String, Deltas<T>>,
    keys: VecDeque<String>,
}

impl<T> Queue for DeltaQueue<T> {
    fn len(&self) -> usize {
        self.keys.len()
    }
}

impl<T> DeltaQueue<T> {
    /// Appends `delta` to `key`'s deltas, queueing the key if it is new. Returns whether
    /// the key was newly queued.
    fn push(&mut self, key: String, delta: Delta<T>) -> bool {
        match self.items.get_mut(&key) {
            Some(deltas) => {
                deltas.push_deduped(delta);
                false
            }
            None => {
                self.keys.push_back(key.clone());
                self.items.insert(key, Deltas(vec![delta]));
                true
            }
        }
    }
}

/// client-go's DeltaFIFO; see the [module documentation](self) for its contract.
///
/// ```
/// use std::sync::Arc;
/// use kubegen_runtime::cache::delta_fifo::{DeltaFifo, DeltaFifoOptions, DeltaType, PopError};
///
/// #[derive(Debug)]
/// struct Item { name: String, value: u32 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let fifo = DeltaFifo::new(DeltaFifoOptions::new(|item: &Item| Ok(item.name.clone())));
/// fifo.add(Arc::new(Item { name: "a".into(), value: 1 })).unwrap();
/// fifo.update(Arc::new(Item { name: "a".into(), value: 2 })).unwrap();
///
/// // Both changes to "a" come out together, oldest first.
/// let seen = fifo
///     .pop(|deltas, _is_in_initial_list| {
///         deltas.iter().map(|d| (d.delta_type, d.object.object().map(|o| o.value))).collect::<Vec<_>>()
///     })
///     .await
///     .unwrap();
/// assert_eq!(seen, vec![(DeltaType::Added, Some(1)), (DeltaType::Updated, Some(2))]);
///
/// fifo.close();
/// let closed = fifo.pop(|_, _| ()).await;
/// assert!(matches!(closed, Err(PopError::Closed)));
/// # }
/// ```
pub struct DeltaFifo<T> {
    core: FifoCore<T, DeltaQueue<T>>,
    known_objects: Option<Arc<dyn KnownObjects<T>>>,
    emit_delta_type_replaced: bool,
}

impl<T> fmt::Debug for DeltaFifo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self.core.lock().queue.keys.iter().cloned().collect();
        f.debug_struct("DeltaFifo")
            .field("keys", &keys)
            .field("state", &self.core)
            .finish_non_exhaustive()
    }
}

impl<T: Send + Sync + 'static> DeltaFifo<T> {
    /// An empty, open FIFO.
    pub fn new(options: DeltaFifoOptions<T>) -> Self {
        let queue = DeltaQueue {
            items: HashMap::new(),
            keys: VecDeque::new(),
        };
        DeltaFifo {
            core: FifoCore::new(queue, options.key_function, options.transformer),
            known_objects: options.known_objects,
            emit_delta_type_replaced: options.emit_delta_type_replaced,
        }
    }

    /// The key of an object, by the key function.
    pub fn key_of(&self, obj: &T) -> Result<String, KeyError> {
        self.core.key_of(obj)
    }

    /// The key of a delta's object: a tombstone's own key, else the object's key.
    pub fn key_of_object(&self, obj: &DeltaObject<T>) -> Result<String, KeyError> {
        self.core.key_of_object(obj)
    }

    /// The key of a list of deltas: the key of its newest delta's object. An empty list
    /// has no key.
    pub fn key_of_deltas(&self, deltas: &Deltas<T>) -> Result<String, KeyError> {
        match deltas.newest() {
            Some(newest) => self.key_of_object(&newest.object),
            None => Err(KeyError::new("0 length Deltas object; can't get key")),
        }
    }

    /// Queues an `Added` delta for `obj`. Fails, changing nothing, when its key cannot be
    /// computed or the transformer rejects it.
    pub fn add(&self, obj: Arc<T>) -> Result<(), StoreError> {
        self.add_or_update(DeltaType::Added, obj)
    }

    /// Queues an `Updated` delta for `obj`. Fails, changing nothing, when its key cannot
    /// be computed or the transformer rejects it.
    pub fn update(&self, obj: Arc<T>) -> Result<(), StoreError> {
        self.add_or_update(DeltaType::Updated, obj)
    }

    fn add_or_update(&self, delta_type: DeltaType, obj: Arc<T>) -> Result<(), StoreError> {
        let key = self.key_of(&obj)?;
        let obj = self.core.transform(obj)?;
        let mut state = self.core.lock();
        state.mark_populated();
        if state.queue.push(key, Delta::new(delta_type, obj)) {
            self.core.wake_poppers();
        }
        Ok(())
    }

    /// Queues a `Deleted` delta for `obj` (its last known state), unless its key is
    /// neither queued nor among the known objects. A deletion right after a deletion
    /// collapses into one (see the module documentation). Fails, queueing nothing, when
    /// its key cannot be computed or the transformer rejects it.
    pub fn delete(&self, obj: Arc<T>) -> Result<(), StoreError> {
        let key = self.key_of(&obj)?;
        let mut state = self.core.lock();
        state.mark_populated();
        if !state.queue.items.contains_key(&key) {
            let known = match &self.known_objects {
                Some(known) => known.get_by_key(&key).is_some(),
                None => false,
            };
            if !known {
                return Ok(());
            }
        }
        let obj = self.core.transform(obj)?;
        if state.queue.push(key, Delta::new(DeltaType::Deleted, obj)) {
            self.core.wake_poppers();
        }
        Ok(())
    }

    /// Replaces the FIFO's view of the world with `list`, the result of a list at
    /// `resource_version` (which the DeltaFIFO does not use), in three phases (see the
    /// module documentation). The first replace on an unpopulated FIFO sets the number of
    /// pops [`has_synced`](Self::has_synced) waits for.
    ///
    /// Atomic: when a key cannot be computed for some listed object or the transformer
    /// rejects one, nothing changes and the error is returned.
    pub fn replace(&self, list: Vec<Arc<T>>, resource_version: &str) -> Result<(), StoreError> {
        let _ = resource_version;
        let keyed = list
            .into_iter()
            .map(|obj| Ok((self.key_of(&obj)?, obj)))
            .collect::<Result<Vec<_>, KeyError>>()?;
        // An object the known store already holds (the very same `Arc`: a reflector
        // hands back the cached copy of an unchanged relisted object) was transformed
        // when it entered the store and is not transformed again.
        let keyed = keyed
            .into_iter()
            .map(|(key, obj)| {
                let cached = self.known_objects.as_ref().is_some_and(|known| {
                    known
                        .get_by_key(&key)
                        .is_some_and(|held| Arc::ptr_eq(&held, &obj))
                });
                let obj = if cached {
                    obj
                } else {
                    self.core.transform(obj)?
                };
                Ok((key, obj))
            })
            .collect::<Result<Vec<(String, Arc<T>)>, TransformError>>()?;
        let listed_type = if self.emit_delta_type_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        };

        let mut state = self.core.lock();
        let mut newly_queued = false;
        let mut listed: HashSet<String> = HashSet::with_capacity(keyed.len());
        for (key, obj) in keyed {
            listed.insert(key.clone());
            newly_queued |= state.queue.push(key, Delta::new(listed_type, obj));
        }

        // Queued keys the list no longer has: their deletion was missed.
        let missed: Vec<(String, Option<Arc<T>>)> = state
            .queue
            .keys
            .iter()
            .filter(|key| !listed.contains(key.as_str()))
            .map(|key| {
                let last_state = state
                    .queue
                    .items
                    .get(key)
                    .and_then(|deltas| deltas.newest())
                    .and_then(|newest| newest.object.object().cloned());
                (key.clone(), last_state)
            })
            .collect();
        let mut queued_deletions = missed.len();
        for (key, last_state) in missed {
            state
                .queue
                .push(key.clone(), Delta::tombstone(key, last_state));
        }

        // Known keys neither listed nor queued: gone while we were not watching.
        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if listed.contains(&key) || state.queue.items.contains_key(&key) {
                    continue;
                }
                let last_state = known.get_by_key(&key);
                queued_deletions += 1;
                newly_queued |= state
                    .queue
                    .push(key.clone(), Delta::tombstone(key, last_state));
            }
        }

        state.replaced(listed.len() + queued_deletions);
        if newly_queued {
            self.core.wake_poppers();
        }
        Ok(())
    }

    /// Queues a `Sync` delta with the known object for every known key that has no queued
    /// deltas. Does nothing without known objects. Fails, changing nothing, when a key
    /// cannot be computed for a known object.
    pub fn resync(&self) -> Result<(), StoreError> {
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        // Read the known objects under the FIFO's lock: a concurrent pop updates them
        // under it, so what we read is never older than what was popped.
        let mut state = self.core.lock();
        let keyed = known
            .list_keys()
            .into_iter()
            .filter_map(|known_key| known.get_by_key(&known_key))
            .map(|obj| Ok((self.key_of(&obj)?, obj)))
            .collect::<Result<Vec<_>, KeyError>>()?;
        let mut newly_queued = false;
        for (key, obj) in keyed {
            if !state.queue.items.contains_key(&key) {
                newly_queued |= state.queue.push(key, Delta::new(DeltaType::Sync, obj));
            }
        }
        if newly_queued {
            self.core.wake_poppers();
        }
        Ok(())
    }

    /// [`DeltaFifo::try_pop`] with a `process` that cannot fail: no error type to spell.
    /// Returns [`PopError::Closed`] when the FIFO is closed and empty.
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(Deltas<T>, bool) -> R,
    ) -> Result<R, PopError<std::convert::Infallible>> {
        self.try_pop(|deltas, initial| Ok(process(deltas, initial)))
            .await
    }

    /// Waits for a queued key, removes it with all its deltas, and calls
    /// `process(deltas, is_in_initial_list)` while holding the FIFO's lock, returning
    /// what `process` returns.
    ///
    /// `is_in_initial_list` is true when the FIFO had not synced before this pop (the
    /// deltas belong to the first list). When `process` fails, the deltas are dropped
    /// (not requeued) and its error is returned in [`PopError::Process`]. Returns
    /// [`PopError::Closed`] when the FIFO is closed and empty.
    ///
    /// `process` must not call into this FIFO (it would deadlock) and should be quick:
    /// every other operation waits for it. Cancel-safe: dropping the future while it
    /// waits loses nothing.
    pub async fn try_pop<R, E>(
        &self,
        process: impl FnOnce(Deltas<T>, bool) -> Result<R, E>,
    ) -> Result<R, PopError<E>> {
        loop {
            let mut state = self.core.lock_for_pop().await;
            let Some(key) = state.queue.keys.pop_front() else {
                return Err(PopError::Closed);
            };
            let is_in_initial_list = state.count_pop();
            // A queued key always has deltas (the queue's invariant); never hand out none.
            if let Some(deltas) = state.queue.items.remove(&key) {
                return process(deltas, is_in_initial_list).map_err(PopError::Process);
            }
        }
    }

    /// The keys queued, in the order they will pop.
    pub fn list_keys(&self) -> Vec<String> {
        self.core.lock().queue.keys.iter().cloned().collect()
    }

    /// The deltas queued for `obj`'s key, if any.
    pub fn get(&self, obj: &T) -> Result<Option<Deltas<T>>, KeyError> {
        let key = self.key_of(obj)?;
        Ok(self.get_by_key(&key))
    }

    /// The deltas queued for `key`, if any.
    pub fn get_by_key(&self, key: &str) -> Option<Deltas<T>> {
        self.core.lock().queue.items.get(key).cloned()
    }

    /// How many keys are queued.
    pub fn len(&self) -> usize {
        self.core.len()
    }

    /// Whether no key is queued.
    pub fn is_empty(&self) -> bool {
        self.core.len() == 0
    }

    /// Whether the first replace's items have all been popped, or an add, update or
    /// delete came before any replace.
    pub fn has_synced(&self) -> bool {
        self.core.has_synced()
    }

    /// Closes the FIFO: waiting and future pops return [`PopError::Closed`] once it is
    /// empty. Changes are still accepted and queued keys still pop.
    pub fn close(&self) {
        self.core.close();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.core.is_closed()
    }
}

/// Test objects and helpers shared by the FIFO tests.
#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use parking_lot::Mutex;

    use super::{DeltaObject, Deltas, KnownObjects};

    #[derive(Debug, PartialEq)]
    pub(crate) struct TestObj {
        pub(crate) name: String,
        pub(crate) value: i32,
        /// How many times the transformer saw this object's lineage.
        pub(crate) transformed: u32,
    }

    pub(crate) fn obj(name: &str, value: i32) -> Arc<TestObj> {
        Arc::new(TestObj {
            name: name.to_owned(),
            value,
            transformed: 0,
        })
    }

    /// Known objects as an informer's indexer would hold them, sorted by key.
    #[derive(Default)]
    pub(crate) struct Known(pub(crate) Mutex<BTreeMap<String, Arc<TestObj>>>);

    impl Known {
        pub(crate) fn with(objs: &[(&str, i32)]) -> Arc<Known> {
            let known = Known::default();
            for (name, value) in objs {
                known.0.lock().insert((*name).to_owned(), obj(name, *value));
            }
            Arc::new(known)
        }
    }

    impl KnownObjects<TestObj> for Known {
        fn list_keys(&self) -> Vec<String> {
            self.0.lock().keys().cloned().collect()
        }

        fn get_by_key(&self, key: &str) -> Option<Arc<TestObj>> {
            self.0.lock().get(key).cloned()
        }
    }

    /// Deltas as readable strings: "Added foo=10", "Deleted DFSU bar=6", "Deleted DFSU bar=nil".
    pub(crate) fn summary(deltas: &Deltas<TestObj>) -> Vec<String> {
        deltas
            .iter()
            .map(|d| match &d.object {
                DeltaObject::Object(o) => format!("{:?} {}={}", d.delta_type, o.name, o.value),
                DeltaObject::Tombstone(t) => match &t.obj {
                    Some(o) => format!("{:?} DFSU {}={}", d.delta_type, t.key, o.value),
                    None => format!("{:?} DFSU {}=nil", d.delta_type, t.key),
                },
            })
            .collect()
    }

    pub(crate) fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::FutureExt;

    use super::test_support::*;
    use super::*;

    fn options() -> DeltaFifoOptions<TestObj> {
        DeltaFifoOptions::new(|o: &TestObj| Ok(o.name.clone()))
    }

    fn fifo() -> DeltaFifo<TestObj> {
        DeltaFifo::new(options())
    }

    fn fifo_with_known(objs: &[(&str, i32)]) -> DeltaFifo<TestObj> {
        DeltaFifo::new(options().known_objects(Known::with(objs)))
    }

    fn queued(fifo: &DeltaFifo<TestObj>, key: &str) -> Vec<String> {
        fifo.get_by_key(key)
            .map(|d| summary(&d))
            .unwrap_or_default()
    }

    fn queued_types<T: Send + Sync + 'static>(fifo: &DeltaFifo<T>, key: &str) -> Vec<DeltaType> {
        fifo.get_by_key(key)
            .map(|d| d.iter().map(|d| d.delta_type).collect())
            .unwrap_or_default()
    }

    /// Pops one key; the FIFO must not be empty.
    async fn pop(fifo: &DeltaFifo<TestObj>) -> (Vec<String>, bool) {
        fifo.pop(|deltas, initial| (summary(&deltas), initial))
            .await
            .unwrap()
    }

    /// Pops until empty.
    async fn pop_all(fifo: &DeltaFifo<TestObj>) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        while !fifo.is_empty() {
            out.push(pop(fifo).await.0);
        }
        out
    }

    /// The newest object's value of each remaining key, in pop order.
    async fn pop_newest_values(fifo: &DeltaFifo<TestObj>) -> Vec<i32> {
        let mut out = Vec::new();
        while !fifo.is_empty() {
            let value = fifo
                .try_pop(|deltas, _| {
                    Ok::<_, std::convert::Infallible>(
                        deltas
                            .newest()
                            .and_then(|d| d.object.object())
                            .map(|o| o.value),
                    )
                })
                .await
                .unwrap();
            out.push(value.unwrap());
        }
        out
    }

    #[tokio::test]
    async fn add_update_delete_coalesce_under_one_key() {
        // SEMANTICS 2.1
        let f = fifo();
        f.add(obj("foo", 10)).unwrap();
        f.update(obj("foo", 12)).unwrap();
        f.delete(obj("foo", 15)).unwrap();
        assert_eq!(f.list_keys(), strings(&["foo"]));
        assert_eq!(
            queued(&f, "foo"),
            strings(&["Added foo=10", "Updated foo=12", "Deleted foo=15"])
        );
        assert_eq!(pop_newest_values(&f).await, vec![15]);
        assert!(f.is_empty());
        assert_eq!(f.get_by_key("foo"), None);
    }

    #[tokio::test]
    async fn enqueueing_without_known_objects() {
        // SEMANTICS 2.2
        let f = fifo();
        f.add(obj("foo", 10)).unwrap();
        f.update(obj("bar", 15)).unwrap();
        f.add(obj("qux", 17)).unwrap();
        f.delete(obj("qux", 18)).unwrap();
        f.delete(obj("baz", 20)).unwrap();
        assert_eq!(f.list_keys(), strings(&["foo", "bar", "qux"]));
        assert_eq!(pop_newest_values(&f).await, vec![10, 15, 18]);
    }

    #[tokio::test]
    async fn enqueueing_with_known_objects() {
        // SEMANTICS 2.3
        let f = fifo_with_known(&[("foo", 5), ("bar", 6), ("baz", 7)]);
        f.add(obj("foo", 10)).unwrap();
        f.update(obj("bar", 15)).unwrap();
        f.delete(obj("baz", 20)).unwrap();
        assert_eq!(pop_newest_values(&f).await, vec![10, 15, 20]);
    }

    #[tokio::test]
    async fn delete_of_a_queued_key_unknown_to_known_objects() {
        // SEMANTICS 2.4
        let f = fifo_with_known(&[]);
        f.add(obj("foo", 5)).unwrap();
        f.delete(obj("foo", 6)).unwrap();
        assert_eq!(
            queued(&f, "foo"),
            strings(&["Added foo=5", "Deleted foo=6"])
        );
    }

    #[tokio::test]
    async fn second_delete_collapses_keeping_the_first() {
        // SEMANTICS 2.5
        let f = fifo();
        f.add(obj("x", 0)).unwrap();
        f.delete(obj("x", 1)).unwrap();
        f.delete(obj("x", 2)).unwrap();
        assert_eq!(queued(&f, "x"), strings(&["Added x=0", "Deleted x=1"]));
    }

    #[tokio::test]
    async fn real_delete_replaces_a_trailing_tombstone() {
        // SEMANTICS 2.6
        let f = fifo();
        f.add(obj("x", 0)).unwrap();
        f.replace(vec![], "1").unwrap();
        assert_eq!(queued(&f, "x"), strings(&["Added x=0", "Deleted DFSU x=0"]));
        f.delete(obj("x", 5)).unwrap();
        assert_eq!(queued(&f, "x"), strings(&["Added x=0", "Deleted x=5"]));
    }

    #[tokio::test]
    async fn delete_then_replace_with_a_new_object() {
        // SEMANTICS 2.7
        let f = fifo_with_known(&[("foo", 1)]);
        f.delete(obj("foo", 1)).unwrap();
        f.replace(vec![obj("foo", 2)], "2").unwrap();
        assert_eq!(pop(&f).await.0, strings(&["Deleted foo=1", "Sync foo=2"]));
    }

    #[tokio::test]
    async fn replace_makes_deletions() {
        // SEMANTICS 2.8
        let f = fifo_with_known(&[("foo", 5), ("bar", 6), ("baz", 7)]);
        f.delete(obj("baz", 10)).unwrap();
        f.replace(vec![obj("foo", 5)], "0").unwrap();
        assert_eq!(
            pop_all(&f).await,
            vec![
                strings(&["Deleted baz=10"]),
                strings(&["Sync foo=5"]),
                strings(&["Deleted DFSU bar=6"]),
            ]
        );

        // SEMANTICS 2.9
        let f = fifo_with_known(&[("foo", 5), ("bar", 6), ("baz", 7)]);
        f.add(obj("baz", 10)).unwrap();
        f.replace(vec![obj("foo", 5)], "0").unwrap();
        assert_eq!(
            pop_all(&f).await,
            vec![
                strings(&["Added baz=10", "Deleted DFSU baz=10"]),
                strings(&["Sync foo=5"]),
                strings(&["Deleted DFSU bar=6"]),
            ]
        );

        // SEMANTICS 2.10
        let f = fifo_with_known(&[("foo", 5), ("bar", 6), ("baz", 7)]);
        f.delete(obj("bar", 6)).unwrap();
        f.add(obj("bar", 100)).unwrap();
        f.replace(vec![obj("foo", 5)], "0").unwrap();
        assert_eq!(
            pop_all(&f).await,
            vec![
                strings(&["Deleted bar=6", "Added bar=100", "Deleted DFSU bar=100"]),
                strings(&["Sync foo=5"]),
                strings(&["Deleted DFSU baz=7"]),
            ]
        );

        // SEMANTICS 2.11
        let f = fifo_with_known(&[("foo", 5), ("bar", 6), ("baz", 7)]);
        f.replace(vec![obj("bar", 100), obj("foo", 5)], "0")
            .unwrap();
        f.replace(vec![obj("foo", 5)], "0").unwrap();
        assert_eq!(
            pop_all(&f).await,
            vec![
                strings(&["Sync bar=100", "Deleted DFSU bar=100"]),
                strings(&["Sync foo=5", "Sync foo=5"]),
                strings(&["Deleted DFSU baz=7"]),
            ]
        );

        // SEMANTICS 2.12
        let f = fifo();
        f.add(obj("baz", 10)).unwrap();
        f.replace(vec![obj("foo", 5)], "0").unwrap();
        assert_eq!(
            pop_all(&f).await,
            vec![
                strings(&["Added baz=10", "Deleted DFSU baz=10"]),
                strings(&["Sync foo=5"]),
            ]
        );
    }

    #[tokio::test]
    async fn replace_tombstone_without_known_object_state() {
        // A known key whose object vanished between list_keys and get_by_key: the
        // tombstone carries no object.
        struct Vanishing;
        impl KnownObjects<TestObj> for Vanishing {
            fn list_keys(&self) -> Vec<String> {
                vec!["ghost".to_owned()]
            }
            fn get_by_key(&self, _: &str) -> Option<Arc<TestObj>> {
                None
            }
        }
        let f = DeltaFifo::new(options().known_objects(Arc::new(Vanishing)));
        f.replace(vec![], "0").unwrap();
        assert_eq!(queued(&f, "ghost"), strings(&["Deleted DFSU ghost=nil"]));
    }

    #[tokio::test]
    async fn replace_emits_replaced_when_asked() {
        // SEMANTICS 2.13
        let f = DeltaFifo::new(
            options()
                .known_objects(Known::with(&[("foo", 5)]))
                .emit_delta_type_replaced(true),
        );
        f.replace(vec![obj("foo", 5)], "0").unwrap();
        assert_eq!(pop(&f).await.0, strings(&["Replaced foo=5"]));
    }

    /// Runs `check` on a FIFO without known objects and on one with empty known objects.
    fn with_and_without_known(emit_replaced: bool, check: impl Fn(DeltaFifo<TestObj>)) {
        check(DeltaFifo::new(
            options().emit_delta_type_replaced(emit_replaced),
        ));
        check(DeltaFifo::new(
            options()
                .emit_delta_type_replaced(emit_replaced)
                .known_objects(Known::with(&[])),
        ));
    }

    #[test]
    fn replace_tombstones_for_queued_keys() {
        // SEMANTICS 2.14
        with_and_without_known(true, |f| {
            f.add(obj("obj", 1)).unwrap();
            f.replace(vec![obj("obj", 1)], "0").unwrap();
            f.replace(vec![], "0").unwrap();
            assert_eq!(
                queued(&f, "obj"),
                strings(&["Added obj=1", "Replaced obj=1", "Deleted DFSU obj=1"])
            );
        });

        // SEMANTICS 2.15
        with_and_without_known(false, |f| {
            f.add(obj("obj", 1)).unwrap();
            f.replace(vec![], "0").unwrap();
            f.replace(vec![], "0").unwrap();
            assert_eq!(
                queued(&f, "obj"),
                strings(&["Added obj=1", "Deleted DFSU obj=1"])
            );
        });

        // SEMANTICS 2.16
        with_and_without_known(false, |f| {
            f.add(obj("obj", 1)).unwrap();
            f.delete(obj("obj", 1)).unwrap();
            f.add(obj("obj", 2)).unwrap();
            f.replace(vec![], "0").unwrap();
            assert_eq!(
                queued(&f, "obj"),
                strings(&[
                    "Added obj=1",
                    "Deleted obj=1",
                    "Added obj=2",
                    "Deleted DFSU obj=2"
                ])
            );
        });
    }

    #[tokio::test]
    async fn resync_queues_known_objects_not_already_queued() {
        // SEMANTICS 2.17
        let f = fifo_with_known(&[("foo", 5)]);
        f.resync().unwrap();
        assert_eq!(queued(&f, "foo"), strings(&["Sync foo=5"]));

        // SEMANTICS 2.18
        let f = fifo_with_known(&[("foo", 5)]);
        f.update(obj("foo", 6)).unwrap();
        f.resync().unwrap();
        assert_eq!(pop(&f).await.0, strings(&["Updated foo=6"]));

        // SEMANTICS 2.19
        let f = fifo_with_known(&[("foo", 5)]);
        f.delete(obj("foo", 10)).unwrap();
        f.resync().unwrap();
        assert_eq!(queued(&f, "foo"), strings(&["Deleted foo=10"]));

        // Without known objects, resync is a no-op.
        let f = fifo();
        f.resync().unwrap();
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn no_line_jumping() {
        // SEMANTICS 2.20
        let f = fifo();
        f.add(obj("foo", 10)).unwrap();
        f.add(obj("bar", 1)).unwrap();
        f.add(obj("foo", 11)).unwrap();
        f.add(obj("foo", 13)).unwrap();
        f.add(obj("zab", 30)).unwrap();
        let first = f
            .try_pop(|d, _| {
                Ok::<_, std::convert::Infallible>(
                    d.newest().and_then(|d| d.object.object()).map(|o| o.value),
                )
            })
            .await
            .unwrap();
        assert_eq!(first, Some(13));
        f.add(obj("foo", 14)).unwrap();
        assert_eq!(pop_newest_values(&f).await, vec![1, 30, 14]);
    }

    #[tokio::test]
    async fn has_synced_table() {
        // SEMANTICS 2.21
        let f = fifo();
        assert!(!f.has_synced(), "nothing happened yet");

        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        assert!(f.has_synced(), "an add before any replace");

        let f = fifo();
        f.replace(vec![], "0").unwrap();
        assert!(f.has_synced(), "an empty first replace");

        let f = fifo();
        f.replace(vec![obj("a", 1), obj("b", 1)], "0").unwrap();
        assert!(!f.has_synced(), "nothing of the first replace popped");
        pop(&f).await;
        assert!(!f.has_synced(), "one of two popped");
        pop(&f).await;
        assert!(f.has_synced(), "both popped");

        let f = fifo();
        f.replace(vec![obj("a", 1), obj("a", 2)], "0").unwrap();
        pop(&f).await;
        assert!(
            f.has_synced(),
            "two listed objects under one key count once"
        );
    }

    #[tokio::test]
    async fn initial_list_pops_carry_the_flag() {
        // SEMANTICS 2.22
        let f = fifo_with_known(&[("foo", 1), ("bar", 2), ("baz", 3)]);
        f.replace(vec![obj("foo", 1)], "0").unwrap();
        let mut popped = Vec::new();
        for _ in 0..3 {
            assert!(!f.has_synced());
            let (deltas, initial) = pop(&f).await;
            assert!(initial);
            popped.push(deltas);
        }
        assert!(f.has_synced());
        assert_eq!(
            popped,
            vec![
                strings(&["Sync foo=1"]),
                strings(&["Deleted DFSU bar=2"]),
                strings(&["Deleted DFSU baz=3"]),
            ]
        );
    }

    #[test]
    fn key_of() {
        // SEMANTICS 2.23
        let f = fifo();
        assert_eq!(f.key_of(&obj("A", 0)), Ok("A".to_owned()));
        let tombstone = DeltaObject::Tombstone(DeletedFinalStateUnknown {
            key: "B".to_owned(),
            obj: None,
        });
        assert_eq!(f.key_of_object(&tombstone), Ok("B".to_owned()));
        let deltas = Deltas::from(vec![Delta::new(DeltaType::Added, obj("C", 0))]);
        assert_eq!(f.key_of_deltas(&deltas), Ok("C".to_owned()));
        let deltas = Deltas::from(vec![Delta::tombstone("D", Some(obj("stale", 0)))]);
        assert_eq!(f.key_of_deltas(&deltas), Ok("D".to_owned()));
        let empty: Deltas<TestObj> = Deltas::from(Vec::new());
        let err = f.key_of_deltas(&empty).unwrap_err();
        assert!(err.to_string().contains("0 length Deltas"), "{err}");
    }

    #[tokio::test]
    async fn close_wakes_every_blocked_pop() {
        // SEMANTICS 2.24
        let f = fifo();
        let mut pops: Vec<_> = (0..10).map(|_| Box::pin(f.pop(|_, _| ()))).collect();
        for p in &mut pops {
            assert!(
                futures::poll!(p.as_mut()).is_pending(),
                "blocked on an empty FIFO"
            );
        }
        f.close();
        let results = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            futures::future::join_all(pops),
        )
        .await
        .expect("close must wake every blocked pop");
        assert_eq!(results.len(), 10);
        for r in results {
            assert!(matches!(r, Err(PopError::Closed)));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn close_wakes_pops_on_other_tasks() {
        // SEMANTICS 2.24
        let f = Arc::new(fifo());
        let started = Arc::new(tokio::sync::Barrier::new(11));
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                let f = Arc::clone(&f);
                let started = Arc::clone(&started);
                tokio::spawn(async move {
                    started.wait().await;
                    f.pop(|_, _| ()).await
                })
            })
            .collect();
        started.wait().await;
        f.close();
        for task in tasks {
            let r = tokio::time::timeout(std::time::Duration::from_secs(30), task)
                .await
                .expect("close must wake every blocked pop")
                .unwrap();
            assert!(matches!(r, Err(PopError::Closed)));
        }
    }

    #[tokio::test]
    async fn closed_fifo_still_pops_and_accepts() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        f.close();
        assert!(f.is_closed());
        f.add(obj("b", 2)).unwrap();
        assert_eq!(
            pop_all(&f).await,
            vec![strings(&["Added a=1"]), strings(&["Added b=2"])]
        );
        let r = f.pop(|_, _| ()).await;
        assert!(matches!(r, Err(PopError::Closed)));
    }

    #[tokio::test]
    async fn pop_waits_for_an_add() {
        let f = Arc::new(fifo());
        let popper = {
            let f = Arc::clone(&f);
            tokio::spawn(async move { pop(&f).await })
        };
        tokio::task::yield_now().await;
        f.add(obj("late", 1)).unwrap();
        let (deltas, initial) = popper.await.unwrap();
        assert_eq!(deltas, strings(&["Added late=1"]));
        assert!(!initial);
    }

    #[tokio::test]
    async fn process_error_drops_the_deltas() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        f.add(obj("b", 1)).unwrap();
        let r: Result<(), _> = f.try_pop(|_, _| Err("handler failed")).await;
        match r {
            Err(PopError::Process(e)) => assert_eq!(e, "handler failed"),
            other => panic!("expected a process error, got {other:?}"),
        }
        assert_eq!(f.list_keys(), strings(&["b"]));
        assert_eq!(f.get_by_key("a"), None);
    }

    #[test]
    fn replace_is_atomic_on_key_errors() {
        let f = DeltaFifo::new(DeltaFifoOptions::new(|o: &TestObj| {
            if o.name.is_empty() {
                Err(KeyError::new("empty name"))
            } else {
                Ok(o.name.clone())
            }
        }));
        f.add(obj("a", 1)).unwrap();
        assert!(f.add(obj("", 1)).is_err());
        assert!(f.replace(vec![obj("b", 1), obj("", 2)], "0").is_err());
        assert_eq!(f.list_keys(), strings(&["a"]));
        assert_eq!(queued(&f, "a"), strings(&["Added a=1"]));
    }

    #[test]
    fn rejected_objects_change_nothing() {
        let f = DeltaFifo::new(
            options()
                .known_objects(Known::with(&[("bad", 0)]))
                .transformer(|o: Arc<TestObj>| {
                    if o.name == "bad" {
                        Err(TransformError::new("rejected"))
                    } else {
                        Ok(o)
                    }
                }),
        );
        f.add(obj("a", 1)).unwrap();
        for result in [
            f.add(obj("bad", 1)),
            f.update(obj("bad", 2)),
            f.delete(obj("bad", 3)),
            f.replace(vec![obj("b", 1), obj("bad", 4)], "0"),
        ] {
            assert!(
                matches!(result, Err(StoreError::Transform(_))),
                "{result:?}"
            );
        }
        assert_eq!(f.list_keys(), strings(&["a"]));
        assert_eq!(queued(&f, "a"), strings(&["Added a=1"]));
        assert!(
            f.has_synced(),
            "the add populated the FIFO; the failed replace did not count"
        );
    }

    #[tokio::test]
    async fn transformer_runs_once_per_incoming_object() {
        // SEMANTICS 2.25
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let f = DeltaFifo::new(options().transformer(move |o: Arc<TestObj>| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(Arc::new(TestObj {
                name: o.name.clone(),
                value: o.value,
                transformed: o.transformed + 1,
            }))
        }));
        f.add(obj("foo", 1)).unwrap();
        f.add(obj("bar", 2)).unwrap();
        f.update(obj("foo", 3)).unwrap();
        f.delete(obj("foo", 4)).unwrap();
        f.replace(vec![], "0").unwrap();
        f.add(obj("bar", 5)).unwrap();
        f.replace(vec![], "0").unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 5);

        let mut seen = Vec::new();
        while !f.is_empty() {
            let deltas = f.pop(|d, _| d).await.unwrap();
            for d in &deltas {
                let o = d.object.object().unwrap();
                assert_eq!(o.transformed, 1, "{d:?}");
            }
            seen.push(summary(&deltas));
        }
        assert_eq!(
            seen,
            vec![
                strings(&["Added foo=1", "Updated foo=3", "Deleted foo=4"]),
                strings(&[
                    "Added bar=2",
                    "Deleted DFSU bar=2",
                    "Added bar=5",
                    "Deleted DFSU bar=5"
                ]),
            ]
        );
    }

    #[tokio::test]
    async fn replace_does_not_transform_the_known_objects_own_copies_again() {
        // The known store holds transformed objects; a reflector hands back the held
        // `Arc` for an unchanged relisted object, which must not be transformed twice.
        let known = Known::with(&[("a", 1), ("b", 2)]);
        let held_a = known.get_by_key("a").unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let f = DeltaFifo::new(
            options()
                .known_objects(Arc::clone(&known) as Arc<dyn KnownObjects<TestObj>>)
                .transformer(move |o: Arc<TestObj>| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok(Arc::new(TestObj {
                        name: o.name.clone(),
                        value: o.value,
                        transformed: o.transformed + 1,
                    }))
                }),
        );
        // `a` is the held copy; `b` is an equal but distinct object (decoded anew).
        f.replace(vec![Arc::clone(&held_a), obj("b", 2)], "0")
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let a = f.pop(|d, _| d).await.unwrap();
        let a = a.iter().next().unwrap().object.object().unwrap().clone();
        assert!(Arc::ptr_eq(&a, &held_a));
        assert_eq!(a.transformed, 0);
        let b = f.pop(|d, _| d).await.unwrap();
        assert_eq!(
            b.iter()
                .next()
                .unwrap()
                .object
                .object()
                .unwrap()
                .transformed,
            1
        );
    }

    #[tokio::test]
    async fn pops_after_sync_are_not_initial() {
        // SEMANTICS 2.26
        let f = fifo();
        f.replace(vec![obj("a", 1)], "0").unwrap();
        assert!(pop(&f).await.1, "the first list");
        assert!(f.has_synced());
        f.add(obj("b", 1)).unwrap();
        f.replace(vec![obj("c", 1)], "1").unwrap();
        assert_eq!(
            pop(&f).await,
            (strings(&["Added b=1", "Deleted DFSU b=1"]), false)
        );
        assert_eq!(pop(&f).await, (strings(&["Sync c=1"]), false));
        assert!(f.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_producers_and_poppers_lose_and_duplicate_nothing() {
        const PRODUCERS: i32 = 4;
        const PER_PRODUCER: i32 = 200;
        let f = Arc::new(fifo());
        // Filled inside `process`, which runs under the FIFO's lock: the log is in the
        // order the deltas were handed out.
        let log = Arc::new(Mutex::new(Vec::<(String, i32)>::new()));
        let poppers: Vec<_> = (0..4)
            .map(|_| {
                let f = Arc::clone(&f);
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    loop {
                        let r = f
                            .try_pop(|deltas, _| {
                                let mut log = log.lock();
                                for d in &deltas {
                                    let o = d.object.object().unwrap();
                                    log.push((o.name.clone(), o.value));
                                }
                                Ok::<_, std::convert::Infallible>(())
                            })
                            .await;
                        if matches!(r, Err(PopError::Closed)) {
                            return;
                        }
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let f = Arc::clone(&f);
                tokio::spawn(async move {
                    for i in 0..PER_PRODUCER {
                        // Two producers share each key, so keys get deltas from both.
                        let name = format!("k{}", (p % 2) * 10 + i % 5);
                        f.update(obj(&name, p * PER_PRODUCER + i)).unwrap();
                        if i % 7 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for p in producers {
            p.await.unwrap();
        }
        f.close();
        for p in poppers {
            tokio::time::timeout(std::time::Duration::from_secs(60), p)
                .await
                .expect("poppers stop once closed and drained")
                .unwrap();
        }
        let log = log.lock();
        let mut values: Vec<i32> = log.iter().map(|(_, v)| *v).collect();
        values.sort_unstable();
        let expected: Vec<i32> = (0..PRODUCERS * PER_PRODUCER).collect();
        assert_eq!(values, expected, "every delta handed out exactly once");
        // Each producer's updates to one key come out in the order it made them.
        for p in 0..PRODUCERS {
            let range = p * PER_PRODUCER..(p + 1) * PER_PRODUCER;
            let mut last: HashMap<&str, i32> = HashMap::new();
            for (name, value) in log.iter().filter(|(_, v)| range.contains(v)) {
                if let Some(prev) = last.insert(name, *value) {
                    assert!(prev < *value, "{name}: {prev} before {value}");
                }
            }
        }
    }

    #[tokio::test]
    async fn default_options_key_resources_by_namespace_and_name() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let f = DeltaFifo::new(DeltaFifoOptions::<ConfigMap>::default());
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".to_owned());
        cm.metadata.name = Some("cfg".to_owned());
        f.add(Arc::new(cm)).unwrap();
        assert_eq!(f.list_keys(), strings(&["ns/cfg"]));
    }

    #[tokio::test]
    async fn the_indexer_serves_as_known_objects() {
        use crate::cache::store::{meta_namespace_key_func, namespace_indexers, Indexer};
        use k8s_openapi::api::core::v1::ConfigMap;
        let cm = |name: &str| {
            let mut cm = ConfigMap::default();
            cm.metadata.namespace = Some("ns".to_owned());
            cm.metadata.name = Some(name.to_owned());
            Arc::new(cm)
        };
        let indexer = Arc::new(Indexer::<ConfigMap>::new(
            meta_namespace_key_func(),
            namespace_indexers(),
        ));
        let f = DeltaFifo::new(
            DeltaFifoOptions::<ConfigMap>::default()
                .known_objects(Arc::clone(&indexer) as Arc<dyn KnownObjects<ConfigMap>>)
                .emit_delta_type_replaced(true),
        );
        // What an informer does with each pop: apply the deltas to its indexer.
        let handle = |deltas: Deltas<ConfigMap>, _| {
            for d in deltas {
                match (d.delta_type, d.object) {
                    (DeltaType::Deleted, DeltaObject::Object(o)) => indexer.delete(&o)?,
                    (DeltaType::Deleted, DeltaObject::Tombstone(t)) => {
                        indexer.delete_by_key(&t.key)
                    }
                    (_, DeltaObject::Object(o)) => indexer.update(o)?,
                    (_, DeltaObject::Tombstone(_)) => {}
                }
            }
            Ok::<_, StoreError>(())
        };
        f.replace(vec![cm("a"), cm("b")], "1").unwrap();
        f.try_pop(handle).await.unwrap();
        f.try_pop(handle).await.unwrap();
        assert!(f.has_synced());
        assert_eq!(indexer.len(), 2);

        f.replace(vec![cm("a")], "2").unwrap();
        let replaced = f
            .try_pop(|d, initial| {
                handle(d.clone(), initial)?;
                Ok::<_, StoreError>(d)
            })
            .await
            .unwrap();
        assert_eq!(replaced.len(), 1);
        assert_eq!(replaced[0].delta_type, DeltaType::Replaced);
        let gone = f
            .try_pop(|d, initial| {
                handle(d.clone(), initial)?;
                Ok::<_, StoreError>(d)
            })
            .await
            .unwrap();
        let t = gone[0].object.tombstone().unwrap();
        assert_eq!(t.key, "ns/b");
        assert_eq!(t.obj.as_ref().unwrap().metadata.name.as_deref(), Some("b"));
        assert_eq!(indexer.list_keys(), strings(&["ns/a"]));

        f.resync().unwrap();
        assert_eq!(queued_types(&f, "ns/a"), vec![DeltaType::Sync]);
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn pop_is_send() {
        fn assert_send<F: Send>(_: F) {}
        let f = fifo();
        assert_send(f.pop(|_, _| ()));
    }

    mod model {
        //! DeltaFIFO against a reference model written as plainly as possible: a list of
        //! (key, deltas) pairs searched linearly.

        use proptest::prelude::*;

        use super::*;

        #[derive(Debug, Clone, PartialEq)]
        enum MObj {
            Obj(String, i32),
            Tomb(String, Option<i32>),
        }

        type MDelta = (DeltaType, MObj);

        #[derive(Debug, Clone)]
        enum Op {
            Add(String, i32),
            Update(String, i32),
            Delete(String, i32),
            Replace(Vec<(String, i32)>),
            Resync,
            Pop,
        }

        fn name() -> impl Strategy<Value = String> {
            prop::sample::select(vec!["a", "b", "c", "d"]).prop_map(str::to_owned)
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                3 => (name(), 0..100i32).prop_map(|(n, v)| Op::Add(n, v)),
                3 => (name(), 0..100i32).prop_map(|(n, v)| Op::Update(n, v)),
                2 => (name(), 0..100i32).prop_map(|(n, v)| Op::Delete(n, v)),
                1 => prop::collection::vec((name(), 0..100i32), 0..5).prop_map(Op::Replace),
                1 => Just(Op::Resync),
                4 => Just(Op::Pop),
            ]
        }

        struct Model {
            queue: Vec<(String, Vec<MDelta>)>,
            /// The consumer's store, when the FIFO has known objects.
            known: Option<BTreeMap<String, i32>>,
            emit_replaced: bool,
            populated: bool,
            initial: usize,
        }

        impl Model {
            fn is_queued(&self, key: &str) -> bool {
                self.queue.iter().any(|(k, _)| k == key)
            }

            fn push(&mut self, key: &str, delta: MDelta) {
                let Some((_, deltas)) = self.queue.iter_mut().find(|(k, _)| k == key) else {
                    self.queue.push((key.to_owned(), vec![delta]));
                    return;
                };
                let last = deltas.last_mut().unwrap();
                if delta.0 == DeltaType::Deleted && last.0 == DeltaType::Deleted {
                    if matches!(last.1, MObj::Tomb(..)) {
                        *last = delta;
                    }
                } else {
                    deltas.push(delta);
                }
            }

            fn apply(&mut self, op: &Op) -> Option<(Vec<MDelta>, bool)> {
                match op {
                    Op::Add(n, v) => {
                        self.populated = true;
                        self.push(n, (DeltaType::Added, MObj::Obj(n.clone(), *v)));
                    }
                    Op::Update(n, v) => {
                        self.populated = true;
                        self.push(n, (DeltaType::Updated, MObj::Obj(n.clone(), *v)));
                    }
                    Op::Delete(n, v) => {
                        self.populated = true;
                        let known = self.known.as_ref().is_some_and(|k| k.contains_key(n));
                        if self.is_queued(n) || known {
                            self.push(n, (DeltaType::Deleted, MObj::Obj(n.clone(), *v)));
                        }
                    }
                    Op::Replace(list) => {
                        let t = if self.emit_replaced {
                            DeltaType::Replaced
                        } else {
                            DeltaType::Sync
                        };
                        let mut listed: Vec<&String> = Vec::new();
                        for (n, v) in list {
                            self.push(n, (t, MObj::Obj(n.clone(), *v)));
                            if !listed.contains(&n) {
                                listed.push(n);
                            }
                        }
                        let mut deletions = 0;
                        let queued: Vec<(String, Option<i32>)> = self
                            .queue
                            .iter()
                            .map(|(k, d)| {
                                let last = match &d.last().unwrap().1 {
                                    MObj::Obj(_, v) => Some(*v),
                                    MObj::Tomb(_, v) => *v,
                                };
                                (k.clone(), last)
                            })
                            .collect();
                        for (k, last) in queued {
                            if !listed.contains(&&k) {
                                deletions += 1;
                                self.push(&k, (DeltaType::Deleted, MObj::Tomb(k.clone(), last)));
                            }
                        }
                        let known: Vec<(String, i32)> = self
                            .known
                            .iter()
                            .flatten()
                            .map(|(k, v)| (k.clone(), *v))
                            .collect();
                        for (k, v) in known {
                            if !listed.contains(&&k) && !self.is_queued(&k) {
                                deletions += 1;
                                self.push(&k, (DeltaType::Deleted, MObj::Tomb(k.clone(), Some(v))));
                            }
                        }
                        if !self.populated {
                            self.populated = true;
                            self.initial = listed.len() + deletions;
                        }
                    }
                    Op::Resync => {
                        let known: Vec<(String, i32)> = self
                            .known
                            .iter()
                            .flatten()
                            .map(|(k, v)| (k.clone(), *v))
                            .collect();
                        for (k, v) in known {
                            if !self.is_queued(&k) {
                                self.push(&k, (DeltaType::Sync, MObj::Obj(k.clone(), v)));
                            }
                        }
                    }
                    Op::Pop => {
                        if self.queue.is_empty() {
                            return None;
                        }
                        let (_, deltas) = self.queue.remove(0);
                        let initial = !(self.populated && self.initial == 0);
                        self.initial = self.initial.saturating_sub(1);
                        if let Some(known) = &mut self.known {
                            for (t, o) in &deltas {
                                match (t, o) {
                                    (DeltaType::Deleted, MObj::Obj(k, _) | MObj::Tomb(k, _)) => {
                                        known.remove(k);
                                    }
                                    (_, MObj::Obj(k, v)) => {
                                        known.insert(k.clone(), *v);
                                    }
                                    (_, MObj::Tomb(..)) => unreachable!("tombstones are deletions"),
                                }
                            }
                        }
                        return Some((deltas, initial));
                    }
                }
                None
            }
        }

        fn to_model(deltas: &Deltas<TestObj>) -> Vec<MDelta> {
            deltas
                .iter()
                .map(|d| {
                    let o = match &d.object {
                        DeltaObject::Object(o) => MObj::Obj(o.name.clone(), o.value),
                        DeltaObject::Tombstone(t) => {
                            MObj::Tomb(t.key.clone(), t.obj.as_ref().map(|o| o.value))
                        }
                    };
                    (d.delta_type, o)
                })
                .collect()
        }

        /// What a pop hands the consumer: applied to the known objects as an informer
        /// applies deltas to its indexer.
        fn handle(known: &Option<Arc<Known>>, deltas: &Deltas<TestObj>) {
            let Some(known) = known else { return };
            let mut store = known.0.lock();
            for d in deltas {
                match (&d.delta_type, &d.object) {
                    (DeltaType::Deleted, DeltaObject::Object(o)) => {
                        store.remove(&o.name);
                    }
                    (DeltaType::Deleted, DeltaObject::Tombstone(t)) => {
                        store.remove(&t.key);
                    }
                    (_, DeltaObject::Object(o)) => {
                        store.insert(o.name.clone(), Arc::clone(o));
                    }
                    (_, DeltaObject::Tombstone(_)) => {}
                }
            }
        }

        fn run(ops: Vec<Op>, with_known: bool, emit_replaced: bool) -> Result<(), TestCaseError> {
            let known = with_known.then(|| Known::with(&[]));
            let mut opts = options().emit_delta_type_replaced(emit_replaced);
            if let Some(k) = &known {
                opts = opts.known_objects(Arc::clone(k) as Arc<dyn KnownObjects<TestObj>>);
            }
            let fifo = DeltaFifo::new(opts);
            let mut model = Model {
                queue: Vec::new(),
                known: with_known.then(BTreeMap::new),
                emit_replaced,
                populated: false,
                initial: 0,
            };
            for op in &ops {
                let expected = model.apply(op);
                match op {
                    Op::Add(n, v) => fifo.add(obj(n, *v)).unwrap(),
                    Op::Update(n, v) => fifo.update(obj(n, *v)).unwrap(),
                    Op::Delete(n, v) => fifo.delete(obj(n, *v)).unwrap(),
                    Op::Replace(list) => fifo
                        .replace(list.iter().map(|(n, v)| obj(n, *v)).collect(), "1")
                        .unwrap(),
                    Op::Resync => fifo.resync().unwrap(),
                    Op::Pop => {
                        let got = fifo
                            .try_pop(|deltas, initial| {
                                handle(&known, &deltas);
                                Ok::<_, std::convert::Infallible>((to_model(&deltas), initial))
                            })
                            .now_or_never()
                            .map(Result::unwrap);
                        prop_assert_eq!(got, expected, "pop after {:?}", op);
                    }
                }
                let keys: Vec<String> = model.queue.iter().map(|(k, _)| k.clone()).collect();
                prop_assert_eq!(fifo.list_keys(), keys);
                for (k, deltas) in &model.queue {
                    let got = fifo.get_by_key(k).map(|d| to_model(&d));
                    prop_assert_eq!(got.as_ref(), Some(deltas), "deltas of {}", k);
                }
                prop_assert_eq!(fifo.has_synced(), model.populated && model.initial == 0);
            }
            Ok(())
        }

        proptest! {
            #[test]
            fn fifo_agrees_with_model(
                ops in prop::collection::vec(op(), 0..60),
                with_known in any::<bool>(),
                emit_replaced in any::<bool>(),
            ) {
                run(ops, with_known, emit_replaced)?;
            }
        }
    }
}
