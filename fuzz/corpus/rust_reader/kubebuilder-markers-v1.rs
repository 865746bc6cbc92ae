//! The storage version of the fixture API; `../../go/api/v1` is the same API in Go.
//!
//! +groupName=fixtures.kubegen.example.com
//!
//! Where a Go field is a pointer with `omitempty`, the Rust field is an `Option`; a
//! non-pointer with `omitempty` is a `#[serde(default)]` field; an inline Go struct is
//! `#[serde(flatten)]`. The root's `metadata` has no doc comment: controller-gen drops
//! that description and kubegen keeps it (docs/kubegen-crd-and-controller-gen.md).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::ByteString;
use serde::{Deserialize, Serialize};

/// Widget is the fixture kind with every resource marker: scope, short names,
/// categories, status and scale subresources, printer columns, a selectable field,
/// and the storage version of three.
///
/// +genclient
/// +kubebuilder:object:root=true
/// +kubebuilder:resource:scope=Namespaced,shortName=wd;wdg,categories=all;fixtures,path=widgets,singular=widget
/// +kubebuilder:subresource:status
/// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
/// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".spec.replicas",description="Desired replicas"
/// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.mode",priority=1
/// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",format="date-time"
/// +kubebuilder:selectablefield:JSONPath=".spec.mode"
/// +kubebuilder:storageversion
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Widget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    pub spec: WidgetSpec,
    /// The observed state.
    #[serde(default)]
    pub status: WidgetStatus,
}

/// Mode says how a widget runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Mode {
    /// Fast.
    #[default]
    Fast,
    /// Slow.
    Slow,
}

