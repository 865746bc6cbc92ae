//! Workqueue throughput: one producer adds N distinct keys, then shuts the queue down;
//! 1 or 8 worker tasks `get` and `done` until the queue is empty. Beside it, the floor:
//! the same work over tokio mpsc channels (one channel for 1 worker; for 8 workers, one
//! channel per worker fed round-robin, since an mpsc has a single receiver).
//!
//! Each sample runs whole rounds on a multi-thread runtime (criterion 0.5 here has no
//! async support enabled, so `iter_custom` times `block_on` of each round).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kubegen_runtime::workqueue::Queue;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

const ITEMS: usize = 10_000;

async fn workqueue_round(workers: usize) {
    let queue: Queue<usize> = Queue::new();
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut processed = 0usize;
                while let Some(item) = queue.get().await {
                    black_box(item);
                    queue.done(&item);
                    processed += 1;
                }
                processed
            })
        })
        .collect();
    for item in 0..ITEMS {
        queue.add(item);
    }
    queue.shut_down();
    let mut processed = 0;
    for handle in handles {
        processed += handle.await.unwrap_or(0);
    }
    assert_eq!(processed, ITEMS);
}

async fn mpsc_round(workers: usize) {
    let (senders, handles): (Vec<_>, Vec<_>) = (0..workers)
        .map(|_| {
            let (tx, mut rx) = mpsc::unbounded_channel::<usize>();
            let handle = tokio::spawn(async move {
                let mut processed = 0usize;
                while let Some(item) = rx.recv().await {
                    black_box(item);
                    processed += 1;
                }
                processed
            });
            (tx, handle)
        })
        .unzip();
    for item in 0..ITEMS {
        let _ = senders[item % workers].send(item);
    }
    drop(senders);
    let mut processed = 0;
    for handle in handles {
        processed += handle.await.unwrap_or(0);
    }
    assert_eq!(processed, ITEMS);
}

fn time_rounds<F: std::future::Future<Output = ()>>(
    runtime: &Runtime,
    iters: u64,
    round: impl Fn() -> F,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        runtime.block_on(round());
        total += start.elapsed();
    }
    total
}

fn throughput(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|err| panic!("tokio runtime: {err}"));
    let mut group = c.benchmark_group("workqueue_add_get_done");
    group.throughput(Throughput::Elements(ITEMS as u64));
    for workers in [1usize, 8] {
        group.bench_with_input(
            BenchmarkId::new("workqueue", workers),
            &workers,
            |b, &workers| {
                b.iter_custom(|iters| time_rounds(&runtime, iters, || workqueue_round(workers)))
            },
        );
        group.bench_with_input(
            BenchmarkId::new("mpsc_floor", workers),
            &workers,
            |b, &workers| {
                b.iter_custom(|iters| time_rounds(&runtime, iters, || mpsc_round(workers)))
            },
        );
    }
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
