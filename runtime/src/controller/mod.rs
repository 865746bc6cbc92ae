//! The reconcile layer: a controller built on the shared informers of an
//! [`InformerFactory`] (controller-runtime's builder, in client-go's vocabulary).
//!
//! ```
//! # #[cfg(feature = "testing")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//! use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
//! use kubegen_runtime::controller::{Action, Context, Controller, Target};
//! use kubegen_runtime::tokio_util::sync::CancellationToken;
//!
//! async fn reconcile(target: Target<Deployment>, ctx: Arc<Context<CancellationToken>>)
//!     -> Result<Action, std::convert::Infallible>
//! {
//!     if let Some(deployment) = target.live() {
//!         println!("reconciled {:?}", deployment.metadata.name);
//!         ctx.data().cancel(); // a demo: stop after the first reconcile
//!     }
//!     Ok(Action::done())
//! }
//!
//! let server = kubegen_runtime::testing::ApiServer::new();
//! let deployment = serde_json::json!({"metadata": {"name": "web", "namespace": "default"},
//!     "spec": {"selector": {}, "template": {}}});
//! server.create("deployments.apps", deployment).unwrap();
//! let client = kube::Client::new(server.service(), "default");
//! let factory = InformerFactory::new(client, FactoryOptions::new(Duration::ZERO));
//!
//! let stop = CancellationToken::new();
//! Controller::new(&factory)
//!     .for_::<Deployment>()
//!     .owns::<ReplicaSet>()
//!     .run(reconcile, stop.clone(), stop)
//!     .await
//!     .unwrap();
//! factory.shutdown().await;
//! # }
//! # #[cfg(not(feature = "testing"))]
//! # fn main() {}
//! ```
//!
//! Contract (SEMANTICS 14, reconcile layer):
//! - Notifications of the primary kind (filtered by the builder's predicates), of owned
//!   kinds (mapped to their owners, see [`owner`]) and of watched kinds (mapped by the
//!   user's function) put `namespace/name` keys on one [`RateLimitingQueue`]. Handlers
//!   are added to the factory's informers: controllers on one factory share one informer,
//!   one cache and one watch per kind.
//! - Workers take keys from the queue: a key is never reconciled by two workers at once,
//!   and changes during a reconcile coalesce into one more reconcile after it (the
//!   queue's invariants). The reconcile gets the object from the primary informer's cache
//!   as [`Target::Live`], or [`Target::Gone`] when the cache no longer holds it.
//! - Outcomes: [`Action::done`] forgets the key's failures; an error (or a reconcile
//!   running past [`Builder::reconcile_timeout`]) requeues the key with the queue's
//!   per-key backoff (client-go's default controller rate limiter: 5 ms doubling to
//!   1000 s, and 10 qps / burst 100 overall); [`Action::requeue`] requeues through the
//!   rate limiter too; [`Action::requeue_after`] forgets the failures and requeues after
//!   its delay.
//! - Workers start once every informer the controller uses has synced. With
//!   [`Builder::leader_election`], informers start and sync *before* the election (warm
//!   standby: a new leader lists nothing), workers run only while leading, and no
//!   reconcile starts after leadership ended; [`Builder::run`] returns when leadership is
//!   lost (as controller-runtime's manager, the process is expected to exit or restart).
//! - Shutdown (the `stop` token): no key is taken after it fires, reconciles in progress
//!   finish (there is no deadline: a reconcile must not hang), then the queue shuts down,
//!   the controller's handlers are removed from the shared informers, and `run` returns.
//!   The informers belong to the factory and keep running until it shuts down.
//!
//! It does not order keys (the queue is FIFO with per-key backoff; there is no priority
//! for fresh events over resyncs), and it does not retry a reconcile that panicked: the
//! worker's task ends and the key stays marked as processing.

mod action;
pub mod child;
pub mod conditions;
pub mod finalizer;
mod health;
pub mod metrics;
pub mod owner;
pub mod predicate;
mod sources;
mod worker;

use std::fmt;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio_util::sync::CancellationToken;

pub use action::{Action, Context, Target};
pub use health::{Health, HealthError};
pub use metrics::{ReconcileMetrics, ReconcileResult};
pub use owner::OwnerMatch;
pub use predicate::Predicate;

