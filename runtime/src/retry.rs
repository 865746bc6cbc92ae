//! Retrying a write that lost a race (client-go's `util/retry`, over apimachinery's
//! `wait.Backoff`).
//!
//! Contract:
//! - [`on_error`] calls its closure at most [`Backoff::steps`] times. `Ok` ends it at once;
//!   an error the predicate calls retriable is remembered and, if a step remains, the
//!   closure is called again after the next delay; any other error is returned at once.
//!   When the steps run out, the LAST retriable error is returned (SEMANTICS 12, util/retry).
//! - The k-th delay (k = 1 .. steps-1) is `duration * factor^(k-1)`, capped at
//!   [`Backoff::cap`] when one is set (reaching the cap ends the steps, as
//!   `wait.Backoff.Step` does), each stretched by a random factor in `[1, 1 + jitter)`.
//! - With `steps <= 0` the closure is never called and the result is [`Interrupted`]
//!   ("timed out waiting for the condition"), which the error type must be able to hold
//!   (`E: From<Interrupted>`; [`crate::client::Error`] and boxed errors can).
//! - [`retry_on_conflict`] retries exactly the errors apimachinery's `IsConflict` accepts
//!   (reason Conflict, server-side apply conflicts included, or an unknown reason with
//!   409; never AlreadyExists), looking through wrapped errors ([`AsStatusError`]).
//!
//! Delays are `tokio::time` sleeps, so tests can run them under a paused clock. Nothing is
//! logged; the closure sees no attempt number (count in the closure if you need one).

use std::future::Future;
use std::time::Duration;

use rand::Rng;

use crate::errors::AsStatusError;

/// A stepped exponential backoff (apimachinery's `wait.Backoff`), as a value: copy it,
/// then [`step`](Backoff::step) the copy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The next delay before jitter.
    pub duration: Duration,
    /// Each step multiplies the duration by this; 0 or 1 keeps it constant.
    pub factor: f64,
    /// Each delay `d` becomes a random value in `[d, d * (1 + jitter))`; 0 means none.
    pub jitter: f64,
    /// How many steps remain; for [`on_error`], how many calls are made.
    pub steps: i32,
    /// The largest duration; reaching it sets `steps` to 0. `Duration::ZERO` means none.
    pub cap: Duration,
}

/// The backoff for conflicts on an update (`retry.DefaultRetry`): 5 calls, 10 ms apart,
/// jitter 0.1.
pub const DEFAULT_RETRY: Backoff = Backoff {
    duration: Duration::from_millis(10),
    factor: 1.0,
    jitter: 0.1,
    steps: 5,
    cap: Duration::ZERO,
};

/// The backoff for a create or update that may fail for a while (`retry.DefaultBackoff`):
/// 4 calls, after 10 ms, 50 ms and 250 ms, jitter 0.1.
pub const DEFAULT_BACKOFF: Backoff = Backoff {
    duration: Duration::from_millis(10),
    factor: 5.0,
    jitter: 0.1,
    steps: 4,
    cap: Duration::ZERO,
};

impl Backoff {
    /// The delay to wait now, advancing the backoff by one step (`wait.Backoff.Step`).
    /// Out of steps, it keeps returning the current duration (jittered).
    ///
    /// ```
    /// use std::time::Duration;
    /// use kubegen_runtime::retry::Backoff;
    ///
    /// let mut b = Backoff {
    ///     duration: Duration::from_millis(10),
    ///     factor: 3.0,
    ///     jitter: 0.0,
    ///     steps: 5,
    ///     cap: Duration::from_millis(50),
    /// };
    /// assert_eq!(b.step(), Duration::from_millis(10));
    /// assert_eq!(b.step(), Duration::from_millis(30));
    /// assert_eq!(b.steps, 0); // 90 ms would pass the cap: the cap ends the steps
    /// assert_eq!(b.step(), Duration::from_millis(50));
    /// ```
    pub fn step(&mut self) -> Duration {
        if self.steps < 1 {
            return jitter(self.duration, self.jitter);
        }
        self.steps -= 1;
        let current = self.duration;
        if self.factor != 0.0 {
            let next = Duration::try_from_secs_f64(self.duration.as_secs_f64() * self.factor)
                .unwrap_or(Duration::MAX);
            self.duration = next;
            if !self.cap.is_zero() && next > self.cap {
                self.duration = self.cap;
                self.steps = 0;
            }
        }
        jitter(current, self.jitter)
    }
}

