//! The finalizer helper: cleanup that runs before the API server lets an object go
//! (controller-runtime's `controllerutil` finalizer functions, kube-runtime's
//! `finalizer`).
//!
//! Contract of [`finalizer`], called from a reconcile with the live object:
//! - Not being deleted, without our finalizer: the finalizer is added first (a merge
//!   patch of `metadata.finalizers` carrying the object's resourceVersion, so a
//!   concurrent change is a 409 Conflict and the key is retried), then
//!   [`Event::Apply`] runs with the patched object.
//! - Not being deleted, with our finalizer: [`Event::Apply`].
//! - Being deleted (`deletionTimestamp` set), with our finalizer: [`Event::Cleanup`];
//!   after it succeeds the finalizer is removed (same patch, with the resourceVersion),
//!   and the API server deletes the object once no finalizer is left. A failed cleanup
//!   keeps the finalizer: the error goes back to the controller, which retries with
//!   backoff.
//! - Being deleted, without our finalizer: nothing runs (neither apply nor cleanup).
//!
//! Other finalizers on the object are kept as they are.
//!
//! Cleanup runs at least once, not exactly once, as with controller-runtime and
//! kube-runtime: a reconcile queued while the first cleanup ran reads the informer's
//! cache, which may not show the finalizer's removal yet, and runs the cleanup again
//! (its removal patch then fails on the stale resourceVersion or the missing object, and
//! the next try finds the object gone). Cleanup must be idempotent.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use kube::api::{Api, Patch, PatchParams};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Action;
use crate::object::Object;

/// What the finalizer helper asks the reconcile to do.
#[derive(Debug, Clone)]
pub enum Event<K> {
    /// The object exists and carries our finalizer: make the world match it.
    Apply(Arc<K>),
    /// The object is being deleted and still carries our finalizer: release what it
    /// holds; the finalizer is removed when this succeeds.
    Cleanup(Arc<K>),
}

/// Why [`finalizer`] failed. The reconcile's own error is shown, not chained as a
/// `source`, so that any `E: Display` works (a `Box<dyn Error>` included).
#[derive(Debug, thiserror::Error)]
pub enum Error<E: fmt::Display + fmt::Debug> {
    /// [`Event::Apply`] failed.
    #[error("apply failed: {0}")]
    Apply(E),
    /// [`Event::Cleanup`] failed; the finalizer stays.
    #[error("cleanup failed (finalizer kept, retried with backoff): {0}")]
    Cleanup(E),
    /// Adding the finalizer failed.
    #[error("adding finalizer {finalizer} failed: {source}")]
    AddFinalizer {
        /// The finalizer.
        finalizer: String,
        /// The API error.
        source: kube::Error,
    },
    /// Removing the finalizer failed.
    #[error("removing finalizer {finalizer} failed: {source}")]
    RemoveFinalizer {
        /// The finalizer.
        finalizer: String,
        /// The API error.
        source: kube::Error,
    },
    /// The object has no name: it does not come from the API server.
    #[error("the object has no metadata.name; pass the object the reconcile received")]
    UnnamedObject,
}

/// Runs `reconcile` for `obj` under the finalizer `name` (see the module docs); `api`
/// must address the object's namespace.
///
/// ```no_run
/// # async fn demo(api: kube::Api<k8s_openapi::api::core::v1::ConfigMap>, obj: std::sync::Arc<k8s_openapi::api::core::v1::ConfigMap>) {
/// use kubegen_runtime::controller::finalizer::{finalizer, Event};
/// use kubegen_runtime::controller::Action;
///
/// let action = finalizer(&api, "example.com/cleanup", obj, |event| async move {
///     match event {
///         Event::Apply(_cm) => Ok::<_, std::io::Error>(Action::done()),
///         Event::Cleanup(_cm) => Ok(Action::done()),
///     }
/// })
/// .await;
/// # let _ = action;
/// # }
/// ```
pub async fn finalizer<K, E, F, Fut>(
    api: &Api<K>,
    name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> Result<Action, Error<E>>
where
    K: Object + Serialize + DeserializeOwned,
    E: fmt::Display + fmt::Debug,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
{
    let meta = obj.meta();
    let Some(obj_name) = meta.name.clone() else {
        return Err(Error::UnnamedObject);
    };
    let finalizers = meta.finalizers.clone().unwrap_or_default();
    let ours = finalizers.iter().any(|f| f == name);
    match (meta.deletion_timestamp.is_some(), ours) {
        (false, true) => reconcile(Event::Apply(obj)).await.map_err(Error::Apply),
        (false, false) => {
            let mut wanted = finalizers;
            wanted.push(name.to_owned());
            let patched = patch_finalizers(api, &obj_name, obj.as_ref(), wanted)
                .await
                .map_err(|source| Error::AddFinalizer {
                    finalizer: name.to_owned(),
                    source,
                })?;
            reconcile(Event::Apply(Arc::new(patched)))
                .await
                .map_err(Error::Apply)
        }
        (true, true) => {
            let action = reconcile(Event::Cleanup(Arc::clone(&obj)))
                .await
                .map_err(Error::Cleanup)?;
            let wanted = finalizers.into_iter().filter(|f| f != name).collect();
            patch_finalizers(api, &obj_name, obj.as_ref(), wanted)
                .await
                .map_err(|source| Error::RemoveFinalizer {
                    finalizer: name.to_owned(),
                    source,
                })?;
            Ok(action)
        }
        (true, false) => Ok(Action::done()),
    }
}

/// Sets `metadata.finalizers` to `wanted`, on the condition that the object is still at
/// the resourceVersion read.
async fn patch_finalizers<K>(
    api: &Api<K>,
    name: &str,
    obj: &K,
    wanted: Vec<String>,
) -> Result<K, kube::Error>
where
    K: Object + Serialize + DeserializeOwned,
{
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": obj.meta().resource_version,
            "finalizers": wanted,
        }
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}
