//! Property test: random adds, delayed adds, gets, dones and shutdowns from many tasks on a
//! multi-thread runtime keep the queue's invariants.
//!
//! Checked while running: no item is held by two workers (a flag per item, set by the
//! worker that gets it and cleared before `done`); no item is handed out more often than
//! it was added; the queue's own state is consistent (each queued item once, only dirty
//! items, every dirty item queued or processing: `Queue::assert_invariants`, called by a
//! sampler task throughout). Checked at the end: nothing is dirty or processing, every
//! item added before shutdown was handed out, and delayed items due before shutdown were
//! handed out without anyone but the waiting workers looking at the queue.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use proptest::prelude::*;

use super::DelayingQueue;

const ITEMS: usize = 6;
/// Workers re-add an item while processing it at most this often in all, so that the
/// queue goes idle before shutdown.
const MAX_READDS: usize = 4;

#[derive(Debug, Clone)]
enum ProducerOp {
    Add(usize),
    AddAfter(usize, u64),
    Yield,
    /// Sleeps this many milliseconds, so that idle workers go to sleep in `get`.
    Sleep(u64),
}

#[derive(Debug, Clone)]
struct WorkerStep {
    readd: bool,
    yields: u8,
}

#[derive(Debug, Clone, Copy)]
enum Shutdown {
    Immediate,
    Drain,
    DrainThenImmediate,
}

#[derive(Debug, Clone)]
struct Scenario {
    producers: Vec<Vec<ProducerOp>>,
    workers: Vec<Vec<WorkerStep>>,
    /// Shut down when this many adds have started (after all producers if larger).
    shutdown_after: usize,
    shutdown: Shutdown,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let op = prop_oneof![
        6 => (0..ITEMS).prop_map(ProducerOp::Add),
        2 => (0..ITEMS, 0..3u64).prop_map(|(item, ms)| ProducerOp::AddAfter(item, ms)),
        2 => Just(ProducerOp::Yield),
        1 => (1..3u64).prop_map(ProducerOp::Sleep),
    ];
    let step = (any::<bool>(), 0..3u8).prop_map(|(readd, yields)| WorkerStep { readd, yields });
    (
        prop::collection::vec(prop::collection::vec(op, 1..40), 1..6),
        prop::collection::vec(prop::collection::vec(step, 1..6), 1..6),
        0..200usize,
        prop_oneof![
            Just(Shutdown::Immediate),
            Just(Shutdown::Drain),
            Just(Shutdown::DrainThenImmediate)
        ],
    )
        .prop_map(|(producers, workers, shutdown_after, shutdown)| Scenario {
            producers,
            workers,
            shutdown_after,
            shutdown,
        })
}

#[derive(Default)]
struct Book {
    held: [AtomicBool; ITEMS],
    adds_started: [AtomicUsize; ITEMS],
    handed_out: [AtomicUsize; ITEMS],
    /// Re-adds by workers while processing, capped so that the queue can go idle.
    readds: [AtomicUsize; ITEMS],
    /// An add of the item returned before shutdown began: it must be handed out.
    must_hand_out: [AtomicBool; ITEMS],
    started: AtomicUsize,
    shutdown_begun: AtomicBool,
    finished: AtomicBool,
    /// The first violation seen by a task. Tasks record instead of panicking so that the
    /// queue keeps running (a worker dying with an item would hang a drain) and the
    /// scenario ends quickly for proptest to shrink it.
    violation: Mutex<Option<String>>,
}

impl Book {
    fn violated(&self, what: String) {
        self.violation.lock().get_or_insert(what);
    }

    fn assert_no_violation(&self) {
        if let Some(what) = self.violation.lock().take() {
            panic!("{what}");
        }
    }
}

async fn shut_down(queue: &DelayingQueue<usize>, book: &Book, how: Shutdown) {
    if book.shutdown_begun.swap(true, SeqCst) {
        return;
    }
    match how {
        Shutdown::Immediate => queue.shut_down(),
        Shutdown::Drain => queue.shut_down_with_drain().await,
        Shutdown::DrainThenImmediate => {
            let drain = tokio::spawn({
                let queue = queue.clone();
                async move { queue.shut_down_with_drain().await }
            });
            tokio::task::yield_now().await;
            queue.shut_down();
            drain.await.unwrap();
        }
    }
}

