//! The embedded demo: an in-memory API server with a namespace of Pods in trouble, one
//! of each kind the processors handle, and the configuration that handles them quickly.
//!
//! The in-memory server runs no kubelet or controller-manager, so the scenario writes the
//! Pod statuses a kubelet would (an eviction, an image pull back-off, restarts) itself.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kubegen_kubernetes::clientset::Clientset;
use kubegen_runtime::client::{DeleteOptions, WriteOptions};

use crate::config::Config;

/// The namespace the scenario lives in.
pub const NAMESPACE: &str = "demo";

/// The demo's configuration: every processor on, short limits so it finishes in seconds.
pub const CONFIG: &str = "
workers: 2
processors:
  evicted: {enabled: true}
  stuckTerminating: {enabled: true, after: 1s, removeFinalizers: true, namespaces: [demo]}
  imagePullBackOff: {enabled: true, after: 2s}
  restarts: {enabled: true, maxRestarts: 5}
";

/// [`CONFIG`], parsed.
pub fn config() -> Result<Config, String> {
    serde_yaml::from_str(CONFIG).map_err(|e| format!("the built-in demo configuration: {e}"))
}

fn from_json<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// Creates the scenario through `cs`: an evicted Pod, a Pod stuck terminating (a
/// finalizer nobody removes), a Deployment whose Pod cannot pull its image, and a Pod
/// that restarted 7 times.
pub async fn create(cs: &Clientset) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let wp = WriteOptions::default();
    let ns: Namespace = from_json(serde_json::json!({"metadata": {"name": NAMESPACE}}))?;
    let _ = cs.core_v1().namespaces().create(&ns, &wp).await;
    let pods = cs.core_v1().pods(NAMESPACE);
    let container = serde_json::json!([{"name": "app", "image": "example.com/app:1"}]);

    let evicted: Pod = from_json(serde_json::json!({
        "metadata": {"name": "evicted-1", "namespace": NAMESPACE},
        "spec": {"containers": container},
    }))?;
    let mut evicted = pods.create(&evicted, &wp).await?;
    evicted.status = Some(from_json(serde_json::json!({
        "phase": "Failed", "reason": "Evicted",
        "message": "The node was low on resource: memory.",
    }))?);
    pods.update_status(&evicted, &wp).await?;

    let stuck: Pod = from_json(serde_json::json!({
        "metadata": {"name": "stuck-1", "namespace": NAMESPACE, "finalizers": ["example.com/gone-controller"]},
        "spec": {"containers": container},
    }))?;
    pods.create(&stuck, &wp).await?;
    pods.delete("stuck-1", &DeleteOptions::default()).await?;

    let deployment: Deployment = from_json(serde_json::json!({
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "example.com/missing:404"}]}}},
    }))?;
    let deployment = cs
        .apps_v1()
        .deployments(NAMESPACE)
        .create(&deployment, &wp)
        .await?;
    let owner = |kind: &str, name: &str, uid: Option<String>| serde_json::json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid.unwrap_or_default(), "controller": true}]);
    let rs: ReplicaSet = from_json(serde_json::json!({
        "metadata": {"name": "web-5d9c", "namespace": NAMESPACE,
                     "ownerReferences": owner("Deployment", "web", deployment.metadata.uid.clone())},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "example.com/missing:404"}]}}},
    }))?;
    let rs = cs
        .apps_v1()
        .replica_sets(NAMESPACE)
        .create(&rs, &wp)
        .await?;
    let pulling: Pod = from_json(serde_json::json!({
        "metadata": {"name": "web-5d9c-x1", "namespace": NAMESPACE, "labels": {"app": "web"},
                     "ownerReferences": owner("ReplicaSet", "web-5d9c", rs.metadata.uid.clone())},
        "spec": {"containers": [{"name": "web", "image": "example.com/missing:404"}]},
    }))?;
    let mut pulling = pods.create(&pulling, &wp).await?;
    pulling.status = Some(from_json(serde_json::json!({
        "phase": "Pending",
        "containerStatuses": [{"name": "web", "image": "example.com/missing:404", "imageID": "", "ready": false, "restartCount": 0,
                               "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}}],
    }))?);
    pods.update_status(&pulling, &wp).await?;

    let flaky: Pod = from_json(serde_json::json!({
        "metadata": {"name": "flaky-1", "namespace": NAMESPACE},
        "spec": {"containers": container},
    }))?;
    let mut flaky = pods.create(&flaky, &wp).await?;
    flaky.status = Some(from_json(serde_json::json!({
        "phase": "Running",
        "containerStatuses": [{"name": "app", "image": "example.com/app:1", "imageID": "", "ready": true, "restartCount": 7,
                               "state": {"running": {}}}],
    }))?);
    pods.update_status(&flaky, &wp).await?;
    Ok(())
}

/// Whether everything the scenario set up has been handled.
pub fn handled(done: &crate::controller::Done) -> bool {
    let key = |n: &str| format!("{NAMESPACE}/{n}");
    done.deleted_evicted.contains(&key("evicted-1"))
        && done.force_deleted.contains(&key("stuck-1"))
        && done.scaled_to_zero.contains(&key("web"))
        && done.reported.contains_key(&key("flaky-1"))
}