use crate::cache::factory::InformerFactory;
use crate::cache::informer::{InformerError, SharedIndexInformer};
use crate::leaderelection::{ConfigError, LeaderCallbacks, LeaderElectionOptions, LeaderElector};
use crate::object::{Object, ObjectRef};
use crate::record::EventRecorder;
use crate::workqueue::{MetricsProvider, QueueOptions, RateLimitingQueue};
use owner::OwnerKind;
use sources::{register, MapFn, MapHandler, PrimaryHandler, Registered, Source};
use worker::{Gate, Runner};

/// Workers of a controller unless [`Builder::workers`] says otherwise. Reconciles mostly
/// wait on the API server, so a few run at once; controller-runtime defaults to 1 and
/// kube-runtime to unlimited, the one too slow for a backlog and the other unbounded.
pub const DEFAULT_WORKERS: usize = 4;

/// Errors that keep a controller from running.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// A handler could not be added to an informer (it had stopped: the factory was shut
    /// down before the controller ran).
    #[error(
        "controller {controller}: cannot watch through the shared informer: {source}; run the controller before shutting the factory down"
    )]
    Informer {
        /// The controller's name.
        controller: String,
        /// The informer's refusal.
        source: InformerError,
    },
    /// The leader-election configuration is invalid.
    #[error("controller {controller}: invalid leader election: {source}")]
    LeaderElection {
        /// The controller's name.
        controller: String,
        /// What is wrong with it.
        source: ConfigError,
    },
}

/// Starts a controller on a factory's informers; [`Controller::for_`] names the primary
/// kind and returns the [`Builder`].
#[derive(Debug, Clone)]
pub struct Controller {
    factory: InformerFactory,
}

impl Controller {
    /// A controller whose informers come from `factory` (shared with every other user of
    /// the factory).
    pub fn new(factory: &InformerFactory) -> Self {
        Controller {
            factory: factory.clone(),
        }
    }

    /// Reconciles objects of `K`, a kind with a static type (generated, built-in,
    /// kube-derive), through the factory's informer of `K`.
    pub fn for_<K>(self) -> Builder<K>
    where
        K: Object + kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
        K::Scope: 'static,
    {
        let informer = self.factory.informer::<K>();
        self.for_informer(informer, &())
    }

    /// Reconciles the objects of `informer`, for kinds chosen at run time (the informer of
    /// a [`DynamicSharedInformerFactory`](crate::cache::dynamic::DynamicSharedInformerFactory),
    /// with its [`ApiResource`](kube::core::ApiResource) as `dyntype`). A primary whose
    /// scope is only known at run time is taken as namespaced. [`Builder::run`] starts
    /// the controller's own factory only: start the factory `informer` came from.
    pub fn for_informer<K>(
        self,
        informer: SharedIndexInformer<K>,
        dyntype: &K::DynamicType,
    ) -> Builder<K>
    where
        K: Object,
        K::Scope: 'static,
    {
        let cluster_scoped = std::any::TypeId::of::<K::Scope>()
            == std::any::TypeId::of::<k8s_openapi::ClusterResourceScope>();
        let kind = K::kind(dyntype).into_owned();
        Builder {
            factory: self.factory,
            name: kind.to_lowercase(),
            owner: OwnerKind {
                group: K::group(dyntype).into_owned(),
                kind,
                cluster_scoped,
            },
            primary: informer,
            predicates: Vec::new(),
            sources: Vec::new(),
            workers: DEFAULT_WORKERS,
            timeout: None,
            leader: None,
            recorder: None,
            queue_metrics: None,
            metrics: Arc::new(ReconcileMetrics::default()),
            health: Health::default(),
        }
    }
}

/// Configures a controller of primary kind `K` (see the module docs); [`Builder::run`]
/// runs it.
pub struct Builder<K: Object> {
    factory: InformerFactory,
    name: String,
    owner: OwnerKind,
    primary: SharedIndexInformer<K>,
    predicates: Vec<Arc<dyn Predicate<K>>>,
    sources: Vec<Source>,
    workers: usize,
    timeout: Option<Duration>,
    leader: Option<LeaderElectionOptions>,
    recorder: Option<Arc<dyn EventRecorder>>,
    queue_metrics: Option<Arc<dyn MetricsProvider>>,
    metrics: Arc<ReconcileMetrics>,
    health: Health,
}

impl<K: Object> fmt::Debug for Builder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("predicates", &self.predicates.len())
            .field("sources", &self.sources.len())
            .field("workers", &self.workers)
            .field("timeout", &self.timeout)
            .field("leader_election", &self.leader.is_some())
            .finish_non_exhaustive()
    }
}

