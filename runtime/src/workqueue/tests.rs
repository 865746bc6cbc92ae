//! The cases of SEMANTICS section 7, plus the timer hand-over of the delaying queue.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::{advance, Instant};

use super::metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
};
use super::*;

const MS: Duration = Duration::from_millis(1);

/// Lets spawned tasks run until they block (current-thread runtime).
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

/// A FIFO that records `touch` calls.
#[derive(Default)]
struct TouchRecorder {
    items: VecDeque<&'static str>,
    touched: Arc<Mutex<Vec<&'static str>>>,
}

impl QueueStorage<&'static str> for TouchRecorder {
    fn touch(&mut self, item: &&'static str) {
        self.touched.lock().push(item);
    }
    fn push(&mut self, item: &'static str) {
        self.items.push_back(item);
    }
    fn pop(&mut self) -> Option<&'static str> {
        self.items.pop_front()
    }
    fn len(&self) -> usize {
        self.items.len()
    }
}

// ---------------------------------------------------------------- basic queue

#[tokio::test]
async fn len_counts_distinct_waiting_items() {
    // SEMANTICS 7.1
    let q = Queue::new();
    q.add("foo");
    q.add("bar");
    q.add("foo");
    assert_eq!(q.len(), 2);
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn add_while_processing_requeues_after_done() {
    // SEMANTICS 7.2
    let q = Queue::new();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    q.add("foo");
    assert_eq!(q.len(), 0);
    q.done(&"foo");
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
}

#[tokio::test]
async fn add_of_waiting_item_collapses_and_touches() {
    // SEMANTICS 7.3
    let storage = TouchRecorder::default();
    let touched = storage.touched.clone();
    let q = Queue::with_config(QueueOptions::default().storage(storage));
    q.add("bar");
    q.add("bar");
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(q.len(), 0);
    assert_eq!(*touched.lock(), vec!["bar"]);
}

#[tokio::test]
async fn item_is_never_on_two_workers() {
    // SEMANTICS 7.4
    let storage = TouchRecorder::default();
    let touched = storage.touched.clone();
    let q = Queue::with_config(QueueOptions::default().storage(storage));
    q.add("foo");
    let held = q.get().await;
    assert_eq!(held, Some("foo"));
    q.add("foo");
    q.add("foo");

    let worker2 = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    settle().await;
    assert!(
        !worker2.is_finished(),
        "worker2 got foo while worker1 holds it"
    );

    q.done(&"foo");
    assert_eq!(worker2.await.unwrap(), Some("foo"));
    assert!(
        touched.lock().is_empty(),
        "no touch for an item being processed"
    );
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn done_without_readd_leaves_queue_empty_and_get_blocks() {
    // SEMANTICS 7.5
    let q = Queue::new();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    assert_eq!(q.len(), 0);

    let getter = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    settle().await;
    assert!(!getter.is_finished());
    q.shut_down();
    assert_eq!(getter.await.unwrap(), None);
}

#[tokio::test]
async fn shutdown_still_hands_out_queued_items_and_ignores_adds() {
    // SEMANTICS 7.6
    let q = Queue::new();
    q.add("foo");
    q.add("bar");
    q.shut_down();
    assert!(q.shutting_down());
    q.add("baz");
    assert_eq!(q.len(), 2);
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(q.get().await, None);
    q.add("baz");
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shutdown_does_not_wait_for_workers() {
    // SEMANTICS 7.7
    let q = Queue::new();
    q.add("foo");
    q.add("bar");
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.get().await, Some("bar"));
    // `shut_down` is synchronous: returning here with both items unfinished is the case.
    q.shut_down();
    assert!(q.shutting_down());
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shutdown_with_drain_waits_for_done() {
    // SEMANTICS 7.8
    let q = Queue::new();
    q.add("foo");
    q.add("bar");
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.get().await, Some("bar"));

    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert!(q.shutting_down());
    assert_eq!(q.get().await, None);
    assert!(!drain.is_finished());

    q.done(&"foo");
    settle().await;
    assert!(
        !drain.is_finished(),
        "drain returned with bar still processing"
    );

    q.done(&"bar");
    drain.await.unwrap();
}

#[tokio::test]
async fn shutdown_releases_a_blocked_drain() {
    // SEMANTICS 7.9
    let q = Queue::new();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert!(!drain.is_finished());
    q.shut_down();
    drain.await.unwrap();
}

#[tokio::test]
async fn drain_hands_out_items_dirtied_before_shutdown() {
    // SEMANTICS 7.10
    let q = Queue::new();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    q.add("foo");

    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert_eq!(q.get().await, None);

    q.done(&"foo");
    assert_eq!(q.get().await, Some("foo"));
    settle().await;
    assert!(!drain.is_finished());
    q.done(&"foo");
    assert_eq!(q.get().await, None);
    drain.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn producers_and_readding_consumers_end_empty() {
    // SEMANTICS 7.11
    for drain in [false, true] {
        let q: Queue<usize> = Queue::new();
        let consumers: Vec<_> = (0..10)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    let mut seen: HashMap<usize, usize> = HashMap::new();
                    while let Some(item) = q.get().await {
                        let count = seen.entry(item).or_default();
                        *count += 1;
                        if *count < 2 {
                            q.add(item);
                        }
                        q.done(&item);
                    }
                })
            })
            .collect();
        let producers: Vec<_> = (0..50)
            .map(|i| {
                let q = q.clone();
                tokio::spawn(async move { q.add(i) })
            })
            .collect();
        for producer in producers {
            producer.await.unwrap();
        }
        if drain {
            q.shut_down_with_drain().await;
        } else {
            q.shut_down();
        }
        for consumer in consumers {
            consumer.await.unwrap();
        }
        assert_eq!(q.len(), 0);
        assert!(q.is_idle());
    }
}