/// `d` stretched by a random factor in `[1, 1 + max_factor)` (`wait.Jitter`, used here only
/// with a positive factor).
fn jitter(d: Duration, max_factor: f64) -> Duration {
    if max_factor <= 0.0 {
        return d;
    }
    let extra = rand::rng().random_range(0.0..max_factor);
    d.checked_add(d.mul_f64(extra)).unwrap_or(Duration::MAX)
}

/// The backoff ran out of steps before anything was tried (`wait.ErrWaitTimeout`, the
/// "interrupted" error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("timed out waiting for the condition")]
pub struct Interrupted;

/// Calls `f` until it succeeds, returns an error `retriable` rejects, or `backoff` runs
/// out of steps; then returns the last retriable error (`retry.OnError`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use kubegen_runtime::retry::{on_error, Interrupted, DEFAULT_BACKOFF};
///
/// #[derive(Debug, PartialEq)]
/// enum E { Busy, Interrupted }
/// impl From<Interrupted> for E {
///     fn from(_: Interrupted) -> Self { E::Interrupted }
/// }
///
/// let mut calls = 0;
/// let r = on_error(DEFAULT_BACKOFF, |e: &E| *e == E::Busy, async || {
///     calls += 1;
///     if calls < 3 { Err(E::Busy) } else { Ok(calls) }
/// })
/// .await;
/// assert_eq!(r, Ok(3));
/// # }
/// ```
pub async fn on_error<T, E, R, F>(backoff: Backoff, mut retriable: R, mut f: F) -> Result<T, E>
where
    E: From<Interrupted>,
    R: FnMut(&E) -> bool,
    F: AsyncFnMut() -> Result<T, E>,
{
    let mut backoff = backoff;
    let mut last = None;
    while backoff.steps > 0 {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if retriable(&e) => last = Some(e),
            Err(e) => return Err(e),
        }
        if backoff.steps == 1 {
            break;
        }
        tokio::time::sleep(backoff.step()).await;
    }
    Err(last.unwrap_or_else(|| Interrupted.into()))
}

/// [`on_error`] retrying conflicts only (`retry.RetryOnConflict`): wrap the whole
/// get-modify-update in `f`, so every try starts from a fresh read.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), kubegen_runtime::client::Error> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubegen_runtime::client::{ResourceClient, WriteOptions};
/// use kubegen_runtime::retry::{retry_on_conflict, DEFAULT_RETRY};
/// use kubegen_runtime::testing::ApiServer;
///
/// let server = ApiServer::new();
/// server.create("configmaps", serde_json::json!({"metadata": {"name": "c", "namespace": "ns"}}))?;
/// let cms = ResourceClient::<ConfigMap>::namespaced(kube::Client::new(server.service(), "ns"), "ns");
/// retry_on_conflict(DEFAULT_RETRY, async || {
///     let mut cm = cms.get("c").await?;
///     cm.data.get_or_insert_default().insert("k".into(), "v".into());
///     cms.update(&cm, &WriteOptions::default()).await
/// })
/// .await?;
/// # Ok(())
/// # }
/// ```
pub fn retry_on_conflict<T, E, F>(backoff: Backoff, f: F) -> impl Future<Output = Result<T, E>>
where
    E: From<Interrupted> + AsStatusError,
    F: AsyncFnMut() -> Result<T, E>,
{
    on_error(
        backoff,
        |e: &E| e.as_status_error().is_some_and(|s| s.is_conflict()),
        f,
    )
}

#[cfg(test)]
mod tests;
