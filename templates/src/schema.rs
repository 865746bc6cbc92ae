//! Structural schemas from the model, and the markers that carry what a Rust type cannot.
//!
//! One function decides which schema a Rust type *implies* ([`field_schema`],
//! [`struct_schema`]): `String` is `{type: string}`, `i32` is
//! `{type: integer, format: int32}`, a struct is an object with its fields as
//! properties, and so on. Everything else a schema says (validation, CEL rules, list and
//! map types, and anything the implied schema gets wrong for one node) is a
//! [`SchemaExtra`]: keys set on (or, as `null`, removed from) the implied schema.
//!
//! Both directions use it, which is what makes a CRD -> Rust -> CRD round trip lossless
//! by construction:
//!
//! - the CRD reader stores, for every field, `diff(source node, implied schema)`;
//! - the types emitter prints those extras as markers in the field's doc comment
//!   ([`markers`]), controller-gen's spelling wherever controller-gen has one;
//! - `kubegen crd` reads the markers back ([`MarkerSet::apply`]) and prints
//!   `implied schema + extras`.
//!
//! Descriptions ride in doc comments: the implied description is the doc comment as the
//! Rust reader reads it back ([`crate::docs::read_back`]); where rustdoc escaping
//! cannot be undone exactly, the extras carry the exact text.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::model::{EnumDef, Field, StructDef, Ty, TypeDef};

/// What a schema node says beyond the schema its Rust type implies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaExtra {
    /// Keys set on the node; a `null` value removes an implied key.
    pub set: BTreeMap<String, Value>,
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

/// Looks types up by name for schema expansion, and remembers each struct's expanded
/// body (a struct used at many depths is expanded once).
pub struct Types<'a> {
    lookup: Lookup<'a>,
    cache: Cache<'a>,
}

enum Lookup<'a> {
    Index(BTreeMap<&'a str, &'a TypeDef>),
    Map(&'a BTreeMap<String, TypeDef>),
}

enum Cache<'a> {
    Owned(BodyCache),
    Borrowed(&'a BodyCache),
}

/// Struct bodies by type name, kept across [`Types`] views of a growing type map whose
/// entries never change once inserted (the CRD reader's).
pub type BodyCache = std::cell::RefCell<std::collections::HashMap<String, Value>>;

impl<'a> Types<'a> {
    /// An index over `types`.
    pub fn new(types: impl IntoIterator<Item = &'a TypeDef>) -> Self {
        Types {
            lookup: Lookup::Index(types.into_iter().map(|t| (t.name(), t)).collect()),
            cache: Cache::Owned(BodyCache::default()),
        }
    }

    /// A view of `map` (types by name) sharing `cache` with earlier views of it.
    pub fn from_map(map: &'a BTreeMap<String, TypeDef>, cache: &'a BodyCache) -> Self {
        Types {
            lookup: Lookup::Map(map),
            cache: Cache::Borrowed(cache),
        }
    }

    /// The type named `name`.
    pub fn get(&self, name: &str) -> Option<&'a TypeDef> {
        match &self.lookup {
            Lookup::Index(m) => m.get(name).copied(),
            Lookup::Map(m) => m.get(name),
        }
    }

    fn cache(&self) -> &BodyCache {
        match &self.cache {
            Cache::Owned(c) => c,
            Cache::Borrowed(c) => c,
        }
    }

    /// The expanded body of the struct `s` (cached by name).
    fn body(&self, s: &StructDef) -> Value {
        if let Some(v) = self.cache().borrow().get(&s.name) {
            return v.clone();
        }
        let v = struct_body(s, self);
        self.cache().borrow_mut().insert(s.name.clone(), v.clone());
        v
    }
}

/// meta/v1 `Condition`'s schema as controller-gen writes it for `[]metav1.Condition`.
pub fn condition_schema() -> Value {
    static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            serde_json::from_str(include_str!("condition_schema.json")).unwrap_or(Value::Null)
        })
        .clone()
}

