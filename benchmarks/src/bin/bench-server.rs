//! The benchmark's API server process: the in-memory API server on a TCP port, seeded
//! with `--pods` Pods through its admin API, driven by lines on stdin.
//!
//! Protocol: prints `READY <kubeconfig path>` once seeded and listening; then for each
//! stdin line `emit <m>` it emits `m` MODIFIED Pod events and prints `EMITTED <rv>`;
//! `relist` makes the next watch request answer 410 Expired, ends every open watch (so
//! the client's resumed watch is that next one and it relists), then modifies the first
//! seeded Pod and prints `RELIST <namespace/name> <rv>`: a client has finished its
//! relist once it holds that object at that resourceVersion. `quit` or the end of stdin
//! stops it.

use std::io::BufRead;

use clap::Parser;
use kubegen_runtime::testing::ApiServer;

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
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let server = ApiServer::builder()
        .history_limit(args.history)
        .history_bytes(args.history_bytes)
        .protobuf_responses(args.protobuf)
        .build();
    server.seed("pods", args.pods, kubegen_benchmarks::pod)?;
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
                let rv =
                    tokio::task::spawn_blocking(move || s.emit_modifications("pods", m)).await??;
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
