//! Health checks of a running controller: alive while `run` runs, ready once its caches
//! synced (as leader or warm standby), and whether it leads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Readiness and liveness of a running controller (controller-runtime's healthz/readyz).
#[derive(Debug, Clone, Default)]
pub struct Health {
    pub(super) inner: Arc<HealthState>,
}

#[derive(Debug, Default)]
pub(super) struct HealthState {
    pub(super) running: AtomicBool,
    pub(super) synced: AtomicBool,
    pub(super) leading: AtomicBool,
}

/// Why a controller is not ready or not healthy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HealthError {
    /// `run` has not started or has returned.
    #[error("the controller is not running")]
    NotRunning,
    /// Some informer of the controller has not synced yet.
    #[error("the controller's caches have not synced yet")]
    NotSynced,
}

impl Health {
    /// Ready: running with every cache synced, as leader or as a warm standby.
    pub fn readyz(&self) -> Result<(), HealthError> {
        self.healthz()?;
        if !self.inner.synced.load(Ordering::SeqCst) {
            return Err(HealthError::NotSynced);
        }
        Ok(())
    }

    /// Alive: `run` is running.
    pub fn healthz(&self) -> Result<(), HealthError> {
        if !self.inner.running.load(Ordering::SeqCst) {
            return Err(HealthError::NotRunning);
        }
        Ok(())
    }

    /// Whether the workers run now (leading, or no leader election).
    pub fn is_leading(&self) -> bool {
        self.inner.leading.load(Ordering::SeqCst)
    }
}
