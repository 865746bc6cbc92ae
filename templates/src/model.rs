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
//! Every input fills the same model: the CRD reader, the Rust-source reader (types with
//! `+genclient` markers or kube-derive's `#[kube(...)]`), and a description of built-in
//! kinds. Where a kind's Rust type comes from is its [`KindSource`]; which client verbs
//! it has are [`ClientTags`] in code-generator's vocabulary (the CRD reader derives them
//! from scope and subresources, the Rust reader from `+genclient` markers). Emitters read
//! tags, never input-specific facts. [`validate`](crate::validate::validate) checks the
//! guarantees above before anything is emitted, so emitters have no fallbacks.

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

/// One kind: its names, scope, subresources, client verbs, and where its Rust type
/// comes from. This is the one description of a resource: the generated
/// `RESOURCE_INFO`, and the fake clientset's server registration, derive from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Kind {
    /// Kind, resource and list names.
    pub names: Names,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// Whether the server serves the `status` subresource (a resource fact; the client
    /// verbs are in [`Kind::client`]).
    pub status_subresource: bool,
    /// The `scale` subresource, when the server serves it.
    pub scale: Option<Scale>,
    /// The typed client's verbs and extension methods (code-generator's tags).
    pub client: ClientTags,
    /// The version's structural schema (`openAPIV3Schema`) as JSON, when the input has
    /// one (CRDs): the fake clientset's server validates, prunes and defaults with it.
    pub schema_json: Option<String>,
    /// Additional printer columns, in declaration order.
    pub printer_columns: Vec<PrinterColumn>,
    /// Whether the version is served.
    pub served: bool,
    /// Whether the version is the storage version.
    pub storage: bool,
    /// Whether the version is deprecated.
    pub deprecated: bool,
    /// The API server converts between the kind's versions with a webhook (a CRD's
    /// `spec.conversion.strategy: Webhook`): kubegen generates the hub-and-spoke
    /// conversions between each served version and the storage version (the hub).
    pub conversion_webhook: bool,
    /// The deprecation warning the server sends, when set.
    pub deprecation_warning: Option<String>,
    /// Where the Rust type of the kind comes from.
    pub source: KindSource,
    /// The Rust name of the list type (`FooList`); reserved in the version's namespace.
    pub list_type_name: String,
    /// The CRD's `selectableFields` JSON paths, in order.
    pub selectable_fields: Vec<String>,
    /// The CRD's own `metadata.annotations` and `metadata.labels` (the
    /// `api-approved.kubernetes.io` approval, a bundle version), carried through the
    /// generated types as `+kubebuilder:metadata` markers.
    pub crd_metadata: CrdMetadata,
    /// For built-in kinds: the kind's schema in Kubernetes' OpenAPI document, from which
    /// its apply configurations are generated (one per referenced definition).
    pub openapi: Option<OpenApiKind>,
}

/// A built-in kind's place in Kubernetes' OpenAPI document.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenApiKind {
    /// The kind's definition name (`io.k8s.api.apps.v1.Deployment`).
    pub name: String,
    /// The document's definitions, shared by every kind of one input.
    pub definitions: std::sync::Arc<OpenApiDefinitions>,
}

/// The definitions of an OpenAPI document (v3 `components.schemas`), by name, with
/// references written `#/components/schemas/<name>`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpenApiDefinitions {
    /// Schemas by definition name.
    pub schemas: std::collections::BTreeMap<String, serde_json::Value>,
    /// The cargo feature of the mounting crate that gates the generated apply
    /// configurations (and the typed clients' `apply_config`), when they are optional.
    pub feature: Option<String>,
    /// The protobuf messages of the definitions, by message name (`core/v1.PodSpec` for
    /// `io.k8s.api.core.v1.PodSpec`): the compact mirrors of the definitions found here
    /// get generated protobuf decoders. Empty: none do.
    pub protobuf: std::collections::BTreeMap<String, Vec<ProtobufField>>,
}

