//! The Backup operator of `runtime/examples/backup_operator.rs`, written on kube-runtime's
//! `Controller` for the line count in docs/controller.md (`hack/operator-loc.sh`): the
//! same CRD, owned CronJob, finalizer, `Ready` condition (apimachinery's
//! SetStatusCondition semantics, by hand: kube has no helper), events and requeue.
//!
//! Not a build target. It was checked by copying it to `runtime/examples/` with an
//! `[[example]]` entry (required-features = ["testing"]) and running it against a real
//! kube-apiserver (envtest: `eval "$(hack/real-apiserver.sh env)"`): it converges,
//! follows a schedule change and cleans up like the kubegen one. (It does not run on the
//! in-memory server: kube-runtime's finalizer sends a JSON-patch `test` of a missing
//! `/metadata/finalizers` against null, which kube-apiserver accepts and
//! kubegen-apiserver answers with 422.)

use std::borrow::Cow;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::Resource;
use kube_runtime::controller::{Action, Controller};
use kube_runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use kube_runtime::{finalizer, watcher};
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

#[derive(Debug, thiserror::Error)]
enum OpError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

struct Ctx {
    client: kube::Client,
    recorder: Recorder,
}

async fn reconcile(
    backup: Arc<Backup>,
    ctx: Arc<Ctx>,
) -> Result<Action, finalizer::Error<OpError>> {
    let ns = backup.metadata.namespace.clone().unwrap_or_default();
    let backups = Api::<Backup>::namespaced(ctx.client.clone(), &ns);
    let cron_jobs = Api::<CronJob>::namespaced(ctx.client.clone(), &ns);
    finalizer::finalizer(&backups, FINALIZER, backup, |event| async {
        match event {
            finalizer::Event::Apply(backup) => apply(&backup, &backups, &cron_jobs, &ctx).await,
            finalizer::Event::Cleanup(backup) => {
                // Where a real operator deletes the stored backups.
                let note = format!("deleted the backups of {}", backup.spec.source);
                publish(&ctx, &backup, "Cleaned", note).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await
}

async fn publish(ctx: &Ctx, backup: &Backup, reason: &str, note: String) -> Result<(), OpError> {
    let event = KubeEvent {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    Ok(ctx
        .recorder
        .publish(&event, &backup.object_ref(&()))
        .await?)
}

async fn apply(
    backup: &Backup,
    backups: &Api<Backup>,
    cron_jobs: &Api<CronJob>,
    ctx: &Ctx,
) -> Result<Action, OpError> {
    let name = format!(
        "backup-{}",
        backup.metadata.name.as_deref().unwrap_or_default()
    );
    let owner = backup
        .controller_owner_ref(&())
        .into_iter()
        .collect::<Vec<_>>();
    let cron_job = json!({"apiVersion": "batch/v1", "kind": "CronJob",
    "metadata": {"name": name, "ownerReferences": owner},
    "spec": {"schedule": backup.spec.schedule, "jobTemplate": {"spec": {"template": {"spec": {
        "restartPolicy": "OnFailure",
        "containers": [{"name": "backup", "image": backup.spec.image, "args": [backup.spec.source]}],
    }}}}}});
    let params = PatchParams::apply("backup-operator").force();
    cron_jobs
        .patch(&name, &params, &Patch::Apply(&cron_job))
        .await?;
    let mut status = backup.status.clone().unwrap_or_default();
    let message = format!("CronJob {name} applied");
    let ready = Condition {
        type_: "Ready".into(),
        status: "True".into(),
        reason: "CronJobReady".into(),
        message: message.clone(),
        observed_generation: backup.metadata.generation,
        last_transition_time: Time(Timestamp::now()),
    };
    // apimachinery's SetStatusCondition, by hand: the transition time moves only with
    // the status.
    let changed = match status
        .conditions
        .iter_mut()
        .find(|c| c.type_ == ready.type_)
    {
        None => {
            status.conditions.push(ready);
            true
        }
        Some(c) if c.status != ready.status => {
            *c = ready;
            true
        }
        Some(c) => {
            let changed = (&c.reason, &c.message, c.observed_generation)
                != (&ready.reason, &ready.message, ready.observed_generation);
            c.reason = ready.reason;
            c.message = ready.message;
            c.observed_generation = ready.observed_generation;
            changed
        }
    };
    if changed {
        let patch = Patch::Merge(json!({"status": status}));
        backups
            .patch_status(
                backup.metadata.name.as_deref().unwrap_or_default(),
                &PatchParams::default(),
                &patch,
            )
            .await?;
        publish(ctx, backup, "Scheduled", message).await?;
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn error_policy(
    _backup: Arc<Backup>,
    _error: &finalizer::Error<OpError>,
    _ctx: Arc<Ctx>,
) -> Action {
    Action::requeue(Duration::from_secs(5))
}

async fn run_operator(client: kube::Client, stop: CancellationToken) -> Result<(), BoxError> {
    let reporter = Reporter {
        controller: "backup-operator".into(),
        instance: None,
    };
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        recorder: Recorder::new(client.clone(), reporter),
    });
    Controller::new(
        Api::<Backup>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(Api::<CronJob>::all(client), watcher::Config::default())
    .graceful_shutdown_on(async move { stop.cancelled().await })
    .run(reconcile, error_policy, ctx)
    .for_each(|_| async {})
    .await;
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
    let env = kubegen_runtime::testing::envtest::Environment::builder()
        .crd_yaml(CRD)
        .start()
        .await?;
    let client = env.client();
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
