//! Leader election on a coordination.k8s.io/v1 Lease, with client-go's `leaderelection`
//! semantics: several candidates run a [`LeaderElector`] on one lock; one of them leads,
//! the others stand by and take over when the leader stops renewing.
//!
//! What is guaranteed (as client-go states it): **at most one candidate believes it leads
//! at any time, provided clocks advance at roughly the same rate and API calls finish
//! within the configured windows.** No timestamp written in the lock is ever compared with
//! a local clock: a candidate judges the lease by when *it* last saw the record change
//! (its own monotonic clock), so arbitrary clock *skew* between machines is harmless. What
//! is tolerated is a bounded skew *rate*: the leader gives up after failing to renew for
//! `renew_deadline`, while a standby waits a full `lease_duration` after the last change it
//! saw before taking over, so the ratio `lease_duration / renew_deadline` is the tolerated
//! ratio of clock speeds (and the difference absorbs request latency).
//!
//! What is not guaranteed:
//! - **No fencing.** Leadership is a belief held by the process, not a token checked by
//!   the API server: a leader that stalls (a long pause, an overloaded runtime) longer
//!   than the margin can act after a successor has started. Work that must never overlap
//!   needs its own fencing (e.g. optimistic concurrency on the objects it writes).
//! - **No fairness and no preference** among candidates; coordinated election
//!   (`strategy`, `preferredHolder`) is not implemented: those fields are read, and a
//!   candidate's write clears them, as client-go's uncoordinated elector does.
//! - `on_started_leading` runs in its own task and is not awaited: when leadership ends,
//!   its [`CancellationToken`] is cancelled, and the callback must stop promptly by itself.
//! - With `release_on_cancel`, the caller must have finished the guarded work before
//!   cancelling, or two processes may briefly act at once.
//!
//! The algorithm is client-go's `tryAcquireOrRenew` (see
//! [`LeaderElector::try_acquire_or_renew`]): a leader renews with a single Update while its
//! observation is fresh (fast path), otherwise it reads the lock, refreshes its local
//! observation time only when the record's bytes changed, and writes the lock when it
//! holds it or the holder's lease expired by its own clock. All waiting is on
//! `tokio::time`, so tests drive an election with a paused clock. Timestamps written into
//! the lock come from the system clock read once when the elector is built, advanced by
//! `tokio::time` since (so they also advance under a paused clock); they are informative
//! only, for humans and other tools.
//!
//! Unlike client-go, leadership's token is cancelled as soon as renewal fails, before an
//! optional release, rather than after it.

mod resourcelock;

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use resourcelock::{LeaderElectionRecord, LeaseLock, LockError, ResourceLock};

/// The jitter of the acquire loop: attempts are `retry_period * (1 + rand * JITTER_FACTOR)`
/// apart; `renew_deadline` must exceed `retry_period * JITTER_FACTOR`.
pub const JITTER_FACTOR: f64 = 1.2;

/// Core components' lease duration.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// Core components' renew deadline.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Core components' retry period.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// An invalid [`LeaderElectionOptions`]; the messages are client-go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `lease_duration <= renew_deadline`.
    #[error("leaseDuration must be greater than renewDeadline")]
    LeaseDurationNotAboveRenewDeadline,
    /// `renew_deadline <= retry_period * JITTER_FACTOR`.
    #[error("renewDeadline must be greater than retryPeriod*JitterFactor")]
    RenewDeadlineTooShort,
    /// `lease_duration` is zero.
    #[error("leaseDuration must be greater than zero")]
    ZeroLeaseDuration,
    /// `renew_deadline` is zero.
    #[error("renewDeadline must be greater than zero")]
    ZeroRenewDeadline,
    /// `retry_period` is zero.
    #[error("retryPeriod must be greater than zero")]
    ZeroRetryPeriod,
    /// No `on_started_leading` callback.
    #[error("OnStartedLeading callback must not be nil")]
    MissingOnStartedLeading,
    /// No `on_stopped_leading` callback.
    #[error("OnStoppedLeading callback must not be nil")]
    MissingOnStoppedLeading,
    /// The lock's identity is empty.
    #[error("Lock identity is empty")]
    EmptyIdentity,
}

