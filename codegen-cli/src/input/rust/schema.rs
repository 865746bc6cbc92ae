//! Rust types -> the model's schema of a kind: the one mapping from syn types to the
//! model's types (and so to a structural schema), used for every kind whatever kubegen
//! emits from it: the CRD (`kubegen crd`), the schema the fake clientset validates,
//! prunes and defaults with, and the resource info.
//!
//! - `Option<T>` is optional, other fields required unless `#[serde(default)]`,
//!   `+optional` or a default marker; `Vec`, `BTreeMap`/`HashMap<String, T>`, nested
//!   structs, enums (unit variants with serde's renames, or an `Enum` marker), serde's
//!   internally and adjacently tagged enums (an object with the tag and the variants'
//!   fields), `IntOrString`, `Quantity`, `Time`, `MicroTime`, the runtime's `DateTime`,
//!   `serde_json::Value` (`x-kubernetes-preserve-unknown-fields`), `ObjectMeta` at the
//!   root, flattened structs merged, `rename`/`rename_all`. Doc comments become
//!   descriptions. The schema itself is `kubegen_templates::schema`, shared with the CRD
//!   reader, which is why a CRD -> Rust -> CRD round trip is exact.
//! - Markers on fields and types are read through the marker registry
//!   (`kubegen_templates::markers`): an unknown one of kubegen's or controller-gen's
//!   families is an error with the nearest known name, and a marker on a field of the
//!   wrong type (`Pattern` on an integer) is an error at the marker.

use std::collections::BTreeMap;

use kubegen_templates::markers::{self as registry, MarkerSet};
use kubegen_templates::model::{EnumDef, Field, StructDef, Ty, TypeDef, Variant};
use kubegen_templates::schema::{self, SchemaExtra, Types};
use quote::ToTokens;
use serde_json::{json, Value};

use super::fields::{option_inner, serde_attrs, wire_name};
use super::kinds::FoundKind;
use super::markers::{self, Marker};
use super::source::{Item, ItemKind, Source};
use crate::error::Error;

/// The structural schema (`openAPIV3Schema`) of `found`'s kind, whose root type is
/// `item` (the `+genclient` struct, or kube-derive's spec struct).
pub fn kind_schema(item: &Item, found: &FoundKind, source: &Source) -> Result<Value, Error> {
    let mut b = SchemaBuilder {
        source,
        package: &found.package,
        types: BTreeMap::new(),
        stack: Vec::new(),
    };
    let root = match &item.kind {
        ItemKind::Struct(s)
            if found.roots.first().map(String::as_str) == Some(&*s.ident.to_string())
                && item.markers.iter().any(|m| m.name.starts_with("genclient")) =>
        {
            b.build_struct(item, s, true)?
        }
        _ => b.kube_derive_root(found)?,
    };
    let mut root = root;
    add_type_meta(&mut root);
    let types = Types::new(b.types.values());
    Ok(schema::root_schema(&root, &types))
}

/// Builds the model types of one kind version from the package's Rust items.
struct SchemaBuilder<'a> {
    source: &'a Source,
    package: &'a [String],
    types: BTreeMap<String, TypeDef>,
    stack: Vec<String>,
}

