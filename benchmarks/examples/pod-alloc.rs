//! Where a typed Pod's memory and decode time go: the inline sizes of k8s-openapi's Pod
//! types; the allocations (count, bytes requested, bytes live) of decoding one benchmark
//! Pod plainly, of compacting it by a deep clone, and of decoding it with the runtime's
//! exact vector capacities (`client::exact`); then the CPU time per Pod of each way on
//! one thread, over 20,000 Pods without managedFields.
//!
//! ```text
//! cargo run --release -p kubegen-benchmarks --example pod-alloc
//! ```
//!
//! The counting allocator wraps the system allocator and lives in this measuring tool
//! only: the benchmark's processes use the system allocator unwrapped.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

// The runtime's exact-capacity adapter (and the forwarding it shares with the other
// adapter), compiled in here to be measured beside the plain decode (it is
// crate-internal there).
#[path = "../../runtime/src/client/adapter.rs"]
mod adapter;
#[path = "../../runtime/src/client/exact.rs"]
#[allow(dead_code)]
mod exact;

use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod, PodSpec, PodStatus, Probe, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static COPIED: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// plain atomics that allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        LIVE.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: the caller's layout contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        // SAFETY: `ptr` came from `System.alloc`/`realloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size as u64, Relaxed);
        COPIED.fetch_add(layout.size().min(new_size) as u64, Relaxed);
        LIVE.fetch_add(new_size as u64, Relaxed);
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        // SAFETY: as for `dealloc`; `new_size` is non-zero per `GlobalAlloc::realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[derive(Clone, Copy)]
struct Snap(u64, u64, u64, u64);

fn snap() -> Snap {
    Snap(
        ALLOCS.load(Relaxed),
        BYTES.load(Relaxed),
        LIVE.load(Relaxed),
        COPIED.load(Relaxed),
    )
}

fn report(what: &str, a: Snap, b: Snap) {
    println!(
        "{what:<44} allocs {:>5}  bytes requested {:>7}  live change {:>+8}  realloc-copied {:>6}",
        b.0 - a.0,
        b.1 - a.1,
        b.2 as i64 - a.2 as i64,
        b.3 - a.3
    );
}

fn main() {
    for (name, size) in [
        ("Pod", std::mem::size_of::<Pod>()),
        ("ObjectMeta", std::mem::size_of::<ObjectMeta>()),
        ("PodSpec", std::mem::size_of::<PodSpec>()),
        ("PodStatus", std::mem::size_of::<PodStatus>()),
        ("Container", std::mem::size_of::<Container>()),
        ("ContainerStatus", std::mem::size_of::<ContainerStatus>()),
        ("Probe", std::mem::size_of::<Probe>()),
        ("SecurityContext", std::mem::size_of::<SecurityContext>()),
    ] {
        println!("size_of::<{name}>() = {size}");
    }
    let json = serde_json::to_string(&kubegen_benchmarks::pod(1)).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    let stripped = serde_json::to_string(&v).unwrap();
    println!(
        "JSON: {} bytes, {} without managedFields",
        json.len(),
        stripped.len()
    );

    let s0 = snap();
    let pod: Pod = serde_json::from_str(&stripped).unwrap();
    let s1 = snap();
    report("decode (no managedFields)", s0, s1);
    let copy = pod.clone();
    let s2 = snap();
    report("clone (exact capacities)", s1, s2);
    drop(pod);
    let s3 = snap();
    report("drop the decoded original", s2, s3);
    // Once first, so that the decoding thread's reusable buffer of array counts is
    // already allocated (every later decode on the thread reuses it).
    drop(exact_decode(&stripped));
    let s3 = snap();
    let exact_pod = exact_decode(&stripped);
    let s2b = snap();
    report("exact decode (no managedFields)", s3, s2b);
    assert_eq!(exact_pod, copy);
    drop(exact_pod);
    let s3 = snap();
    let boxed = std::sync::Arc::new(copy);
    let s4 = snap();
    report("Arc::new", s3, s4);
    drop(boxed);
    let s5 = snap();
    report("drop", s4, s5);
    let pod: Pod = serde_json::from_str(&json).unwrap();
    let s6 = snap();
    report("decode (with managedFields)", s5, s6);
    drop(pod);

    let texts: Vec<String> = (0..20_000)
        .map(|i| {
            let mut v = kubegen_benchmarks::pod(i);
            v["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("managedFields");
            v.to_string()
        })
        .collect();
    timings(&texts);
}

fn exact_decode(text: &str) -> Pod {
    use serde::Deserialize;
    exact::with_lengths(text, || {
        let mut de = serde_json::Deserializer::from_str(text);
        let pod = Pod::deserialize(exact::Exact::new(&mut de)).unwrap();
        de.end().unwrap();
        pod
    })
}

/// CPU time per Pod of decoding alone, of decoding then compacting by a clone, and of the
/// exact decode (and its array counting pass alone), on this thread (each Pod dropped at
/// once, as the decode floor does).
fn timings(texts: &[String]) {
    let cpu = || kubegen_benchmarks::thread_cpu_seconds().unwrap_or(0.0);
    for round in 0..2 {
        let t0 = cpu();
        for t in texts {
            let p: Pod = serde_json::from_str(t).unwrap();
            drop(std::hint::black_box(p));
        }
        let t1 = cpu();
        for t in texts {
            let p: Pod = serde_json::from_str(t).unwrap();
            let c = p.clone();
            drop(p);
            drop(std::hint::black_box(c));
        }
        let t2 = cpu();
        for t in texts {
            let p = exact_decode(t);
            drop(std::hint::black_box(p));
        }
        let t3 = cpu();
        for t in texts {
            exact::with_lengths(t, || std::hint::black_box(()));
        }
        let t4 = cpu();
        let n = texts.len() as f64;
        println!(
            "round {round}: decode {:.2} us/Pod, decode + clone {:.2} us/Pod, exact decode {:.2} us/Pod (its array counts alone {:.2})",
            (t1 - t0) / n * 1e6,
            (t2 - t1) / n * 1e6,
            (t3 - t2) / n * 1e6,
            (t4 - t3) / n * 1e6
        );
    }
}