#[tokio::test]
async fn done_of_an_item_not_processing_is_a_noop() {
    let q = Queue::new();
    q.add("foo");
    q.done(&"foo");
    assert_eq!(q.len(), 1);
    q.assert_invariants();
}

#[tokio::test]
async fn cancelled_get_loses_no_item() {
    let q = Queue::new();
    let getter = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    settle().await;
    getter.abort();
    let _ = getter.await;
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
}

// ---------------------------------------------------------------- delaying queue

#[tokio::test(start_paused = true)]
async fn add_after_keeps_earliest_time_first_earlier() {
    // SEMANTICS 7.12
    let q = DelayingQueue::new();
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 70 * MS);
    assert_eq!(q.len(), 0);
    advance(60 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    advance(20 * MS).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn add_after_keeps_earliest_time_second_earlier() {
    // SEMANTICS 7.13
    let q = DelayingQueue::new();
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 30 * MS);
    assert_eq!(q.len(), 0);
    advance(40 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    advance(20 * MS).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn earlier_item_fires_first() {
    // SEMANTICS 7.14
    let q = DelayingQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", 50 * MS);
    advance(60 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("bar"));
    q.done(&"bar");

    q.add_after("baz", Duration::from_secs(2));
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");

    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("baz"));
}

#[tokio::test(start_paused = true)]
async fn due_items_come_out_in_ready_order() {
    // SEMANTICS 7.15
    let q = DelayingQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", 500 * MS);
    q.add_after("baz", 250 * MS);
    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 3);
    assert_eq!(q.get().await, Some("baz"));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(q.get().await, Some("foo"));
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    // SEMANTICS 7.16
    let q = DelayingQueue::new();
    q.add_after("x", Duration::ZERO);
    assert_eq!(q.len(), 1);
    assert_eq!(q.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn add_after_after_shutdown_is_ignored() {
    // SEMANTICS 7.17
    let q = DelayingQueue::new();
    q.shut_down();
    q.add_after("x", MS);
    assert_eq!(q.waiting_len(), 0);
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_waiting_items() {
    let q = DelayingQueue::new();
    q.add_after("x", 10 * MS);
    q.add_after("y", Duration::from_secs(1));
    advance(20 * MS).await;
    q.shut_down();
    assert_eq!(q.waiting_len(), 0);
    // x was due before the shutdown, so it was queued and is still handed out.
    assert_eq!(q.get().await, Some("x"));
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn delayed_item_already_queued_is_deduped() {
    // SEMANTICS 7.18
    let q = DelayingQueue::new();
    q.add("x");
    q.add_after("x", 10 * MS);
    advance(10 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.waiting_len(), 0);
}

/// Awaits a spawned `get`; under the paused clock a lost wake-up ends in the timeout
/// (the only timer left) instead of a hang.
async fn got<T>(getter: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(Duration::from_secs(24 * 3600), getter)
        .await
        .expect("a waiting worker was never woken")
        .unwrap()
}

fn spawn_get(
    q: &DelayingQueue<&'static str>,
) -> tokio::task::JoinHandle<(Option<&'static str>, Instant)> {
    let q = q.clone();
    tokio::spawn(async move { (q.get().await, Instant::now()) })
}

#[tokio::test(start_paused = true)]
async fn waiting_worker_wakes_at_ready_time() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    let worker = spawn_get(&q);
    settle().await;
    q.add_after("late", Duration::from_secs(10));
    settle().await;
    // An earlier item re-arms the sleeping worker's timer.
    q.add_after("early", Duration::from_secs(1));
    let (item, at) = got(worker).await;
    assert_eq!(item, Some("early"));
    assert_eq!(at - start, Duration::from_secs(1));
    let (item, at) = got(spawn_get(&q)).await;
    assert_eq!(item, Some("late"));
    assert_eq!(at - start, Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn cancelled_timer_waiter_hands_over() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after("x", Duration::from_secs(5));
    let driver = spawn_get(&q);
    settle().await;
    let other = spawn_get(&q);
    settle().await;
    driver.abort();
    assert!(driver.await.unwrap_err().is_cancelled());
    let (item, at) = got(other).await;
    assert_eq!(item, Some("x"));
    assert_eq!(at - start, Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn timer_passes_to_a_waiting_worker_when_the_driver_leaves_with_an_item() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after("x", Duration::from_secs(1));
    q.add_after("y", Duration::from_secs(2));
    let first = spawn_get(&q);
    settle().await;
    let second = spawn_get(&q);
    // Neither worker comes back for more: the one left waiting must wake for y.
    let (a, b) = (got(first).await, got(second).await);
    let mut results = [a, b];
    results.sort_by_key(|(_, at)| *at);
    assert_eq!(results[0], (Some("x"), start + Duration::from_secs(1)));
    assert_eq!(results[1], (Some("y"), start + Duration::from_secs(2)));
}

#[tokio::test(start_paused = true)]
async fn shutdown_wakes_a_timer_waiter() {
    let q = DelayingQueue::new();
    q.add_after("x", Duration::from_secs(3600));
    let worker = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    settle().await;
    q.shut_down();
    assert_eq!(worker.await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn huge_delay_does_not_overflow() {
    let q = DelayingQueue::new();
    q.add_after("x", Duration::MAX);
    assert_eq!(q.waiting_len(), 1);
    assert_eq!(q.len(), 0);
}

// ---------------------------------------------------------------- rate limiters

#[test]
fn exponential_limiter_doubles_per_item() {
    // SEMANTICS 7.19
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    for expected in [1, 2, 4, 8, 16] {
        assert_eq!(limiter.when(&"one"), expected * MS);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), MS);
    assert_eq!(limiter.when(&"two"), 2 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), MS);
}

#[test]
fn exponential_limiter_caps_without_overflow() {
    // SEMANTICS 7.20
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1000));
    for _ in 0..5 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), 32 * MS);
    for _ in 0..1000 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), Duration::from_secs(1000));

    let minute = Duration::from_secs(60);
    let limiter = ItemExponentialFailureRateLimiter::new(minute, 1000 * 60 * minute);
    limiter.when(&"one");
    limiter.when(&"one");
    assert_eq!(limiter.when(&"one"), 4 * minute);
    for _ in 0..1000 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), 1000 * 60 * minute);

    // The largest base and cap there are: the cap holds, nothing panics.
    let limiter = ItemExponentialFailureRateLimiter::new(Duration::MAX, Duration::MAX);
    for _ in 0..200 {
        assert_eq!(limiter.when(&"one"), Duration::MAX);
    }
}

