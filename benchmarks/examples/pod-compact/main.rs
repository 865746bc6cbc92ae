//! The compact-cache candidates of issue 31, measured on 20,000 benchmark Pods (without
//! managedFields, which the informer drops while decoding): for each way of holding a
//! cached Pod, the live heap bytes and allocations per Pod once all 20,000 sit in
//! `Arc`s (as the informer's store holds them), and the decode CPU time per Pod on one
//! thread. The candidates:
//!
//! - `k8s-openapi Pod`: what the typed informer caches today, decoded plainly and with the
//!   runtime's exact vector capacities (`client::exact`, the informer's default);
//! - `boxed mirror`: the same API generated from the OpenAPI definitions kubegen embeds,
//!   with every optional struct field `Option<Box<T>>` (`kubegen_benchmarks::compact_pod`, by
//!   `benchmarks/gen_compact_pod.py`),
//!   decoded plainly and with exact capacities;
//! - string interning: how many of the mirror's string bytes repeat across the 20,000
//!   Pods (what sharing equal strings could save, before the cost of the shared form).
//!
//! It also checks that the mirror is lossless on every Pod (mirror and k8s-openapi Pod
//! serialize to the same JSON) and times the conversion back through serde.
//!
//! ```text
//! cargo run --release -p kubegen-benchmarks --example pod-compact
//! ```
//!
//! The counting allocator wraps the system allocator and lives in this measuring tool
//! only: the benchmark's processes use the system allocator unwrapped.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Deserialize;

#[path = "../../../runtime/src/client/adapter.rs"]
mod adapter;
#[path = "../../../runtime/src/client/exact.rs"]
#[allow(dead_code)]
mod exact;

use kubegen_benchmarks::compact_pod as mirror;

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static LIVE_ALLOCS: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// plain atomics that allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Relaxed);
        LIVE_ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: the caller's layout contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Relaxed);
        LIVE_ALLOCS.fetch_sub(1, Relaxed);
        // SAFETY: `ptr` came from `System.alloc`/`realloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        // SAFETY: as for `dealloc`; `new_size` is non-zero per `GlobalAlloc::realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static A: Counting = Counting;

const PODS: usize = 20_000;

fn main() {
    let texts: Vec<String> = (0..PODS)
        .map(|i| {
            let mut v = kubegen_benchmarks::pod(i);
            if let Some(meta) = v["metadata"].as_object_mut() {
                meta.remove("managedFields");
            }
            v.to_string()
        })
        .collect();
    let avg = texts.iter().map(String::len).sum::<usize>() / PODS;
    println!("{PODS} benchmark Pods, {avg} bytes of JSON each on average (no managedFields)");
    println!(
        "inline sizes: k8s-openapi Pod {}, PodSpec {}, Container {}, ContainerStatus {}, Volume {}; \
         mirror Pod {}, PodSpec {}, Container {}, ContainerStatus {}, Volume {}",
        size_of::<k8s_openapi::api::core::v1::Pod>(),
        size_of::<k8s_openapi::api::core::v1::PodSpec>(),
        size_of::<k8s_openapi::api::core::v1::Container>(),
        size_of::<k8s_openapi::api::core::v1::ContainerStatus>(),
        size_of::<k8s_openapi::api::core::v1::Volume>(),
        size_of::<mirror::Pod>(),
        size_of::<mirror::PodSpec>(),
        size_of::<mirror::Container>(),
        size_of::<mirror::ContainerStatus>(),
        size_of::<mirror::Volume>(),
    );
    // Warm the exact decoder's per-thread buffer so that it is not counted as a Pod's.
    drop(exact_decode::<mirror::Pod>(&texts[0]));
    println!(
        "{:<36} {:>12} {:>14} {:>14}",
        "candidate", "live B/Pod", "allocs/Pod", "decode us/Pod"
    );
    measure::<k8s_openapi::api::core::v1::Pod>("k8s-openapi Pod, plain", &texts, plain);
    measure::<k8s_openapi::api::core::v1::Pod>("k8s-openapi Pod, exact", &texts, exact_decode);
    measure::<mirror::Pod>("boxed mirror, plain", &texts, plain);
    let cached = measure::<mirror::Pod>("boxed mirror, exact", &texts, exact_decode);
    lossless(&texts, &cached);
    interning(&texts);
}

fn plain<T: DeserializeOwned>(text: &str) -> T {
    serde_json::from_str(text).expect("benchmark Pods decode")
}

fn exact_decode<T: DeserializeOwned>(text: &str) -> T {
    exact::with_lengths(text, || {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = T::deserialize(exact::Exact::new(&mut de)).expect("benchmark Pods decode");
        de.end().expect("one value per text");
        value
    })
}

