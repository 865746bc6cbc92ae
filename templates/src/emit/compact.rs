//! Compact mirrors of the built-in types, for informer caches that cost what Go's do.
//!
//! A k8s-openapi struct keeps every optional sub-struct inline: an unset
//! `Option<SecurityContext>` still takes the struct's whole size, so a cached Pod is
//! mostly zeros (a `Volume` is 3 KB whatever its source). Go keeps a nil pointer. For
//! every built-in kind that has an informer (kinds of the `io.k8s.api` packages),
//! `compact/<group>/<version>.rs` holds a mirror of the kind's type and of every
//! `io.k8s.api` definition it reaches:
//!
//! - the same field names and JSON names as k8s-openapi's, and the same optionality,
//!   so code reading fields reads them the same way;
//! - every optional field holding a mirrored struct is `Option<Box<T>>` (8 bytes when
//!   unset);
//! - definitions outside `io.k8s.api` (ObjectMeta, Time, Quantity, IntOrString,
//!   LabelSelector, ...) and those without properties are k8s-openapi's own types;
//! - `From` both ways with k8s-openapi's type, moving fields (no serde round trip); the
//!   conversions destructure exhaustively, so a field one side has and the other lacks
//!   is a compile error rather than a silent loss;
//! - kinds are `kube::Resource`s of the k8s-openapi kind (same group, version, plural
//!   and scope), serialize with `apiVersion` and `kind` as k8s-openapi's do, and decode
//!   from JSON and protobuf through the same deserializers.
//!
//! The mirrors are what the typed informers and listers of those kinds cache by default
//! (`informer()`, `lister()`); `k8s_openapi_informer()` and `k8s_openapi_lister()` cache
//! the kind's own type instead. A Pod cached as its mirror takes about half the memory.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::applyconfigurations::{has_properties, reference, references, short_name};
use super::types::{deserialize_impl, DeField, Duplicates, WhenAbsent};
use super::{has_informer, ident, Module};
use crate::model::{Api, Group, Kind, ProtobufField, Version};
use crate::names;

/// The package prefix of the definitions that get mirrors.
const MIRRORED: &str = "io.k8s.api.";

/// k8s-openapi's `ObjectMeta`, which has a protobuf decoder in
/// `kubegen_apimachinery::protobuf::fast`.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Whether a kind gets a compact mirror: a built-in kind of an `io.k8s.api` package
/// with an informer.
pub fn has_compact(kind: &Kind) -> bool {
    has_informer(kind)
        && kind
            .openapi
            .as_ref()
            .is_some_and(|o| o.name.starts_with(MIRRORED))
}

/// The mirror's type name of a kind that [`has_compact`].
pub fn compact_type_name(kind: &Kind) -> Option<&str> {
    let o = kind.openapi.as_ref()?;
    Some(short_name(&o.name))
}

