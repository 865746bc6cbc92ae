//! The k8s-openapi type of each built-in kind this server registers, for checking that a
//! body decodes into its kind (as kube-apiserver's decoder does) and for finding the
//! fields the type does not have.
//!
//! Contract: [`round_trip`] decodes a JSON object into the kind's type and encodes it
//! again; fields the type does not know are absent from the result. Kinds without a type
//! here give `None` and are not checked.

use k8s_openapi::api::{apps, batch, coordination, core, events, networking, rbac};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
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
        _ => return None,
    };
    Some(f(v))
}