/// One field of a protobuf message, as `kubegen_apimachinery::protobuf`'s table
/// describes it (written from the Go types of `k8s.io/api`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtobufField {
    /// The field number.
    pub number: u64,
    /// The JSON name.
    pub json: String,
    /// The type: `string`, `bool`, `int32`, `int64`, `msg:<message>`, `map:<type>`,
    /// `list:<type>`, or a special type (`time`, `quantity`, ...).
    pub ty: String,
    /// The Go facts that decide the field's JSON: `p` pointer, `r` repeated (a slice),
    /// `o` omitempty, `z` omitzero, `i` inline.
    pub flags: String,
}

/// Annotations and labels of a CustomResourceDefinition object itself (not of its
/// custom resources): controller-gen's `+kubebuilder:metadata:annotations=` and
/// `labels=`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrdMetadata {
    /// `metadata.annotations`, by key.
    pub annotations: std::collections::BTreeMap<String, String>,
    /// `metadata.labels`, by key.
    pub labels: std::collections::BTreeMap<String, String>,
}

/// Where a kind's Rust type comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum KindSource {
    /// A [`TypeDef::Struct`] of this version, emitted by kubegen (CRD input).
    Generated {
        /// Name of the root struct in [`Version::types`].
        type_name: String,
    },
    /// A type the user wrote in the crate that mounts the generated tree (Rust input):
    /// kubegen emits no definition, only the register items the type lacks, and clients,
    /// listers and informers that name it by path.
    User {
        /// Path of the type as the generated code names it
        /// (`crate::apis::samplecontroller::v1alpha1::Foo`).
        rust_path: String,
        /// Which register items the type already has.
        has: ExistingImpls,
    },
    /// A type from another crate that implements kube's `Resource` already (k8s-openapi's
    /// `Pod`): only clients, listers and informers are generated for it.
    External {
        /// Fully qualified path (`::kubegen_runtime::k8s_openapi::api::core::v1::Pod`).
        rust_path: String,
    },
}

/// Register items a user-written kind already has, so kubegen emits only the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExistingImpls {
    /// `kube::Resource` (kube-derive's `#[derive(CustomResource)]` writes it): kubegen
    /// then emits none of k8s-openapi's `Resource`, `Metadata`, `ListableResource`,
    /// whose blanket impl of `kube::Resource` would conflict.
    pub kube_resource: bool,
    /// k8s-openapi's `Resource`, `ListableResource` and `Metadata`, written by hand.
    pub k8s_openapi_resource: bool,
    /// An inherent `new` (kube-derive writes `new(name, spec)`).
    pub new_fn: bool,
}

/// A typed client's verbs and extension methods, in code-generator's vocabulary.
///
/// The CRD reader derives them from scope and subresources (`updateStatus` and
/// `applyStatus` with a status subresource; `GetScale`, `UpdateScale` and `PatchScale`
/// methods with a scale subresource); the Rust reader from `+genclient` markers.
/// Listers and informers exist only for kinds with `list` and `watch`, as informer-gen
/// decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientTags {
    /// The verbs the typed client has.
    pub verbs: std::collections::BTreeSet<Verb>,
    /// `+genclient:method=...` extension methods, in declaration order.
    pub methods: Vec<ExtensionMethod>,
}

impl ClientTags {
    /// Every verb; the status verbs only when `status` is true.
    pub fn all(status: bool) -> Self {
        ClientTags {
            verbs: Verb::ALL
                .iter()
                .copied()
                .filter(|v| status || !v.is_status())
                .collect(),
            methods: Vec::new(),
        }
    }

    /// Whether the client has `verb`.
    pub fn has(&self, verb: Verb) -> bool {
        self.verbs.contains(&verb)
    }

    /// Whether the kind gets a lister and an informer (it can be listed and watched).
    pub fn has_informer(&self) -> bool {
        self.has(Verb::List) && self.has(Verb::Watch)
    }
}

