//! Predicates: which notifications of the primary kind enqueue its key
//! (controller-runtime's `pkg/predicate`).
//!
//! Contract: a notification enqueues only when every predicate of the controller passes
//! it. The built-in predicates filter updates only (creations and deletions always pass,
//! as in controller-runtime); an informer resync is an update whose old and new objects
//! carry the same resourceVersion.

use std::collections::BTreeMap;

use crate::object::Object;

/// Decides whether a notification about `K` should enqueue its key.
pub trait Predicate<K>: Send + Sync + 'static {
    /// An object appeared (also: the initial list).
    fn create(&self, obj: &K) -> bool {
        let _ = obj;
        true
    }
    /// An object changed (or was re-delivered by a resync).
    fn update(&self, old: &K, new: &K) -> bool {
        let _ = (old, new);
        true
    }
    /// An object was deleted (`None`: its last state is unknown).
    fn delete(&self, obj: Option<&K>) -> bool {
        let _ = obj;
        true
    }
}

/// Passes updates that change `metadata.generation` (spec changes on kinds with a status
/// subresource); drops status-only and metadata-only updates and resyncs.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenerationChanged;

impl<K: Object> Predicate<K> for GenerationChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.meta().generation != new.meta().generation
    }
}

/// Passes updates that change `metadata.resourceVersion`: drops resyncs only.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResourceVersionChanged;

impl<K: Object> Predicate<K> for ResourceVersionChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        old.meta().resource_version != new.meta().resource_version
    }
}

/// Passes updates that change `metadata.labels`.
#[derive(Debug, Clone, Copy, Default)]
pub struct LabelsChanged;

impl<K: Object> Predicate<K> for LabelsChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        non_empty(&old.meta().labels) != non_empty(&new.meta().labels)
    }
}

/// Passes updates that change `metadata.annotations`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnnotationsChanged;

impl<K: Object> Predicate<K> for AnnotationsChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        non_empty(&old.meta().annotations) != non_empty(&new.meta().annotations)
    }
}

/// An absent map and an empty one are the same labels.
fn non_empty(map: &Option<BTreeMap<String, String>>) -> Option<&BTreeMap<String, String>> {
    map.as_ref().filter(|m| !m.is_empty())
}

/// Passes a notification when either predicate does (controller-runtime's `Or`).
#[derive(Debug, Clone, Copy)]
pub struct Or<A, B>(pub A, pub B);

impl<K, A: Predicate<K>, B: Predicate<K>> Predicate<K> for Or<A, B> {
    fn create(&self, obj: &K) -> bool {
        self.0.create(obj) || self.1.create(obj)
    }
    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) || self.1.update(old, new)
    }
    fn delete(&self, obj: Option<&K>) -> bool {
        self.0.delete(obj) || self.1.delete(obj)
    }
}

/// A predicate on every notification's (current) object: for updates it sees the new
/// object, for deletions of an unknown final state it passes.
///
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kubegen_runtime::controller::predicate::{self, Predicate};
///
/// let labelled = predicate::filter(|d: &Deployment| d.metadata.labels.is_some());
/// assert!(!labelled.create(&Deployment::default()));
/// ```
pub fn filter<K, F>(f: F) -> Filter<F>
where
    F: Fn(&K) -> bool + Send + Sync + 'static,
{
    Filter(f)
}

/// See [`filter`].
#[derive(Debug, Clone, Copy)]
pub struct Filter<F>(F);

impl<K, F> Predicate<K> for Filter<F>
where
    F: Fn(&K) -> bool + Send + Sync + 'static,
{
    fn create(&self, obj: &K) -> bool {
        (self.0)(obj)
    }
    fn update(&self, _old: &K, new: &K) -> bool {
        (self.0)(new)
    }
    fn delete(&self, obj: Option<&K>) -> bool {
        obj.is_none_or(|o| (self.0)(o))
    }
}

/// A predicate on updates only, given the old and new object.
pub fn on_update<K, F>(f: F) -> OnUpdate<F>
where
    F: Fn(&K, &K) -> bool + Send + Sync + 'static,
{
    OnUpdate(f)
}

/// See [`on_update`].
#[derive(Debug, Clone, Copy)]
pub struct OnUpdate<F>(F);

impl<K, F> Predicate<K> for OnUpdate<F>
where
    F: Fn(&K, &K) -> bool + Send + Sync + 'static,
{
    fn update(&self, old: &K, new: &K) -> bool {
        (self.0)(old, new)
    }
}
