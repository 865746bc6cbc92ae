//! The SharedIndexInformer: one list-watch, one indexed cache, many event handlers.
//!
//! Contract (client-go's `sharedIndexInformer`, SEMANTICS 4):
//! - [`SharedIndexInformer::run`] starts a [`Reflector`] feeding a FIFO (with the
//!   informer's indexer as its known objects, emitting `Replaced` on relists), pops
//!   deltas, updates the indexer, then notifies handlers: the cache is always updated
//!   *before* a handler hears of the change. A second `run` logs a warning and returns.
//! - The FIFO is a [`RealFifo`](crate::cache::real_fifo::RealFifo) by default (client-go
//!   1.36's locked `InOrderInformers`): handlers see every change in the order the watch
//!   delivered it, across keys. [`InformerOptions::fifo`] picks the
//!   [`DeltaFifo`] instead (see [`FifoKind`] for when).
//! - Each informer has a name (its kind's by default, [`SharedIndexInformer::with_kind_name`]),
//!   a [`DoneChecker`] completing the moment it has synced
//!   ([`SharedIndexInformer::done_checker`]), and [`InformerMetrics`] under that name.
//!   When `run` ends (its stop token fired, or its future was dropped), the informer is
//!   stopped for good: handler threads are told to end and new handlers are refused.
//! - Handlers added before `run` receive the initial list as `on_add(obj, true)`. Handlers
//!   added later receive, atomically with respect to incoming deltas, one
//!   `on_add(obj, true)` per object already cached. Handlers added after the informer
//!   stopped are refused.
//! - Each handler has an unbounded buffer and a thread of its own (see
//!   [`ResourceEventHandler`]); a slow handler never stalls the informer or the others.
//! - A relisted object whose resourceVersion did not change is a *sync*: it reaches only
//!   handlers due for resync, and the cache keeps its existing `Arc` (no second copy of
//!   an unchanged object). Changed objects reach every handler as updates; objects gone
//!   reach every handler as deletes, as tombstones when the deletion itself was missed.
//! - Resync: a handler asking for a period below 1 s gets 1 s; before `run` a smaller
//!   period lowers the informer's check period, after `run` it is raised to it; with a
//!   check period of 0 no handler resyncs.
//! - `managedFields` are dropped from every cached object by default, before any user
//!   transform ([`InformerOptions::keep_managed_fields`] opts out). Typed objects carry
//!   their apiVersion and kind in their type; a [`DynamicObject`](kube::core::DynamicObject)
//!   gets its `types` filled in from its [`ApiResource`](kube::core::ApiResource) when
//!   a list left them out.
//!
//! It does not retry handlers, order different handlers, or deep-copy objects: objects
//! are shared `Arc`s and must not be mutated.

mod fifo;
mod handler;
mod metrics;
mod processor;

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use fifo::FifoKind;
pub use handler::{FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs};
pub use metrics::InformerMetrics;
// What a delete handler receives, named here beside the handler traits so that one `use`
// covers writing handlers (the types stay where they are defined, too).
pub use crate::cache::delta_fifo::DeltaObject;
pub use crate::cache::DeletedFinalStateUnknown;

use self::fifo::{Fifo, InformerFifo};
use self::processor::{
    determine_resync_period, Listener, Notification, Processor, MINIMUM_RESYNC_PERIOD,
};
use crate::cache::delta_fifo::{DeltaFifo, DeltaFifoOptions, DeltaType, Deltas, PopError};
use crate::cache::done::{DoneChecker, DoneSignal};
use crate::cache::keys::{AnyTransformFunc, TransformError, TransformFunc};
use crate::cache::lister::Lister;
use crate::cache::real_fifo::{RealFifo, RealFifoOptions};
use crate::cache::reflector::{
    ListerWatcher, Reflector, ReflectorError, ReflectorOptions, ReflectorStore, TweakListOptions,
    Tweaked,
};
use crate::cache::store::{
    meta_namespace_key_func, namespace_indexers, Indexer, Indexers, ReadOnlyIndexer, StoreError,
};
use crate::client::ListOptions;
use crate::object::{object_key, Object};

type WatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// Errors of informer operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InformerError {
    /// The operation is only allowed before `run`.
    #[error("informer has already started")]
    AlreadyStarted,
    /// A handler was added after the informer stopped.
    #[error("handler {0} was not added to shared informer because it has stopped already")]
    HandlerAfterStop(String),
    /// Indexers were added after the informer stopped.
    #[error("indexer was not added because it has stopped already")]
    IndexerAfterStop,
    /// The indexer refused the indexers.
    #[error("{0}")]
    Indexer(String),
}

