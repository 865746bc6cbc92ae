//! client-go's metrics, scraped from the `/metrics` endpoint while a rate-limited client,
//! an informer and a leader elector run against the in-memory API server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubegen_runtime::cache::informer::{InformerOptions, SharedIndexInformer};
use kubegen_runtime::cache::reflector::ReflectorOptions;
use kubegen_runtime::client::{ResourceClient, RestConfig};
use kubegen_runtime::errors::StatusError;
use kubegen_runtime::leaderelection::{
    LeaderCallbacks, LeaderElectionOptions, LeaderElector, LeaseLock,
};
use kubegen_runtime::metrics::prometheus::{register, serve};
use kubegen_runtime::testing::{ApiServer, Reactor};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

async fn get(addr: SocketAddr, path: &str) -> String {
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut response = String::new();
    conn.read_to_string(&mut response).await.unwrap();
    response
}

/// The value of the sample `name{labels}` (labels exactly as exposed), if present.
fn sample(scrape: &str, name_and_labels: &str) -> Option<f64> {
    scrape.lines().find_map(|l| {
        let rest = l.strip_prefix(name_and_labels)?;
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn metrics_endpoint_serves_client_go_metric_names() {
    let registry = prometheus::Registry::new();
    register(&registry).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let serving = tokio::spawn(serve(listener, registry, stop.clone()));

    let server = ApiServer::new();
    server
        .create(
            "configmaps",
            json!({"metadata": {"name": "a", "namespace": "ns"}}),
        )
        .unwrap();
    // One 429 with Retry-After 0: the retried request counts once per attempt.
    server.react(
        Reactor::new("get", "configmaps")
            .times(1)
            .error(StatusError::too_many_requests("slow down", 0)),
    );
    let client = RestConfig::default()
        .wrap(kube::Client::new(server.service(), "ns"))
        .unwrap();
    let cms = ResourceClient::<ConfigMap>::namespaced(client.clone(), "ns");
    cms.get("a").await.unwrap();

    // LIST + WATCH (not the default streaming list), so that the list metrics have a list
    // to count.
    let informer = SharedIndexInformer::new(
        Arc::new(cms.clone()),
        InformerOptions::default().reflector(ReflectorOptions::default().use_watch_list(false)),
    );
    let running = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    assert!(informer.wait_for_sync(&stop).await);

    let lock = LeaseLock::new(client, "ns", "metrics-test", "me");
    let config = LeaderElectionOptions::new(lock)
        .name("metrics-test")
        .callbacks(
            LeaderCallbacks::new()
                .on_started_leading(|leading: CancellationToken| async move {
                    leading.cancelled().await
                })
                .on_stopped_leading(|| {}),
        );
    let elector = LeaderElector::new(config).unwrap();
    let leading = CancellationToken::new();
    let election = tokio::spawn({
        let (elector, leading) = (elector.clone(), leading.clone());
        async move { elector.run(leading).await }
    });
    eventually("leading", || elector.is_leading()).await;

    let scrape = get(addr, "/metrics").await;
    assert!(scrape.starts_with("HTTP/1.1 200 OK"), "{scrape}");
    assert_eq!(
        sample(
            &scrape,
            r#"rest_client_requests_total{code="429",host="",method="GET"}"#
        ),
        Some(1.0),
        "{scrape}"
    );
    assert!(
        sample(
            &scrape,
            r#"rest_client_requests_total{code="200",host="",method="GET"}"#
        )
        .is_some_and(|n| n >= 2.0),
        "the retried get and the informer's list: {scrape}"
    );
    assert!(
        sample(
            &scrape,
            r#"rest_client_request_duration_seconds_count{url="/api/v1/namespaces/{namespace}/configmaps/{name}",verb="GET"}"#
        )
        .is_some_and(|n| n >= 2.0),
        "{scrape}"
    );
    assert_eq!(
        sample(&scrape, r#"reflector_lists_total{name="ConfigMap"}"#),
        Some(1.0),
        "{scrape}"
    );
    assert!(
        sample(&scrape, r#"reflector_items_per_list_sum{name="ConfigMap"}"#) == Some(1.0),
        "{scrape}"
    );
    assert_eq!(
        sample(
            &scrape,
            r#"leader_election_master_status{name="metrics-test"}"#
        ),
        Some(1.0),
        "{scrape}"
    );

    leading.cancel();
    election.await.unwrap();
    let scrape = get(addr, "/metrics").await;
    assert_eq!(
        sample(
            &scrape,
            r#"leader_election_master_status{name="metrics-test"}"#
        ),
        Some(0.0),
        "{scrape}"
    );
    // The informer's watch starts after its list; scrape until it shows.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let scrape = get(addr, "/metrics").await;
        if sample(&scrape, r#"reflector_watches_total{name="ConfigMap"}"#).is_some_and(|n| n >= 1.0)
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no watch counted: {scrape}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(get(addr, "/other").await.starts_with("HTTP/1.1 404"));

    stop.cancel();
    running.await.unwrap();
    serving.await.unwrap();
}
