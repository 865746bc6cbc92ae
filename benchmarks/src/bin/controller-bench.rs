//! The controller benchmark: kubegen's controller builder against kube-runtime's
//! `Controller`, the same operator on both, each in its own process against the same
//! kind of in-memory API server over TCP (a fresh server process per run).
//!
//! The operator: `--primaries` ConfigMaps (the primaries, over 10 namespaces), each
//! owning two Secrets `<name>-a` and `<name>-b` whose `data.v` follows the ConfigMap's
//! `data.v`. Both reconciles do the same requests: per child a GET, then a CREATE, a PUT
//! or nothing (kubegen through `controller::child::create_or_update`, kube-runtime by
//! hand). Each controller runs with its defaults (kubegen: 4 workers; kube-runtime:
//! unlimited concurrency), and with `--kubegen-workers` for kubegen.
//!
//! Measured per run: the time from the controller's process start until every child
//! exists with `v=1` (converge), then the time from the start of `--primaries` updates
//! of the primaries (`v=2`, made by the server process) until every child follows
//! (update); the controller process's CPU seconds and peak RSS; the API requests the
//! server answered in each phase.
//!
//! ```text
//! cargo build --release -p kubegen-benchmarks --bin controller-bench
//! target/release/controller-bench --primaries 10000
//! ```
//!
//! One binary, three roles: the orchestrator (default), `--serve` (the server process)
//! and `--controller kubegen|kube-runtime` (a controller process).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::ByteString;
use kube::api::{Api, PostParams};
use kube::Resource;
use kubegen_benchmarks::Proc;
use kubegen_runtime::testing::ApiServer;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

const NAMESPACES: usize = 10;
const CHILDREN: [&str; 2] = ["a", "b"];

#[derive(Parser)]
struct Args {
    /// How many primaries (each owns two children).
    #[arg(long, default_value_t = 10_000)]
    primaries: usize,
    /// Workers of the kubegen controller in its second run (0: skip that run).
    #[arg(long, default_value_t = 16)]
    kubegen_workers: usize,
    /// Also run each side with a second controller in the process that reads Secrets too
    /// (kubegen: one shared informer; kube-runtime: a watch per controller).
    #[arg(long)]
    pairs: bool,
    /// Also run kubegen (defaults) on the DeltaFIFO and without the WatchList client, to
    /// see what each informer default costs within one run.
    #[arg(long)]
    variants: bool,
    /// Run everything this many times (the machine is shared: compare within a round).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Seconds to wait for any one step.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Role: the server process.
    #[arg(long, hide = true)]
    serve: bool,
    /// Role: a controller process (`kubegen` or `kube-runtime`).
    #[arg(long, hide = true)]
    controller: Option<String>,
    /// For a controller process: the server's kubeconfig.
    #[arg(long, hide = true)]
    kubeconfig: Option<PathBuf>,
    /// For a kubegen controller process: its workers (0: the default).
    #[arg(long, hide = true, default_value_t = 0)]
    workers: usize,
    /// For a kubegen controller process: informers on the DeltaFIFO.
    #[arg(long, hide = true)]
    delta_fifo: bool,
    /// For a kubegen controller process: LIST + WATCH instead of the WatchList client.
    #[arg(long, hide = true)]
    no_watch_list: bool,
}

/// The informer defaults a kubegen controller process changes (`--variants`).
#[derive(Clone, Copy, Default)]
struct Informers {
    delta_fifo: bool,
    no_watch_list: bool,
}

fn primary_name(i: usize) -> (String, String) {
    (format!("bench-{}", i % NAMESPACES), format!("p-{i:06}"))
}

