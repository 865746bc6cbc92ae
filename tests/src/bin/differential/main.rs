//! The differential suite: the same requests sent to kubegen's in-memory API server and
//! to a real kube-apiserver, their answers compared, a Markdown report written.
//!
//! ```text
//! differential --kubeconfig REAL_KUBECONFIG --report docs/differential.md
//!              [--known tests/differential/known-differences.txt] [--crds DIR]
//!              [--families crd-corpus,crud,...] [--crd-limit N] [--write-known PATH]
//! ```
//!
//! Each family gets a fresh in-memory server (strict namespaces, as on a cluster) and
//! fresh namespaces on the real server, named with a per-run suffix that the report
//! leaves out, so a run repeats. `hack/differential.sh` starts the real control plane,
//! runs this and stops it.
//!
//! Exit status: 0 when the suite ran (and, with `--known`, every disagreeing case is
//! listed there); 1 with `--known` when a case disagrees that the file does not list;
//! 2 when the harness itself failed (no real server, report not written). A case that
//! errors is reported as an error, never a crash. `--write-known PATH` writes the
//! disagreeing cases of this run as the new known-differences list instead.

mod case;
mod crd_corpus;
mod families;
mod harness;
mod report;
mod synth;
#[cfg(test)]
mod tests;
mod watch;

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Instant;

use case::Case;
use harness::{Pair, Req, Side};
use kubegen_runtime::testing::ApiServer;

/// What the command line asked for.
struct Args {
    kubeconfig: String,
    report: String,
    known: Option<String>,
    crds: String,
    families: Option<Vec<String>>,
    crd_limit: Option<usize>,
    write_known: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut kubeconfig = None;
    let mut report = None;
    let mut known = None;
    let mut crds = None;
    let mut families = None;
    let mut crd_limit = None;
    let mut write_known = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--kubeconfig" => kubeconfig = Some(val()?),
            "--report" => report = Some(val()?),
            "--known" => known = Some(val()?),
            "--write-known" => write_known = Some(val()?),
            "--crds" => crds = Some(val()?),
            "--families" => {
                families = Some(val()?.split(',').map(str::to_owned).collect());
            }
            "--crd-limit" => {
                crd_limit = Some(val()?.parse().map_err(|e| format!("--crd-limit: {e}"))?);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        kubeconfig: kubeconfig.ok_or("--kubeconfig is required")?,
        report: report.ok_or("--report is required")?,
        known,
        crds: crds.unwrap_or_else(|| "../shared/crds".into()),
        families,
        crd_limit,
        write_known,
    })
}

async fn real_client(path: &str) -> Result<kube::Client, String> {
    let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| format!("{path}: {e}"))?;
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .map_err(|e| format!("{path}: {e}"))?;
    // Every answer as the server sent it: no retries of 429/503/504.
    config.default_retry = false;
    kube::Client::try_from(config).map_err(|e| format!("{path}: {e}"))
}

/// A fresh in-memory server, on its own thread and runtime and reached over TCP, so
/// that a server that stalls (a lock held, a busy loop) makes requests time out instead
/// of stopping the harness. Stopped when dropped.
pub struct MemServer {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for MemServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// A fresh in-memory server and the pair it makes with the real one.
pub async fn fresh_pair(real: &Side) -> Result<(MemServer, Pair), String> {
    let (config_tx, config_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = config_tx.send(Err(format!("a runtime for the in-memory server: {e}")));
                return;
            }
        };
        rt.block_on(async move {
            let server = ApiServer::builder().strict_namespaces(true).build();
            let tcp = match server.serve_tcp().await {
                Ok(t) => t,
                Err(e) => {
                    let _ = config_tx.send(Err(format!("serving the in-memory server: {e}")));
                    return;
                }
            };
            let config = tcp.config().await.map_err(|e| e.to_string());
            let _ = config_tx.send(config);
            let _ = stop_rx.await;
            tcp.shutdown().await;
        });
    });
    let mut config = config_rx
        .await
        .map_err(|_| "the in-memory server's thread ended".to_owned())??;
    config.default_retry = false;
    let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
    let pair = Pair {
        mem: Side { client },
        real: real.clone(),
    };
    Ok((
        MemServer {
            stop: Some(stop_tx),
        },
        pair,
    ))
}

