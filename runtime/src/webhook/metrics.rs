//! The webhook server's metrics under controller-runtime's names (feature `prometheus`).
//!
//! Contract: nothing is recorded until [`prometheus::register`] installs the metrics (one
//! set per process, as controller-runtime's are); before that, and without the feature,
//! the hooks the server calls do nothing. `webhook` is the path of a served handler.

use std::time::Duration;

/// Counts a request in flight on `path` until dropped.
pub(super) struct InFlight {
    #[cfg(feature = "prometheus")]
    path: String,
}

impl InFlight {
    pub(super) fn start(path: &str) -> InFlight {
        #[cfg(feature = "prometheus")]
        {
            if let Some(m) = prometheus::installed() {
                m.in_flight.with_label_values(&[path]).inc();
            }
            InFlight {
                path: path.to_owned(),
            }
        }
        #[cfg(not(feature = "prometheus"))]
        {
            let _ = path;
            InFlight {}
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        #[cfg(feature = "prometheus")]
        if let Some(m) = prometheus::installed() {
            m.in_flight.with_label_values(&[&self.path]).dec();
        }
    }
}

/// A request to `path` answered with `code` after `took`.
pub(super) fn observe(path: &str, code: u16, took: Duration) {
    #[cfg(feature = "prometheus")]
    if let Some(m) = prometheus::installed() {
        m.total.with_label_values(&[path, &code.to_string()]).inc();
        m.latency
            .with_label_values(&[path])
            .observe(took.as_secs_f64());
    }
    #[cfg(not(feature = "prometheus"))]
    let _ = (path, code, took);
}

/// The Prometheus metrics of the webhook server (feature `prometheus`).
#[cfg(feature = "prometheus")]
pub mod prometheus {
    use std::sync::OnceLock;

    use ::prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};

    pub(super) struct Metrics {
        pub(super) total: IntCounterVec,
        pub(super) in_flight: IntGaugeVec,
        pub(super) latency: HistogramVec,
    }

    static METRICS: OnceLock<Metrics> = OnceLock::new();

    pub(super) fn installed() -> Option<&'static Metrics> {
        METRICS.get()
    }

    fn build() -> Result<Metrics, ::prometheus::Error> {
        let opts = |name: &str, help: &str| Opts::new(name, help).namespace("controller_runtime");
        Ok(Metrics {
            total: IntCounterVec::new(
                opts(
                    "webhook_requests_total",
                    "Total number of admission requests by HTTP status code.",
                ),
                &["webhook", "code"],
            )?,
            in_flight: IntGaugeVec::new(
                opts(
                    "webhook_requests_in_flight",
                    "Current number of admission requests being served.",
                ),
                &["webhook"],
            )?,
            latency: HistogramVec::new(
                HistogramOpts::new(
                    "webhook_latency_seconds",
                    "Histogram of the latency of processing admission requests",
                )
                .namespace("controller_runtime"),
                &["webhook"],
            )?,
        })
    }

    /// Installs the webhook metrics (once per process) and registers them in `registry`.
    ///
    /// ```
    /// let registry = prometheus::Registry::new();
    /// kubegen_runtime::webhook::prometheus::register(&registry).unwrap();
    /// ```
    pub fn register(registry: &Registry) -> Result<(), ::prometheus::Error> {
        let m = match METRICS.get() {
            Some(m) => m,
            None => {
                let built = build()?;
                // A concurrent first call may have won; either set is fine.
                METRICS.get_or_init(|| built)
            }
        };
        registry.register(Box::new(m.total.clone()))?;
        registry.register(Box::new(m.in_flight.clone()))?;
        registry.register(Box::new(m.latency.clone()))?;
        Ok(())
    }
}
