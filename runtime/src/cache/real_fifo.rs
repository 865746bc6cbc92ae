//! The RealFIFO: every change delivered, in arrival order (client-go's `RealFIFO`, which
//! shared informers use by default since client-go 1.33).
//!
//! Where a [`DeltaFifo`](crate::cache::delta_fifo::DeltaFifo) gathers the changes of one
//! key into one pop, a [`RealFifo`] queues each change on its own: one pop hands out one
//! [`Delta`] (as a one-element [`Deltas`]), in the order the changes arrived, across all
//! keys. It shares the DeltaFIFO's types ([`Delta`], [`KnownObjects`], [`PopError`], ...).
//!
//! # Contract
//!
//! - **Order.** Pops follow arrival order exactly; nothing is coalesced or deduplicated,
//!   and a delete is always queued, even for a key nobody knows.
//! - **Replace** (after a list) is atomic and queues, in this order: (1) a `Deleted`
//!   tombstone for each queued key not in the list whose last queued change is not
//!   already a deletion (carrying that last queued object; in order of first appearance
//!   in the queue); (2) a `Deleted` tombstone for each known key neither listed nor
//!   queued (carrying the known object; [`KnownObjects::list_keys`] order); (3) a
//!   `Replaced` delta for every listed object, in list order. Deletions come first so
//!   that a consumer never holds an object and its replacement's missed deletion at once.
//! - **Resync** queues a `Sync` delta with the known object for every known key that has
//!   nothing queued.
//! - **`has_synced`** is true once an add, update or delete came before any replace, or
//!   once every change queued by the first replace (deletions included) has been popped
//!   and processed.
//! - Keys, the transformer (never on `Sync` deltas nor tombstones), process errors
//!   (the delta is dropped, the error returned), close, concurrency (`process` runs under
//!   the FIFO's lock; known objects are called under it) and cancel-safety are as for the
//!   DeltaFIFO.
//!
//! It does not implement client-go's atomic mode (one `ReplacedAll` item per relist, one
//! `SyncAll` item per resync), nor batched pops, nor releasing the lock while
//! processing.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use crate::cache::keys::TransformError;
use crate::cache::store::StoreError;

use crate::cache::delta_fifo::{
    Delta, DeltaType, Deltas, FifoCore, KeyError, KeyFunc, KnownObjects, PopError, Queue,
    TransformFunc,
};

/// How a [`RealFifo`] is built (client-go's `RealFIFOOptions`, non-atomic mode).
pub struct RealFifoOptions<T> {
    /// Computes the key of an object.
    pub key_function: KeyFunc<T>,
    /// The objects the consumer already holds, used by replace and resync. Required, as
    /// in client-go's non-atomic mode.
    pub known_objects: Arc<dyn KnownObjects<T>>,
    /// Applied once to each object given to add, update, delete and replace.
    pub transformer: Option<TransformFunc<T>>,
}

impl<T> RealFifoOptions<T> {
    /// Options with the given key function and known objects, and no transformer.
    pub fn new(
        key_function: impl Fn(&T) -> Result<String, KeyError> + Send + Sync + 'static,
        known_objects: Arc<dyn KnownObjects<T>>,
    ) -> Self {
        RealFifoOptions {
            key_function: Arc::new(key_function),
            known_objects,
            transformer: None,
        }
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

impl<K: kube::Resource + 'static> RealFifoOptions<K> {
    /// Options keying objects by `namespace/name` ([`crate::object::object_key`]).
    pub fn for_resource(known_objects: Arc<dyn KnownObjects<K>>) -> Self {
        RealFifoOptions::new(|obj: &K| Ok(crate::object::object_key(obj)), known_objects)
    }
}

impl<T> fmt::Debug for RealFifoOptions<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealFifoOptions")
            .field("transformer", &self.transformer.is_some())
            .finish_non_exhaustive()
    }
}

/// The RealFIFO's queue: deltas in arrival order.
impl<T> Queue for VecDeque<Delta<T>> {
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
}

