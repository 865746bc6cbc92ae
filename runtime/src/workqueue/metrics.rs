//! Workqueue metrics: client-go's `MetricsProvider` and the seven metrics of a queue.
//!
//! A queue keeps metrics only when its [`QueueOptions`](super::QueueOptions) has both a name
//! and a [`MetricsProvider`]; the provider makes one metric of each kind per queue name,
//! once, when the queue is built. Every method of the provider has a no-op default, so a
//! provider implements only what it records; [`NoopMetricsProvider`] records nothing.
//!
//! What is measured (client-go's meaning, as exported by component-base):
//!
//! | metric | kind | meaning |
//! |---|---|---|
//! | `workqueue_depth` | gauge | items added and not yet handed out (an add of a dirty item does not count) |
//! | `workqueue_adds_total` | counter | accepted adds (same rule) |
//! | `workqueue_queue_duration_seconds` | histogram | first add (or the delay's end) to `get` |
//! | `workqueue_work_duration_seconds` | histogram | `get` to `done` |
//! | `workqueue_unfinished_work_seconds` | gauge | summed age of the items being processed |
//! | `workqueue_longest_running_processor_seconds` | gauge | age of the oldest item being processed |
//! | `workqueue_retries_total` | counter | calls of `add_after` before shutdown |
//!
//! The two unfinished-work gauges are refreshed every 500 ms by a task that the queue
//! starts on its first `get` and that ends at shutdown (or when the queue is dropped).
//! That tick also moves due delayed items into the queue, so while every worker is busy a
//! due item joins `workqueue_depth` at most 500 ms late; its queue duration is still
//! measured from its ready time. Feature `prometheus` adds
//! `prometheus::PrometheusMetricsProvider` (module `prometheus`), which registers these
//! metrics, labelled `name`, with client-go's buckets, into a caller's registry.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use tokio::time::Instant;

/// A gauge that goes up and down by one (the queue depth).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge set to a value (the unfinished-work gauges), in seconds.
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A counter.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A histogram of durations in seconds.
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// Makes the metrics of a named queue (client-go's `workqueue.MetricsProvider`).
///
/// Each method is called once per queue, with the queue's name; the defaults return
/// metrics that record nothing.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use kubegen_runtime::workqueue::metrics::{CounterMetric, MetricsProvider};
/// use kubegen_runtime::workqueue::{Queue, QueueOptions};
///
/// /// Counts the adds of every queue, and nothing else.
/// #[derive(Default)]
/// struct Adds(Arc<AtomicU64>);
/// struct AddsCounter(Arc<AtomicU64>);
///
/// impl CounterMetric for AddsCounter {
///     fn inc(&self) { self.0.fetch_add(1, Ordering::Relaxed); }
/// }
/// impl MetricsProvider for Adds {
///     fn new_adds_metric(&self, _name: &str) -> Box<dyn CounterMetric> {
///         Box::new(AddsCounter(self.0.clone()))
///     }
/// }
///
/// let adds = Adds::default();
/// let count = adds.0.clone();
/// let queue = Queue::with_config(QueueOptions::default().name("q").metrics_provider(Arc::new(adds)));
/// queue.add(1);
/// queue.add(1);
/// assert_eq!(count.load(Ordering::Relaxed), 1);
/// ```
pub trait MetricsProvider: Send + Sync {
    /// `workqueue_depth`.
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// `workqueue_adds_total`.
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// `workqueue_queue_duration_seconds`.
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// `workqueue_work_duration_seconds`.
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// `workqueue_unfinished_work_seconds`.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// `workqueue_longest_running_processor_seconds`.
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// `workqueue_retries_total`.
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }
}

/// A provider whose metrics record nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetricsProvider;

impl MetricsProvider for NoopMetricsProvider {}

/// A metric of every kind that records nothing.
#[derive(Debug, Clone, Copy, Default)]
struct NoopMetric;

impl GaugeMetric for NoopMetric {
    fn inc(&self) {}
    fn dec(&self) {}
}

impl SettableGaugeMetric for NoopMetric {
    fn set(&self, _value: f64) {}
}

impl CounterMetric for NoopMetric {
    fn inc(&self) {}
}

impl HistogramMetric for NoopMetric {
    fn observe(&self, _value: f64) {}
}

