//! The benchmark's API server process: the in-memory API server on a TCP port, seeded
//! with `--pods` Pods through its admin API, driven by lines on stdin.
//!
//! Protocol: prints `READY <kubeconfig path>` once seeded and listening; then for each
//! stdin line `emit <m>` it emits `m` MODIFIED Pod events and prints `EMITTED <rv>`
//! (what each event changes, and how many the server writes at once, are the
//! `--event-shape` and `--write-batch` flags);
//! `relist` makes the next watch request answer 410 Expired, ends every open watch (so
//! the client's resumed watch is that next one and it relists), then modifies the first
//! seeded Pod and prints `RELIST <namespace/name> <rv>`: a client has finished its
//! relist once it holds that object at that resourceVersion. `quit` or the end of stdin
//! stops it.

use std::io::BufRead;

use clap::Parser;
use kubegen_benchmarks::{EventShape, ListPages, ServerVariant};
use kubegen_runtime::testing::{ApiServer, ListLimit, PreparedChanges};
use serde_json::Value;

#[derive(Parser)]
struct Args {
    /// How many Pods to seed.
    #[arg(long, default_value_t = 100_000)]
    pods: usize,
    /// How many events each resource keeps in its history (must cover one `emit`).
    #[arg(long, default_value_t = 250_000)]
    history: usize,
    /// How many bytes of events each resource keeps (must cover one `emit` too: the
    /// server's 64 MiB default would expire a slow client's resourceVersion mid-run).
    #[arg(long, default_value_t = 4 << 30)]
    history_bytes: usize,
    /// Answer protobuf to clients that ask for it (client-go, kubegen), as
    /// kube-apiserver does; without it every answer is JSON.
    #[arg(long)]
    protobuf: bool,
    #[command(flatten)]
    variant: ServerVariant,
    /// How many events to compute ahead for the first `emit` (label-restart; later ones
    /// are computed while the client handles the last).
    #[arg(long, default_value_t = 0)]
    prepare: usize,
}

/// The change of event `k` (counted over the server's life, so that no two events of one
/// object carry the same content).
fn change(pods: usize) -> impl FnMut(usize, &mut Value) {
    let mut n = 0usize;
    move |_, obj| {
        n += 1;
        if let Some(labels) = obj
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.insert("revision".into(), Value::String(format!("r{n}")));
        }
        if let Some(count) = obj.pointer_mut("/status/containerStatuses/0/restartCount") {
            *count = Value::from(n / pods.max(1) + 1);
        }
    }
}

/// The lock of the change counter (a panic while holding it leaves a usable counter).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Computes the changes of the next `m` events.
fn prepare(
    server: &ApiServer,
    m: usize,
    f: &mut impl FnMut(usize, &mut Value),
) -> Result<PreparedChanges, String> {
    server
        .prepare_changes("pods", m, f)
        .map_err(|e| format!("preparing {m} changes: {e}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let server = ApiServer::builder()
        .history_limit(args.history)
        .history_bytes(args.history_bytes)
        .protobuf_responses(args.protobuf)
        .watch_chunk_bytes(args.variant.watch_chunk)
        .list_limit(match args.variant.list_limit {
            ListPages::Honour => ListLimit::Honour,
            ListPages::Ignore => ListLimit::Ignore,
            ListPages::AtMost(n) => ListLimit::AtMost(n),
        })
        .build();
    server.seed("pods", args.pods, kubegen_benchmarks::pod)?;
    let shaped = args.variant.event_shape == EventShape::LabelRestart;
    // The changes are made on a thread of their own: one emit's are computed while the
    // client handles the last.
    let changes = std::sync::Arc::new(std::sync::Mutex::new(change(args.pods)));
    let ahead = |m: usize| {
        let (s, changes) = (server.clone(), changes.clone());
        std::thread::spawn(move || prepare(&s, m, &mut *lock(&changes)))
    };
    let mut next = (shaped && args.prepare > 0).then(|| ahead(args.prepare));
    if let Some(first) = next.take() {
        // Ready before READY: the first client must not wait for it.
        let done = first.join().map_err(|_| "preparing changes panicked")??;
        next = Some(std::thread::spawn(move || Ok(done)));
    }
    let tcp = server.serve_tcp().await?;
    println!("READY {}", tcp.kubeconfig_path().display());

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    while let Some(line) = rx.recv().await {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("emit"), Some(m)) => {
                let m: usize = m.parse()?;
                let s = server.clone();
                let rv = if shaped {
                    let ready = match next.take() {
                        Some(h) => Some(h.join().map_err(|_| "preparing changes panicked")??),
                        None => None,
                    };
                    let prepared = match ready {
                        Some(r) if r.len() == m => r,
                        _ => prepare(&server, m, &mut *lock(&changes))?,
                    };
                    let batch = args.variant.write_batch;
                    let rv = tokio::task::spawn_blocking(move || s.write_prepared(prepared, batch))
                        .await??;
                    next = Some(ahead(m));
                    rv
                } else {
                    let batch = args.variant.write_batch;
                    tokio::task::spawn_blocking(move || s.emit_modifications_by("pods", m, batch))
                        .await??
                };
                println!("EMITTED {rv}");
            }
            (Some("relist"), None) => {
                server.expire_next_watch();
                server.drop_watches();
                let first = kubegen_benchmarks::pod(0);
                let meta = &first["metadata"];
                let (ns, name) = (
                    meta["namespace"].as_str().unwrap_or_default(),
                    meta["name"].as_str().unwrap_or_default(),
                );
                let rv = server.touch("pods", ns, name)?;
                println!("RELIST {ns}/{name} {rv}");
            }
            (Some("quit"), _) => break,
            _ => eprintln!("bench-server: unknown command {line:?}"),
        }
    }
    tcp.shutdown().await;
    Ok(())
}
