//! A complete controller on the in-memory API server: informer -> event handler ->
//! rate-limiting workqueue -> workers -> API writes, with graceful shutdown.
//!
//! The controller keeps an annotation `example.kubegen.io/checksum` on every ConfigMap of
//! namespace `demo` equal to a checksum of the ConfigMap's data. The program seeds a few
//! ConfigMaps, waits until the controller has annotated them all, changes and deletes
//! some (as a user would), waits again, then shuts down and prints what it did.
//!
//! ```text
//! cargo run -p kubegen-runtime --example controller --features testing
//! ```
//!
//! The shape is client-go's: event handlers only put keys (`namespace/name`) on the
//! queue; workers take a key, read the object from the informer's cache, and on a needed
//! change read the live object with a `ResourceClient` and write it back. A failed key
//! goes back on the queue with the rate limiter's backoff; a successful one is
//! forgotten by the rate limiter. Shutdown stops the informer first (no new keys), then
//! drains the queue (keys being worked on finish), then waits for the workers.

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::cache::informer::{DeltaObject, ResourceEventHandlerFuncs};
use kubegen_runtime::cache::lister::Lister;
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::object::object_key;
use kubegen_runtime::testing::ApiServer;
use kubegen_runtime::workqueue::{QueueOptions, RateLimitingQueue};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

type BoxError = Box<dyn Error + Send + Sync>;

const NAMESPACE: &str = "demo";
const ANNOTATION: &str = "example.kubegen.io/checksum";
const SEEDED: usize = 5;
const WORKERS: usize = 2;

/// FNV-1a over the sorted data: stable across runs and platforms.
fn checksum(data: Option<&BTreeMap<String, String>>) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in data.into_iter().flatten() {
        for b in k.bytes().chain([0]).chain(v.bytes()).chain([0]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

fn annotation(cm: &ConfigMap) -> Option<&str> {
    cm.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION))
        .map(String::as_str)
}

/// What the controller needs to do its work; shared by the workers.
struct Controller {
    queue: RateLimitingQueue<String>,
    lister: Lister<ConfigMap>,
    live: ResourceClient<ConfigMap>,
    api: Api<ConfigMap>,
    /// Makes the first write fail once, to show a retry through the rate limiter.
    fail_once: AtomicBool,
    reconciles: AtomicUsize,
    writes: AtomicUsize,
    retries: AtomicUsize,
}

enum Outcome {
    UpToDate,
    Annotated(String),
    Gone,
}

impl Controller {
    async fn reconcile(&self, key: &str) -> Result<Outcome, BoxError> {
        let (_, name) = key.split_once('/').ok_or("keys are namespace/name")?;
        // The cache first: cheap, and enough to decide that nothing needs doing.
        let cached = match self.lister.namespaced(NAMESPACE).get(name) {
            Ok(cm) => cm,
            Err(err) if err.is_not_found() => return Ok(Outcome::Gone),
            Err(err) => return Err(err.into()),
        };
        if annotation(&cached) == Some(checksum(cached.data.as_ref()).as_str()) {
            return Ok(Outcome::UpToDate);
        }
        // A change is needed: start from the live object (the cache may lag behind).
        let mut live = match self.live.get(name).await {
            Ok(cm) => cm,
            Err(err) if err.is_not_found() => return Ok(Outcome::Gone),
            Err(err) => return Err(err.into()),
        };
        let want = checksum(live.data.as_ref());
        if annotation(&live) == Some(want.as_str()) {
            return Ok(Outcome::UpToDate);
        }
        if self.fail_once.swap(false, Ordering::SeqCst) {
            return Err(format!("simulated failure writing {key}").into());
        }
        live.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(ANNOTATION.to_owned(), want.clone());
        // The write carries the resourceVersion read: a concurrent change is a 409
        // Conflict, and the key is retried.
        self.api
            .replace(name, &PostParams::default(), &live)
            .await?;
        self.writes.fetch_add(1, Ordering::SeqCst);
        Ok(Outcome::Annotated(want))
    }

    async fn worker(self: Arc<Self>, id: usize) {
        while let Some(key) = self.queue.get().await {
            self.reconciles.fetch_add(1, Ordering::SeqCst);
            match self.reconcile(&key).await {
                Ok(outcome) => {
                    match outcome {
                        Outcome::UpToDate => println!("  worker {id}: {key} is up to date"),
                        Outcome::Annotated(sum) => {
                            println!("  worker {id}: {key} annotated with checksum {sum}")
                        }
                        Outcome::Gone => println!("  worker {id}: {key} is gone, nothing to do"),
                    }
                    self.queue.forget(&key);
                }
                Err(err) => {
                    self.retries.fetch_add(1, Ordering::SeqCst);
                    println!(
                        "  worker {id}: {key} failed ({err}); retry #{} after backoff",
                        self.queue.num_requeues(&key) + 1
                    );
                    self.queue.add_rate_limited(key.clone());
                }
            }
            self.queue.done(&key);
        }
        println!("  worker {id}: queue shut down, exiting");
    }
}

