//! A tiny run of the whole benchmark (200 Pods, 200 events, every client) so that it
//! keeps working; the figures themselves are not checked.

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
        "(a) kubegen",
        "(b) kube-runtime",
        "(c) kube-runtime",
        "(d) kubegen metadata",
        "(e) kube-runtime metadata_watcher",
        "ratio (a)/kube ",
        "ratio (d)/ours ",
    ] {
        assert!(stdout.contains(label), "{label} missing from:\n{stdout}");
    }
}
