//! The benchmark's server process against a real kube-apiserver (`informer-bench
//! --real`): seeds the cluster named by `--kubeconfig` with `--pods` Pods made by the
//! benchmark's generator, then drives it by lines on stdin, as `bench-server` drives the
//! in-memory server.
//!
//! Seeding: for each of the generator's namespaces it creates the namespace and its
//! `default` ServiceAccount (the ServiceAccount admission plugin rejects Pods without
//! it; a running controller manager may have made it already), lists the Pods already
//! there, deletes those the generator does not name (grace period 0: no kubelet would
//! ever confirm a graceful deletion), and creates the missing ones: the generator's Pod
//! without `uid` and `creationTimestamp` (the server sets them) and with the label
//! `bench-emit: "0"` (so that every round sees Pods of the same shape: `emit` sets it),
//! then its `status` through the status subresource (a create resets it to Pending).
//! At most `--concurrency` requests are in flight; progress goes to stderr. Pods an
//! earlier run left behind (`--keep`) are reused.
//!
//! Protocol: prints `POD-BYTES <n>` (the JSON size of one seeded Pod as the server
//! returns it: its managedFields are the server's, not the generator's) and `READY
//! <kubeconfig path>` once seeded; then for each stdin line
//! `emit <m>` it merge-patches the label `bench-emit` of `m` Pods (round robin over the
//! seeded ones, a new value each time, `--concurrency` in flight): `m` MODIFIED events;
//! and prints `EMITTED <rv>`, the highest resourceVersion the patches returned. A real
//! server cannot be made to answer 410 on demand: `relist` is refused (on stderr).
//! `quit` or the end of stdin stops it; unless `--keep`, it first deletes the Pods (grace
//! period 0), the ServiceAccounts and the namespaces (finalizing them itself when no
//! namespace controller does).

use std::collections::HashSet;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use kubegen_benchmarks::NAMESPACES;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Parser)]
struct Args {
    /// The real cluster's kubeconfig.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// How many Pods to seed.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
    /// Requests in flight while seeding and emitting.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Leave the Pods and namespaces in place at the end (a later run reuses them).
    #[arg(long)]
    keep: bool,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

const MANAGER: &str = "bench-real-server";
const MERGE: &str = "application/merge-patch+json";

/// The few fields of an object or list this process reads.
#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    metadata: MetaFields,
    /// `null` in an empty list.
    #[serde(default)]
    items: Option<Vec<Item>>,
}

