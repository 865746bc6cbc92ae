//! The model (IR): what every input fills and every emitter reads.
//!
//! An [`Api`] is groups -> versions -> kinds, plus the type definitions of each version.
//! The model is input-neutral: the CRD reader fills it today, the Rust-source reader
//! (`+genclient` markers) will fill it later, and a kind whose Rust type already exists
//! elsewhere (k8s-openapi's `Pod`) is a [`KindSource::External`], so clientsets, listers
//! and informers can be generated for built-in kinds from the same model.
//!
//! The model holds decisions, not raw schema: Rust names are already chosen and unique,
//! optionality already decided, nested types already named and deduplicated. Emitters
//! only print. What the model guarantees to emitters (inputs must uphold it):
//!
//! - type names are unique within a [`Version`], and never equal a kind's list type name;
//! - field Rust names are unique within a struct and valid identifiers (raw keywords are
//!   not used: `type` becomes `type_`, as in k8s-openapi);
//! - every [`Ty::Named`] names a [`TypeDef`] of the same version.
//!
//! Room for what comes next: clientset, lister and informer emitters read the same
//! [`Kind`]s (names, scope, `status_subresource` for `update_status`, the list type), and
//! [`KindSource::External`] lets them serve kinds whose types kubegen does not emit.
//! Per-kind client options (`+genclient:onlyVerbs=`, `noStatus`, ...) will join [`Kind`]
//! when the Rust-source input lands.

/// Everything one generator run emits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Api {
    /// API groups, sorted by module name.
    pub groups: Vec<Group>,
}

/// One API group (`samplecontroller.k8s.io`).
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The group's DNS name (`samplecontroller.k8s.io`; empty for the core group).
    pub name: String,
    /// The Rust module name (`samplecontroller`), unique within the [`Api`].
    pub module: String,
    /// Versions, sorted by module name.
    pub versions: Vec<Version>,
}

/// One version of a group (`v1alpha1`): its kinds and the types they use.
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    /// The version name on the wire (`v1alpha1`).
    pub name: String,
    /// The Rust module name (`v1alpha1`).
    pub module: String,
    /// Kinds served in this version, sorted by kind name.
    pub kinds: Vec<Kind>,
    /// Type definitions emitted into this version's `types.rs`, in emission order.
    pub types: Vec<TypeDef>,
}

/// One kind: its names, scope, subresources, and where its Rust type comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Kind {
    /// Kind, resource and list names.
    pub names: Names,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Whether the `status` subresource is enabled (clientsets get `update_status`).
    pub status_subresource: bool,
    /// The `scale` subresource, when enabled.
    pub scale: Option<Scale>,
    /// Additional printer columns, in declaration order.
    pub printer_columns: Vec<PrinterColumn>,
    /// Whether the version is served.
    pub served: bool,
    /// Whether the version is the storage version.
    pub storage: bool,
    /// Whether the version is deprecated.
    pub deprecated: bool,
    /// The deprecation warning the server sends, when set.
    pub deprecation_warning: Option<String>,
    /// Where the Rust type of the kind comes from.
    pub source: KindSource,
    /// The Rust name of the list type (`FooList`); reserved in the version's namespace.
    pub list_type_name: String,
}

/// Where a kind's Rust type comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum KindSource {
    /// A [`TypeDef::Struct`] of this version, emitted by kubegen (CRDs, Rust input).
    Generated {
        /// Name of the root struct in [`Version::types`].
        type_name: String,
    },
    /// A type that exists already and implements k8s-openapi's `Resource`, `Metadata`
    /// and `ListableResource` (k8s-openapi's `Pod`): only clients, listers and informers
    /// are generated for it.
    External {
        /// Fully qualified path (`::kubegen_runtime::k8s_openapi::api::core::v1::Pod`).
        rust_path: String,
    },
}

/// A kind's names, as a CRD's `spec.names` declares them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Names {
    /// `Foo`.
    pub kind: String,
    /// `foos`.
    pub plural: String,
    /// `foo`.
    pub singular: String,
    /// `FooList`.
    pub list_kind: String,
    /// `["fo"]`.
    pub short_names: Vec<String>,
    /// `["all"]`.
    pub categories: Vec<String>,
}

/// Namespaced or cluster-scoped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Objects live in a namespace.
    Namespaced,
    /// Objects are cluster-wide.
    Cluster,
}

