//! The SharedInformerFactory: one shared informer per type, started and stopped together.
//!
//! Contract (client-go's `sharedInformerFactory`, SEMANTICS 5):
//! - [`InformerFactory::informer_for`] returns the informer of a type, creating it with
//!   the given constructor only the first time (later constructors are ignored): every
//!   caller shares one cache and one watch per type.
//! - A new informer gets the per-type resync period if one was set, else the factory's
//!   default; the factory's transform; and lists/watches in the factory's namespace
//!   (all namespaces by default) with the factory's list-option tweak applied to both
//!   list and watch.
//! - [`InformerFactory::start`] starts every informer not yet started (idempotent;
//!   informers requested after `start` need another `start`); nothing starts after
//!   [`InformerFactory::shutdown`], which stops every informer and waits for their tasks.
//! - Each informer the factory creates is named after its resource, `resource.group`
//!   (`pods`, `deployments.apps`), or `resource.version.group` when the factory already
//!   has an informer of another version of that resource (`gadgets.v2.multi.example.com`
//!   beside `gadgets.multi.example.com`): unique within a factory, and the name of its
//!   logs, done-checker and metrics.
//! - [`InformerFactory::wait_for_cache_sync`] (by type name) and
//!   [`InformerFactory::wait_for_cache_sync_by_name`] (by informer name) report, for
//!   *started* informers only, whether each synced before `stop` fired; both wait on the
//!   informers' done-checkers (no polling).
//! - [`InformerFactory::for_resource`] finds an informer by group/version/resource, as a
//!   type-erased [`GenericInformer`]; unknown resources are an error.
//!
//! Generated factories wrap this one with typed per-group accessors.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::future::Shared;
use futures::FutureExt;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::cache::done::DoneChecker;
use crate::cache::informer::{InformerOptions, SharedIndexInformer};
use crate::cache::keys::{AnyTransformFunc, TransformError};
use crate::cache::lister::Lister;
use crate::cache::reflector::Tweaked;
use crate::client::{self, ListOptions, ResourceClient};
use crate::errors::{GroupResource, StatusError};
use crate::labels::Selector;
use crate::object::{AnyObject, GroupVersionResource, Object};

pub use crate::cache::reflector::TweakListOptions;

/// A lister over a typed informer's cache, seen through [`AnyObject`] (client-go's
/// `GenericLister`, as `ForResource` returns it). Objects are the cache's own `Arc`s,
/// not copies. Get misses name the plural resource (`pods "x" not found`).
pub trait ErasedLister: Send + Sync {
    /// Objects in all namespaces matching the selector.
    fn list(&self, selector: &Selector) -> Vec<Arc<dyn AnyObject>>;
    /// Objects in one namespace matching the selector.
    fn list_namespaced(&self, namespace: &str, selector: &Selector) -> Vec<Arc<dyn AnyObject>>;
    /// The object `name` in `namespace` (`""` for cluster-scoped objects).
    fn get(&self, namespace: &str, name: &str) -> Result<Arc<dyn AnyObject>, StatusError>;
}

impl<K: Object> ErasedLister for Lister<K> {
    fn list(&self, selector: &Selector) -> Vec<Arc<dyn AnyObject>> {
        Lister::list(self, selector)
            .into_iter()
            .map(|o| o as Arc<dyn AnyObject>)
            .collect()
    }
    fn list_namespaced(&self, namespace: &str, selector: &Selector) -> Vec<Arc<dyn AnyObject>> {
        self.namespaced(namespace)
            .list(selector)
            .into_iter()
            .map(|o| o as Arc<dyn AnyObject>)
            .collect()
    }
    fn get(&self, namespace: &str, name: &str) -> Result<Arc<dyn AnyObject>, StatusError> {
        let found = if namespace.is_empty() {
            Lister::get(self, name)
        } else {
            self.namespaced(namespace).get(name)
        };
        found.map(|o| o as Arc<dyn AnyObject>)
    }
}

