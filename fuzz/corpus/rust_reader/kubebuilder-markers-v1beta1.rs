//! An older version of the fixture API; `../../go/api/v1beta1` in Go.
//!
//! +groupName=fixtures.kubegen.example.com

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// Widget is the deprecated beta version of the fixture kind.
///
/// +genclient
/// +kubebuilder:object:root=true
/// +kubebuilder:resource:scope=Namespaced,shortName=wd;wdg,categories=all;fixtures,path=widgets,singular=widget
/// +kubebuilder:subresource:status
/// +kubebuilder:deprecatedversion:warning="fixtures.kubegen.example.com/v1beta1 Widget is deprecated; use v1"
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Widget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    pub spec: WidgetSpec,
    /// The observed state.
    /// +optional
    pub status: Option<WidgetStatus>,
}

/// WidgetSpec is the desired state of a beta Widget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WidgetSpec {
    /// How many replicas to run.
    /// +optional
    pub replicas: Option<i32>,
    /// A DNS label.
    pub label: String,
}

/// WidgetStatus is the observed state of a beta Widget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WidgetStatus {
    /// How many replicas run.
    pub replicas: i32,
}
