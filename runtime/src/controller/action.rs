//! What a reconcile returns and what it is called with.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::object::ObjectRef;
use crate::record::EventRecorder;

/// What the controller does with a key after a successful reconcile.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::controller::Action;
///
/// assert_eq!(Action::done().requeue_after_duration(), None);
/// assert_eq!(
///     Action::requeue_after(Duration::from_secs(30)).requeue_after_duration(),
///     Some(Duration::from_secs(30))
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    kind: ActionKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ActionKind {
    Done,
    Requeue,
    RequeueAfter(Duration),
}

impl Action {
    /// Nothing more to do until the object (or something mapped to it) changes: the key's
    /// failures are forgotten.
    pub fn done() -> Self {
        Action {
            kind: ActionKind::Done,
        }
    }

    /// Reconcile again through the queue's rate limiter (controller-runtime's
    /// `Requeue: true`): it counts as a requeue of the key, so the delay grows.
    pub fn requeue() -> Self {
        Action {
            kind: ActionKind::Requeue,
        }
    }

    /// Reconcile again after `delay`; not a failure: the key's failures are forgotten
    /// first (controller-runtime's `RequeueAfter`).
    pub fn requeue_after(delay: Duration) -> Self {
        Action {
            kind: ActionKind::RequeueAfter(delay),
        }
    }

    /// The delay of [`Action::requeue_after`], if this is one.
    pub fn requeue_after_duration(&self) -> Option<Duration> {
        match self.kind {
            ActionKind::RequeueAfter(d) => Some(d),
            _ => None,
        }
    }

    /// Whether this is [`Action::requeue`].
    pub fn is_requeue(&self) -> bool {
        self.kind == ActionKind::Requeue
    }
}

/// The object a reconcile is about: live in the cache, or gone from it.
///
/// A primary deleted from the cluster is reconciled once as [`Target::Gone`] (also when
/// its deletion was missed and a relist found it gone: the informer's tombstone), so a
/// reconciler can release what it holds outside the cluster. Most reconcilers use
/// [`Target::live`] and return at once for a gone object, relying on owner references
/// (garbage collection) and finalizers for cleanup.
#[derive(Debug, Clone)]
pub enum Target<K> {
    /// The object as the informer's cache holds it (shared, never mutate).
    Live(Arc<K>),
    /// The object is no longer in the cache: only its key is known.
    Gone(ObjectRef),
}

impl<K> Target<K> {
    /// The live object, or `None` when it is gone.
    pub fn live(self) -> Option<Arc<K>> {
        match self {
            Target::Live(obj) => Some(obj),
            Target::Gone(_) => None,
        }
    }

    /// Whether the object is gone.
    pub fn is_gone(&self) -> bool {
        matches!(self, Target::Gone(_))
    }
}

/// What every reconcile of one controller shares: the user's data, the controller's
/// name, the client of its informer factory and an event recorder.
pub struct Context<C> {
    pub(crate) data: C,
    pub(crate) name: String,
    pub(crate) client: Option<kube::Client>,
    pub(crate) recorder: Option<Arc<dyn EventRecorder>>,
}

impl<C> fmt::Debug for Context<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("name", &self.name)
            .field("recorder", &self.recorder.is_some())
            .finish_non_exhaustive()
    }
}

impl<C> Context<C> {
    /// The data given to [`Builder::run`](super::Builder::run).
    pub fn data(&self) -> &C {
        &self.data
    }

    /// The controller's name ([`Builder::named`](super::Builder::named)).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client of the informer factory, when it has one.
    pub fn client(&self) -> Option<&kube::Client> {
        self.client.as_ref()
    }

    /// The event recorder set with [`Builder::recorder`](super::Builder::recorder).
    pub fn recorder(&self) -> Option<&dyn EventRecorder> {
        self.recorder.as_deref()
    }
}
