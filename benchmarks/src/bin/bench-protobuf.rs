//! Decoding one benchmark Pod from each wire form, on one thread: what the protobuf
//! client saves (or costs) against JSON, apart from the server.
//!
//! For `--pods` Pods of the informer benchmark's generator, it writes each Pod as
//! kube-apiserver would answer it: the protobuf body (`k8s\0` envelope) and Go's JSON of
//! the same object; then times decoding every body into a k8s-openapi `Pod` three ways,
//! best of `--rounds`:
//! - `json`: `serde_json::from_slice` (the JSON client);
//! - `protobuf`: the serde `Deserializer` over protobuf (the protobuf client);
//! - `protobuf via Value`: protobuf into a `serde_json::Value`, then into `Pod` (the
//!   detour the protobuf client avoids);
//! - `protobuf, compact`: the protobuf body into the compact mirror of `Pod` through
//!   the serde `Deserializer`;
//! - `compact, generated`: the same with the mirror's generated decoder
//!   (`protobuf::fast`), what the typed informer does.
//!
//! `--only protobuf` (or `json`, `value`, `compact`, `generated`, comma-separated) times
//! only those, to profile one decode.
//!
//! Usage: `cargo run --release -p kubegen-benchmarks --bin bench-protobuf -- --pods 20000`

use std::time::Instant;

use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kubegen_apimachinery::protobuf;
use kubegen_kubernetes::compact::core::v1::Pod as CompactPod;
use serde::de::DeserializeOwned;

#[derive(Parser)]
struct Args {
    /// How many Pods.
    #[arg(long, default_value_t = 20_000)]
    pods: usize,
    /// Timed rounds; the best is printed.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Time only these decodes (`json`, `protobuf`, `value`, `compact`, `generated`), e.g. to profile
    /// one of them; default: all.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

type Error = Box<dyn std::error::Error>;

/// The best seconds of `rounds` runs of `f` over every body (NaN for no rounds: not
/// timed).
fn best<T>(
    rounds: usize,
    bodies: &[Vec<u8>],
    f: impl Fn(&[u8]) -> Result<T, Error>,
) -> Result<f64, Error> {
    let mut best = f64::MAX;
    if rounds == 0 {
        return Ok(f64::NAN);
    }
    for _ in 0..rounds {
        let start = Instant::now();
        for b in bodies {
            std::hint::black_box(f(b)?);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// The compact Pod by its generated decoder; an error if it hands the Pod back.
fn generated(b: &[u8]) -> Result<CompactPod, Error> {
    let de = protobuf::Deserializer::object(protobuf::envelope(b)?)?;
    protobuf::fast::decode_object::<CompactPod>(de.message(), de.bytes(), false)
        .ok_or_else(|| "the generated decoder handed a Pod back".into())
}

fn json<T: DeserializeOwned>(b: &[u8]) -> Result<T, Error> {
    Ok(serde_json::from_slice(b)?)
}

fn main() -> Result<(), Error> {
    let args = Args::parse();
    let mut pb = Vec::with_capacity(args.pods);
    let mut js = Vec::with_capacity(args.pods);
    for i in 0..args.pods {
        let mut pod = kubegen_benchmarks::pod(i);
        if let Some(o) = pod.as_object_mut() {
            o.insert("apiVersion".into(), "v1".into());
            o.insert("kind".into(), "Pod".into());
        }
        let obj = pod
            .as_object()
            .ok_or("the generator's Pod is not an object")?;
        let body = protobuf::encode_object(obj)?;
        // Go's JSON of the object the protobuf stands for (what kube-apiserver writes).
        let go = protobuf::decode(&body)?;
        js.push(serde_json::to_vec(&go)?);
        pb.push(body);
    }
    // The decodes agree before they are timed.
    for (p, j) in pb.iter().zip(&js).take(100) {
        let a: Pod = protobuf::from_envelope(p)?;
        let b: Pod = json(j)?;
        if a != b {
            return Err("the protobuf and JSON decodes of a Pod differ".into());
        }
        if generated(p)? != protobuf::from_envelope::<CompactPod>(p)? {
            return Err("the generated and table-driven decodes of a Pod differ".into());
        }
    }
    let bytes = |v: &[Vec<u8>]| v.iter().map(Vec::len).sum::<usize>();
    let (pb_bytes, js_bytes) = (bytes(&pb), bytes(&js));
    let wanted = |name: &str| args.only.is_empty() || args.only.iter().any(|o| o == name);
    let rounds = |name: &str| if wanted(name) { args.rounds } else { 0 };
    let t_json = best(rounds("json"), &js, json::<Pod>)?;
    let t_pb = best(rounds("protobuf"), &pb, |b| {
        Ok(protobuf::from_envelope::<Pod>(b)?)
    })?;
    let t_value = best(rounds("value"), &pb, |b| {
        let v = protobuf::decode(b)?;
        Ok(serde_json::from_value::<Pod>(serde_json::Value::Object(v))?)
    })?;
    let t_compact = best(rounds("compact"), &pb, |b| {
        Ok(protobuf::from_envelope::<CompactPod>(b)?)
    })?;
    let t_generated = best(rounds("generated"), &pb, generated)?;
    println!(
        "{} Pods: JSON {:.0} B/Pod, protobuf {:.0} B/Pod ({:.2}x); one thread, best of {}",
        args.pods,
        js_bytes as f64 / args.pods as f64,
        pb_bytes as f64 / args.pods as f64,
        pb_bytes as f64 / js_bytes as f64,
        args.rounds
    );
    println!(
        "{:<20} {:>10} {:>10} {:>8}",
        "decode into Pod", "total s", "µs/Pod", "vs json"
    );
    for (name, t) in [
        ("json", t_json),
        ("protobuf", t_pb),
        ("protobuf via Value", t_value),
        ("protobuf, compact", t_compact),
        ("compact, generated", t_generated),
    ] {
        if t.is_nan() {
            continue;
        }
        println!(
            "{name:<20} {t:>10.3} {:>10.2} {:>7.2}x",
            t * 1e6 / args.pods as f64,
            t / t_json
        );
    }
    Ok(())
}