impl SchemaBuilder<'_> {
    fn find(&self, name: &str) -> Option<&Item> {
        self.source
            .items
            .iter()
            .find(|i| i.package == self.package && i.name() == name)
    }

    /// kube-derive's root: apiVersion, kind, metadata, spec (the derive's struct) and
    /// status (its `status = "..."` type), as kube-derive serializes it.
    fn kube_derive_root(&mut self, found: &FoundKind) -> Result<StructDef, Error> {
        let mut fields = vec![plain_field("metadata", Ty::ObjectMeta)];
        for (i, name) in found.roots.iter().enumerate() {
            let Some(item) = self.find(name) else {
                continue;
            };
            let ItemKind::Struct(s) = &item.kind else {
                continue;
            };
            let item = item.clone();
            let s = s.clone();
            let def = self.build_struct(&item, &s, false)?;
            let ty_name = def.name.clone();
            self.types.insert(ty_name.clone(), TypeDef::Struct(def));
            let mut f = plain_field(if i == 0 { "spec" } else { "status" }, Ty::Named(ty_name));
            f.required = i == 0;
            f.optional = i != 0;
            fields.push(f);
        }
        Ok(StructDef {
            name: found.kind.names.kind.clone(),
            existing: None,
            doc: None,
            origin: String::new(),
            fields,
            unknown_fields: None,
            schema: SchemaExtra::default(),
        })
    }

    fn build_struct(
        &mut self,
        item: &Item,
        s: &syn::ItemStruct,
        root: bool,
    ) -> Result<StructDef, Error> {
        let name = s.ident.to_string();
        self.stack.push(name.clone());
        let result = self.struct_fields(item, s, root);
        self.stack.pop();
        let (fields, unknown_fields, immutable) = result?;
        let mut type_markers = MarkerSet::default();
        for (i, m) in item.markers.iter().enumerate() {
            apply_marker(&mut type_markers, m, i, item)?;
        }
        // An optional `+k8s:immutable` field's own rule does not run once the field is
        // removed: the parent keeps it set (controller-gen's rule).
        for name in immutable {
            let rules = type_markers
                .extra
                .set
                .entry("x-kubernetes-validations".to_owned())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(a) = rules {
                a.push(registry::immutable_once_set_rule(&name));
            }
        }
        Ok(StructDef {
            name,
            existing: None,
            doc: item.doc.as_ref().map(|d| description(d)),
            origin: String::new(),
            fields,
            unknown_fields,
            schema: type_markers.extra,
        })
    }

    /// A newtype (`struct Width(i64)`, serialized as its field, like Go's
    /// `type Width int64`): the field's schema with the type's markers applied. The model
    /// has no alias type, so it is a struct without fields whose extras turn the object
    /// schema into the field's.
    fn build_newtype(&mut self, item: &Item, s: &syn::ItemStruct) -> Result<StructDef, Error> {
        let name = s.ident.to_string();
        let Some(field) = newtype_field(s) else {
            return self.build_struct(item, s, false);
        };
        self.stack.push(name.clone());
        let inner = self.map_type(&field.ty, item, field.ty.span_start(), false);
        self.stack.pop();
        let types = Types::new(self.types.values());
        let mut schema = schema::type_schema(&inner?, &types);
        let mut set = MarkerSet::default();
        for (i, m) in item.markers.iter().enumerate() {
            apply_marker(&mut set, m, i, item)?;
        }
        schema::apply(&mut schema, &set.extra);
        Ok(StructDef {
            name,
            existing: None,
            doc: item.doc.as_ref().map(|d| description(d)),
            origin: String::new(),
            fields: Vec::new(),
            unknown_fields: None,
            schema: schema::diff(&schema, &json!({"type": "object"}), &Ty::Json),
        })
    }

    /// The fields of `s`, the flattened map keeping unknown fields (if any), and the
    /// JSON names of optional `+k8s:immutable` fields.
    #[allow(clippy::type_complexity)]
    fn struct_fields(
        &mut self,
        item: &Item,
        s: &syn::ItemStruct,
        root: bool,
    ) -> Result<(Vec<Field>, Option<String>, Vec<String>), Error> {
        let container = serde_attrs(&s.attrs, item)?;
        let syn::Fields::Named(named) = &s.fields else {
            return Err(item.error_at(
                s.ident.span(),
                format!(
                    "{} has no named fields, so it has no object schema",
                    s.ident
                ),
                "give the struct named fields (each becomes a property of the schema), or, for a value serialized as one field, keep exactly one field (a newtype such as `struct Width(i64)`)",
            ));
        };
        let mut fields = Vec::new();
        let mut unknown = None;
        let mut immutable = Vec::new();
        for f in &named.named {
            let Some(ident) = &f.ident else { continue };
            let attrs = serde_attrs(&f.attrs, item)?;
            let (field_markers, doc) = markers::read(&f.attrs, &item.file)?;
            let rust_name = ident.to_string();
            let json_name = wire_name(&rust_name, &attrs, &container);
            let mut set = MarkerSet::default();
            for (i, m) in field_markers.iter().enumerate() {
                apply_marker(&mut set, m, i, item)?;
            }
            let (inner, optional, nullable) = top_level(&f.ty);
            if attrs.flatten {
                if let Some(Ty::Map(v)) = self.try_map_type(inner) {
                    if matches!(*v, Ty::Json) {
                        unknown = Some(rust_name.clone());
                        continue;
                    }
                }
            }
            if attrs.skip {
                continue;
            }
            let span = f.ty.span_start();
            let ty = self.map_type(inner, item, span, root && json_name == "metadata")?;
            let ty = match (&ty, json_name.as_str(), root) {
                (Ty::External(p), "apiVersion", true) if p.contains("ApiVersion") => Ty::ApiVersion,
                (Ty::External(p), "kind", true) if p.contains("Kind") => Ty::KindField,
                _ => ty,
            };
            if let Ty::External(p) = &ty {
                if schema::external_schema(p).is_none() {
                    return Err(Error::in_source(
                        &item.file,
                        span.line,
                        span.column + 1,
                        format!("kubegen knows no schema for `{p}` (field `{json_name}`)"),
                        "use a type of this package, a standard one (String, integers, f64, bool, Vec, BTreeMap<String, _>, IntOrString, Quantity, Time, serde_json::Value), or serde_json::Value with +kubebuilder:validation:Schemaless",
                    ));
                }
            }
            let required = set
                .required
                .unwrap_or(!optional && !attrs.default && set.default.is_none());
            let mut field = Field {
                json_name: json_name.clone(),
                rust_name,
                ty,
                doc: doc.as_deref().map(description),
                optional,
                required,
                nullable: nullable || set.nullable,
                default: set.default.clone(),
                flatten: attrs.flatten,
                skip: false,
                schema: set.extra.clone(),
            };
            if set.schemaless {
                // An empty schema, plus what the field's other markers say (controller-gen
                // applies them, `+kubebuilder:pruning:PreserveUnknownFields` included,
                // to the empty schema).
                field.ty = Ty::Json;
                field
                    .schema
                    .set
                    .entry("x-kubernetes-preserve-unknown-fields".into())
                    .or_insert(Value::Null);
            }
            if matches!(field.ty, Ty::Vec(_)) && field.default == Some(json!({})) {
                // controller-gen's literal `{}` is an empty map; on a list it means `[]`.
                field.default = Some(json!([]));
            }
            check_marker_types(&field, &field_markers, item, &self.types)?;
            if set.immutable && !field.required {
                immutable.push(field.json_name.clone());
            }
            fields.push(field);
        }
        Ok((fields, unknown, immutable))
    }

    fn try_map_type(&self, ty: &syn::Type) -> Option<Ty> {
        let (name, args) = last_segment(ty)?;
        if matches!(name.as_str(), "BTreeMap" | "HashMap" | "IndexMap") && args.len() == 2 {
            let v = last_segment(args[1])?.0;
            if v == "Value" {
                return Some(Ty::Map(Box::new(Ty::Json)));
            }
        }
        None
    }

    fn map_type(
        &mut self,
        ty: &syn::Type,
        item: &Item,
        span: proc_macro2::LineColumn,
        metadata: bool,
    ) -> Result<Ty, Error> {
        let err = |problem: String, fix: &str| {
            Error::in_source(
                &item.file,
                span.line,
                span.column + 1,
                problem,
                fix.to_owned(),
            )
        };
        if let syn::Type::Reference(r) = ty {
            return self.map_type(&r.elem, item, span, metadata);
        }
        let Some((name, args)) = last_segment(ty) else {
            return Err(err(
                format!("`{}` has no schema", ty.to_token_stream()),
                "use a named type",
            ));
        };
        let arg = |i: usize| args.get(i).copied();
        Ok(match name.as_str() {
            "String" | "str" => Ty::String,
            "bool" => Ty::Bool,
            "i32" => Ty::I32,
            "i64" => Ty::I64,
            "Number" => Ty::Number,
            "Value" => Ty::Json,
            "DateTime" | "Time" | "MicroTime" => Ty::DateTime,
            "IntOrString" => Ty::IntOrString,
            "Condition" => Ty::Condition,
            "ObjectMeta" if metadata => Ty::ObjectMeta,
            "ObjectMeta" => {
                return Err(err(
                    "ObjectMeta is only allowed as the root's `metadata`".into(),
                    "use a struct of your own for nested metadata, or serde_json::Value",
                ))
            }
            "ApiVersion" | "Kind" if !args.is_empty() => Ty::External(name.clone()),
            "Option" => match arg(0) {
                Some(inner) => Ty::Option(Box::new(self.map_type(inner, item, span, false)?)),
                None => return Err(err("Option without a type".into(), "write Option<T>")),
            },
            "Box" | "Arc" | "Rc" => match arg(0) {
                Some(inner) => self.map_type(inner, item, span, metadata)?,
                None => return Err(err(format!("{name} without a type"), "write Box<T>")),
            },
            "Vec" => match arg(0) {
                Some(inner) => Ty::Vec(Box::new(self.map_type(inner, item, span, false)?)),
                None => return Err(err("Vec without a type".into(), "write Vec<T>")),
            },
            "BTreeMap" | "HashMap" | "IndexMap" => {
                let key = arg(0).and_then(last_segment).map(|(n, _)| n);
                if key.as_deref() != Some("String") {
                    return Err(err(
                        format!("map keys of `{}` are not strings", ty.to_token_stream()),
                        "use String keys: JSON object keys are strings",
                    ));
                }
                match arg(1) {
                    Some(v) => Ty::Map(Box::new(self.map_type(v, item, span, false)?)),
                    None => {
                        return Err(err(
                            "a map without a value type".into(),
                            "write BTreeMap<String, T>",
                        ))
                    }
                }
            }
            other => {
                if let Some(found) = self.find(other).cloned() {
                    if self.stack.iter().any(|s| s == other) {
                        return Err(err(
                            format!(
                                "`{other}` contains itself ({} -> {other}); CRD schemas cannot recurse",
                                self.stack.join(" -> ")
                            ),
                            "break the cycle (e.g. serde_json::Value with +kubebuilder:validation:Schemaless at the recursive field)",
                        ));
                    }
                    if let ItemKind::Enum(e) = &found.kind {
                        let has_data = e
                            .variants
                            .iter()
                            .any(|v| !matches!(v.fields, syn::Fields::Unit));
                        let has_enum_marker = found.markers.iter().any(|m| {
                            m.name == "kubebuilder:validation:Enum"
                                || m.name == "kubegen:schema:enum"
                        });
                        let serde = serde_attrs(&e.attrs, &found)?;
                        if let (Some(tag), false) = (&serde.tag, has_enum_marker) {
                            // Internally or adjacently tagged: an object with the tag.
                            if !self.types.contains_key(other) {
                                let def =
                                    self.build_tagged(&found, e, tag, serde.content.as_deref())?;
                                match def {
                                    Some(def) => {
                                        self.types.insert(other.to_owned(), TypeDef::Struct(def));
                                    }
                                    None => return Ok(Ty::Json),
                                }
                            }
                            return Ok(Ty::Named(other.to_owned()));
                        }
                        if has_data && !has_enum_marker {
                            // serde's externally tagged (and untagged) shapes mix strings
                            // and objects, which no structural schema can type: any JSON.
                            return Ok(Ty::Json);
                        }
                    }
                    if !self.types.contains_key(other) {
                        let def = match &found.kind {
                            ItemKind::Struct(s) if newtype_field(s).is_some() => {
                                TypeDef::Struct(self.build_newtype(&found, s)?)
                            }
                            ItemKind::Struct(s) => {
                                TypeDef::Struct(self.build_struct(&found, s, false)?)
                            }
                            ItemKind::Enum(e) => TypeDef::Enum(enum_def(&found, e)?),
                        };
                        self.types.insert(other.to_owned(), def);
                    }
                    Ty::Named(other.to_owned())
                } else {
                    Ty::External(ty.to_token_stream().to_string().replace(' ', ""))
                }
            }
        })
    }
}