fn b64(v: &str) -> String {
    // Enough base64 for one- and two-digit values: what `data.v` holds here.
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = v.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | (u32::from(c) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

// ---------------------------------------------------------------- server process

/// Prints `READY <kubeconfig>`; then per stdin line: `wait <v>` prints `DONE` once every
/// child has `data.v = v`; `update <v>` sets every primary's `data.v` and prints
/// `UPDATED`; `requests` prints `REQUESTS <verb>=<n> ...` and forgets them; `quit`.
async fn serve(primaries: usize) -> Result<(), Error> {
    let server = ApiServer::builder()
        .history_limit(4 * primaries + 10_000)
        .history_bytes(4 << 30)
        .build();
    for i in 0..primaries {
        let (ns, name) = primary_name(i);
        server.create(
            "configmaps",
            json!({"metadata": {"name": name, "namespace": ns}, "data": {"v": "1"}}),
        )?;
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
            (Some("wait"), Some(v)) => {
                let want = b64(v);
                // Children are checked in order; each is looked at until it is right.
                let mut next = 0;
                while next < primaries * CHILDREN.len() {
                    let (ns, name) = primary_name(next / CHILDREN.len());
                    let child = format!("{name}-{}", CHILDREN[next % CHILDREN.len()]);
                    let ok = server
                        .get("secrets", &ns, &child)?
                        .is_some_and(|s| s["data"]["v"] == want.as_str());
                    if ok {
                        next += 1;
                    } else {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                println!("DONE");
            }
            (Some("update"), Some(v)) => {
                let (s, v) = (server.clone(), v.to_owned());
                tokio::task::spawn_blocking(move || -> Result<(), Error> {
                    for i in 0..primaries {
                        let (ns, name) = primary_name(i);
                        let mut cm = s
                            .get("configmaps", &ns, &name)?
                            .ok_or("a primary is missing")?;
                        cm["data"]["v"] = json!(v);
                        s.update("configmaps", cm)?;
                    }
                    Ok(())
                })
                .await??;
                println!("UPDATED");
            }
            (Some("requests"), None) => {
                let mut by_verb: BTreeMap<String, usize> = BTreeMap::new();
                for r in server.requests() {
                    *by_verb.entry(r.verb).or_default() += 1;
                }
                server.clear_requests();
                let text: Vec<String> = by_verb.iter().map(|(v, n)| format!("{v}={n}")).collect();
                println!("REQUESTS {}", text.join(" "));
            }
            (Some("quit"), _) => break,
            _ => eprintln!("server: unknown command {line:?}"),
        }
    }
    tcp.shutdown().await;
    Ok(())
}

// ---------------------------------------------------------------- controller processes

/// The child's wanted `data`.
fn child_data(cm: &ConfigMap) -> BTreeMap<String, ByteString> {
    let v = cm
        .data
        .as_ref()
        .and_then(|d| d.get("v"))
        .cloned()
        .unwrap_or_default();
    BTreeMap::from([("v".to_owned(), ByteString(v.into_bytes()))])
}

async fn kubegen_controller(
    client: kube::Client,
    workers: usize,
    pair: bool,
    informers: Informers,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), Error> {
    use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
    use kubegen_runtime::cache::informer::FifoKind;
    use kubegen_runtime::cache::reflector::ReflectorOptions;
    use kubegen_runtime::cache::SharedIndexInformer;
    use kubegen_runtime::client::ResourceClient;
    use kubegen_runtime::controller::child::create_or_update;
    use kubegen_runtime::controller::{Action, Context, Controller, Target};

    let factory = InformerFactory::new(client.clone(), FactoryOptions::new(Duration::ZERO));
    if informers.delta_fifo || informers.no_watch_list {
        // The builder takes the factory's informers: made here first, with the variant.
        let variant = |mut config: kubegen_runtime::cache::informer::InformerOptions| {
            if informers.delta_fifo {
                config = config.fifo(FifoKind::Delta);
            }
            if informers.no_watch_list {
                config = config.reflector(ReflectorOptions::default().use_watch_list(false));
            }
            config
        };
        let c = client.clone();
        factory.informer_for::<ConfigMap>(move |config| {
            SharedIndexInformer::new(Arc::new(ResourceClient::all(c)), variant(config))
        });
        let c = client.clone();
        factory.informer_for::<Secret>(move |config| {
            SharedIndexInformer::new(Arc::new(ResourceClient::all(c)), variant(config))
        });
    }
    let mut builder = Controller::new(&factory)
        .for_::<ConfigMap>()
        .owns::<Secret>();
    if workers > 0 {
        builder = builder.workers(workers);
    }
    let reconcile = move |target: Target<ConfigMap>, ctx: Arc<Context<()>>| async move {
        let Some(cm) = target.live() else {
            return Ok(Action::done());
        };
        let client = ctx.client().ok_or("no client")?.clone();
        let secrets =
            Api::<Secret>::namespaced(client, cm.metadata.namespace.as_deref().unwrap_or_default());
        for suffix in CHILDREN {
            let name = format!(
                "{}-{suffix}",
                cm.metadata.name.as_deref().unwrap_or_default()
            );
            create_or_update(&secrets, cm.as_ref(), &name, |s| {
                s.data = Some(child_data(&cm))
            })
            .await?;
        }
        Ok::<_, Error>(Action::done())
    };
    // The second controller reads Secrets too: the factory's informer serves both.
    let second = pair.then(|| {
        let noop =
            |_: Target<Secret>, _: Arc<Context<()>>| async { Ok::<_, Error>(Action::done()) };
        let builder = Controller::new(&factory).for_::<Secret>().named("secrets");
        tokio::spawn(builder.run(noop, (), stop.clone()))
    });
    builder.run(reconcile, (), stop).await?;
    if let Some(second) = second {
        second.await??;
    }
    factory.shutdown().await;
    Ok(())
}

#[derive(Debug)]
struct KrError(String);

impl std::fmt::Display for KrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KrError {}

async fn kube_runtime_controller(
    client: kube::Client,
    pair: bool,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), Error> {
    use kube_runtime::controller::{Action, Controller};
    use kube_runtime::watcher;

    async fn reconcile(cm: Arc<ConfigMap>, client: Arc<kube::Client>) -> Result<Action, KrError> {
        let ns = cm.metadata.namespace.as_deref().unwrap_or_default();
        let secrets = Api::<Secret>::namespaced((*client).clone(), ns);
        let owner = cm
            .controller_owner_ref(&())
            .ok_or_else(|| KrError("no uid".into()))?;
        for suffix in CHILDREN {
            let name = format!(
                "{}-{suffix}",
                cm.metadata.name.as_deref().unwrap_or_default()
            );
            let err = |e: kube::Error| KrError(e.to_string());
            match secrets.get_opt(&name).await.map_err(err)? {
                None => {
                    let mut s = Secret::default();
                    s.metadata.name = Some(name);
                    s.metadata.owner_references = Some(vec![owner.clone()]);
                    s.data = Some(child_data(&cm));
                    secrets
                        .create(&PostParams::default(), &s)
                        .await
                        .map_err(err)?;
                }
                Some(existing) => {
                    let mut s = existing.clone();
                    s.data = Some(child_data(&cm));
                    if s != existing {
                        secrets
                            .replace(&name, &PostParams::default(), &s)
                            .await
                            .map_err(err)?;
                    }
                }
            }
        }
        Ok(Action::await_change())
    }
    fn error_policy(_: Arc<ConfigMap>, _: &KrError, _: Arc<kube::Client>) -> Action {
        Action::requeue(Duration::from_secs(1))
    }
    // The second controller reads Secrets too, through a watch of its own.
    let second = pair.then(|| {
        let stop = stop.clone();
        let noop = |_: Arc<Secret>, _: Arc<()>| async { Ok::<_, KrError>(Action::await_change()) };
        let policy = |_: Arc<Secret>, _: &KrError, _: Arc<()>| Action::await_change();
        let controller = Controller::new(
            Api::<Secret>::all(client.clone()),
            watcher::Config::default(),
        )
        .graceful_shutdown_on(async move { stop.cancelled().await })
        .run(noop, policy, Arc::new(()))
        .for_each(|_| async {});
        tokio::spawn(controller)
    });
    Controller::new(
        Api::<ConfigMap>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<Secret>::all(client.clone()),
        watcher::Config::default(),
    )
    .graceful_shutdown_on(async move { stop.cancelled().await })
    .run(reconcile, error_policy, Arc::new(client))
    .for_each(|_| async {})
    .await;
    if let Some(second) = second {
        second.await?;
    }
    Ok(())
}

/// Runs a controller until stdin says `stop`, then prints
/// `RESULT <cpu seconds> <peak rss bytes>`.
async fn controller(
    which: &str,
    kubeconfig: &PathBuf,
    workers: usize,
    informers: Informers,
) -> Result<(), Error> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    let client = kube::Client::try_from(config)?;
    let stop = tokio_util::sync::CancellationToken::new();
    let stopper = stop.clone();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            if line.map_or(true, |l| l.trim() == "stop") {
                break;
            }
        }
        stopper.cancel();
    });
    match which {
        "kubegen" => kubegen_controller(client, workers, false, informers, stop).await?,
        "kubegen-pair" => kubegen_controller(client, workers, true, informers, stop).await?,
        "kube-runtime" => kube_runtime_controller(client, false, stop).await?,
        "kube-runtime-pair" => kube_runtime_controller(client, true, stop).await?,
        other => {
            return Err(format!("unknown controller {other:?}: kubegen or kube-runtime").into())
        }
    }
    println!(
        "RESULT {} {}",
        kubegen_benchmarks::cpu_seconds().unwrap_or(f64::NAN),
        kubegen_benchmarks::peak_rss_bytes().unwrap_or(0)
    );
    Ok(())
}

