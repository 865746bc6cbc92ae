//! `bench-cel`: what the CEL validation rules of the CRD corpus cost a custom resource
//! create on the in-memory API server.
//!
//! Every CRD of `--crds` is registered on two servers: one as written, one with every
//! `x-kubernetes-validations` removed (CEL off). For each CRD's first served version the
//! differential suite's synthesizer makes a valid object; the objects both servers
//! accept are then created `--rounds` times on each (through the admin API, so the
//! figure is admission: pruning, defaulting, schema validation and, on the first server,
//! the CEL rules; not HTTP), alternating which server goes first. It prints the create
//! throughput of each server and the ratio of their times, over all objects and over
//! the objects whose CRD has rules.
//!
//! Run it optimised: `cargo run --release -p kubegen-benchmarks --bin bench-cel`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use kubegen_runtime::testing::ApiServer;
use serde_json::{json, Value};

// The differential suite's object synthesizer (only `valid` is used here).
#[allow(dead_code)]
#[path = "../../../tests/src/bin/differential/synth.rs"]
mod synth;

#[derive(Parser)]
struct Args {
    /// The directory of CRD YAML files.
    #[arg(long, default_value = "../shared/crds")]
    crds: PathBuf,
    /// How many times each object is created on each server.
    #[arg(long, default_value_t = 30)]
    rounds: usize,
}

/// One object to create: its resource (`plural.group`) and body, and whether its CRD
/// has CEL rules.
struct Case {
    resource: String,
    body: Value,
    has_rules: bool,
}

fn strip_rules(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("x-kubernetes-validations");
            m.values_mut().for_each(strip_rules);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_rules),
        _ => {}
    }
}

fn crds(dir: &PathBuf) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| {
            panic!(
                "cannot read the CRD directory {}: {e} (pass --crds)",
                dir.display()
            )
        })
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let Ok(yaml) = <serde_yaml::Value as serde::Deserialize>::deserialize(doc) else {
                continue;
            };
            let Ok(v) = serde_json::to_value(&yaml) else {
                continue;
            };
            if v.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
                out.push(v);
            }
        }
    }
    out
}

fn case_of(crd: &Value) -> Option<Case> {
    let spec = crd.get("spec")?;
    let group = spec.get("group")?.as_str()?;
    let plural = spec.pointer("/names/plural")?.as_str()?;
    let kind = spec.pointer("/names/kind")?.as_str()?;
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    let version = spec
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("served").and_then(Value::as_bool) != Some(false))?;
    let schema = version.pointer("/schema/openAPIV3Schema")?;
    let mut body = synth::valid(schema, 0);
    let obj = body.as_object_mut()?;
    obj.insert(
        "apiVersion".into(),
        json!(format!("{group}/{}", version.get("name")?.as_str()?)),
    );
    obj.insert("kind".into(), json!(kind));
    let mut meta = json!({"name": "probe"});
    if namespaced {
        meta["namespace"] = json!("default");
    }
    obj.insert("metadata".into(), meta);
    Some(Case {
        resource: format!("{plural}.{group}"),
        body,
        has_rules: crd.to_string().contains("x-kubernetes-validations"),
    })
}

fn with_name(body: &Value, name: &str) -> Value {
    let mut b = body.clone();
    b["metadata"]["name"] = json!(name);
    b
}

/// Creates every case once on `server` under names of round `r`.
fn round(server: &ApiServer, cases: &[&Case], r: usize) -> Duration {
    let start = Instant::now();
    for (i, c) in cases.iter().enumerate() {
        let obj = with_name(&c.body, &format!("o-{r}-{i}"));
        if let Err(e) = server.create(&c.resource, obj) {
            panic!(
                "{}: a create accepted before failed: {}",
                c.resource,
                e.message()
            );
        }
    }
    start.elapsed()
}

fn measure(on: &ApiServer, off: &ApiServer, cases: &[&Case], rounds: usize, what: &str) {
    let (mut t_on, mut t_off) = (Duration::ZERO, Duration::ZERO);
    for r in 0..rounds {
        if r % 2 == 0 {
            t_on += round(on, cases, r);
            t_off += round(off, cases, r);
        } else {
            t_off += round(off, cases, r);
            t_on += round(on, cases, r);
        }
    }
    let n = (cases.len() * rounds) as f64;
    println!(
        "{what}: {} objects x {rounds} rounds: CEL off {:.0} creates/s, CEL on {:.0} creates/s, time ratio on/off {:.2}",
        cases.len(),
        n / t_off.as_secs_f64(),
        n / t_on.as_secs_f64(),
        t_on.as_secs_f64() / t_off.as_secs_f64()
    );
}

fn main() {
    let args = Args::parse();
    let on = ApiServer::builder().history_limit(16).build();
    let off = ApiServer::builder().history_limit(16).build();
    let mut cases = Vec::new();
    let all = crds(&args.crds);
    for crd in &all {
        let mut stripped = crd.clone();
        strip_rules(&mut stripped);
        let (a, b) = (
            on.register_crd(&crd.to_string()),
            off.register_crd(&stripped.to_string()),
        );
        if a.is_err() || b.is_err() {
            continue;
        }
        let Some(c) = case_of(crd) else { continue };
        let probe = |s: &ApiServer| s.create(&c.resource, with_name(&c.body, "probe")).is_ok();
        if probe(&on) && probe(&off) {
            cases.push(c);
        }
    }
    println!(
        "bench-cel: {} CRDs, {} valid objects accepted by both servers ({} with CEL rules)",
        all.len(),
        cases.len(),
        cases.iter().filter(|c| c.has_rules).count()
    );
    let every: Vec<&Case> = cases.iter().collect();
    measure(&on, &off, &every, args.rounds, "all CRDs");
    let ruled: Vec<&Case> = cases.iter().filter(|c| c.has_rules).collect();
    measure(&on, &off, &ruled, args.rounds, "CRDs with rules");
}
