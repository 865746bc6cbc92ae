//! Leader election (SEMANTICS 10) against the in-memory API server: single attempts of
//! `try_acquire_or_renew` checked through the server's request log and stored Lease, the
//! run loop under a paused clock with reactors injecting failures and conflicts, and two
//! electors competing for one Lease over the tower Service (paused clock) and over real
//! TCP through kube::Client (real time).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kubegen_runtime::errors::{GroupResource, StatusError};
use kubegen_runtime::leaderelection::{
    ConfigError, LeaderCallbacks, LeaderElectionOptions, LeaderElectionRecord, LeaderElector,
    LeaseLock, LockError, ResourceLock,
};
use kubegen_runtime::testing::{ApiServer, Reactor};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const NAME: &str = "lease";
const LEASES: &str = "leases.coordination.k8s.io";

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// What the callbacks of a test elector report.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    Started(String),
    /// The `on_started_leading` task saw its token cancelled.
    Ended(String),
    Stopped(String),
    NewLeader(String),
}

struct Events(mpsc::UnboundedReceiver<Event>);

/// Events whose relative order is not guaranteed (different tasks send them), sorted.
fn sorted(events: impl IntoIterator<Item = Event>) -> Vec<String> {
    let mut v: Vec<String> = events.into_iter().map(|e| format!("{e:?}")).collect();
    v.sort();
    v
}

fn ended_and_stopped(id: &str) -> Vec<String> {
    sorted([Event::Ended(id.into()), Event::Stopped(id.into())])
}

impl Events {
    /// The next event, or `None` if none comes within a minute (of the paused clock: at
    /// once when nothing is left to run).
    async fn next(&mut self) -> Option<Event> {
        tokio::time::timeout(secs(60), self.0.recv())
            .await
            .ok()
            .flatten()
    }

    /// Every event already sent.
    fn drain(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Ok(e) = self.0.try_recv() {
            out.push(e);
        }
        out
    }
}

/// Callbacks that report to a channel.
fn callbacks(id: &str) -> (LeaderCallbacks, Events) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (t1, t2, t3) = (tx.clone(), tx.clone(), tx);
    let (i1, i2) = (id.to_owned(), id.to_owned());
    let cbs = LeaderCallbacks::new()
        .on_started_leading(move |token: CancellationToken| {
            let (tx, id) = (t1.clone(), i1.clone());
            async move {
                let _ = tx.send(Event::Started(id.clone()));
                token.cancelled().await;
                let _ = tx.send(Event::Ended(id));
            }
        })
        .on_stopped_leading(move || {
            let _ = t2.send(Event::Stopped(i2.clone()));
        })
        .on_new_leader(move |holder| {
            let _ = t3.send(Event::NewLeader(holder.to_owned()));
        });
    (cbs, Events(rx))
}

/// The test configuration of SEMANTICS 10: LeaseDuration 10 s.
fn config(lock: impl ResourceLock + 'static, id: &str) -> (LeaderElectionOptions, Events) {
    let (cbs, events) = callbacks(id);
    let config = LeaderElectionOptions::new(lock)
        .lease_duration(secs(10))
        .renew_deadline(secs(5))
        .retry_period(secs(2))
        .callbacks(cbs)
        .name("test-election");
    (config, events)
}

struct Env {
    server: ApiServer,
    client: kube::Client,
}

impl Env {
    fn new() -> Self {
        let server = ApiServer::new();
        let client = kube::Client::new(server.service(), "default");
        Env { server, client }
    }

    fn lock(&self, id: &str) -> LeaseLock {
        LeaseLock::new(self.client.clone(), NS, NAME, id)
    }

    fn elector(&self, id: &str) -> (LeaderElector, Events) {
        self.elector_with(id, |c| c)
    }

    fn elector_with(
        &self,
        id: &str,
        f: impl FnOnce(LeaderElectionOptions) -> LeaderElectionOptions,
    ) -> (LeaderElector, Events) {
        let (config, events) = config(self.lock(id), id);
        (LeaderElector::new(f(config)).unwrap(), events)
    }

