//! CRD schemas -> the model: every construct a valid object can hold maps to a Rust type
//! that keeps it, and every choice is deterministic.
//!
//! Mapping (the `--help`-level summary is in the crate docs):
//!
//! | schema | Rust |
//! |---|---|
//! | `object` with `properties` | a struct named after its path (`FooSpecTemplate`) |
//! | ... plus `x-kubernetes-preserve-unknown-fields` | the struct + a flattened `additional_properties` map |
//! | `object` with `additionalProperties: {schema}` | `BTreeMap<String, T>` |
//! | `object` with `additionalProperties: true`, preserve-unknown-fields, or no properties | `BTreeMap<String, Value>` |
//! | `x-kubernetes-embedded-resource` without properties | `serde_json::Value` |
//! | `x-kubernetes-embedded-resource` with properties | a struct (+ flattened map when preserving) |
//! | root `apiVersion` / `kind` | runtime `ApiVersion<Self>` / `Kind<Self>` (zero-sized, written from the kind's constants) |
//! | root `metadata` | k8s-openapi `ObjectMeta` |
//! | other root properties (beside or instead of `spec`/`status`) | fields of the root struct |
//! | no `type` (and no properties) | `serde_json::Value` |
//! | `array` | `Vec<T>`; without `items`: `Vec<Value>` |
//! | `string` | `String`; `date-time`: runtime `DateTime`; `byte`: `String` (base64 text) |
//! | `string` with `enum` | an enum + `Other(String)` |
//! | `integer` | `i64`; `int32`: `i32` |
//! | `number` | `serde_json::Number` |
//! | `integer`/`number`/`boolean` with `enum` | the scalar type (values listed in docs) |
//! | `x-kubernetes-int-or-string` | k8s-openapi `IntOrString` |
//! | items exactly meta/v1 `Condition` | runtime `Condition` (k8s-openapi's shape, lossless `lastTransitionTime`) |
//! | `nullable` fields that are `Option` by the rule below | runtime `Nullable` (absent, `null` and a value stay apart) |
//! | `nullable` items and map values, or `null` among `enum` values | `Option` |
//! | `oneOf`/`anyOf`/`allOf`/`not` | validation only: the parent's type decides |
//!
//! Fields are `Option` unless required and not nullable and without a default (a
//! required nullable field is a `Nullable`, so a `null` is written back, not dropped). A
//! required field with a default is `Option` too (absent stays absent; the struct's
//! `apply_defaults` fills it): `#[serde(default)]` would write a value nobody set.
//! Structurally identical nested structs and enums are emitted once (the first name
//! wins); name collisions get numeric suffixes in schema order.

use std::collections::{BTreeMap, BTreeSet};

use kubegen_templates::model::{
    ClientTags, EnumDef, ExtensionMethod, Field, Kind, KindSource, StructDef, Ty, TypeDef, Variant,
    Version,
};
use kubegen_templates::names::{self, Namer};
use kubegen_templates::schema::{SchemaExtra, Types};

use super::document::{Crd, CrdVersion};
use super::schema::{AdditionalProperties, Schema};
use crate::error::Error;

/// The client tags a CRD version implies, as code-generator would write them for the
/// same Go type: every verb (the status verbs only with the status subresource), and
/// with the scale subresource the methods `GetScale`, `UpdateScale` and `PatchScale`
/// on `autoscaling/v1` `Scale`.
pub fn client_tags(version: &CrdVersion) -> ClientTags {
    let mut tags = ClientTags::all(version.status_subresource);
    if version.scale.is_some() {
        tags.methods = ExtensionMethod::scale_methods();
    }
    tags
}

/// Builds one version module from the CRD versions that serve in it.
pub struct VersionBuilder {
    namer: Namer,
    types: BTreeMap<String, TypeDef>,
    dedupe: BTreeMap<String, String>,
    /// Expanded struct schemas (types never change once in `types`).
    bodies: kubegen_templates::schema::BodyCache,
    kinds: Vec<Kind>,
    roots: Vec<String>,
}

impl VersionBuilder {
    /// A builder whose namespace already holds every kind's name and list type name.
    pub fn new(crds: &[(&Crd, &CrdVersion)]) -> Self {
        let mut reserved = Vec::new();
        for (crd, _) in crds {
            reserved.push(names::type_name(&crd.names.kind));
            reserved.push(list_type_name(crd));
        }
        VersionBuilder {
            namer: Namer::with_reserved(reserved),
            types: BTreeMap::new(),
            dedupe: BTreeMap::new(),
            bodies: Default::default(),
            kinds: Vec::new(),
            roots: Vec::new(),
        }
    }

