//! Shared pieces of the informer benchmark: the deterministic Pod generator, the
//! client kinds, peak-RSS measurement and the line protocol between the orchestrator
//! (`informer-bench`), the server process (`bench-server`) and the client processes
//! (`bench-client`).
//!
//! Contract: [`pod`] is a pure function of its index (same index, same bytes), and the
//! Pods it makes are about 6 KiB of JSON with managedFields, labels, annotations, an
//! owner reference, two containers and status conditions. No process of the benchmark
//! sets a global allocator: all use the system default.
//!
//! It does not measure anything by itself; see the binaries.

#![deny(missing_docs)]

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::str::FromStr;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

/// The compact mirrors of the core/v1 types that kubegen generates into
/// kubegen-kubernetes: k8s-openapi's types with every optional struct field boxed, what
/// the typed informers cache by default (the `ours` client), measured by
/// `examples/pod-compact`.
pub use kubegen_kubernetes::compact::core::v1 as compact_pod;

/// The namespaces the Pods are spread over.
pub const NAMESPACES: usize = 50;

/// A deterministic, realistic Pod (about 6 KiB of JSON) for index `i`.
///
/// ```
/// let a = kubegen_benchmarks::pod(7);
/// assert_eq!(a, kubegen_benchmarks::pod(7));
/// let len = serde_json::to_vec(&a).unwrap().len();
/// assert!((4_000..7_000).contains(&len), "{len}");
/// ```
pub fn pod(i: usize) -> Value {
    let ns = format!("team-{:02}", i % NAMESPACES);
    let app = format!("service-{:03}", (i / 7) % 400);
    let hash = format!(
        "{:010x}",
        (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24
    );
    let rs = format!("{app}-{}", &hash[..9]);
    let name = format!("{rs}-{:05}", i);
    let uid = format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        i,
        i % 0xffff,
        i % 0xfff,
        (i * 7) % 0xfff,
        (i as u64).wrapping_mul(2_654_435_761)
    );
    let owner_uid = format!("{:08x}-0000-4000-8000-{:012x}", i / 7, i / 7);
    let node = format!("node-{:03}", i % 200);
    let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    let ts = "2026-11-20T10:15:30Z";
    let container = |n: &str, image: &str, port: u16| {
        json!({
            "name": n,
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "args": ["--config=/etc/app/config.yaml", "--log-level=info", format!("--instance={name}")],
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
                {"name": "APP_MODE", "value": "production"},
                {"name": "APP_REGION", "value": "eu-west-1"}
            ],
            "resources": {
                "limits": {"cpu": "500m", "memory": "512Mi"},
                "requests": {"cpu": "100m", "memory": "128Mi"}
            },
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/app", "readOnly": true},
                {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
            ],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"
        })
    };
    let status = |n: &str, image: &str| {
        json!({
            "name": n, "ready": true, "restartCount": 0, "started": true,
            "image": image, "imageID": format!("docker.io/library/{image}@sha256:{hash}{hash}{hash}"),
            "containerID": format!("containerd://{hash}{hash}{uid}"),
            "state": {"running": {"startedAt": ts}}
        })
    };
    let fields_spec = json!({
        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
            "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{owner_uid}\"}}"): {}}},
        "f:spec": {"f:containers": {
            "k:{\"name\":\"app\"}": {".": {}, "f:args": {}, "f:env": {".": {}, "k:{\"name\":\"APP_MODE\"}": {".": {}, "f:name": {}, "f:value": {}}},
                "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:ports": {}, "f:resources": {}},
            "k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}},
            "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:terminationGracePeriodSeconds": {}}
    });
    let fields_status = json!({
        "f:status": {"f:conditions": {
            "k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
            "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
            "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
            "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}
    });
    let condition = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": ts});
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": format!("{rs}-"),
            "namespace": ns,
            "uid": uid,
            "creationTimestamp": ts,
            "labels": {"app": app, "pod-template-hash": &hash[..9], "tier": if i.is_multiple_of(3) { "frontend" } else { "backend" },
                "team": format!("team-{:02}", i % NAMESPACES), "version": format!("v1.{}.{}", i % 10, i % 4)},
            "annotations": {"kubectl.kubernetes.io/restartedAt": ts, "prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": owner_uid,
                "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": ts,
                    "fieldsType": "FieldsV1", "fieldsV1": fields_spec},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ts,
                    "fieldsType": "FieldsV1", "fieldsV1": fields_status, "subresource": "status"}
            ]
        },
        "spec": {
            "containers": [container("app", "registry.example.com/app:1.24.3", 8080), container("sidecar", "registry.example.com/proxy:2.1.0", 15090)],
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "priority": 0,
            "enableServiceLinks": true
        },
        "status": {
            "phase": "Running",
            "conditions": [condition("Initialized"), condition("Ready"), condition("ContainersReady"), condition("PodScheduled")],
            "hostIP": format!("192.168.{}.{}", (i / 200) % 256, i % 200),
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": ts,
            "containerStatuses": [status("app", "registry.example.com/app:1.24.3"), status("sidecar", "registry.example.com/proxy:2.1.0")],
            "qosClass": "Burstable"
        }
    })
}

