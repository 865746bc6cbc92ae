//! kubernetes/sample-controller's `Foo`, as Rust types with code-generator's markers.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubegen_runtime::types::{ApiVersion, Kind};
use serde::{Deserialize, Serialize};

/// Foo is a specification for a Foo resource.
///
/// +genclient
/// +kubebuilder:subresource:status
/// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=unapproved, experimental-only; please get an approval from Kubernetes API reviewers if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups"
/// +kubebuilder:printcolumn:name="Deployment",type="string",JSONPath=".spec.deploymentName"
/// +kubebuilder:printcolumn:name="Available",type="integer",JSONPath=".status.availableReplicas"
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Foo {
    /// `samplecontroller.k8s.io/v1alpha1`.
    #[serde(rename = "apiVersion", default)]
    pub api_version: ApiVersion<Foo>,
    /// `Foo`.
    #[serde(default)]
    pub kind: Kind<Foo>,
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default)]
    pub spec: FooSpec,
    /// The observed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<FooStatus>,
}

/// FooSpec is the spec for a Foo resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The name of the Deployment the Foo owns.
    #[serde(default)]
    pub deployment_name: String,
    /// How many replicas the Deployment runs.
    ///
    /// +kubebuilder:validation:Minimum=1
    /// +kubebuilder:validation:Maximum=10
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// FooStatus is the status for a Foo resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// How many replicas of the Deployment are available.
    #[serde(default)]
    pub available_replicas: i32,
}