#[test]
fn fast_slow_limiter() {
    // SEMANTICS 7.21
    let limiter = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
    let expected = [
        5 * MS,
        5 * MS,
        5 * MS,
        Duration::from_secs(10),
        Duration::from_secs(10),
    ];
    for want in expected {
        assert_eq!(limiter.when(&"one"), want);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

#[test]
fn max_of_limiter() {
    // SEMANTICS 7.22
    let limiter: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(vec![
        Box::new(ItemFastSlowRateLimiter::new(
            5 * MS,
            Duration::from_secs(3),
            3,
        )),
        Box::new(ItemExponentialFailureRateLimiter::new(
            MS,
            Duration::from_secs(1),
        )),
    ]);
    let expected = [
        5 * MS,
        5 * MS,
        5 * MS,
        Duration::from_secs(3),
        Duration::from_secs(3),
    ];
    for want in expected {
        assert_eq!(limiter.when(&"one"), want);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

#[test]
fn with_max_wait_limiter() {
    // SEMANTICS 7.23
    let limiter = WithMaxWaitRateLimiter::new(
        ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(1000), 100),
        Duration::from_secs(500),
    );
    for _ in 0..100 {
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }
    for _ in 0..100 {
        assert_eq!(limiter.when(&"one"), Duration::from_secs(500));
    }
    assert_eq!(limiter.num_requeues(&"one"), 200);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_uses_bucket_after_burst() {
    // SEMANTICS 7.24
    let limiter = default_controller_rate_limiter::<usize>();
    for item in 0..100 {
        assert_eq!(limiter.when(&item), 5 * MS);
    }
    // The bucket is empty: each further token is 100 ms (10 qps) further out.
    let first_extra = limiter.when(&100);
    let second_extra = limiter.when(&101);
    assert!(
        (first_extra.as_secs_f64() - 0.1).abs() < 1e-9,
        "{first_extra:?}"
    );
    assert!(
        (second_extra.as_secs_f64() - 0.2).abs() < 1e-9,
        "{second_extra:?}"
    );
    // The bucket refills with time: after 1 s, 10 tokens are back (minus the 2 owed).
    advance(Duration::from_secs(1)).await;
    for item in 200..208 {
        assert_eq!(limiter.when(&item), 5 * MS);
    }
    assert!(limiter.when(&300) > 5 * MS);

    let items = default_item_based_rate_limiter::<&str>();
    assert_eq!(items.when(&"a"), MS);
    assert_eq!(items.when(&"a"), 2 * MS);
}

#[tokio::test(start_paused = true)]
async fn bucket_limiter_has_no_requeues() {
    // SEMANTICS 7.25
    let limiter = BucketRateLimiter::new(1.0, 1);
    for _ in 0..3 {
        limiter.when(&"x");
        assert_eq!(limiter.num_requeues(&"x"), 0);
    }
    limiter.forget(&"x");
    assert_eq!(limiter.num_requeues(&"x"), 0);

    let closed = BucketRateLimiter::new(10.0, 0);
    assert_eq!(closed.when(&"x"), Duration::MAX);
    let open = BucketRateLimiter::new(f64::INFINITY, 0);
    assert_eq!(open.when(&"x"), Duration::ZERO);
}

// ---------------------------------------------------------------- rate-limiting queue

#[tokio::test(start_paused = true)]
async fn rate_limiting_queue_delays_by_limiter() {
    // SEMANTICS 7.26
    let q = RateLimitingQueue::with_config(QueueOptions::default().rate_limiter(
        ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1)),
    ));
    let now = Instant::now();
    q.add_rate_limited("one");
    assert_eq!(q.ready_at(&"one"), Some(now + MS));
    // A second try while the first still waits keeps the earlier time ...
    q.add_rate_limited("one");
    assert_eq!(q.ready_at(&"one"), Some(now + MS));
    assert_eq!(q.num_requeues(&"one"), 2);
    // ... and once it is queued, the next try waits 4 ms (the third failure).
    advance(MS).await;
    assert_eq!(q.len(), 1);
    q.add_rate_limited("one");
    assert_eq!(q.ready_at(&"one"), Some(now + MS + 4 * MS));

    let now = Instant::now();
    q.add_rate_limited("two");
    assert_eq!(q.ready_at(&"two"), Some(now + MS));
    advance(MS).await;
    q.add_rate_limited("two");
    assert_eq!(q.ready_at(&"two"), Some(now + MS + 2 * MS));
    assert_eq!(q.num_requeues(&"two"), 2);

    q.forget(&"one");
    assert_eq!(q.num_requeues(&"one"), 0);
    let now = Instant::now();
    q.add_rate_limited("one");
    assert_eq!(q.ready_at(&"one"), Some(now + MS));
    // Forget leaves the queue alone.
    assert_eq!(q.len(), 2);
}

// ---------------------------------------------------------------- metrics

/// Records every metric as `"<metric>/<queue name>"`.
#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Recorded>>);

#[derive(Default)]
struct Recorded {
    created: Vec<String>,
    values: HashMap<String, f64>,
    observations: HashMap<String, Vec<f64>>,
}

struct RecordedMetric {
    key: String,
    recorded: Arc<Mutex<Recorded>>,
}

impl RecordedMetric {
    fn add(&self, delta: f64) {
        *self
            .recorded
            .lock()
            .values
            .entry(self.key.clone())
            .or_default() += delta;
    }
}

impl GaugeMetric for RecordedMetric {
    fn inc(&self) {
        self.add(1.0);
    }
    fn dec(&self) {
        self.add(-1.0);
    }
}

impl CounterMetric for RecordedMetric {
    fn inc(&self) {
        self.add(1.0);
    }
}

impl SettableGaugeMetric for RecordedMetric {
    fn set(&self, value: f64) {
        self.recorded.lock().values.insert(self.key.clone(), value);
    }
}

impl HistogramMetric for RecordedMetric {
    fn observe(&self, value: f64) {
        let mut recorded = self.recorded.lock();
        recorded
            .observations
            .entry(self.key.clone())
            .or_default()
            .push(value);
    }
}

impl Recorder {
    fn metric(&self, metric: &str, name: &str) -> Box<RecordedMetric> {
        let key = format!("{metric}/{name}");
        self.0.lock().created.push(key.clone());
        Box::new(RecordedMetric {
            key,
            recorded: self.0.clone(),
        })
    }

    fn value(&self, key: &str) -> f64 {
        self.0.lock().values.get(key).copied().unwrap_or(0.0)
    }

    fn observations(&self, key: &str) -> Vec<f64> {
        self.0
            .lock()
            .observations
            .get(key)
            .cloned()
            .unwrap_or_default()
    }
}

impl MetricsProvider for Recorder {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        self.metric("depth", name)
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.metric("adds", name)
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.metric("latency", name)
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.metric("work_duration", name)
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        self.metric("unfinished", name)
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        self.metric("longest", name)
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.metric("retries", name)
    }
}

fn approx(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test(start_paused = true)]
async fn named_queue_records_metrics() {
    // SEMANTICS 7.27
    let recorder = Recorder::default();
    let q = DelayingQueue::with_config(
        QueueOptions::default()
            .name("q")
            .metrics_provider(Arc::new(recorder.clone())),
    );
    q.add("a");
    q.add("a");
    q.add("b");
    assert_eq!(recorder.value("adds/q"), 2.0);
    assert_eq!(recorder.value("depth/q"), 2.0);

    advance(10 * MS).await;
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(recorder.value("depth/q"), 1.0);
    let latency = recorder.observations("latency/q");
    assert_eq!(latency.len(), 1);
    assert!(approx(latency[0], 0.010), "{latency:?}");

    advance(20 * MS).await;
    q.done(&"a");
    let work = recorder.observations("work_duration/q");
    assert_eq!(work.len(), 1);
    assert!(approx(work[0], 0.020), "{work:?}");

    q.add_after("c", Duration::ZERO);
    assert_eq!(recorder.value("retries/q"), 1.0);
    assert_eq!(recorder.value("adds/q"), 3.0);

    // An add during processing counts (client-go counts it as an add and in the depth).
    assert_eq!(q.get().await, Some("b"));
    q.add("b");
    assert_eq!(recorder.value("adds/q"), 4.0);
    assert_eq!(recorder.value("depth/q"), 2.0);

    // The unfinished-work gauges follow the item still processing (b, for 1.5 s).
    advance(1500 * MS).await;
    settle().await;
    assert!(approx(recorder.value("unfinished/q"), 1.5));
    assert!(approx(recorder.value("longest/q"), 1.5));

    // A delayed item's queue time runs from its ready time, not from `add_after`.
    q.done(&"b");
    assert_eq!(q.get().await, Some("c"));
    q.done(&"c");
    assert_eq!(q.get().await, Some("b"));
    q.done(&"b");
    q.add_after("d", Duration::from_secs(1));
    assert_eq!(recorder.value("retries/q"), 2.0);
    advance(Duration::from_secs(3)).await;
    assert_eq!(q.get().await, Some("d"));
    let latency = recorder.observations("latency/q");
    assert!(approx(*latency.last().unwrap(), 2.0), "{latency:?}");

    q.shut_down();
    q.add_after("e", MS);
    assert_eq!(recorder.value("retries/q"), 2.0);
}

#[tokio::test(start_paused = true)]
async fn unnamed_queue_has_no_metrics() {
    // SEMANTICS 7.28
    let recorder = Recorder::default();
    let q = DelayingQueue::with_config(
        QueueOptions::default().metrics_provider(Arc::new(recorder.clone())),
    );
    q.add("a");
    assert_eq!(q.get().await, Some("a"));
    q.done(&"a");
    q.add_after("b", MS);
    assert!(recorder.0.lock().created.is_empty());
    assert!(recorder.0.lock().values.is_empty());

    let empty_name = Queue::with_config(
        QueueOptions::default()
            .name("")
            .metrics_provider(Arc::new(recorder.clone())),
    );
    empty_name.add("a");
    assert!(recorder.0.lock().created.is_empty());
}

#[cfg(feature = "prometheus")]
#[tokio::test(start_paused = true)]
async fn prometheus_provider_exports_client_go_names() {
    // SEMANTICS 7.27
    use ::prometheus::{Encoder, TextEncoder};

    let registry = ::prometheus::Registry::new();
    let provider =
        Arc::new(metrics::prometheus::PrometheusMetricsProvider::new(&registry).unwrap());
    let q = DelayingQueue::with_config(
        QueueOptions::default()
            .name("q")
            .metrics_provider(provider.clone()),
    );
    q.add("a");
    q.add("a");
    q.add("b");
    assert_eq!(q.get().await, Some("a"));
    q.done(&"a");
    q.add_after("c", Duration::ZERO);

    let mut text = Vec::new();
    TextEncoder::new()
        .encode(&registry.gather(), &mut text)
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    for line in [
        "workqueue_adds_total{name=\"q\"} 3",
        "workqueue_depth{name=\"q\"} 2",
        "workqueue_queue_duration_seconds_count{name=\"q\"} 1",
        "workqueue_work_duration_seconds_count{name=\"q\"} 1",
        "workqueue_retries_total{name=\"q\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
    }
    let buckets = text
        .lines()
        .filter(|l| l.starts_with("workqueue_queue_duration_seconds_bucket"))
        .count();
    assert_eq!(buckets, 11, "10 buckets and +Inf");
    assert!(text.contains("workqueue_unfinished_work_seconds"));
    assert!(text.contains("workqueue_longest_running_processor_seconds"));

    // A second provider on the same registry is refused, not silently duplicated.
    assert!(metrics::prometheus::PrometheusMetricsProvider::new(&registry).is_err());
}

#[tokio::test(start_paused = true)]
async fn metrics_refresher_ends_at_shutdown_or_drop() {
    let alive = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let recorder = Recorder::default();
    let config = || {
        QueueOptions::default()
            .name("q")
            .metrics_provider(Arc::new(recorder.clone()))
    };

    let q = Queue::with_config(config());
    q.add("a");
    assert_eq!(q.get().await, Some("a"));
    settle().await;
    assert_eq!(alive(), 1, "the refresher runs once the queue is in use");
    q.shut_down();
    advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(alive(), 0, "the refresher ends at shutdown");

    let q = Queue::with_config(config());
    q.add("a");
    assert_eq!(q.get().await, Some("a"));
    settle().await;
    assert_eq!(alive(), 1);
    drop(q);
    advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(alive(), 0, "the refresher ends when the queue is dropped");

    // Unnamed queues and delays start no task at all.
    let q = DelayingQueue::new();
    q.add_after("a", Duration::from_secs(1));
    q.add("b");
    assert_eq!(q.get().await, Some("b"));
    assert_eq!(alive(), 0);
}