impl SchemaBuilder<'_> {
    /// serde's internally tagged enum (`#[serde(tag = "type")]`) as one object schema:
    /// the tag (a string enum of the variants' wire names, required) beside the union of
    /// every variant's fields (each optional, since each variant has its own); with
    /// `content = "..."` (adjacently tagged), the tag beside the content: the union of
    /// the variants' struct fields, or the variants' one common type, or any JSON.
    /// `None` where no structural schema fits (two variants give one field two types):
    /// the caller keeps any JSON.
    fn build_tagged(
        &mut self,
        item: &Item,
        e: &syn::ItemEnum,
        tag: &str,
        content: Option<&str>,
    ) -> Result<Option<StructDef>, Error> {
        let name = e.ident.to_string();
        let container = serde_attrs(&e.attrs, item)?;
        self.stack.push(name.clone());
        let result = self.tagged_parts(item, e, &container);
        self.stack.pop();
        let Some((values, merged, contents)) = result? else {
            return Ok(None);
        };
        let mut tag_field = plain_field(tag, Ty::String);
        tag_field.required = true;
        tag_field.schema.set.insert(
            "enum".into(),
            Value::Array(values.into_iter().map(Value::String).collect()),
        );
        let mut fields = vec![tag_field];
        match content {
            None => {
                if merged.iter().any(|f| f.json_name == tag) {
                    return Ok(None);
                }
                fields.extend(merged);
            }
            Some(content) => {
                let ty = if contents.is_empty() {
                    None
                } else if contents.iter().all(|t| *t == contents[0])
                    && !merged_came_from_structs(&contents)
                {
                    Some(contents[0].clone())
                } else if merged_came_from_structs(&contents) {
                    let content_name = format!("{name}Content");
                    self.types.insert(
                        content_name.clone(),
                        TypeDef::Struct(StructDef {
                            name: content_name.clone(),
                            existing: None,
                            doc: None,
                            origin: String::new(),
                            fields: merged,
                            unknown_fields: None,
                            schema: SchemaExtra::default(),
                        }),
                    );
                    Some(Ty::Named(content_name))
                } else {
                    Some(Ty::Json)
                };
                if let Some(ty) = ty {
                    let mut f = plain_field(content, ty);
                    f.optional = true;
                    fields.push(f);
                }
            }
        }
        let mut type_markers = MarkerSet::default();
        for (i, m) in item.markers.iter().enumerate() {
            apply_marker(&mut type_markers, m, i, item)?;
        }
        Ok(Some(StructDef {
            name,
            existing: None,
            doc: item.doc.as_ref().map(|d| description(d)),
            origin: String::new(),
            fields,
            unknown_fields: None,
            schema: type_markers.extra,
        }))
    }

    /// The tag values, the union of the variants' fields, and each data variant's
    /// content type; `None` when a field would have two types.
    #[allow(clippy::type_complexity)]
    fn tagged_parts(
        &mut self,
        item: &Item,
        e: &syn::ItemEnum,
        container: &super::fields::SerdeAttrs,
    ) -> Result<Option<(Vec<String>, Vec<Field>, Vec<Ty>)>, Error> {
        let mut values = Vec::new();
        let mut merged: Vec<Field> = Vec::new();
        let mut contents = Vec::new();
        for v in &e.variants {
            let attrs = serde_attrs(&v.attrs, item)?;
            if attrs.skip {
                continue;
            }
            values.push(wire_name(&v.ident.to_string(), &attrs, container));
            let fields = match &v.fields {
                syn::Fields::Unit => continue,
                syn::Fields::Named(_) => {
                    let synthetic = syn::ItemStruct {
                        attrs: v.attrs.clone(),
                        vis: syn::Visibility::Inherited,
                        struct_token: Default::default(),
                        ident: v.ident.clone(),
                        generics: Default::default(),
                        fields: v.fields.clone(),
                        semi_token: None,
                    };
                    let (fields, _, _) = self.struct_fields(item, &synthetic, false)?;
                    contents.push(Ty::Named(STRUCT_VARIANT.to_owned()));
                    fields
                }
                syn::Fields::Unnamed(u) if u.unnamed.len() == 1 => {
                    let inner = &u.unnamed[0].ty;
                    let ty = self.map_type(inner, item, inner.span_start(), false)?;
                    let fields = match &ty {
                        Ty::Named(n) => match self.types.get(n) {
                            Some(TypeDef::Struct(s)) if !s.fields.is_empty() => {
                                contents.push(Ty::Named(STRUCT_VARIANT.to_owned()));
                                s.fields.clone()
                            }
                            _ => {
                                contents.push(ty.clone());
                                Vec::new()
                            }
                        },
                        _ => {
                            contents.push(ty.clone());
                            Vec::new()
                        }
                    };
                    fields
                }
                syn::Fields::Unnamed(_) => return Ok(None),
            };
            for mut f in fields {
                f.required = false;
                f.optional = true;
                match merged.iter().find(|m| m.json_name == f.json_name) {
                    Some(m) if m.ty != f.ty || m.schema != f.schema => return Ok(None),
                    Some(_) => {}
                    None => merged.push(f),
                }
            }
        }
        Ok(Some((values, merged, contents)))
    }
}

