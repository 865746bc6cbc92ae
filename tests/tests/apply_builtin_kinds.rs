//! Typed server-side apply round trip over the common built-in kinds: for each, an
//! apply configuration (built from JSON, which must itself round-trip through the apply
//! configuration type: every field it uses is modelled) is applied by one manager with
//! `ResourceClient::apply_config`, and the kind's generated `extract_<kind>` of the
//! answer equals it. Server defaults the manager did not set are not part of the
//! extract, except inside what the manager owns whole (an atomic list such as a
//! LimitRange's `limits`, where kube-apiserver would add `defaultRequest` from `default`:
//! the object sets both). Over the in-memory server's tower Service, over TCP and against a real
//! kube-apiserver (ignored unless `hack/test.sh real`): the objects are valid for
//! kube-apiserver.

use std::fmt::Debug;

use kube::Resource;
use kubegen_kubernetes::applyconfigurations as ac;
use kubegen_runtime::apply::{ApplyConfiguration, ApplyError, ApplyOptions};
use kubegen_runtime::client::ResourceClient;
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

const MANAGER: &str = "kinds";

/// Applies `object` as `A` and extracts it back; an error names the difference.
async fn round_trip<K, A>(
    client: &kube::Client,
    object: Value,
    extract: fn(&K, &str) -> Result<A, ApplyError>,
) -> Result<(), String>
where
    K: Resource<DynamicType = ()>
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static,
    A: ApplyConfiguration + PartialEq + Debug,
{
    let kind = object["kind"].as_str().unwrap_or_default().to_owned();
    let cfg: A = serde_json::from_value(object.clone()).map_err(|e| format!("{kind}: {e}"))?;
    let back = serde_json::to_value(&cfg).map_err(|e| format!("{kind}: {e}"))?;
    if back != object {
        return Err(format!(
            "{kind}: the apply configuration does not model the object: {back} != {object}"
        ));
    }
    let rc = match object.pointer("/metadata/namespace") {
        Some(_) => ResourceClient::<K>::namespaced(client.clone(), "default"),
        None => ResourceClient::<K>::cluster(client.clone()),
    };
    let obj = rc
        .apply_config(&cfg, &ApplyOptions::new(MANAGER))
        .await
        .map_err(|e| format!("{kind}: apply: {e}"))?;
    let got = extract(&obj, MANAGER).map_err(|e| format!("{kind}: extract: {e}"))?;
    if got != cfg {
        return Err(format!("{kind}: extract\n  got  {got:?}\n  want {cfg:?}"));
    }
    Ok(())
}

fn meta(kind: &str, api_version: &str, namespaced: bool) -> Value {
    let name = format!("k-{}", kind.to_lowercase());
    let metadata = if namespaced {
        json!({"name": name, "namespace": "default", "labels": {"test": "kinds"}})
    } else {
        json!({"name": name, "labels": {"test": "kinds"}})
    };
    json!({"apiVersion": api_version, "kind": kind, "metadata": metadata})
}

fn with(mut base: Value, fields: Value) -> Value {
    if let (Value::Object(b), Value::Object(f)) = (&mut base, fields) {
        b.extend(f);
    }
    base
}