/// What a MODIFIED event of the bench server changes (`--event-shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EventShape {
    /// Only the resourceVersion: the object's bytes otherwise stay the same.
    Rv,
    /// A label's value and the first container's restartCount, as a kubelet's status
    /// update and a controller's relabel do: every event carries new content.
    LabelRestart,
}

impl EventShape {
    /// The flag's value, as the bench server reads it.
    pub fn name(self) -> &'static str {
        match self {
            EventShape::Rv => "rv",
            EventShape::LabelRestart => "label-restart",
        }
    }

    /// What each event changes, for a report.
    pub fn describe(self) -> &'static str {
        match self {
            EventShape::Rv => "only the resourceVersion",
            EventShape::LabelRestart => "a label and a container's restartCount",
        }
    }
}

/// How the in-memory bench server answers, as `bench-server` takes it and
/// `informer-bench` passes it on: the variants a server nobody here wrote may differ in.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerVariant {
    /// What each MODIFIED event changes (rv: only the resourceVersion; label-restart: a
    /// label and a container's restartCount, computed ahead so that the writes cost what
    /// rv's do).
    #[arg(long, value_enum, default_value_t = EventShape::Rv)]
    pub event_shape: EventShape,
    /// How many events the server writes under one lock, waking watchers once (1: every
    /// event is its own write, as on kube-apiserver).
    #[arg(long, default_value_t = 256)]
    pub write_batch: usize,
    /// About how many bytes of events go into one chunk of a watch's body (0: every
    /// event is a chunk of its own, as a server that flushes each event writes them).
    #[arg(long, default_value_t = 128 * 1024)]
    pub watch_chunk: usize,
    /// How lists treat the client's `limit`: honour (pages of `limit`), ignore (the
    /// whole list in one answer) or a page size N the server never exceeds.
    #[arg(long, default_value = "honour")]
    pub list_limit: ListPages,
}

impl ServerVariant {
    /// The `bench-server` flags that ask for this variant.
    pub fn to_args(&self) -> Vec<String> {
        vec![
            "--event-shape".into(),
            self.event_shape.name().into(),
            "--write-batch".into(),
            self.write_batch.to_string(),
            "--watch-chunk".into(),
            self.watch_chunk.to_string(),
            "--list-limit".into(),
            self.list_limit.to_string(),
        ]
    }

    /// The variant, for a report.
    pub fn describe(&self) -> String {
        let chunks = if self.watch_chunk == 0 {
            "one event".to_owned()
        } else {
            format!("~{} KiB", self.watch_chunk / 1024)
        };
        format!(
            "events change {}; {} event(s) per write; watch chunks of {chunks}; lists {}",
            self.event_shape.describe(),
            self.write_batch,
            self.list_limit.describe(),
        )
    }
}

/// How the bench server treats a list's `limit` (`--list-limit honour|ignore|N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPages {
    /// Pages of the client's `limit`.
    Honour,
    /// The whole list in one answer.
    Ignore,
    /// Pages of at most this many items.
    AtMost(usize),
}

impl FromStr for ListPages {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "honour" | "honor" => ListPages::Honour,
            "ignore" => ListPages::Ignore,
            n => ListPages::AtMost(n.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("expected honour, ignore or a page size above 0, not {n:?}")
            })?),
        })
    }
}

impl fmt::Display for ListPages {
    /// The flag's value, as [`FromStr`] reads it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListPages::Honour => f.write_str("honour"),
            ListPages::Ignore => f.write_str("ignore"),
            ListPages::AtMost(n) => write!(f, "{n}"),
        }
    }
}

impl ListPages {
    /// How lists are answered, for a report.
    pub fn describe(self) -> String {
        match self {
            ListPages::Honour => "honour limit".to_owned(),
            ListPages::Ignore => "ignore limit (one answer)".to_owned(),
            ListPages::AtMost(n) => format!("capped at {n} items per page"),
        }
    }
}

