//! Informers for resources chosen at run time (client-go's `dynamicinformer`,
//! `dynamiclister` and `metadatainformer`): one shared informer per
//! group/version/resource, objects as [`DynamicObject`] or as
//! [`PartialObjectMetadata`].
//!
//! Contract:
//! - [`ResourceInformerFactory::for_resource`] returns the informer of a resource,
//!   creating it the first time only: every caller shares one cache and one watch per
//!   group/version/resource. The first call resolves the resource through the factory's
//!   [`RestMapper`] (its kind and scope; a partial or short name resolves to the full
//!   resource, under which the informer is kept), which resets discovery and retries once
//!   on a miss, so a CRD created after the program started is found. A resource the
//!   server does not serve is [`DiscoveryError::NoMatch`].
//! - A new informer lists and watches in the factory's namespace (all namespaces by
//!   default; cluster-scoped resources ignore it) with the factory's resync period and
//!   list-option tweak; cached objects carry their `apiVersion` and `kind` (a dynamic
//!   list's items get the resource's when they come without), and lose their
//!   `managedFields`, as with typed informers.
//! - [`ResourceInformerFactory::start`], [`ResourceInformerFactory::wait_for_cache_sync`]
//!   and [`ResourceInformerFactory::shutdown`] behave as the typed
//!   [`InformerFactory`](crate::cache::factory::InformerFactory)'s: `start` starts the
//!   informers not yet started, nothing starts after `shutdown`, which stops every
//!   informer and waits for it; `wait_for_cache_sync` reports on started informers.
//! - [`DynamicLister`] reads the informer's cache (client-go's `dynamiclister`): shared
//!   `Arc`s, never copies; a miss is NotFound naming the resource.
//!
//! [`DynamicSharedInformerFactory`] and [`MetadataSharedInformerFactory`] are this one
//! factory for the two object types.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, Shared};
use futures::FutureExt;
use kube::core::{ApiResource, DynamicObject, GroupVersionResource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::cache::factory::{spawn_informer, FactoryOptions};
use crate::cache::informer::{InformerOptions, SharedIndexInformer};
use crate::cache::lister::{Lister, NamespaceLister};
use crate::client::discovery::{DiscoveryError, RestMapper, RestMapping};
use crate::client::metadata::PartialObjectMetadata;
use crate::client::ResourceClient;
use crate::errors::{GroupResource, StatusError};
use crate::labels::Selector;
use crate::object::Object;

/// Informers of [`DynamicObject`]s by group/version/resource (client-go's
/// `dynamicinformer.DynamicSharedInformerFactory`).
pub type DynamicSharedInformerFactory = ResourceInformerFactory<DynamicObject>;

/// Informers of [`PartialObjectMetadata`] by group/version/resource (client-go's
/// `metadatainformer.SharedInformerFactory`): each object costs its metadata only.
pub type MetadataSharedInformerFactory = ResourceInformerFactory<PartialObjectMetadata>;

/// What a [`ResourceInformerFactory`] can cache: an object whose resource is an
/// [`ApiResource`] known at run time.
pub trait ResourceObject:
    Object + kube::Resource<DynamicType = ApiResource> + DeserializeOwned
{
}

impl<K> ResourceObject for K where
    K: Object + kube::Resource<DynamicType = ApiResource> + DeserializeOwned
{
}

/// A lister over one resource's cache (client-go's `dynamiclister.Lister`).
pub struct DynamicLister<K: ?Sized> {
    lister: Lister<K>,
}

impl<K: ?Sized> Clone for DynamicLister<K> {
    fn clone(&self) -> Self {
        DynamicLister {
            lister: self.lister.clone(),
        }
    }
}

impl<K: ?Sized> fmt::Debug for DynamicLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicLister").finish_non_exhaustive()
    }
}

impl<K: ResourceObject> DynamicLister<K> {
    /// Objects in all namespaces matching the selector.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.lister.list(selector)
    }

    /// A cluster-scoped object by name.
    pub fn get(&self, name: &str) -> Result<Arc<K>, StatusError> {
        self.lister.get(name)
    }

    /// The objects of one namespace (client-go's `Namespace(ns)`).
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        self.lister.namespaced(namespace)
    }
}

