//! client-go's metrics on `/metrics`: a rate-limited client, an informer and a leader
//! elector run against the in-memory API server, and their `rest_client_*`, `reflector_*`
//! and `leader_election_master_status` metrics are served on localhost.
//!
//! ```sh
//! cargo run -p kubegen-runtime --example metrics --features testing,prometheus
//! cargo run -p kubegen-runtime --example metrics --features testing,prometheus -- --serve
//! ```
//!
//! Without `--serve` it scrapes its own endpoint once, prints the metric lines and exits;
//! with it, it serves on `METRICS_ADDR` (default `127.0.0.1:9090`) until Ctrl-C.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubegen_runtime::cache::informer::{InformerOptions, SharedIndexInformer};
use kubegen_runtime::client::{ResourceClient, RestConfig};
use kubegen_runtime::leaderelection::{
    LeaderCallbacks, LeaderElectionOptions, LeaderElector, LeaseLock,
};
use kubegen_runtime::metrics::prometheus::{register, serve};
use kubegen_runtime::testing::ApiServer;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let serve_forever = std::env::args().any(|a| a == "--serve");
    let registry = prometheus::Registry::new();
    register(&registry)?;

    let server = ApiServer::new();
    for name in ["a", "b", "c"] {
        server.create(
            "configmaps",
            json!({"metadata": {"name": name, "namespace": "default"}}),
        )?;
    }
    let client = RestConfig::default().wrap(kube::Client::new(server.service(), "default"))?;
    let stop = CancellationToken::new();

    let informer = SharedIndexInformer::new(
        Arc::new(ResourceClient::<ConfigMap>::all(client.clone())),
        InformerOptions::default(),
    );
    tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    informer.wait_for_sync(&stop).await;

    let lock = LeaseLock::new(client, "default", "metrics-demo", "me");
    let config = LeaderElectionOptions::new(lock)
        .name("metrics-demo")
        .callbacks(
            LeaderCallbacks::new()
                .on_started_leading(|leading: CancellationToken| async move {
                    leading.cancelled().await
                })
                .on_stopped_leading(|| {}),
        );
    let elector = LeaderElector::new(config)?;
    tokio::spawn({
        let (elector, stop) = (elector.clone(), stop.clone());
        async move { elector.run(stop).await }
    });
    while !elector.is_leading() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let addr = if serve_forever {
        std::env::var("METRICS_ADDR").unwrap_or_else(|_| "127.0.0.1:9090".into())
    } else {
        "127.0.0.1:0".into()
    };
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let addr = listener.local_addr()?;
    println!("serving http://{addr}/metrics");
    let serving = tokio::spawn(serve(listener, registry, stop.clone()));

    if serve_forever {
        tokio::signal::ctrl_c().await?;
    } else {
        let mut conn = tokio::net::TcpStream::connect(addr).await?;
        conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await?;
        let mut response = String::new();
        conn.read_to_string(&mut response).await?;
        for line in response.lines().filter(|l| {
            l.starts_with("rest_client_requests_total")
                || l.starts_with("reflector_lists_total")
                || l.starts_with("reflector_watches_total")
                || l.starts_with("leader_election_master_status")
        }) {
            println!("{line}");
        }
    }
    stop.cancel();
    serving.await?;
    Ok(())
}
