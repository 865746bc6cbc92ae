//! A controller's Prometheus metrics under controller-runtime's names (features `testing`
//! and `prometheus`): reconcile totals by result, errors, reconcile time, active
//! workers, and its queue's `workqueue_*` series.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::controller::{Action, Context, Controller, ReconcileResult, Target};
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use kubegen_runtime::workqueue::metrics::prometheus::PrometheusMetricsProvider;
use prometheus::proto::MetricType;
use prometheus::Registry;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The value of `family{labels}` (a counter, gauge, or a histogram's sample count).
fn sample(registry: &Registry, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let family = registry.gather().into_iter().find(|f| f.name() == family)?;
    let kind = family.get_field_type();
    let metric = family.get_metric().iter().find(|m| {
        labels.iter().all(|(k, v)| {
            m.get_label()
                .iter()
                .any(|l| l.name() == *k && l.value() == *v)
        })
    })?;
    Some(match kind {
        MetricType::COUNTER => metric.get_counter().get_value(),
        MetricType::GAUGE => metric.get_gauge().get_value(),
        _ => metric.get_histogram().get_sample_count() as f64,
    })
}

// SEMANTICS 14.18
async fn reconcile_metrics_use_controller_runtime_names(transport: Transport, name: &str) {
    let registry = Registry::new();
    kubegen_runtime::controller::metrics::prometheus::register(&registry).unwrap();
    let provider = Arc::new(PrometheusMetricsProvider::new(&registry).unwrap());
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<String>::new())
        .await
        .unwrap();
    for i in 0..3 {
        let cm = json!({"metadata": {"name": format!("ok-{i}"), "namespace": "default"}});
        server.create("configmaps", cm).unwrap();
    }
    for i in 0..2 {
        let cm = json!({"metadata": {"name": format!("bad-{i}"), "namespace": "default"}});
        server.create("configmaps", cm).unwrap();
    }
    let factory = InformerFactory::new(conn.client(), FactoryOptions::new(Duration::ZERO));
    let builder = Controller::new(&factory)
        .for_::<ConfigMap>()
        .named(name)
        .queue_metrics(provider);
    let metrics = builder.metrics();
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (rok, rfailed) = (Arc::clone(&ok), Arc::clone(&failed));
    // A `bad-*` ConfigMap fails its first reconcile, then succeeds.
    let bad_seen = Arc::new(parking_lot::Mutex::new(std::collections::HashSet::new()));
    let reconcile = move |target: Target<ConfigMap>, _ctx: Arc<Context<()>>| {
        let (ok, failed, bad_seen) = (
            Arc::clone(&rok),
            Arc::clone(&rfailed),
            Arc::clone(&bad_seen),
        );
        async move {
            let name = target
                .live()
                .and_then(|cm| cm.metadata.name.clone())
                .unwrap_or_default();
            if name.starts_with("bad-") && bad_seen.lock().insert(name.clone()) {
                failed.fetch_add(1, Ordering::SeqCst);
                return Err(format!("{name} fails once"));
            }
            ok.fetch_add(1, Ordering::SeqCst);
            Ok(Action::done())
        }
    };
    let stop = CancellationToken::new();
    let task = tokio::spawn(builder.run(reconcile, (), stop.clone()));
    let deadline = Instant::now() + Duration::from_secs(60);
    while ok.load(Ordering::SeqCst) < 5 {
        assert!(
            Instant::now() < deadline,
            "every ConfigMap reconciled successfully"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (n, m) = (
        ok.load(Ordering::SeqCst) as f64,
        failed.load(Ordering::SeqCst) as f64,
    );
    assert_eq!((n, m), (5.0, 2.0));
    let c = ("controller", name);
    let total = "controller_runtime_reconcile_total";
    assert_eq!(
        sample(&registry, total, &[c, ("result", "success")]),
        Some(n)
    );
    assert_eq!(sample(&registry, total, &[c, ("result", "error")]), Some(m));
    assert_eq!(
        sample(&registry, "controller_runtime_reconcile_errors_total", &[c]),
        Some(m)
    );
    assert_eq!(
        sample(&registry, "controller_runtime_reconcile_time_seconds", &[c]),
        Some(n + m)
    );
    assert_eq!(
        sample(&registry, "controller_runtime_active_workers", &[c]),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &registry,
            "controller_runtime_max_concurrent_reconciles",
            &[c]
        ),
        Some(kubegen_runtime::controller::DEFAULT_WORKERS as f64)
    );
    assert_eq!(
        sample(&registry, "workqueue_depth", &[("name", name)]),
        Some(0.0)
    );
    assert_eq!(
        sample(&registry, "workqueue_retries_total", &[("name", name)]),
        Some(m)
    );
    assert_eq!(metrics.reconcile_total(ReconcileResult::Success), 5);
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
    conn.close().await;
}

#[tokio::test(start_paused = true)]
async fn reconcile_metrics_use_controller_runtime_names_over_tower() {
    reconcile_metrics_use_controller_runtime_names(Transport::Tower, "configmaps-tower").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_metrics_use_controller_runtime_names_over_tcp() {
    reconcile_metrics_use_controller_runtime_names(Transport::Tcp, "configmaps-tcp").await;
}