#[derive(Deserialize, Default)]
struct MetaFields {
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

#[derive(Deserialize)]
struct Item {
    metadata: ItemMeta,
}

#[derive(Deserialize)]
struct ItemMeta {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
}

/// One request; the body is JSON (or a patch of `content_type`).
async fn call(
    client: &kube::Client,
    method: http::Method,
    path: &str,
    content_type: &str,
    body: Option<&Value>,
) -> Result<String, kube::Error> {
    let bytes = match body {
        Some(v) => serde_json::to_vec(v).map_err(kube::Error::SerdeError)?,
        None => Vec::new(),
    };
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(bytes)
        .map_err(kube::Error::HttpError)?;
    client.request_text(req).await
}

fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Creates `body` at `path`; an object already there is fine.
async fn ensure(client: &kube::Client, path: &str, body: Value) -> Result<(), Error> {
    match call(
        client,
        http::Method::POST,
        path,
        "application/json",
        Some(&body),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(e) if code(&e) == Some(409) => Ok(()),
        Err(e) => Err(format!("POST {path}: {e}").into()),
    }
}

fn namespace_of(i: usize) -> String {
    format!("team-{:02}", i % NAMESPACES)
}

fn namespaces(pods: usize) -> Vec<String> {
    (0..pods.clamp(1, NAMESPACES)).map(namespace_of).collect()
}

/// `namespace/name` of every Pod in the benchmark's namespaces.
async fn existing_pods(client: &kube::Client, pods: usize) -> Result<Vec<String>, Error> {
    let mut keys = Vec::new();
    for ns in namespaces(pods) {
        let mut token: Option<String> = None;
        loop {
            let mut path = format!("/api/v1/namespaces/{ns}/pods?limit=500");
            if let Some(t) = &token {
                path.push_str("&continue=");
                path.push_str(t);
            }
            // Only the names are read; the metadata-only form keeps the pages small.
            let req = http::Request::get(&path)
                .header(
                    http::header::ACCEPT,
                    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json",
                )
                .body(Vec::new())?;
            let page: Meta = serde_json::from_str(&client.request_text(req).await?)?;
            keys.extend(page.items.into_iter().flatten().map(|it| {
                format!(
                    "{}/{}",
                    it.metadata.namespace.as_deref().unwrap_or(&ns),
                    it.metadata.name
                )
            }));
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
        }
    }
    Ok(keys)
}

/// Prints progress on stderr every two seconds and at the end.
/// Runs `op` on every item with at most `concurrency` in flight, reporting progress as
/// `what`; the first error ends the run.
async fn each_bounded<T, F, Fut>(
    what: &'static str,
    items: Vec<T>,
    concurrency: usize,
    op: F,
) -> Result<(), Error>
where
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = Result<(), Error>>,
{
    if items.is_empty() {
        return Ok(());
    }
    let progress = Progress::new(what, items.len());
    futures::stream::iter(items)
        .map(|item| {
            let (progress, fut) = (&progress, op(item));
            async move {
                fut.await?;
                progress.tick();
                Ok::<_, Error>(())
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

struct Progress {
    what: &'static str,
    total: usize,
    done: AtomicUsize,
    start: Instant,
    last: std::sync::Mutex<Instant>,
}

impl Progress {
    fn new(what: &'static str, total: usize) -> Progress {
        let now = Instant::now();
        Progress {
            what,
            total,
            done: AtomicUsize::new(0),
            start: now,
            last: std::sync::Mutex::new(now),
        }
    }

    fn tick(&self) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        if n == self.total || last.elapsed() >= Duration::from_secs(2) {
            *last = Instant::now();
            let secs = self.start.elapsed().as_secs_f64();
            eprintln!(
                "bench-real-server: {} {n}/{} in {secs:.1} s ({:.0}/s)",
                self.what,
                self.total,
                n as f64 / secs.max(1e-9)
            );
        }
    }
}

/// Creates Pod `i` and sets its status.
async fn create_pod(client: &kube::Client, i: usize) -> Result<(), Error> {
    let mut pod = kubegen_benchmarks::pod(i);
    let status = pod["status"].take();
    if let Some(obj) = pod.as_object_mut() {
        obj.remove("status");
    }
    let (ns, name) = {
        let meta = pod["metadata"]
            .as_object_mut()
            .ok_or("the generator's Pod has no metadata")?;
        meta.remove("uid");
        meta.remove("creationTimestamp");
        if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            labels.insert("bench-emit".to_owned(), json!("0"));
        }
        (
            meta.get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            meta.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        )
    };
    let path = format!("/api/v1/namespaces/{ns}/pods?fieldManager={MANAGER}");
    match call(
        client,
        http::Method::POST,
        &path,
        "application/json",
        Some(&pod),
    )
    .await
    {
        Ok(_) => {}
        // Created by an earlier attempt: its status is set below all the same.
        Err(e) if code(&e) == Some(409) => {}
        Err(e) => return Err(format!("creating {ns}/{name}: {e}").into()),
    }
    let path = format!("/api/v1/namespaces/{ns}/pods/{name}/status?fieldManager={MANAGER}");
    call(
        client,
        http::Method::PATCH,
        &path,
        MERGE,
        Some(&json!({ "status": status })),
    )
    .await
    .map_err(|e| format!("setting the status of {ns}/{name}: {e}"))?;
    Ok(())
}

/// Deletes one Pod at once (grace period 0).
async fn delete_pod(client: &kube::Client, key: &str) -> Result<(), Error> {
    let (ns, name) = key.split_once('/').ok_or("a Pod key without namespace")?;
    let path = format!("/api/v1/namespaces/{ns}/pods/{name}?gracePeriodSeconds=0");
    match call(
        client,
        http::Method::DELETE,
        &path,
        "application/json",
        None,
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(e) if code(&e) == Some(404) => Ok(()),
        Err(e) => Err(format!("deleting {key}: {e}").into()),
    }
}

/// Seeds the Pods; returns the size of one as the server returns it, in bytes of JSON.
async fn seed(client: &kube::Client, args: &Args) -> Result<usize, Error> {
    let t0 = Instant::now();
    for ns in namespaces(args.pods) {
        ensure(
            client,
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
        ensure(
            client,
            &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}),
        )
        .await?;
    }
    let existing = existing_pods(client, args.pods).await?;
    let wanted: HashSet<String> = (0..args.pods).map(pod_key).collect();
    let have: HashSet<&str> = existing.iter().map(String::as_str).collect();
    let extra: Vec<&String> = existing.iter().filter(|k| !wanted.contains(*k)).collect();
    let missing: Vec<usize> = (0..args.pods)
        .filter(|i| !have.contains(pod_key(*i).as_str()))
        .collect();
    eprintln!(
        "bench-real-server: {} Pods there, {} to create, {} to delete",
        existing.len(),
        missing.len(),
        extra.len()
    );
    each_bounded("deleted", extra, args.concurrency, |key| {
        delete_pod(client, key)
    })
    .await?;
    each_bounded("seeded", missing, args.concurrency, |i| {
        create_pod(client, i)
    })
    .await?;
    // One object as the server holds it, for the record.
    let ns = namespace_of(0);
    let name = pod_key(0)
        .split_once('/')
        .map(|(_, n)| n.to_owned())
        .unwrap_or_default();
    let one = call(
        client,
        http::Method::GET,
        &format!("/api/v1/namespaces/{ns}/pods/{name}"),
        "application/json",
        None,
    )
    .await?;
    eprintln!(
        "bench-real-server: {} Pods ready in {:.1} s; one is {} bytes of JSON as the server returns it",
        args.pods,
        t0.elapsed().as_secs_f64(),
        one.len()
    );
    Ok(one.len())
}

fn pod_key(i: usize) -> String {
    let pod = kubegen_benchmarks::pod(i);
    let meta = &pod["metadata"];
    format!(
        "{}/{}",
        meta["namespace"].as_str().unwrap_or_default(),
        meta["name"].as_str().unwrap_or_default()
    )
}

/// `m` merge patches of the label `bench-emit`, round robin over the seeded Pods; the
/// highest resourceVersion they returned.
async fn emit(
    client: &kube::Client,
    keys: &[String],
    round: &str,
    m: usize,
    concurrency: usize,
) -> Result<u64, Error> {
    if keys.is_empty() {
        return Err("no Pods to modify".into());
    }
    let max_rv = Arc::new(std::sync::atomic::AtomicU64::new(0));
    futures::stream::iter(0..m)
        .map(|k| {
            let key = &keys[k % keys.len()];
            let max_rv = max_rv.clone();
            async move {
                let (ns, name) = key.split_once('/').ok_or("a Pod key without namespace")?;
                let path = format!("/api/v1/namespaces/{ns}/pods/{name}?fieldManager={MANAGER}");
                let patch = json!({"metadata": {"labels": {"bench-emit": format!("{round}-{k}")}}});
                let body = call(client, http::Method::PATCH, &path, MERGE, Some(&patch))
                    .await
                    .map_err(|e| format!("patching {key}: {e}"))?;
                let meta: Meta = serde_json::from_str(&body)?;
                if let Some(rv) = meta
                    .metadata
                    .resource_version
                    .and_then(|rv| rv.parse::<u64>().ok())
                {
                    max_rv.fetch_max(rv, Ordering::Relaxed);
                }
                Ok::<_, Error>(())
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;
    Ok(max_rv.load(Ordering::Relaxed))
}

/// Deletes the Pods, the ServiceAccounts and the namespaces; finalizes a namespace no
/// namespace controller finalizes.
async fn clean_up(client: &kube::Client, pods: usize) -> Result<(), Error> {
    for ns in namespaces(pods) {
        let path = format!("/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0");
        call(
            client,
            http::Method::DELETE,
            &path,
            "application/json",
            None,
        )
        .await
        .map_err(|e| format!("deleting the Pods of {ns}: {e}"))?;
        let path = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
        match call(
            client,
            http::Method::DELETE,
            &path,
            "application/json",
            None,
        )
        .await
        {
            Ok(_) => {}
            Err(e) if code(&e) == Some(404) => {}
            Err(e) => return Err(format!("DELETE {path}: {e}").into()),
        }
        let path = format!("/api/v1/namespaces/{ns}");
        match call(
            client,
            http::Method::DELETE,
            &path,
            "application/json",
            None,
        )
        .await
        {
            Ok(_) => {}
            Err(e) if code(&e) == Some(404) => continue,
            Err(e) => return Err(format!("DELETE {path}: {e}").into()),
        }
        // Its content is gone: without a namespace controller (NO_KCM=1) nothing else
        // would remove the `kubernetes` finalizer.
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}, "spec": {"finalizers": []}});
        match call(
            client,
            http::Method::PUT,
            &format!("{path}/finalize"),
            "application/json",
            Some(&body),
        )
        .await
        {
            Ok(_) => {}
            Err(e) if code(&e) == Some(404) || code(&e) == Some(409) => {}
            Err(e) => return Err(format!("finalizing {ns}: {e}").into()),
        }
    }
    eprintln!("bench-real-server: deleted the benchmark's Pods and namespaces");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let kc = kube::config::Kubeconfig::read_from(&args.kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    let client = kube::Client::try_from(config)?;
    let bytes = seed(&client, &args).await?;
    let keys: Vec<String> = (0..args.pods).map(pod_key).collect();
    println!("POD-BYTES {bytes}");
    println!("READY {}", args.kubeconfig.display());

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // A value no earlier run (of Pods kept with --keep) set: a patch that changes
    // nothing makes no event.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let mut round = 0u64;
    while let Some(line) = rx.recv().await {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("emit"), Some(m)) => {
                let m: usize = m.parse()?;
                round += 1;
                let t = Instant::now();
                let rv = emit(
                    &client,
                    &keys,
                    &format!("{nonce}-{round}"),
                    m,
                    args.concurrency,
                )
                .await?;
                eprintln!(
                    "bench-real-server: {m} patches in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
                println!("EMITTED {rv}");
            }
            (Some("relist"), None) => {
                eprintln!("bench-real-server: a real server cannot be made to answer 410: no relist (run informer-bench with --no-relist)");
            }
            (Some("quit"), _) => break,
            _ => eprintln!("bench-real-server: unknown command {line:?}"),
        }
    }
    if !args.keep {
        clean_up(&client, args.pods).await?;
    }
    Ok(())
}
