//! The controller: a Pod informer (the built-in API's, whose cache is indexed by
//! namespace), a rate-limited work queue, `workers` workers, and the processor chain.
//!
//! Every Pod add or update enqueues its key; a worker reads the Pod from the lister,
//! asks [`decide`] what to do, and does it (or, with `dry_run`, only says so). Failures
//! are retried through the queue's rate limiter; a condition that is not old enough yet
//! is looked at again when it will be (`add_after`). What was done is recorded in
//! [`Outcomes`], so tests and the embedded demo can follow it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kubegen_kubernetes::clientset::Clientset;
use kubegen_kubernetes::compact::core::v1::Pod;
use kubegen_kubernetes::informers::SharedInformerFactory;
use kubegen_kubernetes::listers::core::v1::PodLister;
use kubegen_runtime::cache::informer::ResourceEventHandlerFuncs;
use kubegen_runtime::client::{DeleteOptions, Patch, PatchOptions, WriteOptions};
use kubegen_runtime::object::{object_key, split_meta_namespace_key};
use kubegen_runtime::record::{
    reference, ClientEventSink, EventBroadcaster, EventRecorder, EventSource, ObjectReference,
};
use kubegen_runtime::workqueue::RateLimitingQueue;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::processors::{decide, image_pull_failure, Action};

/// An error of one reconcile (retried through the rate limiter).
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// What the controller did, by kind of action (Pod or Deployment keys, `ns/name`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Done {
    /// Evicted Pods deleted.
    pub deleted_evicted: BTreeSet<String>,
    /// Stuck Pods force-deleted.
    pub force_deleted: BTreeSet<String>,
    /// Deployments scaled to zero.
    pub scaled_to_zero: BTreeSet<String>,
    /// Pods reported for restarts, with their count.
    pub reported: BTreeMap<String, i32>,
    /// Reconciles that failed and were retried.
    pub retries: usize,
}

/// A shared record of what was done.
#[derive(Debug, Clone, Default)]
pub struct Outcomes(Arc<Mutex<Done>>);

impl Outcomes {
    /// A copy of what was done so far.
    pub fn snapshot(&self) -> Done {
        self.0.lock().map(|d| d.clone()).unwrap_or_default()
    }

    fn with(&self, f: impl FnOnce(&mut Done)) {
        if let Ok(mut d) = self.0.lock() {
            f(&mut d);
        }
    }
}

/// How the controller acts.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Say what would be done, change nothing.
    pub dry_run: bool,
}

struct Worker {
    cs: Clientset,
    config: Config,
    options: Options,
    lister: PodLister,
    queue: RateLimitingQueue<String>,
    pull_failing_since: Mutex<BTreeMap<String, Timestamp>>,
    recorder: Arc<dyn EventRecorder>,
    /// Deletes begun and not seen through (a retry may find the Pod already gone).
    deleting: Mutex<BTreeMap<String, Deleting>>,
    outcomes: Outcomes,
}

#[derive(Debug, Clone, Copy)]
enum Deleting {
    Evicted,
    Stuck,
}

/// Runs until `stop` fires: informer, queue, workers. Returns when all have ended.
pub async fn run(
    cs: Clientset,
    config: Config,
    options: Options,
    outcomes: Outcomes,
    stop: CancellationToken,
) -> Result<(), Error> {
    let factory = SharedInformerFactory::new(cs.clone(), Duration::from_secs(60));
    let pods = factory.core().v1().pods();
    let queue = RateLimitingQueue::<String>::new();
    let (on_add, on_update) = (queue.clone(), queue.clone());
    pods.informer().add_event_handler(
        ResourceEventHandlerFuncs::<Pod>::new()
            .add_func(move |pod, _| on_add.add(object_key(pod.as_ref())))
            .update_func(move |_, pod| on_update.add(object_key(pod.as_ref()))),
    )?;
    // Events go to the cluster through one broadcaster (client-go's tools/record): its
    // correlator counts repeats and its spam filter caps them.
    let broadcaster = EventBroadcaster::new();
    let sink = broadcaster.start_recording_to_sink(ClientEventSink::new(cs.client().clone()));
    let recorder: Arc<dyn EventRecorder> =
        Arc::new(broadcaster.new_recorder(EventSource::new("pod-cleaner", "")));
    factory.start();
    factory.wait_for_cache_sync().await;
    log(&format!("caches synced; {} workers", config.workers.max(1)));
    let worker = Arc::new(Worker {
        cs,
        lister: pods.lister(),
        queue: queue.clone(),
        pull_failing_since: Mutex::new(BTreeMap::new()),
        recorder,
        deleting: Mutex::new(BTreeMap::new()),
        outcomes,
        config,
        options,
    });
    let mut tasks = Vec::new();
    for _ in 0..worker.config.workers.max(1) {
        let w = Arc::clone(&worker);
        tasks.push(tokio::spawn(async move { w.work().await }));
    }
    stop.cancelled().await;
    log("stopping: draining the queue");
    queue.shut_down();
    for t in tasks {
        let _ = t.await;
    }
    factory.shutdown().await;
    broadcaster.shutdown();
    sink.join().await;
    log("stopped");
    Ok(())
}

