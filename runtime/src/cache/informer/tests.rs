//! SharedIndexInformer behaviour (SEMANTICS 4) on a fake source, under tokio's paused
//! clock. Handlers run on their own threads; tests observe them through [`Recorder`],
//! whose waits do not advance the paused clock. To show that a handler received nothing
//! more, a test pushes a *fence* object through the watch: handlers see their own
//! notifications in order, so everything before the fence is everything they got.

use std::collections::BTreeSet;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::cache::store::IndexFunc;
use crate::cache::test_support::{
    describe, pod, pod_with, settle, wait_for_thread, wait_until, FakeSource, Rec, Recorder,
};

const ZERO: Duration = Duration::ZERO;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn informer(source: &Arc<FakeSource<Pod>>, resync: Duration) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::new(
        Arc::clone(source) as Arc<dyn ListerWatcher<Pod>>,
        InformerOptions::default().resync_period(resync),
    )
}

struct Running {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap();
    }
}

fn run(informer: &SharedIndexInformer<Pod>) -> Running {
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let informer = informer.clone();
        let stop = stop.clone();
        async move { informer.run(stop).await }
    });
    Running { stop, task }
}

/// Runs the informer and waits until it has synced and its watch is open.
async fn run_synced(informer: &SharedIndexInformer<Pod>, source: &Arc<FakeSource<Pod>>) -> Running {
    let running = run(informer);
    settle("informer synced", || informer.has_synced()).await;
    settle("watch open", || source.open_watches() > 0).await;
    running
}

/// Forces a relist (410 on the watch) and waits until it happened and a new watch is open.
async fn relist(source: &Arc<FakeSource<Pod>>) {
    let lists = source.list_calls().len();
    source.expire_watches();
    wait_until("relisted", || source.list_calls().len() > lists).await;
    settle("watch reopened", || source.open_watches() > 0).await;
}