/// Stands for "a variant whose content is a struct" among content types.
const STRUCT_VARIANT: &str = "\u{0}struct";

fn merged_came_from_structs(contents: &[Ty]) -> bool {
    contents
        .iter()
        .all(|t| matches!(t, Ty::Named(n) if n == STRUCT_VARIANT))
}

trait SpanStart {
    fn span_start(&self) -> proc_macro2::LineColumn;
}

impl<T: syn::spanned::Spanned> SpanStart for T {
    fn span_start(&self) -> proc_macro2::LineColumn {
        self.span().start()
    }
}

/// What controller-gen writes for an embedded `TypeMeta`: `apiVersion` and `kind` with
/// their standard descriptions, added when the root type does not declare them (k8s-openapi
/// style types write them from constants, not fields).
fn add_type_meta(root: &mut StructDef) {
    const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object.\nServers should convert recognized schemas to the latest internal value, and\nmay reject unrecognized values.\nMore info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
    const KIND: &str = "Kind is a string value representing the REST resource this object represents.\nServers may infer this from the endpoint the client submits requests to.\nCannot be updated.\nIn CamelCase.\nMore info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
    for (i, (json, ty, doc)) in [
        ("apiVersion", Ty::ApiVersion, API_VERSION),
        ("kind", Ty::KindField, KIND),
    ]
    .into_iter()
    .enumerate()
    {
        if !root.fields.iter().any(|f| f.json_name == json) {
            let mut f = plain_field(json, ty);
            f.doc = Some(doc.to_owned());
            root.fields.insert(i.min(root.fields.len()), f);
        }
    }
}

