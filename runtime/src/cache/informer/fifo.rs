//! The queue between an informer's reflector and its handlers: a DeltaFIFO or a RealFIFO
//! ([`FifoKind`]), behind one type, with the informer's sync signal and metrics updated
//! on every change.
//!
//! Contract: after every operation that can change `has_synced` (add, update, delete,
//! replace, resync, pop) the informer's [`DoneSignal`] is marked as soon as the FIFO has
//! synced, before the operation returns; the queued-items figure is the FIFO's length
//! after the operation.

use std::sync::Arc;

use crate::cache::delta_fifo::{DeltaFifo, Deltas, PopError};
use crate::cache::done::DoneSignal;
use crate::cache::informer::metrics::InformerMetrics;
use crate::cache::real_fifo::RealFifo;
use crate::cache::store::StoreError;

/// Which FIFO an informer runs on (client-go's `InOrderInformers` feature gate).
///
/// kubegen takes [`FifoKind::Real`] by default, as client-go does since 1.36 (the gate is
/// locked on there): handlers see every change, in the order the watch delivered it,
/// across keys. [`FifoKind::Delta`] gathers the changes of one key into one pop, so a key
/// that changes in a burst costs one pop, at the price of cross-key order; take it when
/// handlers only ever look at the latest state of each key and the order does not matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FifoKind {
    /// client-go's `RealFIFO`: one pop per change, in arrival order.
    #[default]
    Real,
    /// client-go's `DeltaFIFO`: one pop per key, with all its queued changes.
    Delta,
}

pub(super) enum Fifo<K> {
    Delta(DeltaFifo<K>),
    Real(RealFifo<K>),
}

/// A FIFO with the hooks the informer needs.
pub(super) struct InformerFifo<K> {
    fifo: Fifo<K>,
    synced: DoneSignal,
    metrics: InformerMetrics,
}

impl<K: Send + Sync + 'static> InformerFifo<K> {
    pub(super) fn new(fifo: Fifo<K>, synced: DoneSignal, metrics: InformerMetrics) -> Self {
        InformerFifo {
            fifo,
            synced,
            metrics,
        }
    }

    fn changed<T>(&self, result: T) -> T {
        if !self.synced.is_done() && self.has_synced() {
            self.synced.mark_done();
        }
        self.metrics.set_queued(self.len());
        result
    }

    pub(super) fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.changed(match &self.fifo {
            Fifo::Delta(f) => f.add(obj),
            Fifo::Real(f) => f.add(obj),
        })
    }

    pub(super) fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.changed(match &self.fifo {
            Fifo::Delta(f) => f.update(obj),
            Fifo::Real(f) => f.update(obj),
        })
    }

    pub(super) fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.changed(match &self.fifo {
            Fifo::Delta(f) => f.delete(obj),
            Fifo::Real(f) => f.delete(obj),
        })
    }

    pub(super) fn replace(&self, objs: Vec<Arc<K>>, rv: &str) -> Result<(), StoreError> {
        self.changed(match &self.fifo {
            Fifo::Delta(f) => f.replace(objs, rv),
            Fifo::Real(f) => f.replace(objs, rv),
        })
    }

    pub(super) fn resync(&self) -> Result<(), StoreError> {
        self.changed(match &self.fifo {
            Fifo::Delta(f) => f.resync(),
            Fifo::Real(f) => f.resync(),
        })
    }

    /// Pops one item (a key's deltas, or one delta) into `process`, timing it for the
    /// processing-latency metric.
    pub(super) async fn pop(
        &self,
        process: impl FnOnce(Deltas<K>, bool),
    ) -> Result<(), PopError<std::convert::Infallible>> {
        let metrics = &self.metrics;
        let timed = |deltas: Deltas<K>, initial: bool| {
            let started = tokio::time::Instant::now();
            process(deltas, initial);
            metrics.observe_processing(started.elapsed());
            Ok::<(), std::convert::Infallible>(())
        };
        let popped = match &self.fifo {
            Fifo::Delta(f) => f.try_pop(timed).await,
            Fifo::Real(f) => f.try_pop(timed).await,
        };
        self.changed(popped)
    }

    pub(super) fn len(&self) -> usize {
        match &self.fifo {
            Fifo::Delta(f) => f.len(),
            Fifo::Real(f) => f.len(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn has_synced(&self) -> bool {
        match &self.fifo {
            Fifo::Delta(f) => f.has_synced(),
            Fifo::Real(f) => f.has_synced(),
        }
    }

    pub(super) fn close(&self) {
        match &self.fifo {
            Fifo::Delta(f) => f.close(),
            Fifo::Real(f) => f.close(),
        }
    }
}