// ---------------------------------------------------------------- orchestrator

/// A role of this binary as a child process.
fn role(name: &str, args: &[String], timeout: Duration) -> Result<Proc, Error> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(args);
    Proc::spawn(name, &mut cmd, timeout)
}

struct Run {
    label: String,
    converge: Duration,
    update: Duration,
    cpu: f64,
    rss: u64,
    converge_requests: String,
    update_requests: String,
}

fn total(requests: &str) -> usize {
    requests
        .split_whitespace()
        .filter_map(|kv| {
            kv.split_once('=')
                .and_then(|(_, n)| n.parse::<usize>().ok())
        })
        .sum()
}

fn run_one(args: &Args, label: &str, controller: &[String]) -> Result<Run, Error> {
    let timeout = Duration::from_secs(args.timeout);
    let mut server = role(
        "server",
        &[
            "--serve".into(),
            "--primaries".into(),
            args.primaries.to_string(),
        ],
        timeout,
    )?;
    let kubeconfig = server.expect("READY")?;
    server.send("requests")?;
    server.expect("REQUESTS")?;
    let mut cmd: Vec<String> = controller.to_vec();
    cmd.extend(["--kubeconfig".into(), kubeconfig]);
    let started = Instant::now();
    let mut ctl = role(label, &cmd, timeout)?;
    server.send("wait 1")?;
    server.expect("DONE")?;
    let converge = started.elapsed();
    server.send("requests")?;
    let converge_requests = server.expect("REQUESTS")?;
    let updating = Instant::now();
    server.send("update 2")?;
    server.expect("UPDATED")?;
    server.send("wait 2")?;
    server.expect("DONE")?;
    let update = updating.elapsed();
    server.send("requests")?;
    let update_requests = server.expect("REQUESTS")?;
    ctl.send("stop")?;
    let result = ctl.expect("RESULT")?;
    let mut fields = result.split_whitespace();
    let cpu: f64 = fields.next().ok_or("RESULT without cpu")?.parse()?;
    let rss: u64 = fields.next().ok_or("RESULT without rss")?.parse()?;
    server.send("quit")?;
    Ok(Run {
        label: label.to_owned(),
        converge,
        update,
        cpu,
        rss,
        converge_requests,
        update_requests,
    })
}