/// The earlier name of [`InformerOptions`]: the runtime names every options type `*Options`.
#[deprecated(since = "0.1.0", note = "renamed to `InformerOptions`")]
pub type InformerConfig = InformerOptions;

/// An informer's configuration: a plain struct with builder methods.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::cache::informer::InformerOptions;
///
/// let config = InformerOptions::default().resync_period(Duration::from_secs(30));
/// assert_eq!(config.resync_period, Duration::from_secs(30));
/// ```
#[derive(Clone, Default)]
pub struct InformerOptions {
    /// The default resync period of handlers, and the initial check period (0 = never).
    pub resync_period: Duration,
    /// Keep `managedFields` in cached objects (dropped by default).
    pub keep_managed_fields: bool,
    /// The reflector's configuration (its resync period is set by the informer).
    pub reflector: ReflectorOptions,
    /// For [`DynamicObject`](kube::core::DynamicObject) informers: the resource, whose
    /// apiVersion and kind fill in objects that arrive without them.
    pub api_resource: Option<kube::core::ApiResource>,
    /// Applied to the options of every list and watch: label and field selectors go here,
    /// as with [`FactoryOptions::tweak_list_options`](crate::cache::factory::FactoryOptions::tweak_list_options).
    pub tweak_list_options: Option<TweakListOptions>,
    /// The FIFO between reflector and handlers (RealFIFO, in order, by default).
    pub fifo: FifoKind,
    /// A transform for objects of any type (a factory's), applied before the informer's
    /// own ([`SharedIndexInformer::set_transform`]).
    pub transform: Option<AnyTransformFunc>,
}

impl fmt::Debug for InformerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerOptions")
            .field("resync_period", &self.resync_period)
            .field("keep_managed_fields", &self.keep_managed_fields)
            .field("reflector", &self.reflector)
            .field("api_resource", &self.api_resource)
            .field("tweak_list_options", &self.tweak_list_options.is_some())
            .field("fifo", &self.fifo)
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

impl InformerOptions {
    /// Sets the default resync period.
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }
    /// Keeps `managedFields` in cached objects.
    pub fn keep_managed_fields(mut self, keep: bool) -> Self {
        self.keep_managed_fields = keep;
        self
    }
    /// Sets the reflector's configuration.
    pub fn reflector(mut self, config: ReflectorOptions) -> Self {
        self.reflector = config;
        self
    }
    /// Tweaks the options of every list and watch, e.g. a label selector:
    /// `InformerOptions::default().tweak_list_options(|o| o.label_selector = Some("app=web".into()))`.
    pub fn tweak_list_options(
        mut self,
        f: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak_list_options = Some(Arc::new(f));
        self
    }
    /// Sets the resource of a `DynamicObject` informer.
    pub fn api_resource(mut self, resource: kube::core::ApiResource) -> Self {
        self.api_resource = Some(resource);
        self
    }

    /// Sets a transform for objects of any type, applied to every object before it is
    /// cached (after `managedFields` are dropped, before the informer's own transform).
    /// It must return the object as the type it was given.
    pub fn transform(
        mut self,
        f: impl Fn(Arc<dyn Any + Send + Sync>) -> Result<Arc<dyn Any + Send + Sync>, TransformError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }

    /// Sets the FIFO between reflector and handlers (see [`FifoKind`]).
    pub fn fifo(mut self, kind: FifoKind) -> Self {
        self.fifo = kind;
        self
    }
}

struct State<K> {
    started: bool,
    stopped: bool,
    resync_check_period: Duration,
    default_resync_period: Duration,
    transform: Option<TransformFunc<K>>,
    watch_error_handler: Option<WatchErrorHandler>,
}

struct Inner<K: Object> {
    id: u64,
    kind: String,
    lw: Mutex<Arc<dyn ListerWatcher<K>>>,
    config: InformerOptions,
    indexer: Indexer<K>,
    processor: Processor<K>,
    state: Mutex<State<K>>,
    /// Held while deltas are applied and while a late handler is registered, so that the
    /// handler sees each object exactly once (client-go's `blockDeltas`).
    block_deltas: Mutex<()>,
    fifo: OnceLock<Arc<InformerFifo<K>>>,
    synced: DoneSignal,
    metrics: InformerMetrics,
    reflector: OnceLock<Arc<Reflector<K>>>,
}

