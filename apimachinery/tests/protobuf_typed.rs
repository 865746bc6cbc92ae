//! Protobuf decoded straight into typed objects equals JSON decoded into them.
//!
//! The corpus (`src/protobuf/corpus.jsonl`, one random object of every built-in kind
//! written by apimachinery's protobuf serializer, with encoding/json's output beside it;
//! CI adds fresh corpora through `KUBEGEN_PROTOBUF_CORPUS`) is decoded three ways:
//! the protobuf through the serde [`Deserializer`] into `serde_json::Value` must be the
//! JSON Go wrote, for every kind; and into the k8s-openapi type of the kind, it must
//! give what `serde_json::from_value` gives from Go's JSON (the same object, or an
//! error both ways).

use k8s_openapi::api::{
    admissionregistration, apps, autoscaling, batch, certificates, coordination, core, discovery,
    events, flowcontrol, networking, node, policy, rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use kubegen_apimachinery::protobuf::{self, Deserializer};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

/// Whether the typed decodes of the protobuf and of Go's JSON agree; `Err` says how not.
fn same<K: DeserializeOwned + PartialEq + std::fmt::Debug>(
    pb: &[u8],
    json: &Value,
) -> Result<bool, String> {
    let from_pb = protobuf::from_envelope::<K>(pb);
    let from_json = serde_json::from_value::<K>(json.clone());
    match (from_pb, from_json) {
        (Ok(a), Ok(b)) if a == b => Ok(true),
        (Ok(a), Ok(b)) => Err(format!("protobuf {a:?}\n   json {b:?}")),
        (Err(_), Err(_)) => Ok(false),
        (Ok(_), Err(e)) => Err(format!("only the JSON fails: {e}")),
        (Err(e), Ok(_)) => Err(format!("only the protobuf fails: {e}")),
    }
}

/// The typed comparison for kinds that have a k8s-openapi type; `None` for the others.
fn typed(api_version: &str, kind: &str, pb: &[u8], json: &Value) -> Option<Result<bool, String>> {
    macro_rules! kinds {
        ($(($av:literal, $k:literal) => $t:ty,)*) => {
            match (api_version, kind) {
                $(($av, $k) => Some(same::<$t>(pb, json)),)*
                _ => None,
            }
        };
    }
    kinds! {
        ("v1", "Pod") => core::v1::Pod,
        ("v1", "Service") => core::v1::Service,
        ("v1", "Endpoints") => core::v1::Endpoints,
        ("v1", "ConfigMap") => core::v1::ConfigMap,
        ("v1", "Secret") => core::v1::Secret,
        ("v1", "ServiceAccount") => core::v1::ServiceAccount,
        ("v1", "Namespace") => core::v1::Namespace,
        ("v1", "Node") => core::v1::Node,
        ("v1", "PersistentVolume") => core::v1::PersistentVolume,
        ("v1", "PersistentVolumeClaim") => core::v1::PersistentVolumeClaim,
        ("v1", "Event") => core::v1::Event,
        ("v1", "LimitRange") => core::v1::LimitRange,
        ("v1", "PodTemplate") => core::v1::PodTemplate,
        ("v1", "ReplicationController") => core::v1::ReplicationController,
        ("v1", "ResourceQuota") => core::v1::ResourceQuota,
        ("v1", "Binding") => core::v1::Binding,
        ("v1", "ComponentStatus") => core::v1::ComponentStatus,
        ("apps/v1", "Deployment") => apps::v1::Deployment,
        ("apps/v1", "ReplicaSet") => apps::v1::ReplicaSet,
        ("apps/v1", "StatefulSet") => apps::v1::StatefulSet,
        ("apps/v1", "DaemonSet") => apps::v1::DaemonSet,
        ("apps/v1", "ControllerRevision") => apps::v1::ControllerRevision,
        ("batch/v1", "Job") => batch::v1::Job,
        ("batch/v1", "CronJob") => batch::v1::CronJob,
        ("coordination.k8s.io/v1", "Lease") => coordination::v1::Lease,
        ("rbac.authorization.k8s.io/v1", "Role") => rbac::v1::Role,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => rbac::v1::RoleBinding,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => rbac::v1::ClusterRole,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => rbac::v1::ClusterRoleBinding,
        ("networking.k8s.io/v1", "Ingress") => networking::v1::Ingress,
        ("networking.k8s.io/v1", "NetworkPolicy") => networking::v1::NetworkPolicy,
        ("networking.k8s.io/v1", "IngressClass") => networking::v1::IngressClass,
        ("networking.k8s.io/v1", "IPAddress") => networking::v1::IPAddress,
        ("networking.k8s.io/v1", "ServiceCIDR") => networking::v1::ServiceCIDR,
        ("events.k8s.io/v1", "Event") => events::v1::Event,
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => apiextensions::CustomResourceDefinition,
        ("autoscaling/v1", "HorizontalPodAutoscaler") => autoscaling::v1::HorizontalPodAutoscaler,
        ("autoscaling/v2", "HorizontalPodAutoscaler") => autoscaling::v2::HorizontalPodAutoscaler,
        ("policy/v1", "PodDisruptionBudget") => policy::v1::PodDisruptionBudget,
        ("discovery.k8s.io/v1", "EndpointSlice") => discovery::v1::EndpointSlice,
        ("node.k8s.io/v1", "RuntimeClass") => node::v1::RuntimeClass,
        ("scheduling.k8s.io/v1", "PriorityClass") => scheduling::v1::PriorityClass,
        ("storage.k8s.io/v1", "StorageClass") => storage::v1::StorageClass,
        ("storage.k8s.io/v1", "CSIDriver") => storage::v1::CSIDriver,
        ("storage.k8s.io/v1", "CSINode") => storage::v1::CSINode,
        ("storage.k8s.io/v1", "CSIStorageCapacity") => storage::v1::CSIStorageCapacity,
        ("storage.k8s.io/v1", "VolumeAttachment") => storage::v1::VolumeAttachment,
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => certificates::v1::CertificateSigningRequest,
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => admissionregistration::v1::MutatingWebhookConfiguration,
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => admissionregistration::v1::ValidatingWebhookConfiguration,
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => admissionregistration::v1::ValidatingAdmissionPolicy,
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") => admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema") => flowcontrol::v1::FlowSchema,
        ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration") => flowcontrol::v1::PriorityLevelConfiguration,
        ("apiregistration.k8s.io/v1", "APIService") => apiregistration::APIService,
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = T.iter().position(|&t| t == c).expect("base64") as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Counts of one corpus' checks.
#[derive(Debug, Default)]
struct Checked {
    objects: usize,
    typed_equal: usize,
    typed_both_fail: usize,
}

fn check(text: &str, failures: &mut Vec<String>) -> Checked {
    let mut n = Checked::default();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let case: Value = serde_json::from_str(line).expect("a corpus line is JSON");
        let (av, kind) = (
            case["apiVersion"].as_str().unwrap_or_default(),
            case["kind"].as_str().unwrap_or_default(),
        );
        let pb = base64_decode(case["protobuf"].as_str().expect("protobuf"));
        let json = &case["json"];
        n.objects += 1;
        let untyped = protobuf::envelope(&pb)
            .and_then(Deserializer::object)
            .and_then(Value::deserialize);
        match untyped {
            Ok(v) if &v == json => {}
            Ok(v) => failures.push(format!("{av} {kind}: serde gives\n{v}\nGo wrote\n{json}")),
            Err(e) => failures.push(format!("{av} {kind}: {e}")),
        }
        match typed(av, kind, &pb, json) {
            Some(Ok(true)) => n.typed_equal += 1,
            Some(Ok(false)) => n.typed_both_fail += 1,
            Some(Err(e)) => failures.push(format!("{av} {kind} typed: {e}")),
            None => {}
        }
    }
    n
}

#[test]
fn protobuf_decodes_to_what_json_decodes_to_for_every_built_in_kind() {
    let mut failures = Vec::new();
    let n = check(include_str!("../src/protobuf/corpus.jsonl"), &mut failures);
    // Every line of the committed corpus is a different kind; 55 of them have a type here.
    assert!(n.objects >= 180, "{n:?}");
    assert!(n.typed_equal >= 50, "{n:?}");
    if let Ok(paths) = std::env::var("KUBEGEN_PROTOBUF_CORPUS") {
        for path in paths.split(':') {
            let text = std::fs::read_to_string(path).expect("KUBEGEN_PROTOBUF_CORPUS names files");
            let m = check(&text, &mut failures);
            eprintln!("{path}: {m:?}");
            assert!(m.objects > 0, "{path} is empty");
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