/// Decodes every text into an `Arc<T>` and keeps them all: live bytes and allocations per
/// Pod are the counters' growth over the decode, divided by the Pods.
fn measure<T>(what: &str, texts: &[String], decode: fn(&str) -> T) -> Vec<Arc<T>> {
    let cpu = || kubegen_benchmarks::thread_cpu_seconds().unwrap_or(0.0);
    let mut cache = Vec::with_capacity(texts.len());
    let (b0, a0, t0) = (LIVE.load(Relaxed), LIVE_ALLOCS.load(Relaxed), cpu());
    for t in texts {
        cache.push(Arc::new(decode(t)));
    }
    let (b1, a1, t1) = (LIVE.load(Relaxed), LIVE_ALLOCS.load(Relaxed), cpu());
    // Less the cache vector itself (one pointer per Pod, the same for every candidate).
    let n = texts.len() as f64;
    let vec_bytes = (cache.capacity() * size_of::<Arc<T>>()) as f64;
    println!(
        "{what:<36} {:>12.0} {:>14.1} {:>14.2}",
        ((b1 - b0) as f64 - vec_bytes) / n,
        ((a1 - a0) as f64 - 1.0) / n,
        (t1 - t0) / n * 1e6
    );
    cache
}

/// Every mirror serializes to the JSON of the k8s-openapi Pod decoded from the same text,
/// and converts back to an equal Pod (through serde; generated `From` impls would move
/// fields instead). Panics on the first difference: the mirror must be lossless.
fn lossless(texts: &[String], cached: &[Arc<mirror::Pod>]) {
    let cpu = || kubegen_benchmarks::thread_cpu_seconds().unwrap_or(0.0);
    let mut seconds = 0.0;
    for (text, m) in texts.iter().zip(cached) {
        let pod: k8s_openapi::api::core::v1::Pod = plain(text);
        let t0 = cpu();
        let value = serde_json::to_value(&**m).expect("a mirror serializes");
        let back = k8s_openapi::api::core::v1::Pod::deserialize(value).expect("and converts");
        seconds += cpu() - t0;
        assert_eq!(back, pod, "the mirror lost something of {text}");
    }
    println!(
        "lossless: all {} mirrors convert back to the k8s-openapi Pod decoded from the same JSON \
         ({:.2} us/Pod through serde_json::Value)",
        texts.len(),
        seconds / texts.len() as f64 * 1e6
    );
}

/// The string bytes of the Pods (values and map keys, as heap `String`s hold them) and
/// how many of them repeat a string already seen: an upper bound of what interning saves
/// before the bytes of the shared form (a pointer and count per use, a table per set).
fn interning(texts: &[String]) {
    // The fields whose JSON object is a map (its keys are stored as strings); every other
    // object is a struct, whose field names are not stored.
    const MAPS: [&str; 8] = [
        "labels",
        "annotations",
        "nodeSelector",
        "requests",
        "limits",
        "overhead",
        "allocatedResources",
        "data",
    ];
    fn walk(
        v: &serde_json::Value,
        map: bool,
        seen: &mut HashMap<String, usize>,
        total: &mut usize,
    ) {
        fn note(s: &str, seen: &mut HashMap<String, usize>, total: &mut usize) {
            *total += s.len();
            *seen.entry(s.to_owned()).or_default() += 1;
        }
        match v {
            serde_json::Value::String(s) => note(s, seen, total),
            serde_json::Value::Array(items) => {
                items.iter().for_each(|i| walk(i, false, seen, total))
            }
            serde_json::Value::Object(fields) => {
                for (k, v) in fields {
                    if map {
                        note(k, seen, total);
                    }
                    walk(v, MAPS.contains(&k.as_str()), seen, total);
                }
            }
            _ => {}
        }
    }
    let mut seen = HashMap::new();
    let mut total = 0;
    for t in texts {
        let v: serde_json::Value = serde_json::from_str(t).expect("benchmark Pods parse");
        walk(&v, false, &mut seen, &mut total);
    }
    let distinct: usize = seen.keys().map(String::len).sum();
    let n = texts.len();
    println!(
        "strings: {} bytes/Pod in {} strings/Pod; {} distinct strings over all Pods; \
         bytes repeating an earlier string: {} bytes/Pod ({:.0}%)",
        total / n,
        seen.values().sum::<usize>() / n,
        seen.len(),
        (total - distinct) / n,
        (total - distinct) as f64 * 100.0 / total as f64
    );
}
