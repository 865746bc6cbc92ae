//! One benchmark client in its own process: lists and watches every Pod of the server
//! named by `--kubeconfig` with the client `--client`, and reports through stdout.
//!
//! Protocol: prints `SYNCED <secs>` once the initial list is complete in the client's
//! store; then waits for a `go <m>` line on stdin, prints `WAITING`, counts `m` MODIFIED
//! events through to a handler and prints `RESULT <synced secs> <events/s> <peak RSS>
//! <CPU secs>`. Then, optionally, the relist: on `relist` it notes its RSS (the steady
//! state), resets its peak and prints `RELIST-READY`; on `wait <namespace/name> <rv>`
//! (an object the server wrote after expiring the watch, so it can only arrive through
//! the relist and the watch after it) it waits until its store holds that object at
//! that resourceVersion or newer, lets the relist settle for a second and prints
//! `RELISTED <steady RSS> <peak RSS> <CPU secs of the relist>`.
//!
//! `--floor <m>` measures the decode floor instead: it reads every list page of the
//! server once, then on one thread decodes each item's bytes into a `Pod`, and `m`
//! watch lines made of the same bytes into a `{"type", "object": Pod}` event, and
//! prints `FLOOR <list CPU secs> <events CPU secs> <objects>`.

use std::future::Future;
use std::io::BufRead;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube_runtime::reflector::{self, ObjectRef};
use kube_runtime::watcher::{self, Event};
use kube_runtime::WatchStreamExt;
use kubegen_benchmarks::{
    cpu_seconds, peak_rss_bytes, reset_peak_rss, rss_bytes, thread_cpu_seconds, ClientKind,
    ClientResult, RelistResult,
};
use kubegen_runtime::cache::dynamic::MetadataSharedInformerFactory;
use kubegen_runtime::cache::factory::FactoryOptions;
use kubegen_runtime::cache::informer::{
    InformerOptions, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kubegen_runtime::client::metadata::PartialObjectMetadata;
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::object::{GroupVersionResource, Object, ObjectMeta};
use serde::Deserialize;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
struct Args {
    /// ours, kube, kube-strip, ours-meta, kube-meta or ours-proj.
    #[arg(long)]
    client: Option<ClientKind>,
    /// The server's kubeconfig.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Measure the decode floor for this many events instead of running a client.
    #[arg(long)]
    floor: Option<usize>,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The projection client's view of a Pod: what a controller placing or draining Pods
/// reads (labels and owners are in the metadata), decoded straight from the wire. The
/// benchmark measures holding these fields, not reading them.
#[derive(Clone, Debug, Deserialize)]
#[allow(dead_code)]
struct PodView {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: PodViewSpec,
    #[serde(default)]
    status: PodViewStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct PodViewSpec {
    node_name: Option<String>,
    #[serde(default)]
    containers: Vec<ContainerView>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[allow(dead_code)]
struct ContainerView {
    name: String,
    image: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct PodViewStatus {
    phase: Option<String>,
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
}

kubegen_runtime::projection!(PodView, Pod);

/// Counts MODIFIED events and wakes the main task when the target is reached.
struct Counter {
    seen: AtomicU64,
    target: AtomicU64,
    done: Notify,
}

impl Counter {
    fn hit(&self) {
        let n = self.seen.fetch_add(1, Ordering::AcqRel) + 1;
        let target = self.target.load(Ordering::Acquire);
        if target > 0 && n == target {
            self.done.notify_one();
        }
    }
}

/// The resourceVersion of the object `key` (`namespace/name`) in a client's store.
type StoreProbe = Box<dyn Fn(&str) -> Option<u64> + Send + Sync>;

fn rv_of(meta: &ObjectMeta) -> Option<u64> {
    meta.resource_version.as_deref()?.parse().ok()
}

fn object_ref<K: kube::Resource<DynamicType = ()>>(key: &str) -> ObjectRef<K> {
    match key.split_once('/') {
        Some((ns, name)) => ObjectRef::new(name).within(ns),
        None => ObjectRef::new(key),
    }
}

/// Runs a kubegen informer over `K` until synced; returns the probe of its store.
async fn run_ours<K>(
    client: kube::Client,
    counter: Arc<Counter>,
    stop: &CancellationToken,
) -> Result<StoreProbe, Error>
where
    K: Object + kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let informer = SharedIndexInformer::new(
        Arc::new(ResourceClient::<K>::all(client)),
        InformerOptions::default(),
    );
    run_informer(informer, counter, stop).await
}

/// Runs the generated typed informer of Pods (kubegen-kubernetes' factory, defaults:
/// the compact cache, or k8s-openapi's `Pod` with `own_type`) until synced.
async fn run_typed(
    client: kube::Client,
    own_type: bool,
    counter: Arc<Counter>,
    stop: &CancellationToken,
) -> Result<StoreProbe, Error> {
    let factory = kubegen_kubernetes::informers::SharedInformerFactory::new(
        kubegen_kubernetes::clientset::Clientset::new(client),
        Duration::ZERO,
    );
    let pods = factory.core().v1().pods();
    let probe = if own_type {
        run_informer(pods.k8s_openapi_informer(), counter, stop).await?
    } else {
        run_informer(pods.informer(), counter, stop).await?
    };
    // The informer runs on `stop`, not on the factory's start; the factory lives on.
    Ok(Box::new(move |key| {
        let _factory = &factory;
        probe(key)
    }))
}

/// Runs `informer` on `stop`, counting updates, until synced.
async fn run_informer<K: Object>(
    informer: SharedIndexInformer<K>,
    counter: Arc<Counter>,
    stop: &CancellationToken,
) -> Result<StoreProbe, Error> {
    informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(|_p: &Arc<K>, _initial| {})
            .update_func(move |_old: &Arc<K>, _new: &Arc<K>| counter.hit()),
    )?;
    tokio::spawn({
        let informer = informer.clone();
        let stop = stop.clone();
        async move { informer.run(stop).await }
    });
    while !informer.has_synced() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    eprintln!(
        "{} objects in the store at synced",
        informer.indexer().len()
    );
    let indexer = informer.indexer().clone();
    Ok(Box::new(move |key| {
        indexer.get_by_key(key).and_then(|o| rv_of(o.meta()))
    }))
}

/// Runs kube-runtime's reflector over `stream` until its initial list is done.
async fn run_kube<K>(
    reader: reflector::Store<K>,
    writer: reflector::store::Writer<K>,
    stream: Pin<Box<dyn futures::Stream<Item = Result<Event<K>, watcher::Error>> + Send>>,
    counter: Arc<Counter>,
    stop: &CancellationToken,
) -> Result<StoreProbe, Error>
where
    K: kube::Resource<DynamicType = ()> + Clone + Send + Sync + std::fmt::Debug + 'static,
{
    let (synced_tx, synced_rx) = tokio::sync::oneshot::channel();
    let stop = stop.clone();
    tokio::spawn(async move {
        let mut synced_tx = Some(synced_tx);
        let mut s = reflector::reflector(writer, stream).boxed();
        loop {
            let ev = tokio::select! {
                ev = s.next() => ev,
                _ = stop.cancelled() => break,
            };
            match ev {
                Some(Ok(Event::InitDone)) => {
                    if let Some(tx) = synced_tx.take() {
                        let _ = tx.send(());
                    }
                }
                Some(Ok(Event::Apply(_))) => counter.hit(),
                Some(Ok(_)) => {}
                Some(Err(e)) => eprintln!("bench-client: watcher error: {e}"),
                None => break,
            }
        }
    });
    synced_rx.await?;
    eprintln!("{} objects in the store at synced", reader.len());
    Ok(Box::new(move |key| {
        reader.get(&object_ref(key)).and_then(|o| rv_of(o.meta()))
    }))
}

fn start_client(
    kind: ClientKind,
    client: kube::Client,
    counter: Arc<Counter>,
    stop: &CancellationToken,
) -> Pin<Box<dyn Future<Output = Result<StoreProbe, Error>> + Send + '_>> {
    match kind {
        ClientKind::Ours => Box::pin(run_typed(client, false, counter, stop)),
        ClientKind::OursOpenapi => Box::pin(run_typed(client, true, counter, stop)),
        ClientKind::OursJson => Box::pin(run_ours::<kubegen_benchmarks::compact_pod::Pod>(
            kubegen_runtime::client::protobuf::json_only(client),
            counter,
            stop,
        )),
        ClientKind::OursProjection => Box::pin(run_ours::<PodView>(client, counter, stop)),
        ClientKind::OursMetadata => Box::pin(async move {
            let factory =
                MetadataSharedInformerFactory::new(client, FactoryOptions::new(Duration::ZERO));
            let pods = factory
                .for_resource(&GroupVersionResource::gvr("", "v1", "pods"))
                .await?;
            pods.informer().add_event_handler(
                ResourceEventHandlerFuncs::<PartialObjectMetadata>::new()
                    .add_func(|_p, _initial| {})
                    .update_func(move |_old, _new| counter.hit()),
            )?;
            factory.start(stop);
            while !pods.informer().has_synced() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let indexer = pods.informer().indexer().clone();
            eprintln!("{} objects in the store at synced", indexer.len());
            let probe: StoreProbe =
                Box::new(move |key| indexer.get_by_key(key).and_then(|o| rv_of(&o.metadata)));
            Ok(probe)
        }),
        ClientKind::KubeMetadata => {
            // kube-runtime's `metadata_watcher`, in the form kube 5 recommends (the
            // function itself is deprecated): an `Api` of `PartialObjectMeta<Pod>`.
            let api: kube::Api<kube::core::PartialObjectMeta<Pod>> = kube::Api::all(client);
            let (reader, writer) = reflector::store();
            let events = watcher::watcher(api, watcher::Config::default()).boxed();
            Box::pin(run_kube(reader, writer, events, counter, stop))
        }
        ClientKind::Kube | ClientKind::KubeStripped => {
            let api: kube::Api<Pod> = kube::Api::all(client);
            let (reader, writer) = reflector::store::<Pod>();
            let events = watcher::watcher(api, watcher::Config::default());
            let stream = if kind == ClientKind::KubeStripped {
                events
                    .modify(|p: &mut Pod| p.metadata.managed_fields = None)
                    .boxed()
            } else {
                events.boxed()
            };
            Box::pin(run_kube(reader, writer, stream, counter, stop))
        }
        ClientKind::Go | ClientKind::GoStripped => Box::pin(async move {
            Err::<StoreProbe, Error>(format!("{kind} is the go-informer program").into())
        }),
    }
}

/// Reads every page of the server's Pod list, then decodes on this one thread.
async fn floor(client: kube::Client, events: usize) -> Result<(), Error> {
    #[derive(Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        items: Vec<&'a serde_json::value::RawValue>,
        #[serde(default)]
        metadata: ListMeta,
    }
    #[derive(Deserialize, Default)]
    struct ListMeta {
        #[serde(rename = "continue", default)]
        continue_: Option<String>,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)] // decoded to be measured, never read
    struct Frame {
        #[serde(rename = "type")]
        ty: String,
        object: Pod,
    }
    let mut items: Vec<String> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut url = "/api/v1/pods?limit=500".to_owned();
        if let Some(t) = &token {
            url.push_str("&continue=");
            url.push_str(t);
        }
        let req = http::Request::get(url).body(Vec::new())?;
        let body = client.request_text(req).await?;
        let page: Page<'_> = serde_json::from_str(&body)?;
        items.extend(page.items.iter().map(|raw| raw.get().to_owned()));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    if items.is_empty() {
        return Err("the server has no Pods".into());
    }
    let lines: Vec<String> = (0..events)
        .map(|i| {
            format!(
                r#"{{"type":"MODIFIED","object":{}}}"#,
                items[i % items.len()]
            )
        })
        .collect();
    let (list_secs, event_secs) = tokio::task::spawn_blocking(move || {
        let cpu = || thread_cpu_seconds().unwrap_or(0.0);
        let t0 = cpu();
        for item in &items {
            let pod: Pod = serde_json::from_str(item)?;
            drop(std::hint::black_box(pod));
        }
        let t1 = cpu();
        for line in &lines {
            let frame: Frame = serde_json::from_str(line)?;
            drop(std::hint::black_box(frame));
        }
        let t2 = cpu();
        Ok::<_, serde_json::Error>((t1 - t0, t2 - t1))
    })
    .await??;
    println!("FLOOR {list_secs} {event_secs}");
    Ok(())
}

