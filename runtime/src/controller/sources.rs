//! Where a controller's keys come from: its handlers on the shared informers (the
//! primary's own keys through the predicates, related objects' keys through a map), and
//! their registrations, removed when the controller stops.

use std::sync::Arc;

use super::Predicate;
use crate::cache::informer::{
    DeltaObject, InformerError, ResourceEventHandler, SharedIndexInformer,
};
use crate::object::{object_key, Object};
use crate::workqueue::RateLimitingQueue;

/// A handler registration the controller removes when it stops.
pub(super) struct Registered {
    pub(super) has_synced: Box<dyn Fn() -> bool + Send + Sync>,
    pub(super) remove: Box<dyn FnOnce() + Send>,
}

pub(super) type Source =
    Box<dyn FnOnce(RateLimitingQueue<String>) -> Result<Registered, InformerError> + Send>;
pub(super) type MapFn<C> = Arc<dyn Fn(&C) -> Vec<String> + Send + Sync>;

pub(super) fn register<C: Object>(
    informer: SharedIndexInformer<C>,
    handler: impl ResourceEventHandler<C>,
) -> Result<Registered, InformerError> {
    let registration = informer.add_event_handler(handler)?;
    let synced = registration.clone();
    Ok(Registered {
        has_synced: Box::new(move || synced.has_synced()),
        remove: Box::new(move || informer.remove_event_handler(&registration)),
    })
}

/// Enqueues the primary's own key for notifications every predicate passes.
pub(super) struct PrimaryHandler<K> {
    pub(super) queue: RateLimitingQueue<String>,
    pub(super) predicates: Arc<[Arc<dyn Predicate<K>>]>,
}

impl<K: Object> ResourceEventHandler<K> for PrimaryHandler<K> {
    fn on_add(&self, obj: &Arc<K>, _initial: bool) {
        if self.predicates.iter().all(|p| p.create(obj)) {
            self.queue.add(object_key(obj.as_ref()));
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if self.predicates.iter().all(|p| p.update(old, new)) {
            self.queue.add(object_key(new.as_ref()));
        }
    }
    fn on_delete(&self, obj: &DeltaObject<K>) {
        let last = obj.object().map(Arc::as_ref);
        if self.predicates.iter().all(|p| p.delete(last)) {
            let key = match obj {
                DeltaObject::Object(o) => object_key(o.as_ref()),
                DeltaObject::Tombstone(t) => t.key.clone(),
            };
            self.queue.add(key);
        }
    }
}

/// Enqueues the keys a related object maps to; an update enqueues the keys of both its
/// old and new state (an owner reference may have moved).
pub(super) struct MapHandler<C> {
    pub(super) queue: RateLimitingQueue<String>,
    pub(super) map: MapFn<C>,
}

impl<C: Object> ResourceEventHandler<C> for MapHandler<C> {
    fn on_add(&self, obj: &Arc<C>, _initial: bool) {
        (self.map)(obj).into_iter().for_each(|k| self.queue.add(k));
    }
    fn on_update(&self, old: &Arc<C>, new: &Arc<C>) {
        let mut keys = (self.map)(old);
        for key in (self.map)(new) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys.into_iter().for_each(|k| self.queue.add(k));
    }
    fn on_delete(&self, obj: &DeltaObject<C>) {
        if let Some(obj) = obj.object() {
            (self.map)(obj).into_iter().for_each(|k| self.queue.add(k));
        }
    }
}
