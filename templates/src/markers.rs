//! The marker registry: every marker kubegen reads or writes, defined once.
//!
//! A marker is a doc-comment line starting with `+` (`/// +kubebuilder:validation:Minimum=1`),
//! as Go's gengo and controller-tools read `// +` comments. Each [`MarkerDef`] says
//! where a marker may stand ([`Target`]), how its value is written ([`Grammar`]), what
//! it does ([`Effect`]: to a schema node, to the resource a kind's CRD describes, to the
//! typed client, to the package) and its help line. Everything that handles markers
//! reads this table:
//!
//! - **reading** Rust input: [`MarkerSet::apply`] (schema markers of a field or type)
//!   and [`ResourceFacts::apply`] (a kind's resource markers) look the marker up and run
//!   its effect; the Rust reader checks each marker's target with [`check_target`] and
//!   suggests the nearest name for an unknown one ([`suggest`]);
//! - **writing** (CRD -> Rust): [`write_lines`] prints a schema node's extras with the
//!   first definition that sets the key and can print the value, controller-gen's
//!   spelling first;
//! - **checking** a marker against its field's type: [`MarkerDef::applies_to`];
//! - **documenting**: `kubegen markers` prints [`REGISTRY`], as `controller-gen crd -www`
//!   prints controller-gen's.
//!
//! Adding a marker is one entry in [`REGISTRY`] (plus its test): a schema key set from
//! a value ([`Effect::SetKey`]) needs no code; anything else names a function.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::{CrdMetadata, PrinterColumn, Scale, SchemaExtra, Scope};

/// Where a marker may stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// In a package's inner docs (`//!` of its `mod.rs` or `doc.rs`).
    Package,
    /// On a struct or enum.
    Type,
    /// On a field.
    Field,
}

impl Target {
    /// The word used in help and errors.
    pub fn name(self) -> &'static str {
        match self {
            Target::Package => "package",
            Target::Type => "type",
            Target::Field => "field",
        }
    }
}

/// How a marker's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grammar {
    /// No value (`+nullable`); `=true`/`=false` also read.
    Flag,
    /// `=true` or `=false`.
    Bool,
    /// A number (`=10`, `=-1.5`).
    Number,
    /// A non-negative integer.
    Count,
    /// A string: `"..."` (JSON escapes), `` `...` `` (raw) or bare text.
    Str,
    /// A word (`=int32`); `=""` removes the key.
    Word,
    /// Values separated by `;` (`=a;b;c`), or a JSON list.
    List,
    /// A JSON value, or controller-gen's literal syntax (`{a,b}`, `{k: v}`).
    Json,
    /// `:key=value,key=value` after the marker's name, with these keys.
    Keyed(&'static [&'static str]),
    /// Free text after `=` (group names, verb lists).
    Text,
}