    fn create_lease(&self, spec: Value) {
        self.server
            .create(
                LEASES,
                json!({"metadata": {"name": NAME, "namespace": NS}, "spec": spec}),
            )
            .unwrap();
    }

    fn lease(&self) -> Value {
        self.server.get(LEASES, NS, NAME).unwrap().unwrap()
    }

    fn spec(&self) -> Value {
        self.lease()["spec"].clone()
    }

    /// Rewrites fields of the stored Lease's spec (another holder renewing or releasing).
    fn edit_spec(&self, fields: Value) {
        let mut lease = self.lease();
        for (k, v) in fields.as_object().unwrap() {
            lease["spec"][k] = v.clone();
        }
        self.server.update(LEASES, lease).unwrap();
    }

    /// The verbs of the requests on leases since the log was last cleared.
    fn verbs(&self) -> Vec<String> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.resource == "leases")
            .map(|r| r.verb)
            .collect()
    }
}

fn conflict() -> StatusError {
    StatusError::conflict(
        GroupResource {
            group: "coordination.k8s.io",
            resource: "leases",
        },
        NAME,
        StatusError::OPTIMISTIC_LOCK_MESSAGE,
    )
}

/// A lock held in memory, for what the Lease cannot show: a Get that never answers.
#[derive(Default)]
struct FakeLock {
    identity: String,
    record: Mutex<Option<LeaderElectionRecord>>,
    hang_get: bool,
    calls: Arc<Mutex<Vec<&'static str>>>,
}

impl ResourceLock for FakeLock {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        "fake/lock".into()
    }

    fn get(&self) -> BoxFuture<'_, Result<LeaderElectionRecord, LockError>> {
        self.calls.lock().push("get");
        Box::pin(async move {
            if self.hang_get {
                futures::future::pending::<()>().await;
            }
            self.record.lock().clone().ok_or_else(|| {
                StatusError::not_found(
                    GroupResource {
                        group: "",
                        resource: "fakes",
                    },
                    "lock",
                )
                .into()
            })
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        self.calls.lock().push("create");
        *self.record.lock() = Some(record);
        Box::pin(async { Ok(()) })
    }

    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        self.calls.lock().push("update");
        *self.record.lock() = Some(record);
        Box::pin(async { Ok(()) })
    }
}

fn fake(identity: &str) -> FakeLock {
    FakeLock {
        identity: identity.into(),
        ..Default::default()
    }
}

fn validate(
    lock: FakeLock,
    lease: u64,
    renew: u64,
    retry: u64,
    cbs: LeaderCallbacks,
) -> Result<(), ConfigError> {
    let config = LeaderElectionOptions::new(lock)
        .lease_duration(secs(lease))
        .renew_deadline(secs(renew))
        .retry_period(secs(retry))
        .callbacks(cbs);
    LeaderElector::new(config).map(|_| ())
}

#[test]
fn config_validation() {
    // SEMANTICS 10.1
    let cbs = || callbacks("baz").0;
    assert_eq!(validate(fake("baz"), 15, 10, 2, cbs()), Ok(()));
    assert_eq!(validate(fake("baz"), 15, 2, 1, cbs()), Ok(()));
    let err = validate(fake("baz"), 10, 10, 2, cbs()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "leaseDuration must be greater than renewDeadline"
    );
    let err = validate(fake("baz"), 15, 2, 2, cbs()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "renewDeadline must be greater than retryPeriod*JitterFactor"
    );
    let err = validate(fake(""), 15, 10, 2, cbs()).unwrap_err();
    assert_eq!(err.to_string(), "Lock identity is empty");
    let mut no_start = cbs();
    no_start.on_started_leading = None;
    let err = validate(fake("baz"), 15, 10, 2, no_start).unwrap_err();
    assert_eq!(err.to_string(), "OnStartedLeading callback must not be nil");
    let mut no_stop = cbs();
    no_stop.on_stopped_leading = None;
    let err = validate(fake("baz"), 15, 10, 2, no_stop).unwrap_err();
    assert_eq!(err.to_string(), "OnStoppedLeading callback must not be nil");
    let err = validate(fake("baz"), 15, 10, 0, cbs()).unwrap_err();
    assert_eq!(err.to_string(), "retryPeriod must be greater than zero");
    // on_new_leader is optional.
    let mut no_new = cbs();
    no_new.on_new_leader = None;
    assert_eq!(validate(fake("baz"), 15, 10, 2, no_new), Ok(()));

    // The conventional defaults.
    let config = LeaderElectionOptions::new(fake("baz"));
    assert_eq!(
        (
            config.lease_duration,
            config.renew_deadline,
            config.retry_period
        ),
        (secs(15), secs(10), secs(2))
    );
    assert!(!config.release_on_cancel);
}

