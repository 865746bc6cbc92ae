//! The informer benchmark's orchestrator: starts `bench-server` (seeded with `--pods`
//! Pods), measures the decode floor, then runs each client in its own process, one after
//! another, against the same server over TCP: kubegen's typed, metadata and projection
//! informers, kube-runtime's reflector (defaults, managedFields stripped, metadata) and
//! client-go's informer (`go-informer`, defaults and managedFields stripped). Each client
//! syncs, handles `--events` MODIFIED events, then (unless `--no-relist`) is forced to
//! relist by a 410 on its watch. It prints one table with time to synced, events/s,
//! CPU seconds, peak RSS and the relist's peak over the steady state, then the ratios.
//!
//! With `--real <kubeconfig>` the server is a real kube-apiserver instead:
//! `bench-real-server` seeds it with the same generator's Pods and makes the events with
//! merge patches; a real server cannot be made to answer 410 on demand, so that mode
//! runs without the relist.
//!
//! ```text
//! hack/bench-informer.sh 100000          # builds everything, then runs this
//! REAL=1 hack/bench-informer.sh 10000    # the same against a real kube-apiserver
//! ```

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use clap::Parser;
use kubegen_benchmarks::{ClientKind, ClientResult, Proc, RelistResult, ServerVariant};

#[derive(Parser)]
struct Args {
    /// How many Pods the server holds.
    #[arg(long, default_value_t = 100_000)]
    pods: usize,
    /// How many MODIFIED events each client must handle (default: as many as Pods).
    #[arg(long)]
    events: Option<usize>,
    /// The clients to run, in order (default: all; go and go-strip only when the
    /// go-informer binary is found).
    #[arg(long, value_delimiter = ',')]
    clients: Vec<ClientKind>,
    /// The `go-informer` binary (default: `go-informer` next to this one).
    #[arg(long)]
    go_bin: Option<PathBuf>,
    /// Skip the forced relist after the events.
    #[arg(long)]
    no_relist: bool,
    /// Rounds over all clients (interleaved: a, b, ..., a, b, ...); the table shows
    /// each figure's median.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Run against the real kube-apiserver of this kubeconfig (through
    /// `bench-real-server`) instead of the in-memory server; implies --no-relist.
    #[arg(long, value_name = "KUBECONFIG")]
    real: Option<PathBuf>,
    /// With --real: leave the seeded Pods in the cluster at the end (a later run with the
    /// same or fewer Pods reuses them instead of seeding for minutes).
    #[arg(long)]
    keep_pods: bool,
    /// Seconds to wait for the server to be seeded (seeding a real server with 50k Pods
    /// takes minutes).
    #[arg(long, default_value_t = 3600)]
    seed_timeout: u64,
    /// The `bench-server` binary, or with --real the `bench-real-server` binary
    /// (default: next to this one).
    #[arg(long)]
    server_bin: Option<PathBuf>,
    /// The `bench-client` binary (default: next to this one).
    #[arg(long)]
    client_bin: Option<PathBuf>,
    /// Seconds to wait for any one step before giving up.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// The in-memory server's variant (ignored with --real).
    #[command(flatten)]
    variant: ServerVariant,
}

type Error = kubegen_benchmarks::ProcError;

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

/// What the run measured for one client.
struct Measured {
    result: ClientResult,
    relist: Option<RelistResult>,
}

struct Binaries {
    client: PathBuf,
    go: Option<PathBuf>,
}

fn client_command(bins: &Binaries, kind: ClientKind, kubeconfig: &str) -> Result<Command, Error> {
    if kind.is_go() {
        let go = bins.go.as_ref().ok_or(
            "go-informer not found: build it with hack/bench-informer.sh or pass --go-bin",
        )?;
        let mut cmd = Command::new(go);
        cmd.arg("-kubeconfig").arg(kubeconfig);
        if kind == ClientKind::GoStripped {
            cmd.arg("-strip");
        }
        return Ok(cmd);
    }
    let mut cmd = Command::new(&bins.client);
    cmd.arg("--client")
        .arg(kind.name())
        .arg("--kubeconfig")
        .arg(kubeconfig);
    Ok(cmd)
}

