//! A controller that owns two fields of a built-in Deployment through typed server-side
//! apply, beside a second manager that owns the rest (as a GitOps tool or `kubectl apply
//! --server-side` would):
//!
//! - the `deployer` applies the workload: labels, selector, Pod template, and the
//!   annotation `scaler.example.com/replicas` saying how many replicas it wants;
//! - the `scaler` controller (on the controller builder, one shared informer) owns
//!   exactly `spec.replicas` and one status condition, `example.com/Scaled`.
//!
//! Neither conflicts with the other: each sends only what its apply configuration sets,
//! and each can read back, with `extract_deployment`, what it owns. Runs on the
//! in-memory API server; no cluster needed:
//!
//! ```text
//! cargo run -p kubegen-kubernetes --features applyconfigurations --example deployment_scaler
//! ```

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubegen_kubernetes::applyconfigurations::apps::v1::{
    deployment, extract_deployment, extract_deployment_status, DeploymentApplyConfiguration,
    DeploymentConditionApplyConfiguration, DeploymentSpecApplyConfiguration,
    DeploymentStatusApplyConfiguration,
};
use kubegen_kubernetes::applyconfigurations::core::v1::{
    ContainerApplyConfiguration, PodSpecApplyConfiguration, PodTemplateSpecApplyConfiguration,
};
use kubegen_kubernetes::applyconfigurations::meta::v1::LabelSelectorApplyConfiguration;
use kubegen_kubernetes::clientset::Clientset;
use kubegen_runtime::apply::ApplyOptions;
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::controller::{Action, Context, Controller, Target};
use kubegen_runtime::testing::ApiServer;
use tokio_util::sync::CancellationToken;

type BoxError = Box<dyn Error + Send + Sync>;

const WANTED: &str = "scaler.example.com/replicas";
const SCALED: &str = "example.com/Scaled";
const SCALER: &str = "scaler";

/// What the deployer owns: everything but the replica count.
fn workload(image: &str, replicas: u32) -> DeploymentApplyConfiguration {
    let labels = [("app", "web")];
    deployment("web", "default")
        .with_labels(labels)
        .with_annotations([(WANTED, replicas.to_string())])
        .with_spec(
            DeploymentSpecApplyConfiguration::default()
                .with_selector(LabelSelectorApplyConfiguration::default().with_match_labels(labels))
                .with_template(
                    PodTemplateSpecApplyConfiguration::default()
                        .with_labels(labels)
                        .with_spec(
                            PodSpecApplyConfiguration::default().with_containers([
                                ContainerApplyConfiguration::default()
                                    .with_name("web")
                                    .with_image(image),
                            ]),
                        ),
                ),
        )
}

/// The scaler: `spec.replicas` from the annotation, and a condition saying so. It
/// applies only when something would change, so its own writes do not loop.
async fn reconcile(target: Target<Deployment>, ctx: Arc<Context<()>>) -> Result<Action, BoxError> {
    let Some(d) = target.live() else {
        return Ok(Action::done());
    };
    let (name, ns) = (
        d.metadata.name.clone().unwrap_or_default(),
        d.metadata.namespace.clone().unwrap_or_default(),
    );
    let Some(wanted) = d
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(WANTED))
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return Ok(Action::done());
    };
    let client = ctx.client().ok_or("the factory has a client")?.clone();
    let deployments = Clientset::new(client).apps_v1().deployments(&ns);
    // Controllers take their fields back if someone else changed them.
    let opts = ApplyOptions::new(SCALER).force();

    let spec = deployment(&name, &ns)
        .with_spec(DeploymentSpecApplyConfiguration::default().with_replicas(wanted));
    if extract_deployment(&d, SCALER)? != spec {
        deployments.apply_config(&spec, &opts).await?;
    }

    // The condition keeps its transition time while its status stays the same.
    let message = format!("{wanted} replicas, as {WANTED} asks");
    let owned = extract_deployment_status(&d, SCALER)?;
    let current = owned
        .status
        .and_then(|s| s.conditions)
        .and_then(|c| c.into_iter().find(|c| c.type_.as_deref() == Some(SCALED)));
    if current.as_ref().and_then(|c| c.message.as_deref()) != Some(message.as_str()) {
        let since = match current.and_then(|c| c.last_transition_time) {
            Some(t) => t,
            None => Time(k8s_openapi::jiff::Timestamp::now()),
        };
        let status = deployment(&name, &ns).with_status(
            DeploymentStatusApplyConfiguration::default().with_conditions([
                DeploymentConditionApplyConfiguration::default()
                    .with_type(SCALED)
                    .with_status("True")
                    .with_reason("AtWantedReplicas")
                    .with_message(message)
                    .with_last_transition_time(since),
            ]),
        );
        deployments.apply_status_config(&status, &opts).await?;
    }
    Ok(Action::done())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), "default");
    let deployments = Clientset::new(client.clone())
        .apps_v1()
        .deployments("default");

    let stop = CancellationToken::new();
    let factory = InformerFactory::new(client, FactoryOptions::new(Duration::ZERO));
    let scaler = Controller::new(&factory)
        .for_::<Deployment>()
        .named(SCALER)
        .run(reconcile, (), stop.clone());
    let scaler = tokio::spawn(scaler);

    let deployer = ApplyOptions::new("deployer");
    deployments
        .apply_config(&workload("nginx:1.27", 3), &deployer)
        .await?;
    let d = settle(&deployments, |d| d.spec.replicas == Some(3)).await?;
    report("after the first apply", &d)?;

    // The deployer changes the image and wants 5 replicas: no conflict, as it never
    // owned spec.replicas.
    deployments
        .apply_config(&workload("nginx:1.28", 5), &deployer)
        .await?;
    let d = settle(&deployments, |d| d.spec.replicas == Some(5)).await?;
    report("after the deployer's second apply", &d)?;

    stop.cancel();
    scaler.await??;
    Ok(())
}

/// Waits (up to 10 s) until the Deployment is as `done` says.
async fn settle(
    deployments: &kubegen_kubernetes::clientset::apps::v1::DeploymentClient,
    done: impl Fn(&Deployment) -> bool,
) -> Result<Deployment, BoxError> {
    for _ in 0..200 {
        let d = deployments.get("web").await?;
        if done(&d) {
            return Ok(d);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err("the scaler did not converge in 10 s".into())
}

fn report(when: &str, d: &Deployment) -> Result<(), BoxError> {
    println!("== {when}");
    let image = d
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    println!("replicas {:?}, image {image}", d.spec.replicas);
    for manager in ["deployer", SCALER] {
        let owned = serde_json::to_string(&extract_deployment(d, manager)?)?;
        println!("{manager} owns: {owned}");
    }
    let status = serde_json::to_string(&extract_deployment_status(d, SCALER)?)?;
    println!("{SCALER} owns in status: {status}");
    Ok(())
}