#[tokio::test(start_paused = true)]
async fn no_lease_is_created() {
    // SEMANTICS 10.2
    let env = Env::new();
    let (le, mut events) = env.elector("baz");
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(env.verbs(), ["get", "create"]);
    let spec = env.spec();
    assert_eq!(spec["holderIdentity"], "baz");
    assert_eq!(spec["leaseDurationSeconds"], 10);
    assert_eq!(spec["leaseTransitions"], 0);
    assert_eq!(spec["acquireTime"], spec["renewTime"]);
    assert!(le.is_leader());
    assert_eq!(events.next().await, Some(Event::NewLeader("baz".into())));
}

#[tokio::test(start_paused = true)]
async fn lease_with_empty_spec_is_taken() {
    // SEMANTICS 10.3
    let env = Env::new();
    env.create_lease(json!({}));
    let (le, _events) = env.elector("baz");
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(env.verbs(), ["get", "update"]);
    let spec = env.spec();
    assert_eq!(spec["holderIdentity"], "baz");
    assert_eq!(spec["leaseDurationSeconds"], 10);
    assert_eq!(spec["leaseTransitions"], 1);
}

#[tokio::test(start_paused = true)]
async fn released_lease_is_taken_although_still_valid() {
    // SEMANTICS 10.4: an empty holder wins even while the observed lease is valid (the
    // observation was made at this very instant, so it is valid for 10 s to come).
    let env = Env::new();
    env.create_lease(json!({"holderIdentity": "", "leaseDurationSeconds": 10}));
    let (le, _events) = env.elector("baz");
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(env.spec()["holderIdentity"], "baz");
    assert_eq!(env.spec()["leaseTransitions"], 1);

    // The same after first seeing a live holder that then releases: no waiting.
    let env = Env::new();
    env.create_lease(json!({"holderIdentity": "bing", "leaseDurationSeconds": 10}));
    let (le, _events) = env.elector("baz");
    assert!(!le.try_acquire_or_renew().await);
    env.edit_spec(json!({"holderIdentity": "", "leaseDurationSeconds": 1}));
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(env.spec()["holderIdentity"], "baz");
    assert_eq!(env.spec()["leaseTransitions"], 1);
}

#[tokio::test(start_paused = true)]
async fn valid_lease_of_another_holder_is_left_alone() {
    // SEMANTICS 10.5
    let env = Env::new();
    env.create_lease(json!({"holderIdentity": "bing", "leaseDurationSeconds": 10}));
    env.server.clear_requests();
    let (le, mut events) = env.elector("baz");
    assert!(!le.try_acquire_or_renew().await);
    assert_eq!(env.verbs(), ["get"]);
    assert_eq!(le.get_leader(), "bing");
    assert!(!le.is_leader());
    assert_eq!(events.next().await, Some(Event::NewLeader("bing".into())));
    assert_eq!(env.spec()["holderIdentity"], "bing");
}

#[tokio::test(start_paused = true)]
async fn expired_lease_of_another_holder_is_taken() {
    // SEMANTICS 10.6: the record is unchanged and was observed 1000 h ago.
    let env = Env::new();
    env.create_lease(json!({
        "holderIdentity": "bing", "leaseDurationSeconds": 10, "leaseTransitions": 4,
    }));
    let (le, mut events) = env.elector("baz");
    assert!(!le.try_acquire_or_renew().await);
    tokio::time::advance(secs(1000 * 3600)).await;
    env.server.clear_requests();
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(env.verbs(), ["get", "update"]);
    let spec = env.spec();
    assert_eq!(spec["holderIdentity"], "baz");
    assert_eq!(spec["leaseTransitions"], 5);
    assert_eq!(spec["leaseDurationSeconds"], 10);
    assert_eq!(events.next().await, Some(Event::NewLeader("bing".into())));
    assert_eq!(events.next().await, Some(Event::NewLeader("baz".into())));
}

