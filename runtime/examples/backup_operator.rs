//! A Backup operator written on the controller builder: for each `Backup`
//! (example.kubegen.io/v1) it owns a CronJob that runs the backup on the Backup's
//! schedule, reports a `Ready` condition in the Backup's status, and holds a finalizer so
//! that deleting a Backup first deletes what it stored.
//!
//! ```text
//! cargo run -p kubegen-runtime --example backup_operator --features testing
//! ```
//!
//! The program runs against the in-memory API server (with a cluster, the client is
//! `kube::Client::try_default().await?` and the CRD is installed with kubectl): it
//! registers the CRD, creates a Backup, waits until the operator made its CronJob and
//! marked it Ready, changes the schedule, deletes the Backup, and waits for the cleanup.
//!
//! The operator proper is the part between the `operator` markers (types, CRD and demo
//! harness aside); docs/controller.md compares its length with the same operator on
//! kube-runtime.

use std::borrow::Cow;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::controller::child::create_or_update;
use kubegen_runtime::controller::conditions::{condition, set_status_condition};
use kubegen_runtime::controller::finalizer::{finalizer, Event};
use kubegen_runtime::controller::{Action, Context, Controller, Target};
use kubegen_runtime::record::{reference, EventBroadcaster, EventSource};
use kubegen_runtime::testing::ApiServer;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

type BoxError = Box<dyn Error + Send + Sync>;

/// A Backup: what to back up, how often, and with which image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Backup {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: BackupSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<BackupStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct BackupSpec {
    schedule: String,
    image: String,
    source: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct BackupStatus {
    #[serde(default)]
    conditions: Vec<Condition>,
}

// What kube-derive's `CustomResource` or kubegen's generator write for a type.
impl kube::Resource for Backup {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;
    fn kind(_: &()) -> Cow<'_, str> {
        "Backup".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "example.kubegen.io".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "backups".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

// operator: begin
const FINALIZER: &str = "example.kubegen.io/stored-backups";

async fn reconcile(target: Target<Backup>, ctx: Arc<Context<()>>) -> Result<Action, BoxError> {
    let Some(backup) = target.live() else {
        return Ok(Action::done());
    };
    let client = ctx.client().ok_or("the factory has a client")?.clone();
    let ns = backup.metadata.namespace.clone().unwrap_or_default();
    let backups = Api::<Backup>::namespaced(client.clone(), &ns);
    let cron_jobs = Api::<CronJob>::namespaced(client, &ns);
    let action = finalizer(&backups, FINALIZER, backup, |event| async {
        match event {
            Event::Apply(backup) => apply(&backup, &backups, &cron_jobs, &ctx).await,
            Event::Cleanup(backup) => {
                // Where a real operator deletes the stored backups.
                let message = format!("deleted the backups of {}", backup.spec.source);
                if let Some(recorder) = ctx.recorder() {
                    recorder.event(&reference(backup.as_ref()), "Normal", "Cleaned", &message);
                }
                Ok(Action::done())
            }
        }
    });
    Ok(action.await?)
}

async fn apply(
    backup: &Backup,
    backups: &Api<Backup>,
    cron_jobs: &Api<CronJob>,
    ctx: &Context<()>,
) -> Result<Action, BoxError> {
    let name = format!(
        "backup-{}",
        backup.metadata.name.as_deref().unwrap_or_default()
    );
    let spec = serde_json::from_value(
        json!({"schedule": backup.spec.schedule, "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure",
            "containers": [{"name": "backup", "image": backup.spec.image, "args": [backup.spec.source]}],
        }}}}}),
    )?;
    let (_, operation) = create_or_update(cron_jobs, backup, &name, |cj| cj.spec = spec).await?;
    let mut status = backup.status.clone().unwrap_or_default();
    let ready = condition(
        "Ready",
        "True",
        "CronJobReady",
        &format!("CronJob {name} {operation}"),
        backup.metadata.generation,
    );
    if set_status_condition(&mut status.conditions, ready) {
        let patch = Patch::Merge(json!({"status": status}));
        backups
            .patch_status(
                backup.metadata.name.as_deref().unwrap_or_default(),
                &PatchParams::default(),
                &patch,
            )
            .await?;
        if let Some(recorder) = ctx.recorder() {
            recorder.event(
                &reference(backup),
                "Normal",
                "Scheduled",
                &format!("CronJob {name} {operation}"),
            );
        }
    }
    Ok(Action::requeue_after(Duration::from_secs(300)))
}

async fn run_operator(client: kube::Client, stop: CancellationToken) -> Result<(), BoxError> {
    let factory = InformerFactory::new(client.clone(), FactoryOptions::new(Duration::ZERO));
    let events = EventBroadcaster::new();
    events.start_logging();
    let recorder = events.new_recorder(EventSource::new("backup-operator", ""));
    Controller::new(&factory)
        .for_::<Backup>()
        .owns::<CronJob>()
        .recorder(Arc::new(recorder))
        .run(reconcile, (), stop)
        .await?;
    factory.shutdown().await;
    events.shutdown();
    Ok(())
}
// operator: end

const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "backups.example.kubegen.io"},
  "spec": {"group": "example.kubegen.io", "scope": "Namespaced",
    "names": {"plural": "backups", "singular": "backup", "kind": "Backup", "listKind": "BackupList"},
    "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
          "schedule": {"type": "string"}, "image": {"type": "string"}, "source": {"type": "string"}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}}"#;

/// Polls `check` every 20 ms for at most 10 s.
async fn wait_for<F, Fut>(what: &str, check: F) -> Result<(), BoxError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<bool, BoxError>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check().await? {
        if tokio::time::Instant::now() > deadline {
            return Err(format!("timed out waiting until {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("{what}");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let server = ApiServer::new();
    server.create_object(serde_json::from_str(CRD)?)?;
    let client = kube::Client::new(server.service(), "default");
    let stop = CancellationToken::new();
    let operator = tokio::spawn(run_operator(client.clone(), stop.clone()));

    let backups = Api::<Backup>::namespaced(client.clone(), "default");
    let cron_jobs = Api::<CronJob>::namespaced(client, "default");
    let backup: Backup = serde_json::from_value(json!({
        "apiVersion": "example.kubegen.io/v1", "kind": "Backup",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"schedule": "0 3 * * *", "image": "restic/restic:0.17", "source": "pvc/db-data"},
    }))?;
    backups.create(&PostParams::default(), &backup).await?;
    wait_for("the Backup is Ready with its CronJob", || async {
        let ready = backups.get("db").await?.status.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        });
        Ok(ready && cron_jobs.get_opt("backup-db").await?.is_some())
    })
    .await?;

    let patch = Patch::Merge(json!({"spec": {"schedule": "0 4 * * *"}}));
    backups.patch("db", &PatchParams::default(), &patch).await?;
    wait_for("the CronJob follows the new schedule", || async {
        let cj = cron_jobs.get("backup-db").await?;
        Ok(cj.spec.schedule == "0 4 * * *")
    })
    .await?;

    backups.delete("db", &DeleteParams::default()).await?;
    wait_for("the Backup is gone after its cleanup", || async {
        Ok(backups.get_opt("db").await?.is_none())
    })
    .await?;

    stop.cancel();
    operator.await??;
    Ok(())
}