/// One queue's metrics and the timestamps they need; lives under the queue's lock.
pub(crate) struct QueueMetrics<T> {
    depth: Box<dyn GaugeMetric>,
    adds: Box<dyn CounterMetric>,
    latency: Box<dyn HistogramMetric>,
    work_duration: Box<dyn HistogramMetric>,
    unfinished_work_seconds: Box<dyn SettableGaugeMetric>,
    longest_running_processor: Box<dyn SettableGaugeMetric>,
    retries: Box<dyn CounterMetric>,
    add_times: HashMap<T, Instant>,
    processing_start_times: HashMap<T, Instant>,
}

impl<T> fmt::Debug for QueueMetrics<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueMetrics")
            .field("waiting", &self.add_times.len())
            .field("processing", &self.processing_start_times.len())
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash> QueueMetrics<T> {
    pub(crate) fn new(provider: &dyn MetricsProvider, name: &str) -> Self {
        Self {
            depth: provider.new_depth_metric(name),
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work_seconds: provider.new_unfinished_work_seconds_metric(name),
            longest_running_processor: provider.new_longest_running_processor_seconds_metric(name),
            retries: provider.new_retries_metric(name),
            add_times: HashMap::new(),
            processing_start_times: HashMap::new(),
        }
    }

    /// An accepted add; `at` is when the item became due (now unless it was delayed).
    pub(crate) fn add(&mut self, item: &T, at: Option<Instant>) {
        self.adds.inc();
        self.depth.inc();
        if !self.add_times.contains_key(item) {
            self.add_times
                .insert(item.clone(), at.unwrap_or_else(Instant::now));
        }
    }

    pub(crate) fn get(&mut self, item: &T) {
        self.depth.dec();
        let now = Instant::now();
        if let Some(added) = self.add_times.remove(item) {
            self.latency
                .observe(now.saturating_duration_since(added).as_secs_f64());
        }
        self.processing_start_times.insert(item.clone(), now);
    }

    pub(crate) fn done(&mut self, item: &T) {
        if let Some(started) = self.processing_start_times.remove(item) {
            self.work_duration.observe(
                Instant::now()
                    .saturating_duration_since(started)
                    .as_secs_f64(),
            );
        }
    }

    pub(crate) fn retry(&self) {
        self.retries.inc();
    }

    pub(crate) fn update_unfinished_work(&self) {
        let now = Instant::now();
        let (total, oldest) = self
            .processing_start_times
            .values()
            .map(|started| now.saturating_duration_since(*started).as_secs_f64())
            .fold((0.0, 0.0_f64), |(total, oldest), age| {
                (total + age, oldest.max(age))
            });
        self.unfinished_work_seconds.set(total);
        self.longest_running_processor.set(oldest);
    }
}

/// The Prometheus implementation (feature `prometheus`).
#[cfg(feature = "prometheus")]
pub mod prometheus {
    use ::prometheus::{
        exponential_buckets, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec,
        Opts, Registry,
    };

    use super::{
        CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
    };

    const SUBSYSTEM: &str = "workqueue";
    const LABEL: &str = "name";

    /// Registers client-go's workqueue metrics (`workqueue_depth`, `workqueue_adds_total`,
    /// ...; label `name`) into a registry and hands out one child per queue name.
    ///
    /// The histograms use client-go's buckets: 10 exponential buckets from 10 ns, by
    /// factor 10 (up to 10 s, plus `+Inf`). Queues that share a name share their metrics.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kubegen_runtime::workqueue::metrics::prometheus::PrometheusMetricsProvider;
    /// use kubegen_runtime::workqueue::{Queue, QueueOptions};
    ///
    /// let registry = prometheus::Registry::new();
    /// let provider = Arc::new(PrometheusMetricsProvider::new(&registry).unwrap());
    /// let queue = Queue::with_config(QueueOptions::default().name("foos").metrics_provider(provider));
    /// queue.add("default/a");
    /// let families = registry.gather();
    /// assert!(families.iter().any(|family| family.name() == "workqueue_adds_total"));
    /// ```
    #[derive(Debug, Clone)]
    pub struct PrometheusMetricsProvider {
        depth: IntGaugeVec,
        adds: IntCounterVec,
        latency: HistogramVec,
        work_duration: HistogramVec,
        unfinished_work_seconds: GaugeVec,
        longest_running_processor: GaugeVec,
        retries: IntCounterVec,
    }