fn orchestrate(args: &Args) -> Result<(), Error> {
    for round in 1..=args.rounds.max(1) {
        if args.rounds > 1 {
            println!("\n## round {round} of {}", args.rounds);
        }
        let runs = one_round(args)?;
        report(args, &runs);
    }
    Ok(())
}

fn one_round(args: &Args) -> Result<Vec<Run>, Error> {
    let mut runs = Vec::new();
    let kr = ["--controller".to_owned(), "kube-runtime".to_owned()];
    let kg = ["--controller".to_owned(), "kubegen".to_owned()];
    runs.push(run_one(args, "kube-runtime (defaults)", &kr)?);
    runs.push(run_one(args, "kubegen (defaults: 4 workers)", &kg)?);
    if args.variants {
        let with = |flag: &str| {
            let mut cmd = kg.to_vec();
            cmd.push(flag.to_owned());
            cmd
        };
        runs.push(run_one(
            args,
            "kubegen (4 workers, DeltaFIFO)",
            &with("--delta-fifo"),
        )?);
        runs.push(run_one(
            args,
            "kubegen (4 workers, LIST+WATCH)",
            &with("--no-watch-list"),
        )?);
    }
    if args.pairs {
        let pair = |c: &str| ["--controller".to_owned(), c.to_owned()];
        runs.push(run_one(
            args,
            "kube-runtime, two controllers",
            &pair("kube-runtime-pair"),
        )?);
        runs.push(run_one(
            args,
            "kubegen, two controllers",
            &pair("kubegen-pair"),
        )?);
    }
    if args.kubegen_workers > 0 {
        let mut cmd = kg.to_vec();
        cmd.extend(["--workers".into(), args.kubegen_workers.to_string()]);
        runs.push(run_one(
            args,
            &format!("kubegen ({} workers)", args.kubegen_workers),
            &cmd,
        )?);
    }
    Ok(runs)
}