/// The schema a value type implies, without extras (an element's extras are applied by
/// the caller).
pub fn type_schema(ty: &Ty, types: &Types<'_>) -> Value {
    match ty {
        Ty::String | Ty::ApiVersion | Ty::KindField => json!({"type": "string"}),
        Ty::Bool => json!({"type": "boolean"}),
        Ty::I32 => json!({"type": "integer", "format": "int32"}),
        Ty::I64 => json!({"type": "integer", "format": "int64"}),
        Ty::Number => json!({"type": "number"}),
        Ty::DateTime => json!({"type": "string", "format": "date-time"}),
        Ty::IntOrString => json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true
        }),
        Ty::Json => json!({"x-kubernetes-preserve-unknown-fields": true}),
        Ty::Vec(t) => json!({"type": "array", "items": type_schema(t, types)}),
        Ty::Map(t) => json!({"type": "object", "additionalProperties": type_schema(t, types)}),
        Ty::Option(t) => {
            let mut s = type_schema(t, types);
            if let Value::Object(m) = &mut s {
                m.insert("nullable".into(), Value::Bool(true));
            }
            s
        }
        Ty::Box(t) => type_schema(t, types),
        Ty::ObjectMeta => json!({"type": "object"}),
        Ty::Condition => condition_schema(),
        Ty::Named(name) => match types.get(name) {
            Some(TypeDef::Struct(s)) => types.body(s),
            Some(TypeDef::Enum(e)) => enum_schema(e),
            _ => json!({}),
        },
        Ty::External(path) => external_schema(path).unwrap_or_else(|| json!({})),
    }
}

/// The schema of a type kubegen does not define but knows (`Quantity`, `Time`,
/// `RawExtension`, `ByteString`, floats, integers other than i32 and i64), by its path's last segment; `None` when unknown.
pub fn external_schema(path: &str) -> Option<Value> {
    let last = path.rsplit("::").next().unwrap_or(path).trim();
    Some(match last {
        "Quantity" => json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
            "x-kubernetes-int-or-string": true
        }),
        "Time" | "MicroTime" | "DateTime" => json!({"type": "string", "format": "date-time"}),
        // controller-gen's schema for runtime.RawExtension: any object, kept as written.
        "RawExtension" => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        "f64" | "f32" => json!({"type": "number"}),
        // controller-gen's formats: int32 and int64 for the 32- and 64-bit integers
        // only, none for the narrower ones nor for the platform's width (Go's `int`).
        "u32" => json!({"type": "integer", "format": "int32"}),
        "u64" => json!({"type": "integer", "format": "int64"}),
        "u8" | "u16" | "i8" | "i16" | "usize" | "isize" => json!({"type": "integer"}),
        // k8s-openapi's bytes, base64 on the wire (Go's `[]byte`).
        "ByteString" => json!({"type": "string", "format": "byte"}),
        "Duration" => json!({"type": "string"}),
        _ => return None,
    })
}

fn enum_schema(e: &EnumDef) -> Value {
    let values: Vec<Value> = e
        .variants
        .iter()
        .map(|v| Value::String(v.value.clone()))
        .collect();
    let mut v = json!({"type": "string", "enum": values});
    describe(&mut v, e.doc.as_deref());
    v
}

/// Sets a named type's description from its doc comment. A field's own doc comment
/// replaces it ([`implied_field_schema`]); where no field speaks for the node (a list's
/// `items`, a map's `additionalProperties`, the root) the type's doc stays, as
/// controller-gen writes it.
fn describe(v: &mut Value, doc: Option<&str>) {
    if let (Value::Object(m), Some(doc)) = (v, doc) {
        m.insert(
            "description".into(),
            Value::String(crate::docs::read_back(doc)),
        );
    }
}

/// An object's schema from a struct's fields: its description, `type`, `properties`,
/// `required` (sorted, as controller-gen sorts it), and
/// `x-kubernetes-preserve-unknown-fields` when it keeps unknown fields; the struct's
/// own extras applied.
pub fn struct_body(s: &StructDef, types: &Types<'_>) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    collect_properties(s, types, &mut props, &mut required, 0);
    required.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    let mut m = Map::new();
    m.insert("type".into(), Value::String("object".into()));
    if !props.is_empty() {
        m.insert("properties".into(), Value::Object(props));
    }
    if !required.is_empty() {
        m.insert("required".into(), Value::Array(required));
    }
    if s.unknown_fields.is_some() {
        m.insert(
            "x-kubernetes-preserve-unknown-fields".into(),
            Value::Bool(true),
        );
    }
    let mut v = Value::Object(m);
    describe(&mut v, s.doc.as_deref());
    apply(&mut v, &s.schema);
    v
}

