//! A Pod cache at about half the memory: the typed informer of Pods caches the compact
//! mirror (`kubegen_kubernetes::compact`) by default. Its lister is read as the
//! k8s-openapi Pod is read, and a cached object converts to k8s-openapi's `Pod` where a
//! write needs one. Runs on the in-memory API server; no cluster needed:
//!
//! ```text
//! cargo run -p kubegen-kubernetes --features kubegen-runtime/testing --example compact_cache
//! ```

use std::error::Error;
use std::mem::size_of;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubegen_kubernetes::clientset::Clientset;
use kubegen_kubernetes::compact;
use kubegen_kubernetes::informers::SharedInformerFactory;
use kubegen_runtime::client::WriteOptions;
use kubegen_runtime::labels::Selector;
use kubegen_runtime::testing::ApiServer;

type BoxError = Box<dyn Error + Send + Sync>;

fn pod(i: usize) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("web-{i}")),
            namespace: Some("default".into()),
            labels: Some([("app".to_owned(), "web".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(format!("node-{}", i % 3)),
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx:1.27".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let server = ApiServer::new();
    let cs = Clientset::new(kube::Client::new(server.service(), "default"));
    for i in 0..6 {
        cs.core_v1()
            .pods("default")
            .create(&pod(i), &WriteOptions::default())
            .await?;
    }

    // The typed informer caches the compact mirror (`k8s_openapi_lister()` would cache
    // k8s-openapi's Pod instead, at about twice the memory).
    let factory = SharedInformerFactory::new(cs.clone(), Duration::ZERO);
    let pods = factory.core().v1().pods();
    let lister = pods.lister();
    factory.start();
    println!("synced: {:?}", factory.wait_for_cache_sync().await);

    // Fields read as on k8s-openapi's Pod; optional structs deref through their box.
    let mut by_node = std::collections::BTreeMap::<String, usize>::new();
    for p in lister.list(&Selector::everything()) {
        if let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone()) {
            *by_node.entry(node).or_default() += 1;
        }
    }
    println!("pods per node: {by_node:?}");

    // A write takes k8s-openapi's type: convert a copy of the cached object.
    let cached = lister.pods("default").get("web-0")?;
    let mut full = Pod::from((*cached).clone());
    full.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("checked".into(), "true".into());
    cs.core_v1()
        .pods("default")
        .update(&full, &WriteOptions::default())
        .await?;

    println!(
        "inline sizes, k8s-openapi / compact: Pod {} / {}, PodSpec {} / {}, Container {} / {}",
        size_of::<Pod>(),
        size_of::<compact::core::v1::Pod>(),
        size_of::<PodSpec>(),
        size_of::<compact::core::v1::PodSpec>(),
        size_of::<Container>(),
        size_of::<compact::core::v1::Container>(),
    );
    factory.shutdown().await;
    Ok(())
}
