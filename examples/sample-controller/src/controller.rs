//! The Foo controller, as kubernetes/sample-controller's `controller.go`:
//!
//! - a Foo informer and a Deployment informer from one shared factory (the built-in
//!   API's and this crate's generated one over one runtime factory and one client);
//! - Foo adds and updates enqueue the Foo; Deployment adds, updates and deletes enqueue
//!   the Foo that controls the Deployment (its controller owner reference);
//! - `workers` workers take keys from a rate-limited queue; a failed sync is retried
//!   through the rate limiter, a successful one forgotten;
//! - a sync ensures the Deployment `spec.deploymentName` exists, owned by the Foo (an
//!   nginx Pod template, `spec.replicas`), brings its replicas back to the Foo's when
//!   they drift, and writes the Deployment's available replicas to the Foo's status;
//! - a Deployment of that name that the Foo does not own records a Warning event
//!   `ErrResourceExists` and the Foo is retried; a Foo without `deploymentName` is
//!   reported and not retried; every successful sync records a Normal `Synced` event.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kubegen_kubernetes::compact::apps::v1::Deployment as CachedDeployment;
use kubegen_kubernetes::listers::apps::v1::DeploymentLister;
use kubegen_runtime::cache::informer::{DeltaObject, ResourceEventHandlerFuncs};
use kubegen_runtime::client::WriteOptions;
use kubegen_runtime::object::{object_key, split_meta_namespace_key};
use kubegen_runtime::record::{
    reference, ClientEventSink, EventBroadcaster, EventRecorder, EventSource,
};
use kubegen_runtime::workqueue::RateLimitingQueue;
use tokio_util::sync::CancellationToken;

use crate::apis::samplecontroller::v1alpha1::{Foo, FooStatus};
use crate::generated::clientset::Clientset;
use crate::generated::listers::samplecontroller::v1alpha1::FooLister;

/// The error of one sync.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

// What the controller may do, as controller-gen reads it from Go: `kubegen rbac` writes
// rbac/role.yaml from these lines (hack/update-codegen.sh; hack/verify-codegen.sh checks
// it is current).
// +kubebuilder:rbac:groups=samplecontroller.k8s.io,resources=foos,verbs=get;list;watch
// +kubebuilder:rbac:groups=samplecontroller.k8s.io,resources=foos/status,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

/// The agent name events carry.
pub const CONTROLLER_AGENT_NAME: &str = "sample-controller";
/// Event reason of a successful sync.
pub const SUCCESS_SYNCED: &str = "Synced";
/// Event reason when the Deployment exists and the Foo does not own it.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Event message of a successful sync.
pub const MESSAGE_RESOURCE_SYNCED: &str = "Foo synced successfully";

/// A log line a person can follow.
pub fn log(line: &str) {
    eprintln!("sample-controller: {line}");
}

/// The controller's clients: this crate's generated clientset and the built-in API's,
/// over one `kube::Client`.
#[derive(Clone, Debug)]
pub struct Clients {
    /// Foos.
    pub foos: Clientset,
    /// Deployments.
    pub kube: kubegen_kubernetes::clientset::Clientset,
}

impl Clients {
    /// Both clientsets over `client`.
    pub fn new(client: kube::Client) -> Self {
        Clients {
            foos: Clientset::new(client.clone()),
            kube: kubegen_kubernetes::clientset::Clientset::new(client),
        }
    }
}

struct Controller {
    clients: Clients,
    foos: FooLister,
    deployments: DeploymentLister,
    queue: RateLimitingQueue<String>,
    recorder: Arc<dyn EventRecorder>,
}

/// Runs the controller with `workers` workers until `stop` fires: waits for the caches,
/// processes the queue, then shuts the queue down (in-flight syncs finish) and stops
/// the informers.
pub async fn run(clients: Clients, workers: usize, stop: CancellationToken) -> Result<(), Error> {
    let builtin = kubegen_kubernetes::informers::SharedInformerFactory::new(
        clients.kube.clone(),
        Duration::from_secs(30),
    );
    let factory = crate::generated::informers::SharedInformerFactory::from_shared(
        builtin.factory().clone(),
        builtin.stop_token().clone(),
    );
    let foo_informer = factory.samplecontroller().v1alpha1().foos();
    let deployment_informer = builtin.apps().v1().deployments();
    let queue = RateLimitingQueue::<String>::new();

    let (on_add, on_update) = (queue.clone(), queue.clone());
    foo_informer.informer().add_event_handler(
        ResourceEventHandlerFuncs::<Foo>::new()
            .add_func(move |foo, _| on_add.add(object_key(foo.as_ref())))
            .update_func(move |_, foo| on_update.add(object_key(foo.as_ref()))),
    )?;
    let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
    deployment_informer.informer().add_event_handler(
        ResourceEventHandlerFuncs::<CachedDeployment>::new()
            .add_func(move |d, _| enqueue_owner(&on_add, d))
            .update_func(move |old, new| {
                // Periodic resyncs send the same Deployment: nothing changed.
                if old.metadata.resource_version != new.metadata.resource_version {
                    enqueue_owner(&on_update, new);
                }
            })
            .delete_func(move |d: &DeltaObject<CachedDeployment>| {
                // A tombstone (deletion seen by a relist) carries the last known state.
                if let Some(d) = d.object() {
                    enqueue_owner(&on_delete, d);
                }
            }),
    )?;

    let broadcaster = EventBroadcaster::new();
    let _logging = broadcaster.start_logging();
    let sink =
        broadcaster.start_recording_to_sink(ClientEventSink::new(clients.foos.client().clone()));
    let recorder: Arc<dyn EventRecorder> =
        Arc::new(broadcaster.new_recorder(EventSource::new(CONTROLLER_AGENT_NAME, "")));

    log("starting the Foo and Deployment informers");
    builtin.start();
    let synced = builtin.wait_for_cache_sync().await;
    if !synced.values().all(|s| *s) {
        return Err(format!("caches did not sync: {synced:?}").into());
    }
    let controller = Arc::new(Controller {
        clients,
        foos: foo_informer.lister(),
        deployments: deployment_informer.lister(),
        queue: queue.clone(),
        recorder,
    });
    log(&format!("caches synced; starting {workers} workers"));
    let mut tasks = Vec::new();
    for _ in 0..workers.max(1) {
        let c = Arc::clone(&controller);
        tasks.push(tokio::spawn(async move { c.run_worker().await }));
    }
    stop.cancelled().await;
    log("shutting down: draining the queue");
    queue.shut_down();
    for t in tasks {
        let _ = t.await;
    }
    builtin.shutdown().await;
    broadcaster.shutdown();
    sink.join().await;
    log("workers and informers stopped");
    Ok(())
}