/// One resource's shared informer and lister (client-go's `GenericInformer`).
pub struct ResourceInformer<K: ResourceObject> {
    informer: SharedIndexInformer<K>,
    lister: DynamicLister<K>,
    mapping: RestMapping,
}

impl<K: ResourceObject> Clone for ResourceInformer<K> {
    fn clone(&self) -> Self {
        ResourceInformer {
            informer: self.informer.clone(),
            lister: self.lister.clone(),
            mapping: self.mapping.clone(),
        }
    }
}

impl<K: ResourceObject> fmt::Debug for ResourceInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceInformer")
            .field("resource", &self.mapping.resource)
            .finish_non_exhaustive()
    }
}

impl<K: ResourceObject> ResourceInformer<K> {
    /// The shared informer (add handlers, read its indexer).
    pub fn informer(&self) -> &SharedIndexInformer<K> {
        &self.informer
    }

    /// A lister over the informer's cache.
    pub fn lister(&self) -> &DynamicLister<K> {
        &self.lister
    }

    /// The resource, as discovery mapped it.
    pub fn mapping(&self) -> &RestMapping {
        &self.mapping
    }
}

struct Entry<K: ResourceObject> {
    informer: ResourceInformer<K>,
    started: bool,
}

struct State<K: ResourceObject> {
    informers: BTreeMap<(String, String, String), Entry<K>>,
    tasks: Vec<Shared<BoxFuture<'static, ()>>>,
    shutting_down: bool,
}

fn key(gvr: &GroupVersionResource) -> (String, String, String) {
    (gvr.group.clone(), gvr.version.clone(), gvr.resource.clone())
}

/// One shared informer per group/version/resource, for resources chosen at run time
/// (see the module docs). Cloning gives another handle to the same factory.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use kubegen_runtime::cache::dynamic::DynamicSharedInformerFactory;
/// use kubegen_runtime::cache::factory::FactoryOptions;
/// use kubegen_runtime::labels::Selector;
/// use kubegen_runtime::object::GroupVersionResource;
/// use kubegen_runtime::testing::ApiServer;
/// use tokio_util::sync::CancellationToken;
///
/// let server = ApiServer::new();
/// server
///     .create("configmaps", serde_json::json!({"metadata": {"name": "c", "namespace": "ns"}}))
///     .unwrap();
/// let client = kube::Client::new(server.service(), "default");
/// let factory = DynamicSharedInformerFactory::new(client, FactoryOptions::new(Duration::ZERO));
/// let cms = factory
///     .for_resource(&GroupVersionResource::gvr("", "v1", "configmaps"))
///     .await
///     .unwrap();
/// let stop = CancellationToken::new();
/// factory.start(&stop);
/// assert!(factory.wait_for_cache_sync(&stop).await.values().all(|s| *s));
/// let c = cms.lister().namespace("ns").get("c").unwrap();
/// assert_eq!(c.types.as_ref().unwrap().kind, "ConfigMap");
/// assert_eq!(cms.lister().list(&Selector::everything()).len(), 1);
/// factory.shutdown().await;
/// # }
/// ```
pub struct ResourceInformerFactory<K: ResourceObject> {
    client: kube::Client,
    mapper: RestMapper,
    options: Arc<FactoryOptions>,
    state: Arc<Mutex<State<K>>>,
    stop: CancellationToken,
}

impl<K: ResourceObject> Clone for ResourceInformerFactory<K> {
    fn clone(&self) -> Self {
        ResourceInformerFactory {
            client: self.client.clone(),
            mapper: self.mapper.clone(),
            options: Arc::clone(&self.options),
            state: Arc::clone(&self.state),
            stop: self.stop.clone(),
        }
    }
}

impl<K: ResourceObject> fmt::Debug for ResourceInformerFactory<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceInformerFactory")
            .field("options", &self.options)
            .field("informers", &self.state.lock().informers.len())
            .finish()
    }
}

impl<K: ResourceObject> ResourceInformerFactory<K> {
    /// A factory whose informers list and watch through `client`, resolving resources
    /// with a REST mapper of its own. Of the options, it uses the default resync period,
    /// the namespace and the list-option tweak (per-type resync periods and the
    /// `dyn Any` transform are for typed factories).
    pub fn new(client: kube::Client, options: FactoryOptions) -> Self {
        let mapper = RestMapper::new(client.clone());
        Self::with_mapper(client, mapper, options)
    }