fn run_client(
    bins: &Binaries,
    kind: ClientKind,
    kubeconfig: &str,
    server: &mut Proc,
    args: &Args,
    events: usize,
    relist_too: bool,
) -> Result<Measured, Error> {
    let timeout = Duration::from_secs(args.timeout);
    let mut client = Proc::spawn(
        kind.name(),
        &mut client_command(bins, kind, kubeconfig)?,
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
    let mut relist = None;
    if relist_too {
        client.send("relist")?;
        client.expect("RELIST-READY")?;
        server.send("relist")?;
        let wait = server.expect("RELIST")?;
        client.send(&format!("wait {wait}"))?;
        let line = client.expect("RELISTED")?;
        relist = Some(
            RelistResult::parse(&format!("RELISTED {line}")).ok_or("unreadable RELISTED line")?,
        );
    }
    client.send("quit")?;
    let _ = client.wait();
    Ok(Measured { result, relist })
}

/// The decode floor: (list CPU seconds, events CPU seconds) on one core.
fn run_floor(
    bins: &Binaries,
    kubeconfig: &str,
    events: usize,
    timeout: Duration,
) -> Result<(f64, f64), Error> {
    let mut floor = Proc::spawn(
        "floor",
        Command::new(&bins.client)
            .arg("--floor")
            .arg(events.to_string())
            .arg("--kubeconfig")
            .arg(kubeconfig),
        timeout,
    )?;
    let line = floor.expect("FLOOR")?;
    let mut it = line.split_whitespace().map(str::parse::<f64>);
    match (it.next(), it.next()) {
        (Some(Ok(list)), Some(Ok(ev))) => Ok((list, ev)),
        _ => Err(format!("unreadable FLOOR line {line:?}").into()),
    }
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Each figure's median over the rounds.
fn median_of(ms: &[Measured]) -> Measured {
    let m = |f: &dyn Fn(&Measured) -> f64| median(ms.iter().map(f));
    let relists: Vec<RelistResult> = ms.iter().filter_map(|m| m.relist).collect();
    let r = |f: &dyn Fn(&RelistResult) -> f64| median(relists.iter().map(f));
    Measured {
        result: ClientResult {
            synced_secs: m(&|x| x.result.synced_secs),
            events_per_sec: m(&|x| x.result.events_per_sec),
            peak_rss: m(&|x| x.result.peak_rss as f64) as u64,
            cpu_secs: m(&|x| x.result.cpu_secs),
        },
        relist: (!relists.is_empty()).then(|| RelistResult {
            steady_rss: r(&|x| x.steady_rss as f64) as u64,
            peak_rss: r(&|x| x.peak_rss as f64) as u64,
            cpu_secs: r(&|x| x.cpu_secs),
        }),
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() -> Result<(), Error> {
    let args = Args::parse();
    let events = args.events.unwrap_or(args.pods);
    let timeout = Duration::from_secs(args.timeout);
    let real = args.real.is_some();
    let relist_too = !args.no_relist && !real;
    let server_bin = args.server_bin.clone().map_or_else(
        || {
            sibling(if real {
                "bench-real-server"
            } else {
                "bench-server"
            })
        },
        Ok,
    )?;
    let bins = Binaries {
        client: args
            .client_bin
            .clone()
            .map_or_else(|| sibling("bench-client"), Ok)?,
        go: args.go_bin.clone().or_else(|| sibling("go-informer").ok()),
    };
    let clients: Vec<ClientKind> = if args.clients.is_empty() {
        ClientKind::ALL
            .into_iter()
            .filter(|k| !k.is_go() || bins.go.is_some())
            .collect()
    } else {
        args.clients.clone()
    };

    eprintln!("seeding {} Pods...", args.pods);
    let mut cmd = Command::new(&server_bin);
    cmd.arg("--pods").arg(args.pods.to_string());
    if let Some(kc) = &args.real {
        cmd.arg("--kubeconfig").arg(kc);
        if args.keep_pods {
            cmd.arg("--keep");
        }
    } else {
        cmd.arg("--history")
            .arg((events + 1000).to_string())
            .args(args.variant.to_args())
            .arg("--prepare")
            .arg(events.to_string());
    }
    let mut server = Proc::spawn("server", &mut cmd, timeout)?;
    server.set_timeout(Duration::from_secs(args.seed_timeout.max(args.timeout)));
    let pod_size = if real {
        let bytes = server.expect("POD-BYTES")?;
        format!("{bytes} bytes of JSON each as the server returns one, managedFields included")
    } else {
        "~6 KiB JSON each".to_owned()
    };
    let kubeconfig = server.expect("READY")?;
    server.set_timeout(timeout);

    let mut floors = Vec::new();
    let mut runs: Vec<(ClientKind, Vec<Measured>)> =
        clients.iter().map(|k| (*k, Vec::new())).collect();
    for round in 0..args.runs.max(1) {
        eprintln!("round {}", round + 1);
        floors.push(run_floor(&bins, &kubeconfig, events, timeout)?);
        for (kind, measured) in &mut runs {
            measured.push(run_client(
                &bins,
                *kind,
                &kubeconfig,
                &mut server,
                &args,
                events,
                relist_too,
            )?);
        }
    }
    let floor_list = median(floors.iter().map(|f| f.0));
    let floor_events = median(floors.iter().map(|f| f.1));
    let floor = floor_list + floor_events;
    let results: Vec<(ClientKind, Measured)> = runs
        .into_iter()
        .map(|(kind, ms)| (kind, median_of(&ms)))
        .collect();
    let _ = server.send("quit");
    let _ = server.wait();

    println!(
        "informer benchmark: {} Pods ({pod_size}), {events} MODIFIED events{}; one process per client; medians of {} interleaved round(s)",
        args.pods,
        if relist_too { ", then a forced relist" } else { "" },
        args.runs.max(1),
    );
    if real {
        println!(
            "server: a real kube-apiserver (+ etcd) on this machine, seeded and driven by bench-real-server; events are merge patches, so events/s is bounded by the server; no forced relist (a real server cannot be made to answer 410 on demand)"
        );
    } else {
        println!(
            "server: kubegen's in-memory API server (bench-server): {}",
            args.variant.describe()
        );
    }
    println!(
        "decode floor (serde_json, one core, the server's bytes into Pod): list {floor_list:.2} s + events {floor_events:.2} s = {floor:.2} CPU s"
    );
    println!(
        "{:<42} {:>10} {:>9} {:>7} {:>9} {:>9} {:>8} {:>8}",
        "client", "synced s", "events/s", "CPU s", "CPU/floor", "peak MiB", "relist", "relist s"
    );
    for (kind, m) in &results {
        let r = &m.result;
        let (relist, relist_cpu) = match &m.relist {
            Some(rl) if rl.steady_rss > 0 => (
                format!("{:.2}x", rl.peak_rss as f64 / rl.steady_rss as f64),
                format!("{:.2}", rl.cpu_secs),
            ),
            _ => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "{:<42} {:>10.3} {:>9.0} {:>7.2} {:>8.2}x {:>9.1} {:>8} {:>8}",
            kind.label(),
            r.synced_secs,
            r.events_per_sec,
            r.cpu_secs,
            r.cpu_secs / floor,
            mib(r.peak_rss),
            relist,
            relist_cpu,
        );
    }
    println!("(CPU s: user + system, all threads, start to last event; relist: peak RSS during the forced relist over the RSS before it; relist s: its CPU seconds)");
    let get = |k| {
        results
            .iter()
            .find(|(kind, _)| *kind == k)
            .map(|(_, m)| m.result)
    };
    let ratio = |name: &str, a: ClientResult, b: ClientResult, targets: &str| {
        println!(
            "ratio {name:<22} synced {:.2}x  events/s {:.2}x  CPU {:.2}x  peak RSS {:.2}x   {targets}",
            a.synced_secs / b.synced_secs,
            a.events_per_sec / b.events_per_sec,
            a.cpu_secs / b.cpu_secs,
            a.peak_rss as f64 / b.peak_rss as f64,
        );
    };
    if let Some(a) = get(ClientKind::Ours) {
        for (k, targets) in [
            (
                ClientKind::Kube,
                "(targets: synced <= 0.35, events/s >= 2, RSS <= 0.65)",
            ),
            (ClientKind::KubeStripped, ""),
            (
                ClientKind::Go,
                "(targets: synced <= 0.7, events/s >= 1.5, CPU <= 0.7, RSS <= 1.0)",
            ),
            (ClientKind::GoStripped, ""),
        ] {
            if let Some(b) = get(k) {
                ratio(&format!("(a)/{}", k.name()), a, b, targets);
            }
        }
        if let Some(d) = get(ClientKind::OursMetadata) {
            ratio("(d)/ours", d, a, "(target: RSS <= 0.15)");
        }
        if let Some(h) = get(ClientKind::OursProjection) {
            ratio("(h)/ours", h, a, "(target: RSS <= 0.25)");
        }
        if let Some(i) = get(ClientKind::OursOpenapi) {
            ratio("(i)/ours", i, a, "");
        }
    }
    if let Some(i) = get(ClientKind::OursOpenapi) {
        for k in [ClientKind::Kube, ClientKind::Go] {
            if let Some(b) = get(k) {
                ratio(&format!("(i)/{}", k.name()), i, b, "");
            }
        }
    }
    if let (Some(d), Some(e)) = (get(ClientKind::OursMetadata), get(ClientKind::KubeMetadata)) {
        ratio("(d)/kube-meta", d, e, "");
    }
    Ok(())
}
