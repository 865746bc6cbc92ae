//! Convergence under faults: a SharedIndexInformer on the in-memory API server, driven by
//! a seeded random mix of creates, updates and deletes while watches are dropped, 410s
//! are forced, histories are compacted, and lists and watches fail with 500/429 or are
//! delayed. Once the faults are removed and the informer has caught up, its cache must
//! equal the server's objects exactly (keys and resourceVersions), and every handler's
//! event log must replay to that same state, in resourceVersion order, with a delete
//! for every object that went away.
//!
//! Each scenario runs over the in-process tower Service and over real TCP through a
//! `kube::Client` built from a kubeconfig. A seed fixes the run's configuration (page
//! size, streaming lists, bookmark interval) and its whole sequence of writes, faults
//! and pauses; how those interleave with the informer's own tasks and threads still
//! depends on timing, so a failing seed may need a few reruns to fail again.
//! `KUBEGEN_CONVERGE_SEED=<n>` (or a comma-separated list; `0x` for hex) replaces the
//! default seeds, `KUBEGEN_CONVERGE_OPS=<n>` the number of operations per run, and
//! `KUBEGEN_CONVERGE_TRACE=1` prints every list and watch request the server answered.
//! A failing run names its seed and transport. Time is real (the TCP transport needs
//! real IO), but the reflector's backoff is shrunk to milliseconds, and every wait is a
//! poll with a generous bound, never an assertion on speed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubegen_runtime::cache::delta_fifo::DeltaObject;
use kubegen_runtime::cache::informer::{
    InformerOptions, ResourceEventHandler, SharedIndexInformer,
};
use kubegen_runtime::cache::reflector::{Backoff, ReflectorOptions};
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::errors::StatusError;
use kubegen_runtime::testing::{ApiServer, Reactor};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// Seeds run when `KUBEGEN_CONVERGE_SEED` is not set. Between them they draw every
/// configuration: a short history (0x5EED_0001, 526), pages of 5 and 17 and unpaginated
/// lists, streaming lists (526, 523) and a label selector (7, 523). Changing the order
/// of the draws in `scenario` re-rolls them: print the configurations (`--nocapture`)
/// and pick again.
const DEFAULT_SEEDS: [u64; 5] = [0x5EED_0001, 20_261_122, 7, 526, 523];
/// Operations (writes, faults and pauses) per run unless `KUBEGEN_CONVERGE_OPS` says.
const DEFAULT_OPS: usize = 400;
const NAMESPACES: [&str; 3] = ["ns-a", "ns-b", "ns-c"];
/// Names per namespace: a small pool, so that names are deleted and created again.
const NAMES: usize = 12;
/// A generous bound for every wait; reaching it is a failure (a stuck informer), not a
/// measurement.
const PATIENCE: Duration = Duration::from_secs(60);

fn seeds() -> Vec<u64> {
    match std::env::var("KUBEGEN_CONVERGE_SEED") {
        Ok(s) if !s.trim().is_empty() => s
            .split(',')
            .map(|x| {
                let x = x.trim();
                x.strip_prefix("0x")
                    .map(|h| u64::from_str_radix(h, 16))
                    .unwrap_or_else(|| x.parse())
                    .unwrap_or_else(|e| panic!("KUBEGEN_CONVERGE_SEED: {x:?}: {e}"))
            })
            .collect(),
        _ => DEFAULT_SEEDS.to_vec(),
    }
}

fn ops() -> usize {
    std::env::var("KUBEGEN_CONVERGE_OPS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(DEFAULT_OPS)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Service,
    Tcp,
}

/// Prints how to rerun a scenario when anything in it panics (an unwrap as much as a
/// failed convergence check).
struct SeedGuard {
    seed: u64,
    transport: Transport,
}

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "converge scenario failed: seed {} over {:?}; rerun with KUBEGEN_CONVERGE_SEED={}",
                self.seed, self.transport, self.seed
            );
        }
    }
}

fn rv_of(p: &Pod) -> u64 {
    p.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn key_of(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or("")
    )
}

fn value_rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// One notification as a handler received it, reduced to what the checks need.
#[derive(Clone, Debug)]
enum Seen {
    Add { rv: u64, initial: bool },
    Update { old: u64, new: u64 },
    Delete { rv: Option<u64>, tombstone: bool },
}

