//! How much memory the in-memory API server's watch history holds after many writes,
//! with the default byte bound ([`ApiServerBuilder::history_bytes`], 64 MiB per resource)
//! and without it (only the count bound of 100 000 changes, as before the byte bound).
//!
//! ```text
//! cargo run -p kubegen-runtime --example history_memory --features testing -- default
//! cargo run -p kubegen-runtime --example history_memory --features testing -- unbounded
//! ```
//!
//! Each run makes 100 000 updates, round-robin over 100 ConfigMaps of about 4 KiB each
//! (arguments 2 and 3 change the count and the size), and prints the process's resident
//! memory (Linux `VmRSS`) before and after. Run each mode in its own process: an
//! allocator rarely gives freed memory back, so one process cannot measure both.
//!
//! [`ApiServerBuilder::history_bytes`]: kubegen_runtime::testing::ApiServerBuilder::history_bytes

use std::error::Error;

use kubegen_runtime::testing::ApiServer;
use serde_json::json;

/// The resident set size in MiB (0 where `/proc` is missing).
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("default", String::as_str);
    let writes: usize = args.get(2).map_or(Ok(100_000), |a| a.parse())?;
    let size: usize = args.get(3).map_or(Ok(4096), |a| a.parse())?;
    let builder = ApiServer::builder();
    let server = match mode {
        "default" => builder.build(),
        "unbounded" => builder.history_bytes(usize::MAX).build(),
        other => return Err(format!("mode {other:?}: use default or unbounded").into()),
    };
    let before = rss_mib();
    let objects = 100;
    for i in 0..writes {
        let name = format!("cm-{}", i % objects);
        // Vary the payload so every version is a distinct allocation.
        let payload = format!("{i:08}{}", "x".repeat(size.saturating_sub(8)));
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"payload": payload}});
        if i < objects {
            server.create("configmaps", cm)?;
        } else {
            server.update("configmaps", cm)?;
        }
    }
    let after = rss_mib();
    println!(
        "mode={mode} writes={writes} object_bytes~{size}: rss before {before:.1} MiB, after {after:.1} MiB (+{:.1} MiB)",
        after - before
    );
    Ok(())
}