/// A client verb, named as code-generator names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// `create`.
    Create,
    /// `update`.
    Update,
    /// `updateStatus` (also gives `patch_status`).
    UpdateStatus,
    /// `delete`.
    Delete,
    /// `deleteCollection`.
    DeleteCollection,
    /// `get`.
    Get,
    /// `list`.
    List,
    /// `watch`.
    Watch,
    /// `patch`.
    Patch,
    /// `apply`.
    Apply,
    /// `applyStatus`.
    ApplyStatus,
}

impl Verb {
    /// Every verb, in code-generator's order.
    pub const ALL: [Verb; 11] = [
        Verb::Create,
        Verb::Update,
        Verb::UpdateStatus,
        Verb::Delete,
        Verb::DeleteCollection,
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Patch,
        Verb::Apply,
        Verb::ApplyStatus,
    ];

    /// The read-only verbs (`+genclient:readonly`).
    pub const READ_ONLY: [Verb; 3] = [Verb::Get, Verb::List, Verb::Watch];

    /// The name in markers (`updateStatus`).
    pub fn name(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::UpdateStatus => "updateStatus",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deleteCollection",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Patch => "patch",
            Verb::Apply => "apply",
            Verb::ApplyStatus => "applyStatus",
        }
    }

    /// The verb a marker names, if any.
    pub fn parse(name: &str) -> Option<Verb> {
        Verb::ALL.iter().copied().find(|v| v.name() == name)
    }

    /// Whether the verb acts on the status subresource.
    pub fn is_status(self) -> bool {
        matches!(self, Verb::UpdateStatus | Verb::ApplyStatus)
    }
}

/// A `+genclient:method=Name,verb=...,subresource=...,input=...,result=...` method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtensionMethod {
    /// The method name as written (`UpdateScale`); the Rust method is its snake case.
    pub name: String,
    /// What the method does: `get`, `create`, `update`, `patch`, `apply`, `delete`,
    /// `list` or `watch` (the last three only without a subresource are rejected).
    pub verb: Verb,
    /// The subresource it calls (`scale`), if any.
    pub subresource: Option<String>,
    /// The request body's type; `None` is the kind itself.
    pub input: Option<TypeRef>,
    /// The response's type; `None` is the kind itself.
    pub result: Option<TypeRef>,
}

impl ExtensionMethod {
    /// `GetScale`, `UpdateScale` and `PatchScale` on the `scale` subresource with
    /// `autoscaling/v1` `Scale`: what a kind with a scale subresource gets, as
    /// code-generator users declare with `+genclient:method=`.
    pub fn scale_methods() -> Vec<ExtensionMethod> {
        [
            ("GetScale", Verb::Get),
            ("UpdateScale", Verb::Update),
            ("PatchScale", Verb::Patch),
        ]
        .into_iter()
        .map(|(name, verb)| ExtensionMethod {
            name: name.to_owned(),
            verb,
            subresource: Some("scale".to_owned()),
            input: (verb == Verb::Update).then_some(TypeRef::Scale),
            result: Some(TypeRef::Scale),
        })
        .collect()
    }
}

/// A type an extension method sends or receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeRef {
    /// `autoscaling/v1` `Scale` (the runtime's scale verbs).
    Scale,
    /// Any other type, by path as the generated code names it.
    Path(String),
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

/// A type of a version: emitted into its `types.rs`, or (Rust input) existing in the
/// user's crate and given only a deep copy.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeDef {
    /// A struct with named fields.
    Struct(StructDef),
    /// A closed set of string values plus a catch-all.
    Enum(EnumDef),
    /// An enum the user wrote, without `Clone` (Rust input): kubegen emits its `Clone`.
    ExistingEnum(ExistingEnumDef),
}

impl TypeDef {
    /// The Rust name of the type.
    pub fn name(&self) -> &str {
        match self {
            TypeDef::Struct(s) => &s.name,
            TypeDef::Enum(e) => &e.name,
            TypeDef::ExistingEnum(e) => &e.name,
        }
    }

    /// Whether the type exists in the user's crate (kubegen emits no definition).
    pub fn is_existing(&self) -> bool {
        match self {
            TypeDef::Struct(s) => s.existing.is_some(),
            TypeDef::Enum(_) => false,
            TypeDef::ExistingEnum(_) => true,
        }
    }
}

