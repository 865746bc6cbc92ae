//! A tiny run of the whole benchmark (200 Pods, 200 events, the forced relist, every
//! Rust client and the decode floor) so that it keeps working; the figures themselves are
//! not checked. The client-go peer is left out here (it needs `go build` of client-go;
//! `hack/bench-informer.sh` builds and runs it).

use std::process::Command;

#[test]
fn informer_bench_runs_end_to_end_on_200_pods() {
    let out = Command::new(env!("CARGO_BIN_EXE_informer-bench"))
        .args(["--pods", "200", "--timeout", "120"])
        .args(["--server-bin", env!("CARGO_BIN_EXE_bench-server")])
        .args(["--client-bin", env!("CARGO_BIN_EXE_bench-client")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for label in [
        "(a) kubegen typed informer (compact cache)",
        "(b) kube-runtime",
        "(c) kube-runtime",
        "(d) kubegen metadata",
        "(e) kube-runtime metadata_watcher",
        "(h) kubegen projection informer",
        "(i) kubegen, k8s-openapi Pod cached",
        "decode floor",
        "ratio (a)/kube ",
        "ratio (d)/ours ",
        "ratio (h)/ours ",
        "ratio (i)/ours ",
        "ratio (i)/kube ",
    ] {
        assert!(stdout.contains(label), "{label} missing from:\n{stdout}");
    }
    // Every client's row ends with its relist's peak over its steady state ("1.05x").
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with('(') && l.as_bytes().get(2) == Some(&b')'))
        .collect();
    assert!(rows.len() >= 6, "{stdout}");
    for row in rows {
        let relist = row.split_whitespace().rev().nth(1).unwrap_or("");
        assert!(relist.ends_with('x'), "no relist figure in {row:?}");
    }
}