/// One list-watch feeding an indexed cache and any number of event handlers (see the
/// module docs). Cloning gives another handle to the same informer.
///
/// ```no_run
/// # async fn demo(client: kube::Client) {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::Pod;
/// use kubegen_runtime::cache::informer::{
///     InformerOptions, ResourceEventHandlerFuncs, SharedIndexInformer,
/// };
/// use kubegen_runtime::client::ResourceClient;
/// use tokio_util::sync::CancellationToken;
///
/// let pods = ResourceClient::<Pod>::all(client);
/// let informer = SharedIndexInformer::new(Arc::new(pods), InformerOptions::default());
/// informer
///     .add_event_handler(ResourceEventHandlerFuncs::<Pod>::new().add_func(|pod, _| {
///         println!("pod {:?}", pod.metadata.name);
///     }))
///     .unwrap();
/// let stop = CancellationToken::new();
/// tokio::spawn({
///     let informer = informer.clone();
///     let stop = stop.clone();
///     async move { informer.run(stop).await }
/// });
/// informer.wait_for_sync(&stop).await;
/// let cached = informer.lister().list(&Default::default());
/// # let _ = cached;
/// # }
/// ```
pub struct SharedIndexInformer<K: Object> {
    inner: Arc<Inner<K>>,
}

impl<K: Object> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        SharedIndexInformer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: Object> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("kind", &self.inner.kind)
            .field("has_synced", &self.has_synced())
            .finish_non_exhaustive()
    }
}

/// A handle to one handler registration (client-go's `ResourceEventHandlerRegistration`).
#[derive(Clone)]
pub struct ResourceEventHandlerRegistration {
    informer_id: u64,
    listener_id: u64,
    synced: Arc<dyn Fn() -> bool + Send + Sync>,
    resync_period: Arc<dyn Fn() -> Duration + Send + Sync>,
}

impl fmt::Debug for ResourceEventHandlerRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerRegistration")
            .field("informer_id", &self.informer_id)
            .field("listener_id", &self.listener_id)
            .finish()
    }
}

impl ResourceEventHandlerRegistration {
    /// True once the informer has synced and this handler has returned from every
    /// initial-list add enqueued for it.
    pub fn has_synced(&self) -> bool {
        (self.synced)()
    }

    /// The handler's effective resync period (0 = never).
    pub fn resync_period(&self) -> Duration {
        (self.resync_period)()
    }
}

static NEXT_INFORMER_ID: AtomicU64 = AtomicU64::new(1);

/// The reflector's view of an informer: deltas go to the FIFO; the indexer answers
/// which relisted objects are unchanged.
struct FifoStore<K: Object>(Arc<InformerFifo<K>>, Indexer<K>);

impl<K: Object> ReflectorStore<K> for FifoStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.0.add(obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.0.update(obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.0.delete(obj)
    }
    fn replace(&self, objs: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        self.0.replace(objs, resource_version)
    }
    fn resync(&self) -> Result<(), StoreError> {
        self.0.resync()
    }
    fn cached(&self, obj: &K) -> Option<Arc<K>> {
        let held = self.1.get_by_key(&object_key(obj))?;
        same_resource_version(held.as_ref(), obj).then_some(held)
    }
}

fn same_resource_version<K: kube::Resource>(a: &K, b: &K) -> bool {
    let (ra, rb) = (&a.meta().resource_version, &b.meta().resource_version);
    ra.is_some() && ra == rb
}

/// Fills in the `types` of a [`kube::core::DynamicObject`] that a list left without them.
fn fill_type_meta<K: Object>(obj: &mut K, dt: Option<&kube::core::ApiResource>) {
    let Some(ar) = dt else { return };
    if let Some(dynamic) = (obj as &mut dyn Any).downcast_mut::<kube::core::DynamicObject>()
        && dynamic.types.is_none()
    {
        dynamic.types = Some(kube::core::TypeMeta {
            api_version: ar.api_version.clone(),
            kind: ar.kind.clone(),
        });
    }
}

impl<K: Object> SharedIndexInformer<K> {
    /// An informer listing and watching through `lw`, with the namespace index installed.
    pub fn new(lw: Arc<dyn ListerWatcher<K>>, config: InformerOptions) -> Self {
        Self::with_indexers(lw, config, Indexers::new())
    }