impl<K: Object> Builder<K> {
    /// Names the controller (its queue, its metrics' `controller` label, its logs);
    /// defaults to the primary kind in lowercase.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Reconciles with `n` workers at most at once (at least 1; default
    /// [`DEFAULT_WORKERS`]).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// Adds a predicate on the primary's notifications (all must pass, see [`predicate`]).
    pub fn with_predicate(mut self, predicate: impl Predicate<K>) -> Self {
        self.predicates.push(Arc::new(predicate));
        self
    }

    /// Reconciles the owner of every changed `C` whose controller owner reference names
    /// the primary kind.
    pub fn owns<C>(self) -> Self
    where
        C: Object + kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
        C::Scope: 'static,
    {
        self.owns_with::<C>(OwnerMatch::Controller)
    }

    /// [`Builder::owns`], choosing which owner references count.
    pub fn owns_with<C>(self, matching: OwnerMatch) -> Self
    where
        C: Object + kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
        C::Scope: 'static,
    {
        let informer = self.factory.informer::<C>();
        self.owns_informer(informer, matching)
    }

    /// [`Builder::owns_with`] through a given informer (dynamic or metadata kinds).
    pub fn owns_informer<C: Object>(
        self,
        informer: SharedIndexInformer<C>,
        matching: OwnerMatch,
    ) -> Self {
        let owner = self.owner.clone();
        self.map_informer(informer, move |child: &C| {
            let meta = child.meta();
            owner.owner_keys(
                meta.namespace.as_deref(),
                meta.owner_references.as_deref().unwrap_or_default(),
                matching,
            )
        })
    }