/// The client under test in one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    /// kubegen-kubernetes' typed informer of Pods with default settings: protobuf where
    /// the server offers it, the compact mirror of `Pod` cached.
    Ours,
    /// The same informer's opt-out, `k8s_openapi_informer()`: k8s-openapi's `Pod` cached.
    OursOpenapi,
    /// kubegen's `SharedIndexInformer` of the compact Pod reading JSON only
    /// (`client::protobuf::json_only`).
    OursJson,
    /// kube-runtime's `reflector(store, watcher(..))` with default settings.
    Kube,
    /// kube-runtime with managedFields stripped by `.modify()`.
    KubeStripped,
    /// client-go's `SharedInformerFactory` with defaults (`go-informer`, a Go program).
    Go,
    /// client-go with managedFields stripped by a transform, as kube-controller-manager
    /// does.
    GoStripped,
    /// kubegen's metadata informer (`MetadataSharedInformerFactory`, objects as
    /// `PartialObjectMetadata`).
    OursMetadata,
    /// kube-runtime's `reflector(store, metadata_watcher(..))`.
    KubeMetadata,
    /// kubegen's `SharedIndexInformer` over a projection: a slim struct with only the
    /// fields a controller reads, decoded straight from the wire.
    OursProjection,
}

impl ClientKind {
    /// Every kind, in table order.
    pub const ALL: [ClientKind; 10] = [
        ClientKind::Ours,
        ClientKind::OursOpenapi,
        ClientKind::OursJson,
        ClientKind::Kube,
        ClientKind::KubeStripped,
        ClientKind::Go,
        ClientKind::GoStripped,
        ClientKind::OursMetadata,
        ClientKind::KubeMetadata,
        ClientKind::OursProjection,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Ours => "ours",
            ClientKind::OursJson => "ours-json",
            ClientKind::Kube => "kube",
            ClientKind::KubeStripped => "kube-strip",
            ClientKind::Go => "go",
            ClientKind::GoStripped => "go-strip",
            ClientKind::OursMetadata => "ours-meta",
            ClientKind::KubeMetadata => "kube-meta",
            ClientKind::OursProjection => "ours-proj",
            ClientKind::OursOpenapi => "ours-openapi",
        }
    }

    /// The description in the result table.
    pub fn label(self) -> &'static str {
        match self {
            ClientKind::Ours => "(a) kubegen typed informer (compact cache)",
            ClientKind::OursJson => "(a') kubegen, JSON only",
            ClientKind::Kube => "(b) kube-runtime reflector",
            ClientKind::KubeStripped => "(c) kube-runtime, managedFields stripped",
            ClientKind::Go => "(f) client-go informer",
            ClientKind::GoStripped => "(g) client-go, managedFields stripped",
            ClientKind::OursMetadata => "(d) kubegen metadata informer",
            ClientKind::KubeMetadata => "(e) kube-runtime metadata_watcher",
            ClientKind::OursProjection => "(h) kubegen projection informer",
            ClientKind::OursOpenapi => "(i) kubegen, k8s-openapi Pod cached",
        }
    }

    /// Whether the client is the Go program rather than `bench-client`.
    pub fn is_go(self) -> bool {
        matches!(self, ClientKind::Go | ClientKind::GoStripped)
    }
}

impl fmt::Display for ClientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClientKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ClientKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = ClientKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown client {s:?} ({})", names.join(", "))
            })
    }
}

/// A field of `/proc/self/status` in bytes (`VmHWM`, `VmRSS`), if `/proc` has it.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// This process's resident set size now, in bytes (`VmRSS`).
pub fn rss_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// Resets this process's peak RSS to its current RSS (Linux `clear_refs` with 5), so
/// that a later [`peak_rss_bytes`] covers only what happened since.
pub fn reset_peak_rss() -> std::io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// The user + system CPU seconds in a `/proc/.../stat` file (fields 14 and 15, in the
/// kernel's user-visible clock ticks, 100 per second on Linux).
fn stat_cpu_seconds(path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name may hold spaces: the fields start after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// CPU seconds (user + system) this process has used so far, all threads.
pub fn cpu_seconds() -> Option<f64> {
    stat_cpu_seconds("/proc/self/stat")
}

/// CPU seconds (user + system) the calling thread has used so far.
pub fn thread_cpu_seconds() -> Option<f64> {
    stat_cpu_seconds("/proc/thread-self/stat")
}

/// This process's peak resident set size in bytes (`VmHWM`), if `/proc` has it.
pub fn peak_rss_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// What one client measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientResult {
    /// Seconds from start to the initial list being complete in the store.
    pub synced_secs: f64,
    /// MODIFIED events handled per second.
    pub events_per_sec: f64,
    /// Peak RSS in bytes.
    pub peak_rss: u64,
    /// CPU seconds (user + system, all threads) from start to the last event handled.
    pub cpu_secs: f64,
}