/// A type-erased informer, as [`InformerFactory::for_resource`] returns it.
#[derive(Clone)]
pub struct GenericInformer {
    informer: Arc<dyn Any + Send + Sync>,
    lister: Arc<dyn ErasedLister>,
    has_synced: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl fmt::Debug for GenericInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericInformer").finish_non_exhaustive()
    }
}

impl GenericInformer {
    /// The typed informer, when it is of type `K`.
    pub fn informer<K: Object>(&self) -> Option<SharedIndexInformer<K>> {
        self.informer
            .downcast_ref::<SharedIndexInformer<K>>()
            .cloned()
    }
    /// A lister over the informer's cache, keyed by the resource's plural name.
    pub fn lister(&self) -> &dyn ErasedLister {
        self.lister.as_ref()
    }
    /// Whether the informer has synced.
    pub fn has_synced(&self) -> bool {
        (self.has_synced)()
    }
}

/// Options of an [`InformerFactory`]: a plain struct with builder methods.
#[derive(Clone, Default)]
pub struct FactoryOptions {
    /// The default resync period.
    pub default_resync: Duration,
    /// The namespace informers list and watch in; `None` = all namespaces.
    pub namespace: Option<String>,
    /// Applied to the options of every list and watch.
    pub tweak_list_options: Option<TweakListOptions>,
    /// Per-type resync periods.
    pub custom_resync: HashMap<TypeId, Duration>,
    /// Applied to every object of every informer (see [`FactoryOptions::transform`]).
    pub transform: Option<AnyTransformFunc>,
}

impl fmt::Debug for FactoryOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FactoryOptions")
            .field("default_resync", &self.default_resync)
            .field("namespace", &self.namespace)
            .field("tweak_list_options", &self.tweak_list_options.is_some())
            .field("custom_resync", &self.custom_resync.len())
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

impl FactoryOptions {
    /// Options with a default resync period.
    pub fn new(default_resync: Duration) -> Self {
        FactoryOptions {
            default_resync,
            ..Default::default()
        }
    }
    /// Limits informers to one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        let ns = namespace.into();
        self.namespace = (!ns.is_empty()).then_some(ns);
        self
    }
    /// Tweaks the options of every list and watch (e.g. a label selector).
    pub fn tweak_list_options(
        mut self,
        f: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak_list_options = Some(Arc::new(f));
        self
    }
    /// Sets the resync period of informers of type `K`.
    pub fn custom_resync<K: 'static>(mut self, period: Duration) -> Self {
        self.custom_resync.insert(TypeId::of::<K>(), period);
        self
    }
    /// Sets a transform applied to every object of every informer, before it is cached
    /// (client-go's `WithTransform`). It gets each object as `Arc<dyn Any>`, downcasts to
    /// the types it cares about and returns the object, changed or not, as the type it
    /// was given; an error keeps the object out of the cache.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kubegen_runtime::cache::factory::FactoryOptions;
    ///
    /// let options = FactoryOptions::default().transform(|obj| match obj.downcast::<Pod>() {
    ///     Ok(mut pod) => {
    ///         // Fresh from the decoder, the object is not shared: make_mut does not copy.
    ///         Arc::make_mut(&mut pod).spec = None;
    ///         Ok(pod)
    ///     }
    ///     Err(other) => Ok(other),
    /// });
    /// assert!(options.transform.is_some());
    /// ```
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
}

struct Entry {
    informer: Arc<dyn Any + Send + Sync>,
    generic: GenericInformer,
    run: Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>,
    started: bool,
    name: &'static str,
    done: DoneChecker,
}

struct State {
    informers: HashMap<TypeId, Entry>,
    by_resource: BTreeMap<(String, String, String), TypeId>,
    /// Every informer task, shareable so that concurrent `shutdown`s all wait.
    tasks: Vec<Shared<BoxFuture<'static, ()>>>,
    shutting_down: bool,
}