    /// Adds one kind: its root struct, nested types and registration data.
    pub fn add_kind(&mut self, crd: &Crd, version: &CrdVersion) -> Result<(), Error> {
        let type_name = names::type_name(&crd.names.kind);
        let root = self.root_struct(&type_name, &version.schema)?;
        self.types.insert(type_name.clone(), TypeDef::Struct(root));
        self.roots.push(type_name.clone());
        self.kinds.push(Kind {
            names: crd.names.clone(),
            scope: crd.scope,
            status_subresource: version.status_subresource,
            scale: version.scale.clone(),
            client: client_tags(version),
            schema_json: version.schema_json.clone(),
            printer_columns: version.printer_columns.clone(),
            served: version.served,
            storage: version.storage,
            deprecated: version.deprecated,
            conversion_webhook: crd.conversion_webhook,
            deprecation_warning: version.deprecation_warning.clone(),
            source: KindSource::Generated { type_name },
            list_type_name: list_type_name(crd),
            selectable_fields: version.selectable_fields.clone(),
            crd_metadata: crd.metadata.clone(),
            openapi: None,
        });
        Ok(())
    }

    /// The finished version: kinds sorted by name, types in reading order (each root,
    /// then the types it uses, depth first, in field order).
    pub fn finish(mut self, name: &str) -> Version {
        self.kinds.sort_by(|a, b| a.names.kind.cmp(&b.names.kind));
        let mut roots = self.roots.clone();
        roots.sort();
        let mut order = Vec::new();
        let mut seen = BTreeSet::new();
        for root in &roots {
            visit(root, &self.types, &mut seen, &mut order);
        }
        let types = order
            .into_iter()
            .filter_map(|n| self.types.remove(&n))
            .collect();
        Version {
            name: name.to_owned(),
            module: names::module_name(name),
            kinds: self.kinds,
            types,
        }
    }