impl ClientResult {
    /// The `RESULT ...` line a client prints.
    pub fn to_line(&self) -> String {
        format!(
            "RESULT {} {} {} {}",
            self.synced_secs, self.events_per_sec, self.peak_rss, self.cpu_secs
        )
    }

    /// Parses a `RESULT ...` line.
    ///
    /// ```
    /// use kubegen_benchmarks::ClientResult;
    /// let r = ClientResult { synced_secs: 1.5, events_per_sec: 2e4, peak_rss: 1 << 30, cpu_secs: 3.25 };
    /// assert_eq!(ClientResult::parse(&r.to_line()), Some(r));
    /// ```
    pub fn parse(line: &str) -> Option<Self> {
        let mut it = line.strip_prefix("RESULT ")?.split_whitespace();
        Some(ClientResult {
            synced_secs: it.next()?.parse().ok()?,
            events_per_sec: it.next()?.parse().ok()?,
            peak_rss: it.next()?.parse().ok()?,
            cpu_secs: it.next()?.parse().ok()?,
        })
    }
}

/// What a client measured around a forced relist (the server answers its watch with
/// 410 Expired once it has synced and handled the events).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelistResult {
    /// RSS just before the relist (the steady state), in bytes.
    pub steady_rss: u64,
    /// Peak RSS from the relist until its objects are in the store, in bytes.
    pub peak_rss: u64,
    /// CPU seconds the relist took.
    pub cpu_secs: f64,
}

impl RelistResult {
    /// The `RELISTED ...` line a client prints.
    pub fn to_line(&self) -> String {
        format!(
            "RELISTED {} {} {}",
            self.steady_rss, self.peak_rss, self.cpu_secs
        )
    }

    /// Parses a `RELISTED ...` line.
    ///
    /// ```
    /// use kubegen_benchmarks::RelistResult;
    /// let r = RelistResult { steady_rss: 1 << 30, peak_rss: 3 << 29, cpu_secs: 1.5 };
    /// assert_eq!(RelistResult::parse(&r.to_line()), Some(r));
    /// ```
    pub fn parse(line: &str) -> Option<Self> {
        let mut it = line.strip_prefix("RELISTED ")?.split_whitespace();
        Some(RelistResult {
            steady_rss: it.next()?.parse().ok()?,
            peak_rss: it.next()?.parse().ok()?,
            cpu_secs: it.next()?.parse().ok()?,
        })
    }
}

/// An error of a benchmark process ([`Proc`]).
pub type ProcError = Box<dyn std::error::Error + Send + Sync>;

/// A child process of a benchmark, with its stdin and a channel of its stdout lines;
/// killed when dropped.
pub struct Proc {
    name: String,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    timeout: Duration,
}

impl Proc {
    /// Starts `cmd` with piped stdin and stdout (stderr inherited).
    pub fn spawn(name: &str, cmd: &mut Command, timeout: Duration) -> Result<Proc, ProcError> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name: name.to_owned(),
            child,
            stdin,
            lines,
            timeout,
        })
    }

    /// Sets how long [`Proc::expect`] waits.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Waits for the process to exit (after it was told to).
    pub fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait()
    }

    /// Writes `line` and a newline to the process's stdin.
    pub fn send(&mut self, line: &str) -> Result<(), ProcError> {
        writeln!(self.stdin, "{line}")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// The rest of the first line starting with `prefix`.
    /// Waits (at most the timeout) for a stdout line starting with `prefix`; returns the
    /// rest of it, trimmed. Other lines are echoed to stderr.
    pub fn expect(&mut self, prefix: &str) -> Result<String, ProcError> {
        loop {
            let line = self
                .lines
                .recv_timeout(self.timeout)
                .map_err(|e| format!("{}: waiting for {prefix}: {e}", self.name))?;
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest.trim().to_owned());
            }
            eprintln!("{}: {line}", self.name);
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