#[tokio::test(start_paused = true)]
async fn unchanged_record_keeps_its_first_observation_time() {
    // SEMANTICS 10.7
    let env = Env::new();
    env.create_lease(json!({"holderIdentity": "bing", "leaseDurationSeconds": 3}));
    let (le, _events) = env.elector("baz");
    assert!(!le.try_acquire_or_renew().await);
    // 2 s later the identical record is still within the 3 s seen first...
    tokio::time::advance(secs(2)).await;
    assert!(!le.try_acquire_or_renew().await);
    // ...and 3 s after the first sight it has expired: the second read did not refresh
    // the observation time, because the bytes had not changed.
    tokio::time::advance(secs(1)).await;
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(env.spec()["holderIdentity"], "baz");
    assert_eq!(env.spec()["leaseTransitions"], 1);
}

#[tokio::test(start_paused = true)]
async fn renewals_of_another_holder_keep_refreshing_the_observation() {
    // SEMANTICS 10.8
    let env = Env::new();
    env.create_lease(json!({
        "holderIdentity": "bing", "leaseDurationSeconds": 10,
        "renewTime": "2024-01-01T00:00:00.000000Z",
    }));
    let (le, _events) = env.elector("baz");
    for i in 1..=10 {
        assert!(!le.try_acquire_or_renew().await, "attempt {i}");
        tokio::time::advance(secs(3)).await;
        env.edit_spec(json!({"renewTime": format!("2024-01-01T00:00:{:02}.000000Z", i * 3)}));
    }
    // 30 s went by, three lease durations, and bing kept its lease throughout.
    assert!(!le.try_acquire_or_renew().await);
    assert_eq!(env.spec()["holderIdentity"], "bing");
    assert_eq!(le.get_leader(), "bing");
    // Once bing stops renewing, the lease expires 10 s after its last change was seen.
    tokio::time::advance(secs(9)).await;
    assert!(!le.try_acquire_or_renew().await);
    tokio::time::advance(secs(1)).await;
    assert!(le.try_acquire_or_renew().await);
}

#[tokio::test(start_paused = true)]
async fn leader_renews_with_a_single_update() {
    // SEMANTICS 10.9
    let env = Env::new();
    let (le, _events) = env.elector("baz");
    assert!(le.try_acquire_or_renew().await);
    let acquired = env.spec();

    tokio::time::advance(secs(2)).await;
    env.server.clear_requests();
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(env.verbs(), ["update"]);
    let renewed = env.spec();
    assert_eq!(renewed["acquireTime"], acquired["acquireTime"]);
    assert_eq!(renewed["leaseTransitions"], acquired["leaseTransitions"]);
    assert_ne!(renewed["renewTime"], acquired["renewTime"]);

    // Someone touched the Lease: the optimistic Update conflicts, and the slow path reads
    // and writes again, still preserving acquire time and transitions.
    env.server.touch(LEASES, NS, NAME).unwrap();
    tokio::time::advance(secs(2)).await;
    env.server.clear_requests();
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(env.verbs(), ["update", "get", "update"]);
    let after = env.spec();
    assert_eq!(after["holderIdentity"], "baz");
    assert_eq!(after["acquireTime"], acquired["acquireTime"]);
    assert_eq!(after["leaseTransitions"], acquired["leaseTransitions"]);
    assert_ne!(after["renewTime"], renewed["renewTime"]);
}

/// Spawns `le.run(token)`.
fn spawn_run(le: &LeaderElector, token: &CancellationToken) -> tokio::task::JoinHandle<()> {
    let (le, token) = (le.clone(), token.clone());
    tokio::spawn(async move { le.run(token).await })
}

