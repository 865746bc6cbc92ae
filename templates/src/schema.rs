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

pub use crate::model::SchemaExtra;

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

pub use crate::markers::{resource_args, split_args, MarkerError, MarkerSet};

/// The marker lines (without `///`) that carry `extra` for a field (or, for a root, its
/// type). Deterministic: keys in order, elements after their container. Each key is
/// written with the registry's first marker for it ([`crate::markers::write_lines`]),
/// else as `+kubegen:schema:<key>=<JSON>`.
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
        if let Some(lines) = crate::markers::write_lines(k, v, depth) {
            out.extend(lines);
        } else {
            out.push(format!(
                "+kubegen:schema:{items}{k}={}",
                crate::markers::compact(v)
            ));
        }
    }
    if let Some(e) = &extra.element {
        write_markers(e, depth + 1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markers::parse_value;

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