impl Grammar {
    /// How the value is written, for help.
    pub fn syntax(self) -> String {
        match self {
            Grammar::Flag => String::new(),
            Grammar::Bool => "=<bool>".into(),
            Grammar::Number => "=<number>".into(),
            Grammar::Count => "=<count>".into(),
            Grammar::Str => "=<string>".into(),
            Grammar::Word => "=<word>".into(),
            Grammar::List => "=<a;b;c>".into(),
            Grammar::Json => "=<JSON>".into(),
            Grammar::Keyed(keys) => format!(
                ":{}",
                keys.iter()
                    .map(|k| format!("{k}=<..>"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Grammar::Text => "=<value>".into(),
        }
    }
}

/// What a marker does.
#[derive(Clone, Copy)]
pub enum Effect {
    /// Sets one schema key from the value (read and written generically).
    SetKey(&'static str),
    /// Changes a schema node (or the field's facts) in its own way; `writes` is the
    /// schema key it prints back from CRD input, with its printer.
    Schema {
        /// Reads the marker into the set.
        read: fn(&mut MarkerSet, &Use<'_>) -> Result<(), MarkerError>,
        /// The key it writes and how (`None`: never written).
        write: Option<(&'static str, Printer)>,
    },
    /// Describes the resource of a kind (its CRD's names, versions, subresources,
    /// columns).
    Resource(fn(&mut ResourceFacts, &Use<'_>) -> Result<(), MarkerError>),
    /// A `+genclient` tag: read by the Rust reader's kind finder into the kind's client
    /// verbs, as client-gen reads them.
    Client,
    /// A package fact (group, version, deep-copy default): read by the Rust reader.
    Package,
    /// Read by `kubegen rbac` / `kubegen webhook` from any comment of the controller's
    /// code (`codegen-cli/src/manifests.rs`).
    Manifest,
    /// A marker of another generator kubegen knows and leaves alone (controller-gen's
    /// object generator, deepcopy-gen's interfaces).
    Other,
}

/// Prints a schema value as marker lines at an `items:` depth (`None`: cannot).
pub type Printer = fn(&Value, usize) -> Option<Vec<String>>;

/// One marker.
#[derive(Clone, Copy)]
pub struct MarkerDef {
    /// The name as written after `+` (without its value or keyed arguments).
    pub name: &'static str,
    /// Where it may stand.
    pub targets: &'static [Target],
    /// Only on a kind's root type (the struct with `+genclient` or kube-derive's root).
    pub kind_only: bool,
    /// Accepts the `items:` form for list elements (`+kubebuilder:validation:items:MaxLength=3`).
    pub items: bool,
    /// Its value.
    pub grammar: Grammar,
    /// The schema types it applies to (empty: any), checked against the field's type.
    pub applies_to: &'static [&'static str],
    /// What it does.
    pub effect: Effect,
    /// One line of help.
    pub help: &'static str,
}

impl MarkerDef {
    /// `+name<syntax>`, as help prints it.
    pub fn usage(&self) -> String {
        format!("+{}{}", self.name, self.grammar.syntax())
    }

    /// Whether it may stand at `target`.
    pub fn allows(&self, target: Target) -> bool {
        self.targets.contains(&target)
    }
}

/// One use of a marker, resolved against its definition.
#[derive(Clone, Debug)]
pub struct Use<'a> {
    /// The name as written, `items:` included (`kubebuilder:validation:items:Maximum`).
    pub written: &'a str,
    /// The value after the first `=`, for `=` markers.
    pub value: Option<&'a str>,
    /// For keyed markers: the arguments (`name="Ready",type=string`); for
    /// `+kubegen:schema:<key>`: the key.
    pub args: String,
    /// How many `items:` levels down it applies.
    pub depth: usize,
    /// Which marker of the field or type it is (for errors that point back at it).
    pub index: usize,
}

impl Use<'_> {
    /// The value, or an error saying the marker needs one.
    pub fn value_or(&self, what: &str) -> Result<&str, MarkerError> {
        self.value.ok_or_else(|| {
            err(
                format!("`+{}` needs a value", self.written),
                format!("write `+{}={what}`", self.written),
            )
        })
    }

    /// The keyed arguments, parsed as strings.
    pub fn keyed(&self, keys: &[&str]) -> Result<Vec<(String, String)>, MarkerError> {
        let args = resource_args(&self.args)?;
        for (k, _) in &args {
            if !keys.contains(&k.as_str()) {
                return Err(err(
                    format!("`+{}` has no argument `{k}`", self.written),
                    format!(
                        "use {}",
                        keys.iter()
                            .map(|k| format!("{k}="))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        Ok(args)
    }
}

const F: &[Target] = &[Target::Field];
const T: &[Target] = &[Target::Type];
const FT: &[Target] = &[Target::Field, Target::Type];
const P: &[Target] = &[Target::Package];
const PT: &[Target] = &[Target::Package, Target::Type];
const NUMERIC: &[&str] = &["integer", "number"];
const TEXT: &[&str] = &["string"];
const ARRAY: &[&str] = &["array"];
const OBJECT: &[&str] = &["object"];

macro_rules! validation {
    ($name:literal, $key:literal, $grammar:expr, $applies:expr, $help:literal) => {
        MarkerDef {
            name: concat!("kubebuilder:validation:", $name),
            targets: FT,
            kind_only: false,
            items: true,
            grammar: $grammar,
            applies_to: $applies,
            effect: Effect::SetKey($key),
            help: $help,
        }
    };
}

macro_rules! def {
    ($name:literal, $targets:expr, $grammar:expr, $effect:expr, $help:literal) => {
        MarkerDef {
            name: $name,
            targets: $targets,
            kind_only: false,
            items: false,
            grammar: $grammar,
            applies_to: &[],
            effect: $effect,
            help: $help,
        }
    };
}

macro_rules! resource {
    ($name:literal, $grammar:expr, $read:expr, $help:literal) => {
        MarkerDef {
            name: $name,
            targets: T,
            kind_only: true,
            items: false,
            grammar: $grammar,
            applies_to: &[],
            effect: Effect::Resource($read),
            help: $help,
        }
    };
}

macro_rules! client {
    ($name:literal, $grammar:expr, $help:literal) => {
        MarkerDef {
            name: $name,
            targets: T,
            kind_only: false,
            items: false,
            grammar: $grammar,
            applies_to: &[],
            effect: Effect::Client,
            help: $help,
        }
    };
}

/// Every marker kubegen knows, in the order help lists them. Where two spell the same
/// schema key, the first one is what CRD -> Rust writes.
pub static REGISTRY: &[MarkerDef] = &[
    // --- the package ------------------------------------------------------------
    def!("groupName", P, Grammar::Text, Effect::Package, "the API group of the package's kinds (a DNS subdomain)"),
    def!("versionName", P, Grammar::Text, Effect::Package, "the API version of the package's kinds, when no module segment is one"),
    def!("k8s:deepcopy-gen", PT, Grammar::Text, Effect::Package, "=package: a Clone for every struct of the package; =true/=false on one type"),
    def!("k8s:deepcopy-gen:interfaces", T, Grammar::Text, Effect::Other, "deepcopy-gen's runtime.Object interfaces (kubegen's register items cover them)"),
    // --- the typed client (client-gen's tags) -------------------------------------
    client!("genclient", Grammar::Flag, "makes the struct a kind with a typed client, lister and informer"),
    client!("genclient:nonNamespaced", Grammar::Flag, "the kind is cluster-scoped"),
    client!("genclient:noVerbs", Grammar::Flag, "a client with no verbs (extension methods only)"),
    client!("genclient:noStatus", Grammar::Flag, "no status verbs even though the kind has a status field"),
    client!("genclient:readonly", Grammar::Flag, "only get, list and watch"),
    client!("genclient:onlyVerbs", Grammar::Text, "only these verbs (comma-separated)"),
    client!("genclient:skipVerbs", Grammar::Text, "every verb but these (comma-separated)"),
    client!("genclient:method", Grammar::Text, "an extension method: =Name,verb=..,subresource=..,input=..,result=.."),
    client!("resourceName", Grammar::Text, "the kind's plural (resource) name, when code-generator's English rules get it wrong"),
    // --- the resource (controller-gen's CRD markers on a kind's root type) ---------
    resource!("kubebuilder:resource", Grammar::Keyed(&["path", "singular", "scope", "shortName", "categories"]), read_resource, "the CRD's names and scope (path is the plural; lists are ;-separated)"),
    resource!("kubebuilder:subresource:status", Grammar::Flag, |r, _| { r.kind_status = true; Ok(()) }, "serve the status subresource"),
    resource!("kubebuilder:subresource:scale", Grammar::Keyed(&["specpath", "statuspath", "selectorpath"]), read_scale, "serve the scale subresource"),
    resource!("kubebuilder:printcolumn", Grammar::Keyed(&["name", "type", "JSONPath", "description", "format", "priority"]), read_printcolumn, "an additional printer column (kubectl get)"),
    resource!("kubebuilder:selectablefield", Grammar::Keyed(&["JSONPath"]), read_selectable, "a field usable in field selectors"),
    resource!("kubebuilder:storageversion", Grammar::Flag, |r, _| { r.storage = true; Ok(()) }, "this version is the storage version"),
    resource!("kubebuilder:unservedversion", Grammar::Flag, |r, _| { r.served = false; Ok(()) }, "this version is not served"),
    resource!("kubebuilder:deprecatedversion", Grammar::Keyed(&["warning"]), read_deprecated, "this version is deprecated (with the warning clients get)"),
    resource!("kubebuilder:skipversion", Grammar::Flag, |r, _| { r.skip = true; Ok(()) }, "leave this version out of the CRD"),
    resource!("kubebuilder:metadata", Grammar::Keyed(&["annotations", "labels"]), read_metadata, "annotations and labels of the CRD object itself (key=value; repeat for more)"),
    resource!("kubegen:resource:listKind", Grammar::Text, |r, u| { r.list_kind = Some(u.value_or("<ListKind>")?.to_owned()); Ok(()) }, "the CRD's listKind, when it is not <Kind>List"),
    resource!("kubegen:resource:kind", Grammar::Text, |r, u| { r.kind = Some(u.value_or("<Kind>")?.to_owned()); Ok(()) }, "the CRD's kind, when it is not the struct's name"),
    // --- schema: controller-gen's validation markers -----------------------------
    validation!("Maximum", "maximum", Grammar::Number, NUMERIC, "the largest value allowed"),
    validation!("Minimum", "minimum", Grammar::Number, NUMERIC, "the smallest value allowed"),
    validation!("ExclusiveMaximum", "exclusiveMaximum", Grammar::Bool, NUMERIC, "Maximum itself is not allowed"),
    validation!("ExclusiveMinimum", "exclusiveMinimum", Grammar::Bool, NUMERIC, "Minimum itself is not allowed"),
    validation!("MultipleOf", "multipleOf", Grammar::Number, NUMERIC, "the value is a multiple of this"),
    validation!("MaxLength", "maxLength", Grammar::Count, TEXT, "the longest string allowed"),
    validation!("MinLength", "minLength", Grammar::Count, TEXT, "the shortest string allowed"),
    validation!("Pattern", "pattern", Grammar::Str, TEXT, "a regular expression the string matches"),
    validation!("MaxItems", "maxItems", Grammar::Count, ARRAY, "the most items a list has"),
    validation!("MinItems", "minItems", Grammar::Count, ARRAY, "the fewest items a list has"),
    validation!("UniqueItems", "uniqueItems", Grammar::Bool, ARRAY, "items are unique (kube-apiserver forbids true: use +listType=set)"),
    validation!("MaxProperties", "maxProperties", Grammar::Count, OBJECT, "the most keys an object or map has"),
    validation!("MinProperties", "minProperties", Grammar::Count, OBJECT, "the fewest keys an object or map has"),
    validation!("Enum", "enum", Grammar::List, &[], "the values allowed"),
    validation!("Format", "format", Grammar::Word, &[], "the OpenAPI format (date-time, int32, ...)"),
    validation!("Type", "type", Grammar::Word, &[], "overrides the OpenAPI type"),
    validation!("XEmbeddedResource", "x-kubernetes-embedded-resource", Grammar::Flag, &[], "the value is a Kubernetes object (apiVersion, kind, metadata)"),
    validation!("XIntOrString", "x-kubernetes-int-or-string", Grammar::Flag, &[], "an integer or a string"),
    MarkerDef {
        name: "kubebuilder:pruning:PreserveUnknownFields",
        targets: FT,
        kind_only: false,
        items: false,
        grammar: Grammar::Flag,
        applies_to: &[],
        effect: Effect::SetKey("x-kubernetes-preserve-unknown-fields"),
        help: "keep fields the schema does not declare",
    },
    validation!("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields", Grammar::Flag, &[], "keep fields the schema does not declare"),
    MarkerDef {
        name: "kubebuilder:validation:XValidation",
        targets: FT,
        kind_only: false,
        items: true,
        grammar: Grammar::Keyed(XVALIDATION_KEYS),
        applies_to: &[],
        effect: Effect::Schema { read: read_xvalidation, write: Some(("x-kubernetes-validations", write_xvalidations)) },
        help: "a CEL rule (self, oldSelf) the value satisfies",
    },
    MarkerDef {
        name: "kubebuilder:validation:ExactlyOneOf",
        targets: T,
        kind_only: false,
        items: false,
        grammar: Grammar::List,
        applies_to: OBJECT,
        effect: Effect::Schema { read: |s, u| one_of(s, u, OneOf::Exactly), write: None },
        help: "exactly one of these fields (;-separated JSON names) is set (a CEL rule)",
    },
    MarkerDef {
        name: "kubebuilder:validation:AtMostOneOf",
        targets: T,
        kind_only: false,
        items: false,
        grammar: Grammar::List,
        applies_to: OBJECT,
        effect: Effect::Schema { read: |s, u| one_of(s, u, OneOf::AtMost), write: None },
        help: "at most one of these fields is set (a CEL rule)",
    },
    MarkerDef {
        name: "kubebuilder:validation:AtLeastOneOf",
        targets: T,
        kind_only: false,
        items: false,
        grammar: Grammar::List,
        applies_to: OBJECT,
        effect: Effect::Schema { read: |s, u| one_of(s, u, OneOf::AtLeast), write: None },
        help: "at least one of these fields is set (a CEL rule)",
    },
    def!("kubebuilder:validation:Schemaless", F, Grammar::Flag, Effect::Schema { read: |s, _| { s.schemaless = true; Ok(()) }, write: None }, "no schema for the field (any JSON, kept as it is)"),
    // --- schema: required, optional, nullable, defaults ---------------------------
    def!("required", F, Grammar::Flag, Effect::Schema { read: |s, _| { s.required = Some(true); Ok(()) }, write: None }, "the field must be set"),
    def!("optional", F, Grammar::Flag, Effect::Schema { read: |s, _| { s.required = Some(false); Ok(()) }, write: None }, "the field may be left out"),
    def!("k8s:required", F, Grammar::Flag, Effect::Schema { read: |s, _| { s.required = Some(true); Ok(()) }, write: None }, "the field must be set (Kubernetes' declarative-validation spelling)"),
    def!("k8s:optional", F, Grammar::Flag, Effect::Schema { read: |s, _| { s.required = Some(false); Ok(()) }, write: None }, "the field may be left out (Kubernetes' declarative-validation spelling)"),
    def!("kubebuilder:validation:Required", F, Grammar::Flag, Effect::Schema { read: |s, _| { s.required = Some(true); Ok(()) }, write: None }, "deprecated spelling of +required"),
    def!("kubebuilder:validation:Optional", F, Grammar::Flag, Effect::Schema { read: |s, _| { s.required = Some(false); Ok(()) }, write: None }, "deprecated spelling of +optional"),
    def!("nullable", F, Grammar::Flag, Effect::Schema { read: |s, _| { s.nullable = true; Ok(()) }, write: Some(("nullable", write_nullable)) }, "an explicit null is a value (kept, not pruned)"),
    def!("kubebuilder:default", FT, Grammar::Json, Effect::Schema { read: read_default, write: Some(("default", write_default)) }, "the value the API server sets when the field is absent"),
    def!("default", F, Grammar::Json, Effect::Schema { read: read_default, write: None }, "Kubernetes' spelling of +kubebuilder:default"),
    def!("k8s:immutable", F, Grammar::Flag, Effect::Schema { read: |s, u| { s.immutable = true; s.push_rule(0, immutable_rule(), u.index); Ok(()) }, write: None }, "the value cannot change once set (CEL self == oldSelf; an optional field cannot be cleared)"),
    def!("k8s:enum", T, Grammar::Flag, Effect::Schema { read: |s, _| { s.enum_type = true; Ok(()) }, write: None }, "the type is a string enum (its unit variants are the values)"),
    // --- schema: list, map and struct topology -----------------------------------
    MarkerDef {
        name: "listType",
        targets: FT,
        kind_only: false,
        items: false,
        grammar: Grammar::Word,
        applies_to: ARRAY,
        effect: Effect::Schema { read: read_list_type, write: Some(("x-kubernetes-list-type", write_list_type)) },
        help: "atomic, set or map: how server-side apply merges the list",
    },
    MarkerDef {
        name: "k8s:listType",
        targets: FT,
        kind_only: false,
        items: false,
        grammar: Grammar::Word,
        applies_to: ARRAY,
        effect: Effect::Schema { read: read_list_type, write: None },
        help: "Kubernetes' spelling of +listType",
    },
    MarkerDef {
        name: "listMapKey",
        targets: FT,
        kind_only: false,
        items: false,
        grammar: Grammar::Word,
        applies_to: ARRAY,
        effect: Effect::Schema { read: read_list_map_key, write: Some(("x-kubernetes-list-map-keys", write_list_map_keys)) },
        help: "a key of a +listType=map list (repeat for several)",
    },
    MarkerDef {
        name: "k8s:listMapKey",
        targets: FT,
        kind_only: false,
        items: false,
        grammar: Grammar::Word,
        applies_to: ARRAY,
        effect: Effect::Schema { read: read_list_map_key, write: None },
        help: "Kubernetes' spelling of +listMapKey",
    },
    MarkerDef {
        name: "mapType",
        targets: FT,
        kind_only: false,
        items: false,
        grammar: Grammar::Word,
        applies_to: OBJECT,
        effect: Effect::Schema { read: read_map_type, write: Some(("x-kubernetes-map-type", write_map_type)) },
        help: "atomic or granular: how server-side apply merges the map",
    },
    MarkerDef {
        name: "structType",
        targets: FT,
        kind_only: false,
        items: false,
        grammar: Grammar::Word,
        applies_to: OBJECT,
        effect: Effect::Schema { read: read_map_type, write: None },
        help: "atomic or granular: how server-side apply merges the struct",
    },
    // --- schema: anything else ----------------------------------------------------
    MarkerDef {
        name: "kubegen:schema",
        targets: FT,
        kind_only: false,
        items: true,
        grammar: Grammar::Json,
        applies_to: &[],
        effect: Effect::Schema { read: read_schema_key, write: None },
        help: "kubegen:schema:<key>=<JSON> sets any schema key controller-gen has no marker for (items: for elements)",
    },
    def!("kubegen:schema:omit", FT, Grammar::Flag, Effect::Schema { read: |s, _| { s.extra.omit = true; Ok(()) }, write: None }, "leave the field out of the schema (a root's apiVersion, kind or metadata)"),
    // --- other generators' markers --------------------------------------------------
    def!("kubebuilder:object:root", T, Grammar::Text, Effect::Other, "controller-gen's object generator (kubegen's register items cover it)"),
    def!("kubebuilder:object:generate", PT, Grammar::Text, Effect::Other, "controller-gen's object generator (kubegen's Clone covers it)"),
    def!("kubebuilder:rbac", PT, Grammar::Keyed(&["groups", "resources", "resourceNames", "verbs", "urls", "namespace", "roleName"]), Effect::Manifest, "an RBAC rule for the controller's role (kubegen rbac; any comment)"),
    def!("kubebuilder:webhook", PT, Grammar::Keyed(&["mutating", "failurePolicy", "matchPolicy", "sideEffects", "timeoutSeconds", "groups", "resources", "verbs", "versions", "name", "serviceName", "serviceNamespace", "path", "servicePort", "webhookVersions", "admissionReviewVersions", "reinvocationPolicy", "url"]), Effect::Manifest, "an admission webhook (kubegen webhook; any comment)"),
    def!("kubebuilder:webhookconfiguration", PT, Grammar::Keyed(&["mutating", "name"]), Effect::Manifest, "names the mutating or validating webhook configuration (kubegen webhook)"),
    def!("kubebuilder:ac:generate", PT, Grammar::Text, Effect::Other, "controller-gen's apply configurations"),
];

/// The arguments of an XValidation rule.
const XVALIDATION_KEYS: &[&str] = &[
    "rule",
    "message",
    "messageExpression",
    "reason",
    "fieldPath",
    "optionalOldSelf",
];

/// Name prefixes of markers kubegen owns or reads: a marker starting with one of these
/// that is not in the registry is an error, not another tool's marker.
pub const OWNED_PREFIXES: &[&str] = &[
    "genclient",
    "k8s:",
    "kubebuilder:validation:",
    "kubebuilder:resource",
    "kubebuilder:subresource",
    "kubebuilder:printcolumn",
    "kubebuilder:selectablefield",
    "kubebuilder:metadata",
    "kubebuilder:default",
    "kubebuilder:pruning",
    "kubebuilder:storageversion",
    "kubebuilder:unservedversion",
    "kubebuilder:deprecatedversion",
    "kubebuilder:skipversion",
    "kubebuilder:rbac",
    "kubebuilder:webhook",
    "kubegen:",
];

/// A marker as written, resolved against [`REGISTRY`].
pub fn resolve<'a>(
    name: &'a str,
    value: Option<&'a str>,
    index: usize,
) -> Option<(&'static MarkerDef, Use<'a>)> {
    let text = match value {
        Some(v) => format!("{name}={v}"),
        None => name.to_owned(),
    };
    let (base, depth) = strip_items_of(name);
    if let Some(def) = REGISTRY
        .iter()
        .find(|d| d.name == base && !matches!(d.grammar, Grammar::Keyed(_)))
    {
        if depth > 0 && !def.items {
            return None;
        }
        return Some((
            def,
            Use {
                written: name,
                value,
                args: String::new(),
                depth,
                index,
            },
        ));
    }
    // Keyed (`+kubebuilder:printcolumn:name=..,type=..`) and prefixed
    // (`+kubegen:schema:<key>=`) markers: the longest definition that prefixes the name.
    let base_text = format!("{base}{}", &text[name.len()..]);
    let def = REGISTRY
        .iter()
        .filter(|d| {
            base == d.name
                || base
                    .strip_prefix(d.name)
                    .is_some_and(|r| r.starts_with(':'))
        })
        .filter(|d| {
            matches!(d.grammar, Grammar::Keyed(_) | Grammar::Text) || d.name == "kubegen:schema"
        })
        .max_by_key(|d| d.name.len())?;
    if depth > 0 && !def.items {
        return None;
    }
    let args = base_text
        .strip_prefix(def.name)
        .map(|r| r.strip_prefix(':').unwrap_or(r))
        .unwrap_or_default();
    let args = if def.name == "kubegen:schema" {
        // The key, without its value.
        args.split_once('=').map_or(args, |(k, _)| k).to_owned()
    } else {
        args.to_owned()
    };
    Some((
        def,
        Use {
            written: name,
            value,
            args,
            depth,
            index,
        },
    ))
}

/// `kubebuilder:validation:items:items:Maximum` -> (`kubebuilder:validation:Maximum`, 2).
fn strip_items_of(name: &str) -> (std::borrow::Cow<'_, str>, usize) {
    for family in ["kubebuilder:validation:", "kubegen:schema:"] {
        if let Some(rest) = name.strip_prefix(family) {
            let (depth, rest) = strip_items(rest);
            if depth > 0 {
                return (format!("{family}{rest}").into(), depth);
            }
        }
    }
    (name.into(), 0)
}

/// The known marker nearest to an unknown `name` (a typo's fix), if one is close.
pub fn suggest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    let (best, distance) = REGISTRY
        .iter()
        .map(|d| (d.name, edit_distance(&lower, &d.name.to_ascii_lowercase())))
        .min_by_key(|(_, dist)| *dist)?;
    let limit = (name.len() / 5).clamp(1, 3);
    (distance <= limit).then_some(best)
}

/// Edit distance counting a swap of two neighbours as one edit (`genclinet`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Whether a marker not in the registry belongs to a family kubegen owns (so it is a
/// mistake, not another tool's marker).
pub fn is_owned(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    OWNED_PREFIXES
        .iter()
        .any(|p| lower.starts_with(&p.to_ascii_lowercase()))
        || ["groupname", "groupgoname", "versionname", "resourcename"].contains(&lower.as_str())
}

/// Whether a use of `def` has the value its grammar asks for: a flag takes none (a
/// schema flag also `=true`/`=false`), every `=` marker needs one.
pub fn check_value(def: &MarkerDef, u: &Use<'_>) -> Result<(), MarkerError> {
    let schema_flag = matches!(def.effect, Effect::SetKey(_) | Effect::Schema { .. });
    match (def.grammar, u.value) {
        (Grammar::Flag, None) | (Grammar::Keyed(_), _) => Ok(()),
        (Grammar::Flag, Some("true" | "false")) if schema_flag => Ok(()),
        (Grammar::Flag, Some(v)) => Err(err(
            format!("`+{}` takes no value, but has `={v}`", def.name),
            format!("write `+{}`", def.name),
        )),
        (_, None) if def.name != "kubegen:schema:omit" => Err(err(
            format!("`+{}` needs a value", u.written),
            format!("write `{}`", def.usage()),
        )),
        _ => Ok(()),
    }
}

/// Whether `def` may stand at `target`; `is_kind` says whether the type is a kind's root.
pub fn check_target(def: &MarkerDef, target: Target, is_kind: bool) -> Result<(), MarkerError> {
    if !def.allows(target) {
        let places: Vec<&str> = def.targets.iter().map(|t| t.name()).collect();
        return Err(err(
            format!(
                "`+{}` belongs on a {}, not a {}",
                def.name,
                places.join(" or "),
                target.name()
            ),
            match def.targets.first() {
                Some(Target::Package) => {
                    "write it in the package's //! docs (its mod.rs or a doc.rs)".to_owned()
                }
                Some(Target::Type) => "move it to the /// docs of the struct or enum".to_owned(),
                _ => "move it to the /// docs of a field".to_owned(),
            },
        ));
    }
    if def.kind_only && target == Target::Type && !is_kind {
        return Err(err(
            format!("`+{}` describes a kind's resource, but this type is not a kind", def.name),
            "put it on the kind's root struct (the one with +genclient or #[derive(CustomResource)]), or make this struct a kind with /// +genclient",
        ));
    }
    Ok(())
}

/// The help table `kubegen markers` prints: one line per marker, grouped by effect.
pub fn help() -> String {
    let mut out = String::new();
    type Is = fn(&Effect) -> bool;
    let groups: [(&str, Is); 6] = [
        ("package", |e| matches!(e, Effect::Package)),
        ("typed client (client-gen)", |e| matches!(e, Effect::Client)),
        ("resource (on a kind's root type)", |e| {
            matches!(e, Effect::Resource(_))
        }),
        ("schema (fields and types)", |e| {
            matches!(e, Effect::SetKey(_) | Effect::Schema { .. })
        }),
        ("manifests (kubegen rbac, kubegen webhook)", |e| {
            matches!(e, Effect::Manifest)
        }),
        ("other generators (kept, not read here)", |e| {
            matches!(e, Effect::Other)
        }),
    ];
    for (title, is) in groups {
        out.push_str(&format!("{title}:\n"));
        for d in REGISTRY.iter().filter(|d| is(&d.effect)) {
            let places: Vec<&str> = d.targets.iter().map(|t| t.name()).collect();
            let mut usage = d.usage();
            if d.items {
                usage.push_str("  (items: form)");
            }
            out.push_str(&format!(
                "  {usage}\n      on {}: {}\n",
                places.join(", "),
                d.help
            ));
        }
    }
    out
}

// ---------------------------------------------------------------------------------
// Schema markers
// ---------------------------------------------------------------------------------

/// Why a marker could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerError {
    /// What is wrong.
    pub problem: String,
    /// How to fix it.
    pub fix: String,
}

fn err(problem: impl Into<String>, fix: impl Into<String>) -> MarkerError {
    MarkerError {
        problem: problem.into(),
        fix: fix.into(),
    }
}

/// What the markers of one field (or type) say: schema extras plus the facts the model
/// keeps as field facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MarkerSet {
    /// Schema extras.
    pub extra: SchemaExtra,
    /// `+kubebuilder:default=`.
    pub default: Option<Value>,
    /// `+required` and its spellings (`Some(true)`), `+optional` and its spellings
    /// (`Some(false)`).
    pub required: Option<bool>,
    /// `+nullable`.
    pub nullable: bool,
    /// `+kubebuilder:validation:Schemaless`.
    pub schemaless: bool,
    /// `+k8s:immutable`: the parent adds a rule keeping an optional field set.
    pub immutable: bool,
    /// `+k8s:enum` on a type.
    pub enum_type: bool,
    /// Which marker set each key (for errors that point at it), by schema key.
    pub sources: BTreeMap<String, usize>,
}

impl MarkerSet {
    /// Reads one marker (name without `+`, value after `=`); `index` identifies it for
    /// later errors. Returns `Ok(false)` for markers that are not schema markers.
    pub fn apply(
        &mut self,
        name: &str,
        value: Option<&str>,
        index: usize,
    ) -> Result<bool, MarkerError> {
        let Some((def, u)) = resolve(name, value, index) else {
            if name.starts_with("kubebuilder:validation:") {
                let fix = match suggest(name) {
                    Some(near) => {
                        format!("did you mean `+{near}`? (`kubegen markers` lists every marker)")
                    }
                    None => "`kubegen markers` lists every marker kubegen reads".to_owned(),
                };
                return Err(err(format!("unknown marker `+{name}`"), fix));
            }
            return Ok(false);
        };
        match def.effect {
            Effect::SetKey(key) => {
                let v = parse_by_grammar(def.grammar, &u)?;
                self.set(u.depth, key, v, index);
                Ok(true)
            }
            Effect::Schema { read, .. } => {
                read(self, &u)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn node(&mut self, depth: usize) -> &mut SchemaExtra {
        let mut node = &mut self.extra;
        for _ in 0..depth {
            node = node.element_mut();
        }
        node
    }

    fn set(&mut self, depth: usize, key: &str, v: Value, index: usize) {
        self.node(depth).set.insert(key.to_owned(), v);
        if depth == 0 {
            self.sources.insert(key.to_owned(), index);
        }
    }

    /// Appends a CEL rule at `depth`.
    fn push_rule(&mut self, depth: usize, rule: Value, index: usize) {
        let node = self.node(depth);
        let rules = node
            .set
            .entry("x-kubernetes-validations".to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(a) = rules {
            a.push(rule);
        }
        self.sources
            .insert("x-kubernetes-validations".into(), index);
    }
}

fn parse_by_grammar(grammar: Grammar, u: &Use<'_>) -> Result<Value, MarkerError> {
    let name = u.written;
    Ok(match grammar {
        Grammar::Flag | Grammar::Bool => match u.value {
            None if grammar == Grammar::Flag => Value::Bool(true),
            Some("true") => Value::Bool(true),
            Some("false") => Value::Bool(false),
            None => Value::Bool(true),
            Some(other) => {
                return Err(err(
                    format!("`+{name}={other}` is not a boolean"),
                    format!("write `+{name}` or `+{name}=false`"),
                ))
            }
        },
        Grammar::Number => {
            let v = u.value_or("<number>")?;
            let n: serde_json::Number = v.trim().parse().map_err(|_| {
                err(
                    format!("`+{name}={v}` is not a number"),
                    format!("write a number, as in `+{name}=10`"),
                )
            })?;
            Value::Number(n)
        }
        Grammar::Count => {
            let v = u.value_or("<count>")?;
            let n: u64 = v.trim().parse().map_err(|_| {
                err(
                    format!("`+{name}={v}` is not a non-negative integer"),
                    format!("write a count, as in `+{name}=3`"),
                )
            })?;
            Value::from(n)
        }
        Grammar::Str => Value::String(parse_string(u.value_or("<string>")?)?),
        Grammar::Word => {
            let s = parse_string(u.value_or("<name>")?)?;
            if s.is_empty() {
                Value::Null
            } else {
                Value::String(s)
            }
        }
        Grammar::List => parse_enum(u.value_or("a;b;c")?),
        Grammar::Json | Grammar::Text => parse_value(u.value_or("<value>")?),
        Grammar::Keyed(_) => Value::Null,
    })
}

fn read_xvalidation(s: &mut MarkerSet, u: &Use<'_>) -> Result<(), MarkerError> {
    let rule = parse_xvalidation(&u.args)?;
    s.push_rule(u.depth, rule, u.index);
    Ok(())
}

fn read_default(s: &mut MarkerSet, u: &Use<'_>) -> Result<(), MarkerError> {
    let v = u.value_or("<JSON value>")?;
    s.default = Some(parse_value(v));
    s.sources.insert("default".into(), u.index);
    Ok(())
}

fn read_list_type(s: &mut MarkerSet, u: &Use<'_>) -> Result<(), MarkerError> {
    let v = u.value_or("atomic|set|map")?;
    if !matches!(v, "atomic" | "set" | "map") {
        return Err(err(
            format!("`+{}={v}` is not a list type", u.written),
            "use atomic, set or map",
        ));
    }
    s.set(
        0,
        "x-kubernetes-list-type",
        Value::String(v.into()),
        u.index,
    );
    Ok(())
}

fn read_list_map_key(s: &mut MarkerSet, u: &Use<'_>) -> Result<(), MarkerError> {
    let v = u.value_or("<field>")?;
    let keys = s
        .extra
        .set
        .entry("x-kubernetes-list-map-keys".to_owned())
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(a) = keys {
        a.push(Value::String(v.to_owned()));
    }
    s.sources
        .insert("x-kubernetes-list-map-keys".into(), u.index);
    Ok(())
}

fn read_map_type(s: &mut MarkerSet, u: &Use<'_>) -> Result<(), MarkerError> {
    let v = u.value_or("atomic|granular")?;
    if !matches!(v, "atomic" | "granular") {
        return Err(err(
            format!("`+{}={v}` is not a map type", u.written),
            "use atomic or granular",
        ));
    }
    s.set(0, "x-kubernetes-map-type", Value::String(v.into()), u.index);
    Ok(())
}

fn read_schema_key(s: &mut MarkerSet, u: &Use<'_>) -> Result<(), MarkerError> {
    if u.args.is_empty() {
        return Err(err(
            format!("`+{}` names no schema key", u.written),
            "write `+kubegen:schema:<key>=<JSON>`",
        ));
    }
    let v = u.value_or("<JSON value>")?;
    let parsed: Value = serde_json::from_str(v).map_err(|e| {
        err(
            format!("`+{}` has a value that is not JSON: {e}", u.written),
            "write the value as JSON (strings in double quotes)",
        )
    })?;
    let key = u.args.clone();
    s.set(u.depth, &key, parsed, u.index);
    Ok(())
}

/// `self == oldSelf`, as controller-gen writes it for `+k8s:immutable`.
fn immutable_rule() -> Value {
    let mut m = Map::new();
    m.insert("message".into(), Value::String("field is immutable".into()));
    m.insert("rule".into(), Value::String("self == oldSelf".into()));
    Value::Object(m)
}

/// The rule a parent struct carries for an optional `+k8s:immutable` field: once set,
/// it cannot be removed (the field's own rule does not run when the field is gone).
pub fn immutable_once_set_rule(json_name: &str) -> Value {
    let mut m = Map::new();
    m.insert(
        "message".into(),
        Value::String(format!("field {json_name} is immutable once set")),
    );
    m.insert(
        "rule".into(),
        Value::String(format!(
            "!has(oldSelf.{json_name}) || has(self.{json_name})"
        )),
    );
    Value::Object(m)
}

#[derive(Clone, Copy)]
enum OneOf {
    Exactly,
    AtMost,
    AtLeast,
}

fn one_of(s: &mut MarkerSet, u: &Use<'_>, which: OneOf) -> Result<(), MarkerError> {
    let fields: Vec<String> = match parse_enum(u.value_or("a;b")?) {
        Value::Array(a) => a
            .into_iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect(),
        _ => Vec::new(),
    };
    if fields.is_empty() {
        return Err(err(
            format!("`+{}` names no fields", u.written),
            format!(
                "write `+{}=fieldA;fieldB` with the fields' JSON names",
                u.written
            ),
        ));
    }
    let count = fields
        .iter()
        .map(|f| format!("(has(self.{f})?1:0)"))
        .collect::<Vec<_>>()
        .join("+");
    let listed = format!("[{}]", fields.join(" "));
    let (rule, message) = match which {
        OneOf::Exactly => (
            format!("{count} == 1"),
            format!("exactly one of the fields in {listed} must be set"),
        ),
        OneOf::AtMost => (
            format!("{count} <= 1"),
            format!("at most one of the fields in {listed} may be set"),
        ),
        OneOf::AtLeast => (
            fields
                .iter()
                .map(|f| format!("has(self.{f})"))
                .collect::<Vec<_>>()
                .join("||"),
            format!("at least one of the fields in {listed} must be set"),
        ),
    };
    let mut m = Map::new();
    m.insert("message".into(), Value::String(message));
    m.insert("rule".into(), Value::String(rule));
    s.push_rule(0, Value::Object(m), u.index);
    Ok(())
}

// ---------------------------------------------------------------------------------
// Writing schema extras back as markers (CRD -> Rust)
// ---------------------------------------------------------------------------------

/// The marker lines for one schema key of a node at `depth` (`items:` levels), with
/// the first registry entry that sets the key and can print the value; `None` when
/// none can (the caller writes `+kubegen:schema:`).
pub fn write_lines(key: &str, v: &Value, depth: usize) -> Option<Vec<String>> {
    REGISTRY.iter().find_map(|d| {
        if depth > 0 && !d.items {
            return None;
        }
        match d.effect {
            Effect::SetKey(k) if k == key => print_by_grammar(d, v, depth),
            Effect::Schema {
                write: Some((k, print)),
                ..
            } if k == key => print(v, depth),
            _ => None,
        }
    })
}

fn print_by_grammar(d: &MarkerDef, v: &Value, depth: usize) -> Option<Vec<String>> {
    let name = with_items(d.name, depth);
    let line = |value: String| Some(vec![format!("+{name}={value}")]);
    match (d.grammar, v) {
        (Grammar::Number, Value::Number(n)) => line(n.to_string()),
        (Grammar::Count, Value::Number(n)) if n.is_u64() => line(n.to_string()),
        (Grammar::Bool, Value::Bool(b)) => line(b.to_string()),
        (Grammar::Flag, Value::Bool(true)) if depth == 0 => Some(vec![format!("+{name}")]),
        (Grammar::Str, Value::String(s)) => line(quote(s)),
        (Grammar::Word, Value::String(s)) if is_word(s) => line(s.clone()),
        // `Format=""` removes an implied format; only controller-gen's root form has it.
        (Grammar::Word, Value::Null) if depth == 0 && d.name.ends_with(":Format") => {
            line("\"\"".into())
        }
        (Grammar::List, Value::Array(values)) if enum_is_plain(values) => {
            let list: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
            line(list.join(";"))
        }
        _ => None,
    }
}

/// `kubebuilder:validation:Maximum` at depth 2 -> `kubebuilder:validation:items:items:Maximum`.
fn with_items(name: &str, depth: usize) -> String {
    match name.strip_prefix("kubebuilder:validation:") {
        Some(rest) if depth > 0 => {
            format!("kubebuilder:validation:{}{rest}", "items:".repeat(depth))
        }
        _ => name.to_owned(),
    }
}

fn write_nullable(v: &Value, depth: usize) -> Option<Vec<String>> {
    (depth == 0 && *v == Value::Bool(true)).then(|| vec!["+nullable".to_owned()])
}

fn write_default(v: &Value, depth: usize) -> Option<Vec<String>> {
    (depth == 0 && !v.is_null()).then(|| vec![format!("+kubebuilder:default={}", compact(v))])
}

fn write_list_type(v: &Value, depth: usize) -> Option<Vec<String>> {
    match v {
        Value::String(s) if depth == 0 && is_word(s) => Some(vec![format!("+listType={s}")]),
        _ => None,
    }
}

fn write_list_map_keys(v: &Value, depth: usize) -> Option<Vec<String>> {
    match v {
        Value::Array(keys) if depth == 0 && !keys.is_empty() => keys
            .iter()
            .map(|k| match k {
                Value::String(s) if is_word(s) => Some(format!("+listMapKey={s}")),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn write_map_type(v: &Value, depth: usize) -> Option<Vec<String>> {
    match v {
        Value::String(s) if depth == 0 && is_word(s) => Some(vec![format!("+mapType={s}")]),
        _ => None,
    }
}

fn write_xvalidations(v: &Value, depth: usize) -> Option<Vec<String>> {
    let Value::Array(rules) = v else { return None };
    let items = "items:".repeat(depth);
    rules
        .iter()
        .map(|r| {
            xvalidation(r).map(|args| format!("+kubebuilder:validation:{items}XValidation:{args}"))
        })
        .collect()
}

/// Compact JSON.
pub fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// A JSON string literal (controller-gen reads Go's double-quoted strings; the escapes
/// JSON writes are a subset).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn enum_is_plain(values: &[Value]) -> bool {
    !values.is_empty()
        && values.iter().all(|v| {
            v.as_str().is_some_and(|s| {
                is_word(s)
                    && s.parse::<f64>().is_err()
                    && !matches!(s, "true" | "false" | "null")
                    && !s.starts_with(['-', '.'])
            })
        })
}

fn xvalidation(rule: &Value) -> Option<String> {
    let m = rule.as_object()?;
    if m.keys().any(|k| !XVALIDATION_KEYS.contains(&k.as_str())) || !m.contains_key("rule") {
        return None;
    }
    let mut args = Vec::new();
    for key in XVALIDATION_KEYS {
        match m.get(*key) {
            None => {}
            Some(Value::String(s)) => args.push(format!("{key}={}", quote(s))),
            Some(Value::Bool(b)) if *key == "optionalOldSelf" => args.push(format!("{key}={b}")),
            Some(_) => return None,
        }
    }
    Some(args.join(","))
}

// ---------------------------------------------------------------------------------
// Resource markers
// ---------------------------------------------------------------------------------

/// What a kind's root-type markers say about its resource (one version of its CRD).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceFacts {
    /// `path=` (the plural).
    pub plural: Option<String>,
    /// `singular=`.
    pub singular: Option<String>,
    /// `scope=`.
    pub scope: Option<Scope>,
    /// `shortName=`.
    pub short_names: Option<Vec<String>>,
    /// `categories=`.
    pub categories: Option<Vec<String>>,
    /// `+kubebuilder:subresource:status`.
    pub kind_status: bool,
    /// `+kubebuilder:subresource:scale`.
    pub scale: Option<Scale>,
    /// `+kubebuilder:printcolumn`, in order.
    pub columns: Vec<PrinterColumn>,
    /// `+kubebuilder:selectablefield`, in order.
    pub selectable: Vec<String>,
    /// `+kubebuilder:storageversion`.
    pub storage: bool,
    /// `false` with `+kubebuilder:unservedversion`.
    pub served: bool,
    /// `+kubebuilder:deprecatedversion` (with its warning).
    pub deprecated: Option<Option<String>>,
    /// `+kubebuilder:skipversion`.
    pub skip: bool,
    /// `+kubebuilder:metadata`.
    pub metadata: CrdMetadata,
    /// `+kubegen:resource:listKind=`.
    pub list_kind: Option<String>,
    /// `+kubegen:resource:kind=`.
    pub kind: Option<String>,
}

impl ResourceFacts {
    /// Nothing said yet (served, not storage).
    pub fn new() -> Self {
        ResourceFacts {
            served: true,
            ..Default::default()
        }
    }

    /// Reads one marker; `Ok(false)` for markers that are not resource markers.
    pub fn apply(
        &mut self,
        name: &str,
        value: Option<&str>,
        index: usize,
    ) -> Result<bool, MarkerError> {
        match resolve(name, value, index) {
            Some((
                MarkerDef {
                    effect: Effect::Resource(read),
                    ..
                },
                u,
            )) => {
                read(self, &u)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

fn read_resource(r: &mut ResourceFacts, u: &Use<'_>) -> Result<(), MarkerError> {
    let list = |s: &str| -> Vec<String> {
        s.split(';')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    };
    for (k, val) in u.keyed(&["path", "singular", "scope", "shortName", "categories"])? {
        match k.as_str() {
            "path" => r.plural = Some(val),
            "singular" => r.singular = Some(val),
            "shortName" => r.short_names = Some(list(&val)),
            "categories" => r.categories = Some(list(&val)),
            _ => {
                r.scope = Some(match val.as_str() {
                    "Namespaced" => Scope::Namespaced,
                    "Cluster" => Scope::Cluster,
                    other => {
                        return Err(err(
                            format!("scope={other} is not a scope"),
                            "write scope=Namespaced or scope=Cluster",
                        ))
                    }
                })
            }
        }
    }
    Ok(())
}

fn read_scale(r: &mut ResourceFacts, u: &Use<'_>) -> Result<(), MarkerError> {
    let mut scale = Scale {
        spec_replicas_path: String::new(),
        status_replicas_path: String::new(),
        label_selector_path: None,
    };
    for (k, val) in u.keyed(&["specpath", "statuspath", "selectorpath"])? {
        match k.as_str() {
            "specpath" => scale.spec_replicas_path = val,
            "statuspath" => scale.status_replicas_path = val,
            _ => scale.label_selector_path = Some(val),
        }
    }
    if scale.spec_replicas_path.is_empty() || scale.status_replicas_path.is_empty() {
        return Err(err(
            "the scale marker needs specpath and statuspath",
            "write `+kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas`",
        ));
    }
    r.scale = Some(scale);
    Ok(())
}

fn read_printcolumn(r: &mut ResourceFacts, u: &Use<'_>) -> Result<(), MarkerError> {
    let mut c = PrinterColumn {
        name: String::new(),
        type_: String::new(),
        format: None,
        description: None,
        priority: 0,
        json_path: String::new(),
    };
    for (k, val) in u.keyed(&[
        "name",
        "type",
        "JSONPath",
        "description",
        "format",
        "priority",
    ])? {
        match k.as_str() {
            "name" => c.name = val,
            "type" => c.type_ = val,
            "JSONPath" => c.json_path = val,
            "description" => c.description = Some(val),
            "format" => c.format = Some(val),
            _ => {
                c.priority = val.parse().map_err(|_| {
                    err(
                        format!("priority={val} is not an integer"),
                        "write priority=1",
                    )
                })?
            }
        }
    }
    if c.name.is_empty() || c.type_.is_empty() || c.json_path.is_empty() {
        return Err(err(
            "a printcolumn needs name, type and JSONPath",
            "write `+kubebuilder:printcolumn:name=\"Ready\",type=\"string\",JSONPath=\".status.ready\"`",
        ));
    }
    r.columns.push(c);
    Ok(())
}

fn read_selectable(r: &mut ResourceFacts, u: &Use<'_>) -> Result<(), MarkerError> {
    for (_, val) in u.keyed(&["JSONPath"])? {
        r.selectable.push(val);
    }
    Ok(())
}

fn read_deprecated(r: &mut ResourceFacts, u: &Use<'_>) -> Result<(), MarkerError> {
    let mut warning = None;
    for (_, val) in u.keyed(&["warning"])? {
        warning = Some(val);
    }
    r.deprecated = Some(warning);
    Ok(())
}

fn read_metadata(r: &mut ResourceFacts, u: &Use<'_>) -> Result<(), MarkerError> {
    let args = metadata_args(&u.args).map_err(|(p, f)| err(p, f))?;
    for (key, entries) in args {
        let into = match key.as_str() {
            "annotations" => &mut r.metadata.annotations,
            "labels" => &mut r.metadata.labels,
            other => {
                return Err(err(
                    format!("`+kubebuilder:metadata` has no argument `{other}`"),
                    "write `+kubebuilder:metadata:annotations=\"key=value\"` or `+kubebuilder:metadata:labels=\"key=value\"`",
                ))
            }
        };
        for entry in entries {
            let Some((k, val)) = entry.split_once('=') else {
                return Err(err(
                    format!(
                        "{} {entry:?} is not in 'xxx=xxx' format",
                        &key[..key.len() - 1]
                    ),
                    "write the entry as \"key=value\"",
                ));
            };
            into.insert(k.to_owned(), val.to_owned());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Value syntax
// ---------------------------------------------------------------------------------

fn strip_items(mut rest: &str) -> (usize, &str) {
    let mut depth = 0;
    while let Some(r) = rest.strip_prefix("items:") {
        depth += 1;
        rest = r;
    }
    (depth, rest)
}

/// A marker's value: JSON; or else controller-gen's literal syntax, where `{a,b}` is a
/// list, `{key: value}` an object, and strings may be quoted or bare; or else the bare
/// text as a string (`+kubebuilder:default=foo` is the string `foo`).
pub(crate) fn parse_value(v: &str) -> Value {
    let t = v.trim();
    if let Ok(json) = serde_json::from_str(t) {
        return json;
    }
    if t.starts_with('{') {
        let mut literal = Literal { rest: t };
        if let Some(v) = literal.value(&[]) {
            if literal.rest.trim().is_empty() {
                return v;
            }
        }
    }
    Value::String(t.to_owned())
}

/// A reader of controller-gen's Go-ish literals (see [`parse_value`]).
struct Literal<'a> {
    rest: &'a str,
}

impl Literal<'_> {
    fn eat(&mut self, c: char) -> bool {
        self.rest = self.rest.trim_start();
        match self.rest.strip_prefix(c) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    /// One value; a bare one ends before any of `stops`.
    fn value(&mut self, stops: &[char]) -> Option<Value> {
        self.rest = self.rest.trim_start();
        if self.eat('{') {
            return self.collection();
        }
        if self.rest.starts_with('"') {
            let mut escaped = false;
            let end = self.rest[1..].char_indices().find_map(|(i, c)| {
                let close = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                close.then_some(i + 2)
            })?;
            let s: String = serde_json::from_str(&self.rest[..end]).ok()?;
            self.rest = &self.rest[end..];
            return Some(Value::String(s));
        }
        for quote in ['`', '\''] {
            if let Some(r) = self.rest.strip_prefix(quote) {
                let end = r.find(quote)?;
                self.rest = &r[end + 1..];
                return Some(Value::String(r[..end].to_owned()));
            }
        }
        let end = self.rest.find(stops).unwrap_or(self.rest.len());
        let token = self.rest[..end].trim();
        self.rest = &self.rest[end..];
        if token.is_empty() {
            return None;
        }
        Some(match token {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => match token.parse::<serde_json::Number>() {
                Ok(n) => Value::Number(n),
                Err(_) => Value::String(token.to_owned()),
            },
        })
    }

    /// After `{`: `}` (an empty object), `a, b}` (a list) or `k: v, ...}` (an object).
    fn collection(&mut self) -> Option<Value> {
        if self.eat('}') {
            return Some(Value::Object(Map::new()));
        }
        let first = self.value(&[',', '}', ':'])?;
        if self.eat(':') {
            let mut map = Map::new();
            let mut key = first;
            loop {
                let key_text = match key {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                map.insert(key_text, self.value(&[',', '}'])?);
                if self.eat('}') {
                    return Some(Value::Object(map));
                }
                if !self.eat(',') {
                    return None;
                }
                key = self.value(&[',', '}', ':'])?;
                if !self.eat(':') {
                    return None;
                }
            }
        }
        let mut list = vec![first];
        loop {
            if self.eat('}') {
                return Some(Value::Array(list));
            }
            if !self.eat(',') {
                return None;
            }
            list.push(self.value(&[',', '}'])?);
        }
    }
}

/// A string value: `"..."` (JSON/Go escapes), `` `...` `` (raw), or the bare text.
fn parse_string(v: &str) -> Result<String, MarkerError> {
    let t = v.trim();
    if t.starts_with('"') {
        serde_json::from_str(t).map_err(|e| {
            err(
                format!("`{t}` is not a valid quoted string: {e}"),
                "close the quotes and escape `\\` and `\"` inside, or use backquotes",
            )
        })
    } else if let Some(raw) = t.strip_prefix('`') {
        raw.strip_suffix('`').map(str::to_owned).ok_or_else(|| {
            err(
                format!("`{t}` opens a backquote and never closes it"),
                "end the value with a backquote",
            )
        })
    } else {
        Ok(t.to_owned())
    }
}

fn parse_enum(v: &str) -> Value {
    let t = v.trim();
    if t.starts_with('[') {
        if let Ok(list @ Value::Array(_)) = serde_json::from_str::<Value>(t) {
            return list;
        }
    }
    Value::Array(
        t.split(';')
            .map(|s| {
                let s = s.trim();
                if s.starts_with('"') {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_owned()))
                } else if let Ok(n) = s.parse::<serde_json::Number>() {
                    Value::Number(n)
                } else {
                    match s {
                        "true" => Value::Bool(true),
                        "false" => Value::Bool(false),
                        _ => Value::String(s.to_owned()),
                    }
                }
            })
            .collect(),
    )
}

/// `rule="...",message="...",...` -> a validation rule object.
fn parse_xvalidation(args: &str) -> Result<Value, MarkerError> {
    let mut out = Map::new();
    for (key, value) in split_args(args)? {
        if !XVALIDATION_KEYS.contains(&key.as_str()) {
            return Err(err(
                format!("XValidation has no argument `{key}`"),
                format!("use {}", XVALIDATION_KEYS.join(", ")),
            ));
        }
        let v = if key == "optionalOldSelf" {
            match value.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                other => {
                    return Err(err(
                        format!("optionalOldSelf={other} is not a boolean"),
                        "write optionalOldSelf=true",
                    ))
                }
            }
        } else {
            Value::String(parse_string(&value)?)
        };
        out.insert(key, v);
    }
    if !out.contains_key("rule") {
        return Err(err(
            "XValidation without a rule",
            "write `+kubebuilder:validation:XValidation:rule=\"self.x > 0\",message=\"...\"`",
        ));
    }
    Ok(Value::Object(out))
}

/// Splits `a="x,y",b=c` at top-level commas, respecting quotes and backquotes.
pub fn split_args(args: &str) -> Result<Vec<(String, String)>, MarkerError> {
    let mut out = Vec::new();
    let mut chars = args.char_indices().peekable();
    let mut start = 0;
    let mut parts = Vec::new();
    let mut quote: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '`') => quote = Some(c),
            (None, ',') => {
                parts.push(&args[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err(err(
            format!("`{args}` has an unterminated quoted value"),
            "close every quote",
        ));
    }
    parts.push(&args[start..]);
    for p in parts {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let (k, v) = p.split_once('=').ok_or_else(|| {
            err(
                format!("`{p}` is not `key=value`"),
                "write each argument as key=value, separated by commas",
            )
        })?;
        out.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Ok(out)
}

/// Resource-level arguments (`path=foos,scope=Cluster,shortName=a;b`).
pub fn resource_args(args: &str) -> Result<Vec<(String, String)>, MarkerError> {
    split_args(args)?
        .into_iter()
        .map(|(k, v)| Ok((k, parse_string(&v)?)))
        .collect()
}
/// One argument: its name (`annotations`) and its list of `key=value` strings.
type Arg = (String, Vec<String>);

/// The arguments of `+kubebuilder:metadata:` (`annotations=...,labels=...`), each a
/// list in controller-gen's syntax: one string, strings separated by `;`, or
/// `{"a", "b"}`; a string is quoted (`"..."`, JSON escapes), backquoted, or bare.
pub fn metadata_args(text: &str) -> Result<Vec<Arg>, (String, String)> {
    let bad = |problem: String| {
        (
            problem,
            "write `+kubebuilder:metadata:annotations=\"key=value\"` (repeat the marker for more)"
                .to_owned(),
        )
    };
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            return Err(bad(format!("`{rest}` has no `=`")));
        };
        rest = after.trim_start();
        let braced = rest.starts_with('{');
        if braced {
            rest = &rest[1..];
        }
        let mut items = Vec::new();
        loop {
            rest = rest.trim_start();
            let (item, after) = list_item(rest).map_err(bad)?;
            items.push(item);
            rest = after.trim_start();
            match (braced, rest.chars().next()) {
                (true, Some(',')) | (false, Some(';')) => rest = &rest[1..],
                (true, Some('}')) => {
                    rest = rest[1..].trim_start();
                    break;
                }
                (true, _) => return Err(bad(format!("`{text}` opens `{{` and never closes it"))),
                (false, _) => break,
            }
        }
        out.push((key.trim().to_owned(), items));
        match rest.strip_prefix(',') {
            Some(r) => rest = r.trim_start(),
            None if rest.is_empty() => {}
            None => return Err(bad(format!("unexpected `{rest}` in `{text}`"))),
        }
    }
    Ok(out)
}

/// One string at the start of `s` and what follows it.
fn list_item(s: &str) -> Result<(String, &str), String> {
    if let Some(body) = s.strip_prefix('"') {
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => {
                    let quoted = &s[..i + 2];
                    let value = serde_json::from_str(quoted)
                        .map_err(|e| format!("`{quoted}` is not a valid quoted string: {e}"))?;
                    return Ok((value, &body[i + 1..]));
                }
                _ => escaped = false,
            }
        }
        return Err(format!("`{s}` opens a quote and never closes it"));
    }
    if let Some(body) = s.strip_prefix('`') {
        return match body.split_once('`') {
            Some((value, after)) => Ok((value.to_owned(), after)),
            None => Err(format!("`{s}` opens a backquote and never closes it")),
        };
    }
    let end = s.find([';', ',', '}']).unwrap_or(s.len());
    Ok((s[..end].trim().to_owned(), &s[end..]))
}