/// client-go's RealFIFO; see the [module documentation](self) for its contract.
///
/// ```
/// use std::sync::Arc;
/// use kubegen_runtime::cache::delta_fifo::{DeltaType, KnownObjects};
/// use kubegen_runtime::cache::real_fifo::{RealFifo, RealFifoOptions};
///
/// #[derive(Debug)]
/// struct Item { name: String, value: u32 }
///
/// struct NothingKnown;
/// impl KnownObjects<Item> for NothingKnown {
///     fn list_keys(&self) -> Vec<String> { Vec::new() }
///     fn get_by_key(&self, _: &str) -> Option<Arc<Item>> { None }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let fifo = RealFifo::new(RealFifoOptions::new(
///     |item: &Item| Ok(item.name.clone()),
///     Arc::new(NothingKnown),
/// ));
/// fifo.add(Arc::new(Item { name: "a".into(), value: 1 })).unwrap();
/// fifo.update(Arc::new(Item { name: "a".into(), value: 2 })).unwrap();
///
/// // Each change comes out on its own, in order.
/// for expected in [DeltaType::Added, DeltaType::Updated] {
///     let got = fifo
///         .pop(|deltas, _| deltas[0].delta_type)
///         .await
///         .unwrap();
///     assert_eq!(got, expected);
/// }
/// # }
/// ```
pub struct RealFifo<T> {
    core: FifoCore<T, VecDeque<Delta<T>>>,
    known_objects: Arc<dyn KnownObjects<T>>,
}

impl<T> fmt::Debug for RealFifo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealFifo")
            .field("state", &self.core)
            .finish_non_exhaustive()
    }
}

