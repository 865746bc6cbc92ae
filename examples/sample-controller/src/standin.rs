//! A stand-in for kube-controller-manager's Deployment controller, for the embedded demo
//! only: the in-memory API server runs no controllers or kubelets, so nothing would ever
//! make a Deployment's replicas available. Every `period`, each Deployment whose status
//! differs from its spec gets `replicas`, `readyReplicas`, `availableReplicas` and
//! `updatedReplicas` set to `spec.replicas` (and `observedGeneration` to its generation).
//! On a real cluster, do not run it.

use std::time::Duration;

use k8s_openapi::api::apps::v1::DeploymentStatus;
use kubegen_kubernetes::clientset::Clientset;
use kubegen_runtime::client::{ListOptions, WriteOptions};
use tokio_util::sync::CancellationToken;

/// Runs until `stop` fires.
pub async fn run(cs: Clientset, period: Duration, stop: CancellationToken) {
    let deployments = cs.apps_v1().deployments("");
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        let Ok(list) = deployments.list(&ListOptions::default()).await else {
            continue;
        };
        for mut d in list.items {
            let want = d.spec.replicas.unwrap_or(1);
            let status = d.status.get_or_insert_with(DeploymentStatus::default);
            if status.available_replicas == Some(want) && status.replicas == Some(want) {
                continue;
            }
            status.replicas = Some(want);
            status.ready_replicas = Some(want);
            status.available_replicas = Some(want);
            status.updated_replicas = Some(want);
            status.observed_generation = d.metadata.generation;
            let ns = d.metadata.namespace.clone().unwrap_or_default();
            let _ = cs
                .apps_v1()
                .deployments(&ns)
                .update_status(&d, &WriteOptions::default())
                .await;
        }
    }
}