/// Waits (polling, at most 10 s) until every ConfigMap on the server carries the
/// checksum of its data.
async fn converged(server: &ApiServer, names: &[String]) -> Result<(), BoxError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut done = true;
        for name in names {
            let Some(obj) = server.get("configmaps", NAMESPACE, name)? else {
                continue;
            };
            let cm: ConfigMap = serde_json::from_value(obj)?;
            if annotation(&cm) != Some(checksum(cm.data.as_ref()).as_str()) {
                done = false;
            }
        }
        if done {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err("the controller did not converge within 10s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn config_map(name: &str, value: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {"value": value},
    })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), NAMESPACE);

    println!("seeding {SEEDED} ConfigMaps in namespace {NAMESPACE}");
    let names: Vec<String> = (0..SEEDED).map(|i| format!("cm-{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        server.create("configmaps", config_map(name, &format!("v{i}")))?;
    }

    // One shared informer for ConfigMaps in the namespace; its handler only enqueues keys.
    let factory = InformerFactory::new(
        client.clone(),
        FactoryOptions::new(Duration::ZERO).namespace(NAMESPACE),
    );
    let informer = factory.informer::<ConfigMap>();
    let queue = RateLimitingQueue::with_config(QueueOptions::default().name("configmaps"));
    let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
    informer.add_event_handler(
        ResourceEventHandlerFuncs::<ConfigMap>::new()
            .add_func(move |cm, initial| {
                let key = object_key(cm.as_ref());
                println!("handler: add {key} (initial list: {initial})");
                q1.add(key);
            })
            .update_func(move |old, new| {
                let key = object_key(new.as_ref());
                let rv = |cm: &ConfigMap| cm.metadata.resource_version.clone().unwrap_or_default();
                println!(
                    "handler: update {key} (resourceVersion {} -> {})",
                    rv(old),
                    rv(new)
                );
                q2.add(key);
            })
            .delete_func(move |obj| {
                let key = match obj {
                    DeltaObject::Object(cm) => object_key(cm.as_ref()),
                    DeltaObject::Tombstone(t) => t.key.clone(),
                };
                println!("handler: delete {key}");
                q3.add(key);
            }),
    )?;

    let stop = CancellationToken::new();
    factory.start(&stop);
    let synced = factory.wait_for_cache_sync(&stop).await;
    if !synced.values().all(|s| *s) {
        return Err("the informer did not sync".into());
    }
    println!(
        "informer cache synced: {} ConfigMaps",
        informer.indexer().len()
    );

    let controller = Arc::new(Controller {
        queue: queue.clone(),
        lister: informer.lister(),
        live: ResourceClient::namespaced(client.clone(), NAMESPACE),
        api: Api::namespaced(client, NAMESPACE),
        fail_once: AtomicBool::new(true),
        reconciles: AtomicUsize::new(0),
        writes: AtomicUsize::new(0),
        retries: AtomicUsize::new(0),
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|id| tokio::spawn(Arc::clone(&controller).worker(id)))
        .collect();
    println!("started {WORKERS} workers");

    converged(&server, &names).await?;
    println!("all {SEEDED} ConfigMaps carry their checksum");

    println!("a user changes cm-0 and cm-3 and deletes cm-4");
    for name in ["cm-0", "cm-3"] {
        let mut obj = server
            .get("configmaps", NAMESPACE, name)?
            .ok_or("seeded object missing")?;
        obj["data"]["value"] = json!(format!("{name} changed"));
        server.update("configmaps", obj)?;
    }
    server.delete("configmaps", NAMESPACE, "cm-4")?;
    converged(&server, &names).await?;
    let lister = informer.lister();
    tokio::time::timeout(Duration::from_secs(10), async {
        while lister.namespaced(NAMESPACE).get("cm-4").is_ok() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await?;
    println!("the controller caught up: cm-0 and cm-3 re-annotated, cm-4 gone from the cache");

    println!("shutting down: informers first, then the queue (draining), then the workers");
    stop.cancel();
    factory.shutdown().await;
    queue.shut_down_with_drain().await;
    for worker in workers {
        worker.await?;
    }
    println!(
        "done: {} reconciles, {} writes, {} retries; {} ConfigMaps left",
        controller.reconciles.load(Ordering::SeqCst),
        controller.writes.load(Ordering::SeqCst),
        controller.retries.load(Ordering::SeqCst),
        lister.list(&Default::default()).len()
    );
    Ok(())
}