fn collect_properties(
    s: &StructDef,
    types: &Types<'_>,
    props: &mut Map<String, Value>,
    required: &mut Vec<Value>,
    depth: usize,
) {
    for f in &s.fields {
        if f.skip || f.schema.omit {
            continue;
        }
        if f.flatten {
            if let (Ty::Named(name), true) = (&f.ty, depth < 16) {
                if let Some(TypeDef::Struct(inner)) = types.get(name) {
                    collect_properties(inner, types, props, required, depth + 1);
                }
            }
            continue;
        }
        props.insert(f.json_name.clone(), field_schema(f, types));
        if f.required && !matches!(f.ty, Ty::ApiVersion | Ty::KindField | Ty::ObjectMeta) {
            required.push(Value::String(f.json_name.clone()));
        }
    }
}

/// A root struct's schema (`openAPIV3Schema`): its body and its own description.
pub fn root_schema(s: &StructDef, types: &Types<'_>) -> Value {
    struct_body(s, types)
}

/// The schema a field implies (its type's, its description, default and nullability),
/// without the field's extras.
pub fn implied_field_schema(f: &Field, types: &Types<'_>) -> Value {
    let mut v = type_schema(&f.ty, types);
    let Value::Object(m) = &mut v else {
        return v;
    };
    let doc = f.doc.clone().or_else(|| match &f.ty {
        Ty::Named(n) => match types.get(n) {
            Some(TypeDef::Struct(s)) => s.doc.clone(),
            Some(TypeDef::Enum(e)) => e.doc.clone(),
            _ => None,
        },
        _ => None,
    });
    // kube-apiserver forbids every key on the root `metadata` schema but `type` (and
    // `name`/`generateName` properties): a description there makes the CRD invalid, so
    // the field's doc comment stays in Rust, as controller-gen leaves it in Go.
    if let (Some(doc), false) = (doc, matches!(f.ty, Ty::ObjectMeta)) {
        m.insert(
            "description".into(),
            Value::String(crate::docs::read_back(&doc)),
        );
    }
    if let Some(d) = &f.default {
        m.insert("default".into(), d.clone());
    }
    if f.nullable {
        m.insert("nullable".into(), Value::Bool(true));
    }
    v
}

/// A field's schema: the implied one with the field's extras applied.
pub fn field_schema(f: &Field, types: &Types<'_>) -> Value {
    let mut v = implied_field_schema(f, types);
    apply(&mut v, &f.schema);
    v
}

/// Applies `extra` to `schema` in place.
pub fn apply(schema: &mut Value, extra: &SchemaExtra) {
    let Value::Object(m) = schema else {
        return;
    };
    if let Some(element) = &extra.element {
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = m.get_mut(key) {
                if inner.is_object() {
                    apply(inner, element);
                    break;
                }
            }
        }
    }
    for (k, v) in &extra.set {
        if v.is_null() {
            m.remove(k);
        } else {
            m.insert(k.clone(), v.clone());
        }
    }
}

/// What `actual` says beyond `implied` for a value of type `ty`: the extras that make
/// `apply(implied, extras) == actual`.
pub fn diff(actual: &Value, implied: &Value, ty: &Ty) -> SchemaExtra {
    let mut out = SchemaExtra::default();
    let (Value::Object(a), Value::Object(b)) = (actual, implied) else {
        // Schema nodes are objects; anything else has nothing to diff.
        return out;
    };
    let element_key = match unbox(ty) {
        Ty::Vec(_) => Some(("items", element_ty(ty))),
        Ty::Map(_) => Some(("additionalProperties", element_ty(ty))),
        _ => None,
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (av, bv) = (a.get(k), b.get(k));
        if let Some((ek, Some(inner))) = &element_key {
            if k == ek {
                if let (Some(av @ Value::Object(_)), Some(bv @ Value::Object(_))) = (av, bv) {
                    let e = diff(av, bv, inner);
                    if !e.is_empty() {
                        out.element = Some(Box::new(e));
                    }
                    continue;
                }
            }
        }
        if av != bv {
            out.set
                .insert(k.clone(), av.cloned().unwrap_or(Value::Null));
        }
    }
    out
}