impl<T: Send + Sync + 'static> RealFifo<T> {
    /// An empty, open FIFO.
    pub fn new(options: RealFifoOptions<T>) -> Self {
        RealFifo {
            core: FifoCore::new(VecDeque::new(), options.key_function, options.transformer),
            known_objects: options.known_objects,
        }
    }

    /// The key of an object, by the key function.
    pub fn key_of(&self, obj: &T) -> Result<String, KeyError> {
        self.core.key_of(obj)
    }

    /// Queues an `Added` delta. Fails, changing nothing, when the object's key cannot be
    /// computed or the transformer rejects it.
    pub fn add(&self, obj: Arc<T>) -> Result<(), StoreError> {
        self.push_change(DeltaType::Added, obj)
    }

    /// Queues an `Updated` delta. Fails, changing nothing, when the object's key cannot
    /// be computed or the transformer rejects it.
    pub fn update(&self, obj: Arc<T>) -> Result<(), StoreError> {
        self.push_change(DeltaType::Updated, obj)
    }

    /// Queues a `Deleted` delta, whether or not the key is known. Fails, changing nothing,
    /// when the object's key cannot be computed or the transformer rejects it.
    pub fn delete(&self, obj: Arc<T>) -> Result<(), StoreError> {
        self.push_change(DeltaType::Deleted, obj)
    }

    fn push_change(&self, delta_type: DeltaType, obj: Arc<T>) -> Result<(), StoreError> {
        // Every queued object must have a key: replace and resync look them up.
        self.key_of(&obj)?;
        let obj = self.core.transform(obj)?;
        let mut state = self.core.lock();
        state.mark_populated();
        state.queue.push_back(Delta::new(delta_type, obj));
        self.core.wake_poppers();
        Ok(())
    }

    /// Queues the deletions a list at `resource_version` (unused) reveals, then a
    /// `Replaced` delta per listed object (see the module documentation).
    ///
    /// Atomic: when a key cannot be computed for a listed or queued object, or the
    /// transformer rejects a listed one, nothing changes and the error is returned.
    pub fn replace(&self, list: Vec<Arc<T>>, resource_version: &str) -> Result<(), StoreError> {
        let _ = resource_version;
        let listed = list
            .iter()
            .map(|obj| self.key_of(obj))
            .collect::<Result<HashSet<String>, KeyError>>()?;
        let list = list
            .into_iter()
            .map(|obj| self.core.transform(obj))
            .collect::<Result<Vec<Arc<T>>, TransformError>>()?;

        let mut state = self.core.lock();
        // Queued keys in order of first appearance, with the index of their last delta.
        let mut queued: Vec<String> = Vec::new();
        let mut last_index: HashMap<String, usize> = HashMap::new();
        for (index, delta) in state.queue.iter().enumerate() {
            let key = self.core.key_of_object(&delta.object)?;
            if last_index.insert(key.clone(), index).is_none() {
                queued.push(key);
            }
        }

        let mut deletions: Vec<Delta<T>> = Vec::new();
        for key in queued {
            if listed.contains(&key) {
                continue;
            }
            let Some(last) = last_index.get(&key).and_then(|&i| state.queue.get(i)) else {
                continue;
            };
            if last.delta_type == DeltaType::Deleted {
                continue;
            }
            let last_state = last.object.object().cloned();
            deletions.push(Delta::tombstone(key, last_state));
        }
        for key in self.known_objects.list_keys() {
            if listed.contains(&key) || last_index.contains_key(&key) {
                continue;
            }
            let last_state = self.known_objects.get_by_key(&key);
            deletions.push(Delta::tombstone(key, last_state));
        }

        state.queue.extend(deletions);
        state.queue.extend(
            list.into_iter()
                .map(|obj| Delta::new(DeltaType::Replaced, obj)),
        );
        let pops = state.queue.len();
        state.replaced(pops);
        self.core.wake_poppers();
        Ok(())
    }

    /// Queues a `Sync` delta with the known object for every known key that has nothing
    /// queued. Fails, changing nothing, only when a queued object's key cannot be
    /// computed.
    pub fn resync(&self) -> Result<(), StoreError> {
        let mut state = self.core.lock();
        let queued = state
            .queue
            .iter()
            .map(|delta| self.core.key_of_object(&delta.object))
            .collect::<Result<HashSet<String>, KeyError>>()?;
        let before = state.queue.len();
        for key in self.known_objects.list_keys() {
            if queued.contains(&key) {
                continue;
            }
            if let Some(obj) = self.known_objects.get_by_key(&key) {
                state.queue.push_back(Delta::new(DeltaType::Sync, obj));
            }
        }
        if state.queue.len() > before {
            self.core.wake_poppers();
        }
        Ok(())
    }

    /// [`RealFifo::try_pop`] with a `process` that cannot fail: no error type to spell.
    /// Returns [`PopError::Closed`] when the FIFO is closed and empty.
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(Deltas<T>, bool) -> R,
    ) -> Result<R, PopError<std::convert::Infallible>> {
        self.try_pop(|deltas, initial| Ok(process(deltas, initial)))
            .await
    }

    /// Waits for a queued delta, removes it, and calls
    /// `process(deltas_of_one, is_in_initial_list)` while holding the FIFO's lock,
    /// returning what `process` returns.
    ///
    /// As [`DeltaFifo::pop`](crate::cache::delta_fifo::DeltaFifo::pop): a failed
    /// `process` drops the delta and its error is returned in [`PopError::Process`];
    /// [`PopError::Closed`] when closed and empty; `process` must not call into this FIFO;
    /// cancel-safe.
    pub async fn try_pop<R, E>(
        &self,
        process: impl FnOnce(Deltas<T>, bool) -> Result<R, E>,
    ) -> Result<R, PopError<E>> {
        let mut state = self.core.lock_for_pop().await;
        let Some(delta) = state.queue.pop_front() else {
            return Err(PopError::Closed);
        };
        // client-go counts the delta only once it is processed; under our lock nobody can
        // look in between, and counting first keeps the count right if `process` panics.
        let is_in_initial_list = state.count_pop();
        process(Deltas::from(vec![delta]), is_in_initial_list).map_err(PopError::Process)
    }

    /// How many deltas are queued.
    pub fn len(&self) -> usize {
        self.core.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.core.len() == 0
    }

    /// Whether everything the first replace queued has been popped, or an add, update or
    /// delete came before any replace.
    pub fn has_synced(&self) -> bool {
        self.core.has_synced()
    }

    /// Closes the FIFO: waiting and future pops return [`PopError::Closed`] once it is
    /// empty. Changes are still accepted and queued deltas still pop.
    pub fn close(&self) {
        self.core.close();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.core.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::cache::delta_fifo::test_support::*;

    fn fifo_with_known(objs: &[(&str, i32)]) -> RealFifo<TestObj> {
        RealFifo::new(RealFifoOptions::new(
            |o: &TestObj| Ok(o.name.clone()),
            Known::with(objs),
        ))
    }

    /// Pops one delta; the FIFO must not be empty.
    async fn pop(fifo: &RealFifo<TestObj>) -> (Vec<String>, bool) {
        fifo.pop(|deltas, initial| (summary(&deltas), initial))
            .await
            .unwrap()
    }

    /// Pops until empty, one string per delta.
    async fn pop_all(fifo: &RealFifo<TestObj>) -> Vec<String> {
        let mut out = Vec::new();
        while !fifo.is_empty() {
            let (mut deltas, _) = pop(fifo).await;
            assert_eq!(deltas.len(), 1, "a RealFIFO pop hands out one delta");
            out.append(&mut deltas);
        }
        out
    }

    #[tokio::test]
    async fn every_change_pops_on_its_own() {
        // SEMANTICS 2.27
        let f = fifo_with_known(&[]);
        f.add(obj("a", 1)).unwrap();
        f.update(obj("a", 2)).unwrap();
        f.delete(obj("a", 3)).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(pop(&f).await.0, strings(&["Added a=1"]));
        assert_eq!(pop(&f).await.0, strings(&["Updated a=2"]));
        assert_eq!(pop(&f).await.0, strings(&["Deleted a=3"]));
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn deletes_are_never_ignored_or_collapsed() {
        let f = fifo_with_known(&[]);
        f.delete(obj("unknown", 1)).unwrap();
        f.delete(obj("unknown", 2)).unwrap();
        assert_eq!(
            pop_all(&f).await,
            strings(&["Deleted unknown=1", "Deleted unknown=2"])
        );
    }

    #[tokio::test]
    async fn replace_queues_deletions_before_replacements() {
        let f = fifo_with_known(&[("pod-1", 1), ("pod-2", 2), ("pod-3", 3)]);
        f.replace(vec![obj("pod-1", 4), obj("pod-2", 5), obj("pod-4", 6)], "6")
            .unwrap();
        let mut popped = Vec::new();
        for _ in 0..4 {
            assert!(!f.has_synced());
            let (deltas, initial) = pop(&f).await;
            assert!(initial);
            popped.extend(deltas);
        }
        assert!(f.has_synced());
        assert_eq!(
            popped,
            strings(&[
                "Deleted DFSU pod-3=3",
                "Replaced pod-1=4",
                "Replaced pod-2=5",
                "Replaced pod-4=6"
            ])
        );
    }

    #[tokio::test]
    async fn replace_deletes_queued_keys_unless_already_deleted() {
        let f = fifo_with_known(&[("known", 1), ("listed", 1)]);
        f.add(obj("x", 1)).unwrap();
        f.update(obj("x", 2)).unwrap();
        f.add(obj("y", 1)).unwrap();
        f.delete(obj("y", 2)).unwrap();
        f.replace(vec![obj("listed", 2)], "1").unwrap();
        assert_eq!(
            pop_all(&f).await,
            strings(&[
                "Added x=1",
                "Updated x=2",
                "Added y=1",
                "Deleted y=2",
                "Deleted DFSU x=2",
                "Deleted DFSU known=1",
                "Replaced listed=2",
            ])
        );
    }

    #[tokio::test]
    async fn resync_skips_keys_with_queued_changes() {
        let f = fifo_with_known(&[("a", 1), ("b", 1)]);
        f.update(obj("a", 2)).unwrap();
        f.resync().unwrap();
        assert_eq!(pop_all(&f).await, strings(&["Updated a=2", "Sync b=1"]));
    }

    #[tokio::test]
    async fn has_synced_and_initial_list() {
        let f = fifo_with_known(&[]);
        assert!(!f.has_synced());
        f.add(obj("a", 1)).unwrap();
        assert!(f.has_synced(), "an add before any replace");
        assert!(!pop(&f).await.1);

        let f = fifo_with_known(&[]);
        f.replace(vec![], "0").unwrap();
        assert!(f.has_synced(), "an empty first replace");

        let f = fifo_with_known(&[]);
        f.replace(vec![obj("a", 1), obj("a", 2)], "0").unwrap();
        assert!(pop(&f).await.1);
        assert!(!f.has_synced(), "every delta of the first replace counts");
        assert!(pop(&f).await.1);
        assert!(f.has_synced());
        f.add(obj("b", 1)).unwrap();
        assert!(!pop(&f).await.1);
    }

    #[tokio::test]
    async fn transformer_skips_sync_and_tombstones() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let known = Known::with(&[]);
        let f = RealFifo::new(
            RealFifoOptions::new(|o: &TestObj| Ok(o.name.clone()), Arc::clone(&known) as _)
                .transformer(move |o: Arc<TestObj>| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok(Arc::new(TestObj {
                        name: o.name.clone(),
                        value: o.value,
                        transformed: o.transformed + 1,
                    }))
                }),
        );
        f.add(obj("a", 1)).unwrap();
        f.replace(vec![obj("b", 1)], "1").unwrap();
        // As an informer would: the transformed b lands in the known objects.
        assert_eq!(pop(&f).await.0, strings(&["Added a=1"]));
        assert_eq!(pop(&f).await.0, strings(&["Deleted DFSU a=1"]));
        let b = f
            .pop(|d, _| d[0].object.object().cloned())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(b.transformed, 1);
        known.0.lock().insert("b".to_owned(), b);
        f.resync().unwrap();
        let sync = f.pop(|d, _| d[0].clone()).await.unwrap();
        assert_eq!(sync.delta_type, DeltaType::Sync);
        assert_eq!(sync.object.object().unwrap().transformed, 1);
        assert_eq!(calls.load(Ordering::SeqCst), 2, "a and b, once each");
    }

    #[tokio::test]
    async fn process_error_drops_the_delta_and_close_wakes_pops() {
        let f = Arc::new(fifo_with_known(&[]));
        f.add(obj("a", 1)).unwrap();
        let r: Result<(), _> = f.try_pop(|_, _| Err("failed")).await;
        assert!(matches!(r, Err(PopError::Process("failed"))));
        assert!(f.is_empty());

        let waiting = {
            let f = Arc::clone(&f);
            tokio::spawn(async move { f.pop(|_, _| ()).await })
        };
        tokio::task::yield_now().await;
        f.close();
        assert!(f.is_closed());
        let r = tokio::time::timeout(std::time::Duration::from_secs(30), waiting)
            .await
            .expect("close must wake a blocked pop")
            .unwrap();
        assert!(matches!(r, Err(PopError::Closed)));
    }

    mod model {
        //! RealFIFO against a reference model: a plain list of (type, key, value) entries.

        use std::collections::BTreeMap;

        use futures::FutureExt;
        use proptest::prelude::*;

        use super::*;
        use crate::cache::delta_fifo::DeltaObject;

        /// (type, key, value; `None` for a tombstone without an object, `tombstone`).
        type MDelta = (DeltaType, String, Option<i32>, bool);

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
                5 => Just(Op::Pop),
            ]
        }

        #[derive(Default)]
        struct Model {
            items: Vec<MDelta>,
            known: BTreeMap<String, i32>,
            populated: bool,
            initial: usize,
        }

        impl Model {
            fn apply(&mut self, op: &Op) -> Option<(MDelta, bool)> {
                match op {
                    Op::Add(n, v) | Op::Update(n, v) | Op::Delete(n, v) => {
                        let t = match op {
                            Op::Add(..) => DeltaType::Added,
                            Op::Update(..) => DeltaType::Updated,
                            _ => DeltaType::Deleted,
                        };
                        self.populated = true;
                        self.items.push((t, n.clone(), Some(*v), false));
                    }
                    Op::Replace(list) => {
                        let listed: Vec<&String> = list.iter().map(|(n, _)| n).collect();
                        let mut queued: Vec<String> = Vec::new();
                        for (_, k, _, _) in &self.items {
                            if !queued.contains(k) {
                                queued.push(k.clone());
                            }
                        }
                        let mut new = Vec::new();
                        for k in &queued {
                            let last = self.items.iter().rev().find(|d| &d.1 == k).unwrap();
                            if !listed.contains(&k) && last.0 != DeltaType::Deleted {
                                new.push((DeltaType::Deleted, k.clone(), last.2, true));
                            }
                        }
                        for (k, v) in &self.known {
                            if !listed.contains(&k) && !queued.contains(k) {
                                new.push((DeltaType::Deleted, k.clone(), Some(*v), true));
                            }
                        }
                        for (n, v) in list {
                            new.push((DeltaType::Replaced, n.clone(), Some(*v), false));
                        }
                        self.items.extend(new);
                        if !self.populated {
                            self.populated = true;
                            self.initial = self.items.len();
                        }
                    }
                    Op::Resync => {
                        let known: Vec<(String, i32)> =
                            self.known.iter().map(|(k, v)| (k.clone(), *v)).collect();
                        for (k, v) in known {
                            if !self.items.iter().any(|d| d.1 == k) {
                                self.items.push((DeltaType::Sync, k, Some(v), false));
                            }
                        }
                    }
                    Op::Pop => {
                        if self.items.is_empty() {
                            return None;
                        }
                        let d = self.items.remove(0);
                        let initial = !(self.populated && self.initial == 0);
                        self.initial = self.initial.saturating_sub(1);
                        match (d.0, d.2) {
                            (DeltaType::Deleted, _) | (_, None) => self.known.remove(&d.1),
                            (_, Some(v)) => self.known.insert(d.1.clone(), v),
                        };
                        return Some((d, initial));
                    }
                }
                None
            }
        }

        fn to_model(deltas: &Deltas<TestObj>) -> MDelta {
            let d = &deltas[0];
            match &d.object {
                DeltaObject::Object(o) => (d.delta_type, o.name.clone(), Some(o.value), false),
                DeltaObject::Tombstone(t) => (
                    d.delta_type,
                    t.key.clone(),
                    t.obj.as_ref().map(|o| o.value),
                    true,
                ),
            }
        }

        fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
            let known = Known::with(&[]);
            let fifo = RealFifo::new(RealFifoOptions::new(
                |o: &TestObj| Ok(o.name.clone()),
                Arc::clone(&known) as Arc<dyn KnownObjects<TestObj>>,
            ));
            let mut model = Model::default();
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
                                // Apply to the known objects as an informer would.
                                let mut store = known.0.lock();
                                let d = &deltas[0];
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
                                Ok::<_, std::convert::Infallible>((to_model(&deltas), initial))
                            })
                            .now_or_never()
                            .map(Result::unwrap);
                        prop_assert_eq!(got, expected, "pop after {:?}", op);
                    }
                }
                prop_assert_eq!(fifo.len(), model.items.len());
                prop_assert_eq!(fifo.has_synced(), model.populated && model.initial == 0);
            }
            Ok(())
        }

        proptest! {
            #[test]
            fn real_fifo_agrees_with_model(ops in prop::collection::vec(op(), 0..60)) {
                run(ops)?;
            }
        }
    }
}