#[tokio::test(start_paused = true)]
async fn failing_renewals_end_leadership_after_the_renew_deadline() {
    // SEMANTICS 10.10
    let env = Env::new();
    let (le, mut events) = env.elector("baz");
    let token = CancellationToken::new();
    let run = spawn_run(&le, &token);
    assert_eq!(events.next().await, Some(Event::NewLeader("baz".into())));
    assert_eq!(events.next().await, Some(Event::Started("baz".into())));
    // It keeps leading while renewals succeed.
    tokio::time::sleep(secs(31)).await;
    assert!(le.is_leader());
    assert!(events.drain().is_empty());

    env.server
        .react(Reactor::new("update", "leases").error(StatusError::internal("etcd is down")));
    let failing_since = Instant::now();
    tokio::time::timeout(secs(60), run).await.unwrap().unwrap();
    assert!(failing_since.elapsed() >= secs(5));
    assert!(!token.is_cancelled(), "the caller's token is not touched");
    let rest = [events.next().await, events.next().await];
    assert_eq!(sorted(rest.into_iter().flatten()), ended_and_stopped("baz"));
    assert_eq!(
        events.next().await,
        None,
        "on_stopped_leading is called once"
    );
    // No release was asked for: the Lease still names baz.
    assert_eq!(env.spec()["holderIdentity"], "baz");
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_empties_the_holder_and_retries_a_conflict() {
    // SEMANTICS 10.11
    let env = Env::new();
    let (le, mut events) = env.elector_with("baz", |c| c.release_on_cancel(true));
    let token = CancellationToken::new();
    let run = spawn_run(&le, &token);
    assert_eq!(events.next().await, Some(Event::NewLeader("baz".into())));
    assert_eq!(events.next().await, Some(Event::Started("baz".into())));
    tokio::time::sleep(secs(7)).await;
    let before = env.spec();

    env.server
        .react(Reactor::new("update", "leases").times(1).error(conflict()));
    env.server.clear_requests();
    token.cancel();
    tokio::time::timeout(secs(60), run).await.unwrap().unwrap();

    assert_eq!(env.verbs(), ["get", "update", "get", "update"]);
    let spec = env.spec();
    assert_eq!(spec["holderIdentity"], "");
    assert_eq!(spec["leaseDurationSeconds"], 1);
    assert_eq!(spec["leaseTransitions"], before["leaseTransitions"]);
    assert_eq!(spec["acquireTime"], spec["renewTime"]);
    assert!(!le.is_leader());
    assert_eq!(le.get_leader(), "");
    assert_eq!(sorted(events.drain()), ended_and_stopped("baz"));
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_sends_nothing_when_not_leading() {
    // SEMANTICS 10.12: never the leader.
    let env = Env::new();
    env.create_lease(json!({"holderIdentity": "bing", "leaseDurationSeconds": 1000}));
    let (le, mut events) = env.elector_with("baz", |c| c.release_on_cancel(true));
    let token = CancellationToken::new();
    let run = spawn_run(&le, &token);
    tokio::time::sleep(secs(20)).await;
    token.cancel();
    tokio::time::timeout(secs(60), run).await.unwrap().unwrap();
    let verbs = env.verbs();
    assert!(
        verbs.len() > 2 && verbs.iter().all(|v| v == "get"),
        "{verbs:?}"
    );
    assert_eq!(env.spec()["holderIdentity"], "bing");
    assert_eq!(
        events.drain(),
        [
            Event::NewLeader("bing".into()),
            Event::Stopped("baz".into())
        ]
    );

    // SEMANTICS 10.12: was the leader, lost the Lease to bing, then gave up.
    let env = Env::new();
    let (le, mut events) = env.elector_with("baz", |c| c.release_on_cancel(true));
    let token = CancellationToken::new();
    let run = spawn_run(&le, &token);
    assert_eq!(events.next().await, Some(Event::NewLeader("baz".into())));
    assert_eq!(events.next().await, Some(Event::Started("baz".into())));
    env.edit_spec(json!({"holderIdentity": "bing", "leaseDurationSeconds": 1000}));
    env.server.clear_requests();
    tokio::time::timeout(secs(60), run).await.unwrap().unwrap();
    // One optimistic renewal failed on the stale resourceVersion; nothing was written.
    let updates = env.verbs().iter().filter(|v| *v == "update").count();
    assert_eq!(updates, 1);
    assert_eq!(env.spec()["holderIdentity"], "bing");
    assert_eq!(env.spec()["leaseDurationSeconds"], 1000);
    let rest = events.drain();
    assert_eq!(rest[0], Event::NewLeader("bing".into()));
    assert_eq!(sorted(rest[1..].to_vec()), ended_and_stopped("baz"));
}

#[tokio::test(start_paused = true)]
async fn cancel_while_acquiring_never_starts_leading() {
    // SEMANTICS 10.13
    let env = Env::new();
    env.create_lease(json!({"holderIdentity": "bing", "leaseDurationSeconds": 1000}));
    let (le, mut events) = env.elector("baz");
    let token = CancellationToken::new();
    let run = spawn_run(&le, &token);
    tokio::time::sleep(secs(15)).await;
    token.cancel();
    tokio::time::timeout(secs(60), run).await.unwrap().unwrap();
    assert_eq!(
        events.drain(),
        [
            Event::NewLeader("bing".into()),
            Event::Stopped("baz".into())
        ]
    );

    // SEMANTICS 10.13: cancelled while an attempt is in flight (a Get that never
    // answers): run returns at once, without waiting for it.
    let lock = FakeLock {
        hang_get: true,
        ..fake("baz")
    };
    let calls = lock.calls.clone();
    let (config, mut events) = config(lock, "baz");
    let le = LeaderElector::new(config).unwrap();
    let token = CancellationToken::new();
    let run = spawn_run(&le, &token);
    tokio::time::sleep(secs(1)).await;
    assert_eq!(*calls.lock(), ["get"]);
    token.cancel();
    tokio::time::timeout(secs(1), run).await.unwrap().unwrap();
    assert_eq!(events.drain(), [Event::Stopped("baz".into())]);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_run_future_stops_leading_once() {
    // SEMANTICS 10.10: on_stopped_leading is always called once, even when the future
    // of `run` is dropped (a task aborted) instead of returning.
    let env = Env::new();
    let (le, mut events) = env.elector("baz");
    let run = spawn_run(&le, &CancellationToken::new());
    assert_eq!(events.next().await, Some(Event::NewLeader("baz".into())));
    assert_eq!(events.next().await, Some(Event::Started("baz".into())));
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    let rest = [events.next().await, events.next().await];
    assert_eq!(sorted(rest.into_iter().flatten()), ended_and_stopped("baz"));
    assert_eq!(events.next().await, None);
}

/// A [`LeaseLock`] that logs, with the local time, every record it read and every record
/// it wrote successfully.
struct RecordingLock {
    inner: LeaseLock,
    log: Arc<Mutex<Vec<Op>>>,
}

#[derive(Debug, Clone)]
struct Op {
    at: Instant,
    who: String,
    write: bool,
    record: LeaderElectionRecord,
}

impl RecordingLock {
    fn push(&self, write: bool, record: LeaderElectionRecord) {
        self.log.lock().push(Op {
            at: Instant::now(),
            who: self.inner.identity().to_owned(),
            write,
            record,
        });
    }
}

impl ResourceLock for RecordingLock {
    fn identity(&self) -> &str {
        self.inner.identity()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn get(&self) -> BoxFuture<'_, Result<LeaderElectionRecord, LockError>> {
        Box::pin(async move {
            let r = self.inner.get().await?;
            self.push(false, r.clone());
            Ok(r)
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            self.inner.create(record.clone()).await?;
            self.push(true, record);
            Ok(())
        })
    }

    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            self.inner.update(record.clone()).await?;
            self.push(true, record);
            Ok(())
        })
    }
}