fn plain_field(json: &str, ty: Ty) -> Field {
    Field {
        json_name: json.to_owned(),
        rust_name: json.to_owned(),
        ty,
        doc: None,
        optional: false,
        required: false,
        nullable: false,
        default: None,
        flatten: false,
        skip: false,
        schema: SchemaExtra::default(),
    }
}

/// The one field of a newtype struct (`struct Width(i64)`), which serde writes as the
/// field's value.
fn newtype_field(s: &syn::ItemStruct) -> Option<&syn::Field> {
    match &s.fields {
        syn::Fields::Unnamed(f) if f.unnamed.len() == 1 => f.unnamed.first(),
        _ => None,
    }
}

/// The type inside a field's `Option`/`Nullable`, and whether it was one.
fn top_level(ty: &syn::Type) -> (&syn::Type, bool, bool) {
    if let Some(inner) = option_inner(ty) {
        return (inner, true, false);
    }
    if let Some((name, args)) = last_segment(ty) {
        if name == "Nullable" && args.len() == 1 {
            return (args[0], true, true);
        }
    }
    (ty, false, false)
}

/// The last path segment's name and its type arguments.
fn last_segment(ty: &syn::Type) -> Option<(String, Vec<&syn::Type>)> {
    let syn::Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    let args = match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((seg.ident.to_string(), args))
}

