//! +groupName=example.com
//! A kind with the scale subresource, declared the way code-generator users declare it.
//!
//! +groupName=scaling.example.com

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubegen_runtime::types::{ApiVersion, Kind};
use serde::{Deserialize, Serialize};

/// A pool of workers whose size the scale subresource sets.
///
/// +genclient
/// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
/// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
/// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    /// The API version.
    #[serde(rename = "apiVersion", default)]
    pub api_version: ApiVersion<Pool>,
    /// The kind.
    #[serde(default)]
    pub kind: Kind<Pool>,
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default)]
    pub spec: PoolSpec,
    /// The observed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PoolStatus>,
}

/// The desired size of a pool.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolSpec {
    /// Desired workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// The observed size of a pool.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolStatus {
    /// Running workers.
    #[serde(default)]
    pub replicas: i32,
    /// The label selector of the workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}
