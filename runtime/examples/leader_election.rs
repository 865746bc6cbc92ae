//! Three candidates compete for one Lease on the in-memory API server: one leads; when it
//! is cancelled (without releasing), another takes over once the lease has expired; when
//! that one is cancelled with `release_on_cancel`, the last one takes over at its next
//! attempt.
//!
//! The clock is tokio's paused clock, so the demo's 40-odd seconds of election take no
//! wall time and the printed times are the election's own. Run it with:
//!
//! ```text
//! cargo run -p kubegen-runtime --example leader_election --features testing
//! ```

use std::time::Duration;

use kubegen_runtime::leaderelection::{
    LeaderCallbacks, LeaderElectionOptions, LeaderElector, LeaseLock,
};
use kubegen_runtime::testing::ApiServer;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const LEASES: &str = "leases.coordination.k8s.io";

struct Candidate {
    id: &'static str,
    elector: LeaderElector,
    stop: CancellationToken,
    run: tokio::task::JoinHandle<()>,
}

fn log(start: Instant, who: &str, what: &str) {
    println!(
        "[t={:>5.1}s] {who:<6} {what}",
        start.elapsed().as_secs_f64()
    );
}

fn candidate(
    client: &kube::Client,
    id: &'static str,
    release_on_cancel: bool,
    start: Instant,
    leading_tx: mpsc::UnboundedSender<&'static str>,
) -> Candidate {
    let lock = LeaseLock::new(client.clone(), "default", "demo-controller", id);
    let callbacks = LeaderCallbacks::new()
        .on_started_leading(move |leading: CancellationToken| {
            let tx = leading_tx.clone();
            async move {
                log(start, id, "started leading");
                let _ = tx.send(id);
                // The controller's work would run here until leadership ends.
                leading.cancelled().await;
                log(start, id, "leadership ended: work stopped");
            }
        })
        .on_stopped_leading(move || log(start, id, "run returned (on_stopped_leading)"))
        .on_new_leader(move |holder| {
            let holder = if holder.is_empty() {
                "<nobody>"
            } else {
                holder
            };
            log(start, id, &format!("observes leader {holder}"));
        });
    let config = LeaderElectionOptions::new(lock)
        .callbacks(callbacks)
        .release_on_cancel(release_on_cancel);
    let elector = LeaderElector::new(config).expect("the default durations are valid");
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (elector, stop) = (elector.clone(), stop.clone());
        async move { elector.run(stop).await }
    });
    Candidate {
        id,
        elector,
        stop,
        run,
    }
}

fn print_lease(server: &ApiServer, start: Instant) {
    if let Ok(Some(lease)) = server.get(LEASES, "default", "demo-controller") {
        let spec = &lease["spec"];
        log(
            start,
            "lease",
            &format!(
                "holder={:?} leaseDurationSeconds={} transitions={} renewTime={}",
                spec["holderIdentity"].as_str().unwrap_or(""),
                spec["leaseDurationSeconds"],
                spec["leaseTransitions"],
                spec["renewTime"].as_str().unwrap_or("-"),
            ),
        );
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), "default");
    let start = Instant::now();
    let (leading_tx, mut leading) = mpsc::unbounded_channel();

    println!("lease 15s, renew deadline 10s, retry period 2s (client-go's defaults)\n");
    let mut candidates = vec![candidate(
        &client,
        "alpha",
        false,
        start,
        leading_tx.clone(),
    )];
    tokio::time::sleep(Duration::from_millis(500)).await;
    candidates.push(candidate(&client, "beta", true, start, leading_tx.clone()));
    candidates.push(candidate(&client, "gamma", true, start, leading_tx));

    let first = leading.recv().await.expect("someone leads");
    tokio::time::sleep(Duration::from_secs(8)).await;
    print_lease(&server, start);
    for c in &candidates {
        log(
            start,
            c.id,
            &format!(
                "is_leading={} sees leader {}",
                c.elector.is_leading(),
                c.elector.get_leader()
            ),
        );
    }

    println!("\n--- cancelling {first} (no release): the others wait for the lease to expire\n");
    let i = candidates.iter().position(|c| c.id == first).unwrap_or(0);
    let gone = candidates.remove(i);
    gone.stop.cancel();
    let _ = gone.run.await;
    let second = leading.recv().await.expect("someone takes over");
    print_lease(&server, start);

    println!("\n--- cancelling {second} (release_on_cancel): the last one takes over at once\n");
    let i = candidates.iter().position(|c| c.id == second).unwrap_or(0);
    let gone = candidates.remove(i);
    gone.stop.cancel();
    let _ = gone.run.await;
    print_lease(&server, start);
    let third = leading.recv().await.expect("the last one takes over");
    print_lease(&server, start);

    println!("\n--- cancelling {third} (release_on_cancel)\n");
    for c in candidates {
        c.stop.cancel();
        let _ = c.run.await;
    }
    print_lease(&server, start);
    println!("\nleaders in turn: {first}, {second}, {third}");
}