    /// Reconciles the primaries `map` names for every changed `C` (controller-runtime's
    /// `Watches` with `EnqueueRequestsFromMapFunc`).
    pub fn watches<C>(self, map: impl Fn(&C) -> Vec<ObjectRef> + Send + Sync + 'static) -> Self
    where
        C: Object + kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
        C::Scope: 'static,
    {
        let informer = self.factory.informer::<C>();
        self.watches_informer(informer, map)
    }

    /// [`Builder::watches`] through a given informer (dynamic or metadata kinds).
    pub fn watches_informer<C: Object>(
        self,
        informer: SharedIndexInformer<C>,
        map: impl Fn(&C) -> Vec<ObjectRef> + Send + Sync + 'static,
    ) -> Self {
        self.map_informer(informer, move |obj: &C| {
            map(obj).iter().map(ObjectRef::key).collect()
        })
    }

    fn map_informer<C: Object>(
        mut self,
        informer: SharedIndexInformer<C>,
        map: impl Fn(&C) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        let map: MapFn<C> = Arc::new(map);
        self.sources.push(Box::new(move |queue| {
            register(informer, MapHandler { queue, map })
        }));
        self
    }

    /// Fails a reconcile that runs longer than `timeout` (counted as an error: requeued
    /// with backoff). The reconcile's future is dropped at the deadline.
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Runs the workers only while this process leads `config`'s lock; the informers sync
    /// before the election (warm standby). The controller sets the config's
    /// `on_started_leading` and `on_stopped_leading`; `on_new_leader` is kept.
    pub fn leader_election(mut self, config: LeaderElectionOptions) -> Self {
        self.leader = Some(config);
        self
    }

    /// The event recorder reconciles find in their [`Context`].
    pub fn recorder(mut self, recorder: Arc<dyn EventRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Reports the controller's queue as `workqueue_*{name=<controller>}` through
    /// `provider` (e.g. [`PrometheusMetricsProvider`](crate::workqueue::metrics::prometheus::PrometheusMetricsProvider)
    /// with feature `prometheus`).
    pub fn queue_metrics(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.queue_metrics = Some(provider);
        self
    }

    /// The controller's reconcile counters (live while it runs).
    pub fn metrics(&self) -> Arc<ReconcileMetrics> {
        Arc::clone(&self.metrics)
    }

    /// The controller's health checks (live while it runs).
    pub fn health(&self) -> Health {
        self.health.clone()
    }

    /// Runs the controller until `stop` fires (or, with leader election, leadership is
    /// lost), then shuts it down gracefully (see the module docs). `data` reaches every
    /// reconcile through its [`Context`]. The factory's informers the controller needs
    /// are started here (`factory.start(&stop)`).
    pub async fn run<C, E, F, Fut>(
        self,
        reconcile: F,
        data: C,
        stop: CancellationToken,
    ) -> Result<(), ControllerError>
    where
        C: Send + Sync + 'static,
        E: fmt::Display + Send + 'static,
        F: Fn(Target<K>, Arc<Context<C>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
    {
        let Builder {
            factory,
            name,
            primary,
            predicates,
            sources,
            workers,
            timeout,
            leader,
            recorder,
            queue_metrics,
            metrics,
            health,
            owner: _,
        } = self;
        let mut config = QueueOptions::default().name(name.clone());
        if let Some(provider) = queue_metrics {
            config = config.metrics_provider(provider);
        }
        let queue = RateLimitingQueue::with_config(config);
        let mut registered = Vec::new();
        let registering = (|| {
            let handler = PrimaryHandler {
                queue: queue.clone(),
                predicates: predicates.into(),
            };
            registered.push(register(primary.clone(), handler)?);
            for source in sources {
                registered.push(source(queue.clone())?);
            }
            Ok(())
        })();
        if let Err(source) = registering {
            let err = ControllerError::Informer {
                controller: name,
                source,
            };
            return finish(registered, &queue, &health, Err(err));
        }

        health.inner.running.store(true, Ordering::SeqCst);
        factory.start(&stop);
        let checks: Vec<&(dyn Fn() -> bool + Sync)> = registered
            .iter()
            .map(|r| &*r.has_synced as &(dyn Fn() -> bool + Sync))
            .collect();
        if !crate::cache::informer::wait_for_cache_sync(&stop, &checks).await {
            return finish(registered, &queue, &health, Ok(()));
        }
        health.inner.synced.store(true, Ordering::SeqCst);
        metrics.set_max_concurrent(&name, workers);

        let runner = Arc::new(Runner {
            ctx: Arc::new(Context {
                data,
                name: name.clone(),
                client: factory.client().cloned(),
                recorder,
            }),
            name,
            queue: queue.clone(),
            primary,
            reconcile,
            timeout,
            workers,
            metrics,
            gate: RwLock::new(Gate::default()),
            stop: stop.clone(),
            pools: Arc::new(tokio::sync::RwLock::new(())),
        });
        let Some(config) = leader else {
            runner.open();
            health.inner.leading.store(true, Ordering::SeqCst);
            Arc::clone(&runner).run_workers(stop).await;
            health.inner.leading.store(false, Ordering::SeqCst);
            return finish(registered, &queue, &health, Ok(()));
        };
        let (starting, stopping) = (Arc::clone(&runner), Arc::clone(&runner));
        let (leading, stopped) = (health.clone(), health.clone());
        let mut callbacks = LeaderCallbacks::new()
            .on_started_leading(move |token| {
                starting.open();
                leading.inner.leading.store(true, Ordering::SeqCst);
                Arc::clone(&starting).run_workers(token)
            })
            .on_stopped_leading(move || {
                stopping.close();
                stopped.inner.leading.store(false, Ordering::SeqCst);
            });
        callbacks.on_new_leader = config.callbacks.on_new_leader.clone();
        let elector = match LeaderElector::new(config.callbacks(callbacks)) {
            Ok(elector) => elector,
            Err(source) => {
                let err = ControllerError::LeaderElection {
                    controller: runner.name.clone(),
                    source,
                };
                return finish(registered, &queue, &health, Err(err));
            }
        };
        // The elector gets its own token: on `stop`, the reconciles in flight finish
        // before the lease may be released (`release_on_cancel`), so that a successor
        // never overlaps them.
        let elector_stop = CancellationToken::new();
        let election = elector.run(elector_stop.clone());
        tokio::pin!(election);
        tokio::select! {
            () = &mut election => {}
            () = stop.cancelled() => {
                runner.close();
                let _ = runner.pools.write().await;
                elector_stop.cancel();
                election.await;
            }
        }
        runner.close();
        // The leading task is not awaited by the elector: wait for its workers to finish
        // the reconciles they started.
        let _ = runner.pools.write().await;
        finish(registered, &queue, &health, Ok(()))
    }
}

fn finish(
    registered: Vec<Registered>,
    queue: &RateLimitingQueue<String>,
    health: &Health,
    result: Result<(), ControllerError>,
) -> Result<(), ControllerError> {
    queue.shut_down();
    for r in registered {
        (r.remove)();
    }
    health.inner.running.store(false, Ordering::SeqCst);
    result
}