    /// An informer with extra indexers besides the namespace index.
    pub fn with_indexers(
        lw: Arc<dyn ListerWatcher<K>>,
        config: InformerOptions,
        indexers: Indexers<K>,
    ) -> Self {
        let mut all = namespace_indexers::<K>();
        all.extend(indexers);
        let indexer = Indexer::new(meta_namespace_key_func::<K>(), all);
        let period = config.resync_period;
        let lw = match &config.tweak_list_options {
            Some(tweak) => Arc::new(Tweaked {
                inner: lw,
                tweak: Arc::clone(tweak),
            }),
            None => lw,
        };
        let kind = std::any::type_name::<K>()
            .rsplit("::")
            .next()
            .unwrap_or("object")
            .to_owned();
        SharedIndexInformer {
            inner: Arc::new(Inner {
                id: NEXT_INFORMER_ID.fetch_add(1, Ordering::Relaxed),
                metrics: InformerMetrics::new(kind.clone()),
                synced: DoneSignal::new(),
                kind,
                lw: Mutex::new(lw),
                config,
                indexer,
                processor: Processor::new(),
                state: Mutex::new(State {
                    started: false,
                    stopped: false,
                    resync_check_period: period,
                    default_resync_period: period,
                    transform: None,
                    watch_error_handler: None,
                }),
                block_deltas: Mutex::new(()),
                fifo: OnceLock::new(),
                reflector: OnceLock::new(),
            }),
        }
    }

