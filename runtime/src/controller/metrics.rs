//! Reconcile metrics under controller-runtime's names.
//!
//! Contract:
//! - Every controller counts its reconciles in a [`ReconcileMetrics`] (read with
//!   [`Builder::metrics`](super::Builder::metrics)): one per finished reconcile, by result
//!   `success`, `error`, `requeue` or `requeue_after` (controller-runtime's labels); an
//!   error or a timeout is `error` and also counts in `errors`; the gauge of active
//!   workers is the number of reconciles running now.
//! - With feature `prometheus`, after [`prometheus::register`], the same figures are
//!   exported process-wide as `controller_runtime_reconcile_total{controller,result}`,
//!   `controller_runtime_reconcile_errors_total{controller}`,
//!   `controller_runtime_reconcile_time_seconds{controller}`,
//!   `controller_runtime_active_workers{controller}` and
//!   `controller_runtime_max_concurrent_reconciles{controller}`. The controller's queue
//!   reports `workqueue_*` (named after the controller) through the provider given to
//!   [`Builder::queue_metrics`](super::Builder::queue_metrics).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// How a reconcile ended, as controller-runtime labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Returned [`Action::done`](super::Action::done).
    Success,
    /// Returned an error, or timed out.
    Error,
    /// Returned [`Action::requeue`](super::Action::requeue).
    Requeue,
    /// Returned [`Action::requeue_after`](super::Action::requeue_after).
    RequeueAfter,
}

impl ReconcileResult {
    /// The `result` label.
    pub fn label(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Error => "error",
            ReconcileResult::Requeue => "requeue",
            ReconcileResult::RequeueAfter => "requeue_after",
        }
    }
}

/// One controller's reconcile counters.
#[derive(Debug, Default)]
pub struct ReconcileMetrics {
    success: AtomicU64,
    error: AtomicU64,
    requeue: AtomicU64,
    requeue_after: AtomicU64,
    active_workers: AtomicI64,
    time_count: AtomicU64,
    time_sum_nanos: AtomicU64,
}

impl ReconcileMetrics {
    pub(crate) fn set_max_concurrent(&self, controller: &str, workers: usize) {
        #[cfg(feature = "prometheus")]
        if let Some(m) = prometheus::installed() {
            m.max_concurrent
                .with_label_values(&[controller])
                .set(i64::try_from(workers).unwrap_or(i64::MAX));
        }
        #[cfg(not(feature = "prometheus"))]
        let _ = (controller, workers);
    }

    /// Finished reconciles with `result`.
    pub fn reconcile_total(&self, result: ReconcileResult) -> u64 {
        match result {
            ReconcileResult::Success => &self.success,
            ReconcileResult::Error => &self.error,
            ReconcileResult::Requeue => &self.requeue,
            ReconcileResult::RequeueAfter => &self.requeue_after,
        }
        .load(Ordering::Relaxed)
    }

    /// Reconciles that failed (errors and timeouts).
    pub fn reconcile_errors_total(&self) -> u64 {
        self.error.load(Ordering::Relaxed)
    }

    /// Reconciles running now.
    pub fn active_workers(&self) -> i64 {
        self.active_workers.load(Ordering::Relaxed)
    }

    /// How many reconcile times were observed, and their sum.
    pub fn reconcile_time(&self) -> (u64, Duration) {
        (
            self.time_count.load(Ordering::Relaxed),
            Duration::from_nanos(self.time_sum_nanos.load(Ordering::Relaxed)),
        )
    }

    pub(crate) fn started(&self, controller: &str) {
        self.active_workers.fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "prometheus")]
        if let Some(m) = prometheus::installed() {
            m.active_workers.with_label_values(&[controller]).inc();
        }
        #[cfg(not(feature = "prometheus"))]
        let _ = controller;
    }

    pub(crate) fn finished(&self, controller: &str, result: ReconcileResult, took: Duration) {
        self.active_workers.fetch_sub(1, Ordering::Relaxed);
        match result {
            ReconcileResult::Success => &self.success,
            ReconcileResult::Error => &self.error,
            ReconcileResult::Requeue => &self.requeue,
            ReconcileResult::RequeueAfter => &self.requeue_after,
        }
        .fetch_add(1, Ordering::Relaxed);
        self.time_count.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.time_sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        #[cfg(feature = "prometheus")]
        if let Some(m) = prometheus::installed() {
            let c = controller;
            m.active_workers.with_label_values(&[c]).dec();
            m.total.with_label_values(&[c, result.label()]).inc();
            if result == ReconcileResult::Error {
                m.errors.with_label_values(&[c]).inc();
            }
            m.time.with_label_values(&[c]).observe(took.as_secs_f64());
        }
        #[cfg(not(feature = "prometheus"))]
        let _ = controller;
    }
}

/// The Prometheus export of every controller's reconcile metrics (feature `prometheus`).
#[cfg(feature = "prometheus")]
pub mod prometheus {
    use std::sync::OnceLock;

    use ::prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};

    pub(crate) struct Metrics {
        pub(crate) total: IntCounterVec,
        pub(crate) errors: IntCounterVec,
        pub(crate) time: HistogramVec,
        pub(crate) active_workers: IntGaugeVec,
        pub(crate) max_concurrent: IntGaugeVec,
    }

    static METRICS: OnceLock<Metrics> = OnceLock::new();

    pub(crate) fn installed() -> Option<&'static Metrics> {
        METRICS.get()
    }

    fn build() -> Result<Metrics, ::prometheus::Error> {
        let opts = |name: &str, help: &str| Opts::new(name, help).namespace("controller_runtime");
        Ok(Metrics {
            total: IntCounterVec::new(
                opts(
                    "reconcile_total",
                    "Total number of reconciliations per controller",
                ),
                &["controller", "result"],
            )?,
            errors: IntCounterVec::new(
                opts(
                    "reconcile_errors_total",
                    "Total number of reconciliation errors per controller",
                ),
                &["controller"],
            )?,
            time: HistogramVec::new(
                HistogramOpts::new(
                    "reconcile_time_seconds",
                    "Length of time per reconciliation per controller",
                )
                .namespace("controller_runtime")
                .buckets(vec![
                    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
                    0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0,
                    7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
                ]),
                &["controller"],
            )?,
            active_workers: IntGaugeVec::new(
                opts(
                    "active_workers",
                    "Number of currently used workers per controller",
                ),
                &["controller"],
            )?,
            max_concurrent: IntGaugeVec::new(
                opts(
                    "max_concurrent_reconciles",
                    "Maximum number of concurrent reconciles per controller",
                ),
                &["controller"],
            )?,
        })
    }

    /// Installs the controller metrics (once per process) and registers them in
    /// `registry`. Controllers built before the first call report nothing there.
    pub fn register(registry: &Registry) -> Result<(), ::prometheus::Error> {
        let m = match METRICS.get() {
            Some(m) => m,
            None => {
                let built = build()?;
                METRICS.get_or_init(|| built)
            }
        };
        registry.register(Box::new(m.total.clone()))?;
        registry.register(Box::new(m.errors.clone()))?;
        registry.register(Box::new(m.time.clone()))?;
        registry.register(Box::new(m.active_workers.clone()))?;
        registry.register(Box::new(m.max_concurrent.clone()))?;
        Ok(())
    }
}