/// WidgetSpec is the desired state of a Widget: one field per validation marker.
///
/// +kubebuilder:validation:XValidation:rule="self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// Fields shared with other kinds, inlined.
    #[serde(flatten)]
    pub common: CommonSpec,

    /// How many replicas to run.
    /// +kubebuilder:validation:Minimum=0
    /// +kubebuilder:validation:Maximum=100
    /// +optional
    pub replicas: Option<i32>,

    /// The fewest replicas.
    /// +kubebuilder:default=1
    #[serde(default)]
    pub min_replicas: i32,

    /// The most replicas.
    /// +kubebuilder:default=10
    #[serde(default)]
    pub max_replicas: i32,

    /// A step between two exclusive bounds, a multiple of 5.
    /// +kubebuilder:validation:Minimum=0
    /// +kubebuilder:validation:ExclusiveMinimum=true
    /// +kubebuilder:validation:Maximum=1000
    /// +kubebuilder:validation:ExclusiveMaximum=true
    /// +kubebuilder:validation:MultipleOf=5
    pub step: i64,

    /// A weight.
    /// +kubebuilder:validation:Minimum=0.5
    /// +optional
    pub weight: Option<f64>,

    /// A DNS label.
    /// +kubebuilder:validation:MinLength=1
    /// +kubebuilder:validation:MaxLength=63
    /// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
    pub label: String,

    /// How the widget runs.
    /// +kubebuilder:default=Fast
    #[serde(default)]
    pub mode: Mode,

    /// A size class.
    /// +kubebuilder:validation:Enum=small;medium;large
    /// +optional
    #[serde(default)]
    pub size: String,

    /// The owner's e-mail address.
    /// +kubebuilder:validation:Format=email
    /// +optional
    #[serde(default)]
    pub owner: String,

    /// Tags, each at most 16 characters, no repeats.
    /// +kubebuilder:validation:MinItems=1
    /// +kubebuilder:validation:MaxItems=10
    /// +kubebuilder:validation:UniqueItems=true
    /// +kubebuilder:validation:items:MaxLength=16
    /// +kubebuilder:validation:items:Pattern=`^[a-z]+$`
    /// +listType=set
    /// +optional
    #[serde(default)]
    pub tags: Vec<String>,

    /// Labels to copy, at least one and at most five.
    /// +kubebuilder:validation:MinProperties=1
    /// +kubebuilder:validation:MaxProperties=5
    /// +mapType=granular
    /// +optional
    #[serde(default)]
    pub labels: BTreeMap<String, String>,

    /// Limits by resource name.
    /// +optional
    #[serde(default)]
    pub limits: BTreeMap<String, i64>,

    /// Ports by name and protocol.
    /// +listType=map
    /// +listMapKey=name
    /// +listMapKey=protocol
    /// +optional
    #[serde(default)]
    pub ports: Vec<Port>,

    /// Named backends.
    /// +optional
    #[serde(default)]
    pub backends: BTreeMap<String, Backend>,

    /// Required although omitempty.
    /// +kubebuilder:validation:Required
    #[serde(default)]
    pub region: String,

    /// Optional although not omitempty (kubebuilder's marker).
    /// +kubebuilder:validation:Optional
    pub zone: String,

    /// Optional although not omitempty (Kubernetes' marker).
    /// +optional
    pub rack: String,

    /// A pause that may be null.
    /// +nullable
    /// +optional
    pub paused_at: Option<Time>,

    /// A count that travels as a string.
    /// +kubebuilder:validation:Type=string
    /// +optional
    #[serde(default)]
    pub count: String,

    /// The surge, renamed on the wire.
    /// +optional
    #[serde(rename = "surge")]
    pub max_surge: Option<IntOrString>,

    /// Memory to reserve.
    /// +optional
    pub memory: Option<Quantity>,

    /// A deadline.
    /// +optional
    #[serde(default)]
    pub deadline: Option<Time>,

    /// Any JSON, kept as written.
    /// +kubebuilder:validation:Schemaless
    /// +kubebuilder:pruning:PreserveUnknownFields
    /// +optional
    pub config: Option<serde_json::Value>,

    /// Any JSON value (apiextensions JSON).
    /// +optional
    pub values: Option<serde_json::Value>,

    /// An embedded Kubernetes object.
    /// +kubebuilder:validation:XEmbeddedResource
    /// +optional
    #[serde(default)]
    pub template: RawExtension,

    /// An integer or a string, without a Go type that says so.
    /// +kubebuilder:validation:Schemaless
    /// +kubebuilder:validation:XIntOrString
    /// +optional
    pub threshold: Option<serde_json::Value>,

    /// Settings whose unknown fields are kept.
    /// +kubebuilder:validation:XPreserveUnknownFields
    /// +optional
    pub extra: Option<Extra>,

    /// The update strategy.
    /// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="strategy is immutable",reason="FieldValueForbidden",fieldPath=".type"
    /// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || self.type == 'Rolling'",messageExpression="'maxUnavailable needs Rolling, not ' + self.type",optionalOldSelf=true
    /// +optional
    pub strategy: Option<Strategy>,

    /// Where it runs, set as a whole.
    /// +optional
    pub placement: Option<Placement>,

    /// Defaults of each kind.
    /// +optional
    #[serde(default)]
    pub defaults: Defaults,
}

/// CommonSpec holds fields several kinds share.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommonSpec {
    /// A display name.
    /// +optional
    #[serde(default)]
    pub display_name: String,
    /// The priority.
    pub priority: i32,
}

/// Port is one port of a widget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Port {
    /// The port's name.
    pub name: String,
    /// Its protocol.
    /// +kubebuilder:default=TCP
    #[serde(default)]
    pub protocol: String,
    /// Its number.
    /// +kubebuilder:validation:Minimum=1
    /// +kubebuilder:validation:Maximum=65535
    pub port: i32,
}

/// Backend is one named backend.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Backend {
    /// The backend's address.
    pub address: String,
    /// Its weight.
    /// +optional
    pub weight: Option<i32>,
}

/// Extra holds settings of plugins.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Extra {
    /// The plugin's name.
    /// +optional
    #[serde(default)]
    pub plugin: String,
}

/// Strategy says how a widget is updated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Strategy {
    /// The strategy's type.
    /// +kubebuilder:validation:Enum=Recreate;Rolling
    #[serde(rename = "type")]
    pub type_: String,
    /// How many may be unavailable during an update.
    /// +optional
    pub max_unavailable: Option<IntOrString>,
}

/// Placement is replaced as a whole on update.
///
/// +structType=atomic
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// The node's name.
    /// +optional
    #[serde(default)]
    pub node: String,
    /// Node labels to match.
    /// +optional
    /// +mapType=atomic
    #[serde(default)]
    pub selector: BTreeMap<String, String>,
}

