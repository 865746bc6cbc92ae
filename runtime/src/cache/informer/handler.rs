//! Event handlers: what an informer calls when the objects it caches change.
//!
//! Contract (client-go's `ResourceEventHandler`):
//! - `on_add(obj, is_in_initial_list)`: the object appeared in the cache;
//!   `is_in_initial_list` is true for objects of the initial list (and for the synthetic
//!   adds a handler registered late receives for what the cache already holds).
//! - `on_update(old, new)`: the object changed, or (when `old` and `new` carry the same
//!   resourceVersion) a periodic resync re-delivered it.
//! - `on_delete(obj)`: the object left the cache. When the deletion itself was missed
//!   (the watch dropped it and a relist found the object gone), `obj` is a
//!   [`DeltaObject::Tombstone`] holding the last known state.
//! - One handler's calls are made one at a time, in order, on a thread of its own: a
//!   slow handler delays only itself, never the informer or other handlers. Handlers
//!   must not block forever if they want the process to exit cleanly.
//! - Objects are shared with the cache: read them, never mutate them (they are behind
//!   `Arc` and cannot be mutated without interior mutability).

use std::fmt;
use std::sync::Arc;

use crate::cache::delta_fifo::DeltaObject;

/// Receives notifications about changes to an informer's objects.
///
/// Every method has an empty default, so implement only what you need. The handler is
/// called from a dedicated thread; keep it short (usually: put a key on a workqueue).
pub trait ResourceEventHandler<K>: Send + Sync + 'static {
    /// The object was added to the cache.
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }

    /// The object was updated (or re-delivered by a resync: same resourceVersion).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// The object was deleted; a tombstone when its final state is unknown.
    fn on_delete(&self, obj: &DeltaObject<K>) {
        let _ = obj;
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeltaObject<K>) + Send + Sync>;

/// A [`ResourceEventHandler`] made of closures (client-go's `ResourceEventHandlerFuncs`);
/// a missing closure ignores its notification.
///
/// Name the object type once, on `new` (`ResourceEventHandlerFuncs::<Pod>::new()`): the
/// closures then need no parameter types. Without it, nothing tells the closures their
/// type while they are checked (`add_event_handler` takes any handler, so the informer's
/// type cannot flow back into them), and a closure that reads its object fails with
/// "type annotations needed".
///
/// ```
/// use std::sync::Arc;
/// use kubegen_runtime::cache::informer::ResourceEventHandlerFuncs;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let handler = ResourceEventHandlerFuncs::<Pod>::new()
///     .add_func(|pod, _initial| println!("added {:?}", pod.metadata.name))
///     .update_func(|old, new| println!("{:?} -> {:?}", old.metadata.resource_version, new.metadata.resource_version))
///     .delete_func(|obj| println!("deleted {:?}", obj.object().map(|p| &p.metadata.name)));
/// # let _ = handler;
/// ```
pub struct ResourceEventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for ResourceEventHandlerFuncs<K> {
    fn default() -> Self {
        ResourceEventHandlerFuncs {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> fmt::Debug for ResourceEventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerFuncs")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> ResourceEventHandlerFuncs<K> {
    /// A handler that ignores everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the closure called on add.
    pub fn add_func(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Sets the closure called on update.
    pub fn update_func(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the closure called on delete.
    pub fn delete_func(mut self, f: impl Fn(&DeltaObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for ResourceEventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }

    fn on_delete(&self, obj: &DeltaObject<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}

/// Passes to an inner handler only the objects a filter accepts (client-go's
/// `FilteringResourceEventHandler`).
///
/// On update: both pass -> `on_update`; only the new one passes -> `on_add(new, false)`;
/// only the old one -> `on_delete(old)`; neither -> nothing. A tombstone is filtered by
/// the state it carries; one with no state is passed on.
pub struct FilteringResourceEventHandler<K, F, H> {
    filter: F,
    handler: H,
    _kind: std::marker::PhantomData<fn(&K)>,
}

impl<K, F, H> FilteringResourceEventHandler<K, F, H>
where
    F: Fn(&K) -> bool + Send + Sync + 'static,
    H: ResourceEventHandler<K>,
{
    /// Wraps `handler`, passing only objects for which `filter` returns true.
    pub fn new(filter: F, handler: H) -> Self {
        FilteringResourceEventHandler {
            filter,
            handler,
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K, F, H> ResourceEventHandler<K> for FilteringResourceEventHandler<K, F, H>
where
    K: Send + Sync + 'static,
    F: Fn(&K) -> bool + Send + Sync + 'static,
    H: ResourceEventHandler<K>,
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self
                .handler
                .on_delete(&DeltaObject::Object(Arc::clone(old))),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &DeltaObject<K>) {
        let pass = obj.object().is_none_or(|o| (self.filter)(o));
        if pass {
            self.handler.on_delete(obj);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Debug, PartialEq)]
    struct Obj {
        app: &'static str,
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl ResourceEventHandler<Obj> for Arc<Recorder> {
        fn on_add(&self, obj: &Arc<Obj>, initial: bool) {
            self.0
                .lock()
                .unwrap()
                .push(format!("add {} {initial}", obj.app));
        }
        fn on_update(&self, old: &Arc<Obj>, new: &Arc<Obj>) {
            self.0
                .lock()
                .unwrap()
                .push(format!("update {}->{}", old.app, new.app));
        }
        fn on_delete(&self, obj: &DeltaObject<Obj>) {
            let app = obj.object().map_or("?", |o| o.app);
            self.0.lock().unwrap().push(format!("delete {app}"));
        }
    }

    #[test]
    fn filtering_handler_turns_updates_into_adds_and_deletes() {
        // SEMANTICS 4.16
        let rec = Arc::new(Recorder::default());
        let h = FilteringResourceEventHandler::new(|o: &Obj| o.app == "x", Arc::clone(&rec));
        let (x, y, z) = (
            Arc::new(Obj { app: "x" }),
            Arc::new(Obj { app: "y" }),
            Arc::new(Obj { app: "z" }),
        );
        h.on_update(&y, &x);
        h.on_update(&x, &y);
        h.on_update(&y, &z);
        h.on_update(&x, &x);
        h.on_add(&z, true);
        h.on_delete(&DeltaObject::Object(Arc::clone(&z)));
        assert_eq!(
            *rec.0.lock().unwrap(),
            vec!["add x false", "delete x", "update x->x"]
        );
    }

    #[test]
    fn funcs_call_only_what_is_set() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let h = ResourceEventHandlerFuncs::<Obj>::new()
            .add_func(move |o: &Arc<Obj>, i| s.lock().unwrap().push((o.app, i)));
        let o = Arc::new(Obj { app: "a" });
        h.on_add(&o, true);
        h.on_update(&o, &o);
        h.on_delete(&DeltaObject::Object(Arc::clone(&o)));
        assert_eq!(*seen.lock().unwrap(), vec![("a", true)]);
    }
}