/// A log line a person can follow (stderr, so stdout stays free for tools).
pub fn log(line: &str) {
    eprintln!("pod-cleaner: {line}");
}

impl Worker {
    async fn work(&self) {
        while let Some(key) = self.queue.get().await {
            match self.reconcile(&key).await {
                Ok(()) => self.queue.forget(&key),
                Err(e) => {
                    log(&format!("{key}: {e}; retrying"));
                    self.outcomes.with(|d| d.retries += 1);
                    self.queue.add_rate_limited(key.clone());
                }
            }
            self.queue.done(&key);
        }
    }

    async fn reconcile(&self, key: &str) -> Result<(), Error> {
        let (namespace, name) = split_meta_namespace_key(key)?;
        let pod = match self.lister.pods(namespace).get(name) {
            Ok(pod) => pod,
            Err(e) if e.is_not_found() => {
                self.forget_pull_failure(key);
                self.deleted(key);
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let now = Timestamp::now();
        let first_failure = if image_pull_failure(&pod).is_some() {
            let mut seen = self.pull_failing_since.lock().map_err(|_| "poisoned")?;
            Some(*seen.entry(key.to_owned()).or_insert(now))
        } else {
            self.forget_pull_failure(key);
            None
        };
        for action in decide(&pod, &self.config.processors, now, first_failure) {
            self.act(key, namespace, name, &pod, action).await?;
        }
        Ok(())
    }

    /// Records a delete this controller began as done (the Pod is gone).
    fn deleted(&self, key: &str) {
        let begun = self.deleting.lock().ok().and_then(|mut d| d.remove(key));
        match begun {
            Some(Deleting::Evicted) => self.outcomes.with(|d| {
                d.deleted_evicted.insert(key.to_owned());
            }),
            Some(Deleting::Stuck) => self.outcomes.with(|d| {
                d.force_deleted.insert(key.to_owned());
            }),
            None => {}
        }
    }

    fn begin_delete(&self, key: &str, what: Deleting) {
        if let Ok(mut d) = self.deleting.lock() {
            d.insert(key.to_owned(), what);
        }
    }

    fn forget_pull_failure(&self, key: &str) {
        if let Ok(mut seen) = self.pull_failing_since.lock() {
            seen.remove(key);
        }
    }

    async fn act(
        &self,
        key: &str,
        ns: &str,
        name: &str,
        pod: &Pod,
        action: Action,
    ) -> Result<(), Error> {
        let pods = self.cs.core_v1().pods(ns);
        let dry = if self.options.dry_run {
            "(dry run) would "
        } else {
            ""
        };
        match action {
            Action::RecheckAfter(after) => self.queue.add_after(key.to_owned(), after),
            Action::DeleteEvicted => {
                log(&format!("{key}: evicted by the kubelet; {dry}delete it"));
                if !self.options.dry_run {
                    self.recorder.event(
                        &reference(pod),
                        "Normal",
                        "EvictedPodDeleted",
                        "Deleted a Pod evicted by the kubelet",
                    );
                    self.begin_delete(key, Deleting::Evicted);
                    ignore_not_found(pods.delete(name, &DeleteOptions::default()).await)?;
                    self.deleted(key);
                }
            }
            Action::ForceDelete {
                remove_finalizers,
                terminating_for,
            } => {
                log(&format!(
                    "{key}: terminating for {}s; {dry}force-delete it{}",
                    terminating_for.as_secs(),
                    if remove_finalizers {
                        " (finalizers removed)"
                    } else {
                        ""
                    }
                ));
                if !self.options.dry_run {
                    self.recorder.eventf(
                        &reference(pod),
                        "Warning",
                        "ForceDeleted",
                        format_args!(
                            "Terminating for {}s: deleted with grace period 0",
                            terminating_for.as_secs()
                        ),
                    );
                    self.begin_delete(key, Deleting::Stuck);
                    if remove_finalizers
                        && pod
                            .metadata
                            .finalizers
                            .as_ref()
                            .is_some_and(|f| !f.is_empty())
                    {
                        let patch =
                            Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}}));
                        ignore_not_found(pods.patch(name, &patch, &PatchOptions::default()).await)?;
                    }
                    let opts = DeleteOptions {
                        grace_period_seconds: Some(0),
                        ..DeleteOptions::default()
                    };
                    ignore_not_found(pods.delete(name, &opts).await)?;
                    self.deleted(key);
                }
            }
            Action::ScaleOwnerToZero { container, reason } => {
                let Some(deployment) = self.owning_deployment(ns, pod).await? else {
                    log(&format!("{key}: container {container} in {reason}, but no Deployment owns the Pod; leaving it"));
                    return Ok(());
                };
                let dkey = format!("{ns}/{deployment}");
                if self.outcomes.snapshot().scaled_to_zero.contains(&dkey) {
                    return Ok(());
                }
                log(&format!(
                    "{key}: container {container} in {reason}; {dry}scale Deployment {dkey} to 0"
                ));
                if !self.options.dry_run {
                    let deployments = self.cs.apps_v1().deployments(ns);
                    let mut scale = deployments.get_scale(&deployment).await?;
                    if let Some(spec) = scale.spec.as_mut() {
                        spec.replicas = Some(0);
                    }
                    deployments
                        .update_scale(&deployment, &scale, &WriteOptions::default())
                        .await?;
                    let target = ObjectReference {
                        api_version: Some("apps/v1".into()),
                        kind: Some("Deployment".into()),
                        name: Some(deployment.clone()),
                        namespace: Some(ns.to_owned()),
                        uid: scale.metadata.uid.clone(),
                        ..ObjectReference::default()
                    };
                    self.recorder.eventf(
                        &target,
                        "Warning",
                        "ScaledToZero",
                        format_args!(
                            "Pod {name}: container {container} in {reason}; scaled to 0 replicas"
                        ),
                    );
                    self.outcomes.with(|d| {
                        d.scaled_to_zero.insert(dkey);
                    });
                }
            }
            Action::ReportRestarts { restarts } => {
                let already = self.outcomes.snapshot().reported.get(key) == Some(&restarts);
                if !already {
                    log(&format!(
                        "{key}: restarted {restarts} times (more than {})",
                        self.config.processors.restarts.max_restarts
                    ));
                    if !self.options.dry_run {
                        self.recorder.eventf(
                            &reference(pod),
                            "Warning",
                            "TooManyRestarts",
                            format_args!("Containers restarted {restarts} times"),
                        );
                    }
                    if let Some(url) = &self.config.processors.restarts.webhook {
                        if !self.options.dry_run {
                            let body = serde_json::json!({"pod": key, "restarts": restarts});
                            if let Err(e) = crate::webhook::post(url, &body).await {
                                log(&format!("{key}: webhook {url}: {e}"));
                            }
                        }
                    }
                    self.outcomes.with(|d| {
                        d.reported.insert(key.to_owned(), restarts);
                    });
                }
            }
        }
        Ok(())
    }

    /// The Deployment owning a Pod through its ReplicaSet (controller owner references).
    async fn owning_deployment(&self, ns: &str, pod: &Pod) -> Result<Option<String>, Error> {
        let Some(rs_name) = controller_owner(&pod.metadata.owner_references, "ReplicaSet") else {
            return Ok(None);
        };
        let rs = match self.cs.apps_v1().replica_sets(ns).get(&rs_name).await {
            Ok(rs) => rs,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(controller_owner(
            &rs.metadata.owner_references,
            "Deployment",
        ))
    }
}

fn controller_owner(
    refs: &Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>,
    kind: &str,
) -> Option<String> {
    refs.iter()
        .flatten()
        .find(|r| r.kind == kind && r.controller == Some(true))
        .map(|r| r.name.clone())
}

fn ignore_not_found<T>(r: Result<T, kubegen_runtime::client::Error>) -> Result<(), Error> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}