/// The `scale` subresource's JSON paths.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// `.spec.replicas`.
    pub spec_replicas_path: String,
    /// `.status.replicas`.
    pub status_replicas_path: String,
    /// `.status.selector`, when declared.
    pub label_selector_path: Option<String>,
}

/// One additional printer column.
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    /// Header.
    pub name: String,
    /// OpenAPI type (`integer`, `string`, `date`, ...).
    pub type_: String,
    /// OpenAPI format.
    pub format: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Priority; 0 is shown in the standard view.
    pub priority: i32,
    /// JSON path.
    pub json_path: String,
}

/// A type emitted into a version's `types.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeDef {
    /// A struct with named fields.
    Struct(StructDef),
    /// A closed set of string values plus a catch-all.
    Enum(EnumDef),
}

impl TypeDef {
    /// The Rust name of the type.
    pub fn name(&self) -> &str {
        match self {
            TypeDef::Struct(s) => &s.name,
            TypeDef::Enum(e) => &e.name,
        }
    }
}

/// A struct: an object schema with properties.
#[derive(Clone, Debug, PartialEq)]
pub struct StructDef {
    /// Rust name (`FooSpec`).
    pub name: String,
    /// The schema's description.
    pub doc: Option<String>,
    /// Where the type came from (`spec.versions[0]...properties.spec`), for docs/errors.
    pub origin: String,
    /// Fields in declaration order.
    pub fields: Vec<Field>,
    /// When set, the name of a flattened `BTreeMap<String, serde_json::Value>` field that
    /// keeps properties the schema does not declare (preserve-unknown-fields).
    pub unknown_fields: Option<String>,
}

/// One field of a struct.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The JSON key, exactly (`deploymentName`).
    pub json_name: String,
    /// The Rust identifier (`deployment_name`).
    pub rust_name: String,
    /// The value type (without the `Option` that [`Field::optional`] adds).
    pub ty: Ty,
    /// The schema's description.
    pub doc: Option<String>,
    /// `Option<ty>`, skipped when `None`: the key may be absent (or null when nullable).
    pub optional: bool,
    /// The schema lists the key as required (a required field is still `optional` when
    /// it is nullable or has a default).
    pub required: bool,
    /// The schema's `nullable` (documented; null deserializes as `None`).
    pub nullable: bool,
    /// The schema default, as JSON (exposed by `apply_defaults`, never injected by serde).
    pub default: Option<serde_json::Value>,
}

/// A string enum.
#[derive(Clone, Debug, PartialEq)]
pub struct EnumDef {
    /// Rust name.
    pub name: String,
    /// The schema's description.
    pub doc: Option<String>,
    /// Listed values, in schema order.
    pub variants: Vec<Variant>,
    /// Name of the catch-all variant holding values the schema does not list
    /// (`Other`, or another name when a listed value takes `Other`).
    pub other_variant: String,
}

/// One listed value of an [`EnumDef`].
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Rust name (`NotEquals` for `!=`).
    pub name: String,
    /// The wire value, exactly.
    pub value: String,
}

/// A field's or element's type.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    /// `String` (also `format: byte`, kept as base64 text).
    String,
    /// `bool`.
    Bool,
    /// `i32` (`format: int32`).
    I32,
    /// `i64` (`integer` without format, or `int64`).
    I64,
    /// `serde_json::Number` (`number`): keeps `1` and `1.0` apart.
    Number,
    /// The runtime's lossless `DateTime` (`format: date-time`).
    DateTime,
    /// k8s-openapi's `IntOrString`.
    IntOrString,
    /// `serde_json::Value`: any JSON.
    Json,
    /// `Vec<T>`.
    Vec(Box<Ty>),
    /// `BTreeMap<String, T>`.
    Map(Box<Ty>),
    /// `Option<T>` inside a container (nullable items or map values).
    Option(Box<Ty>),
    /// `Box<T>` (recursion).
    Box(Box<Ty>),
    /// A [`TypeDef`] of the same version.
    Named(String),
    /// k8s-openapi's meta/v1 `ObjectMeta`.
    ObjectMeta,
    /// The runtime's meta/v1 `Condition` with a lossless `lastTransitionTime`
    /// (`kubegen_runtime::types::Condition`; only when a schema is exactly that type).
    Condition,
    /// The root's `apiVersion`: the runtime's zero-sized `ApiVersion<Self>`.
    ApiVersion,
    /// The root's `kind`: the runtime's zero-sized `Kind<Self>`.
    KindField,
    /// Any other existing type, by fully qualified path.
    External(String),
}
