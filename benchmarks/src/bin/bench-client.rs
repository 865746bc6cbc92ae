//! One benchmark client in its own process: lists and watches every Pod of the server
//! named by `--kubeconfig` with the client `--client`, and reports through stdout.
//!
//! Protocol: prints `SYNCED <secs>` once the initial list is complete in the client's
//! store; then waits for a `go <m>` line on stdin, prints `WAITING`, counts `m` MODIFIED
//! events through to a handler and prints `RESULT <synced secs> <events/s> <peak RSS>`.

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube_runtime::reflector;
use kube_runtime::watcher::{self, Event};
use kube_runtime::WatchStreamExt;
use kubegen_benchmarks::{peak_rss_bytes, ClientKind, ClientResult};
use kubegen_runtime::cache::dynamic::MetadataSharedInformerFactory;
use kubegen_runtime::cache::factory::FactoryOptions;
use kubegen_runtime::cache::informer::{
    InformerConfig, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kubegen_runtime::client::metadata::PartialObjectMetadata;
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::object::GroupVersionResource;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
struct Args {
    /// ours, kube, kube-strip, ours-meta or kube-meta.
    #[arg(long)]
    client: ClientKind,
    /// The server's kubeconfig.
    #[arg(long)]
    kubeconfig: PathBuf,
}

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let kc = kube::config::Kubeconfig::read_from(&args.kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    let client = kube::Client::try_from(config)?;

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
            let rss = std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("VmRSS:"))
                        .map(|l| l.to_owned())
                })
                .unwrap_or_default();
            eprintln!(
                "trace {:.1}s {rss} events={}",
                start.elapsed().as_secs_f64(),
                c.seen.load(Ordering::Relaxed)
            );
        });
    }
    let synced_secs = match args.client {
        ClientKind::Ours => {
            let informer = SharedIndexInformer::new(
                Arc::new(ResourceClient::<Pod>::all(client)),
                InformerConfig::default(),
            );
            let c = counter.clone();
            informer.add_event_handler(
                ResourceEventHandlerFuncs::new()
                    .add_func(|_p: &Arc<Pod>, _initial| {})
                    .update_func(move |_old: &Arc<Pod>, _new: &Arc<Pod>| c.hit()),
            )?;
            tokio::spawn({
                let informer = informer.clone();
                let stop = stop.clone();
                async move { informer.run(stop).await }
            });
            while !informer.has_synced() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "{}: {} objects in the store at synced",
                args.client,
                informer.indexer().len()
            );
            secs
        }
        ClientKind::OursMetadata => {
            let factory =
                MetadataSharedInformerFactory::new(client, FactoryOptions::new(Duration::ZERO));
            let pods = factory
                .for_resource(&GroupVersionResource::gvr("", "v1", "pods"))
                .await?;
            let c = counter.clone();
            pods.informer().add_event_handler(
                ResourceEventHandlerFuncs::<PartialObjectMetadata>::new()
                    .add_func(|_p, _initial| {})
                    .update_func(move |_old, _new| c.hit()),
            )?;
            factory.start(&stop);
            while !pods.informer().has_synced() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "{}: {} objects in the store at synced",
                args.client,
                pods.informer().indexer().len()
            );
            secs
        }
        ClientKind::KubeMetadata => {
            // kube-runtime's `metadata_watcher`, in the form kube 5 recommends (the
            // function itself is deprecated): an `Api` of `PartialObjectMeta<Pod>`.
            let api: kube::Api<kube::core::PartialObjectMeta<Pod>> = kube::Api::all(client);
            let (reader, writer) = reflector::store::<kube::core::PartialObjectMeta<Pod>>();
            let events = watcher::watcher(api, watcher::Config::default()).boxed();
            let (synced_tx, synced_rx) = tokio::sync::oneshot::channel();
            let c = counter.clone();
            let stop2 = stop.clone();
            tokio::spawn(async move {
                let mut synced_tx = Some(synced_tx);
                let mut s = reflector::reflector(writer, events).boxed();
                loop {
                    let ev = tokio::select! {
                        ev = s.next() => ev,
                        _ = stop2.cancelled() => break,
                    };
                    match ev {
                        Some(Ok(Event::InitDone)) => {
                            if let Some(tx) = synced_tx.take() {
                                let _ = tx.send(());
                            }
                        }
                        Some(Ok(Event::Apply(_))) => c.hit(),
                        Some(Ok(_)) => {}
                        Some(Err(e)) => eprintln!("bench-client: watcher error: {e}"),
                        None => break,
                    }
                }
            });
            synced_rx.await?;
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "{}: {} objects in the store at synced",
                args.client,
                reader.len()
            );
            drop(reader);
            secs
        }
        ClientKind::Kube | ClientKind::KubeStripped => {
            let api: kube::Api<Pod> = kube::Api::all(client);
            let (reader, writer) = reflector::store::<Pod>();
            let events = watcher::watcher(api, watcher::Config::default());
            let stream = if args.client == ClientKind::KubeStripped {
                events
                    .modify(|p: &mut Pod| p.metadata.managed_fields = None)
                    .boxed()
            } else {
                events.boxed()
            };
            let (synced_tx, synced_rx) = tokio::sync::oneshot::channel();
            let c = counter.clone();
            let stop2 = stop.clone();
            tokio::spawn(async move {
                let mut synced_tx = Some(synced_tx);
                let mut s = reflector::reflector(writer, stream).boxed();
                loop {
                    let ev = tokio::select! {
                        ev = s.next() => ev,
                        _ = stop2.cancelled() => break,
                    };
                    match ev {
                        Some(Ok(Event::InitDone)) => {
                            if let Some(tx) = synced_tx.take() {
                                let _ = tx.send(());
                            }
                        }
                        Some(Ok(Event::Apply(_))) => c.hit(),
                        Some(Ok(_)) => {}
                        Some(Err(e)) => eprintln!("bench-client: watcher error: {e}"),
                        None => break,
                    }
                }
            });
            synced_rx.await?;
            let secs = start.elapsed().as_secs_f64();
            drop(reader);
            secs
        }
    };
    println!("SYNCED {synced_secs}");
    eprintln!(
        "{}: peak RSS at synced {} MiB",
        args.client,
        peak_rss_bytes().unwrap_or(0) >> 20
    );

    let target: u64 = loop {
        let Some(line) = lines.recv().await else {
            return Err("stdin closed before `go`".into());
        };
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
    };
    println!("{}", result.to_line());
    stop.cancel();
    std::process::exit(0);
}