/// An enum of the user's crate (Rust input), as its deep copy needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExistingEnumDef {
    /// Rust name (`Phase`).
    pub name: String,
    /// The path the generated code names it by.
    pub path: String,
    /// Its variants, in declaration order.
    pub variants: Vec<ExistingVariant>,
}

/// One variant of an [`ExistingEnumDef`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExistingVariant {
    /// The variant's name.
    pub name: String,
    /// What it holds.
    pub fields: VariantFields,
}

/// The fields of an enum variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VariantFields {
    /// `A`.
    Unit,
    /// `A(T, U)`: how many.
    Tuple(usize),
    /// `A { x: T }`: the field names.
    Named(Vec<String>),
}

/// A struct: an object schema with properties.
#[derive(Clone, Debug, PartialEq)]
pub struct StructDef {
    /// Rust name (`FooSpec`).
    pub name: String,
    /// When set, the struct exists already at this path (Rust input): kubegen emits no
    /// definition for it, only its deep copy (`Clone`).
    pub existing: Option<String>,
    /// The schema's description.
    pub doc: Option<String>,
    /// Where the type came from (`spec.versions[0]...properties.spec`), for docs/errors.
    pub origin: String,
    /// Fields in declaration order.
    pub fields: Vec<Field>,
    /// When set, the name of a flattened `BTreeMap<String, serde_json::Value>` field that
    /// keeps properties the schema does not declare (preserve-unknown-fields).
    pub unknown_fields: Option<String>,
    /// What the object's schema says beyond what its fields imply (a root's own
    /// validation; see [`crate::schema`]).
    pub schema: SchemaExtra,
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
    /// `Option<ty>`, skipped when `None`: the key may be absent (a `Nullable<ty>`, skipped
    /// when absent, when the field is also [`Field::nullable`]).
    pub optional: bool,
    /// The schema lists the key as required (a required field is still `optional` when
    /// it is nullable or has a default).
    pub required: bool,
    /// The schema's `nullable`: an optional nullable field is a
    /// `kubegen_runtime::types::Nullable<T>` (absent, explicit `null`, or a value), so
    /// an explicit `null` is written back as it came.
    pub nullable: bool,
    /// The schema default, as JSON (exposed by `apply_defaults`, never injected by serde).
    pub default: Option<serde_json::Value>,
    /// `#[serde(flatten)]` on a user-written field (Rust input): its type's fields sit in
    /// the parent object. Never set for types kubegen defines.
    pub flatten: bool,
    /// `#[serde(skip)]` on a user-written field (Rust input): not on the wire, but still
    /// part of the value (a deep copy clones it). Never set for types kubegen defines.
    pub skip: bool,
    /// What the field's schema says beyond what its type implies (validation, CEL rules,
    /// list types, ...), carried as markers; see [`crate::schema`].
    pub schema: SchemaExtra,
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
    /// Any other existing type, by a path the generated code can name
    /// (checked by [`validate`](crate::validate::validate)).
    External(String),
}

/// What a schema node says beyond the schema its Rust type implies: validation, CEL
/// rules, list and map types, and anything the implied schema gets wrong for one node
/// (see [`crate::schema`], which derives the implied schema, and [`crate::markers`],
/// which reads and writes these as markers).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaExtra {
    /// Keys set on the node; a `null` value removes an implied key.
    pub set: std::collections::BTreeMap<String, serde_json::Value>,
    /// Extras of the element node: a `Vec`'s `items`, a map's `additionalProperties`.
    pub element: Option<Box<SchemaExtra>>,
    /// The field is not in the schema at all (a root's `apiVersion`, `kind` or
    /// `metadata` that the source schema leaves out).
    pub omit: bool,
}

impl SchemaExtra {
    /// Whether there is nothing beyond the implied schema.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.element.is_none() && !self.omit
    }

    /// The extras of the element node, created when missing.
    pub fn element_mut(&mut self) -> &mut SchemaExtra {
        self.element.get_or_insert_with(Default::default)
    }
}