/// The compact mirror of a kind that [`has_compact`], seen from a module `up` levels
/// below the tree's root; `None` for every other kind.
pub fn compact_type(
    group: &Group,
    version: &Version,
    kind: &Kind,
    up: usize,
) -> Option<TokenStream> {
    if !has_compact(kind) {
        return None;
    }
    let t = ident(compact_type_name(kind)?);
    let (g, v) = (ident(&group.module), ident(&version.module));
    let root = super::supers(up);
    Some(quote!(#root compact::#g::#v::#t))
}

/// The `compact` module, or `None` when no kind has a compact mirror.
pub fn compact_module(api: &Api) -> Option<Module> {
    let mut kinds: BTreeMap<&str, (&Group, &Version, &Kind)> = BTreeMap::new();
    for g in &api.groups {
        for v in &g.versions {
            for k in v.kinds.iter().filter(|k| has_compact(k)) {
                if let Some(o) = &k.openapi {
                    kinds.insert(o.name.as_str(), (g, v, k));
                }
            }
        }
    }
    let (_, _, first) = kinds.values().next()?;
    let definitions = &first.openapi.as_ref()?.definitions;
    let mirror = Mirror::new(&definitions.schemas, &definitions.protobuf, &kinds);

    // group module -> (doc, version module -> (doc, items))
    type Versions = BTreeMap<String, (String, Vec<TokenStream>)>;
    let mut tree: BTreeMap<String, (String, Versions)> = BTreeMap::new();
    for (name, (g, v)) in &mirror.placed {
        let (gdoc, vdoc) = mirror.docs(name);
        let items = &mut tree
            .entry(g.clone())
            .or_insert_with(|| (gdoc, BTreeMap::new()))
            .1
            .entry(v.clone())
            .or_insert_with(|| (vdoc, Vec::new()))
            .1;
        items.push(mirror.item(name, kinds.contains_key(name)));
    }
    let groups = tree.into_iter().map(|(g, (gdoc, versions))| {
        let versions = versions.into_iter().map(|(v, (vdoc, items))| {
            Module::new(
                v,
                vec![format!(
                    "Compact mirrors of `{vdoc}`: k8s-openapi's types with optional structs boxed."
                )],
                quote!(#(#items)*),
            )
        });
        Module::new(
            g,
            vec![format!("Compact mirrors of the `{gdoc}` group.")],
            quote!(),
        )
        .children(versions)
    });
    let module = Module::new(
        "compact",
        vec![
            "Compact mirrors of the built-in types for informer caches: k8s-openapi's types"
                .to_owned(),
            "with every optional struct boxed (an unset one costs 8 bytes, not its size),"
                .to_owned(),
            "`From` both ways with k8s-openapi's. The typed informers and listers cache these"
                .to_owned(),
            "by default. See docs/informers.md, \"The compact cache\".".to_owned(),
        ],
        quote!(),
    )
    .attrs(super::modules::top_level_allows())
    .children(groups);
    Some(module)
}

/// What a field holds.
enum Shape {
    /// A mirrored definition (its name).
    Mirror(String),
    /// A type both sides share (k8s-openapi's or a scalar), and whether it has a
    /// `Default`.
    Plain(TokenStream, bool),
    /// A list.
    List(Box<Shape>),
    /// A map from strings.
    Map(Box<Shape>),
}

impl Shape {
    fn mirrors(&self) -> bool {
        match self {
            Shape::Mirror(_) => true,
            Shape::Plain(..) => false,
            Shape::List(s) | Shape::Map(s) => s.mirrors(),
        }
    }
}

/// The mirrored definitions and where each is placed.
struct Mirror<'a> {
    schemas: &'a BTreeMap<String, Value>,
    /// The protobuf messages, by message name (see [`ProtobufField`]).
    protobuf: &'a BTreeMap<String, Vec<ProtobufField>>,
    /// Definition -> (group module, version module).
    placed: BTreeMap<&'a str, (String, String)>,
    /// Group and version of the kinds' packages (for the modules' docs).
    package_docs: BTreeMap<String, (String, String)>,
}

impl<'a> Mirror<'a> {
    fn new(
        schemas: &'a BTreeMap<String, Value>,
        protobuf: &'a BTreeMap<String, Vec<ProtobufField>>,
        kinds: &BTreeMap<&str, (&Group, &Version, &Kind)>,
    ) -> Self {
        let mut modules: BTreeMap<String, (String, String)> = BTreeMap::new();
        let mut package_docs = BTreeMap::new();
        for (name, (g, v, _)) in kinds {
            modules.insert(package(name), (g.module.clone(), v.module.clone()));
            let group = if g.name.is_empty() { "core" } else { &g.name };
            package_docs.insert(package(name), (group.to_owned(), v.name.clone()));
        }
        let mut placed = BTreeMap::new();
        let mut stack: Vec<&str> = kinds.keys().rev().copied().collect();
        let mut seen = BTreeSet::new();
        while let Some(name) = stack.pop() {
            if !seen.insert(name) || !is_mirrored(schemas, name) {
                continue;
            }
            let Some((key, schema)) = schemas.get_key_value(name) else {
                continue;
            };
            let mut refs = Vec::new();
            references(schema, &mut refs);
            stack.extend(refs.iter().rev());
            let pkg = package(name);
            let place = modules.get(&pkg).cloned().unwrap_or_else(|| {
                let mut parts = pkg.rsplit('.');
                let v = names::module_name(parts.next().unwrap_or("v1"));
                let g = names::module_name(parts.next().unwrap_or("core"));
                (g, v)
            });
            placed.insert(key.as_str(), place);
        }
        Mirror {
            schemas,
            protobuf,
            placed,
            package_docs,
        }
    }

    /// The docs' names of a definition's group and version.
    fn docs(&self, name: &str) -> (String, String) {
        let pkg = package(name);
        match self.package_docs.get(&pkg) {
            Some((g, v)) => (g.clone(), format!("{g}/{v}")),
            None => {
                let mut parts = pkg.rsplit('.');
                let v = parts.next().unwrap_or("v1").to_owned();
                let g = parts.next().unwrap_or("core").to_owned();
                (g.clone(), format!("{g}/{v}"))
            }
        }
    }

    /// The mirror's type, from inside a version module.
    fn compact_type(&self, name: &str) -> TokenStream {
        let (g, v) = self
            .placed
            .get(name)
            .map_or(("core", "v1"), |(g, v)| (g.as_str(), v.as_str()));
        let (g, v, t) = (ident(g), ident(v), format_ident!("{}", short_name(name)));
        quote!(super::super::#g::#v::#t)
    }

    fn shape(&self, schema: &Value) -> Shape {
        if let Some(target) = reference(schema) {
            return if self.placed.contains_key(target) {
                Shape::Mirror(target.to_owned())
            } else {
                // k8s-openapi's times have no `Default`.
                let default = !matches!(
                    target,
                    "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
                        | "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
                );
                Shape::Plain(k8s_type(target), default)
            };
        }
        let plain = |t: TokenStream| Shape::Plain(t, true);
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => match schema.get("format").and_then(Value::as_str) {
                Some("byte") => plain(quote!(::kubegen_runtime::k8s_openapi::ByteString)),
                _ => plain(quote!(::std::string::String)),
            },
            Some("boolean") => plain(quote!(bool)),
            Some("integer") => match schema.get("format").and_then(Value::as_str) {
                Some("int32") => plain(quote!(i32)),
                _ => plain(quote!(i64)),
            },
            Some("number") => plain(quote!(f64)),
            Some("array") => match schema.get("items") {
                Some(items) => Shape::List(Box::new(self.shape(items))),
                None => plain(quote!(
                    ::std::vec::Vec<::kubegen_runtime::serde_json::Value>
                )),
            },
            Some("object") => match schema.get("additionalProperties").filter(|a| a.is_object()) {
                Some(a) => Shape::Map(Box::new(self.shape(a))),
                None => plain(quote!(::kubegen_runtime::serde_json::Value)),
            },
            _ => plain(quote!(::kubegen_runtime::serde_json::Value)),
        }
    }

    /// Whether a value of `shape` has a `Default` (k8s-openapi's times have none).
    fn has_default(&self, shape: &Shape) -> bool {
        match shape {
            Shape::Mirror(name) => self.defaults(name),
            Shape::Plain(_, default) => *default,
            Shape::List(_) | Shape::Map(_) => true,
        }
    }

    /// Whether a mirrored definition can derive `Default`: none of its required fields
    /// lacks one.
    fn defaults(&self, name: &str) -> bool {
        let Some(schema) = self.schemas.get(name) else {
            return true;
        };
        let required = schema.get("required").and_then(Value::as_array);
        let props = schema.get("properties").and_then(Value::as_object);
        required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .all(|r| {
                props
                    .and_then(|p| p.get(r))
                    .is_none_or(|p| self.has_default(&self.shape(p)))
            })
    }

    fn rust_type(&self, shape: &Shape) -> TokenStream {
        match shape {
            Shape::Mirror(name) => self.compact_type(name),
            Shape::Plain(t, _) => t.clone(),
            Shape::List(inner) => {
                let inner = self.rust_type(inner);
                quote!(::std::vec::Vec<#inner>)
            }
            Shape::Map(inner) => {
                let inner = self.rust_type(inner);
                quote!(::std::collections::BTreeMap<::std::string::String, #inner>)
            }
        }
    }

    /// The struct, its conversions and (for kinds) its `Resource` and `Serialize`.
    fn item(&self, name: &str, is_kind: bool) -> TokenStream {
        let empty = serde_json::Map::new();
        let schema = self.schemas.get(name).unwrap_or(&Value::Null);
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let ty = format_ident!("{}", short_name(name));
        let k8s = k8s_type(name);
        let mut fields = Vec::new();
        let mut idents = Vec::new();
        let mut to_k8s = Vec::new();
        let mut from_k8s = Vec::new();
        let mut serialize = Vec::new();
        let mut de_fields: Vec<(String, String, WhenAbsent)> = Vec::new();
        for (json, prop) in props {
            if is_kind && matches!(json.as_str(), "apiVersion" | "kind") {
                continue;
            }
            let f = format_ident!("{}", k8s_field_name(json));
            let shape = self.shape(prop);
            let inner = self.rust_type(&shape);
            // k8s-openapi makes a kind's metadata required whatever the schema says.
            let req = required.contains(json.as_str()) || (is_kind && json == "metadata");
            let boxed = !req && matches!(shape, Shape::Mirror(_));
            let doc = format!(" `{json}`: as k8s-openapi's field of the same name.");
            // The serde attributes are for the derived `Serialize` (kinds write theirs
            // out and take none); `Deserialize` is written out (`de_fields`).
            let ser_attr =
                |extra: TokenStream| (!is_kind).then(|| quote!(#[serde(rename = #json #extra)]));
            if req {
                // A missing or null required field decodes to its default, as
                // k8s-openapi's decoding does, where it has one (times have none).
                let absent = if self.has_default(&shape) {
                    WhenAbsent::NullOrDefault
                } else {
                    WhenAbsent::AsSerde
                };
                de_fields.push((json.clone(), f.to_string(), absent));
                let attr = ser_attr(quote!());
                fields.push(quote! {
                    #[doc = #doc]
                    #attr
                    pub #f: #inner,
                });
                if shape.mirrors() {
                    let c = convert(&shape, quote!(#f));
                    to_k8s.push(quote!(#f: #c));
                    from_k8s.push(quote!(#f: #c));
                } else {
                    to_k8s.push(quote!(#f));
                    from_k8s.push(quote!(#f));
                }
                serialize.push(quote!(s.serialize_field(#json, &self.#f)?;));
            } else {
                let field_ty = if boxed {
                    quote!(::std::option::Option<::std::boxed::Box<#inner>>)
                } else {
                    quote!(::std::option::Option<#inner>)
                };
                de_fields.push((json.clone(), f.to_string(), WhenAbsent::Default));
                let attr =
                    ser_attr(quote!(, skip_serializing_if = "::std::option::Option::is_none"));
                fields.push(quote! {
                    #[doc = #doc]
                    #attr
                    pub #f: #field_ty,
                });
                if boxed {
                    to_k8s.push(quote!(#f: #f.map(|v| ::std::convert::Into::into(*v))));
                    from_k8s.push(quote!(#f: #f.map(|v| ::std::boxed::Box::new(::std::convert::Into::into(v)))));
                } else if shape.mirrors() {
                    let a = convert(&shape, quote!(v));
                    to_k8s.push(quote!(#f: #f.map(|v| #a)));
                    from_k8s.push(quote!(#f: #f.map(|v| #a)));
                } else {
                    to_k8s.push(quote!(#f));
                    from_k8s.push(quote!(#f));
                }
                serialize.push(quote! {
                    if let ::std::option::Option::Some(v) = &self.#f {
                        s.serialize_field(#json, v)?;
                    }
                });
            }
            idents.push(f);
        }
        let doc = format!(
            " `{}`, as k8s-openapi's `{}` with every optional struct boxed (see the module).",
            short_name(name),
            name.trim_start_matches("io.k8s.")
        );
        let derive_serialize = (!is_kind).then(|| quote!(::kubegen_runtime::serde::Serialize,));
        let derive_default = self
            .defaults(name)
            .then(|| quote!(::std::default::Default,));
        let kind_items = is_kind.then(|| {
            let n = fields.len() + 2;
            let type_name = short_name(name);
            quote! {
                ::kubegen_runtime::projection!(#ty, #k8s);

                impl ::kubegen_runtime::serde::Serialize for #ty {
                    fn serialize<S: ::kubegen_runtime::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                        use ::kubegen_runtime::serde::ser::SerializeStruct as _;
                        let mut s = serializer.serialize_struct(#type_name, #n)?;
                        s.serialize_field("apiVersion", &<#k8s as ::kubegen_runtime::kube::Resource>::api_version(&()))?;
                        s.serialize_field("kind", &<#k8s as ::kubegen_runtime::kube::Resource>::kind(&()))?;
                        #(#serialize)*
                        s.end()
                    }
                }
            }
        });
        let serde_crate = (!is_kind).then(|| quote!(#[serde(crate = "::kubegen_runtime::serde")]));
        let de_fields: Vec<DeField> = de_fields
            .iter()
            .map(|(json, rust, absent)| DeField {
                json,
                rust,
                absent: *absent,
            })
            .collect();
        let deserialize =
            deserialize_impl(short_name(name), &de_fields, None, Duplicates::LastWins);
        let decoder = self.decoder(name, is_kind);
        // A kind's protobuf decoders are compiled here, once, rather than in every crate
        // that uses its informer (`#[inline(never)]`: not even across crates in a
        // release build).
        let decoders = is_kind.then(|| {
            quote! {
                impl ::kubegen_runtime::client::GeneratedDecoders for #ty {
                    #[inline(never)]
                    fn protobuf_decoders() -> ::kubegen_runtime::client::ProtobufDecoders<Self> {
                        ::kubegen_runtime::client::ProtobufDecoders::generated()
                    }
                }
            }
        });
        quote! {
            #[doc = #doc]
            #[derive(
                ::std::clone::Clone,
                ::std::fmt::Debug,
                #derive_default
                ::std::cmp::PartialEq,
                #derive_serialize
            )]
            #serde_crate
            pub struct #ty {
                #(#fields)*
            }

            #deserialize

            #decoder

            impl ::std::convert::From<#ty> for #k8s {
                fn from(value: #ty) -> Self {
                    let #ty { #(#idents),* } = value;
                    Self { #(#to_k8s),* }
                }
            }

            impl ::std::convert::From<#k8s> for #ty {
                fn from(value: #k8s) -> Self {
                    let #k8s { #(#idents),* } = value;
                    Self { #(#from_k8s),* }
                }
            }

            #kind_items

            #decoders
        }
    }
}

impl Mirror<'_> {
    /// The protobuf message of a mirrored definition: `core/v1.PodSpec` for
    /// `io.k8s.api.core.v1.PodSpec`, when the table has it.
    fn message(&self, name: &str) -> Option<(String, &[ProtobufField])> {
        let rest = name.strip_prefix(MIRRORED)?;
        let (pkg, ty) = rest.rsplit_once('.')?;
        let (group, version) = pkg.rsplit_once('.')?;
        let message = format!("{group}/{version}.{ty}");
        let fields = self.protobuf.get(&message)?;
        Some((message, fields.as_slice()))
    }

    /// The fields encoding/json writes for a mirrored definition's message: its own, and
    /// those of the messages it inlines (Go's embedded structs, `Volume`'s
    /// `VolumeSource`). `None` when the table lacks the message, or it inlines in a way
    /// the generated decoders leave to the table-driven one (a pointer, or an inlined
    /// message that inlines again).
    fn json_fields(&self, name: &str) -> Option<Vec<JsonField<'_>>> {
        let (message, fields) = self.message(name)?;
        let mut out = Vec::new();
        for f in fields {
            if !f.flags.contains('i') {
                out.push(JsonField {
                    message: message.clone(),
                    inline: None,
                    field: f,
                });
                continue;
            }
            let inner = f.ty.strip_prefix("msg:")?;
            let inner_fields = self.protobuf.get(inner)?;
            if f.flags.contains('p') || inner_fields.iter().any(|g| g.flags.contains('i')) {
                return None;
            }
            out.extend(inner_fields.iter().map(|g| JsonField {
                message: inner.to_owned(),
                inline: Some(f.number),
                field: g,
            }));
        }
        // Go's rules for a JSON name two of them share are left to the table.
        let names: BTreeSet<&str> = out.iter().map(|w| w.field.json.as_str()).collect();
        (names.len() == out.len()).then_some(out)
    }

    /// Whether a mirrored definition gets a generated protobuf decoder: its message is
    /// in the table ([`json_fields`](Self::json_fields)), and every required property the table lacks
    /// has a default. (A property the table lacks, newer than the table's k8s.io/api, is
    /// never on the wire as the table reads it: the decoder gives what its absence
    /// gives.)
    fn decodes(&self, name: &str) -> bool {
        let Some(fields) = self.json_fields(name) else {
            return false;
        };
        let Some(schema) = self.schemas.get(name) else {
            return false;
        };
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let props = schema.get("properties").and_then(Value::as_object);
        props.into_iter().flatten().all(|(json, prop)| {
            matches!(json.as_str(), "apiVersion" | "kind")
                || fields.iter().any(|w| w.field.json == *json)
                || !required.contains(json.as_str())
                || self.has_default(&self.shape(prop))
        })
    }

    /// The `Message` impl (generated protobuf decoder) of a mirrored definition, when it
    /// [`decodes`](Self::decodes). Fields of the common shapes are read in place; every
    /// other field is handed to the table-driven deserializer (`delegate`), so the
    /// decoder gives what that deserializer gives.
    fn decoder(&self, name: &str, is_kind: bool) -> Option<TokenStream> {
        let fast = quote!(::kubegen_runtime::protobuf::fast);
        let ty = format_ident!("{}", short_name(name));
        if !self.decodes(name) {
            // A kind's informer asks for its decoder whatever the kind: this one hands
            // every object to the table-driven deserializer.
            let message = self.message(name).map(|(m, _)| m).unwrap_or_default();
            return is_kind.then(|| {
                quote! {
                    impl #fast::Message for #ty {
                        const MESSAGE: &'static str = #message;

                        fn decode_message(_bytes: &[u8], _cx: #fast::Cx) -> #fast::Result<Self> {
                            ::std::result::Result::Err(#fast::Fallback)
                        }
                    }
                }
            });
        }
        let (message, _) = self.message(name)?;
        let fields = self.json_fields(name)?;
        let empty = serde_json::Map::new();
        let schema = self.schemas.get(name)?;
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: BTreeSet<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut slots = Vec::new();
        let mut arms = Vec::new();
        // Inlined message's field number -> the arms of its fields.
        let mut inline_arms: BTreeMap<u64, Vec<(u64, TokenStream)>> = BTreeMap::new();
        let mut values = Vec::new();
        for (i, (json, prop)) in props.iter().enumerate() {
            if is_kind && matches!(json.as_str(), "apiVersion" | "kind") {
                continue;
            }
            let field = format_ident!("{}", k8s_field_name(json));
            let Some(JsonField {
                message: owner,
                inline,
                field: f,
            }) = fields.iter().find(|w| w.field.json == *json)
            else {
                // Not in the table (see `decodes`): what a missing key gives.
                values.push(quote!(#field: ::std::default::Default::default(),));
                continue;
            };
            let slot = format_ident!("f{i}");
            let num = f.number;
            let req = required.contains(json.as_str()) || (is_kind && json == "metadata");
            let shape = self.shape(prop);
            let pointer = f.flags.contains('p');
            let repeated = f.flags.contains('r');
            let omit = f.flags.contains('o') || f.flags.contains('z');
            let scalar = match (
                prop.get("type").and_then(Value::as_str),
                prop.get("format").and_then(Value::as_str),
            ) {
                (Some("string"), None) => Some("string"),
                (Some("boolean"), _) => Some("bool"),
                (Some("integer"), Some("int32")) => Some("int32"),
                (Some("integer"), _) => Some("int64"),
                _ => None,
            };
            // A message type with a decoder: (message, Rust type, has a default).
            let child = |shape: &Shape, schema: &Value| match shape {
                Shape::Mirror(target) if self.decodes(target) => self
                    .message(target)
                    .map(|(m, _)| (m, self.compact_type(target), self.defaults(target))),
                Shape::Plain(..) => match reference(schema) {
                    Some(target @ OBJECT_META) => {
                        Some(("meta/v1.ObjectMeta".to_owned(), k8s_type(target), true))
                    }
                    _ => None,
                },
                _ => None,
            };
            // (slot's type and initial value, the match arm's call, the field's value)
            let special = self.special_read(SpecialField {
                prop,
                table_ty: &f.ty,
                slot: &slot,
                req,
                pointer,
                repeated,
                omitzero: f.flags.contains('z'),
            });
            let read = if special.is_some() {
                special
            } else if !repeated && reference(prop).is_none() {
                match (scalar, f.ty.as_str()) {
                    (Some("string"), "string") => {
                        Some((quote!(::std::string::String), quote!(string)))
                    }
                    (Some("bool"), "bool") => Some((quote!(bool), quote!(boolean))),
                    (Some("int32"), "int32") => Some((quote!(i32), quote!(int32))),
                    (Some("int64"), "int32") => Some((quote!(i64), quote!(int32_as_i64))),
                    (Some("int64"), "int64") => Some((quote!(i64), quote!(int64))),
                    _ => None,
                }
                .map(|(t, reader)| {
                    let presence = if pointer {
                        quote!(#fast::Presence::Pointer)
                    } else if omit {
                        quote!(#fast::Presence::OmitZero)
                    } else {
                        quote!(#fast::Presence::Always)
                    };
                    let value = if req {
                        quote!(#slot.unwrap_or_default())
                    } else {
                        quote!(#fast::optional(#slot, #presence))
                    };
                    (
                        quote!(::std::option::Option<#t>),
                        quote!(::std::option::Option::None),
                        quote!(#fast::#reader(&mut #slot, v)?),
                        value,
                    )
                })
            } else {
                None
            };
            let read = read.or_else(|| match (&shape, repeated, f.ty.as_str()) {
                (Shape::List(inner), true, "string")
                    if matches!(**inner, Shape::Plain(..))
                        && self.rust_type(inner).to_string() == quote!(::std::string::String).to_string() =>
                {
                    let value = if req { quote!(#fast::exact(#slot)) } else { quote!(#fast::non_empty(#slot)) };
                    Some((quote!(::std::vec::Vec<::std::string::String>), quote!(::std::vec::Vec::new()), quote!(#fast::push_string(&mut #slot, v)?), value))
                }
                (Shape::Map(inner), false, "map:string")
                    if matches!(**inner, Shape::Plain(..))
                        && self.rust_type(inner).to_string() == quote!(::std::string::String).to_string() =>
                {
                    let value = if req { quote!(#slot) } else { quote!(#fast::non_empty_map(#slot)) };
                    Some((quote!(::std::collections::BTreeMap<::std::string::String, ::std::string::String>), quote!(::std::collections::BTreeMap::new()), quote!(#fast::string_entry(&mut #slot, v)?), value))
                }
                (Shape::List(inner), true, t) => {
                    let (m, rust, _) = child(inner, prop.get("items")?)?;
                    (t == format!("msg:{m}")).then(|| {
                        let value = if req { quote!(#fast::exact(#slot)) } else { quote!(#fast::non_empty(#slot)) };
                        (quote!(::std::vec::Vec<#rust>), quote!(::std::vec::Vec::new()), quote!(#fast::push_message(&mut #slot, v, cx)?), value)
                    })
                }
                (Shape::Mirror(_) | Shape::Plain(..), false, t) if !f.flags.contains('z') => {
                    let (m, rust, default) = child(&shape, prop)?;
                    if t != format!("msg:{m}") {
                        return None;
                    }
                    let boxed = !req && matches!(shape, Shape::Mirror(_));
                    let value = match (req, pointer) {
                        (false, true) if boxed => quote!(#slot.map(::std::boxed::Box::new)),
                        (false, true) => quote!(#slot),
                        (false, false) if boxed => quote!(::std::option::Option::Some(::std::boxed::Box::new(#fast::or_empty(#slot, cx)?))),
                        (false, false) => quote!(::std::option::Option::Some(#fast::or_empty(#slot, cx)?)),
                        (true, true) if default => quote!(#slot.unwrap_or_default()),
                        (true, true) => return None,
                        (true, false) => quote!(#fast::or_empty(#slot, cx)?),
                    };
                    Some((quote!(::std::option::Option<#rust>), quote!(::std::option::Option::None), quote!(#fast::message(&mut #slot, v, cx)?), value))
                }
                _ => None,
            });
            let (slot_ty, init, call, value) = match read {
                Some(r) => r,
                None => {
                    // The table-driven deserializer reads the field as the mirror's
                    // `Deserialize` would from the JSON key: an optional field as its
                    // `Option`, a required one as an `Option` defaulted (or, for a type
                    // without a default, as itself: a missing one is then the
                    // deserializer's error).
                    let inner = self.rust_type(&shape);
                    let boxed = !req && matches!(shape, Shape::Mirror(_));
                    let value = if !req && boxed {
                        quote!(#fast::delegate::<::std::option::Option<#inner>>(#owner, #num, &#slot, cx)?.flatten().map(::std::boxed::Box::new))
                    } else if !req {
                        quote!(#fast::delegate::<::std::option::Option<#inner>>(#owner, #num, &#slot, cx)?.flatten())
                    } else if self.has_default(&shape) {
                        quote!(#fast::delegate::<::std::option::Option<#inner>>(#owner, #num, &#slot, cx)?.flatten().unwrap_or_default())
                    } else {
                        quote!(#fast::delegate::<#inner>(#owner, #num, &#slot, cx)?.ok_or(#fast::Fallback)?)
                    };
                    (
                        quote!(#fast::Wires<'_>),
                        quote!(::std::default::Default::default()),
                        quote!(#slot.push(v)),
                        value,
                    )
                }
            };
            slots.push(quote!(let mut #slot: #slot_ty = #init;));
            match inline {
                None => arms.push((num, call)),
                Some(n) => inline_arms.entry(*n).or_default().push((num, call)),
            }
            values.push(quote!(#field: #value,));
        }
        for (num, inner) in inline_arms {
            let seen = format_ident!("inlined{num}");
            slots.push(quote!(let mut #seen = false;));
            let dispatch = dispatch(&inner);
            arms.push((
                num,
                quote! {{
                    let mut inlined = #fast::Reader::inlined(v, &mut #seen)?;
                    while let ::std::option::Option::Some((number, v)) = inlined.next_field()? {
                        #dispatch
                    }
                }},
            ));
        }
        // Every byte is read even when no field is: malformed input is handed back.
        let read = if arms.is_empty() {
            quote!(while fields.next_field()?.is_some() {})
        } else {
            let dispatch = dispatch(&arms);
            quote! {
                while let ::std::option::Option::Some((number, v)) = fields.next_field()? {
                    #dispatch
                }
            }
        };
        let calls = arms.iter().map(|(_, call)| call);
        let uses_cx = quote!(#(#calls)* #(#values)*).to_string().contains("cx");
        let cx = if uses_cx { quote!(cx) } else { quote!(_cx) };
        Some(quote! {
            impl #fast::Message for #ty {
                const MESSAGE: &'static str = #message;

                fn decode_message(bytes: &[u8], #cx: #fast::Cx) -> #fast::Result<Self> {
                    #(#slots)*
                    let mut fields = #fast::Reader::new(bytes);
                    #read
                    ::std::result::Result::Ok(Self { #(#values)* })
                }
            }
        })
    }
}

/// The statement that runs the call of field `number`'s arm: a `match`, or an `if` for
/// one arm (as clippy asks of code however it is mounted).
fn dispatch(arms: &[(u64, TokenStream)]) -> TokenStream {
    match arms {
        [(num, call)] => quote! {
            if number == #num {
                #call;
            }
        },
        _ => {
            let arms = arms.iter().map(|(num, call)| quote!(#num => #call,));
            quote! {
                match number {
                    #(#arms)*
                    _ => {}
                }
            }
        }
    }
}

/// A field of a special apimachinery type, for [`Mirror::special_read`].
struct SpecialField<'a> {
    prop: &'a Value,
    table_ty: &'a str,
    slot: &'a proc_macro2::Ident,
    req: bool,
    pointer: bool,
    repeated: bool,
    omitzero: bool,
}

impl Mirror<'_> {
    /// How a generated decoder reads a field of k8s-openapi's `Time`, `Quantity`,
    /// `IntOrString` or `BTreeMap<String, Quantity>` itself: (slot type, slot's start,
    /// the match arm's call, the field's value); `None` to delegate it.
    fn special_read(
        &self,
        sf: SpecialField<'_>,
    ) -> Option<(TokenStream, TokenStream, TokenStream, TokenStream)> {
        let fast = quote!(::kubegen_runtime::protobuf::fast);
        let SpecialField {
            prop,
            table_ty,
            slot,
            req,
            pointer,
            repeated,
            omitzero,
        } = sf;
        if repeated || omitzero {
            return None;
        }
        let none = quote!(::std::option::Option::None);
        let target = reference(prop);
        let map_target = prop
            .get("additionalProperties")
            .filter(|a| a.is_object())
            .and_then(reference);
        let (t, call, value) = match (table_ty, target, map_target) {
            // Go's zero time is `null`, and a missing one reads as `None`: the same.
            ("time", Some(TIME), _) if !req => (
                quote!(::std::option::Option<::std::option::Option<#TIME_TYPE>>),
                quote!(#fast::time(&mut #slot, v)?),
                quote!(#slot.flatten()),
            ),
            ("quantity", Some(QUANTITY), _) if !(req && pointer) => (
                quote!(::std::option::Option<#QUANTITY_TYPE>),
                quote!(#fast::quantity(&mut #slot, v)?),
                match (req, pointer) {
                    (false, true) => quote!(#slot),
                    (false, false) => {
                        quote!(::std::option::Option::Some(#fast::quantity_or_zero(#slot)))
                    }
                    _ => quote!(#fast::quantity_or_zero(#slot)),
                },
            ),
            ("intorstring", Some(INT_OR_STRING), _) if !(req && pointer) => (
                quote!(::std::option::Option<#INT_OR_STRING_TYPE>),
                quote!(#fast::int_or_string(&mut #slot, v)?),
                match (req, pointer) {
                    (false, true) => quote!(#slot),
                    (false, false) => {
                        quote!(::std::option::Option::Some(#fast::int_or_string_or_zero(#slot)))
                    }
                    _ => quote!(#fast::int_or_string_or_zero(#slot)),
                },
            ),
            ("map:quantity", None, Some(QUANTITY)) => {
                let value = if req {
                    quote!(#slot)
                } else {
                    quote!(#fast::non_empty_map(#slot))
                };
                return Some((
                    quote!(::std::collections::BTreeMap<::std::string::String, #QUANTITY_TYPE>),
                    quote!(::std::collections::BTreeMap::new()),
                    quote!(#fast::quantity_entry(&mut #slot, v)?),
                    value,
                ));
            }
            _ => return None,
        };
        Some((t, none, call, value))
    }
}

const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

/// Tokens of k8s-openapi's special types, in `quote!`.
struct TypePath(&'static str);

impl quote::ToTokens for TypePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(k8s_type(self.0));
    }
}

const TIME_TYPE: TypePath = TypePath(TIME);
const QUANTITY_TYPE: TypePath = TypePath(QUANTITY);
const INT_OR_STRING_TYPE: TypePath = TypePath(INT_OR_STRING);

/// A field encoding/json writes for a message (see [`Mirror::json_fields`]).
struct JsonField<'a> {
    /// The message that has the field (for `delegate`).
    message: String,
    /// The number of the inlined message field that holds it, if inlined.
    inline: Option<u64>,
    field: &'a ProtobufField,
}

/// The expression converting `value` (a value of `shape`, on either side) to the other
/// side's type.
fn convert(shape: &Shape, value: TokenStream) -> TokenStream {
    match shape {
        Shape::Plain(..) => value,
        Shape::Mirror(_) => quote!(::std::convert::Into::into(#value)),
        Shape::List(inner) if inner.mirrors() => {
            let each = match **inner {
                Shape::Mirror(_) => quote!(::std::convert::Into::into),
                _ => {
                    let each = convert(inner, quote!(x));
                    quote!(|x| #each)
                }
            };
            quote!(::std::iter::Iterator::collect(::std::iter::IntoIterator::into_iter(#value).map(#each)))
        }
        Shape::Map(inner) if inner.mirrors() => {
            let each = convert(inner, quote!(x));
            quote!(::std::iter::Iterator::collect(::std::iter::IntoIterator::into_iter(#value).map(|(k, x)| (k, #each))))
        }
        Shape::List(_) | Shape::Map(_) => value,
    }
}

/// Whether a definition gets a mirror: an `io.k8s.api` definition with properties.
fn is_mirrored(schemas: &BTreeMap<String, Value>, name: &str) -> bool {
    name.starts_with(MIRRORED) && schemas.get(name).is_some_and(has_properties)
}

/// k8s-openapi's type of a definition: `io.k8s.api.core.v1.Pod` is
/// `k8s_openapi::api::core::v1::Pod`, `io.k8s.apimachinery.pkg.apis.meta.v1.Time` is
/// `k8s_openapi::apimachinery::pkg::apis::meta::v1::Time`.
fn k8s_type(name: &str) -> TokenStream {
    let path = name.strip_prefix("io.k8s.").unwrap_or(name);
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().unwrap_or(path);
    let modules = parts
        .iter()
        .map(|p| format_ident!("{}", p.replace('-', "_")));
    let t = format_ident!("{}", last);
    quote!(::kubegen_runtime::k8s_openapi #(::#modules)* ::#t)
}

/// k8s-openapi's field name for a JSON property: snake case where an upper-case letter
/// follows a lower-case one, or ends a run of upper-case letters before a lower-case
/// one (`podIP` -> `pod_ip`, `hostPID` -> `host_pid`, `fsType` -> `fs_type`), except
/// the plurals of acronyms, which k8s-openapi lists (`podIPs` -> `pod_ips`), and Rust
/// keywords, which it suffixes with `_`.
fn k8s_field_name(json: &str) -> String {
    match json {
        "$ref" => return "ref_path".to_owned(),
        "$schema" => return "schema".to_owned(),
        "as" | "continue" | "enum" | "ref" | "type" => return format!("{json}_"),
        _ => {}
    }
    if let Some(stem) = json
        .strip_suffix("IPs")
        .or_else(|| json.strip_suffix("CIDRs"))
    {
        let plural = if json.ends_with("IPs") {
            "ips"
        } else {
            "cidrs"
        };
        return format!("{}_{plural}", k8s_field_name(stem));
    }
    match json {
        "nonResourceURLs" => return "non_resource_urls".to_owned(),
        "targetWWNs" => return "target_wwns".to_owned(),
        _ => {}
    }
    let chars: Vec<char> = json.chars().collect();
    let mut out = String::with_capacity(json.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p].is_uppercase());
            let next = chars.get(i + 1).map(|n| n.is_uppercase());
            if prev == Some(false) || (prev == Some(true) && next == Some(false)) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else if c == '-' || c == '.' {
            out.push('_');
        } else {
            out.push(c);
        }
    }
    out
}

/// `io.k8s.api.core.v1` of `io.k8s.api.core.v1.Pod`.
fn package(name: &str) -> String {
    name.rsplit_once('.').map_or("", |(p, _)| p).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_are_k8s_openapis() {
        for (json, rust) in [
            ("podIP", "pod_ip"),
            ("podIPs", "pod_ips"),
            ("hostIPs", "host_ips"),
            ("clusterIPs", "cluster_ips"),
            ("podCIDRs", "pod_cidrs"),
            (
                "serverAddressByClientCIDRs",
                "server_address_by_client_cidrs",
            ),
            ("hostPID", "host_pid"),
            ("fsType", "fs_type"),
            (
                "targetCPUUtilizationPercentage",
                "target_cpu_utilization_percentage",
            ),
            ("nonResourceURLs", "non_resource_urls"),
            ("type", "type_"),
            ("iscsi", "iscsi"),
            ("readOnly", "read_only"),
        ] {
            assert_eq!(k8s_field_name(json), rust, "{json}");
        }
    }

    #[test]
    fn k8s_types_follow_the_definition_name() {
        assert_eq!(
            k8s_type("io.k8s.api.core.v1.Pod").to_string(),
            quote!(::kubegen_runtime::k8s_openapi::api::core::v1::Pod).to_string()
        );
        assert_eq!(
            k8s_type("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService").to_string(),
            quote!(::kubegen_runtime::k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService)
                .to_string()
        );
    }
}
