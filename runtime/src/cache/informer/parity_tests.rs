//! client-go 1.36/1.37 informer parity (SEMANTICS 14.1, 14.4, 14.5) on a fake source,
//! under tokio's paused clock.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::cache::test_support::{pod, settle, FakeSource, Rec, Recorder};

fn informer(source: &Arc<FakeSource<Pod>>, fifo: FifoKind) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::new(
        Arc::clone(source) as Arc<dyn ListerWatcher<Pod>>,
        InformerOptions::default().fifo(fifo),
    )
}

fn run(informer: &SharedIndexInformer<Pod>) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let informer = informer.clone();
        let stop = stop.clone();
        async move { informer.run(stop).await }
    });
    (stop, task)
}

// SEMANTICS 14.1
#[tokio::test(start_paused = true)]
async fn done_checker_names_the_informer_and_completes_in_the_tick_it_syncs() {
    for (objects, fifo) in [
        (3, FifoKind::Real),
        (3, FifoKind::Delta),
        (0, FifoKind::Real),
    ] {
        let pods = (0..objects).map(|i| pod(&format!("p{i}"), "1")).collect();
        let source = FakeSource::new(pods);
        let inf = informer(&source, fifo).with_kind_name("pods");
        let checker = inf.done_checker();
        assert_eq!(checker.name(), "pods");
        assert!(!checker.is_done(), "pending before run");

        // A waiter that records what it sees the moment `done` completes.
        let waiter = tokio::spawn({
            let (checker, inf) = (checker.clone(), inf.clone());
            let started = tokio::time::Instant::now();
            async move {
                checker.done().await;
                (inf.has_synced(), started.elapsed())
            }
        });
        let (stop, task) = run(&inf);
        // At every point the test task runs, the checker and has_synced() agree.
        settle("informer synced", || {
            assert_eq!(
                inf.has_synced(),
                checker.is_done(),
                "{fifo:?} with {objects} objects"
            );
            inf.has_synced()
        })
        .await;
        let (synced_when_done, waited) = waiter.await.unwrap();
        assert!(synced_when_done, "done only once has_synced() is true");
        assert_eq!(waited, Duration::ZERO, "no polling: the clock never moved");
        stop.cancel();
        task.await.unwrap();
    }
}

// SEMANTICS 14.4
#[tokio::test(start_paused = true)]
async fn informer_metrics_count_queued_items_latency_and_resource_version() {
    for fifo in [FifoKind::Real, FifoKind::Delta] {
        let source = FakeSource::new(vec![]);
        let name = format!("metrics-{fifo:?}");
        let inf = informer(&source, fifo).with_kind_name(name.clone());
        #[cfg(feature = "prometheus")]
        let registry = {
            let registry = ::prometheus::Registry::new();
            crate::metrics::prometheus::register(&registry).unwrap();
            registry
        };
        let (stop, task) = run(&inf);
        settle("synced", || inf.has_synced()).await;
        settle("watch open", || source.open_watches() > 0).await;
        let metrics = inf.metrics();
        assert_eq!(metrics.name(), name);
        assert_eq!(metrics.store_resource_version(), "100", "the list's RV");
        let before = metrics.processed_items();

        // Ten deltas queued while the informer's task cannot run (current-thread runtime,
        // no await in between).
        let fifo_handle = inf.inner.fifo.get().map(Arc::clone).unwrap();
        for i in 0..10 {
            fifo_handle
                .add(Arc::new(pod(&format!("q{i}"), "150")))
                .unwrap();
        }
        assert_eq!(metrics.queued_items(), 10);
        settle("processed", || metrics.processed_items() == before + 10).await;
        assert_eq!(metrics.queued_items(), 0);
        assert_eq!(
            metrics.processed_items() - before,
            10,
            "one latency per item"
        );

        source.add(pod("late", "207"));
        settle("event applied", || {
            metrics.store_resource_version() == "207"
        })
        .await;
        #[cfg(feature = "prometheus")]
        {
            let text = crate::metrics::prometheus::encode(&registry).unwrap();
            for line in [
                format!("informer_queued_items{{name=\"{name}\"}} 0"),
                format!("informer_store_resource_version{{name=\"{name}\"}} 207"),
            ] {
                assert!(text.contains(&line), "{line} missing in:\n{text}");
            }
            assert!(
                text.contains(&format!(
                    "informer_processing_latency_seconds_count{{name=\"{name}\"}} 11"
                )),
                "{text}"
            );
        }
        stop.cancel();
        task.await.unwrap();
    }
}

// SEMANTICS 14.5
#[tokio::test(start_paused = true)]
async fn real_fifo_informer_delivers_a_watch_burst_in_order_across_keys() {
    let source = FakeSource::new(vec![pod("b", "1")]);
    let inf = informer(&source, FifoKind::default());
    let rec = Recorder::new();
    inf.add_event_handler(Rec(Arc::clone(&rec))).unwrap();
    let (stop, task) = run(&inf);
    settle("synced", || inf.has_synced()).await;
    settle("watch open", || source.open_watches() > 0).await;
    assert_eq!(rec.wait_for(1).await, ["add b@1 initial"]);
    rec.take();

    // One burst: all four events are in the watch before the reflector reads any.
    source.add(pod("a", "2"));
    source.modify(pod("b", "3"));
    source.delete(pod("a", "4"));
    source.add(pod("c", "5"));
    assert_eq!(
        rec.wait_for(4).await,
        ["add a@2", "update b@1 -> b@3", "delete a@4", "add c@5"]
    );
    stop.cancel();
    task.await.unwrap();
}

#[test]
fn informers_default_to_the_real_fifo() {
    assert_eq!(InformerOptions::default().fifo, FifoKind::Real);
}