/// A doc comment's text (markers already removed) -> the description.
fn description(doc: &str) -> String {
    let lines: Vec<&str> = doc.split('\n').collect();
    kubegen_templates::docs::unescape_lines(&lines)
}

/// Reads one marker of a field or type into `set`. Markers that are not schema
/// markers (resource, client, package, other tools') are left to their readers;
/// unknown and misplaced markers are reported by `check_markers` before this runs.
fn apply_marker(set: &mut MarkerSet, m: &Marker, index: usize, item: &Item) -> Result<(), Error> {
    set.apply(&m.name, m.value.as_deref(), index)
        .map(|_| ())
        .map_err(|e| m.error(&item.file, e.problem, e.fix))
}

/// A marker on a field whose type it cannot apply to (`Pattern` on an integer): each
/// marker's registry entry says which schema types it applies to.
fn check_marker_types(
    field: &Field,
    field_markers: &[Marker],
    item: &Item,
    types: &BTreeMap<String, TypeDef>,
) -> Result<(), Error> {
    let types = Types::new(types.values());
    let schema = schema::field_schema(field, &types);
    let ty = schema.get("type").and_then(Value::as_str);
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    for (i, m) in field_markers.iter().enumerate() {
        let Some((def, u)) = registry::resolve(&m.name, m.value.as_deref(), i) else {
            continue;
        };
        let allowed = def.applies_to;
        if allowed.is_empty() || u.depth > 0 {
            continue;
        }
        let ok = match ty {
            Some(t) => allowed.contains(&t),
            None => int_or_string && allowed.iter().any(|a| matches!(*a, "string" | "integer")),
        };
        if !ok {
            return Err(m.error(
                &item.file,
                format!(
                    "`{}` applies to {} values, but field `{}` is {}",
                    m.text(),
                    allowed.join(" or "),
                    field.json_name,
                    ty.map(|t| format!("of type {t}")).unwrap_or_else(|| "untyped".into())
                ),
                "move the marker to a field of a fitting type, or use the items: form for list elements",
            ));
        }
    }
    Ok(())
}