    /// Sets the informer's name: the name of its logs, errors, done-checker and metrics
    /// (defaults to the type's name). Only on a fresh informer, before it is cloned
    /// (later, the name stays as it was).
    pub fn with_kind_name(self, kind: impl Into<String>) -> Self {
        let kind = kind.into();
        match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => {
                inner.metrics = InformerMetrics::new(kind.clone());
                inner.kind = kind;
                SharedIndexInformer {
                    inner: Arc::new(inner),
                }
            }
            Err(inner) => SharedIndexInformer { inner },
        }
    }

    /// Wraps the informer's lister-watcher (before `run`; later calls have no effect on
    /// the running reflector). The factory uses it to apply its list-option tweak.
    pub fn with_lister_watcher(
        self,
        wrap: impl FnOnce(Arc<dyn ListerWatcher<K>>) -> Arc<dyn ListerWatcher<K>>,
    ) -> Self {
        {
            let mut lw = self.inner.lw.lock();
            *lw = wrap(Arc::clone(&lw));
        }
        self
    }

    /// The informer's indexed cache (client-go's `GetIndexer`/`GetStore`), read-only:
    /// only the informer writes it.
    pub fn indexer(&self) -> &ReadOnlyIndexer<K> {
        &self.inner.indexer
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<K>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        Lister::new(self.inner.indexer.read_only())
    }

    /// True once the initial list has been popped and applied to the cache.
    pub fn has_synced(&self) -> bool {
        self.inner.fifo.get().is_some_and(|f| f.has_synced())
    }

    /// The informer's name (see [`with_kind_name`](Self::with_kind_name)).
    pub fn name(&self) -> &str {
        &self.inner.kind
    }

    /// A checker, named after the informer, that completes the moment the informer has
    /// synced (client-go's `HasSyncedChecker`); wait on several with
    /// [`wait_for`](crate::cache::done::wait_for).
    pub fn done_checker(&self) -> DoneChecker {
        self.inner.synced.checker(self.inner.kind.clone())
    }

    /// The informer's figures: queued items, processing latency, store resourceVersion.
    pub fn metrics(&self) -> &InformerMetrics {
        &self.inner.metrics
    }

    /// The resourceVersion the reflector last synced to (`""` before `run`).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner
            .reflector
            .get()
            .map(|r| r.last_sync_resource_version())
            .unwrap_or_default()
    }

    /// Whether `run` was called.
    pub fn is_started(&self) -> bool {
        self.inner.state.lock().started
    }

    /// Whether the informer has stopped.
    pub fn is_stopped(&self) -> bool {
        self.inner.state.lock().stopped
    }

    /// The period at which the informer checks whether handlers are due for resync.
    pub fn resync_check_period(&self) -> Duration {
        self.inner.state.lock().resync_check_period
    }

    /// Sets a transform applied to every object before it enters the cache (after
    /// `managedFields` are dropped and after [`InformerOptions::transform`]). Only before
    /// `run`; the last call wins. An object the transform rejects is not cached (the
    /// reflector logs the error; a rejected list fails the round and is retried).
    pub fn set_transform(
        &self,
        f: impl Fn(Arc<K>) -> Result<Arc<K>, TransformError> + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut st = self.inner.state.lock();
        if st.started {
            return Err(InformerError::AlreadyStarted);
        }
        st.transform = Some(Arc::new(f));
        Ok(())
    }

    /// Sets the handler of list/watch errors (default: log). Only before `run`.
    pub fn set_watch_error_handler(
        &self,
        f: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut st = self.inner.state.lock();
        if st.started {
            return Err(InformerError::AlreadyStarted);
        }
        st.watch_error_handler = Some(Arc::new(f));
        Ok(())
    }

    /// Adds indexers, also after `run` (existing objects are indexed at once).
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), InformerError> {
        if self.inner.state.lock().stopped {
            return Err(InformerError::IndexerAfterStop);
        }
        let _g = self.inner.block_deltas.lock();
        self.inner
            .indexer
            .add_indexers(indexers)
            .map_err(|e| InformerError::Indexer(e.to_string()))
    }

    /// Adds a handler with the informer's default resync period.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        let period = self.inner.state.lock().default_resync_period;
        self.add_event_handler_with_resync_period(handler, period)
    }

    /// Adds a handler with its own resync period (see the module docs for the rules).
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl ResourceEventHandler<K>,
        resync_period: Duration,
    ) -> Result<ResourceEventHandlerRegistration, InformerError> {
        let handler: Arc<dyn ResourceEventHandler<K>> = Arc::new(handler);
        let mut st = self.inner.state.lock();
        if st.stopped {
            return Err(InformerError::HandlerAfterStop(format!(
                "{:p}",
                Arc::as_ptr(&handler)
            )));
        }
        let mut requested = resync_period;
        if !requested.is_zero() && requested < MINIMUM_RESYNC_PERIOD {
            tracing::warn!(?requested, "resync period too small; using 1s");
            requested = MINIMUM_RESYNC_PERIOD;
        }
        if !requested.is_zero() && requested < st.resync_check_period {
            if st.started {
                tracing::warn!(?requested, check = ?st.resync_check_period, "resync period smaller than the informer's check period; using the check period");
                requested = st.resync_check_period;
            } else {
                st.resync_check_period = requested;
                for l in self.inner.processor.listeners() {
                    l.set_resync_period(determine_resync_period(
                        l.requested_resync_period(),
                        requested,
                    ));
                }
            }
        }
        let effective = determine_resync_period(requested, st.resync_check_period);
        let listener = Listener::new(handler, requested, effective);
        let registration = self.registration(&listener);
        if !st.started {
            // Registered while still holding the state lock: `run` marks the informer
            // started under that lock before any delta can flow, so a handler that saw
            // "not started" is a listener before the first notification is distributed
            // (released earlier, a `run` starting in between could hand the initial list
            // to the other listeners only).
            self.inner.processor.add_listener(listener);
            drop(st);
            return Ok(registration);
        }
        drop(st);
        // Late handler: under blockDeltas, register and replay the cache as initial adds.
        let _g = self.inner.block_deltas.lock();
        for obj in self.inner.indexer.list() {
            listener.add(Notification::Add {
                obj,
                is_in_initial_list: true,
            });
        }
        self.inner.processor.add_listener(listener);
        Ok(registration)
    }

    fn registration(&self, listener: &Arc<Listener<K>>) -> ResourceEventHandlerRegistration {
        let weak_inner = Arc::downgrade(&self.inner);
        let weak_listener = Arc::downgrade(listener);
        let weak_for_period = Arc::downgrade(listener);
        ResourceEventHandlerRegistration {
            resync_period: Arc::new(move || {
                weak_for_period
                    .upgrade()
                    .map_or(Duration::ZERO, |l| l.resync_period())
            }),
            informer_id: self.inner.id,
            listener_id: listener.id(),
            synced: Arc::new(move || {
                let informer_synced = weak_inner
                    .upgrade()
                    .is_some_and(|i| i.fifo.get().is_some_and(|f| f.has_synced()));
                informer_synced
                    && weak_listener
                        .upgrade()
                        .is_some_and(|l| l.initial_adds_done())
            }),
        }
    }

    /// Removes a handler. Idempotent; a registration of another informer is ignored.
    /// Notifications already being handled finish; queued ones are dropped.
    pub fn remove_event_handler(&self, registration: &ResourceEventHandlerRegistration) {
        if registration.informer_id == self.inner.id {
            self.inner
                .processor
                .remove_listener(registration.listener_id);
        }
    }

    /// Waits until the cache has synced (true) or `stop` fires (false), polling every
    /// 100 ms as client-go's `WaitForCacheSync`.
    pub async fn wait_for_sync(&self, stop: &CancellationToken) -> bool {
        wait_for_cache_sync(stop, &[&|| self.has_synced()]).await
    }

    /// Runs the informer until `stop` fires: list-watch, pop, index, notify. A second call
    /// logs a warning and returns at once.
    pub async fn run(&self, stop: CancellationToken) {
        let (transform, error_handler, check_period) = {
            let mut st = self.inner.state.lock();
            if st.started {
                tracing::warn!(kind = %self.inner.kind, "informer already running; ignoring a second run");
                return;
            }
            if st.stopped {
                return;
            }
            st.started = true;
            (
                st.transform.clone(),
                st.watch_error_handler.clone(),
                st.resync_check_period,
            )
        };
        let keep_managed_fields = self.inner.config.keep_managed_fields;
        let any_transform = self.inner.config.transform.clone();
        let kind = self.inner.kind.clone();
        let api_resource = self.inner.config.api_resource.clone();
        let transformer = move |obj: Arc<K>| {
            // Fresh from the decoder, `obj` is not shared: make_mut does not copy.
            let mut obj = obj;
            if !keep_managed_fields && obj.meta().managed_fields.is_some() {
                Arc::make_mut(&mut obj).meta_mut().managed_fields = None;
            }
            if api_resource.is_some() {
                fill_type_meta(Arc::make_mut(&mut obj), api_resource.as_ref());
            }
            if let Some(t) = &any_transform {
                obj = t(obj)?.downcast::<K>().map_err(|_| {
                    TransformError::new(format!(
                        "the transform of InformerOptions (a factory's transform) returned \
                         another type than {kind}: return the object it was given"
                    ))
                })?;
            }
            match &transform {
                Some(t) => t(obj),
                None => Ok(obj),
            }
        };
        let known = Arc::new(self.inner.indexer.clone());
        let fifo = match self.inner.config.fifo {
            FifoKind::Delta => Fifo::Delta(DeltaFifo::new(
                DeltaFifoOptions::new(|obj: &K| Ok(object_key(obj)))
                    .known_objects(known)
                    .emit_delta_type_replaced(true)
                    .transformer(transformer),
            )),
            FifoKind::Real => Fifo::Real(RealFifo::new(
                RealFifoOptions::for_resource(known).transformer(transformer),
            )),
        };
        let fifo = Arc::new(InformerFifo::new(
            fifo,
            self.inner.synced.clone(),
            self.inner.metrics.clone(),
        ));
        let _ = self.inner.fifo.set(Arc::clone(&fifo));
        let weak = Arc::downgrade(&self.inner);
        let mut reflector = Reflector::new(
            self.inner.kind.clone(),
            Arc::clone(&self.inner.lw.lock()),
            Arc::new(FifoStore(Arc::clone(&fifo), self.inner.indexer.clone())),
            self.inner
                .config
                .reflector
                .clone()
                .resync_period(check_period)
                .without_managed_fields(!keep_managed_fields),
        )
        .with_should_resync(move || {
            weak.upgrade()
                .is_some_and(|i| i.processor.should_resync(Instant::now()))
        })
        .with_resource_version_observer({
            let metrics = self.inner.metrics.clone();
            move |rv| metrics.set_resource_version(rv)
        });
        if let Some(h) = error_handler {
            reflector = reflector.with_error_handler(move |e| h(e));
        }
        let reflector = Arc::new(reflector);
        let _ = self.inner.reflector.set(Arc::clone(&reflector));
        // Stops everything when `run` ends, also when its future is dropped early (an
        // aborted task): otherwise handler threads would wait forever.
        let _stopped = StopOnDrop {
            inner: &self.inner,
            fifo: Arc::clone(&fifo),
        };
        self.inner.processor.run();

        let pop_loop = async {
            // Handlers are woken once per run of popped keys (when the FIFO runs dry, or
            // every NOTIFY_BATCH keys), not once per notification.
            let mut deferred = 0usize;
            loop {
                if deferred > 0 && (deferred >= NOTIFY_BATCH || fifo.is_empty()) {
                    self.inner.processor.flush();
                    deferred = 0;
                }
                let popped = fifo
                    .pop(|deltas, is_in_initial_list| {
                        self.handle_deltas(deltas, is_in_initial_list);
                    })
                    .await;
                if let Err(PopError::Closed) = popped {
                    self.inner.processor.flush();
                    break;
                }
                deferred += 1;
            }
        };
        // The reflector (which decodes watch events) runs as a task of its own, so that
        // decoding proceeds in parallel with popping, indexing and notifying on a
        // multi-threaded runtime. It is aborted when `run` ends or is dropped.
        let mut reflect = AbortOnDrop(tokio::spawn({
            let stop = stop.clone();
            async move { reflector.run(stop).await }
        }));
        tokio::select! {
            _ = reflect.wait() => {}
            _ = pop_loop => {}
            _ = stop.cancelled() => {}
        }
    }

    /// Applies one key's deltas to the cache and notifies handlers (client-go's
    /// `HandleDeltas`).
    fn handle_deltas(&self, deltas: Deltas<K>, is_in_initial_list: bool) {
        let _g = self.inner.block_deltas.lock();
        let indexer = &self.inner.indexer;
        for delta in deltas.into_vec() {
            match delta.delta_type {
                DeltaType::Sync | DeltaType::Replaced | DeltaType::Added | DeltaType::Updated => {
                    let DeltaObject::Object(obj) = delta.object else {
                        continue;
                    };
                    let key = object_key(obj.as_ref());
                    match indexer.get_by_key(&key) {
                        Some(old) => {
                            let unchanged = same_resource_version(old.as_ref(), obj.as_ref());
                            let is_sync = delta.delta_type == DeltaType::Sync
                                || (delta.delta_type == DeltaType::Replaced && unchanged);
                            let new = if unchanged
                                && matches!(delta.delta_type, DeltaType::Sync | DeltaType::Replaced)
                            {
                                // Keep the cached copy: no second copy of an unchanged object.
                                Arc::clone(&old)
                            } else {
                                if let Err(err) = indexer.update(Arc::clone(&obj)) {
                                    tracing::error!(%err, key, "indexer rejected an update");
                                }
                                obj
                            };
                            self.inner
                                .processor
                                .distribute_deferred(Notification::Update { old, new }, is_sync);
                        }
                        None => {
                            if let Err(err) = indexer.add(Arc::clone(&obj)) {
                                tracing::error!(%err, key, "indexer rejected an add");
                            }
                            self.inner.processor.distribute_deferred(
                                Notification::Add {
                                    obj,
                                    is_in_initial_list,
                                },
                                false,
                            );
                        }
                    }
                }
                DeltaType::Deleted => {
                    let key = match &delta.object {
                        DeltaObject::Object(o) => object_key(o.as_ref()),
                        DeltaObject::Tombstone(t) => t.key.clone(),
                    };
                    indexer.delete_by_key(&key);
                    self.inner
                        .processor
                        .distribute_deferred(Notification::Delete(delta.object), false);
                }
            }
        }
    }
}

/// The most keys popped before the handlers' threads are woken for their notifications
/// (they are also woken whenever the FIFO runs dry).
const NOTIFY_BATCH: usize = 64;

/// A task aborted when this handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    async fn wait(&mut self) {
        let _ = (&mut self.0).await;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Ends an informer's run: closes its FIFO, marks it stopped, stops its handlers.
struct StopOnDrop<'a, K: Object> {
    inner: &'a Inner<K>,
    fifo: Arc<InformerFifo<K>>,
}

impl<K: Object> Drop for StopOnDrop<'_, K> {
    fn drop(&mut self) {
        self.fifo.close();
        self.inner.state.lock().stopped = true;
        self.inner.processor.stop();
    }
}

/// Waits until every `synced` function returns true (true) or `stop` fires (false),
/// polling every 100 ms (client-go's `WaitForCacheSync`).
pub async fn wait_for_cache_sync(
    stop: &CancellationToken,
    synced: &[&(dyn Fn() -> bool + Sync)],
) -> bool {
    loop {
        if synced.iter().all(|f| f()) {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.cancelled() => return false,
        }
    }
}

#[cfg(test)]
mod parity_tests;
#[cfg(test)]
mod tests;
