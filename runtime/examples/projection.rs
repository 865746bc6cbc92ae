//! A projection informer on the in-memory API server: a cache of Pods that holds only
//! what a node-draining controller reads (labels, owner, node, phase, container images),
//! decoded straight from the wire; the rest of each Pod is never built.
//!
//! ```text
//! cargo run -p kubegen-runtime --example projection --features testing
//! ```
//!
//! The program seeds Pods spread over two nodes, starts an informer over the projection
//! `PodPlacement`, lists the Pods of one node from the cache by an index on
//! `spec.nodeName`, moves a Pod to the other node (a write through the full `Pod` type,
//! never through the projection) and waits until the cache and a handler have seen it.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubegen_runtime::cache::informer::{
    InformerOptions, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kubegen_runtime::cache::store::Indexers;
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::object::ObjectMeta;
use kubegen_runtime::testing::ApiServer;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

type BoxError = Box<dyn Error + Send + Sync>;

/// What the controller reads of a Pod. Fields it does not name are skipped while
/// decoding; `metadata` (required) carries the key, labels and owner references.
#[derive(Clone, Debug, Deserialize)]
struct PodPlacement {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: PlacementSpec,
    #[serde(default)]
    status: PlacementStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlacementSpec {
    node_name: Option<String>,
    #[serde(default)]
    containers: Vec<ContainerImage>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct ContainerImage {
    name: String,
    image: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct PlacementStatus {
    phase: Option<String>,
}

// Lists and watches `pods` (the source kind's group, version, plural and scope).
kubegen_runtime::projection!(PodPlacement, Pod);

const BY_NODE: &str = "byNode";

fn pod(i: usize) -> serde_json::Value {
    json!({
        "metadata": {"name": format!("web-{i}"), "namespace": "demo", "labels": {"app": "web"}},
        "spec": {
            "nodeName": format!("node-{}", i % 2),
            "containers": [{"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                "env": [{"name": "MODE", "value": "production"}]}]
        },
        "status": {"phase": "Running", "podIP": format!("10.0.0.{i}")}
    })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let server = ApiServer::new();
    server.seed("pods", 6, pod)?;
    let client = kube::Client::new(server.service(), "default");

    let mut indexers = Indexers::<PodPlacement>::new();
    indexers.insert(
        BY_NODE.to_owned(),
        Arc::new(|p: &PodPlacement| Ok(p.spec.node_name.clone().into_iter().collect())),
    );
    let informer = SharedIndexInformer::with_indexers(
        Arc::new(ResourceClient::<PodPlacement>::all(client.clone())),
        InformerOptions::default(),
        indexers,
    );
    let (moved_tx, mut moved) = mpsc::unbounded_channel();
    informer.add_event_handler(ResourceEventHandlerFuncs::new().update_func(
        move |old: &Arc<PodPlacement>, new: &Arc<PodPlacement>| {
            if old.spec.node_name != new.spec.node_name {
                let _ = moved_tx.send((
                    new.metadata.name.clone().unwrap_or_default(),
                    new.spec.node_name.clone().unwrap_or_default(),
                ));
            }
        },
    ))?;
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let informer = informer.clone();
        let stop = stop.clone();
        async move { informer.run(stop).await }
    });
    informer.wait_for_sync(&stop).await;

    let on_node_0 = informer.indexer().by_index(BY_NODE, "node-0")?;
    let mut names: Vec<String> = on_node_0
        .iter()
        .map(|p| {
            let images: Vec<String> = p
                .spec
                .containers
                .iter()
                .map(|c| format!("{}={}", c.name, c.image.as_deref().unwrap_or("")))
                .collect();
            format!(
                "{} ({}, {})",
                p.metadata.name.as_deref().unwrap_or(""),
                p.status.phase.as_deref().unwrap_or("?"),
                images.join(",")
            )
        })
        .collect();
    names.sort();
    println!("on node-0: {}", names.join("; "));
    assert_eq!(names.len(), 3);

    // Writes go through the full type: a projection lacks fields an update would clear.
    let pods: kube::Api<Pod> = kube::Api::namespaced(client, "demo");
    let patch = json!({"spec": {"nodeName": "node-1"}});
    pods.patch(
        "web-0",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await?;
    let (name, node) = tokio::time::timeout(Duration::from_secs(10), moved.recv())
        .await?
        .ok_or("handler dropped")?;
    println!("{name} moved to {node}");
    assert_eq!((name.as_str(), node.as_str()), ("web-0", "node-1"));
    assert_eq!(informer.indexer().by_index(BY_NODE, "node-0")?.len(), 2);

    stop.cancel();
    run.await?;
    Ok(())
}
