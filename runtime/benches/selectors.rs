//! Benchmark: label selector construction, matching and rendering, beside kube-core's
//! `Selector`/`Expression` in the same groups.
//!
//! kube-core has no string parser (its selectors are built from `Expression`s or a
//! `LabelSelector`), so "construct" compares our `parse` of the string and our
//! `Requirement` builder with kube-core building the same expressions; "match" and
//! "to_string" compare like with like.
//!
//! Run: `cargo bench -p kubegen-runtime --bench selectors -- --warm-up-time 1 --measurement-time 3`

use std::collections::{BTreeMap, BTreeSet};
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use kube::core::{Expression, Selector as KubeSelector, SelectorExt};
use kubegen_runtime::labels::{Operator, Requirement, Selector};

const SELECTOR: &str = "app=web,tier in (frontend,backend),!canary";

fn labels(tier: &str) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = (0..7)
        .map(|i| (format!("example.com/label-{i}"), format!("value-{i}")))
        .collect();
    labels.insert("app".into(), "web".into());
    labels.insert("tier".into(), tier.into());
    labels.insert("version".into(), "v1".into());
    labels
}

fn ours_built() -> Selector {
    let none: [&str; 0] = [];
    Selector::everything()
        .add_requirement(Requirement::new("app", Operator::Equals, ["web"]).unwrap())
        .add_requirement(Requirement::new("tier", Operator::In, ["frontend", "backend"]).unwrap())
        .add_requirement(Requirement::new("canary", Operator::DoesNotExist, none).unwrap())
}

fn kube_built() -> KubeSelector {
    KubeSelector::from_iter([
        Expression::Equal("app".into(), "web".into()),
        Expression::In(
            "tier".into(),
            BTreeSet::from(["frontend".to_string(), "backend".to_string()]),
        ),
        Expression::DoesNotExist("canary".into()),
    ])
}

fn construct(c: &mut Criterion) {
    let mut group = c.benchmark_group("selector_construct");
    group.bench_function("kubegen_parse", |b| {
        b.iter(|| Selector::parse(black_box(SELECTOR)).unwrap())
    });
    group.bench_function("kubegen_build", |b| b.iter(ours_built));
    group.bench_function("kube_core_build", |b| b.iter(kube_built));
    group.finish();
}

fn matching(c: &mut Criterion) {
    let ours = Selector::parse(SELECTOR).unwrap();
    let theirs = kube_built();
    let hit = labels("frontend");
    let miss = labels("db");
    assert!(ours.matches(&hit) && theirs.matches(&hit));
    assert!(!ours.matches(&miss) && !theirs.matches(&miss));

    let mut group = c.benchmark_group("selector_match");
    group.bench_function("kubegen_hit", |b| {
        b.iter(|| black_box(&ours).matches(black_box(&hit)))
    });
    group.bench_function("kube_core_hit", |b| {
        b.iter(|| black_box(&theirs).matches(black_box(&hit)))
    });
    group.bench_function("kubegen_miss", |b| {
        b.iter(|| black_box(&ours).matches(black_box(&miss)))
    });
    group.bench_function("kube_core_miss", |b| {
        b.iter(|| black_box(&theirs).matches(black_box(&miss)))
    });
    group.finish();
}

fn to_string(c: &mut Criterion) {
    let ours = Selector::parse(SELECTOR).unwrap();
    let theirs = kube_built();
    let mut group = c.benchmark_group("selector_to_string");
    group.bench_function("kubegen", |b| b.iter(|| black_box(&ours).to_string()));
    group.bench_function("kube_core", |b| b.iter(|| black_box(&theirs).to_string()));
    group.finish();
}

criterion_group!(benches, construct, matching, to_string);
criterion_main!(benches);
