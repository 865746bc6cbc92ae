//! Raw speed of the in-memory API server, measured alone over TCP with a raw HTTP/1.1
//! reader (no client-side decoding):
//!
//! - list: bytes/s of `GET /api/v1/pods` (all pages at once) over N ~5 KiB pods;
//! - watch: events/s delivered to one raw watch reader while the admin API emits
//!   MODIFIED changes at full speed;
//! - memory: resident bytes per stored object (the process's RSS growth while seeding,
//!   over the number of objects).
//!
//! Run: `cargo bench -p kubegen-runtime --features testing --bench apiserver`
//! (env `APISERVER_BENCH_PODS`, default 100000; `APISERVER_BENCH_EVENTS`, default 500000).

use std::time::{Duration, Instant};

use kubegen_runtime::testing::ApiServer;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// This process's resident set size in bytes (`VmRSS`), 0 where `/proc` lacks it.
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line["VmRSS:".len()..]
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

fn pod(i: usize) -> serde_json::Value {
    json!({
        "metadata": {
            "name": format!("pod-{i:07}"),
            "namespace": format!("ns-{}", i % 10),
            "labels": {"app": format!("app-{}", i % 100), "tier": "backend", "team": "platform"},
            "annotations": {"example.com/blob": "x".repeat(3600)},
        },
        "spec": {
            "nodeName": format!("node-{}", i % 50),
            "containers": [{
                "name": "main",
                "image": "registry.example.com/team/app:v1.2.3",
                "args": ["--port=8080", "--verbose", "--config=/etc/app/config.yaml"],
                "env": (0..12).map(|j| json!({"name": format!("VAR_{j}"), "value": format!("value-{j}-{i}")})).collect::<Vec<_>>(),
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            }],
        },
        "status": {"phase": "Running", "podIP": format!("10.0.{}.{}", (i / 256) % 256, i % 256)},
    })
}

async fn get_raw(addr: std::net::SocketAddr, path: &str) -> (usize, Duration) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let start = Instant::now();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        total += n;
    }
    (total, start.elapsed())
}

/// Counts `}\n` (the end of a watch frame; JSON text never holds a raw newline and
/// chunk-size lines end in `\r\n`), eight bytes at a time so that the reader is not the
/// bottleneck. `before` is the byte preceding `chunk`.
fn count_frame_ends(chunk: &[u8], before: u8) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut count = 0;
    let mut check = |i: usize| {
        let prev = if i == 0 { before } else { chunk[i - 1] };
        if chunk[i] == b'\n' && prev == b'}' {
            count += 1;
        }
    };
    let words = chunk.len() / 8;
    for w in 0..words {
        let mut b = [0u8; 8];
        b.copy_from_slice(&chunk[w * 8..w * 8 + 8]);
        let x = u64::from_ne_bytes(b) ^ NL;
        if (x.wrapping_sub(ONES) & !x & HIGHS) != 0 {
            for i in w * 8..w * 8 + 8 {
                check(i);
            }
        }
    }
    for i in words * 8..chunk.len() {
        check(i);
    }
    count
}

fn main() {
    let pods = env_or("APISERVER_BENCH_PODS", 100_000);
    let events = env_or("APISERVER_BENCH_EVENTS", 500_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let server = ApiServer::builder().history_limit(60_000).build();
        let rss_before = rss_bytes();
        let t = Instant::now();
        server.seed("pods", pods, pod).unwrap();
        let stored = rss_bytes().saturating_sub(rss_before);
        let sample = serde_json::to_vec(&server.get("pods", "ns-1", "pod-0000001").unwrap().unwrap()).unwrap();
        println!(
            "seeded {pods} pods of {} bytes in {:.2?} ({:.0} creates/s)",
            sample.len(),
            t.elapsed(),
            pods as f64 / t.elapsed().as_secs_f64()
        );
        println!(
            "memory: {:.0} MiB resident for {pods} pods = {:.0} bytes per stored object ({:.2}x its JSON)",
            stored as f64 / (1024.0 * 1024.0),
            stored as f64 / pods as f64,
            stored as f64 / pods as f64 / sample.len() as f64
        );
        let tcp = server.serve_tcp().await.unwrap();
        let addr = tcp.addr();

        // List: the whole collection in one response.
        let mut rates = Vec::new();
        for _ in 0..5 {
            let (bytes, took) = get_raw(addr, "/api/v1/pods").await;
            rates.push(bytes as f64 / took.as_secs_f64());
            println!("list: {bytes} bytes in {took:.2?} = {:.2} GB/s", bytes as f64 / took.as_secs_f64() / 1e9);
        }
        rates.sort_by(f64::total_cmp);
        println!("list median: {:.2} GB/s", rates[rates.len() / 2] / 1e9);

        // The admin API's write rate alone, without watchers.
        let t = Instant::now();
        server.emit_modifications("pods", 200_000).unwrap();
        println!(
            "emit: 200000 modifications in {:.2?} ({:.0}/s)",
            t.elapsed(),
            200_000.0 / t.elapsed().as_secs_f64()
        );
        server.compact();

        // Watch: one raw reader counting frames while the admin API emits changes.
        let rv = server.resource_version();
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET /api/v1/pods?watch=true&resourceVersion={rv} HTTP/1.1\r\nHost: bench\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen_r = seen.clone();
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; 1 << 20];
            let mut last = 0u8;
            let mut frames = 0usize;
            let mut bytes = 0usize;
            while frames < events {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "watch ended early after {frames} frames");
                bytes += n;
                frames += count_frame_ends(&buf[..n], last);
                last = buf[n - 1];
                seen_r.store(frames, std::sync::atomic::Ordering::Relaxed);
            }
            bytes
        });
        let start = Instant::now();
        let writer = {
            let server = server.clone();
            let seen = seen.clone();
            tokio::task::spawn_blocking(move || {
                let batch = 10_000;
                let mut emitted = 0;
                while emitted < events {
                    // Keep the writer within the history of the reader, as a real
                    // server's watch cache would.
                    while emitted - seen.load(std::sync::atomic::Ordering::Relaxed) > 50_000 - batch {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    let n = batch.min(events - emitted);
                    server.emit_modifications("pods", n).unwrap();
                    emitted += n;
                }
            })
        };
        writer.await.unwrap();
        let bytes = reader.await.unwrap();
        let took = start.elapsed();
        println!(
            "watch: {events} events ({bytes} bytes) delivered in {took:.2?} = {:.0} events/s ({:.2} GB/s)",
            events as f64 / took.as_secs_f64(),
            bytes as f64 / took.as_secs_f64() / 1e9
        );
        tcp.shutdown().await;
    });
}