async fn next_line(lines: &mut mpsc::UnboundedReceiver<String>) -> Result<String, Error> {
    lines.recv().await.ok_or_else(|| "stdin closed".into())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let kc = kube::config::Kubeconfig::read_from(&args.kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    let client = kube::Client::try_from(config)?;
    if let Some(events) = args.floor {
        return floor(client, events).await;
    }
    let kind = args.client.ok_or("--client or --floor is required")?;

    let (line_tx, mut lines) = mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });

    let counter = Arc::new(Counter {
        seen: AtomicU64::new(0),
        target: AtomicU64::new(0),
        done: Notify::new(),
    });
    let stop = CancellationToken::new();
    let start = Instant::now();
    if std::env::var_os("BENCH_TRACE").is_some() {
        // Diagnostics: RSS and handled events twice a second.
        let c = counter.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            eprintln!(
                "trace {:.1}s VmRSS {} MiB cpu {:.2}s events={}",
                start.elapsed().as_secs_f64(),
                rss_bytes().unwrap_or(0) >> 20,
                cpu_seconds().unwrap_or(0.0),
                c.seen.load(Ordering::Relaxed)
            );
        });
    }
    let probe = start_client(kind, client, counter.clone(), &stop).await?;
    let synced_secs = start.elapsed().as_secs_f64();
    println!("SYNCED {synced_secs}");
    eprintln!(
        "{kind}: peak RSS at synced {} MiB",
        peak_rss_bytes().unwrap_or(0) >> 20
    );

    let target: u64 = loop {
        let line = next_line(&mut lines).await?;
        if let Some(m) = line.strip_prefix("go ") {
            break m.trim().parse()?;
        }
    };
    // Events seen before `go` (none expected) count towards the target.
    counter.target.store(target, Ordering::Release);
    let t0 = Instant::now();
    println!("WAITING");
    if counter.seen.load(Ordering::Acquire) < target {
        counter.done.notified().await;
    }
    let secs = t0.elapsed().as_secs_f64();
    let result = ClientResult {
        synced_secs,
        events_per_sec: target as f64 / secs,
        peak_rss: peak_rss_bytes().unwrap_or(0),
        cpu_secs: cpu_seconds().unwrap_or(0.0),
    };
    println!("{}", result.to_line());

    // The optional relist.
    let mut before = None;
    while let Ok(line) = next_line(&mut lines).await {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["relist"] => {
                let steady = rss_bytes().unwrap_or(0);
                reset_peak_rss()?;
                before = Some((steady, cpu_seconds().unwrap_or(0.0)));
                println!("RELIST-READY");
            }
            ["wait", key, rv] => {
                let (steady_rss, cpu0) = before.ok_or("wait before relist")?;
                let rv: u64 = rv.parse()?;
                while probe(key).is_none_or(|have| have < rv) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                // The object arrived with the list or the watch after it; the list's
                // other deltas may still be on their way into the store.
                tokio::time::sleep(Duration::from_secs(1)).await;
                let relist = RelistResult {
                    steady_rss,
                    peak_rss: peak_rss_bytes().unwrap_or(0),
                    cpu_secs: cpu_seconds().unwrap_or(0.0) - cpu0,
                };
                println!("{}", relist.to_line());
            }
            _ => break,
        }
    }
    stop.cancel();
    std::process::exit(0);
}