/// [`LeaderElector::check`] found a leader that has not renewed for too long.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed election to renew leadership on lease {name}")]
pub struct CheckError {
    /// The election's name ([`LeaderElectionOptions::name`]).
    pub name: String,
}

type StartedFn = Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;
type StoppedFn = Arc<dyn Fn() + Send + Sync>;
type NewLeaderFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What an elector calls as leadership changes (client-go's `LeaderCallbacks`).
///
/// `on_started_leading` and `on_stopped_leading` are required ([`ConfigError`] otherwise);
/// `on_new_leader` is optional.
#[derive(Clone, Default)]
pub struct LeaderCallbacks {
    /// Spawned as a task when this candidate starts leading; its token is cancelled when
    /// leadership ends (or the elector's own token is cancelled).
    pub on_started_leading: Option<StartedFn>,
    /// Called exactly once when [`LeaderElector::run`] returns (or its future is dropped),
    /// whether or not this candidate ever led.
    pub on_stopped_leading: Option<StoppedFn>,
    /// Called, in a task of its own, with the holder's identity each time an attempt
    /// observes a holder other than the last one reported (this candidate included; the
    /// empty identity of a released lock included, except as the very first observation,
    /// since "no leader" is where reporting starts).
    pub on_new_leader: Option<NewLeaderFn>,
}

impl fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderCallbacks")
            .field("on_started_leading", &self.on_started_leading.is_some())
            .field("on_stopped_leading", &self.on_stopped_leading.is_some())
            .field("on_new_leader", &self.on_new_leader.is_some())
            .finish()
    }
}

impl LeaderCallbacks {
    /// No callbacks yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `on_started_leading`: the future runs as a task while this candidate leads and
    /// must return once its token is cancelled.
    pub fn on_started_leading<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_started_leading = Some(Arc::new(move |token| Box::pin(f(token))));
        self
    }

    /// Sets `on_stopped_leading`.
    pub fn on_stopped_leading<F>(mut self, f: F) -> Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.on_stopped_leading = Some(Arc::new(f));
        self
    }

    /// Sets `on_new_leader`.
    pub fn on_new_leader<F>(mut self, f: F) -> Self
    where
        F: Fn(&str) + Send + Sync + 'static,
    {
        self.on_new_leader = Some(Arc::new(f));
        self
    }
}

/// The earlier name of [`LeaderElectionOptions`]: the runtime names every options type `*Options`.
#[deprecated(since = "0.1.0", note = "renamed to `LeaderElectionOptions`")]
pub type LeaderElectionConfig = LeaderElectionOptions;

/// How an election runs (client-go's `LeaderElectionOptions`): a plain struct with builder
/// methods, validated by [`LeaderElector::new`].
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::leaderelection::{LeaderCallbacks, LeaderElectionOptions, LeaseLock};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// # let client = kube::Client::new(kubegen_runtime::testing::ApiServer::new().service(), "default");
///
/// let config = LeaderElectionOptions::new(LeaseLock::new(client, "kube-system", "ctrl", "pod-a"))
///     .renew_deadline(Duration::from_secs(2))
///     .retry_period(Duration::from_secs(1))
///     .callbacks(LeaderCallbacks::new().on_started_leading(|_token| async {}));
/// assert_eq!(config.lease_duration, Duration::from_secs(15));
/// assert_eq!(config.name, "kube-system/ctrl");
/// assert_eq!(
///     config.validate().unwrap_err().to_string(),
///     "OnStoppedLeading callback must not be nil"
/// );
/// # }
/// ```
#[derive(Clone)]
pub struct LeaderElectionOptions {
    /// The lock candidates compete for.
    pub lock: Arc<dyn ResourceLock>,
    /// How long a standby waits, after it last saw the record change, before taking over.
    /// It is written to the lock in whole seconds, truncated, and standbys go by the
    /// written value: anything under 1 s writes 0 and lets any candidate take over at
    /// once (as in client-go). Default 15 s.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a failing renewal before it gives up. Default
    /// 10 s.
    pub renew_deadline: Duration,
    /// How long candidates wait between attempts. Default 2 s.
    pub retry_period: Duration,
    /// The callbacks.
    pub callbacks: LeaderCallbacks,
    /// Whether to release the lock (holder emptied, duration 1 s) when the elector's
    /// token is cancelled, so that a standby takes over at its next attempt.
    pub release_on_cancel: bool,
    /// The election's name, for messages; defaults to the lock's description.
    pub name: String,
}

