//! +groupName=samplecontroller.k8s.io
//! kubernetes/sample-controller's `pkg/apis/samplecontroller/v1alpha1/types.go`,
//! written as Rust.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubegen_runtime::types::{ApiVersion, Kind};
use serde::{Deserialize, Serialize};

/// Foo is a specification for a Foo resource.
///
/// +genclient
/// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Foo {
    /// The API version (`samplecontroller.k8s.io/v1alpha1`).
    #[serde(rename = "apiVersion", default)]
    pub api_version: ApiVersion<Foo>,
    /// The kind (`Foo`).
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
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The name of the Deployment the Foo owns.
    pub deployment_name: String,
    /// How many replicas the Deployment runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// FooStatus is the status for a Foo resource.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// How many replicas of the Deployment are available.
    pub available_replicas: i32,
}

/// A read-only kind: clients may get, list and watch Bars, nothing else.
///
/// +genclient
/// +genclient:onlyVerbs=get,list,watch
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    /// The API version.
    #[serde(rename = "apiVersion", default)]
    pub api_version: ApiVersion<Bar>,
    /// The kind.
    #[serde(default)]
    pub kind: Kind<Bar>,
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What a Bar holds.
    #[serde(default)]
    pub spec: BarSpec,
}

/// BarSpec is the spec of a Bar.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BarSpec {
    /// A message.
    #[serde(default)]
    pub message: String,
}