/// Creates and shares one informer per type (see the module docs).
///
/// ```no_run
/// # async fn demo(client: kube::Client) {
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::Pod;
/// use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
/// use tokio_util::sync::CancellationToken;
///
/// let factory = InformerFactory::new(client, FactoryOptions::new(Duration::from_secs(600)));
/// let pods = factory.informer::<Pod>();
/// let stop = CancellationToken::new();
/// factory.start(&stop);
/// factory.wait_for_cache_sync(&stop).await;
/// println!("{} pods", pods.indexer().len());
/// factory.shutdown().await;
/// # }
/// ```
#[derive(Clone)]
pub struct InformerFactory {
    client: Option<kube::Client>,
    options: Arc<FactoryOptions>,
    state: Arc<Mutex<State>>,
    stop: CancellationToken,
}

impl fmt::Debug for InformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerFactory")
            .field("options", &self.options)
            .field("informers", &self.state.lock().informers.len())
            .finish()
    }
}

fn is_cluster_scoped<K: kube::Resource>() -> bool
where
    K::Scope: 'static,
{
    TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::ClusterResourceScope>()
}

impl InformerFactory {
    /// A factory whose informers list and watch through `client`.
    pub fn new(client: kube::Client, options: FactoryOptions) -> Self {
        Self::build(Some(client), options)
    }

    /// A factory without a client: every informer must come from
    /// [`InformerFactory::informer_for`] with its own lister-watcher.
    pub fn without_client(options: FactoryOptions) -> Self {
        Self::build(None, options)
    }

    fn build(client: Option<kube::Client>, options: FactoryOptions) -> Self {
        InformerFactory {
            client,
            options: Arc::new(options),
            state: Arc::new(Mutex::new(State {
                informers: HashMap::new(),
                by_resource: BTreeMap::new(),
                tasks: Vec::new(),
                shutting_down: false,
            })),
            stop: CancellationToken::new(),
        }
    }

    /// The client informers list and watch through, unless the factory has none.
    pub fn client(&self) -> Option<&kube::Client> {
        self.client.as_ref()
    }

    /// The factory's options.
    pub fn options(&self) -> &FactoryOptions {
        &self.options
    }