struct Timing {
    lease: Duration,
    renew: Duration,
    retry: Duration,
    /// How many lease durations the first leader leads before it is cancelled.
    hold: u32,
}

/// Two electors on one Lease: the first to lead leads alone until cancelled (without
/// release); the other takes over no earlier than a lease duration after it saw the
/// first one's last renewal; at no time do both lead.
async fn two_electors(client: kube::Client, t: Timing) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let active = Arc::new(AtomicUsize::new(0));
    let max_active = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, Instant)>();
    let mut electors = Vec::new();
    for id in ["alpha", "beta"] {
        let lock = RecordingLock {
            inner: LeaseLock::new(client.clone(), NS, NAME, id),
            log: log.clone(),
        };
        let (active, max_active, tx, who) = (
            active.clone(),
            max_active.clone(),
            tx.clone(),
            id.to_owned(),
        );
        let cbs = LeaderCallbacks::new()
            .on_started_leading(move |token: CancellationToken| {
                let (active, max_active, tx, who) =
                    (active.clone(), max_active.clone(), tx.clone(), who.clone());
                async move {
                    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                    max_active.fetch_max(now, Ordering::SeqCst);
                    let _ = tx.send((who, Instant::now()));
                    token.cancelled().await;
                    active.fetch_sub(1, Ordering::SeqCst);
                }
            })
            .on_stopped_leading(|| {});
        let config = LeaderElectionOptions::new(lock)
            .lease_duration(t.lease)
            .renew_deadline(t.renew)
            .retry_period(t.retry)
            .callbacks(cbs);
        let le = LeaderElector::new(config).unwrap();
        let token = CancellationToken::new();
        let run = spawn_run(&le, &token);
        electors.push((id, le, token, run));
    }

    // A guard against hanging forever when the election is broken: 20 lease durations.
    let guard = t.lease * 20;
    let (first, _) = tokio::time::timeout(guard, rx.recv())
        .await
        .unwrap()
        .unwrap();
    let (a, b) = if first == "alpha" { (0, 1) } else { (1, 0) };
    // The first leads alone for a while.
    tokio::time::sleep(t.lease * t.hold).await;
    assert!(electors[a].1.is_leader());
    assert!(!electors[b].1.is_leader());
    assert_eq!(electors[b].1.get_leader(), first);
    assert!(rx.try_recv().is_err(), "the standby must not lead");

    electors[a].2.cancel();
    let (second, took_over_at) = tokio::time::timeout(guard, rx.recv())
        .await
        .expect("the standby takes over")
        .unwrap();
    assert_eq!(second, electors[b].0);
    assert_eq!(max_active.load(Ordering::SeqCst), 1, "two leaders at once");

    // The last of the first leader's records that the second one read, and when it
    // first read it.
    let log = log.lock().clone();
    let reads_by_b = || log.iter().filter(|op| !op.write && op.who == second);
    let last_renewal = reads_by_b()
        .rfind(|op| op.record.holder_identity == first)
        .unwrap();
    let first_seen_by_b = reads_by_b()
        .find(|op| op.record == last_renewal.record)
        .unwrap();
    if let Some(written) = log
        .iter()
        .find(|op| op.write && op.record == last_renewal.record)
    {
        assert!(first_seen_by_b.at >= written.at);
    }
    assert!(
        took_over_at >= first_seen_by_b.at + t.lease,
        "took over {:?} after seeing the last renewal",
        took_over_at - first_seen_by_b.at
    );
    // The takeover counted as a transition.
    assert_eq!(electors[b].1.observed_record().leader_transitions, 1);

    electors[b].2.cancel();
    for (_, _, _, run) in electors {
        tokio::time::timeout(guard, run).await.unwrap().unwrap();
    }
    assert_eq!(active.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn two_electors_over_the_tower_service() {
    // SEMANTICS 10.14
    let env = Env::new();
    two_electors(
        env.client.clone(),
        Timing {
            lease: secs(15),
            renew: secs(10),
            retry: secs(2),
            hold: 3,
        },
    )
    .await;
}

#[tokio::test]
async fn two_electors_over_tcp() {
    // SEMANTICS 10.14 over real TCP through kube::Client, in real time (a paused clock
    // would jump while requests are on the wire, which breaks the election's timing
    // assumption just as a stalled process would). The lease is long enough that only a
    // stall of seconds could break that assumption on a loaded machine.
    let server = ApiServer::new();
    let tcp = server.serve_tcp().await.unwrap();
    let client = tcp.client().await.unwrap();
    two_electors(
        client,
        Timing {
            lease: secs(5),
            renew: secs(2),
            retry: Duration::from_millis(500),
            hold: 1,
        },
    )
    .await;
    tcp.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn check_reports_a_leader_that_stopped_renewing() {
    // SEMANTICS 10.15
    let env = Env::new();
    let (le, _events) = env.elector("baz");
    assert!(le.try_acquire_or_renew().await);
    let tolerance = secs(5);
    assert_eq!(le.check(tolerance), Ok(()));
    tokio::time::advance(secs(10) + tolerance).await;
    assert_eq!(le.check(tolerance), Ok(()));
    tokio::time::advance(Duration::from_millis(1)).await;
    let err = le.check(tolerance).unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed election to renew leadership on lease test-election"
    );
    // A renewal makes it healthy again.
    assert!(le.try_acquire_or_renew().await);
    assert_eq!(le.check(tolerance), Ok(()));

    // A candidate that does not lead is healthy however old its observation.
    let (other, _events) = env.elector("bing");
    assert!(!other.try_acquire_or_renew().await);
    tokio::time::advance(secs(1000 * 3600)).await;
    assert_eq!(other.check(tolerance), Ok(()));
}

#[tokio::test(start_paused = true)]
async fn micro_times_round_trip_with_microseconds() {
    // SEMANTICS 10.16
    let renew = "2024-01-01T00:00:00.123456Z";
    let acquire = "2023-12-31T23:59:59.000001Z";
    let env = Env::new();
    env.create_lease(json!({
        "holderIdentity": "baz", "leaseDurationSeconds": 10,
        "acquireTime": acquire, "renewTime": renew,
    }));

    // Through k8s-openapi's Lease.
    let stored = env.lease();
    let lease: Lease = serde_json::from_value(stored.clone()).unwrap();
    let back = serde_json::to_value(&lease).unwrap();
    assert_eq!(back["spec"]["renewTime"], renew);
    assert_eq!(back["spec"]["acquireTime"], acquire);

    // Through the lock's record and its bytes.
    let lock = env.lock("baz");
    let record = lock.get().await.unwrap();
    let bytes = String::from_utf8(record.to_bytes()).unwrap();
    assert!(bytes.contains(renew) && bytes.contains(acquire), "{bytes}");

    // Through an election: baz finds itself holding the Lease and renews it, keeping the
    // acquire time to the microsecond; the new renew time has six fractional digits.
    let (le, _events) = env.elector("baz");
    assert!(le.try_acquire_or_renew().await);
    let spec = env.spec();
    assert_eq!(spec["acquireTime"], acquire);
    let renewed = spec["renewTime"].as_str().unwrap();
    assert_ne!(renewed, renew);
    let fraction = renewed.trim_end_matches('Z').rsplit_once('.').unwrap().1;
    assert_eq!(fraction.len(), 6, "{renewed}");
    let whole: LeaderElectionRecord =
        serde_json::from_value(json!({"renewTime": "2024-01-01T00:00:00Z"})).unwrap();
    assert!(String::from_utf8(whole.to_bytes())
        .unwrap()
        .contains("2024-01-01T00:00:00.000000Z"));
}

/// `is_leading` says whether this candidate leads now; `is_leader` keeps client-go's
/// meaning (the observed holder), which outlives `run` when the lock is not released.
#[tokio::test(start_paused = true)]
async fn is_leading_ends_with_run_even_without_release() {
    let env = Env::new();
    let (le, mut events) = env.elector("baz");
    assert!(!le.is_leading());
    let token = CancellationToken::new();
    let run = spawn_run(&le, &token);
    assert_eq!(events.next().await, Some(Event::NewLeader("baz".into())));
    assert_eq!(events.next().await, Some(Event::Started("baz".into())));
    assert!(le.is_leading() && le.is_leader());

    token.cancel();
    run.await.unwrap();
    assert_eq!(env.spec()["holderIdentity"], "baz", "not released");
    assert!(
        le.is_leader(),
        "client-go's IsLeader: the observed holder is still baz"
    );
    assert!(!le.is_leading(), "but it does not lead any more");
}
