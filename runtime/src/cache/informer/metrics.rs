//! An informer's own figures (client-go 1.36's informer metrics): items queued in its
//! FIFO, the processing latency of each popped item, and the resourceVersion its store
//! was last synced to, all labelled with the informer's name.
//!
//! Contract: [`InformerMetrics`] is always kept (a few atomics per informer); with the
//! `prometheus` feature and [`crate::metrics::prometheus::register`] called, the same
//! figures are also exported as `informer_queued_items{name}`,
//! `informer_processing_latency_seconds{name}` and
//! `informer_store_resource_version{name}` (the resourceVersion as a number; a
//! resourceVersion that is not a number leaves the gauge unchanged).

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

struct Figures {
    name: String,
    queued: AtomicUsize,
    processed: AtomicU64,
    latency_nanos: AtomicU64,
    resource_version: Mutex<String>,
}

/// A handle to one informer's figures (see the module docs); clones share them.
#[derive(Clone)]
pub struct InformerMetrics {
    figures: Arc<Figures>,
}

impl fmt::Debug for InformerMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerMetrics")
            .field("name", &self.figures.name)
            .field("queued_items", &self.queued_items())
            .field("processed_items", &self.processed_items())
            .field("store_resource_version", &self.store_resource_version())
            .finish()
    }
}

impl InformerMetrics {
    pub(crate) fn new(name: impl Into<String>) -> Self {
        InformerMetrics {
            figures: Arc::new(Figures {
                name: name.into(),
                queued: AtomicUsize::new(0),
                processed: AtomicU64::new(0),
                latency_nanos: AtomicU64::new(0),
                resource_version: Mutex::new(String::new()),
            }),
        }
    }

    /// The informer's name, the `name` label of its exported metrics.
    pub fn name(&self) -> &str {
        &self.figures.name
    }

    /// Items (keys for a DeltaFIFO, changes for a RealFIFO) queued and not yet popped.
    pub fn queued_items(&self) -> usize {
        self.figures.queued.load(Ordering::Relaxed)
    }

    /// Items popped and processed (the processing-latency observations).
    pub fn processed_items(&self) -> u64 {
        self.figures.processed.load(Ordering::Relaxed)
    }

    /// The processing time of every popped item, added up.
    pub fn processing_latency_total(&self) -> Duration {
        Duration::from_nanos(self.figures.latency_nanos.load(Ordering::Relaxed))
    }

    /// The resourceVersion of the informer's last list or event (`""` before the first).
    pub fn store_resource_version(&self) -> String {
        self.figures.resource_version.lock().clone()
    }

    pub(crate) fn set_queued(&self, n: usize) {
        self.figures.queued.store(n, Ordering::Relaxed);
        crate::metrics::informer_queued(&self.figures.name, n);
    }

    pub(crate) fn observe_processing(&self, took: Duration) {
        self.figures.processed.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.figures
            .latency_nanos
            .fetch_add(nanos, Ordering::Relaxed);
        crate::metrics::informer_processed(&self.figures.name, took);
    }

    pub(crate) fn set_resource_version(&self, rv: &str) {
        {
            let mut held = self.figures.resource_version.lock();
            if held.as_str() == rv {
                return;
            }
            rv.clone_into(&mut held);
        }
        crate::metrics::informer_resource_version(&self.figures.name, rv);
    }
}
