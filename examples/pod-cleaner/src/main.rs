//! `pod-cleaner`: see the crate docs and README.md.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use kubegen_kubernetes::clientset::Clientset;
use pod_cleaner::controller::{self, log, Options, Outcomes};
use pod_cleaner::{config, scenario};
use tokio_util::sync::CancellationToken;

/// The ops pod cleaner. With no flags: a demo on an embedded in-memory API server.
#[derive(Parser)]
#[command(name = "pod-cleaner", version)]
struct Cli {
    /// Configuration file (YAML); the demo's built-in one when absent.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Run against the cluster of this kubeconfig.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Run against the cluster kube's defaults find (KUBECONFIG, ~/.kube/config, or the
    /// in-cluster service account).
    #[arg(long, conflicts_with = "kubeconfig")]
    cluster: bool,
    /// Say what would be done; change nothing.
    #[arg(long)]
    dry_run: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pod-cleaner: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let config = match &cli.config {
        Some(path) => config::load(path)?,
        None => scenario::config()?,
    };
    let options = Options {
        dry_run: cli.dry_run,
    };
    let stop = CancellationToken::new();
    {
        let stop = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                log("interrupted");
                stop.cancel();
            }
        });
    }
    if cli.kubeconfig.is_some() || cli.cluster {
        let client = match &cli.kubeconfig {
            Some(path) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
                let config =
                    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
                kube::Client::try_from(config)?
            }
            None => kube::Client::try_default().await?,
        };
        log("running against the cluster; Ctrl-C stops");
        return controller::run(
            Clientset::new(client),
            config,
            options,
            Outcomes::default(),
            stop,
        )
        .await;
    }
    // Embedded: an in-memory API server on a real localhost port, with the scenario.
    let server = kubegen_runtime::testing::ApiServer::new();
    for registration in kubegen_kubernetes::fake::registrations()? {
        server.register_if_absent(registration);
    }
    let tcp = server.serve_tcp().await?;
    log(&format!(
        "embedded API server at {} (kubeconfig {}); creating the demo namespace `{}`",
        tcp.url(),
        tcp.kubeconfig_path().display(),
        scenario::NAMESPACE
    ));
    let cs = Clientset::new(tcp.client().await?);
    scenario::create(&cs).await?;
    let outcomes = Outcomes::default();
    let task = tokio::spawn(controller::run(
        cs,
        config,
        options.clone(),
        outcomes.clone(),
        stop.clone(),
    ));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !scenario::handled(&outcomes.snapshot()) && !stop.is_cancelled() {
        if options.dry_run || tokio::time::Instant::now() > deadline {
            tokio::time::sleep(Duration::from_secs(3)).await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.cancel();
    task.await??;
    let done = outcomes.snapshot();
    log(&format!(
        "done: {} evicted deleted, {} force-deleted, {} Deployments scaled to 0, {} reported for restarts",
        done.deleted_evicted.len(),
        done.force_deleted.len(),
        done.scaled_to_zero.len(),
        done.reported.len()
    ));
    tcp.shutdown().await;
    if !options.dry_run && !scenario::handled(&done) {
        return Err("the demo did not finish within 30 s".into());
    }
    Ok(())
}