impl fmt::Debug for LeaderElectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionOptions")
            .field("lock", &self.lock.describe())
            .field("identity", &self.lock.identity())
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("callbacks", &self.callbacks)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("name", &self.name)
            .finish()
    }
}

impl LeaderElectionOptions {
    /// An election on `lock` with the conventional durations (15 s / 10 s / 2 s), no
    /// callbacks and no release on cancel.
    pub fn new(lock: impl ResourceLock + 'static) -> Self {
        Self::with_lock(Arc::new(lock))
    }

    /// Like [`LeaderElectionOptions::new`], for a lock already shared.
    pub fn with_lock(lock: Arc<dyn ResourceLock>) -> Self {
        let name = lock.describe();
        LeaderElectionOptions {
            lock,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            callbacks: LeaderCallbacks::default(),
            release_on_cancel: false,
            name,
        }
    }

    /// Sets the lease duration.
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// Sets the renew deadline.
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// Sets the retry period.
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Sets the callbacks.
    pub fn callbacks(mut self, callbacks: LeaderCallbacks) -> Self {
        self.callbacks = callbacks;
        self
    }

    /// Sets whether the lock is released on cancel.
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Sets the name.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    /// Checks the configuration as client-go's `NewLeaderElector` does, in its order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseDurationNotAboveRenewDeadline);
        }
        // retry_period * 1.2, exactly, in nanoseconds.
        let jittered = self.retry_period.as_nanos() * 6 / 5;
        if self.renew_deadline.as_nanos() <= jittered {
            return Err(ConfigError::RenewDeadlineTooShort);
        }
        if self.lease_duration.is_zero() {
            return Err(ConfigError::ZeroLeaseDuration);
        }
        if self.renew_deadline.is_zero() {
            return Err(ConfigError::ZeroRenewDeadline);
        }
        if self.retry_period.is_zero() {
            return Err(ConfigError::ZeroRetryPeriod);
        }
        if self.callbacks.on_started_leading.is_none() {
            return Err(ConfigError::MissingOnStartedLeading);
        }
        if self.callbacks.on_stopped_leading.is_none() {
            return Err(ConfigError::MissingOnStoppedLeading);
        }
        if self.lock.identity().is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        Ok(())
    }
}

/// A wall clock that advances with `tokio::time` (and so with a paused test clock).
#[derive(Debug)]
struct WallClock {
    wall: Timestamp,
    mono: Instant,
}

impl WallClock {
    fn new() -> Self {
        WallClock {
            wall: Timestamp::now(),
            mono: Instant::now(),
        }
    }

    /// Now, to the microsecond (what a `MicroTime` keeps).
    fn now(&self) -> MicroTime {
        let t = self
            .wall
            .checked_add(Instant::now().saturating_duration_since(self.mono))
            .unwrap_or(self.wall);
        MicroTime(Timestamp::from_microsecond(t.as_microsecond()).unwrap_or(t))
    }
}

/// What an elector has observed of the lock.
#[derive(Debug, Default)]
struct Observed {
    record: LeaderElectionRecord,
    /// The bytes of the record last read from the lock (not of records this elector
    /// wrote, as in client-go).
    raw: Vec<u8>,
    /// When, by the local clock, the record was last seen to change or was written.
    time: Option<Instant>,
    /// The holder last reported to `on_new_leader`.
    reported_leader: String,
}

impl Observed {
    fn is_valid(&self, now: Instant) -> bool {
        let secs = u64::try_from(self.record.lease_duration_seconds).unwrap_or(0);
        self.time
            .is_some_and(|t| t + Duration::from_secs(secs) > now)
    }

