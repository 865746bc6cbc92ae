//! An older version of the fixture API; `../../go/api/v1alpha1` in Go.
//!
//! +groupName=fixtures.kubegen.example.com

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// Widget is the alpha version of the fixture kind, no longer served.
///
/// +genclient
/// +kubebuilder:object:root=true
/// +kubebuilder:resource:scope=Namespaced,shortName=wd;wdg,categories=all;fixtures,path=widgets,singular=widget
/// +kubebuilder:unservedversion
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Widget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default)]
    pub spec: WidgetSpec,
}

/// WidgetSpec is the desired state of an alpha Widget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WidgetSpec {
    /// How many replicas to run.
    /// +optional
    #[serde(default)]
    pub size: i32,
}