fn report(args: &Args, runs: &[Run]) {
    println!(
        "\n{} primaries x {} children, in-memory server over TCP\n",
        args.primaries,
        CHILDREN.len()
    );
    println!(
        "| controller | converge s | update s | CPU s | peak RSS MiB | requests (converge) | requests (update) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in runs {
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.1} | {} ({}) | {} ({}) |",
            r.label,
            r.converge.as_secs_f64(),
            r.update.as_secs_f64(),
            r.cpu,
            r.rss as f64 / (1024.0 * 1024.0),
            total(&r.converge_requests),
            r.converge_requests,
            total(&r.update_requests),
            r.update_requests,
        );
    }
    println!(
        "\nratios, kubegen against kube-runtime with as many controllers (lower is better):\n"
    );
    println!("| controller | converge | update | CPU | peak RSS | requests |");
    println!("|---|---|---|---|---|---|");
    let req = |r: &Run| (total(&r.converge_requests) + total(&r.update_requests)) as f64;
    for r in runs.iter().filter(|r| r.label.starts_with("kubegen")) {
        let pair = r.label.contains("two controllers");
        let Some(base) = runs.iter().find(|b| {
            b.label.starts_with("kube-runtime") && b.label.contains("two controllers") == pair
        }) else {
            continue;
        };
        println!(
            "| {} | {:.2}x | {:.2}x | {:.2}x | {:.2}x | {:.2}x |",
            r.label,
            r.converge.as_secs_f64() / base.converge.as_secs_f64(),
            r.update.as_secs_f64() / base.update.as_secs_f64(),
            r.cpu / base.cpu,
            r.rss as f64 / base.rss as f64,
            req(r) / req(base),
        );
    }
}

fn main() -> Result<(), Error> {
    let args = Args::parse();
    if args.serve {
        return tokio::runtime::Runtime::new()?.block_on(serve(args.primaries));
    }
    if let Some(which) = &args.controller {
        let kubeconfig = args
            .kubeconfig
            .clone()
            .ok_or("--controller needs --kubeconfig")?;
        return tokio::runtime::Runtime::new()?.block_on(controller(
            which,
            &kubeconfig,
            args.workers,
            Informers {
                delta_fifo: args.delta_fifo,
                no_watch_list: args.no_watch_list,
            },
        ));
    }
    orchestrate(&args)
}