async fn run(scenario: Scenario) {
    let queue: DelayingQueue<usize> = DelayingQueue::new();
    let book = Arc::new(Book::default());

    let sampler = tokio::spawn({
        let (queue, book) = (queue.clone(), book.clone());
        async move {
            while !book.finished.load(SeqCst) {
                if let Err(violation) = queue.check_invariants() {
                    book.violated(violation.to_string());
                    return;
                }
                tokio::task::yield_now().await;
            }
        }
    });

    let workers: Vec<_> = scenario
        .workers
        .iter()
        .cloned()
        .map(|steps| {
            let (queue, book) = (queue.clone(), book.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while let Some(item) = queue.get().await {
                    if book.held[item].swap(true, SeqCst) {
                        book.violated(format!("item {item} on two workers"));
                    }
                    let handed = book.handed_out[item].fetch_add(1, SeqCst) + 1;
                    if handed > book.adds_started[item].load(SeqCst) {
                        book.violated(format!("item {item} handed out more often than added"));
                    }
                    let step = &steps[n % steps.len()];
                    n += 1;
                    if step.readd && book.readds[item].fetch_add(1, SeqCst) < MAX_READDS {
                        book.adds_started[item].fetch_add(1, SeqCst);
                        queue.add(item);
                    }
                    for _ in 0..step.yields {
                        tokio::task::yield_now().await;
                    }
                    book.held[item].store(false, SeqCst);
                    queue.done(&item);
                }
            })
        })
        .collect();

    let producers: Vec<_> = scenario
        .producers
        .iter()
        .cloned()
        .map(|ops| {
            let (queue, book) = (queue.clone(), book.clone());
            let (shutdown_after, how) = (scenario.shutdown_after, scenario.shutdown);
            tokio::spawn(async move {
                for op in ops {
                    match op {
                        ProducerOp::Add(item) | ProducerOp::AddAfter(item, _) => {
                            book.adds_started[item].fetch_add(1, SeqCst);
                            if let ProducerOp::AddAfter(_, ms) = op {
                                queue.add_after(item, Duration::from_millis(ms));
                            } else {
                                queue.add(item);
                                if !book.shutdown_begun.load(SeqCst) {
                                    book.must_hand_out[item].store(true, SeqCst);
                                }
                            }
                            if book.started.fetch_add(1, SeqCst) + 1 == shutdown_after {
                                shut_down(&queue, &book, how).await;
                            }
                        }
                        ProducerOp::Yield => tokio::task::yield_now().await,
                        ProducerOp::Sleep(ms) => {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                        }
                    }
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.unwrap();
    }

    if !book.shutdown_begun.load(SeqCst) {
        // Delayed items must reach the workers through the workers' own timer, so wait
        // without calling into the queue (which would move due items itself). Bounded only
        // to turn a lost wake-up into a failure instead of a hang.
        let settled = tokio::time::timeout(Duration::from_secs(30), async {
            while !queue.is_settled_without_looking() && book.violation.lock().is_none() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
        book.assert_no_violation();
        assert!(settled.is_ok(), "delayed items were never handed out");
        shut_down(&queue, &book, scenario.shutdown).await;
    }

    for worker in workers {
        worker.await.unwrap();
    }
    book.finished.store(true, SeqCst);
    sampler.await.unwrap();
    book.assert_no_violation();

    queue.assert_invariants();
    assert_eq!(queue.len(), 0);
    assert!(queue.is_idle(), "an item is left dirty or processing");
    let mut total_handed = 0;
    let mut total_added = 0;
    for item in 0..ITEMS {
        let handed = book.handed_out[item].load(SeqCst);
        if book.must_hand_out[item].load(SeqCst) {
            assert!(
                handed >= 1,
                "item {item} added before shutdown was never handed out"
            );
        }
        assert!(!book.held[item].load(SeqCst));
        total_handed += handed;
        total_added += book.adds_started[item].load(SeqCst);
    }
    assert!(total_handed <= total_added);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn workqueue_keeps_its_invariants_under_concurrency(scenario in scenario()) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(run(scenario));
    }
}