    /// A factory resolving resources with `mapper` (to share its discovery cache).
    pub fn with_mapper(client: kube::Client, mapper: RestMapper, options: FactoryOptions) -> Self {
        ResourceInformerFactory {
            client,
            mapper,
            options: Arc::new(options),
            state: Arc::new(Mutex::new(State {
                informers: BTreeMap::new(),
                tasks: Vec::new(),
                shutting_down: false,
            })),
            stop: CancellationToken::new(),
        }
    }

    /// The factory's REST mapper.
    pub fn mapper(&self) -> &RestMapper {
        &self.mapper
    }

    /// The shared informer of a resource, resolved through discovery the first time
    /// (client-go's `ForResource`).
    pub async fn for_resource(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<ResourceInformer<K>, DiscoveryError> {
        if let Some(e) = self.state.lock().informers.get(&key(gvr)) {
            return Ok(e.informer.clone());
        }
        let mapping = self.mapper.rest_mapping_for(gvr).await?;
        Ok(self.for_mapping(&mapping))
    }

    /// The shared informer of a resource already mapped (no discovery).
    pub fn for_mapping(&self, mapping: &RestMapping) -> ResourceInformer<K> {
        let mut st = self.state.lock();
        if let Some(e) = st.informers.get(&key(&mapping.resource)) {
            return e.informer.clone();
        }
        let ar = mapping.api_resource();
        let client = self.client.clone();
        let rc = match &self.options.namespace {
            Some(ns) if mapping.namespaced => ResourceClient::<K>::namespaced_with(client, ns, &ar),
            _ => ResourceClient::<K>::all_with(client, &ar),
        };
        let mut config = InformerOptions::default()
            .resync_period(self.options.default_resync)
            .api_resource(ar);
        config.tweak_list_options = self.options.tweak_list_options.clone();
        let gvr = &mapping.resource;
        let informer = SharedIndexInformer::new(Arc::new(rc), config)
            .with_kind_name(format!("{}.{}.{}", gvr.resource, gvr.version, gvr.group));
        let lister = DynamicLister {
            lister: Lister::for_resource(
                informer.indexer().clone(),
                GroupResource {
                    group: &gvr.group,
                    resource: &gvr.resource,
                },
            ),
        };
        let shared = ResourceInformer {
            informer,
            lister,
            mapping: mapping.clone(),
        };
        st.informers.insert(
            key(gvr),
            Entry {
                informer: shared.clone(),
                started: false,
            },
        );
        shared
    }

    /// Starts every informer not started yet; a no-op after `shutdown`. Informers stop
    /// when `stop` fires or at `shutdown`.
    pub fn start(&self, stop: &CancellationToken) {
        let mut st = self.state.lock();
        if st.shutting_down {
            return;
        }
        let mut to_start = Vec::new();
        for entry in st.informers.values_mut().filter(|e| !e.started) {
            entry.started = true;
            to_start.push(entry.informer.informer.clone());
        }
        for informer in to_start {
            let task = spawn_informer(&self.stop, stop, move |t| {
                async move { informer.run(t).await }.boxed()
            });
            st.tasks.push(task);
        }
    }

    /// Waits for every started informer to sync or for `stop`; returns each started
    /// informer's resource with whether it synced.
    pub async fn wait_for_cache_sync(
        &self,
        stop: &CancellationToken,
    ) -> HashMap<GroupVersionResource, bool> {
        let started: Vec<ResourceInformer<K>> = self
            .state
            .lock()
            .informers
            .values()
            .filter(|e| e.started)
            .map(|e| e.informer.clone())
            .collect();
        let mut result = HashMap::new();
        for i in started {
            let synced =
                crate::cache::informer::wait_for_cache_sync(stop, &[&|| i.informer.has_synced()])
                    .await;
            result.insert(i.mapping.resource.clone(), synced);
        }
        result
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
            t.await;
        }
    }

    /// The resync period of the factory's informers.
    pub fn resync_period(&self) -> Duration {
        self.options.default_resync
    }
}