/// A handler blocking in `on_add` until the test releases it, one call per message.
fn gated_add(rec: &Arc<Recorder>) -> (mpsc::Sender<()>, ResourceEventHandlerFuncs<Pod>) {
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let rec = Arc::clone(rec);
    let handler = ResourceEventHandlerFuncs::new().add_func(move |p: &Arc<Pod>, initial| {
        rec.push(format!("add {} {initial}", describe(p.as_ref())));
        let _ = gate.lock().unwrap().recv();
    });
    (release, handler)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[tokio::test(start_paused = true)]
async fn handler_added_before_run_gets_the_initial_list() {
    // SEMANTICS 4.1
    let source = FakeSource::new(vec![pod("pod1", "1"), pod("pod2", "2")]);
    let inf = informer(&source, ZERO);
    let rec = Recorder::new();
    let (release, handler) = gated_add(&rec);
    let reg = inf.add_event_handler(handler).unwrap();
    assert!(!inf.has_synced());
    let running = run(&inf);
    settle("informer synced", || inf.has_synced()).await;

    // The informer is synced while the handler is still busy with the first add.
    assert_eq!(rec.wait_for(1).await, ["add pod1@1 true"]);
    assert!(!reg.has_synced());
    release.send(()).unwrap();
    assert_eq!(
        rec.wait_for(2).await,
        ["add pod1@1 true", "add pod2@2 true"]
    );
    assert!(!reg.has_synced(), "the second add has not returned yet");
    release.send(()).unwrap();
    wait_for_thread("registration synced", move || reg.has_synced()).await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn late_handler_gets_the_cache_as_initial_adds() {
    // SEMANTICS 4.2
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let inf = informer(&source, ZERO);
    let running = run_synced(&inf, &source).await;

    let rec = Recorder::new();
    let (release, handler) = gated_add(&rec);
    let reg = inf.add_event_handler(handler).unwrap();
    assert_eq!(rec.wait_for(1).await, ["add pod1@1 true"]);
    assert!(!reg.has_synced(), "its initial add has not returned");
    release.send(()).unwrap();
    let r = reg.clone();
    wait_for_thread("late registration synced", move || r.has_synced()).await;

    // It then hears of changes like every other handler.
    source.add(pod("pod2", "2"));
    release.send(()).unwrap();
    assert_eq!(rec.wait_for(2).await[1], "add pod2@2 false");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn update_reaches_the_cache_before_the_handler() {
    // SEMANTICS 4.3
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let inf = informer(&source, ZERO);
    let rec = Recorder::new();
    let indexer = inf.indexer().clone();
    let r = Arc::clone(&rec);
    inf.add_event_handler(ResourceEventHandlerFuncs::new().update_func(
        move |old: &Arc<Pod>, new: &Arc<Pod>| {
            let cached = indexer.get_by_key("ns/pod1").map(|p| describe(p.as_ref()));
            r.push(format!(
                "update {} -> {} cached {}",
                describe(old.as_ref()),
                describe(new.as_ref()),
                cached.unwrap_or_default()
            ));
        },
    ))
    .unwrap();
    let running = run_synced(&inf, &source).await;
    source.modify(pod("pod1", "2"));
    assert_eq!(
        rec.wait_for(1).await,
        ["update pod1@1 -> pod1@2 cached pod1@2"]
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn relist_after_watch_disruption_notifies_by_resync_period() {
    // SEMANTICS 4.4
    let source = FakeSource::new(vec![pod("pod1", "1"), pod("pod2", "2")]);
    let inf = informer(&source, secs(1));
    let (a, b) = (Recorder::new(), Recorder::new());
    inf.add_event_handler_with_resync_period(Rec(Arc::clone(&a)), ZERO)
        .unwrap();
    inf.add_event_handler_with_resync_period(Rec(Arc::clone(&b)), secs(1))
        .unwrap();
    let running = run_synced(&inf, &source).await;
    let initial = ["add pod1@1 initial", "add pod2@2 initial"];
    assert_eq!(a.wait_for(2).await, initial);
    assert_eq!(b.wait_for(2).await, initial);
    a.take();
    b.take();

    // The clock moves past the 1s resync tick: B is due for resync (A never is). Then
    // changes only a relist can see; the relist happens after a backoff of a second or so.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    source.set_silently(pod("pod3", "3"));
    source.set_silently(pod("pod2", "4"));
    relist(&source).await;
    source.add(pod("fence", "5"));

    assert_eq!(
        a.take_through("add fence@5").await,
        ["update pod2@2 -> pod2@4", "add pod3@3", "add fence@5"]
    );
    let b_events = b.take_through("add fence@5").await;
    assert!(b_events.contains(&"update pod2@2 -> pod2@4".to_owned()));
    assert!(b_events.contains(&"add pod3@3".to_owned()));
    let names: BTreeSet<&str> = b_events
        .iter()
        .filter(|e| !e.contains("fence"))
        .filter_map(|e| e.split([' ', '@']).nth(1))
        .collect();
    assert_eq!(names, BTreeSet::from(["pod1", "pod2", "pod3"]));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn object_gone_in_relist_is_a_tombstone_delete_for_every_handler() {
    // SEMANTICS 4.5
    let source = FakeSource::new(vec![pod("foo", "1"), pod("bar", "2")]);
    let inf = informer(&source, ZERO);
    let (a, b) = (Recorder::new(), Recorder::new());
    inf.add_event_handler(Rec(Arc::clone(&a))).unwrap();
    inf.add_event_handler(Rec(Arc::clone(&b))).unwrap();
    let running = run_synced(&inf, &source).await;
    a.wait_for(2).await;
    b.wait_for(2).await;
    a.take();
    b.take();

    source.remove_silently("ns/foo");
    relist(&source).await;
    source.add(pod("fence", "9"));
    for rec in [&a, &b] {
        assert_eq!(
            rec.take_through("add fence").await,
            ["delete tombstone ns/foo foo@1", "add fence@9"]
        );
    }
    assert!(inf.indexer().get_by_key("ns/foo").is_none());
    assert!(inf.indexer().get_by_key("ns/bar").is_some());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn listeners_resync_on_their_own_periods() {
    // SEMANTICS 4.6
    let t0 = Instant::now();
    let source = FakeSource::new(vec![pod("pod1", "1"), pod("pod2", "2")]);
    let inf = informer(&source, secs(1));
    let recs = [Recorder::new(), Recorder::new(), Recorder::new()];
    for (rec, period) in recs.iter().zip([0, 2, 3]) {
        inf.add_event_handler_with_resync_period(Rec(Arc::clone(rec)), secs(period))
            .unwrap();
    }
    let [never, two, three] = &recs;
    let running = run_synced(&inf, &source).await;
    for rec in &recs {
        assert_eq!(rec.wait_for(2).await.len(), 2);
        rec.take();
    }
    let syncs = |names: &[&str]| -> Vec<String> {
        names.iter().map(|n| format!("update {n} -> {n}")).collect()
    };

    // Resync ticks at 1s (nobody due) and 2s (the 2s listener).
    tokio::time::sleep_until(t0 + Duration::from_millis(2500)).await;
    source.add(pod("fence1", "10"));
    assert_eq!(never.take_through("fence1").await, ["add fence1@10"]);
    assert_eq!(three.take_through("fence1").await, ["add fence1@10"]);
    let mut got = two.take_through("fence1").await;
    assert_eq!(got.pop().unwrap(), "add fence1@10");
    assert_eq!(sorted(got), syncs(&["pod1@1", "pod2@2"]));

    // The tick at 3s: only the 3s listener.
    tokio::time::sleep_until(t0 + Duration::from_millis(3500)).await;
    source.add(pod("fence2", "11"));
    assert_eq!(never.take_through("fence2").await, ["add fence2@11"]);
    assert_eq!(two.take_through("fence2").await, ["add fence2@11"]);
    let mut got = three.take_through("fence2").await;
    assert_eq!(got.pop().unwrap(), "add fence2@11");
    assert_eq!(sorted(got), syncs(&["fence1@10", "pod1@1", "pod2@2"]));
    running.stop().await;
}

#[test]
fn smaller_handler_periods_lower_the_check_period_before_start() {
    // SEMANTICS 4.7
    let source = FakeSource::new(vec![]);
    let inf = informer(&source, Duration::from_secs(12 * 3600));
    let mut regs = Vec::new();
    let mut checks = vec![inf.resync_check_period()];
    for period in [ZERO, secs(60), secs(55), secs(5)] {
        regs.push(
            inf.add_event_handler_with_resync_period(Rec(Recorder::new()), period)
                .unwrap(),
        );
        checks.push(inf.resync_check_period());
    }
    assert_eq!(
        checks,
        [
            secs(12 * 3600),
            secs(12 * 3600),
            secs(60),
            secs(55),
            secs(5)
        ]
    );
    let periods: Vec<Duration> = regs.iter().map(|r| r.resync_period()).collect();
    assert_eq!(periods, [ZERO, secs(60), secs(55), secs(5)]);
}

#[tokio::test(start_paused = true)]
async fn smaller_handler_period_after_start_is_raised_to_the_check_period() {
    // SEMANTICS 4.8
    let source = FakeSource::new(vec![]);
    let inf = informer(&source, secs(60));
    let running = run_synced(&inf, &source).await;
    let reg = inf
        .add_event_handler_with_resync_period(Rec(Recorder::new()), secs(10))
        .unwrap();
    assert_eq!(reg.resync_period(), secs(60));
    assert_eq!(inf.resync_check_period(), secs(60));
    running.stop().await;
}

#[test]
fn no_resync_informer_and_minimum_period() {
    // SEMANTICS 4.9
    let source = FakeSource::new(vec![]);
    let inf = informer(&source, ZERO);
    let reg = inf
        .add_event_handler_with_resync_period(Rec(Recorder::new()), secs(30))
        .unwrap();
    assert_eq!(reg.resync_period(), ZERO);

    let inf = informer(&source, secs(10));
    let reg = inf
        .add_event_handler_with_resync_period(Rec(Recorder::new()), Duration::from_millis(100))
        .unwrap();
    assert_eq!(reg.resync_period(), secs(1));
}

#[tokio::test(start_paused = true)]
async fn transform_applies_to_cache_and_handlers_and_only_before_run() {
    // SEMANTICS 4.10
    let source = FakeSource::new(vec![pod("pod1", "1"), pod("pod2", "2")]);
    let inf = informer(&source, ZERO);
    inf.set_transform(|p: Arc<Pod>| {
        let mut p = (*p).clone();
        p.metadata.name = p.metadata.name.map(|n| n.to_uppercase());
        Ok(Arc::new(p))
    })
    .unwrap();
    let rec = Recorder::new();
    inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
    let running = run_synced(&inf, &source).await;
    assert_eq!(
        rec.wait_for(2).await,
        ["add POD1@1 initial", "add POD2@2 initial"]
    );
    let mut keys = inf.indexer().list_keys();
    keys.sort();
    assert_eq!(keys, ["ns/POD1", "ns/POD2"]);

    let err = inf.set_transform(Ok).unwrap_err();
    assert_eq!(err.to_string(), "informer has already started");
    let err = inf.set_watch_error_handler(|_| {}).unwrap_err();
    assert_eq!(err, InformerError::AlreadyStarted);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_error_handler_sees_list_failures() {
    // SEMANTICS 4.11
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    source.fail_lists(Some("Access Denied"));
    let inf = informer(&source, ZERO);
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let e = Arc::clone(&errors);
    inf.set_watch_error_handler(move |err| e.lock().unwrap().push(err.to_string()))
        .unwrap();
    let running = run(&inf);
    settle("list error reported", || !errors.lock().unwrap().is_empty()).await;
    let first = errors.lock().unwrap()[0].clone();
    assert!(first.contains("Access Denied"), "{first}");
    assert!(!inf.has_synced());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn stopped_informer_refuses_handlers_and_indexers() {
    // SEMANTICS 4.12
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let inf = informer(&source, ZERO);
    let running = run_synced(&inf, &source).await;
    running.stop().await;
    assert!(inf.is_stopped());
    let err = inf.add_event_handler(Rec(Recorder::new())).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("was not added to shared informer because it has stopped already"),
        "{err}"
    );
    let err = inf.add_indexers(Indexers::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "indexer was not added because it has stopped already"
    );
}

#[tokio::test(start_paused = true)]
async fn aborted_run_still_stops_the_informer() {
    // SEMANTICS 4.12
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let inf = informer(&source, ZERO);
    let rec = Recorder::new();
    inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
    let running = run_synced(&inf, &source).await;
    rec.wait_for(1).await;
    running.task.abort();
    assert!(running.task.await.unwrap_err().is_cancelled());
    assert!(inf.is_stopped());
    assert!(inf.add_event_handler(Rec(Recorder::new())).is_err());
}

#[tokio::test(start_paused = true)]
async fn registrations_are_independent_and_removal_is_idempotent() {
    // SEMANTICS 4.13
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let inf = informer(&source, ZERO);
    let other_source = FakeSource::new(vec![]);
    let other = informer(&other_source, ZERO);
    let rec = Recorder::new();
    let first = inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
    let second = inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
    let other_reg = other.add_event_handler(Rec(Recorder::new())).unwrap();
    let running = run_synced(&inf, &source).await;
    assert_eq!(
        rec.wait_for(2).await,
        ["add pod1@1 initial", "add pod1@1 initial"]
    );
    rec.take();

    inf.remove_event_handler(&first);
    inf.remove_event_handler(&first);
    // A registration of informer A handed to informer B: ignored, A keeps it.
    other.remove_event_handler(&second);
    // And one of B handed to A: ignored.
    inf.remove_event_handler(&other_reg);

    source.add(pod("pod2", "2"));
    source.add(pod("fence", "3"));
    assert_eq!(
        rec.take_through("add fence").await,
        ["add pod2@2", "add fence@3"]
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn second_run_returns_at_once_and_lists_nothing() {
    // SEMANTICS 4.14
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let inf = informer(&source, ZERO);
    let running = run_synced(&inf, &source).await;
    // Returns although its stop token never fires.
    inf.run(CancellationToken::new()).await;
    assert_eq!(source.list_calls().len(), 1);
    assert_eq!(source.watch_calls().len(), 1);
    assert!(!running.task.is_finished());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn indexers_added_after_start_index_existing_objects() {
    // SEMANTICS 4.15
    let on = |name: &str, node: &str| {
        let mut p = pod(name, "1");
        p.spec = Some(PodSpec {
            node_name: Some(node.into()),
            ..Default::default()
        });
        p
    };
    let source = FakeSource::new(vec![on("a", "n1"), on("b", "n2"), on("c", "n1")]);
    let inf = informer(&source, ZERO);
    let running = run_synced(&inf, &source).await;
    let by_node: IndexFunc<Pod> = Arc::new(|p: &Pod| {
        Ok(p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect())
    });
    let indexers = || Indexers::from([("byNode".to_owned(), Arc::clone(&by_node))]);
    inf.add_indexers(indexers()).unwrap();
    let mut on_n1: Vec<String> = inf
        .indexer()
        .by_index("byNode", "n1")
        .unwrap()
        .iter()
        .map(|p| describe(p.as_ref()))
        .collect();
    on_n1.sort();
    assert_eq!(on_n1, ["a@1", "c@1"]);
    let err = inf.add_indexers(indexers()).unwrap_err();
    assert!(err.to_string().contains("indexer conflict"), "{err}");

    // Objects arriving later are indexed too.
    source.add(on("d", "n2"));
    settle("d indexed", || {
        inf.indexer()
            .by_index("byNode", "n2")
            .is_ok_and(|v| v.len() == 2)
    })
    .await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn filtering_handler_on_an_informer() {
    // SEMANTICS 4.16
    let source = FakeSource::new(vec![pod_with("p", "1", &[("app", "y")])]);
    let inf = informer(&source, ZERO);
    let rec = Recorder::new();
    inf.add_event_handler(FilteringResourceEventHandler::new(
        |p: &Pod| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .is_some_and(|v| v == "x")
        },
        Rec(Arc::clone(&rec)),
    ))
    .unwrap();
    let running = run_synced(&inf, &source).await;
    source.modify(pod_with("p", "2", &[("app", "x")]));
    source.modify(pod_with("p", "3", &[("app", "y")]));
    source.modify(pod_with("p", "4", &[("app", "z")]));
    source.add(pod_with("fence", "5", &[("app", "x")]));
    assert_eq!(
        rec.take_through("add fence").await,
        ["add p@2", "delete p@2", "add fence@5"]
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn stuck_handler_blocks_neither_others_nor_the_cache() {
    // SEMANTICS 4.17
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let inf = informer(&source, ZERO);
    let stuck = Recorder::new();
    let (release, handler) = gated_add(&stuck);
    inf.add_event_handler(handler).unwrap();
    let rec = Recorder::new();
    inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
    let running = run_synced(&inf, &source).await;
    assert_eq!(stuck.wait_for(1).await, ["add pod1@1 true"]);

    for i in 2..=50 {
        source.add(pod(&format!("pod{i}"), &i.to_string()));
    }
    source.modify(pod("pod1", "51"));
    let got = rec.take_through("update pod1@1 -> pod1@51").await;
    assert_eq!(got.len(), 51);
    settle("cache updated", || inf.indexer().len() == 50).await;
    assert_eq!(
        stuck.events().len(),
        1,
        "the stuck handler is still on its first add"
    );
    drop(release);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn relist_with_deltafifo_updates_and_adds_in_list_order_then_deletes() {
    // SEMANTICS 4.18
    let source = FakeSource::new(vec![
        pod("pod-1", "1"),
        pod("pod-2", "2"),
        pod("pod-3", "3"),
    ]);
    let inf = SharedIndexInformer::new(
        Arc::clone(&source) as Arc<dyn ListerWatcher<Pod>>,
        InformerOptions::default().fifo(FifoKind::Delta),
    );
    let rec = Recorder::new();
    inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
    let running = run_synced(&inf, &source).await;
    rec.wait_for(3).await;
    rec.take();

    source.set_silently(pod("pod-1", "4"));
    source.set_silently(pod("pod-2", "5"));
    source.set_silently(pod("pod-4", "6"));
    source.remove_silently("ns/pod-3");
    relist(&source).await;
    source.add(pod("x-fence", "7"));
    assert_eq!(
        rec.take_through("add x-fence").await,
        [
            "update pod-1@1 -> pod-1@4",
            "update pod-2@2 -> pod-2@5",
            "add pod-4@6",
            "delete tombstone ns/pod-3 pod-3@3",
            "add x-fence@7",
        ]
    );
    let cached: BTreeSet<String> = inf
        .indexer()
        .list()
        .iter()
        .map(|p| describe(p.as_ref()))
        .collect();
    assert_eq!(
        cached,
        BTreeSet::from(["pod-1@4", "pod-2@5", "pod-4@6", "x-fence@7"].map(String::from))
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn delete_seen_by_the_watch_is_not_repeated_by_a_relist() {
    // SEMANTICS 4.19
    let source = FakeSource::new(vec![pod("x", "1"), pod("y", "2")]);
    let inf = informer(&source, ZERO);
    let rec = Recorder::new();
    inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
    let running = run_synced(&inf, &source).await;
    rec.wait_for(2).await;
    rec.take();

    source.delete(pod("x", "1"));
    relist(&source).await;
    source.add(pod("fence", "3"));
    assert_eq!(
        rec.take_through("add fence").await,
        ["delete x@1", "add fence@3"]
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_is_false_when_stopped_first() {
    // SEMANTICS 4.20
    let stop = CancellationToken::new();
    stop.cancel();
    assert!(!wait_for_cache_sync(&stop, &[&|| false]).await);
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    source.fail_lists(Some("nope"));
    let inf = informer(&source, ZERO);
    assert!(!inf.wait_for_sync(&stop).await);
    // And true once everything has synced, even with a stop token that never fires.
    source.fail_lists(None);
    let running = run(&inf);
    assert!(inf.wait_for_sync(&CancellationToken::new()).await);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn managed_fields_are_dropped_unless_kept() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    let mut p = pod("pod1", "1");
    p.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
        manager: Some("kubectl".into()),
        ..Default::default()
    }]);
    for keep in [false, true] {
        let source = FakeSource::new(vec![p.clone()]);
        let inf = SharedIndexInformer::new(
            Arc::clone(&source) as Arc<dyn ListerWatcher<Pod>>,
            InformerOptions::default().keep_managed_fields(keep),
        );
        let seen = Arc::new(Mutex::new(None));
        let s = Arc::clone(&seen);
        // The user transform runs after managedFields were dropped.
        inf.set_transform(move |p: Arc<Pod>| {
            *s.lock().unwrap() = Some(p.metadata.managed_fields.is_some());
            Ok(p)
        })
        .unwrap();
        let running = run_synced(&inf, &source).await;
        let cached = inf.indexer().get_by_key("ns/pod1").unwrap();
        assert_eq!(cached.metadata.managed_fields.is_some(), keep);
        assert_eq!(*seen.lock().unwrap(), Some(keep));
        running.stop().await;
    }
}

/// Handlers added on other threads while `run` starts must each get every listed object
/// once, whichever side of the start they land on: before, as the initial list; after,
/// as the cache replayed to a late handler. Registration used to release the informer's
/// state lock before joining the processor, so a `run` starting in that gap distributed
/// the initial list without the handler, which then never heard of those objects. The
/// gap is a few instructions wide: this test tries many interleavings rather than
/// forcing that one (on the old code it failed in roughly one run out of five).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_added_while_run_starts_gets_every_object_once() {
    const ADDERS: usize = 4;
    let pods: Vec<Pod> = (1..=20)
        .map(|i| pod(&format!("pod{i:02}"), &i.to_string()))
        .collect();
    let expected: Vec<String> = pods
        .iter()
        .map(|p| format!("add {} initial", describe(p)))
        .collect();
    for round in 0..800usize {
        let source = FakeSource::new(pods.clone());
        let inf = informer(&source, ZERO);
        let go = Arc::new(std::sync::Barrier::new(ADDERS + 1));
        let adders: Vec<_> = (0..ADDERS)
            .map(|a| {
                let inf = inf.clone();
                let go = Arc::clone(&go);
                std::thread::spawn(move || {
                    go.wait();
                    // Vary where each registration falls relative to the start.
                    for _ in 0..((round * 37 + a * 101) % 400) {
                        std::hint::spin_loop();
                    }
                    let rec = Recorder::new();
                    inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
                    rec
                })
            })
            .collect();
        tokio::task::spawn_blocking(move || go.wait())
            .await
            .unwrap();
        let running = run(&inf);
        let recs = tokio::task::spawn_blocking(move || {
            adders
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect::<Vec<_>>()
        })
        .await
        .unwrap();
        for (a, rec) in recs.iter().enumerate() {
            let seen = sorted(rec.wait_for(pods.len()).await);
            assert_eq!(seen, expected, "round {round}, handler {a}");
        }
        running.stop().await;
    }
}

/// Selectors reach an informer's lists and watches through `tweak_list_options`, the
/// same way a factory takes them.
#[tokio::test(start_paused = true)]
async fn tweak_list_options_applies_to_every_list_and_watch() {
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let informer = SharedIndexInformer::new(
        Arc::clone(&source) as Arc<dyn ListerWatcher<Pod>>,
        InformerOptions::default().tweak_list_options(|o| {
            o.label_selector = Some("app=web".into());
            o.field_selector = Some("spec.nodeName=n1".into());
        }),
    );
    let running = run(&informer);
    wait_until("listed and watching", || {
        !source.list_calls().is_empty() && !source.watch_calls().is_empty()
    })
    .await;
    running.stop().await;
    for opts in source
        .list_calls()
        .iter()
        .chain(source.watch_calls().iter())
    {
        assert_eq!(opts.label_selector.as_deref(), Some("app=web"));
        assert_eq!(opts.field_selector.as_deref(), Some("spec.nodeName=n1"));
    }
}
