//! `sample-controller`: see README.md. With no flags, a demo on an embedded in-memory API
//! server; `--kubeconfig` (or `--cluster`: KUBECONFIG, ~/.kube/config or in-cluster) for
//! a real cluster, where it runs until Ctrl-C; `--leader-elect` adds Lease election.
// The kind is `Foo`: `foo` names one, as in sample-controller's Go code.
#![allow(clippy::disallowed_names)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use kubegen_runtime::client::{ListOptions, WriteOptions};
use kubegen_runtime::leaderelection::{
    LeaderCallbacks, LeaderElectionOptions, LeaderElector, LeaseLock,
};
use sample_controller::apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use sample_controller::controller::{self, log, Clients};
use tokio_util::sync::CancellationToken;

/// kubernetes/sample-controller on kubegen.
#[derive(Parser)]
#[command(name = "sample-controller", version)]
struct Cli {
    /// Run against the cluster of this kubeconfig.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Run against the cluster kube's defaults find (KUBECONFIG, ~/.kube/config, or the
    /// in-cluster service account).
    #[arg(long, conflicts_with = "kubeconfig")]
    cluster: bool,
    /// Elect a leader through the Lease `kube-system/sample-controller` (or `default`
    /// on the embedded server) before controlling anything.
    #[arg(long)]
    leader_elect: bool,
    /// Workers processing the queue.
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sample-controller: error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Error> {
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
        return control(client, &cli, "kube-system", stop).await;
    }

    let server = kubegen_runtime::testing::ApiServer::new();
    server.register_crd(sample_controller::CRD)?;
    let tcp = server.serve_tcp().await?;
    log(&format!(
        "embedded API server at {} (kubeconfig {}), with the Foo CRD",
        tcp.url(),
        tcp.kubeconfig_path().display()
    ));
    let client = tcp.client().await?;
    let clients = Clients::new(client.clone());
    log("[stand-in] a kube-controller-manager stand-in moves Deployment status towards spec (embedded mode only)");
    let standin = tokio::spawn(sample_controller::standin::run(
        clients.kube.clone(),
        Duration::from_millis(500),
        stop.clone(),
    ));
    let controller = tokio::spawn({
        let (client, stop) = (client.clone(), stop.clone());
        let workers = cli.workers;
        let leader_elect = cli.leader_elect;
        async move {
            let cli = Cli {
                kubeconfig: None,
                cluster: false,
                leader_elect,
                workers,
            };
            control(client, &cli, "default", stop).await
        }
    });
    let outcome = demo(&clients, &stop).await;
    stop.cancel();
    controller.await??;
    let _ = standin.await;
    tcp.shutdown().await;
    outcome
}

/// Runs the controller, under leader election when asked.
async fn control(
    client: kube::Client,
    cli: &Cli,
    lease_namespace: &str,
    stop: CancellationToken,
) -> Result<(), Error> {
    let clients = Clients::new(client.clone());
    if !cli.leader_elect {
        return controller::run(clients, cli.workers, stop).await;
    }
    let identity = format!("sample-controller-{}", std::process::id());
    let lock = LeaseLock::new(client, lease_namespace, "sample-controller", &identity);
    let workers = cli.workers;
    let callbacks = LeaderCallbacks::new()
        .on_started_leading(move |leading: CancellationToken| {
            let clients = clients.clone();
            async move {
                log("leading: starting the controller");
                if let Err(e) = controller::run(clients, workers, leading).await {
                    log(&format!("controller: {e}"));
                }
            }
        })
        .on_stopped_leading(|| log("no longer leading"));
    let elector = LeaderElector::new(
        LeaderElectionOptions::new(lock)
            .callbacks(callbacks)
            .release_on_cancel(true),
    )?;
    elector.run(stop).await;
    Ok(())
}

/// The embedded demo: a Foo, a change of replicas, and a Foo whose Deployment name is
/// taken by a Deployment it does not own.
async fn demo(clients: &Clients, stop: &CancellationToken) -> Result<(), Error> {
    let foos = clients.foos.samplecontroller_v1alpha1().foos("default");
    let deployments = clients.kube.apps_v1().deployments("default");
    let wp = WriteOptions::default();
    let mut example = Foo {
        spec: FooSpec {
            deployment_name: "example-foo".into(),
            replicas: Some(1),
        },
        ..Foo::default()
    };
    example.metadata.name = Some("example-foo".into());
    example.metadata.namespace = Some("default".into());
    foos.create(&example, &wp).await?;
    log("demo: created Foo default/example-foo (deploymentName example-foo, replicas 1)");
    wait_available(clients, "example-foo", 1, stop).await?;

    let mut current = foos.get("example-foo").await?;
    current.spec.replicas = Some(3);
    foos.update(&current, &wp).await?;
    log("demo: scaled Foo example-foo to 3 replicas");
    wait_available(clients, "example-foo", 3, stop).await?;

    let d = deployments.get("example-foo").await?;
    log(&format!(
        "demo: Deployment example-foo has {} replicas, owned by {:?}",
        d.spec.replicas.unwrap_or(0),
        d.metadata
            .owner_references
            .iter()
            .flatten()
            .map(|r| format!("{}/{}", r.kind, r.name))
            .collect::<Vec<_>>()
    ));

    let squatter = sample_controller::controller::new_deployment(&Foo {
        spec: FooSpec {
            deployment_name: "taken".into(),
            replicas: Some(1),
        },
        ..Foo::default()
    });
    let mut squatter = squatter;
    squatter.metadata.owner_references = None;
    squatter.metadata.namespace = Some("default".into());
    deployments.create(&squatter, &wp).await?;
    let mut clash = example.clone();
    clash.metadata.name = Some("clash".into());
    clash.spec.deployment_name = "taken".into();
    foos.create(&clash, &wp).await?;
    log("demo: created Foo default/clash whose Deployment name `taken` belongs to nobody's Foo");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let events = clients
            .kube
            .core_v1()
            .events("default")
            .list(&ListOptions::default())
            .await?;
        if events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some(controller::ERR_RESOURCE_EXISTS))
        {
            for e in &events.items {
                log(&format!(
                    "event: {} {} {}/{}: {} (count {})",
                    e.type_.as_deref().unwrap_or(""),
                    e.reason.as_deref().unwrap_or(""),
                    e.involved_object.kind.as_deref().unwrap_or(""),
                    e.involved_object.name.as_deref().unwrap_or(""),
                    e.message.as_deref().unwrap_or(""),
                    e.count.unwrap_or(1)
                ));
            }
            break;
        }
        if tokio::time::Instant::now() > deadline || stop.is_cancelled() {
            return Err("the demo saw no ErrResourceExists event within 20 s".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    log("demo: done");
    Ok(())
}

async fn wait_available(
    clients: &Clients,
    name: &str,
    want: i32,
    stop: &CancellationToken,
) -> Result<(), Error> {
    let foos = clients.foos.samplecontroller_v1alpha1().foos("default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let foo = foos.get(name).await?;
        let available = foo.status.map(|s| s.available_replicas).unwrap_or(0);
        if available == want {
            log(&format!(
                "demo: Foo {name} status.availableReplicas = {available}"
            ));
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline || stop.is_cancelled() {
            return Err(format!(
                "Foo {name} never reached {want} available replicas (has {available})"
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
