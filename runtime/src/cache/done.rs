//! Done-checkers: a named signal that something (an informer's cache, most often) has
//! synced, and [`wait_for`] over several of them (client-go 1.36's `DoneChecker`,
//! `HasSyncedChecker` and `WaitFor`).
//!
//! Contract:
//! - A [`DoneChecker`] is pending until its [`DoneSignal`] is marked, then done for good.
//!   Waiting does not poll: [`DoneChecker::done`] is woken by the mark itself, so under a
//!   paused tokio clock it completes without the clock moving, in the same tick as the
//!   mark.
//! - [`wait_for`] completes with `Ok` once every checker is done, or, when its stop token
//!   fires first, with [`NotDone`] naming exactly the checkers still pending then.
//! - A checker whose signal is dropped unmarked stays pending (the thing never synced).
//!
//! It does not take "done" back: nothing that has synced unsyncs.

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The marking side of a [`DoneChecker`]: cloneable, and marking twice is harmless.
#[derive(Clone)]
pub struct DoneSignal {
    tx: Arc<watch::Sender<bool>>,
}

impl fmt::Debug for DoneSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoneSignal")
            .field("done", &*self.tx.borrow())
            .finish()
    }
}

impl Default for DoneSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl DoneSignal {
    /// A signal not marked yet.
    pub fn new() -> Self {
        DoneSignal {
            tx: Arc::new(watch::channel(false).0),
        }
    }

    /// Marks the signal done, waking every waiting checker.
    pub fn mark_done(&self) {
        self.tx
            .send_if_modified(|done| !std::mem::replace(done, true));
    }

    /// Whether the signal was marked.
    pub fn is_done(&self) -> bool {
        *self.tx.borrow()
    }

    /// A checker of this signal, named `name` in [`NotDone`] reports.
    pub fn checker(&self, name: impl Into<String>) -> DoneChecker {
        DoneChecker {
            name: name.into().into(),
            rx: self.tx.subscribe(),
        }
    }
}

/// A named "has it synced yet" that can be awaited (see the module docs).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use kubegen_runtime::cache::done::{wait_for, DoneSignal};
/// use tokio_util::sync::CancellationToken;
///
/// let signal = DoneSignal::new();
/// let checker = signal.checker("pods");
/// assert!(!checker.is_done());
/// signal.mark_done();
/// assert!(wait_for(&CancellationToken::new(), &[checker]).await.is_ok());
/// # }
/// ```
#[derive(Clone)]
pub struct DoneChecker {
    name: Arc<str>,
    rx: watch::Receiver<bool>,
}

impl fmt::Debug for DoneChecker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoneChecker")
            .field("name", &self.name)
            .field("done", &self.is_done())
            .finish()
    }
}

impl DoneChecker {
    /// The name reported when this checker is not done.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it is done now.
    pub fn is_done(&self) -> bool {
        *self.rx.borrow()
    }

    /// Completes when it is done; never, if its signal is dropped unmarked.
    pub async fn done(&self) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|done| *done).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The checkers still pending when [`wait_for`] was stopped, by name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stopped before these had synced: {}; check that their informers were started (factory.start) and that the server answers their list and watch", .pending.join(", "))]
pub struct NotDone {
    /// The names of the checkers not done, in the order they were given.
    pub pending: Vec<String>,
}

/// Waits until every checker is done (`Ok`) or `stop` fires (`Err` naming the checkers
/// not done then; `Ok` if all were done anyway).
pub async fn wait_for(stop: &CancellationToken, checkers: &[DoneChecker]) -> Result<(), NotDone> {
    let all = futures::future::join_all(checkers.iter().map(DoneChecker::done));
    tokio::select! {
        biased;
        _ = all => return Ok(()),
        _ = stop.cancelled() => {}
    }
    let pending: Vec<String> = checkers
        .iter()
        .filter(|c| !c.is_done())
        .map(|c| c.name().to_owned())
        .collect();
    if pending.is_empty() {
        Ok(())
    } else {
        Err(NotDone { pending })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    // SEMANTICS 14.2
    #[tokio::test(start_paused = true)]
    async fn wait_for_names_only_the_pending_checker_and_completes_when_all_are_done() {
        let (a, b) = (DoneSignal::new(), DoneSignal::new());
        let checkers = [a.checker("pods"), b.checker("deployments.apps")];
        a.mark_done();
        let stop = CancellationToken::new();
        let cancel = tokio::spawn({
            let stop = stop.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                stop.cancel();
            }
        });
        let err = wait_for(&stop, &checkers).await.unwrap_err();
        assert_eq!(err.pending, vec!["deployments.apps".to_owned()]);
        assert!(err.to_string().contains("deployments.apps"), "{err}");
        cancel.await.unwrap();

        b.mark_done();
        let started = tokio::time::Instant::now();
        assert_eq!(wait_for(&CancellationToken::new(), &checkers).await, Ok(()));
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "done checkers do not poll"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_unmarked_signal_leaves_its_checker_pending() {
        let checker = DoneSignal::new().checker("never");
        let stop = CancellationToken::new();
        stop.cancel();
        let err = wait_for(&stop, std::slice::from_ref(&checker))
            .await
            .unwrap_err();
        assert_eq!(err.pending, vec!["never".to_owned()]);
        let waited = tokio::time::timeout(Duration::from_secs(5), checker.done()).await;
        assert!(
            waited.is_err(),
            "a checker of a dropped signal never completes"
        );
    }
}