    fn set(&mut self, record: LeaderElectionRecord) {
        self.record = record;
        self.time = Some(Instant::now());
    }
}

struct Inner {
    config: LeaderElectionOptions,
    observed: Mutex<Observed>,
    clock: WallClock,
    /// True from acquiring the lock until leadership ends (renewal fails, `run` is
    /// cancelled or its future dropped); see [`LeaderElector::is_leader`].
    leading: AtomicBool,
}

/// Sets [`Inner::leading`] (and `leader_election_master_status`) while `run` leads, and
/// clears both when `run` ends, however it ends.
struct LeadingFlag<'a> {
    flag: &'a AtomicBool,
    name: &'a str,
}

impl<'a> LeadingFlag<'a> {
    fn set(flag: &'a AtomicBool, name: &'a str) -> Self {
        flag.store(true, Ordering::SeqCst);
        crate::metrics::leader_status(name, true);
        LeadingFlag { flag, name }
    }

    fn clear(flag: &AtomicBool, name: &str) {
        flag.store(false, Ordering::SeqCst);
        crate::metrics::leader_status(name, false);
    }
}

impl Drop for LeadingFlag<'_> {
    fn drop(&mut self) {
        LeadingFlag::clear(self.flag, self.name);
    }
}

/// A candidate in a leader election (client-go's `LeaderElector`).
///
/// Build it with [`LeaderElector::new`], then [`run`](LeaderElector::run) it until its
/// token is cancelled or it loses leadership. Cloning is cheap (clones share the elector),
/// so a clone can answer [`is_leading`](LeaderElector::is_leading) or serve a health check
/// ([`check`](LeaderElector::check)) while `run` goes on. Run one `run` at a time.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kubegen_runtime::leaderelection::{
///     LeaderCallbacks, LeaderElectionOptions, LeaderElector, LeaseLock,
/// };
/// use kubegen_runtime::testing::ApiServer;
/// use tokio_util::sync::CancellationToken;
///
/// let server = ApiServer::new();
/// let client = kube::Client::new(server.service(), "default");
/// let (started_tx, started) = tokio::sync::oneshot::channel();
/// let started_tx = std::sync::Mutex::new(Some(started_tx));
///
/// let lock = LeaseLock::new(client, "default", "my-controller", "pod-a");
/// let callbacks = LeaderCallbacks::new()
///     .on_started_leading(move |leading: CancellationToken| {
///         let tx = started_tx.lock().unwrap().take();
///         async move {
///             if let Some(tx) = tx {
///                 let _ = tx.send(());
///             }
///             // Lead (run the controller) until leadership ends.
///             leading.cancelled().await;
///         }
///     })
///     .on_stopped_leading(|| println!("stopped leading"))
///     .on_new_leader(|id| println!("new leader: {id}"));
/// let config = LeaderElectionOptions::new(lock)
///     .callbacks(callbacks)
///     .release_on_cancel(true);
/// let elector = LeaderElector::new(config).unwrap();
///
/// let stop = CancellationToken::new();
/// let run = tokio::spawn({
///     let (elector, stop) = (elector.clone(), stop.clone());
///     async move { elector.run(stop).await }
/// });
/// started.await.unwrap();
/// assert!(elector.is_leader() && elector.is_leading());
/// assert_eq!(elector.get_leader(), "pod-a");
/// assert!(elector.check(std::time::Duration::from_secs(20)).is_ok());
///
/// stop.cancel();
/// run.await.unwrap();
/// // Released: nobody holds the lease now.
/// assert!(!elector.is_leader() && !elector.is_leading());
/// let lease = server
///     .get("leases.coordination.k8s.io", "default", "my-controller")
///     .unwrap()
///     .unwrap();
/// assert_eq!(lease["spec"]["holderIdentity"], "");
/// # }
/// ```
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

impl fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.inner.config)
            .field("observed", &*self.inner.observed.lock())
            .finish()
    }
}

/// Calls `on_stopped_leading` once, when `run` returns or its future is dropped.
struct StoppedGuard(Option<StoppedFn>);