fn unbox(ty: &Ty) -> &Ty {
    match ty {
        Ty::Box(t) => unbox(t),
        t => t,
    }
}

fn element_ty(ty: &Ty) -> Option<&Ty> {
    match unbox(ty) {
        Ty::Vec(t) | Ty::Map(t) => Some(match t.as_ref() {
            Ty::Option(inner) => inner,
            t => t,
        }),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------
// Markers
// ---------------------------------------------------------------------------------

/// controller-gen's validation markers (`+kubebuilder:validation:<Name>`) and the schema
/// key each sets.
pub const VALIDATION_MARKERS: &[(&str, &str)] = &[
    ("Maximum", "maximum"),
    ("Minimum", "minimum"),
    ("ExclusiveMaximum", "exclusiveMaximum"),
    ("ExclusiveMinimum", "exclusiveMinimum"),
    ("MultipleOf", "multipleOf"),
    ("MaxLength", "maxLength"),
    ("MinLength", "minLength"),
    ("Pattern", "pattern"),
    ("MaxItems", "maxItems"),
    ("MinItems", "minItems"),
    ("UniqueItems", "uniqueItems"),
    ("MaxProperties", "maxProperties"),
    ("MinProperties", "minProperties"),
    ("Enum", "enum"),
    ("Format", "format"),
    ("Type", "type"),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource"),
    ("XIntOrString", "x-kubernetes-int-or-string"),
    (
        "XPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
    ),
    ("XValidation", "x-kubernetes-validations"),
];

/// The marker lines (without `///`) that carry `extra` for a field (or, for a root, its
/// type). Deterministic: keys in order, elements after their container.
pub fn markers(extra: &SchemaExtra) -> Vec<String> {
    let mut out = Vec::new();
    if extra.omit {
        out.push("+kubegen:schema:omit".to_owned());
    }
    write_markers(extra, 0, &mut out);
    out
}

fn write_markers(extra: &SchemaExtra, depth: usize, out: &mut Vec<String>) {
    let items = "items:".repeat(depth);
    for (k, v) in &extra.set {
        if let Some(line) = known_marker(k, v, depth) {
            out.extend(line);
        } else {
            out.push(format!("+kubegen:schema:{items}{k}={}", compact(v)));
        }
    }
    if let Some(e) = &extra.element {
        write_markers(e, depth + 1, out);
    }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// controller-gen's spelling for one key, when it has one that reads back exactly.
fn known_marker(key: &str, v: &Value, depth: usize) -> Option<Vec<String>> {
    let items = "items:".repeat(depth);
    let validation =
        |name: &str, value: String| vec![format!("+kubebuilder:validation:{items}{name}={value}")];
    match (key, v) {
        ("maximum" | "minimum" | "multipleOf", Value::Number(n)) => {
            Some(validation(marker_name(key)?, n.to_string()))
        }
        (
            "maxLength" | "minLength" | "maxItems" | "minItems" | "maxProperties" | "minProperties",
            Value::Number(n),
        ) if n.is_u64() => Some(validation(marker_name(key)?, n.to_string())),
        ("exclusiveMaximum" | "exclusiveMinimum" | "uniqueItems", Value::Bool(b)) => {
            Some(validation(marker_name(key)?, b.to_string()))
        }
        ("pattern", Value::String(s)) => Some(validation("Pattern", quote(s))),
        ("format", Value::String(s)) if is_word(s) => Some(validation("Format", s.clone())),
        ("format", Value::Null) if depth == 0 => Some(validation("Format", "\"\"".into())),
        ("type", Value::String(s)) if is_word(s) => Some(validation("Type", s.clone())),
        ("enum", Value::Array(values)) if enum_is_plain(values) => {
            let list: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
            Some(validation("Enum", list.join(";")))
        }
        ("x-kubernetes-embedded-resource", Value::Bool(true)) if depth == 0 => {
            Some(vec!["+kubebuilder:validation:XEmbeddedResource".to_owned()])
        }
        ("x-kubernetes-int-or-string", Value::Bool(true)) if depth == 0 => {
            Some(vec!["+kubebuilder:validation:XIntOrString".to_owned()])
        }
        ("x-kubernetes-preserve-unknown-fields", Value::Bool(true)) if depth == 0 => {
            Some(vec!["+kubebuilder:pruning:PreserveUnknownFields".to_owned()])
        }
        ("nullable", Value::Bool(true)) if depth == 0 => Some(vec!["+nullable".to_owned()]),
        ("default", v) if depth == 0 && !v.is_null() => {
            Some(vec![format!("+kubebuilder:default={}", compact(v))])
        }
        ("x-kubernetes-list-type", Value::String(s)) if depth == 0 && is_word(s) => {
            Some(vec![format!("+listType={s}")])
        }
        ("x-kubernetes-list-map-keys", Value::Array(keys)) if depth == 0 && !keys.is_empty() => {
            keys.iter()
                .map(|k| match k {
                    Value::String(s) if is_word(s) => Some(format!("+listMapKey={s}")),
                    _ => None,
                })
                .collect()
        }
        ("x-kubernetes-map-type", Value::String(s)) if depth == 0 && is_word(s) => {
            Some(vec![format!("+mapType={s}")])
        }
        ("x-kubernetes-validations", Value::Array(rules)) => rules
            .iter()
            .map(|r| {
                xvalidation(r)
                    .map(|args| format!("+kubebuilder:validation:{items}XValidation:{args}"))
            })
            .collect(),
        _ => None,
    }
}

fn marker_name(key: &str) -> Option<&'static str> {
    VALIDATION_MARKERS
        .iter()
        .find(|(_, k)| *k == key)
        .map(|(n, _)| *n)
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

const XVALIDATION_KEYS: &[&str] = &[
    "rule",
    "message",
    "messageExpression",
    "reason",
    "fieldPath",
    "optionalOldSelf",
];

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
    /// `+required` / `+kubebuilder:validation:Required` (`Some(true)`), `+optional` /
    /// `+kubebuilder:validation:Optional` (`Some(false)`).
    pub required: Option<bool>,
    /// `+nullable`.
    pub nullable: bool,
    /// `+kubebuilder:validation:Schemaless`.
    pub schemaless: bool,
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
        let value_or = |what: &str| {
            value.ok_or_else(|| {
                err(
                    format!("`+{name}` needs a value"),
                    format!("write `+{name}={what}`"),
                )
            })
        };
        match name {
            "nullable" => {
                self.nullable = true;
                return Ok(true);
            }
            "optional" | "kubebuilder:validation:Optional" => {
                self.required = Some(false);
                return Ok(true);
            }
            "required" | "kubebuilder:validation:Required" => {
                self.required = Some(true);
                return Ok(true);
            }
            "kubebuilder:validation:Schemaless" => {
                self.schemaless = true;
                return Ok(true);
            }
            "kubebuilder:default" | "default" => {
                let v = value_or("<JSON value>")?;
                self.default = Some(parse_value(v));
                self.sources.insert("default".into(), index);
                return Ok(true);
            }
            "kubebuilder:pruning:PreserveUnknownFields" => {
                self.set(
                    0,
                    "x-kubernetes-preserve-unknown-fields",
                    Value::Bool(true),
                    index,
                );
                return Ok(true);
            }
            "listType" => {
                let v = value_or("atomic|set|map")?;
                if !matches!(v, "atomic" | "set" | "map") {
                    return Err(err(
                        format!("`+listType={v}` is not a list type"),
                        "use atomic, set or map",
                    ));
                }
                self.set(0, "x-kubernetes-list-type", Value::String(v.into()), index);
                return Ok(true);
            }
            "listMapKey" => {
                let v = value_or("<field>")?;
                let node = &mut self.extra.set;
                let keys = node
                    .entry("x-kubernetes-list-map-keys".to_owned())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(a) = keys {
                    a.push(Value::String(v.to_owned()));
                }
                self.sources
                    .insert("x-kubernetes-list-map-keys".into(), index);
                return Ok(true);
            }
            "mapType" | "structType" => {
                let v = value_or("atomic|granular")?;
                if !matches!(v, "atomic" | "granular") {
                    return Err(err(
                        format!("`+{name}={v}` is not a map type"),
                        "use atomic or granular",
                    ));
                }
                self.set(0, "x-kubernetes-map-type", Value::String(v.into()), index);
                return Ok(true);
            }
            _ => {}
        }
        if let Some(rest) = name.strip_prefix("kubegen:schema:") {
            if rest == "omit" {
                self.extra.omit = true;
                return Ok(true);
            }
            let (depth, key) = strip_items(rest);
            if key.is_empty() {
                return Err(err(
                    format!("`+{name}` names no schema key"),
                    "write `+kubegen:schema:<key>=<JSON>`",
                ));
            }
            let v = value_or("<JSON value>")?;
            let parsed: Value = serde_json::from_str(v).map_err(|e| {
                err(
                    format!("`+{name}` has a value that is not JSON: {e}"),
                    "write the value as JSON (strings in double quotes)",
                )
            })?;
            self.set(depth, key, parsed, index);
            return Ok(true);
        }
        let Some(rest) = name.strip_prefix("kubebuilder:validation:") else {
            return Ok(false);
        };
        let (depth, marker) = strip_items(rest);
        if let Some(first) = marker.strip_prefix("XValidation:") {
            // The marker reader splits at the first `=`: put the arguments back together.
            let args = match value {
                Some(v) => format!("{first}={v}"),
                None => first.to_owned(),
            };
            let rule = parse_xvalidation(&args)?;
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
            return Ok(true);
        }
        let Some((_, key)) = VALIDATION_MARKERS.iter().find(|(n, _)| *n == marker) else {
            return Err(err(
                format!("unknown marker `+{name}`"),
                format!(
                    "use one of +kubebuilder:validation:{{{}}}",
                    VALIDATION_MARKERS
                        .iter()
                        .map(|(n, _)| *n)
                        .chain(["Required", "Optional", "Schemaless"])
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            ));
        };
        let v = match *key {
            "x-kubernetes-embedded-resource"
            | "x-kubernetes-int-or-string"
            | "x-kubernetes-preserve-unknown-fields"
            | "uniqueItems"
            | "exclusiveMaximum"
            | "exclusiveMinimum" => match value {
                None | Some("true") => Value::Bool(true),
                Some("false") => Value::Bool(false),
                Some(other) => {
                    return Err(err(
                        format!("`+{name}={other}` is not a boolean"),
                        format!("write `+{name}` or `+{name}=false`"),
                    ))
                }
            },
            "maximum" | "minimum" | "multipleOf" => {
                let v = value_or("<number>")?;
                let n: serde_json::Number = v.trim().parse().map_err(|_| {
                    err(
                        format!("`+{name}={v}` is not a number"),
                        format!("write a number, as in `+{name}=10`"),
                    )
                })?;
                Value::Number(n)
            }
            "maxLength" | "minLength" | "maxItems" | "minItems" | "maxProperties"
            | "minProperties" => {
                let v = value_or("<count>")?;
                let n: u64 = v.trim().parse().map_err(|_| {
                    err(
                        format!("`+{name}={v}` is not a non-negative integer"),
                        format!("write a count, as in `+{name}=3`"),
                    )
                })?;
                Value::from(n)
            }
            "pattern" => Value::String(parse_string(value_or("<regular expression>")?)?),
            "format" | "type" => {
                let s = parse_string(value_or("<name>")?)?;
                if s.is_empty() {
                    Value::Null
                } else {
                    Value::String(s)
                }
            }
            "enum" => parse_enum(value_or("a;b;c")?),
            _ => Value::Null,
        };
        self.set(depth, key, v, index);
        Ok(true)
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
}

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
fn parse_value(v: &str) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read_back(lines: &[String]) -> SchemaExtra {
        let mut set = MarkerSet::default();
        for (i, l) in lines.iter().enumerate() {
            let body = &l[1..];
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            assert!(set.apply(name, value, i).unwrap(), "{l}");
        }
        let mut extra = set.extra;
        if let Some(d) = set.default {
            extra.set.insert("default".into(), d);
        }
        if set.nullable {
            extra.set.insert("nullable".into(), Value::Bool(true));
        }
        extra
    }

    #[test]
    fn markers_read_back_exactly() {
        let mut extra = SchemaExtra::default();
        for (k, v) in [
            ("maximum", json!(10)),
            ("minimum", json!(-1.5)),
            ("pattern", json!("^[a-z]\"`,\\d+$")),
            ("enum", json!(["a", "b"])),
            ("format", Value::Null),
            ("x-kubernetes-list-type", json!("map")),
            ("x-kubernetes-list-map-keys", json!(["name", "port"])),
            (
                "x-kubernetes-validations",
                json!([{"rule": "self.a, b", "message": "m \"q\""}, {"rule": "x", "optionalOldSelf": true}]),
            ),
            ("anyOf", json!([{"required": ["a"]}])),
            ("default", json!({"a": [1]})),
            ("nullable", json!(true)),
        ] {
            extra.set.insert(k.into(), v);
        }
        let mut element = SchemaExtra::default();
        element.set.insert("maxLength".into(), json!(3));
        element.set.insert("title".into(), json!("t"));
        extra.element = Some(Box::new(element));
        let lines = markers(&extra);
        assert!(lines.contains(&"+kubebuilder:validation:Maximum=10".to_owned()));
        assert!(lines.contains(&"+kubebuilder:validation:items:MaxLength=3".to_owned()));
        assert!(lines.contains(&"+listMapKey=port".to_owned()));
        assert_eq!(read_back(&lines), extra);
    }

    #[test]
    fn diff_then_apply_is_identity() {
        let types = Types::new([]);
        let actual =
            json!({"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 3});
        let ty = Ty::Vec(Box::new(Ty::I64));
        let implied = type_schema(&ty, &types);
        let extra = diff(&actual, &implied, &ty);
        let mut back = implied.clone();
        apply(&mut back, &extra);
        assert_eq!(back, actual);
        assert_eq!(
            extra.element.as_ref().map(|e| e.set.get("format").cloned()),
            Some(Some(Value::Null))
        );
    }

    #[test]
    fn defaults_read_controller_gen_literals() {
        for (text, want) in [
            (r#"{"a","b"}"#, json!(["a", "b"])),
            ("{a, b}", json!(["a", "b"])),
            ("{1,2.5,true}", json!([1, 2.5, true])),
            (r#"{"node":"n1"}"#, json!({"node": "n1"})),
            (
                "{node: n1, port: 80, tls: {on: true}}",
                json!({"node": "n1", "port": 80, "tls": {"on": true}}),
            ),
            (r#"{`raw,"x"`, "q\"}"}"#, json!(["raw,\"x\"", "q\"}"])),
            ("{}", json!({})),
            ("Fast", json!("Fast")),
            ("3", json!(3)),
            ("{unclosed", json!("{unclosed")),
        ] {
            assert_eq!(parse_value(text), want, "{text}");
        }
    }

    #[test]
    fn element_types_keep_their_description_and_required_is_sorted() {
        let port = StructDef {
            name: "Port".into(),
            existing: None,
            doc: Some("A port.".into()),
            origin: String::new(),
            fields: ["zone", "name"]
                .into_iter()
                .map(|n| Field {
                    json_name: n.into(),
                    rust_name: n.into(),
                    ty: Ty::String,
                    doc: None,
                    optional: false,
                    required: true,
                    nullable: false,
                    default: None,
                    flatten: false,
                    skip: false,
                    schema: SchemaExtra::default(),
                })
                .collect(),
            unknown_fields: None,
            schema: SchemaExtra::default(),
        };
        let defs = [TypeDef::Struct(port)];
        let types = Types::new(&defs);
        let list = type_schema(&Ty::Vec(Box::new(Ty::Named("Port".into()))), &types);
        assert_eq!(list["items"]["description"], json!("A port."));
        assert_eq!(list["items"]["required"], json!(["name", "zone"]));
    }

    #[test]
    fn unknown_validation_marker_is_an_error() {
        let mut set = MarkerSet::default();
        let e = set
            .apply("kubebuilder:validation:Minimun", Some("1"), 0)
            .unwrap_err();
        assert!(e.problem.contains("Minimun"), "{e:?}");
        let e = set
            .apply("kubebuilder:validation:Maximum", Some("ten"), 0)
            .unwrap_err();
        assert!(e.problem.contains("not a number"), "{e:?}");
    }
}
