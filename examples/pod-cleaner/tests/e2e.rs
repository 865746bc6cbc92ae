//! The pod cleaner end to end against the in-memory API server, over the tower Service
//! and over TCP: the demo scenario is handled (evicted Pod deleted, stuck Pod
//! force-deleted with its finalizer removed, the Deployment of a Pod in image pull
//! back-off scaled to zero, restarts reported), a failing write is retried through the
//! rate limiter, dry run changes nothing, and the controller stops cleanly.

use std::time::Duration;

use kubegen_kubernetes::clientset::Clientset;
use kubegen_runtime::client::ListOptions;
use kubegen_runtime::errors::StatusError;
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::{ApiServer, Reactor};
use pod_cleaner::controller::{run, Options, Outcomes};
use pod_cleaner::scenario::{self, NAMESPACE};
use tokio_util::sync::CancellationToken;

fn server() -> ApiServer {
    let server = ApiServer::new();
    for registration in kubegen_kubernetes::fake::registrations().unwrap() {
        server.register_if_absent(registration);
    }
    server
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn handles_the_scenario(cs: Clientset) {
    scenario::create(&cs).await.unwrap();
    let outcomes = Outcomes::default();
    let stop = CancellationToken::new();
    let task = tokio::spawn(run(
        cs.clone(),
        scenario::config().unwrap(),
        Options::default(),
        outcomes.clone(),
        stop.clone(),
    ));
    until("the scenario to be handled", || {
        scenario::handled(&outcomes.snapshot())
    })
    .await;
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the controller stops")
        .unwrap()
        .unwrap();

    let pods = cs.core_v1().pods(NAMESPACE);
    let names: Vec<String> = pods
        .list(&ListOptions::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert!(!names.contains(&"evicted-1".to_owned()), "{names:?}");
    assert!(!names.contains(&"stuck-1".to_owned()), "{names:?}");
    assert!(
        names.contains(&"flaky-1".to_owned()),
        "reported, not deleted: {names:?}"
    );
    let scale = cs
        .apps_v1()
        .deployments(NAMESPACE)
        .get_scale("web")
        .await
        .unwrap();
    // Zero replicas: absent from the Scale's spec, as kube-apiserver writes it (Go's
    // `omitempty`).
    assert_eq!(scale.spec.unwrap().replicas, None);
    assert_eq!(
        outcomes.snapshot().reported[&format!("{NAMESPACE}/flaky-1")],
        7
    );
}

async fn scenario_on(transport: Transport) {
    let server = server();
    let conn = transport
        .connect(&server, Vec::<std::path::PathBuf>::new())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    handles_the_scenario(Clientset::new(conn.client())).await;
    conn.close().await;
}

#[tokio::test]
async fn handles_the_scenario_over_tower() {
    scenario_on(Transport::Tower).await;
}

#[tokio::test]
async fn handles_the_scenario_over_tcp() {
    scenario_on(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn handles_the_scenario_on_a_real_apiserver() {
    scenario_on(Transport::Real).await;
}

#[tokio::test]
async fn a_failing_delete_is_retried_through_the_rate_limiter() {
    let server = server();
    let cs = Clientset::new(kube::Client::new(server.service(), "default"));
    scenario::create(&cs).await.unwrap();
    // The first two DELETEs of Pods fail with 500; the queue retries them.
    server.react(
        Reactor::new("delete", "pods")
            .error(StatusError::new(500, "InternalError", "injected"))
            .times(2),
    );
    let outcomes = Outcomes::default();
    let stop = CancellationToken::new();
    let task = tokio::spawn(run(
        cs,
        scenario::config().unwrap(),
        Options::default(),
        outcomes.clone(),
        stop.clone(),
    ));
    until("the scenario to be handled", || {
        scenario::handled(&outcomes.snapshot())
    })
    .await;
    assert!(
        outcomes.snapshot().retries >= 2,
        "{:?}",
        outcomes.snapshot()
    );
    stop.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let server = server();
    let cs = Clientset::new(kube::Client::new(server.service(), "default"));
    scenario::create(&cs).await.unwrap();
    let before = server.resource_version();
    let outcomes = Outcomes::default();
    let stop = CancellationToken::new();
    let task = tokio::spawn(run(
        cs.clone(),
        scenario::config().unwrap(),
        Options { dry_run: true },
        outcomes.clone(),
        stop.clone(),
    ));
    // Restarts are reported even in a dry run (a report changes nothing).
    until("the restart report", || {
        !outcomes.snapshot().reported.is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(
        server.resource_version(),
        before,
        "a dry run wrote something"
    );
    let done = outcomes.snapshot();
    assert!(
        done.deleted_evicted.is_empty()
            && done.force_deleted.is_empty()
            && done.scaled_to_zero.is_empty()
    );
}
