//! The k8s-openapi type of each built-in kind this server registers, for checking that a
//! body decodes into its kind (as kube-apiserver's decoder does) and for finding the
//! fields the type does not have.
//!
//! Contract: [`round_trip`] decodes a JSON object into the kind's type and encodes it
//! again; fields the type does not know are absent from the result. Kinds without a type
//! here give `None` and are not checked.

use k8s_openapi::api::{
    admissionregistration, apps, autoscaling, batch, certificates, coordination, core, discovery,
    events, flowcontrol, networking, node, policy, rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use serde_json::Value;

fn via<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) -> Result<Value, String> {
    let t: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(t).map_err(|e| e.to_string())
}

/// `v` decoded into the type of `api_version`/`kind` and encoded again; `None` when the
/// kind has no type here.
pub(crate) fn round_trip(
    api_version: &str,
    kind: &str,
    v: &Value,
) -> Option<Result<Value, String>> {
    let f = match (api_version, kind) {
        ("v1", "Pod") => via::<core::v1::Pod>,
        ("v1", "Service") => via::<core::v1::Service>,
        ("v1", "Endpoints") => via::<core::v1::Endpoints>,
        ("v1", "ConfigMap") => via::<core::v1::ConfigMap>,
        ("v1", "Secret") => via::<core::v1::Secret>,
        ("v1", "ServiceAccount") => via::<core::v1::ServiceAccount>,
        ("v1", "Namespace") => via::<core::v1::Namespace>,
        ("v1", "Node") => via::<core::v1::Node>,
        ("v1", "PersistentVolume") => via::<core::v1::PersistentVolume>,
        ("v1", "PersistentVolumeClaim") => via::<core::v1::PersistentVolumeClaim>,
        ("v1", "Event") => via::<core::v1::Event>,
        ("apps/v1", "Deployment") => via::<apps::v1::Deployment>,
        ("apps/v1", "ReplicaSet") => via::<apps::v1::ReplicaSet>,
        ("apps/v1", "StatefulSet") => via::<apps::v1::StatefulSet>,
        ("apps/v1", "DaemonSet") => via::<apps::v1::DaemonSet>,
        ("batch/v1", "Job") => via::<batch::v1::Job>,
        ("batch/v1", "CronJob") => via::<batch::v1::CronJob>,
        ("coordination.k8s.io/v1", "Lease") => via::<coordination::v1::Lease>,
        ("rbac.authorization.k8s.io/v1", "Role") => via::<rbac::v1::Role>,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => via::<rbac::v1::RoleBinding>,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => via::<rbac::v1::ClusterRole>,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            via::<rbac::v1::ClusterRoleBinding>
        }
        ("networking.k8s.io/v1", "Ingress") => via::<networking::v1::Ingress>,
        ("events.k8s.io/v1", "Event") => via::<events::v1::Event>,
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            via::<apiextensions::CustomResourceDefinition>
        }
        ("v1", "LimitRange") => via::<core::v1::LimitRange>,
        ("v1", "PodTemplate") => via::<core::v1::PodTemplate>,
        ("v1", "ReplicationController") => via::<core::v1::ReplicationController>,
        ("v1", "ResourceQuota") => via::<core::v1::ResourceQuota>,
        ("apps/v1", "ControllerRevision") => via::<apps::v1::ControllerRevision>,
        ("autoscaling/v1", "HorizontalPodAutoscaler") => {
            via::<autoscaling::v1::HorizontalPodAutoscaler>
        }
        ("autoscaling/v2", "HorizontalPodAutoscaler") => {
            via::<autoscaling::v2::HorizontalPodAutoscaler>
        }
        ("policy/v1", "PodDisruptionBudget") => via::<policy::v1::PodDisruptionBudget>,
        ("discovery.k8s.io/v1", "EndpointSlice") => via::<discovery::v1::EndpointSlice>,
        ("networking.k8s.io/v1", "NetworkPolicy") => via::<networking::v1::NetworkPolicy>,
        ("networking.k8s.io/v1", "IngressClass") => via::<networking::v1::IngressClass>,
        ("networking.k8s.io/v1", "IPAddress") => via::<networking::v1::IPAddress>,
        ("networking.k8s.io/v1", "ServiceCIDR") => via::<networking::v1::ServiceCIDR>,
        ("node.k8s.io/v1", "RuntimeClass") => via::<node::v1::RuntimeClass>,
        ("scheduling.k8s.io/v1", "PriorityClass") => via::<scheduling::v1::PriorityClass>,
        ("storage.k8s.io/v1", "StorageClass") => via::<storage::v1::StorageClass>,
        ("storage.k8s.io/v1", "CSIDriver") => via::<storage::v1::CSIDriver>,
        ("storage.k8s.io/v1", "CSINode") => via::<storage::v1::CSINode>,
        ("storage.k8s.io/v1", "CSIStorageCapacity") => via::<storage::v1::CSIStorageCapacity>,
        ("storage.k8s.io/v1", "VolumeAttachment") => via::<storage::v1::VolumeAttachment>,
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => {
            via::<certificates::v1::CertificateSigningRequest>
        }
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            via::<admissionregistration::v1::MutatingWebhookConfiguration>
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            via::<admissionregistration::v1::ValidatingWebhookConfiguration>
        }
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => {
            via::<admissionregistration::v1::ValidatingAdmissionPolicy>
        }
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") => {
            via::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>
        }
        ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema") => via::<flowcontrol::v1::FlowSchema>,
        ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration") => {
            via::<flowcontrol::v1::PriorityLevelConfiguration>
        }
        ("apiregistration.k8s.io/v1", "APIService") => via::<apiregistration::APIService>,
        _ => return None,
    };
    Some(f(v))
}

#[cfg(test)]
mod tests {
    /// Every built-in registration has its type here (so its bodies are checked), a
    /// protobuf description (so client-go's typed clients can write it), and an OpenAPI
    /// schema (so kubectl can explain and validate it).
    #[test]
    fn every_built_in_kind_has_a_type_a_protobuf_description_and_a_schema() {
        for reg in crate::registry::builtin() {
            let (av, kind) = (reg.api_version(), reg.kind.clone());
            let obj =
                serde_json::json!({"apiVersion": av, "kind": kind, "metadata": {"name": "x"}});
            assert!(
                super::round_trip(&av, &kind, &obj).is_some_and(|r| r.is_ok()),
                "{av} {kind} has no k8s-openapi type in round_trip"
            );
            assert!(
                crate::protobuf::knows(&av, &kind),
                "{av} {kind} is not in protobuf/table.json"
            );
            assert!(
                crate::openapi::builtin_schema_known(&reg),
                "{av} {kind} has no schema in openapi/builtin.json"
            );
        }
    }
}