fn pod_template() -> Value {
    json!({
        "metadata": {"labels": {"app": "kinds"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    })
}

fn selector() -> Value {
    json!({"matchLabels": {"app": "kinds"}})
}

async fn every_kind(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<String>::new())
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let c = conn.client();
    let job_template = json!({"spec": {"template": {
        "metadata": {"labels": {"app": "kinds"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "app", "image": "busybox:1"}]}
    }}});
    let results = vec![
        round_trip(&c, with(meta("Pod", "v1", true), json!({"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "app", "image": "nginx:1.27",
                "env": [{"name": "MODE", "value": "test"}],
                "ports": [{"containerPort": 80, "protocol": "TCP"}]}]
        }})), ac::core::v1::extract_pod).await,
        round_trip(&c, with(meta("Service", "v1", true), json!({"spec": {
            "selector": {"app": "kinds"},
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]
        }})), ac::core::v1::extract_service).await,
        round_trip(&c, with(meta("ConfigMap", "v1", true), json!({"data": {"a": "1"}})),
            ac::core::v1::extract_config_map).await,
        round_trip(&c, with(meta("Secret", "v1", true),
            json!({"type": "Opaque", "data": {"token": "c2VjcmV0"}})),
            ac::core::v1::extract_secret).await,
        round_trip(&c, meta("Namespace", "v1", false), ac::core::v1::extract_namespace).await,
        round_trip(&c, with(meta("ServiceAccount", "v1", true),
            json!({"automountServiceAccountToken": false})),
            ac::core::v1::extract_service_account).await,
        round_trip(&c, with(meta("Event", "v1", true), json!({
            "involvedObject": {"kind": "Pod", "name": "k-pod", "namespace": "default"},
            "reason": "Tested", "message": "applied", "type": "Normal"
        })), ac::core::v1::extract_event).await,
        round_trip(&c, with(meta("PersistentVolumeClaim", "v1", true), json!({"spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}
        }})), ac::core::v1::extract_persistent_volume_claim).await,
        round_trip(&c, with(meta("ResourceQuota", "v1", true),
            json!({"spec": {"hard": {"pods": "10"}}})),
            ac::core::v1::extract_resource_quota).await,
        round_trip(&c, with(meta("LimitRange", "v1", true), json!({"spec": {"limits": [
            {"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "250m"}}
        ]}})), ac::core::v1::extract_limit_range).await,
        round_trip(&c, with(meta("Deployment", "apps/v1", true), json!({"spec": {
            "replicas": 2, "selector": selector(), "template": pod_template()
        }})), ac::apps::v1::extract_deployment).await,
        round_trip(&c, with(meta("StatefulSet", "apps/v1", true), json!({"spec": {
            "serviceName": "k-service", "selector": selector(), "template": pod_template()
        }})), ac::apps::v1::extract_stateful_set).await,
        round_trip(&c, with(meta("DaemonSet", "apps/v1", true), json!({"spec": {
            "selector": selector(), "template": pod_template()
        }})), ac::apps::v1::extract_daemon_set).await,
        round_trip(&c, with(meta("ReplicaSet", "apps/v1", true), json!({"spec": {
            "replicas": 0, "selector": selector(), "template": pod_template()
        }})), ac::apps::v1::extract_replica_set).await,
        round_trip(&c, with(meta("Job", "batch/v1", true), json!({"spec": {
            "backoffLimit": 1,
            "template": job_template["spec"]["template"]
        }})), ac::batch::v1::extract_job).await,
        round_trip(&c, with(meta("CronJob", "batch/v1", true), json!({"spec": {
            "schedule": "*/5 * * * *", "jobTemplate": job_template
        }})), ac::batch::v1::extract_cron_job).await,
        round_trip(&c, with(meta("Role", "rbac.authorization.k8s.io/v1", true), json!({"rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
        ]})), ac::rbac::v1::extract_role).await,
        round_trip(&c, with(meta("RoleBinding", "rbac.authorization.k8s.io/v1", true), json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "k-role"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]
        })), ac::rbac::v1::extract_role_binding).await,
        round_trip(&c, with(meta("ClusterRole", "rbac.authorization.k8s.io/v1", false), json!({"rules": [
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["watch"]}
        ]})), ac::rbac::v1::extract_cluster_role).await,
        round_trip(&c, with(meta("Ingress", "networking.k8s.io/v1", true), json!({"spec": {"rules": [
            {"host": "kinds.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "k-service", "port": {"number": 80}}}}]}}
        ]}})), ac::networking::v1::extract_ingress).await,
        round_trip(&c, with(meta("NetworkPolicy", "networking.k8s.io/v1", true), json!({"spec": {
            "podSelector": selector(), "policyTypes": ["Ingress"]
        }})), ac::networking::v1::extract_network_policy).await,
        round_trip(&c, with(meta("PodDisruptionBudget", "policy/v1", true), json!({"spec": {
            "minAvailable": 1, "selector": selector()
        }})), ac::policy::v1::extract_pod_disruption_budget).await,
        round_trip(&c, with(meta("HorizontalPodAutoscaler", "autoscaling/v2", true), json!({"spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "k-deployment"},
            "minReplicas": 1, "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]
        }})), ac::autoscaling::v2::extract_horizontal_pod_autoscaler).await,
        round_trip(&c, with(meta("Lease", "coordination.k8s.io/v1", true), json!({"spec": {
            "holderIdentity": "kinds", "leaseDurationSeconds": 15
        }})), ac::coordination::v1::extract_lease).await,
        round_trip(&c, with(meta("PriorityClass", "scheduling.k8s.io/v1", false),
            json!({"value": 1000, "description": "kinds"})),
            ac::scheduling::v1::extract_priority_class).await,
        round_trip(&c, with(meta("StorageClass", "storage.k8s.io/v1", false),
            json!({"provisioner": "example.com/kinds", "reclaimPolicy": "Retain"})),
            ac::storage::v1::extract_storage_class).await,
    ];
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(
        failures.is_empty(),
        "{transport:?}: {} kinds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    conn.close().await;
}

#[tokio::test]
async fn every_kind_over_tower() {
    every_kind(Transport::Tower).await;
}

#[tokio::test]
async fn every_kind_over_tcp() {
    every_kind(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn every_kind_on_a_real_apiserver() {
    every_kind(Transport::Real).await;
}