    impl PrometheusMetricsProvider {
        /// Creates the seven metric families and registers them in `registry`. Fails when
        /// the registry already has them (one provider per registry serves every queue).
        pub fn new(registry: &Registry) -> Result<Self, ::prometheus::Error> {
            let opts = |name: &str, help: &str| Opts::new(name, help).subsystem(SUBSYSTEM);
            let histogram = |name: &str, help: &str| -> Result<HistogramVec, ::prometheus::Error> {
                HistogramVec::new(
                    HistogramOpts::new(name, help)
                        .subsystem(SUBSYSTEM)
                        .buckets(exponential_buckets(10e-9, 10.0, 10)?),
                    &[LABEL],
                )
            };
            let provider = Self {
                depth: IntGaugeVec::new(
                    opts(
                        "depth",
                        "Current depth of the workqueue: items added and not yet handed out.",
                    ),
                    &[LABEL],
                )?,
                adds: IntCounterVec::new(
                    opts("adds_total", "Total number of adds the workqueue accepted."),
                    &[LABEL],
                )?,
                latency: histogram(
                    "queue_duration_seconds",
                    "Seconds an item waits in the workqueue before a worker gets it.",
                )?,
                work_duration: histogram(
                    "work_duration_seconds",
                    "Seconds a worker takes to process an item from the workqueue.",
                )?,
                unfinished_work_seconds: GaugeVec::new(
                    opts(
                        "unfinished_work_seconds",
                        "Summed seconds of processing in progress and not yet observed by \
                         work_duration; a steady rise points at stuck workers.",
                    ),
                    &[LABEL],
                )?,
                longest_running_processor: GaugeVec::new(
                    opts(
                        "longest_running_processor_seconds",
                        "Seconds the longest-running worker of the workqueue has been processing its item.",
                    ),
                    &[LABEL],
                )?,
                retries: IntCounterVec::new(
                    opts(
                        "retries_total",
                        "Total number of retries (delayed adds) the workqueue handled.",
                    ),
                    &[LABEL],
                )?,
            };
            registry.register(Box::new(provider.depth.clone()))?;
            registry.register(Box::new(provider.adds.clone()))?;
            registry.register(Box::new(provider.latency.clone()))?;
            registry.register(Box::new(provider.work_duration.clone()))?;
            registry.register(Box::new(provider.unfinished_work_seconds.clone()))?;
            registry.register(Box::new(provider.longest_running_processor.clone()))?;
            registry.register(Box::new(provider.retries.clone()))?;
            Ok(provider)
        }
    }

    impl GaugeMetric for ::prometheus::IntGauge {
        fn inc(&self) {
            ::prometheus::IntGauge::inc(self);
        }
        fn dec(&self) {
            ::prometheus::IntGauge::dec(self);
        }
    }

    impl SettableGaugeMetric for ::prometheus::Gauge {
        fn set(&self, value: f64) {
            ::prometheus::Gauge::set(self, value);
        }
    }

    impl CounterMetric for ::prometheus::IntCounter {
        fn inc(&self) {
            ::prometheus::IntCounter::inc(self);
        }
    }

    impl HistogramMetric for ::prometheus::Histogram {
        fn observe(&self, value: f64) {
            ::prometheus::Histogram::observe(self, value);
        }
    }

    impl MetricsProvider for PrometheusMetricsProvider {
        fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
            Box::new(self.depth.with_label_values(&[name]))
        }

        fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
            Box::new(self.adds.with_label_values(&[name]))
        }

        fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
            Box::new(self.latency.with_label_values(&[name]))
        }

        fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
            Box::new(self.work_duration.with_label_values(&[name]))
        }

        fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
            Box::new(self.unfinished_work_seconds.with_label_values(&[name]))
        }

        fn new_longest_running_processor_seconds_metric(
            &self,
            name: &str,
        ) -> Box<dyn SettableGaugeMetric> {
            Box::new(self.longest_running_processor.with_label_values(&[name]))
        }

        fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
            Box::new(self.retries.with_label_values(&[name]))
        }
    }
}