/// Defaults has one default of each JSON kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Defaults {
    /// A string default.
    /// +kubebuilder:default="hello"
    /// +optional
    #[serde(default)]
    pub greeting: String,
    /// A boolean default.
    /// +kubebuilder:default=true
    /// +optional
    pub enabled: Option<bool>,
    /// A list default.
    /// +kubebuilder:default={"a","b"}
    /// +optional
    #[serde(default)]
    pub letters: Vec<String>,
    /// An object default.
    /// +kubebuilder:default={"node":"n1"}
    /// +optional
    pub r#where: Option<Placement>,
    /// A number default.
    /// +kubebuilder:default=0.25
    /// +optional
    pub fraction: Option<f64>,
}

/// WidgetStatus is the observed state of a Widget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// How many replicas run.
    pub replicas: i32,
    /// The label selector of the replicas, for the scale subresource.
    /// +optional
    #[serde(default)]
    pub selector: String,
    /// The generation last observed.
    /// +optional
    #[serde(default)]
    pub observed_generation: i64,
    /// The latest observations of the widget's state.
    /// +listType=map
    /// +listMapKey=type
    /// +patchStrategy=merge
    /// +patchMergeKey=type
    /// +optional
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// When it last changed.
    /// +optional
    pub last_updated: Option<Time>,
}

/// Gadget is a cluster-scoped kind with a resource path and singular of its own.
///
/// +genclient
/// +genclient:nonNamespaced
/// +kubebuilder:object:root=true
/// +kubebuilder:resource:scope=Cluster,path=gadgetries,singular=gadgetry
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Gadget {
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The gadget's settings.
    /// +optional
    #[serde(default)]
    pub spec: GadgetSpec,
}

/// GadgetSpec is the gadget's settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GadgetSpec {
    /// A colour.
    /// +optional
    #[serde(default)]
    pub colour: String,
    /// Parts by name, each a list of sizes.
    /// +optional
    #[serde(default)]
    pub parts: BTreeMap<String, Vec<i32>>,
    /// Matrix of values.
    /// +optional
    #[serde(default)]
    pub matrix: Vec<Vec<i64>>,
    /// Sizes, each between 1 and 9.
    /// +kubebuilder:validation:items:Minimum=1
    /// +kubebuilder:validation:items:Maximum=9
    /// +kubebuilder:default={}
    /// +optional
    #[serde(default)]
    pub sizes: Vec<i32>,
    /// Colours from a fixed set, each checked by a rule.
    /// +kubebuilder:validation:items:Enum=red;green;blue
    /// +kubebuilder:validation:items:XValidation:rule="self != 'blue' || true",message="blue is fine"
    /// +optional
    #[serde(default)]
    pub palette: Vec<String>,
    /// Phases, in order.
    /// +optional
    #[serde(default)]
    pub phases: Vec<Phase>,
    /// Widths by name, each a whole number of units.
    /// +optional
    #[serde(default)]
    pub widths: BTreeMap<String, Width>,
    /// A small number.
    /// +optional
    #[serde(default)]
    pub tiny: i8,
    /// A medium number.
    /// +optional
    #[serde(default)]
    pub medium: u16,
    /// An unsigned 32-bit number.
    /// +optional
    #[serde(default)]
    pub unsigned: u32,
    /// An unsigned 64-bit number.
    /// +optional
    #[serde(default)]
    pub huge: u64,
    /// A number of the platform's width.
    /// +optional
    #[serde(default)]
    pub native: isize,
    /// Bytes, base64 on the wire.
    /// +optional
    pub data: Option<ByteString>,
    /// A ratio, never null.
    pub ratio: f64,
    /// When it was last seen, to the microsecond.
    /// +optional
    #[serde(rename = "seenAt")]
    pub seen_at: Option<MicroTime>,
}

/// Phase is a step of a gadget's life.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Waiting.
    Pending,
    /// Under way.
    Running,
    /// Finished.
    Done,
}

/// Width is a whole number of units.
///
/// +kubebuilder:validation:Minimum=0
/// +kubebuilder:validation:MultipleOf=10
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Width(pub i64);
