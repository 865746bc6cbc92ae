//! The compact Pod mirror (`kubegen_benchmarks::compact_pod`) is lossless against
//! k8s-openapi's Pod: decoded from the same JSON, both serialize to the same JSON, and
//! the mirror converts back to an equal k8s-openapi Pod. Checked on the benchmark's Pods
//! and on a Pod that sets the optional structs the benchmark's Pods leave out (affinity,
//! security contexts, every probe handler, lifecycle hooks, several volume sources,
//! ephemeral containers, every container state). And it decodes the same from protobuf
//! as from JSON, as the typed informer reads it from a real kube-apiserver.

use k8s_openapi::api::core::v1::Pod;
use kubegen_benchmarks::compact_pod;
use serde::Deserialize;
use serde_json::{json, Value};

fn assert_lossless(text: &str) {
    let full: Pod = serde_json::from_str(text).expect("k8s-openapi decodes the Pod");
    let compact: compact_pod::Pod = serde_json::from_str(text).expect("the mirror decodes it");
    let full_json = serde_json::to_value(&full).expect("serializes");
    let mut compact_json = serde_json::to_value(&compact).expect("serializes");
    // k8s-openapi writes the type meta; the mirror, like k8s-openapi's value, holds none.
    if let Some(o) = compact_json.as_object_mut() {
        o.insert("apiVersion".into(), json!("v1"));
        o.insert("kind".into(), json!("Pod"));
    }
    assert_eq!(compact_json, full_json, "different JSON for {text}");
    let back = Pod::deserialize(compact_json).expect("the mirror converts back");
    assert_eq!(back, full, "the mirror lost something of {text}");
}

#[test]
fn the_mirror_is_lossless_on_the_benchmark_pods() {
    for i in 0..300 {
        assert_lossless(&kubegen_benchmarks::pod(i).to_string());
    }
}

#[test]
fn the_mirror_is_lossless_on_a_pod_with_the_optional_structs_set() {
    assert_lossless(&full_pod().to_string());
}

/// The mirror decodes from protobuf (what the typed informer gets from a real
/// kube-apiserver) to what it decodes from the JSON kube-apiserver would write for the
/// same object.
#[test]
fn the_mirror_decodes_the_same_from_protobuf_and_json() {
    use kubegen_apimachinery::protobuf;
    let pods = (0..100).map(kubegen_benchmarks::pod).chain([full_pod()]);
    for mut pod in pods {
        if let Some(o) = pod.as_object_mut() {
            o.insert("apiVersion".into(), json!("v1"));
            o.insert("kind".into(), json!("Pod"));
        }
        let obj = pod.as_object().expect("a Pod is an object");
        let body = protobuf::encode_object(obj).expect("every Pod field has a protobuf number");
        let go_json = Value::Object(protobuf::decode(&body).expect("decodes"));
        let from_json: compact_pod::Pod =
            serde_json::from_value(go_json).expect("the mirror decodes Go's JSON");
        let from_pb: compact_pod::Pod =
            protobuf::from_envelope(&body).expect("the mirror decodes protobuf");
        assert_eq!(from_pb, from_json, "protobuf and JSON differ for {pod}");
    }
}

/// A Pod that sets the optional structs the benchmark's Pods leave out.
fn full_pod() -> Value {
    let probe = |handler: Value| {
        let mut p = json!({"initialDelaySeconds": 1, "periodSeconds": 5, "failureThreshold": 3});
        for (k, v) in handler.as_object().into_iter().flatten() {
            p[k] = v.clone();
        }
        p
    };
    let container = json!({
        "name": "app",
        "image": "example.com/app:1",
        "command": ["/app"],
        "env": [
            {"name": "A", "value": "1"},
            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
        ],
        "envFrom": [{"configMapRef": {"name": "cm"}}],
        "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
        "livenessProbe": probe(json!({"httpGet": {"path": "/healthz", "port": "http"}})),
        "readinessProbe": probe(json!({"exec": {"command": ["true"]}})),
        "startupProbe": probe(json!({"grpc": {"port": 9000}})),
        "lifecycle": {
            "preStop": {"sleep": {"seconds": 5}},
            "postStart": {"tcpSocket": {"port": 8080}}
        },
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "securityContext": {
            "runAsNonRoot": true,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}
        },
        "volumeMounts": [{"name": "data", "mountPath": "/data"}]
    });
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "full", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
            "labels": {"app": "full"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-0", "controller": true}]
        },
        "spec": {
            "containers": [container.clone()],
            "initContainers": [container],
            "ephemeralContainers": [{"name": "debug", "image": "busybox", "targetContainerName": "app"}],
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                ]}},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "full"}}}}
                ]}
            },
            "securityContext": {"fsGroup": 2000, "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
            "dnsConfig": {"nameservers": ["1.1.1.1"], "options": [{"name": "ndots", "value": "2"}]},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}},
                {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                {"name": "cfg", "configMap": {"name": "cm", "items": [{"key": "a", "path": "a"}], "defaultMode": 420}},
                {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}},
                {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
                {"name": "proj", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                    {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                    {"secret": {"name": "s"}}
                ]}}
            ]
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-27T00:00:00Z"}],
            "containerStatuses": [
                {"name": "app", "image": "example.com/app:1", "imageID": "", "ready": true, "restartCount": 2,
                 "state": {"running": {"startedAt": "2026-11-27T00:00:00Z"}},
                 "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                     "startedAt": "2026-11-26T23:00:00Z", "finishedAt": "2026-11-26T23:59:00Z"}}},
                {"name": "side", "image": "example.com/side:1", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}}
            ],
            "podIPs": [{"ip": "10.0.0.1"}],
            "qosClass": "Burstable"
        }
    })
}

#[test]
fn the_mirror_keeps_unset_optional_structs_out_of_line() {
    // What makes it compact: an unset optional struct costs a pointer, not its size.
    use k8s_openapi::api::core::v1 as full;
    use std::mem::size_of;
    for (name, compact, k8s) in [
        ("Pod", size_of::<compact_pod::Pod>(), size_of::<full::Pod>()),
        (
            "Container",
            size_of::<compact_pod::Container>(),
            size_of::<full::Container>(),
        ),
        (
            "Volume",
            size_of::<compact_pod::Volume>(),
            size_of::<full::Volume>(),
        ),
    ] {
        assert!(
            compact * 3 < k8s,
            "{name}: {compact} bytes inline against k8s-openapi's {k8s}"
        );
    }
}