/// The per-run suffix of namespace names on the real server.
pub fn run_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
            .unwrap_or(0);
        format!("{:05x}", nanos & 0xfffff)
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("differential: {e}");
            return ExitCode::from(2);
        }
    };
    let real = match real_client(&args.kubeconfig).await {
        Ok(c) => Side { client: c },
        Err(e) => {
            eprintln!("differential: {e}");
            return ExitCode::from(2);
        }
    };
    let version = real.send(&Req::get("/version")).await;
    if !version.ok() {
        eprintln!(
            "differential: the real server does not answer /version: {}",
            version.summary()
        );
        return ExitCode::from(2);
    }
    let real_version = version.body["gitVersion"]
        .as_str()
        .unwrap_or("unknown")
        .to_owned();
    let started = Instant::now();
    let mut cases: Vec<Case> = Vec::new();
    let mut timings = Vec::new();
    for family in families::ALL {
        if let Some(only) = &args.families {
            if !only.iter().any(|f| f == family.name) {
                continue;
            }
        }
        let t = Instant::now();
        eprintln!("differential: {} ...", family.name);
        let ctx = families::Ctx {
            real: real.clone(),
            crds: args.crds.clone(),
            crd_limit: args.crd_limit,
        };
        let got = (family.run)(ctx).await;
        if std::env::var_os("DIFFERENTIAL_VERBOSE").is_some() {
            for c in &got {
                eprintln!(
                    "  case {}: {}",
                    c.name,
                    if c.agrees() { "agrees" } else { "differs" }
                );
                for s in &c.steps {
                    eprintln!(
                        "    {:?} {} | mem {} | real {}",
                        s.verdict, s.request, s.mem, s.real
                    );
                }
            }
        }
        let agree = got.iter().filter(|c| c.agrees()).count();
        eprintln!(
            "differential: {}: {agree}/{} agree ({:.1}s)",
            family.name,
            got.len(),
            t.elapsed().as_secs_f64()
        );
        timings.push((family.name, t.elapsed()));
        cases.extend(got);
    }
    let known_text = match &args.known {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!("differential: {path}: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let known = known_text.as_deref().map(report::parse_known);
    let reasons = known_text
        .as_deref()
        .map(report::known_reasons)
        .unwrap_or_default();
    let text = report::render(&cases, &real_version, started.elapsed(), &timings, &reasons);
    if let Err(e) = std::fs::write(&args.report, text) {
        eprintln!("differential: writing {}: {e}", args.report);
        return ExitCode::from(2);
    }
    eprintln!(
        "differential: wrote {} in {:.0}s",
        args.report,
        started.elapsed().as_secs_f64()
    );
    let disagreeing: BTreeSet<String> = cases
        .iter()
        .filter(|c| !c.agrees())
        .map(report::key)
        .collect();
    if let Some(path) = &args.write_known {
        if let Err(e) = std::fs::write(path, report::render_known(&disagreeing, &reasons)) {
            eprintln!("differential: writing {path}: {e}");
            return ExitCode::from(2);
        }
        eprintln!(
            "differential: wrote {} known differences to {path}",
            disagreeing.len()
        );
        return ExitCode::SUCCESS;
    }
    let Some(known) = known else {
        return ExitCode::SUCCESS;
    };
    let new: Vec<&String> = disagreeing.difference(&known).collect();
    for k in known.difference(&disagreeing) {
        eprintln!("differential: now agrees (remove from the known list): {k}");
    }
    if new.is_empty() {
        ExitCode::SUCCESS
    } else {
        for k in &new {
            eprintln!("differential: new difference: {k}");
        }
        ExitCode::from(1)
    }
}
