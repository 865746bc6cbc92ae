//! Benchmark: the indexer at 100k Pods, beside kube-runtime's `reflector::store`.
//!
//! 100k Pods spread over 50 namespaces, each with a name, a namespace, a uid, a
//! resourceVersion and three labels. Each group measures kubegen's `Indexer` (with the
//! namespace index every informer installs) and kube-runtime's `Writer`/`Store` doing the
//! same job:
//! - `add_100k` / `update_100k`: store every Pod into an empty store / over an existing
//!   one (both sides clone each Pod once into an `Arc`). `kubegen_indexer` maintains the
//!   namespace index as well; `kubegen_no_index` is the same store without indices, the
//!   like-for-like comparison with kube-runtime's unindexed map;
//! - `list_namespace`: the ~2000 Pods of one namespace (kubegen: the namespace index;
//!   kube-runtime has no index: a filtered scan);
//! - `list_namespace_selector`: the Pods of one namespace matching `tier=web` (kubegen:
//!   a namespace lister; kube-runtime: a filtered scan with kube-core's selector);
//! - `get_by_key`: one Pod by namespace and name.
//!
//! Run: `cargo bench -p kubegen-runtime --bench store -- --warm-up-time 1 --measurement-time 3`

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube_runtime::reflector::{store::Writer, ObjectRef};
use kube_runtime::watcher::Event;

use kube::core::{Expression, SelectorExt};
use kubegen_runtime::cache::lister::Lister;
use kubegen_runtime::cache::store::{
    meta_namespace_key_func, namespace_indexers, Indexer, Indexers, NAMESPACE_INDEX,
};
use kubegen_runtime::labels::Selector;

const PODS: usize = 100_000;
const NAMESPACES: usize = 50;

fn pods(generation: usize) -> Vec<Pod> {
    (0..PODS)
        .map(|i| {
            let ns = format!("namespace-{}", i % NAMESPACES);
            let app = format!("app-{}", i % 400);
            Pod {
                metadata: ObjectMeta {
                    name: Some(format!("{app}-{i:08x}")),
                    namespace: Some(ns),
                    uid: Some(format!("00000000-0000-0000-0000-{i:012}")),
                    resource_version: Some((i + generation * PODS).to_string()),
                    labels: Some(BTreeMap::from([
                        ("app".to_string(), app),
                        (
                            "tier".to_string(),
                            ["web", "db", "cache"][i % 3].to_string(),
                        ),
                        ("pod-template-hash".to_string(), format!("{:010x}", i / 7)),
                    ])),
                    ..Default::default()
                },
                ..Default::default()
            }
        })
        .collect()
}

fn kubegen_indexer() -> Indexer<Pod> {
    Indexer::new(meta_namespace_key_func(), namespace_indexers())
}

fn kubegen_no_index() -> Indexer<Pod> {
    Indexer::new(meta_namespace_key_func(), Indexers::new())
}

fn kubegen_filled(pods: &[Pod], indexer: Indexer<Pod>) -> Indexer<Pod> {
    for p in pods {
        indexer.add(p.clone()).unwrap();
    }
    indexer
}

fn kube_filled(pods: &[Pod]) -> Writer<Pod> {
    let mut writer = Writer::<Pod>::default();
    for p in pods {
        writer.apply_watcher_event(&Event::Apply(p.clone()));
    }
    writer
}

/// Every 97th Pod's (namespace, name): lookups spread over the whole store.
fn probes(pods: &[Pod]) -> Vec<(String, String)> {
    pods.iter()
        .step_by(97)
        .map(|p| (p.namespace().unwrap_or_default(), p.name_any()))
        .collect()
}