    fn root_struct(&mut self, name: &str, schema: &Schema) -> Result<StructDef, Error> {
        let mut fields = vec![
            marker_field("apiVersion", "api_version", Ty::ApiVersion),
            marker_field("kind", "kind", Ty::KindField),
            marker_field("metadata", "metadata", Ty::ObjectMeta),
        ];
        for f in &mut fields {
            if let Some((_, s)) = schema.properties.iter().find(|(n, _)| *n == f.json_name) {
                f.doc = s.description.clone();
            }
        }
        let mut field_names = Namer::with_reserved(fields.iter().map(|f| f.rust_name.clone()));
        for (json, prop) in &schema.properties {
            if matches!(json.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            fields.push(self.field(name, json, prop, schema, &mut field_names)?);
        }
        for f in &mut fields {
            if matches!(f.ty, Ty::ApiVersion | Ty::KindField | Ty::ObjectMeta) {
                match schema.properties.iter().find(|(n, _)| *n == f.json_name) {
                    Some((_, prop)) => {
                        let types = Types::from_map(&self.types, &self.bodies);
                        f.schema = field_extra(f, prop, &types);
                    }
                    None => f.schema.omit = true,
                }
            }
        }
        let unknown_fields = preserves(schema).then(|| field_names.unique("additional_properties"));
        let mut root = StructDef {
            existing: None,
            name: name.to_owned(),
            doc: schema.description.clone(),
            origin: schema.path.clone(),
            fields,
            unknown_fields,
            schema: SchemaExtra::default(),
        };
        let types = Types::from_map(&self.types, &self.bodies);
        let implied = kubegen_templates::schema::root_schema(&root, &types);
        root.schema =
            kubegen_templates::schema::diff(schema.raw(), &implied, &Ty::Named(name.to_owned()));
        Ok(root)
    }

    fn field(
        &mut self,
        parent: &str,
        json: &str,
        prop: &Schema,
        owner: &Schema,
        namer: &mut Namer,
    ) -> Result<Field, Error> {
        let hint = format!("{parent}{}", names::type_part(json));
        let ty = self.ty(prop, &hint)?;
        let required = owner.required.iter().any(|r| r == json);
        let mut field = Field {
            json_name: json.to_owned(),
            rust_name: namer.unique(&names::field_name(json)),
            ty,
            doc: prop.description.clone(),
            optional: !required || prop.nullable || prop.default.is_some(),
            required,
            nullable: prop.nullable,
            flatten: false,
            skip: false,
            default: prop.default.clone(),
            schema: SchemaExtra::default(),
        };
        let types = Types::from_map(&self.types, &self.bodies);
        field.schema = field_extra(&field, prop, &types);
        Ok(field)
    }

    /// The type of a value (a field's, without its `Option`).
    fn ty(&mut self, s: &Schema, hint: &str) -> Result<Ty, Error> {
        if s.int_or_string {
            return Ok(Ty::IntOrString);
        }
        if let Some(values) = &s.enum_values {
            let strings: Option<Vec<&str>> = values
                .iter()
                .filter(|v| !v.is_null())
                .map(|v| v.as_str())
                .collect();
            match (s.type_.as_deref(), strings) {
                (Some("string") | None, Some(strings)) if !strings.is_empty() => {
                    return Ok(self.string_enum(s, hint, &strings))
                }
                _ => {}
            }
        }
        match s.type_.as_deref() {
            Some("string") => Ok(match s.format.as_deref() {
                Some("date-time") => Ty::DateTime,
                _ => Ty::String,
            }),
            Some("integer") => Ok(match s.format.as_deref() {
                Some("int32") => Ty::I32,
                _ => Ty::I64,
            }),
            Some("number") => Ok(Ty::Number),
            Some("boolean") => Ok(Ty::Bool),
            Some("array") => match &s.items {
                Some(items) => {
                    if is_condition(items) {
                        return Ok(Ty::Vec(Box::new(Ty::Condition)));
                    }
                    let inner = self.ty(items, hint)?;
                    Ok(Ty::Vec(Box::new(nullable(items, inner))))
                }
                None => Ok(Ty::Vec(Box::new(Ty::Json))),
            },
            Some("object") => self.object(s, hint),
            None => {
                if !s.properties.is_empty() || s.additional_properties.is_some() {
                    self.object(s, hint)
                } else if let Some(items) = &s.items {
                    let inner = self.ty(items, hint)?;
                    Ok(Ty::Vec(Box::new(nullable(items, inner))))
                } else {
                    Ok(Ty::Json)
                }
            }
            Some(other) => Err(Error::at(
                format!("{}.type", s.path),
                format!("unknown type {other:?}"),
                "use one of string, integer, number, boolean, array, object",
            )),
        }
    }

    fn object(&mut self, s: &Schema, hint: &str) -> Result<Ty, Error> {
        if !s.properties.is_empty() {
            return self.nested_struct(s, hint).map(Ty::Named);
        }
        match &s.additional_properties {
            Some(AdditionalProperties::Schema(values)) => {
                let inner = self.ty(values, hint)?;
                Ok(Ty::Map(Box::new(nullable(values, inner))))
            }
            _ if s.embedded_resource => Ok(Ty::Json),
            _ => Ok(Ty::Map(Box::new(Ty::Json))),
        }
    }

    fn nested_struct(&mut self, s: &Schema, hint: &str) -> Result<String, Error> {
        let mut field_names = Namer::default();
        let mut fields = Vec::new();
        for (json, prop) in &s.properties {
            fields.push(self.field(hint, json, prop, s, &mut field_names)?);
        }
        let unknown_fields = preserves(s).then(|| field_names.unique("additional_properties"));
        let key = format!("struct {fields:?} {unknown_fields:?}");
        if let Some(existing) = self.dedupe.get(&key) {
            return Ok(existing.clone());
        }
        let name = self.namer.unique(&names::type_name(hint));
        self.dedupe.insert(key, name.clone());
        self.types.insert(
            name.clone(),
            TypeDef::Struct(StructDef {
                existing: None,
                name: name.clone(),
                doc: s.description.clone(),
                origin: s.path.clone(),
                fields,
                unknown_fields,
                schema: SchemaExtra::default(),
            }),
        );
        Ok(name)
    }

    fn string_enum(&mut self, s: &Schema, hint: &str, values: &[&str]) -> Ty {
        let mut unique: Vec<&str> = Vec::new();
        for v in values {
            if !unique.contains(v) {
                unique.push(v);
            }
        }
        let key = format!("enum {unique:?}");
        if let Some(existing) = self.dedupe.get(&key) {
            return Ty::Named(existing.clone());
        }
        let mut variant_names = Namer::default();
        let variants: Vec<Variant> = unique
            .iter()
            .map(|v| Variant {
                name: variant_names.unique_variant(v),
                value: (*v).to_owned(),
            })
            .collect();
        let other_variant = ["Other", "Unlisted", "UnlistedValue"]
            .into_iter()
            .find(|c| !variant_names.is_taken(c))
            .unwrap_or("Other");
        let other_variant = variant_names.unique(other_variant);
        let name = self.namer.unique(&names::type_name(hint));
        self.dedupe.insert(key, name.clone());
        self.types.insert(
            name.clone(),
            TypeDef::Enum(EnumDef {
                name: name.clone(),
                doc: s.description.clone(),
                variants,
                other_variant,
            }),
        );
        Ty::Named(name)
    }
}

fn visit(
    name: &str,
    types: &BTreeMap<String, TypeDef>,
    seen: &mut BTreeSet<String>,
    order: &mut Vec<String>,
) {
    if !seen.insert(name.to_owned()) {
        return;
    }
    order.push(name.to_owned());
    if let Some(TypeDef::Struct(s)) = types.get(name) {
        for f in &s.fields {
            let mut refs = Vec::new();
            named_refs(&f.ty, &mut refs);
            for r in refs {
                visit(&r, types, seen, order);
            }
        }
    }
}

fn named_refs(ty: &Ty, out: &mut Vec<String>) {
    match ty {
        Ty::Named(n) => out.push(n.clone()),
        Ty::Vec(t) | Ty::Map(t) | Ty::Option(t) | Ty::Box(t) => named_refs(t, out),
        _ => {}
    }
}

fn list_type_name(crd: &Crd) -> String {
    names::type_name(&crd.names.list_kind)
}

fn marker_field(json: &str, rust: &str, ty: Ty) -> Field {
    Field {
        json_name: json.to_owned(),
        rust_name: rust.to_owned(),
        ty,
        doc: None,
        optional: false,
        required: true,
        nullable: false,
        flatten: false,
        skip: false,
        default: None,
        schema: SchemaExtra::default(),
    }
}

/// What `prop` says beyond the schema `field` implies (see `kubegen_templates::schema`).
fn field_extra(field: &Field, prop: &Schema, types: &Types<'_>) -> SchemaExtra {
    let implied = kubegen_templates::schema::implied_field_schema(field, types);
    kubegen_templates::schema::diff(prop.raw(), &implied, &field.ty)
}

fn preserves(s: &Schema) -> bool {
    s.preserve_unknown_fields == Some(true)
        || matches!(
            s.additional_properties,
            Some(AdditionalProperties::Bool(true))
        )
}

fn nullable(s: &Schema, ty: Ty) -> Ty {
    if s.nullable
        || s.enum_values
            .as_ref()
            .is_some_and(|v| v.iter().any(|v| v.is_null()))
    {
        Ty::Option(Box::new(ty))
    } else {
        ty
    }
}

/// Whether an array item schema is exactly meta/v1 `Condition`: the same six properties
/// with the same types, and the five required ones required.
fn is_condition(s: &Schema) -> bool {
    if s.type_.as_deref() != Some("object") || s.preserve_unknown_fields == Some(true) || s.nullable
    {
        return false;
    }
    let expect = [
        ("lastTransitionTime", "string", Some("date-time"), true),
        ("message", "string", None, true),
        ("observedGeneration", "integer", Some("int64"), false),
        ("reason", "string", None, true),
        ("status", "string", None, true),
        ("type", "string", None, true),
    ];
    if s.properties.len() != expect.len() {
        return false;
    }
    expect.iter().all(|(name, ty, format, required)| {
        let Some((_, p)) = s.properties.iter().find(|(n, _)| n == name) else {
            return false;
        };
        let format_ok = match format {
            Some(f) => {
                p.format.as_deref() == Some(*f)
                    || (*name == "observedGeneration" && p.format.is_none())
            }
            None => true,
        };
        p.type_.as_deref() == Some(*ty)
            && format_ok
            && !p.nullable
            && s.required.iter().any(|r| r == name) == *required
    })
}
