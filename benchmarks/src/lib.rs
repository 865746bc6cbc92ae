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
use std::str::FromStr;

use serde_json::{json, Value};

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

/// The client under test in one `bench-client` process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    /// kubegen's `SharedIndexInformer` with default settings.
    Ours,
    /// kube-runtime's `reflector(store, watcher(..))` with default settings.
    Kube,
    /// kube-runtime with managedFields stripped by `.modify()`.
    KubeStripped,
    /// kubegen's metadata informer (`MetadataSharedInformerFactory`, objects as
    /// `PartialObjectMetadata`).
    OursMetadata,
    /// kube-runtime's `reflector(store, metadata_watcher(..))`.
    KubeMetadata,
}

impl ClientKind {
    /// Every kind, in table order.
    pub const ALL: [ClientKind; 5] = [
        ClientKind::Ours,
        ClientKind::Kube,
        ClientKind::KubeStripped,
        ClientKind::OursMetadata,
        ClientKind::KubeMetadata,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Ours => "ours",
            ClientKind::Kube => "kube",
            ClientKind::KubeStripped => "kube-strip",
            ClientKind::OursMetadata => "ours-meta",
            ClientKind::KubeMetadata => "kube-meta",
        }
    }

    /// The description in the result table.
    pub fn label(self) -> &'static str {
        match self {
            ClientKind::Ours => "(a) kubegen SharedIndexInformer",
            ClientKind::Kube => "(b) kube-runtime reflector",
            ClientKind::KubeStripped => "(c) kube-runtime, managedFields stripped",
            ClientKind::OursMetadata => "(d) kubegen metadata informer",
            ClientKind::KubeMetadata => "(e) kube-runtime metadata_watcher",
        }
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
                format!("unknown client {s:?} (ours, kube, kube-strip, ours-meta, kube-meta)")
            })
    }
}

/// This process's peak resident set size in bytes (`VmHWM`), if `/proc` has it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
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
}

impl ClientResult {
    /// The `RESULT ...` line a client prints.
    pub fn to_line(&self) -> String {
        format!(
            "RESULT {} {} {}",
            self.synced_secs, self.events_per_sec, self.peak_rss
        )
    }

    /// Parses a `RESULT ...` line.
    ///
    /// ```
    /// use kubegen_benchmarks::ClientResult;
    /// let r = ClientResult { synced_secs: 1.5, events_per_sec: 2e4, peak_rss: 1 << 30 };
    /// assert_eq!(ClientResult::parse(&r.to_line()), Some(r));
    /// ```
    pub fn parse(line: &str) -> Option<Self> {
        let mut it = line.strip_prefix("RESULT ")?.split_whitespace();
        Some(ClientResult {
            synced_secs: it.next()?.parse().ok()?,
            events_per_sec: it.next()?.parse().ok()?,
            peak_rss: it.next()?.parse().ok()?,
        })
    }
}