/// A handler recording every notification in arrival order; clones share one log.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<(String, Seen)>>>,
}

impl Recorder {
    fn snapshot(&self) -> Vec<(String, Seen)> {
        self.events.lock().clone()
    }

    fn saw_add_of(&self, key: &str) -> bool {
        self.events
            .lock()
            .iter()
            .any(|(k, s)| k == key && matches!(s, Seen::Add { .. }))
    }
}

impl ResourceEventHandler<Pod> for Recorder {
    fn on_add(&self, obj: &Arc<Pod>, is_in_initial_list: bool) {
        self.events.lock().push((
            key_of(obj),
            Seen::Add {
                rv: rv_of(obj),
                initial: is_in_initial_list,
            },
        ));
    }

    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        self.events.lock().push((
            key_of(new),
            Seen::Update {
                old: rv_of(old),
                new: rv_of(new),
            },
        ));
    }

    fn on_delete(&self, obj: &DeltaObject<Pod>) {
        let key = match obj {
            DeltaObject::Object(o) => key_of(o),
            DeltaObject::Tombstone(t) => t.key.clone(),
        };
        self.events.lock().push((
            key,
            Seen::Delete {
                rv: obj.object().map(|o| rv_of(o)),
                tombstone: obj.is_tombstone(),
            },
        ));
    }
}

/// The label selector of runs that watch only part of the Pods.
const SELECTOR: &str = "tier=keep";

fn pod(ns: &str, name: &str, generation: usize, tier: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns,
            "labels": {"app": "converge", "gen": generation.to_string(), "tier": tier},
        },
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    })
}

/// Checks one handler's log against the server's final state (key -> resourceVersion)
/// and returns every violation found.
///
/// The order rule, per key: the resourceVersions a handler is shown never go down, and
/// go strictly up except in the two cases where client-go shows the same version again:
/// - a *sync* update (`old == new`): a periodic resync re-delivers the cached object,
///   and a relist's `Replaced` delta of an unchanged object is one too (SEMANTICS 4:
///   "an update whose old and new resourceVersion are equal is a sync notification");
///   only a handler with a resync period may get these (`allow_sync`);
/// - a tombstone delete: a `DeletedFinalStateUnknown` found by a relist carries the last
///   state the informer had, which the handler has already been shown (SEMANTICS 4.5).
///
/// A watch DELETED event carries the deletion's own, newer resourceVersion, and a name
/// created again gets a newer one still, so both must be strictly greater.
fn check_log(
    who: &str,
    log: &[(String, Seen)],
    server: &BTreeMap<String, u64>,
    allow_sync: bool,
) -> Vec<String> {
    let mut bad = Vec::new();
    // The handler's view: what it was last told about each key.
    let mut view: BTreeMap<String, u64> = BTreeMap::new();
    // The highest resourceVersion the handler was shown per key, across re-creations.
    let mut high: BTreeMap<String, u64> = BTreeMap::new();
    let mut ever_added: BTreeSet<String> = BTreeSet::new();
    let mut last_was_delete: BTreeMap<String, bool> = BTreeMap::new();
    let mut syncs = 0usize;
    let mut later_add_seen = false;
    for (i, (key, seen)) in log.iter().enumerate() {
        let prev_high = high.get(key).copied();
        let cur = view.get(key).copied();
        let (shown, may_equal) = match *seen {
            Seen::Add { rv, initial } => {
                // The initial list's adds (or a late handler's replay of the cache) come
                // before any later add (SEMANTICS 4.1, 4.2).
                if initial && later_add_seen {
                    bad.push(format!(
                        "{who}: event {i}: initial-list add of {key} after a later add"
                    ));
                }
                later_add_seen |= !initial;
                if let Some(c) = cur {
                    bad.push(format!(
                        "{who}: event {i}: add of {key} at {rv} while it holds {c}"
                    ));
                }
                ever_added.insert(key.clone());
                view.insert(key.clone(), rv);
                (rv, false)
            }
            Seen::Update { old, new } => {
                match cur {
                    None => bad.push(format!(
                        "{who}: event {i}: update of {key} ({old}->{new}) it does not hold"
                    )),
                    Some(c) if c != old => bad.push(format!(
                        "{who}: event {i}: update of {key} from {old}, but it was last shown {c}"
                    )),
                    Some(_) => {}
                }
                if new < old {
                    bad.push(format!(
                        "{who}: event {i}: update of {key} goes back from {old} to {new}"
                    ));
                }
                let sync = new == old;
                if sync {
                    syncs += 1;
                    if !allow_sync {
                        bad.push(format!(
                            "{who}: event {i}: sync update of {key} at {new} reached a handler without resync"
                        ));
                    }
                }
                view.insert(key.clone(), new);
                (new, sync)
            }
            Seen::Delete { rv, tombstone } => {
                if cur.is_none() {
                    bad.push(format!(
                        "{who}: event {i}: delete of {key} (tombstone={tombstone}) it does not hold"
                    ));
                }
                view.remove(key);
                match rv {
                    Some(rv) => {
                        if tombstone && cur.is_some_and(|c| c != rv) {
                            bad.push(format!(
                                "{who}: event {i}: tombstone of {key} carries {rv}, but it was last shown {cur:?}"
                            ));
                        }
                        (rv, tombstone)
                    }
                    None => {
                        if !tombstone {
                            bad.push(format!("{who}: event {i}: delete of {key} without object"));
                        }
                        (prev_high.unwrap_or(0), true)
                    }
                }
            }
        };
        if let Some(h) = prev_high
            && (shown < h || (shown == h && !may_equal))
        {
            bad.push(format!(
                    "{who}: event {i}: {key} shown at {shown} after {h} ({seen:?}): out of resourceVersion order"
                ));
        }
        high.insert(key.clone(), prev_high.map_or(shown, |h| h.max(shown)));
        last_was_delete.insert(key.clone(), matches!(seen, Seen::Delete { .. }));
    }
    if view != *server {
        bad.push(format!(
            "{who}: handler's replayed view differs from the server:\n{}",
            diff(&view, server)
        ));
    }
    // Every object the handler was told about and the server no longer has reached the
    // handler as a delete (a watch DELETED event or a tombstone).
    for key in ever_added.iter().filter(|k| !server.contains_key(*k)) {
        if last_was_delete.get(key) != Some(&true) {
            bad.push(format!(
                "{who}: {key} is gone from the server but its delete never reached the handler"
            ));
        }
    }
    if !allow_sync && syncs > 0 {
        bad.push(format!(
            "{who}: {syncs} sync updates without a resync period"
        ));
    }
    bad
}