    /// The resync period an informer of type `K` gets.
    pub fn resync_period_for<K: 'static>(&self) -> Duration {
        self.options
            .custom_resync
            .get(&TypeId::of::<K>())
            .copied()
            .unwrap_or(self.options.default_resync)
    }

    /// The shared informer of `K`, listing and watching through the factory's client in
    /// the factory's namespace (cluster-scoped types ignore the namespace). Reads ask
    /// for protobuf when `K` is a built-in kind (see [`client::protobuf`]).
    ///
    /// # Panics
    ///
    /// If the factory was built [`without_client`](Self::without_client) and no informer
    /// of `K` exists yet.
    pub fn informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: Object + kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
        K::Scope: 'static,
    {
        self.client_informer::<K, client::Negotiated>()
    }

    /// [`InformerFactory::informer`] for a custom resource: reads ask for JSON only, and
    /// no protobuf decoder is compiled for `K` (see [`client::JsonOnly`]). Generated
    /// informers of custom resources use it; the informer is the same one `informer`
    /// returns for `K` (one per type and factory).
    ///
    /// # Panics
    ///
    /// As [`InformerFactory::informer`].
    pub fn json_informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: Object + kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
        K::Scope: 'static,
    {
        self.client_informer::<K, client::JsonOnly>()
    }

    /// [`InformerFactory::informer`] for a type with a generated protobuf decoder (the
    /// compact mirrors of the built-in kinds): protobuf is read by field number, straight
    /// into the type (see [`client::Generated`]). The typed informers of
    /// `kubegen-kubernetes` use it; the informer is the same one `informer` returns for
    /// `K` (one per type and factory).
    ///
    /// # Panics
    ///
    /// As [`InformerFactory::informer`].
    pub fn generated_informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: Object + kube::Resource<DynamicType = ()> + client::GeneratedDecoders,
        K::Scope: 'static,
    {
        self.client_informer::<K, client::Generated>()
    }

    fn client_informer<K, W: client::WireDecoders<K>>(&self) -> SharedIndexInformer<K>
    where
        K: Object + kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
        K::Scope: 'static,
    {
        let client = self.client.clone();
        let namespace = self.options.namespace.clone();
        self.informer_for::<K>(move |config| {
            let Some(client) = client else {
                panic!("InformerFactory::informer needs a client; this factory has none");
            };
            let rc = match namespace {
                Some(ns) if !is_cluster_scoped::<K>() => {
                    ResourceClient::<K>::namespaced(client, &ns)
                }
                _ if is_cluster_scoped::<K>() => ResourceClient::<K>::cluster(client),
                _ => ResourceClient::<K>::all(client),
            };
            SharedIndexInformer::new(Arc::new(rc.rewire::<W>()), config)
        })
    }

    /// The shared informer of `K`: the existing one, or a new one made by `new_informer`
    /// (called with the informer's configuration; its lister-watcher is wrapped with the
    /// factory's tweak and its objects pass the factory's transform).
    pub fn informer_for<K>(
        &self,
        new_informer: impl FnOnce(InformerOptions) -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Object + kube::Resource<DynamicType = ()>,
    {
        let mut st = self.state.lock();
        if let Some(entry) = st.informers.get(&TypeId::of::<K>())
            && let Some(i) = entry.informer.downcast_ref::<SharedIndexInformer<K>>()
        {
            return i.clone();
        }
        // The factory's transform goes in the configuration, before the informer exists:
        // nothing can refuse it, and it does not replace a transform the constructor set.
        let mut config = InformerOptions::default().resync_period(self.resync_period_for::<K>());
        config.transform = self.options.transform.clone();
        let gr = (
            K::group(&()).into_owned(),
            K::version(&()).into_owned(),
            K::plural(&()).into_owned(),
        );
        // Names are unique within the factory: an informer of a second version of a
        // resource the factory already serves is named with its version.
        let other_version = st
            .by_resource
            .keys()
            .any(|(g, v, r)| *g == gr.0 && *r == gr.2 && *v != gr.1);
        let name = match (gr.0.is_empty(), other_version) {
            (true, false) => gr.2.clone(),
            (true, true) => format!("{}.{}", gr.2, gr.1),
            (false, false) => format!("{}.{}", gr.2, gr.0),
            (false, true) => format!("{}.{}.{}", gr.2, gr.1, gr.0),
        };
        // A second type of the same resource and version (a compact mirror or a
        // projection beside the full type) is named with its Rust type; the first keeps
        // the resource's name and stays the one `for_resource` hands out.
        let name = if st.by_resource.contains_key(&gr) {
            format!("{name} ({})", std::any::type_name::<K>())
        } else {
            name
        };
        let informer = new_informer(config).with_kind_name(name);
        let informer = match &self.options.tweak_list_options {
            Some(tweak) => informer.with_lister_watcher(|inner| {
                Arc::new(Tweaked {
                    inner,
                    tweak: Arc::clone(tweak),
                })
            }),
            None => informer,
        };
        let erased = informer.clone();
        let synced = informer.clone();
        let generic = GenericInformer {
            informer: Arc::new(informer.clone()),
            lister: Arc::new(Lister::for_resource(
                informer.indexer().clone(),
                GroupResource {
                    group: &gr.0,
                    resource: &gr.2,
                },
            )),
            has_synced: Arc::new(move || synced.has_synced()),
        };
        st.by_resource.entry(gr).or_insert(TypeId::of::<K>());
        st.informers.insert(
            TypeId::of::<K>(),
            Entry {
                informer: Arc::new(informer.clone()),
                generic,
                run: Arc::new(move |stop| {
                    let i = erased.clone();
                    async move { i.run(stop).await }.boxed()
                }),
                started: false,
                name: std::any::type_name::<K>(),
                done: informer.done_checker(),
            },
        );
        informer
    }

    /// Starts every informer not started yet; a no-op after `shutdown`. Informers stop
    /// when `stop` fires or at `shutdown`.
    pub fn start(&self, stop: &CancellationToken) {
        let mut st = self.state.lock();
        if st.shutting_down {
            return;
        }
        let mut to_start = Vec::new();
        for entry in st.informers.values_mut() {
            if !entry.started {
                entry.started = true;
                to_start.push(Arc::clone(&entry.run));
            }
        }
        for run in to_start {
            st.tasks
                .push(spawn_informer(&self.stop, stop, move |t| run(t)));
        }
    }

    /// Waits for every started informer to sync or for `stop`; returns each started
    /// informer's type name with whether it synced.
    pub async fn wait_for_cache_sync(
        &self,
        stop: &CancellationToken,
    ) -> BTreeMap<&'static str, bool> {
        let started: Vec<(&'static str, DoneChecker)> = {
            let st = self.state.lock();
            st.informers
                .values()
                .filter(|e| e.started)
                .map(|e| (e.name, e.done.clone()))
                .collect()
        };
        Self::wait_all(stop, started).await
    }

    /// Waits for every started informer to sync or for `stop`; returns each started
    /// informer's name (`resource.group`, see the module docs) with whether it synced
    /// (client-go 1.36's per-informer sync report).
    pub async fn wait_for_cache_sync_by_name(
        &self,
        stop: &CancellationToken,
    ) -> BTreeMap<String, bool> {
        let checkers = self.done_checkers();
        let named = checkers.into_iter().map(|c| (c.name().to_owned(), c));
        Self::wait_all(stop, named.collect()).await
    }

    /// The done-checkers of the started informers, named after them: to wait for them
    /// together with other checkers ([`wait_for`](crate::cache::done::wait_for)).
    pub fn done_checkers(&self) -> Vec<DoneChecker> {
        let st = self.state.lock();
        st.informers
            .values()
            .filter(|e| e.started)
            .map(|e| e.done.clone())
            .collect()
    }

    async fn wait_all<N: Ord>(
        stop: &CancellationToken,
        checkers: Vec<(N, DoneChecker)>,
    ) -> BTreeMap<N, bool> {
        let only: Vec<DoneChecker> = checkers.iter().map(|(_, c)| c.clone()).collect();
        let _ = crate::cache::done::wait_for(stop, &only).await;
        checkers
            .into_iter()
            .map(|(name, c)| {
                let done = c.is_done();
                (name, done)
            })
            .collect()
    }

    /// The informer of a group/version/resource, type-erased.
    pub fn for_resource(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<GenericInformer, FactoryError> {
        let st = self.state.lock();
        st.by_resource
            .get(&(gvr.group.clone(), gvr.version.clone(), gvr.resource.clone()))
            .and_then(|t| st.informers.get(t))
            .map(|e| e.generic.clone())
            .ok_or_else(|| FactoryError::NoInformer(format_gvr(gvr)))
    }

    /// Stops every informer and waits for their tasks to end; later `start`s do nothing.
    /// Safe to call more than once, also concurrently.
    pub async fn shutdown(&self) {
        let tasks = {
            let mut st = self.state.lock();
            st.shutting_down = true;
            st.tasks.clone()
        };
        self.stop.cancel();
        for t in tasks {
            let _ = t.await;
        }
    }
}

/// Runs an informer on a task of its own until the factory's `factory_stop` or the
/// caller's `stop` fires; the returned future (shareable, so that concurrent shutdowns
/// all wait) ends with the task.
pub(crate) fn spawn_informer(
    factory_stop: &CancellationToken,
    stop: &CancellationToken,
    run: impl FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send + 'static,
) -> Shared<BoxFuture<'static, ()>> {
    let token = factory_stop.child_token();
    let outer = stop.clone();
    let task = tokio::spawn(async move {
        let run = run(token.clone());
        tokio::pin!(run);
        tokio::select! {
            _ = &mut run => {}
            _ = outer.cancelled() => {
                // Let the informer end as on its own stop (handlers stopped, marked
                // stopped) rather than dropping it mid-flight.
                token.cancel();
                run.await;
            }
        }
    });
    task.map(|_| ()).boxed().shared()
}

pub(crate) fn format_gvr(gvr: &GroupVersionResource) -> String {
    format!("{}/{}, Resource={}", gvr.group, gvr.version, gvr.resource)
}

/// Errors of the factory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactoryError {
    /// No informer exists for the resource.
    #[error("no informer found for {0}")]
    NoInformer(String),
}

#[cfg(test)]
mod tests;