impl Drop for StoppedGuard {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

impl LeaderElector {
    /// An elector for a validated configuration.
    pub fn new(config: LeaderElectionOptions) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(LeaderElector {
            inner: Arc::new(Inner {
                config,
                observed: Mutex::new(Observed::default()),
                clock: WallClock::new(),
                leading: AtomicBool::new(false),
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LeaderElectionOptions {
        &self.inner.config
    }

    fn identity(&self) -> &str {
        self.inner.config.lock.identity()
    }

    /// Runs the election until `cancel` is cancelled or leadership is lost:
    ///
    /// 1. acquire: attempt at once, then every `retry_period` jittered by
    ///    [`JITTER_FACTOR`] (between 1 and 2.2 periods), until an attempt succeeds or
    ///    `cancel` fires (then return without ever calling `on_started_leading`);
    /// 2. spawn `on_started_leading` with a child token of `cancel`;
    /// 3. renew: attempt at once and every `retry_period`; when attempts keep failing for
    ///    `renew_deadline`, leadership is lost: the child token is cancelled and `run`
    ///    returns;
    /// 4. on the way out, with `release_on_cancel`, release the lock if this candidate
    ///    still holds it (a 409 re-reads and retries, within `renew_deadline`).
    ///
    /// `on_stopped_leading` is called exactly once as `run` returns (or its future is
    /// dropped), whether or not this candidate led. `run` does not wait for the
    /// `on_started_leading` task.
    pub async fn run(&self, cancel: CancellationToken) {
        let _stopped = StoppedGuard(self.inner.config.callbacks.on_stopped_leading.clone());
        if !self.acquire(&cancel).await {
            return;
        }
        let leading = cancel.child_token();
        // Leadership also ends if this future is dropped.
        let leading_guard = leading.clone().drop_guard();
        let _leading_flag = LeadingFlag::set(&self.inner.leading, &self.inner.config.name);
        if let Some(started) = &self.inner.config.callbacks.on_started_leading {
            tokio::spawn(started(leading.clone()));
        }
        self.renew(&leading).await;
        drop(leading_guard);
    }

    async fn acquire(&self, cancel: &CancellationToken) -> bool {
        let cfg = &self.inner.config;
        let desc = cfg.lock.describe();
        tracing::info!(lock = %desc, "attempting to acquire leader lease");
        loop {
            if cancel.is_cancelled() {
                return false;
            }
            let acquired = tokio::select! {
                biased;
                _ = cancel.cancelled() => return false,
                ok = self.try_acquire_or_renew() => ok,
            };
            if acquired {
                tracing::info!(lock = %desc, "successfully acquired lease");
                return true;
            }
            tracing::debug!(lock = %desc, "failed to acquire lease");
            let jitter = rand::random::<f64>() * JITTER_FACTOR;
            let wait = cfg.retry_period + cfg.retry_period.mul_f64(jitter);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return false,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn renew(&self, leading: &CancellationToken) {
        let cfg = &self.inner.config;
        let desc = cfg.lock.describe();
        loop {
            if leading.is_cancelled() {
                break;
            }
            let attempts = async {
                loop {
                    if self.try_acquire_or_renew().await {
                        return;
                    }
                    tokio::time::sleep(cfg.retry_period).await;
                }
            };
            let renewed = tokio::select! {
                biased;
                _ = leading.cancelled() => break,
                r = tokio::time::timeout(cfg.renew_deadline, attempts) => r.is_ok(),
            };
            if !renewed {
                tracing::info!(lock = %desc, "failed to renew lease: timed out");
                leading.cancel();
                break;
            }
            tracing::trace!(lock = %desc, "successfully renewed lease");
            tokio::select! {
                biased;
                _ = leading.cancelled() => break,
                _ = tokio::time::sleep(cfg.retry_period) => {}
            }
        }
        // Leadership is over from here on, whether or not the lock is released.
        LeadingFlag::clear(&self.inner.leading, &cfg.name);
        if cfg.release_on_cancel {
            self.release().await;
        }
    }

    /// Gives the lock up if this candidate holds it: writes `{holder "", leaseDuration 1 s,
    /// acquire = renew = now, transitions unchanged}`, re-reading and retrying on a
    /// conflict, for at most `renew_deadline`. Returns whether the lock is not held by
    /// this candidate afterwards.
    async fn release(&self) -> bool {
        if !self.holds_lock() {
            return true;
        }
        let cfg = &self.inner.config;
        let lock = &cfg.lock;
        let attempts = async {
            loop {
                let current = match lock.get().await {
                    Ok(r) => r,
                    Err(e) if e.is_not_found() => return true,
                    Err(e) => {
                        tracing::warn!(lock = %lock.describe(), error = %e, "error retrieving resource lock during release");
                        tokio::time::sleep(cfg.retry_period).await;
                        continue;
                    }
                };
                if current.holder_identity != lock.identity() {
                    return true;
                }
                let now = self.inner.clock.now();
                let record = LeaderElectionRecord {
                    lease_duration_seconds: 1,
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    leader_transitions: current.leader_transitions,
                    ..Default::default()
                };
                match lock.update(record.clone()).await {
                    Ok(()) => {
                        self.inner.observed.lock().set(record);
                        return true;
                    }
                    Err(e) if e.is_conflict() => {
                        tracing::info!(lock = %lock.describe(), "conflict releasing the lock; retrying");
                        tokio::time::sleep(cfg.retry_period).await;
                    }
                    Err(e) => {
                        tracing::error!(lock = %lock.describe(), error = %e, "failed to release lock");
                        return false;
                    }
                }
            }
        };
        tokio::time::timeout(cfg.renew_deadline, attempts)
            .await
            .unwrap_or(false)
    }

    /// One attempt to acquire or renew the lock, as client-go's `tryAcquireOrRenew`,
    /// followed by the `on_new_leader` report; [`run`](LeaderElector::run) loops on it.
    /// Returns whether this candidate holds the lock afterwards.
    ///
    /// 1. Fast path: if this candidate is the observed holder and its observation is still
    ///    valid, a single Update renews (keeping acquire time and transitions); if it
    ///    fails, continue.
    /// 2. Get the record; if there is none, Create it (transitions 0).
    /// 3. If the record's bytes differ from those last read, observe it now (local clock).
    ///    The lease is valid while `observed time + its leaseDurationSeconds > now`.
    /// 4. Another holder with a valid lease: fail.
    /// 5. Update (optimistic concurrency): keeping acquire time and transitions when this
    ///    candidate holds it, else with transitions + 1.
    ///
    /// Exposed for callers that drive their own loop and for tests; it must not run
    /// concurrently with itself or with `run`.
    pub async fn try_acquire_or_renew(&self) -> bool {
        let ok = self.attempt().await;
        self.maybe_report_transition();
        ok
    }

    async fn attempt(&self) -> bool {
        let cfg = &self.inner.config;
        let lock = &cfg.lock;
        let now = Instant::now();
        let wall = self.inner.clock.now();
        let mut record = LeaderElectionRecord {
            holder_identity: lock.identity().to_owned(),
            lease_duration_seconds: i32::try_from(cfg.lease_duration.as_secs()).unwrap_or(i32::MAX),
            acquire_time: Some(wall.clone()),
            renew_time: Some(wall),
            ..Default::default()
        };

        // 1. Fast path.
        let fast = {
            let o = self.inner.observed.lock();
            (o.record.holder_identity == lock.identity() && o.is_valid(now))
                .then(|| (o.record.acquire_time.clone(), o.record.leader_transitions))
        };
        if let Some((acquire_time, transitions)) = fast {
            let renewal = LeaderElectionRecord {
                acquire_time,
                leader_transitions: transitions,
                ..record.clone()
            };
            match lock.update(renewal.clone()).await {
                Ok(()) => {
                    self.inner.observed.lock().set(renewal);
                    return true;
                }
                Err(e) => {
                    tracing::debug!(lock = %lock.describe(), error = %e, "failed to update lock optimistically, falling back to slow path");
                }
            }
        }

        // 2. Get or create.
        let current = match lock.get().await {
            Ok(r) => r,
            Err(e) if e.is_not_found() => {
                return match lock.create(record.clone()).await {
                    Ok(()) => {
                        self.inner.observed.lock().set(record);
                        true
                    }
                    Err(e) => {
                        tracing::debug!(lock = %lock.describe(), error = %e, "error initially creating leader election record");
                        false
                    }
                };
            }
            Err(e) => {
                tracing::debug!(lock = %lock.describe(), error = %e, "error retrieving resource lock");
                return false;
            }
        };

        // 3 and 4. Observe; back off from a valid lease held by someone else.
        {
            let mut o = self.inner.observed.lock();
            let raw = current.to_bytes();
            if o.raw != raw {
                o.set(current.clone());
                o.raw = raw;
            }
            let leader = o.record.holder_identity == lock.identity();
            if !current.holder_identity.is_empty() && o.is_valid(now) && !leader {
                tracing::trace!(lock = %lock.describe(), holder = %current.holder_identity, "lock is held and has not yet expired");
                return false;
            }
            // 5. Correct the record before writing it.
            if leader {
                record.acquire_time = current.acquire_time.clone();
                record.leader_transitions = current.leader_transitions;
            } else {
                record.leader_transitions = current.leader_transitions.saturating_add(1);
            }
        }
        match lock.update(record.clone()).await {
            Ok(()) => {
                self.inner.observed.lock().set(record);
                true
            }
            Err(e) => {
                tracing::debug!(lock = %lock.describe(), error = %e, "failed to update lock");
                false
            }
        }
    }

    fn maybe_report_transition(&self) {
        let holder = {
            let mut o = self.inner.observed.lock();
            if o.record.holder_identity == o.reported_leader {
                return;
            }
            o.reported_leader = o.record.holder_identity.clone();
            o.reported_leader.clone()
        };
        if let Some(f) = self.inner.config.callbacks.on_new_leader.clone() {
            tokio::spawn(async move { f(&holder) });
        }
    }

    /// Whether the holder last observed (or written) is this candidate (client-go's
    /// `IsLeader`). Like client-go's, it stays true after `run` ends without releasing
    /// the lock (the Lease still names this candidate until it expires): to know whether
    /// this candidate leads now, ask [`is_leading`](LeaderElector::is_leading).
    pub fn is_leader(&self) -> bool {
        self.holds_lock()
    }

    /// Whether this candidate leads now: `run` acquired the lock, leadership has not ended
    /// (renewal did not fail, `run` was not cancelled nor its future dropped), and the
    /// holder last observed (or written) is this candidate. False whenever `run` is not
    /// running.
    pub fn is_leading(&self) -> bool {
        self.inner.leading.load(Ordering::SeqCst) && self.holds_lock()
    }

    fn holds_lock(&self) -> bool {
        self.inner.observed.lock().record.holder_identity == self.identity()
    }

    /// The holder last observed; empty before any observation or after a release.
    pub fn get_leader(&self) -> String {
        self.inner.observed.lock().record.holder_identity.clone()
    }

    /// The record last observed (or written).
    pub fn observed_record(&self) -> LeaderElectionRecord {
        self.inner.observed.lock().record.clone()
    }

    /// A health check (client-go's `Check`): a leader whose last successful observation is
    /// older than `lease_duration + tolerance` should have stopped leading by now (its
    /// renew loop is stuck), so it is unhealthy. A candidate that does not lead is always
    /// healthy.
    pub fn check(&self, tolerance: Duration) -> Result<(), CheckError> {
        let o = self.inner.observed.lock();
        if o.record.holder_identity != self.identity() {
            return Ok(());
        }
        let since = o
            .time
            .map(|t| Instant::now().saturating_duration_since(t))
            .unwrap_or(Duration::MAX);
        if since > self.inner.config.lease_duration.saturating_add(tolerance) {
            return Err(CheckError {
                name: self.inner.config.name.clone(),
            });
        }
        Ok(())
    }
}