fn diff(got: &BTreeMap<String, u64>, want: &BTreeMap<String, u64>) -> String {
    let mut out = String::new();
    for k in got.keys().chain(want.keys()).collect::<BTreeSet<_>>() {
        let (g, w) = (got.get(k), want.get(k));
        if g != w {
            let _ = writeln!(out, "  {k}: informer/handler {g:?}, server {w:?}");
        }
    }
    out
}

/// What a run did, for the log line each run prints.
#[derive(Debug, Default)]
struct Stats {
    creates: usize,
    updates: usize,
    deletes: usize,
    faults: usize,
    lists: usize,
    watches: usize,
    /// What the handler without resync got: adds, updates, watch deletes, tombstones.
    adds: usize,
    updates_seen: usize,
    deletes_seen: usize,
    tombstones: usize,
}

async fn poll(mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !done() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// A random fault: each one makes the reflector take a different recovery path.
fn inject_fault(server: &ApiServer, rng: &mut StdRng, expire_until: &mut Option<usize>, op: usize) {
    let times = rng.random_range(1..=3);
    let delay = Duration::from_millis(rng.random_range(2..30));
    match rng.random_range(0..10) {
        // A dropped connection: the reflector re-watches from its last resourceVersion
        // without relisting (SEMANTICS 3.13), or, when the watch had no event within a
        // second, ends the round with "very short watch" and relists (SEMANTICS 3.14).
        0 => server.drop_watches(),
        // 410 on the next watch: relist from the last resourceVersion, not "" (SEMANTICS 3.10).
        1 => server.expire_next_watch(),
        // Every watch from at or below the current version gets 410 for a while: the
        // reflector must relist and move past it.
        2 => {
            server.expire_watches_up_to(Some(server.resource_version()));
            *expire_until = Some(op + rng.random_range(5..40));
        }
        // Compaction: watches and exact lists from older versions get 410; a relist at an
        // expired version falls back to "" (SEMANTICS 3.3), a continuation page that
        // expires is retried as one full list (SEMANTICS 3.4).
        3 => {
            server.compact();
            server.drop_watches();
        }
        // 500 on list: the round fails and is retried after the backoff.
        4 => server.react(
            Reactor::new("list", "pods")
                .times(times)
                .error(StatusError::internal("injected list failure")),
        ),
        // 500 at watch start: the round ends and the reflector relists.
        5 => server.react(
            Reactor::new("watch", "pods")
                .times(times)
                .error(StatusError::internal("injected watch failure")),
        ),
        // 429 at watch start: back off and re-watch without relisting (SEMANTICS 3.11).
        6 => server.react(
            Reactor::new("watch", "pods")
                .times(times)
                .error(StatusError::too_many_requests("injected throttling", 1)),
        ),
        // Slow lists and watches: writes land while a list is in flight, so the list's
        // version and the following watch must line up.
        7 => server.react(Reactor::new("list", "pods").times(times).delay(delay)),
        8 => server.react(Reactor::new("watch", "pods").times(times).delay(delay)),
        // A slow list that then fails.
        _ => server.react(
            Reactor::new("list", "pods")
                .times(times)
                .delay(delay)
                .error(StatusError::internal("injected slow list failure")),
        ),
    }
}

/// One seeded run over one transport. Panics (naming the seed) on any violation.
async fn scenario(seed: u64, transport: Transport) {
    let _guard = SeedGuard { seed, transport };
    let mut rng = StdRng::seed_from_u64(seed);
    // A short history in some runs: watchers that fall behind and lists of older
    // versions get 410 without any injected fault, as on a busy cluster.
    let history = [100_000, 100_000, 48][rng.random_range(0..3)];
    let server = ApiServer::builder()
        // Frequent bookmarks also move the informer's resourceVersion (SEMANTICS 3.8).
        .bookmark_interval(Duration::from_millis(rng.random_range(20..200)))
        .history_limit(history)
        .build();
    let tcp = match transport {
        Transport::Service => None,
        Transport::Tcp => Some(server.serve_tcp().await.unwrap()),
    };
    let client = match &tcp {
        None => kube::Client::new(server.service(), "default"),
        Some(t) => t.client().await.unwrap(),
    };

    // Some runs watch through a label selector while updates move Pods in and out of it:
    // the server turns those updates into ADDED and DELETED events for the watch, and a
    // relist simply no longer lists a Pod that left.
    let selective = rng.random_bool(0.3);
    let tier = |rng: &mut StdRng| if rng.random_bool(0.7) { "keep" } else { "drop" };
    // The model: what the server holds, key -> (resourceVersion, tier), from the admin
    // API's answers. The generation counter makes every update a real change.
    let mut model: BTreeMap<String, (u64, &str)> = BTreeMap::new();
    let mut stats = Stats::default();
    let mut generation = 0usize;
    let all_keys: Vec<(&str, String)> = NAMESPACES
        .iter()
        .flat_map(|ns| (0..NAMES).map(move |i| (*ns, format!("p{i}"))))
        .collect();
    for (ns, name) in &all_keys {
        if !rng.random_bool(0.4) {
            continue;
        }
        let t = tier(&mut rng);
        let v = server.create("pods", pod(ns, name, 0, t)).unwrap();
        model.insert(format!("{ns}/{name}"), (value_rv(&v), t));
    }

    // Small pages in some runs, so that relists paginate from snapshots and continuation
    // pages can expire under compaction (SEMANTICS 3.4, 3.7).
    let page_size = [None, Some(5), Some(17)][rng.random_range(0..3)];
    let mut reflector = ReflectorOptions::default().backoff(Backoff::new(
        Duration::from_millis(1),
        2.0,
        1.0,
        Duration::from_millis(50),
        Duration::from_secs(2),
    ));
    if let Some(n) = page_size {
        reflector = reflector.page_size(n);
    }
    // Some runs stream their lists (`sendInitialEvents`): the watch-list path must
    // converge under the same faults (SEMANTICS 3.18, 3.20).
    let watch_list = rng.random_bool(0.3);
    reflector = reflector.use_watch_list(watch_list);
    let mut config = InformerOptions::default()
        .resync_period(Duration::from_secs(1))
        .reflector(reflector);
    if selective {
        config = config.tweak_list_options(|o| o.label_selector = Some(SELECTOR.into()));
    }
    let informer =
        SharedIndexInformer::new(Arc::new(ResourceClient::<Pod>::all(client.clone())), config);
    // Two handlers from the start: one that never resyncs (it must never see a sync
    // update), one on the informer's 1 s resync (it may, and the order check allows it).
    let plain = Recorder::default();
    let resyncing = Recorder::default();
    informer
        .add_event_handler_with_resync_period(plain.clone(), Duration::ZERO)
        .unwrap();
    informer.add_event_handler(resyncing.clone()).unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let informer = informer.clone();
        let stop = stop.clone();
        async move { informer.run(stop).await }
    });

    let n_ops = ops();
    // A third handler joins mid-run: it must get one `on_add` per cached object,
    // atomically with the deltas flowing meanwhile (SEMANTICS 4.2), and from then on
    // the same stream as the others.
    let late = Recorder::default();
    let late_at = rng.random_range(0..n_ops.max(1));
    let mut expire_until: Option<usize> = None;
    for op in 0..n_ops {
        if op == late_at {
            informer
                .add_event_handler_with_resync_period(late.clone(), Duration::ZERO)
                .unwrap();
        }
        if expire_until.is_some_and(|until| op >= until) {
            server.expire_watches_up_to(None);
            expire_until = None;
        }
        let (ns, name) = &all_keys[rng.random_range(0..all_keys.len())];
        let key = format!("{ns}/{name}");
        let roll = rng.random_range(0..100);
        match roll {
            // Writes. A write to a name the model says is absent creates it; a delete or
            // update of an absent name becomes a create, so the mix stays busy.
            0..=79 => {
                generation += 1;
                match (model.contains_key(&key), roll) {
                    (true, 0..=44) => {
                        let mut v = server.get("pods", ns, name).unwrap().unwrap();
                        v["metadata"]["labels"]["gen"] = json!(generation.to_string());
                        let mut t = model[&key].1;
                        if selective && rng.random_bool(0.3) {
                            t = tier(&mut rng);
                            v["metadata"]["labels"]["tier"] = json!(t);
                        }
                        let v = server.update("pods", v).unwrap();
                        model.insert(key, (value_rv(&v), t));
                        stats.updates += 1;
                    }
                    (true, _) => {
                        server.delete("pods", ns, name).unwrap();
                        model.remove(&key);
                        stats.deletes += 1;
                    }
                    (false, _) => {
                        let t = tier(&mut rng);
                        let v = server.create("pods", pod(ns, name, generation, t)).unwrap();
                        model.insert(key, (value_rv(&v), t));
                        stats.creates += 1;
                    }
                }
            }
            80..=89 => {
                inject_fault(&server, &mut rng, &mut expire_until, op);
                stats.faults += 1;
            }
            // A pause: let the informer catch up (bounded; not catching up is no failure
            // here), so that stretches of changes flow through a live watch rather than
            // only through relists.
            _ => {
                let target = server.resource_version();
                let until =
                    tokio::time::Instant::now() + Duration::from_millis(rng.random_range(5..30));
                while tokio::time::Instant::now() < until
                    && informer
                        .last_sync_resource_version()
                        .parse::<u64>()
                        .is_ok_and(|rv| rv < target)
                {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
        if rng.random_bool(0.5) {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..3))).await;
        } else {
            tokio::task::yield_now().await;
        }
    }

    // Remove the faults. An `expire_next_watch` not yet consumed stays armed: it costs
    // one more relist, which the informer must survive as well.
    server.clear_reactors();
    server.expire_watches_up_to(None);

    // Quiescence: the informer's last synced resourceVersion has reached the server's.
    let target = server.resource_version();
    let caught_up = poll(|| {
        informer
            .last_sync_resource_version()
            .parse::<u64>()
            .is_ok_and(|rv| rv >= target)
    })
    .await;
    assert!(
        caught_up,
        "seed {seed} over {transport:?}: the informer is stuck at resourceVersion {:?}, the server is at {target}",
        informer.last_sync_resource_version()
    );
    // The reflector has handed every change to the FIFO; a barrier object created now is
    // queued behind all of them, and each handler's notifications arrive in order, so
    // once every handler has seen the barrier's add, they have seen everything before.
    let v = server
        .create("pods", pod("ns-barrier", "barrier", 0, "keep"))
        .unwrap();
    model.insert("ns-barrier/barrier".into(), (value_rv(&v), "keep"));
    let delivered = poll(|| {
        [&plain, &resyncing, &late]
            .iter()
            .all(|h| h.saw_add_of("ns-barrier/barrier"))
    })
    .await;
    assert!(
        delivered,
        "seed {seed} over {transport:?}: the barrier's add never reached every handler"
    );
    assert!(informer.has_synced());

    // The informer's cache equals the server's objects exactly.
    let cached: BTreeMap<String, u64> = informer
        .indexer()
        .list()
        .iter()
        .map(|p| (key_of(p), rv_of(p)))
        .collect();
    let mut params = kube::api::ListParams::default();
    if selective {
        params = params.labels(SELECTOR);
    }
    let listed: BTreeMap<String, u64> = kube::Api::<Pod>::all(client.clone())
        .list(&params)
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| (key_of(p), rv_of(p)))
        .collect();
    let expected: BTreeMap<String, u64> = model
        .iter()
        .filter(|(_, (_, t))| !selective || *t == "keep")
        .map(|(k, (rv, _))| (k.clone(), *rv))
        .collect();
    let mut bad = Vec::new();
    if listed != expected {
        bad.push(format!(
            "the test's model differs from the server's list:\n{}",
            diff(&expected, &listed)
        ));
    }
    if cached != listed {
        bad.push(format!(
            "the informer's cache differs from the server:\n{}",
            diff(&cached, &listed)
        ));
    }
    let plain_log = plain.snapshot();
    let resync_log = resyncing.snapshot();
    bad.extend(check_log(
        "handler without resync",
        &plain_log,
        &listed,
        false,
    ));
    bad.extend(check_log(
        "handler with 1s resync",
        &resync_log,
        &listed,
        true,
    ));
    bad.extend(check_log(
        &format!("handler added after op {late_at}"),
        &late.snapshot(),
        &listed,
        false,
    ));

    let requests = server.requests();
    if std::env::var("KUBEGEN_CONVERGE_TRACE").is_ok() {
        for r in requests
            .iter()
            .filter(|r| r.verb == "list" || r.verb == "watch")
        {
            eprintln!("{} {}", r.verb, r.query);
        }
    }
    stats.lists = requests.iter().filter(|r| r.verb == "list").count();
    stats.watches = requests.iter().filter(|r| r.verb == "watch").count();
    for (_, seen) in &plain_log {
        match seen {
            Seen::Add { .. } => stats.adds += 1,
            Seen::Update { .. } => stats.updates_seen += 1,
            Seen::Delete {
                tombstone: false, ..
            } => stats.deletes_seen += 1,
            Seen::Delete {
                tombstone: true, ..
            } => stats.tombstones += 1,
        }
    }
    println!(
        "converge seed {seed} over {transport:?} (history {history}, page size {page_size:?}, watch-list {watch_list}, selector {selective}): {} objects at the end; {stats:?}",
        listed.len()
    );
    assert!(
        bad.is_empty(),
        "seed {seed} over {transport:?} (rerun with KUBEGEN_CONVERGE_SEED={seed}): {} violations:\n{}",
        bad.len(),
        bad.join("\n")
    );

    stop.cancel();
    task.await.unwrap();
    if let Some(t) = tcp {
        t.shutdown().await;
    }
}

// The checks in `check_log` assert, over every run, that an object missing from a relist
// reaches every handler as a tombstone delete (SEMANTICS 4.5) and that a delete seen by
// the watch and then confirmed by a relist reaches a handler exactly once (SEMANTICS 4.19).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_converges_under_faults_over_service() {
    for seed in seeds() {
        scenario(seed, Transport::Service).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_converges_under_faults_over_tcp() {
    for seed in seeds() {
        scenario(seed, Transport::Tcp).await;
    }
}