/// An enum -> a string enum schema: its `Enum` marker's values, or its unit variants'
/// wire names (serde's `rename`/`rename_all`).
fn enum_def(item: &Item, e: &syn::ItemEnum) -> Result<EnumDef, Error> {
    let mut set = MarkerSet::default();
    for (i, m) in item.markers.iter().enumerate() {
        apply_marker(&mut set, m, i, item)?;
    }
    let doc = item.doc.as_ref().map(|d| description(d));
    if let Some(Value::Array(values)) = set.extra.set.get("enum") {
        let variants = values
            .iter()
            .map(|v| Variant {
                name: String::new(),
                value: v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string()),
            })
            .collect();
        return Ok(EnumDef {
            name: e.ident.to_string(),
            doc,
            variants,
            other_variant: String::new(),
        });
    }
    let container = serde_attrs(&e.attrs, item)?;
    let mut variants = Vec::new();
    for v in &e.variants {
        if !matches!(v.fields, syn::Fields::Unit) {
            return Err(item.error_at(
                v.ident.span(),
                format!("variant {} of {} holds data; kubegen crd maps enums of unit variants to string enums", v.ident, e.ident),
                "use unit variants, or give the enum a `+kubebuilder:validation:Enum=a;b` marker",
            ));
        }
        let attrs = serde_attrs(&v.attrs, item)?;
        let name = v.ident.to_string();
        let value = wire_name(&name, &attrs, &container);
        if !attrs.skip {
            variants.push(Variant { name, value });
        }
    }
    Ok(EnumDef {
        name: e.ident.to_string(),
        doc,
        variants,
        other_variant: String::new(),
    })
}