fn bench(c: &mut Criterion) {
    let first = pods(0);
    let second = pods(1);
    let events: Vec<Event<Pod>> = first.iter().cloned().map(Event::Apply).collect();
    let update_events: Vec<Event<Pod>> = second.iter().cloned().map(Event::Apply).collect();

    let mut g = c.benchmark_group("store/add_100k");
    g.sample_size(10);
    g.throughput(Throughput::Elements(PODS as u64));
    for (name, make) in [
        ("kubegen_indexer", kubegen_indexer as fn() -> Indexer<Pod>),
        ("kubegen_no_index", kubegen_no_index),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                make,
                |indexer| {
                    for p in &first {
                        indexer.add(p.clone()).unwrap();
                    }
                    indexer
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.bench_function("kube_runtime_writer", |b| {
        b.iter_batched(
            Writer::<Pod>::default,
            |mut writer| {
                for e in &events {
                    writer.apply_watcher_event(e);
                }
                writer
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("store/update_100k");
    g.sample_size(10);
    g.throughput(Throughput::Elements(PODS as u64));
    for (name, make) in [
        ("kubegen_indexer", kubegen_indexer as fn() -> Indexer<Pod>),
        ("kubegen_no_index", kubegen_no_index),
    ] {
        let indexer = kubegen_filled(&first, make());
        g.bench_function(name, |b| {
            b.iter(|| {
                for p in &second {
                    indexer.update(p.clone()).unwrap();
                }
            })
        });
    }
    let mut writer = kube_filled(&first);
    g.bench_function("kube_runtime_writer", |b| {
        b.iter(|| {
            for e in &update_events {
                writer.apply_watcher_event(e);
            }
        })
    });
    g.finish();

    let indexer = kubegen_filled(&first, kubegen_indexer());
    let reader = kube_filled(&first).as_reader();
    let ns = "namespace-17";
    assert_eq!(
        indexer.by_index(NAMESPACE_INDEX, ns).unwrap().len(),
        PODS / NAMESPACES
    );
    assert_eq!(
        reader
            .state_filter(|p| p.metadata.namespace.as_deref() == Some(ns))
            .len(),
        PODS / NAMESPACES
    );

    let mut g = c.benchmark_group("store/list_namespace");
    g.throughput(Throughput::Elements((PODS / NAMESPACES) as u64));
    g.bench_function("kubegen_by_index", |b| {
        b.iter(|| black_box(indexer.by_index(NAMESPACE_INDEX, black_box(ns)).unwrap()))
    });
    g.bench_function("kube_runtime_state_filter", |b| {
        b.iter(|| {
            let ns = black_box(ns);
            black_box(reader.state_filter(|p| p.metadata.namespace.as_deref() == Some(ns)))
        })
    });
    g.finish();

    let lister = Lister::new(indexer.clone());
    let selector = Selector::parse("tier=web").unwrap();
    let kube_selector: kube::core::Selector = Expression::Equal("tier".into(), "web".into()).into();
    let ns_lister = lister.namespaced(ns);
    let expected = ns_lister.list(&selector).len();
    assert!(expected > 0);
    assert_eq!(
        reader
            .state_filter(|p| p.metadata.namespace.as_deref() == Some(ns)
                && kube_selector.matches(p.labels()))
            .len(),
        expected
    );
    let mut g = c.benchmark_group("store/list_namespace_selector");
    g.throughput(Throughput::Elements((PODS / NAMESPACES) as u64));
    g.bench_function("kubegen_namespace_lister", |b| {
        b.iter(|| black_box(ns_lister.list(black_box(&selector))))
    });
    g.bench_function("kube_runtime_state_filter", |b| {
        b.iter(|| {
            let ns = black_box(ns);
            black_box(reader.state_filter(|p| {
                p.metadata.namespace.as_deref() == Some(ns) && kube_selector.matches(p.labels())
            }))
        })
    });
    g.finish();

    let probes = probes(&first);
    let keys: Vec<String> = probes.iter().map(|(ns, n)| format!("{ns}/{n}")).collect();
    let refs: Vec<ObjectRef<Pod>> = probes
        .iter()
        .map(|(ns, n)| ObjectRef::new(n).within(ns))
        .collect();
    let mut g = c.benchmark_group("store/get_by_key");
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.bench_function("kubegen_get_by_key", |b| {
        b.iter(|| {
            for k in &keys {
                black_box(indexer.get_by_key(k).unwrap());
            }
        })
    });
    g.bench_function("kube_runtime_get", |b| {
        b.iter(|| {
            for r in &refs {
                black_box(reader.get(r).unwrap());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