/// Enqueues the Foo that controls `d`, if one does (sample-controller's handleObject).
fn enqueue_owner(queue: &RateLimitingQueue<String>, d: &CachedDeployment) {
    let owner = d
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true) && r.kind == "Foo");
    if let (Some(owner), Some(ns)) = (owner, d.metadata.namespace.as_deref()) {
        queue.add(format!("{ns}/{}", owner.name));
    }
}

impl Controller {
    async fn run_worker(&self) {
        while let Some(key) = self.queue.get().await {
            match self.sync_handler(&key).await {
                Ok(()) => self.queue.forget(&key),
                Err(e) => {
                    log(&format!("error syncing {key:?}: {e}, requeuing"));
                    self.queue.add_rate_limited(key.clone());
                }
            }
            self.queue.done(&key);
        }
    }

    async fn sync_handler(&self, key: &str) -> Result<(), Error> {
        let (namespace, name) = split_meta_namespace_key(key)?;
        let foo = match self.foos.foos(namespace).get(name) {
            Ok(foo) => foo,
            Err(e) if e.is_not_found() => {
                log(&format!("foo {key:?} in work queue no longer exists"));
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let deployment_name = foo.spec.deployment_name.as_str();
        if deployment_name.is_empty() {
            // Retrying cannot help until the Foo changes (which enqueues it again).
            log(&format!("{key}: deployment name must be specified"));
            return Ok(());
        }
        let deployments = self.clients.kube.apps_v1().deployments(namespace);
        let mut deployment = match self.deployments.deployments(namespace).get(deployment_name) {
            // The cache holds the compact mirror: a copy converts to k8s-openapi's type.
            Ok(d) => Deployment::from(CachedDeployment::clone(&d)),
            Err(e) if e.is_not_found() => {
                log(&format!(
                    "{key}: creating Deployment {namespace}/{deployment_name}"
                ));
                deployments
                    .create(&new_deployment(&foo), &WriteOptions::default())
                    .await?
            }
            Err(e) => return Err(e.into()),
        };
        if !is_controlled_by(&deployment, &foo) {
            let message =
                format!("Resource {deployment_name:?} already exists and is not managed by Foo");
            self.recorder.event(
                &reference(foo.as_ref()),
                "Warning",
                ERR_RESOURCE_EXISTS,
                &message,
            );
            return Err(message.into());
        }
        if let Some(want) = foo.spec.replicas {
            if deployment.spec.replicas != Some(want) {
                log(&format!(
                    "{key}: Foo replicas {want}, Deployment replicas {:?}: updating",
                    deployment.spec.replicas
                ));
                deployment.spec.replicas = Some(want);
                deployment = deployments
                    .update(&deployment, &WriteOptions::default())
                    .await?;
            }
        }
        self.update_foo_status(&foo, &deployment).await?;
        self.recorder.event(
            &reference(foo.as_ref()),
            "Normal",
            SUCCESS_SYNCED,
            MESSAGE_RESOURCE_SYNCED,
        );
        Ok(())
    }

    async fn update_foo_status(&self, foo: &Foo, deployment: &Deployment) -> Result<(), Error> {
        let available = deployment
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        if foo.status.as_ref().map(|s| s.available_replicas) == Some(available) {
            return Ok(());
        }
        // Never change the cache's object: update a copy (client-go's DeepCopy).
        let mut copy = foo.clone();
        copy.status = Some(FooStatus {
            available_replicas: available,
        });
        let namespace = foo.metadata.namespace.as_deref().unwrap_or_default();
        self.clients
            .foos
            .samplecontroller_v1alpha1()
            .foos(namespace)
            .update_status(&copy, &WriteOptions::default())
            .await?;
        Ok(())
    }
}

fn is_controlled_by(d: &Deployment, foo: &Foo) -> bool {
    d.metadata.owner_references.iter().flatten().any(|r| {
        r.controller == Some(true) && r.kind == "Foo" && Some(&r.uid) == foo.metadata.uid.as_ref()
    })
}

/// The Deployment a Foo owns: nginx Pods labelled `app=nginx, controller=<foo>`.
pub fn new_deployment(foo: &Foo) -> Deployment {
    let name = foo.metadata.name.clone().unwrap_or_default();
    let labels: BTreeMap<String, String> = [
        ("app".to_owned(), "nginx".to_owned()),
        ("controller".to_owned(), name.clone()),
    ]
    .into_iter()
    .collect();
    Deployment {
        metadata: ObjectMeta {
            name: Some(foo.spec.deployment_name.clone()),
            namespace: foo.metadata.namespace.clone(),
            owner_references: Some(vec![OwnerReference {
                api_version: "samplecontroller.k8s.io/v1alpha1".into(),
                kind: "Foo".into(),
                name,
                uid: foo.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: foo.spec.replicas,
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:latest".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    }
}
