//! The informer benchmark's orchestrator: starts `bench-server` (seeded with `--pods`
//! Pods), then runs each client in its own `bench-client` process, one after another,
//! against the same server over TCP, and prints a table with the ratios of (a) to (b)
//! and (c), and of the metadata informer (d) to (a) and to kube-runtime's
//! `metadata_watcher` (e).
//!
//! ```text
//! cargo build --release -p kubegen-benchmarks --bins
//! cargo run --release -p kubegen-benchmarks --bin informer-bench -- --pods 100000
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use clap::Parser;
use kubegen_benchmarks::{ClientKind, ClientResult};

#[derive(Parser)]
struct Args {
    /// How many Pods the server holds.
    #[arg(long, default_value_t = 100_000)]
    pods: usize,
    /// How many MODIFIED events each client must handle (default: as many as Pods).
    #[arg(long)]
    events: Option<usize>,
    /// The clients to run, in order (default: ours, kube, kube-strip, ours-meta,
    /// kube-meta).
    #[arg(long, value_delimiter = ',')]
    clients: Vec<ClientKind>,
    /// The `bench-server` binary (default: next to this one).
    #[arg(long)]
    server_bin: Option<PathBuf>,
    /// The `bench-client` binary (default: next to this one).
    #[arg(long)]
    client_bin: Option<PathBuf>,
    /// Seconds to wait for any one step before giving up.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
}

type Error = Box<dyn std::error::Error>;

/// A child process with its stdin and a channel of its stdout lines.
struct Proc {
    name: String,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    timeout: Duration,
}

impl Proc {
    fn spawn(name: &str, cmd: &mut Command, timeout: Duration) -> Result<Proc, Error> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name: name.to_owned(),
            child,
            stdin,
            lines,
            timeout,
        })
    }

    fn send(&mut self, line: &str) -> Result<(), Error> {
        writeln!(self.stdin, "{line}")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// The rest of the first line starting with `prefix`.
    fn expect(&mut self, prefix: &str) -> Result<String, Error> {
        loop {
            let line = self
                .lines
                .recv_timeout(self.timeout)
                .map_err(|e| format!("{}: waiting for {prefix}: {e}", self.name))?;
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest.trim().to_owned());
            }
            eprintln!("{}: {line}", self.name);
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sibling(name: &str) -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or("no directory of the current executable")?;
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !path.is_file() {
        // `cargo run --bin informer-bench` builds only this binary.
        return Err(format!(
            "{} not found next to {}: build all three binaries first with \
             `cargo build --release -p kubegen-benchmarks --bins` (or pass --{}-bin PATH)",
            path.display(),
            exe.display(),
            name.trim_start_matches("bench-"),
        )
        .into());
    }
    Ok(path)
}

fn run_client(
    bin: &Path,
    kind: ClientKind,
    kubeconfig: &str,
    server: &mut Proc,
    events: usize,
    timeout: Duration,
) -> Result<ClientResult, Error> {
    let mut client = Proc::spawn(
        kind.name(),
        Command::new(bin)
            .arg("--client")
            .arg(kind.name())
            .arg("--kubeconfig")
            .arg(kubeconfig),
        timeout,
    )?;
    let synced = client.expect("SYNCED")?;
    eprintln!("{kind}: synced in {synced} s");
    client.send(&format!("go {events}"))?;
    client.expect("WAITING")?;
    server.send(&format!("emit {events}"))?;
    let rv = server.expect("EMITTED")?;
    eprintln!("{kind}: server emitted {events} events up to resourceVersion {rv}");
    let line = client.expect("RESULT")?;
    let result = ClientResult::parse(&format!("RESULT {line}")).ok_or("unreadable RESULT line")?;
    let _ = client.child.wait();
    Ok(result)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() -> Result<(), Error> {
    let args = Args::parse();
    let events = args.events.unwrap_or(args.pods);
    let clients = if args.clients.is_empty() {
        ClientKind::ALL.to_vec()
    } else {
        args.clients.clone()
    };
    let timeout = Duration::from_secs(args.timeout);
    let server_bin = args
        .server_bin
        .clone()
        .map_or_else(|| sibling("bench-server"), Ok)?;
    let client_bin = args
        .client_bin
        .clone()
        .map_or_else(|| sibling("bench-client"), Ok)?;

    eprintln!("seeding {} Pods...", args.pods);
    let mut server = Proc::spawn(
        "server",
        Command::new(&server_bin)
            .arg("--pods")
            .arg(args.pods.to_string())
            .arg("--history")
            .arg((events + 1000).to_string()),
        timeout,
    )?;
    let kubeconfig = server.expect("READY")?;

    let mut results = Vec::new();
    for kind in clients {
        let r = run_client(&client_bin, kind, &kubeconfig, &mut server, events, timeout)?;
        results.push((kind, r));
    }
    let _ = server.send("quit");
    let _ = server.child.wait();

    println!(
        "informer benchmark: {} Pods (~6 KiB JSON each), {events} MODIFIED events; one process per client",
        args.pods
    );
    println!(
        "{:<42} {:>12} {:>12} {:>14}",
        "client", "synced (s)", "events/s", "peak RSS (MiB)"
    );
    for (kind, r) in &results {
        println!(
            "{:<42} {:>12.3} {:>12.0} {:>14.1}",
            kind.label(),
            r.synced_secs,
            r.events_per_sec,
            mib(r.peak_rss)
        );
    }
    let get = |k| results.iter().find(|(kind, _)| *kind == k).map(|(_, r)| *r);
    if let (Some(d), Some(a)) = (get(ClientKind::OursMetadata), get(ClientKind::Ours)) {
        println!(
            "ratio (d)/ours         synced {:.2}x  peak RSS {:.2}x   (target: RSS <= 0.15)",
            d.synced_secs / a.synced_secs,
            d.peak_rss as f64 / a.peak_rss as f64,
        );
    }
    if let (Some(d), Some(e)) = (get(ClientKind::OursMetadata), get(ClientKind::KubeMetadata)) {
        println!(
            "ratio (d)/kube-meta    synced {:.2}x  events/s {:.2}x  peak RSS {:.2}x",
            d.synced_secs / e.synced_secs,
            d.events_per_sec / e.events_per_sec,
            d.peak_rss as f64 / e.peak_rss as f64,
        );
    }
    if let Some(a) = get(ClientKind::Ours) {
        for (k, target) in [
            (
                ClientKind::Kube,
                "targets: synced <= 0.50, events/s >= 1.50, RSS <= 0.65",
            ),
            (
                ClientKind::KubeStripped,
                "targets: synced <= 1.00, events/s >= 1.00, RSS <= 1.00",
            ),
        ] {
            if let Some(b) = get(k) {
                println!(
                    "ratio (a)/{:<12} synced {:.2}x  events/s {:.2}x  peak RSS {:.2}x   ({target})",
                    k.name(),
                    a.synced_secs / b.synced_secs,
                    a.events_per_sec / b.events_per_sec,
                    a.peak_rss as f64 / b.peak_rss as f64,
                );
            }
        }
    }
    Ok(())
}
