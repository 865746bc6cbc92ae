//! `types.rs`: one struct or enum per [`TypeDef`], with serde attributes that keep the
//! wire exact, and `apply_defaults` where the schema declares defaults. `Serialize` is
//! derived; `Deserialize` is written out ([`deserialize_impl`], also used for apply
//! configurations) to the same values and errors, in less code.
//!
//! Guarantees of the emitted code: optional fields are `Option` and skipped when `None`
//! (absent stays absent); optional nullable fields are the runtime's `Nullable` (absent,
//! an explicit `null`, or a value: each is written back as it came); JSON keys are
//! renamed exactly; enums keep values the schema does
//! not list in their catch-all variant; preserve-unknown-fields structs keep undeclared
//! keys in a flattened map. `Clone` is not derived: `zz_generated_deepcopy.rs` has it.
//! Enums have no `Default`, and neither have the structs that require one
//! ([`types_without_default`]): only a schema `default` makes a default, through
//! `apply_defaults`.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{description_lint_allows, ident, ty_tokens, Module, LINT_ALLOWS_DOC};
use crate::model::{
    EnumDef, Field, Group, Kind, KindSource, Scope, StructDef, Ty, TypeDef, Version,
};
use crate::schema::{self, SchemaExtra};

/// The `types` module of a version: every type kubegen defines (not user-written ones).
pub fn types_module(group: &Group, version: &Version) -> Module {
    let mut doc = vec![format!(
        "Types of `{}/{}`, generated from their schemas.",
        group.name, version.name
    )];
    doc.push(String::new());
    doc.extend(LINT_ALLOWS_DOC.iter().map(|l| (*l).to_owned()));
    if version
        .kinds
        .iter()
        .any(|k| matches!(k.source, KindSource::Generated { .. }))
    {
        // The package markers `kubegen crd` (and code-generator) read.
        doc.push(String::new());
        doc.push(format!("+groupName={}", group.name));
        doc.push(format!("+versionName={}", version.name));
    }
    let with_defaults = types_with_defaults(version);
    let without_default = types_without_default(version);
    let items = version.types.iter().map(|t| match t {
        TypeDef::Struct(s) if s.existing.is_some() => quote!(),
        TypeDef::ExistingEnum(_) => quote!(),
        TypeDef::Struct(s) => {
            let kind = version.kinds.iter().find(
                |k| matches!(&k.source, KindSource::Generated { type_name } if *type_name == s.name),
            );
            let mut markers = kind.map(resource_markers).unwrap_or_default();
            markers.extend(schema::markers(&s.schema));
            let def = struct_def(s, &without_default, &markers);
            let defaults = with_defaults
                .contains(&s.name)
                .then(|| apply_defaults_impl(s, &with_defaults, version));
            let default = (!without_default.contains(&s.name)
                && !derives_default(s, &without_default))
            .then(|| default_impl(s));
            quote! { #def #default #defaults }
        }
        TypeDef::Enum(e) => enum_items(e),
    });
    Module::new("types", doc, quote!(#(#items)*)).attrs(description_lint_allows())
}

/// A struct and its fields; `without_default` is [`types_without_default`].
pub fn struct_def(
    s: &StructDef,
    without_default: &BTreeSet<String>,
    markers: &[String],
) -> TokenStream {
    let name = ident(&s.name);
    let doc = doc_with_markers(s.doc.as_deref(), markers);
    let fields = s.fields.iter().map(field);
    let unknown = s.unknown_fields.as_ref().map(|f| {
        let f = ident(f);
        quote! {
            /// Properties the schema does not declare, kept as they came
            /// (`x-kubernetes-preserve-unknown-fields`).
            #[serde(flatten)]
            pub #f: ::std::collections::BTreeMap<::std::string::String, ::kubegen_runtime::serde_json::Value>,
        }
    });
    let default = derives_default(s, without_default).then(|| quote!(::std::default::Default,));
    let deserialize = struct_deserialize(s);
    quote! {
        #doc
        #[derive(::std::fmt::Debug, ::std::cmp::PartialEq, #default ::kubegen_runtime::serde::Serialize)]
        #[serde(crate = "::kubegen_runtime::serde")]
        pub struct #name {
            #(#fields)*
            #unknown
        }
        #deserialize
    }
}

/// What a field takes when its key is absent.
#[derive(Clone, Copy)]
pub(super) enum WhenAbsent {
    /// `Default::default()` (`#[serde(default)]`: optional fields, `apiVersion`, `kind`,
    /// `metadata`).
    Default,
    /// The "missing field" error.
    Error,
    /// As serde's derive decides it at run time: `None` for a type that reads an option,
    /// the error otherwise (a named or user-written type, whose impl kubegen may not have
    /// written).
    AsSerde,
    /// `Default::default()`, and a `null` value too (the value is read as an `Option`):
    /// a compact mirror's required field, decoded as k8s-openapi decodes it.
    NullOrDefault,
}

/// A field as its written-out `Deserialize` reads it.
pub(super) struct DeField<'a> {
    /// The JSON key.
    pub json: &'a str,
    /// The Rust field.
    pub rust: &'a str,
    /// What it takes when its key is absent.
    pub absent: WhenAbsent,
}

/// Whether a type's `Deserialize` may read an absent key as a value (serde asks it for an
/// option): an `Option`, or a named type, whose impl kubegen may not have written.
fn may_read_option(ty: &Ty) -> bool {
    match ty {
        Ty::Option(_) | Ty::Named(_) | Ty::External(_) => true,
        Ty::Box(inner) => may_read_option(inner),
        _ => false,
    }
}

/// A generated struct's `Deserialize` ([`deserialize_impl`]), with what each field takes
/// when absent as the attributes [`field`] writes decide it.
fn struct_deserialize(s: &StructDef) -> TokenStream {
    let fields: Vec<DeField> = s
        .fields
        .iter()
        .map(|f| DeField {
            json: &f.json_name,
            rust: &f.rust_name,
            absent: match &f.ty {
                Ty::ApiVersion | Ty::KindField | Ty::ObjectMeta => WhenAbsent::Default,
                _ if f.optional => WhenAbsent::Default,
                ty if may_read_option(ty) => WhenAbsent::AsSerde,
                _ => WhenAbsent::Error,
            },
        })
        .collect();
    deserialize_impl(
        &s.name,
        &fields,
        s.unknown_fields.as_deref(),
        Duplicates::Error,
    )
}

/// What a written-out `Deserialize` does with a key that comes twice.
#[derive(Clone, Copy)]
pub(super) enum Duplicates {
    /// serde's "duplicate field" error, as serde's derive does.
    Error,
    /// The last value wins, as Go's encoding/json and k8s-openapi's decoding do (the
    /// compact mirrors of k8s-openapi's types).
    LastWins,
}

/// A struct's `Deserialize`, written out rather than derived (see
/// `kubegen_runtime::de`): the same values and errors as serde's derive with `rename` and
/// `default` on fields, and `flatten` on `unknown` (a map that keeps the keys no field
/// has), with one field-name lookup shared by every struct. It asks the deserializer for
/// a map (`deserialize_map`, as serde's derive does for a struct with a flattened field),
/// not a struct: a JSON array is then an error (kube-apiserver rejects it too), and
/// serde_json's struct entry point, which also reads arrays, is not compiled per struct.
/// The impl's own names (`__D`, `__A`, `__Visitor`) cannot be a generated type's: a kind
/// named `V`, `A` or `D` (fixtures/crds/names.yaml) still compiles.
pub(super) fn deserialize_impl(
    type_name: &str,
    fields: &[DeField],
    unknown: Option<&str>,
    duplicates: Duplicates,
) -> TokenStream {
    let name = ident(type_name);
    let expecting = format!("struct {type_name}");
    let json_names = fields.iter().map(|f| f.json);
    let slots: Vec<_> = (0..fields.len()).map(|i| format_ident!("f{i}")).collect();
    let index = |i: usize| proc_macro2::Literal::usize_unsuffixed(i);
    let values = fields.iter().zip(&slots).enumerate().map(|(i, (f, slot))| {
        let field = ident(f.rust);
        let i = index(i);
        let value = match f.absent {
            WhenAbsent::Default => quote!(#slot.unwrap_or_default()),
            WhenAbsent::NullOrDefault => quote!(::kubegen_runtime::de::or_default(#slot)),
            WhenAbsent::Error => quote! {
                match #slot {
                    ::std::option::Option::Some(v) => v,
                    ::std::option::Option::None => return ::std::result::Result::Err(<__A::Error as ::kubegen_runtime::serde::de::Error>::missing_field(FIELDS[#i])),
                }
            },
            WhenAbsent::AsSerde => quote! {
                match #slot {
                    ::std::option::Option::Some(v) => v,
                    ::std::option::Option::None => ::kubegen_runtime::de::missing(FIELDS[#i])?,
                }
            },
        };
        quote!(#field: #value,)
    });
    let (seed, read, other, unknown_init, unknown_value) = match unknown {
        None => (
            quote!(::kubegen_runtime::de::FieldSeed(FIELDS)),
            quote!(::kubegen_runtime::de::Key::Field),
            quote!(_ => ::kubegen_runtime::de::skip_value(&mut map)?,),
            quote!(),
            quote!(),
        ),
        Some(unknown) => {
            let unknown = ident(unknown);
            (
                quote!(::kubegen_runtime::de::OwnedKeySeed(FIELDS)),
                quote!(::kubegen_runtime::de::OwnedKey::Field),
                quote! {
                    ::kubegen_runtime::de::OwnedKey::Other(key) => {
                        let value = map.next_value()?;
                        unknown.insert(key, value);
                    }
                    // An index past the fields: the seed never gives one.
                    ::kubegen_runtime::de::OwnedKey::Field(_) => ::kubegen_runtime::de::skip_value(&mut map)?,
                },
                quote!(let mut unknown = ::std::collections::BTreeMap::new();),
                quote!(#unknown: unknown,),
            )
        }
    };
    let arms = slots.iter().enumerate().map(|(i, slot)| {
        let i = index(i);
        match duplicates {
            Duplicates::Error => quote!(#read(#i) => ::kubegen_runtime::de::next_field(&mut map, &mut #slot, FIELDS[#i])?,),
            Duplicates::LastWins => quote!(#read(#i) => #slot = ::std::option::Option::Some(::kubegen_runtime::serde::de::MapAccess::next_value(&mut map)?),),
        }
    });
    quote! {
        impl<'de> ::kubegen_runtime::serde::Deserialize<'de> for #name {
            fn deserialize<__D: ::kubegen_runtime::serde::Deserializer<'de>>(deserializer: __D) -> ::std::result::Result<Self, __D::Error> {
                const FIELDS: &[&str] = &[#(#json_names),*];
                struct __Visitor;
                impl<'de> ::kubegen_runtime::serde::de::Visitor<'de> for __Visitor {
                    type Value = #name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                        f.write_str(#expecting)
                    }
                    fn visit_map<__A: ::kubegen_runtime::serde::de::MapAccess<'de>>(self, mut map: __A) -> ::std::result::Result<#name, __A::Error> {
                        #(let mut #slots = ::std::option::Option::None;)*
                        #unknown_init
                        while let ::std::option::Option::Some(key) = map.next_key_seed(#seed)? {
                            match key {
                                #(#arms)*
                                #other
                            }
                        }
                        ::std::result::Result::Ok(#name {
                            #(#values)*
                            #unknown_value
                        })
                    }
                }
                deserializer.deserialize_map(__Visitor)
            }
        }
    }
}

/// One field with its serde attributes.
pub fn field(f: &Field) -> TokenStream {
    let name = ident(&f.rust_name);
    let doc = doc_with_markers(f.doc.as_deref(), &field_markers(f));
    let rename = (f.json_name != f.rust_name).then(|| {
        let json = &f.json_name;
        quote!(rename = #json,)
    });
    let ty = ty_tokens(&f.ty, &quote!());
    match &f.ty {
        Ty::ApiVersion | Ty::KindField | Ty::ObjectMeta => quote! {
            #doc
            #[serde(#rename default)]
            pub #name: #ty,
        },
        _ if f.optional && f.nullable => quote! {
            #doc
            #[serde(#rename default, skip_serializing_if = "::kubegen_runtime::types::Nullable::is_absent")]
            pub #name: ::kubegen_runtime::types::Nullable<#ty>,
        },
        _ if f.optional => quote! {
            #doc
            #[serde(#rename default, skip_serializing_if = "::std::option::Option::is_none")]
            pub #name: ::std::option::Option<#ty>,
        },
        _ => {
            let attr = rename.map(|r| quote!(#[serde(#r)]));
            quote! {
                #doc
                #attr
                pub #name: #ty,
            }
        }
    }
}

/// The markers a field's doc comment carries: its schema default, `Required` when the
/// field is an `Option` the schema nevertheless requires, and its schema extras.
pub fn field_markers(f: &Field) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(d) = &f.default {
        out.push(format!(
            "+kubebuilder:default={}",
            serde_json::to_string(d).unwrap_or_default()
        ));
    }
    if f.required && f.optional {
        out.push("+kubebuilder:validation:Required".to_owned());
    }
    out.extend(schema::markers(&f.schema));
    out
}

/// The markers on a kind's root type that say what its CRD says outside the schema:
/// names, scope, subresources, printer columns, selectable fields and version flags
/// (controller-gen's spelling), so `kubegen crd` can write the CRD back.
pub fn resource_markers(kind: &Kind) -> Vec<String> {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut out = vec!["+genclient".to_owned()];
    if kind.scope == Scope::Cluster {
        out.push("+genclient:nonNamespaced".to_owned());
    }
    if !kind.status_subresource {
        out.push("+genclient:noStatus".to_owned());
    }
    out.push("+kubebuilder:object:root=true".to_owned());
    let names = &kind.names;
    let mut resource = format!(
        "+kubebuilder:resource:path={},singular={},scope={}",
        names.plural,
        names.singular,
        match kind.scope {
            Scope::Namespaced => "Namespaced",
            Scope::Cluster => "Cluster",
        }
    );
    if !names.short_names.is_empty() {
        resource.push_str(&format!(",shortName={}", names.short_names.join(";")));
    }
    if !names.categories.is_empty() {
        resource.push_str(&format!(",categories={}", names.categories.join(";")));
    }
    out.push(resource);
    if let KindSource::Generated { type_name } = &kind.source {
        if *type_name != names.kind {
            out.push(format!("+kubegen:resource:kind={}", names.kind));
        }
    }
    if names.list_kind != format!("{}List", names.kind) {
        out.push(format!("+kubegen:resource:listKind={}", names.list_kind));
    }
    if kind.status_subresource {
        out.push("+kubebuilder:subresource:status".to_owned());
    }
    if let Some(scale) = &kind.scale {
        let mut line = format!(
            "+kubebuilder:subresource:scale:specpath={},statuspath={}",
            scale.spec_replicas_path, scale.status_replicas_path
        );
        if let Some(sel) = &scale.label_selector_path {
            line.push_str(&format!(",selectorpath={sel}"));
        }
        out.push(line);
    }
    for c in &kind.printer_columns {
        let mut line = format!(
            "+kubebuilder:printcolumn:name={},type={},JSONPath={}",
            q(&c.name),
            q(&c.type_),
            q(&c.json_path)
        );
        if let Some(d) = &c.description {
            line.push_str(&format!(",description={}", q(d)));
        }
        if let Some(f) = &c.format {
            line.push_str(&format!(",format={}", q(f)));
        }
        if c.priority != 0 {
            line.push_str(&format!(",priority={}", c.priority));
        }
        out.push(line);
    }
    for f in &kind.selectable_fields {
        out.push(format!("+kubebuilder:selectablefield:JSONPath={}", q(f)));
    }
    if kind.storage {
        out.push("+kubebuilder:storageversion".to_owned());
    }
    if !kind.served {
        out.push("+kubebuilder:unservedversion".to_owned());
    }
    if kind.deprecated {
        out.push(match &kind.deprecation_warning {
            Some(w) => format!("+kubebuilder:deprecatedversion:warning={}", q(w)),
            None => "+kubebuilder:deprecatedversion".to_owned(),
        });
    }
    // controller-gen's `+kubebuilder:metadata`, one entry per marker (it repeats).
    for (key, map) in [
        ("annotations", &kind.crd_metadata.annotations),
        ("labels", &kind.crd_metadata.labels),
    ] {
        for (k, v) in map {
            out.push(format!(
                "+kubebuilder:metadata:{key}={}",
                q(&format!("{k}={v}"))
            ));
        }
    }
    out
}

/// Doc attributes: the description's lines, then (after a blank line) the markers.
pub fn doc_with_markers(doc: Option<&str>, markers: &[String]) -> TokenStream {
    let mut lines = doc.map(crate::docs::doc_lines).unwrap_or_default();
    if !markers.is_empty() {
        if !lines.is_empty() {
            lines.push(String::new());
        }
        lines.extend(markers.iter().cloned());
    }
    let lines = lines.iter().map(|l| {
        if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        }
    });
    quote! { #( #[doc = #lines] )* }
}

/// Types that have no `Default`, by name: every enum, and every struct with a required
/// field whose type has none (through `Box`).
///
/// An enum has no natural default: its first listed value is a choice the schema did
/// not make (`ConditionStatus::default()` would be `True`). A schema `default` belongs
/// to a field, and such a field is an `Option` filled by `apply_defaults`; so a struct
/// with a required enum field cannot be built without naming that value, and gets no
/// `Default` either (nor do the structs that require it in turn). Vecs, maps and
/// `Option`s are empty by default whatever they hold.
pub fn types_without_default(version: &Version) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = version
        .types
        .iter()
        .filter(|t| matches!(t, TypeDef::Enum(_)))
        .map(|t| t.name().to_owned())
        .collect();
    loop {
        let before = set.len();
        for t in &version.types {
            if let TypeDef::Struct(s) = t {
                if s.fields
                    .iter()
                    .any(|f| !f.optional && lacks_default(&f.ty, &set))
                {
                    set.insert(s.name.clone());
                }
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// Whether a value of `ty` has no `Default` (see [`types_without_default`]).
pub fn lacks_default(ty: &Ty, without_default: &BTreeSet<String>) -> bool {
    match ty {
        Ty::Named(n) => without_default.contains(n),
        Ty::Box(t) => lacks_default(t, without_default),
        _ => false,
    }
}

/// The value of an optional field `f` holding `value`: `Some(value)`, or
/// `Nullable::Value(value)` for a nullable field.
pub fn present(f: &Field, value: TokenStream) -> TokenStream {
    if f.nullable {
        quote!(::kubegen_runtime::types::Nullable::Value(#value))
    } else {
        quote!(::std::option::Option::Some(#value))
    }
}

/// Whether `#[derive(Default)]` works: the struct has a default at all, and its
/// required fields all have a `Default` type (a `Number` needs the hand-written impl).
fn derives_default(s: &StructDef, without_default: &BTreeSet<String>) -> bool {
    !without_default.contains(&s.name)
        && s.fields
            .iter()
            .all(|f| f.optional || !matches!(f.ty, Ty::Number))
}

/// `Default` for structs whose required fields include a type without one.
fn default_impl(s: &StructDef) -> TokenStream {
    let name = ident(&s.name);
    let fields = s.fields.iter().map(|f| {
        let n = ident(&f.rust_name);
        let value = match &f.ty {
            _ if f.optional && f.nullable => quote!(::kubegen_runtime::types::Nullable::Absent),
            _ if f.optional => quote!(::std::option::Option::None),
            Ty::Number => quote!(::kubegen_runtime::serde_json::Number::from(0)),
            _ => quote!(::std::default::Default::default()),
        };
        quote!(#n: #value,)
    });
    let unknown = s.unknown_fields.as_ref().map(|f| {
        let f = ident(f);
        quote!(#f: ::std::default::Default::default(),)
    });
    quote! {
        impl ::std::default::Default for #name {
            fn default() -> Self {
                Self { #(#fields)* #unknown }
            }
        }
    }
}

/// Struct names whose `apply_defaults` has work: a defaulted field, or a field whose type
/// (through Vec/Map/Option/Box) is such a struct.
fn types_with_defaults(version: &Version) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    loop {
        let before = set.len();
        for t in &version.types {
            if let TypeDef::Struct(s) = t {
                if s.fields
                    .iter()
                    .any(|f| f.default.is_some() || reaches_defaults(&f.ty, &set))
                {
                    set.insert(s.name.clone());
                }
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

fn reaches_defaults(ty: &Ty, set: &BTreeSet<String>) -> bool {
    match ty {
        Ty::Named(n) => set.contains(n),
        Ty::Vec(t) | Ty::Map(t) | Ty::Option(t) | Ty::Box(t) => reaches_defaults(t, set),
        _ => false,
    }
}

/// `apply_defaults`: fill absent fields with schema defaults, recursively.
fn apply_defaults_impl(s: &StructDef, set: &BTreeSet<String>, version: &Version) -> TokenStream {
    let name = ident(&s.name);
    let steps = s.fields.iter().map(|f| {
        let n = ident(&f.rust_name);
        let fill = f.default.as_ref().filter(|_| f.optional).map(|d| {
            // A typed literal where the value maps onto the type directly; else the
            // JSON, read once by serde (a struct default, a float).
            let value = match default_literal(&f.ty, d, version) {
                Some(v) => quote!(::std::option::Option::Some(#v)),
                None => {
                    let json = serde_json::to_string(d).unwrap_or_default();
                    quote!(::kubegen_runtime::serde_json::from_str(#json).ok())
                }
            };
            if f.nullable {
                // An explicit null stays null, as the API server keeps it.
                quote! {
                    if self.#n.is_absent() {
                        self.#n = ::kubegen_runtime::types::Nullable::from(#value);
                    }
                }
            } else {
                quote! {
                    if self.#n.is_none() {
                        self.#n = #value;
                    }
                }
            }
        });
        // `Nullable::as_mut` reads like `Option::as_mut`, so both walk the same way.
        let ty = if f.optional {
            Ty::Option(Box::new(f.ty.clone()))
        } else {
            f.ty.clone()
        };
        let recurse = walk_defaults(quote!(self.#n), &ty, set, 0);
        quote! { #fill #recurse }
    });
    quote! {
        impl #name {
            /// Fills absent fields with the schema's defaults, recursively, as the API
            /// server does when it reads an object. Present values are never changed.
            pub fn apply_defaults(&mut self) {
                #(#steps)*
            }
        }
    }
}

/// A Rust expression of type `ty` for the JSON default `v`, when the value maps onto
/// the type without serde: strings, booleans, integers, string enums, int-or-string,
/// lists and maps of those, and any JSON (`serde_json::json!`).
fn default_literal(ty: &Ty, v: &serde_json::Value, version: &Version) -> Option<TokenStream> {
    use serde_json::Value;
    Some(match (ty, v) {
        (Ty::String, Value::String(s)) => quote!(::std::string::String::from(#s)),
        (Ty::Bool, Value::Bool(b)) => quote!(#b),
        (Ty::I32, Value::Number(n)) => {
            let i = i32::try_from(n.as_i64()?).ok()?;
            quote!(#i)
        }
        (Ty::I64, Value::Number(n)) => {
            let i = n.as_i64()?;
            quote!(#i)
        }
        (Ty::Number, Value::Number(n)) if n.is_i64() => {
            let i = n.as_i64()?;
            quote!(::kubegen_runtime::serde_json::Number::from(#i))
        }
        (Ty::IntOrString, Value::Number(n)) => {
            let i = i32::try_from(n.as_i64()?).ok()?;
            quote!(::kubegen_runtime::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(#i))
        }
        (Ty::IntOrString, Value::String(s)) => quote!(
            ::kubegen_runtime::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(::std::string::String::from(#s))
        ),
        (Ty::Json, v) => {
            let tokens: TokenStream = serde_json::to_string(v).ok()?.parse().ok()?;
            quote!(::kubegen_runtime::serde_json::json!(#tokens))
        }
        (Ty::Box(t), v) => {
            let inner = default_literal(t, v, version)?;
            quote!(::std::boxed::Box::new(#inner))
        }
        (Ty::Vec(t), Value::Array(items)) => {
            if items.is_empty() {
                quote!(::std::vec::Vec::new())
            } else {
                let items = items
                    .iter()
                    .map(|i| default_literal(t, i, version))
                    .collect::<Option<Vec<_>>>()?;
                quote!(::std::vec![#(#items),*])
            }
        }
        (Ty::Map(t), Value::Object(m)) => {
            if m.is_empty() {
                quote!(::std::collections::BTreeMap::new())
            } else {
                let entries = m
                    .iter()
                    .map(|(k, x)| {
                        default_literal(t, x, version)
                            .map(|x| quote!((::std::string::String::from(#k), #x)))
                    })
                    .collect::<Option<Vec<_>>>()?;
                quote!(::std::collections::BTreeMap::from([#(#entries),*]))
            }
        }
        (Ty::Named(name), Value::String(s)) => {
            let Some(TypeDef::Enum(e)) = version.types.iter().find(|t| t.name() == name) else {
                return None;
            };
            let ty = ident(&e.name);
            match e.variants.iter().find(|v| v.value == *s) {
                Some(variant) => {
                    let variant = ident(&variant.name);
                    quote!(#ty::#variant)
                }
                None => {
                    let other = ident(&e.other_variant);
                    quote!(#ty::#other(::std::string::String::from(#s)))
                }
            }
        }
        _ => return None,
    })
}

fn walk_defaults(
    place: TokenStream,
    ty: &Ty,
    set: &BTreeSet<String>,
    depth: usize,
) -> Option<TokenStream> {
    if !reaches_defaults(ty, set) {
        return None;
    }
    let v = format_ident!("v{}", depth);
    Some(match ty {
        Ty::Named(_) => quote!(#place.apply_defaults();),
        Ty::Box(t) => return walk_defaults(place, t, set, depth),
        Ty::Option(t) => {
            let inner = walk_defaults(quote!(#v), t, set, depth + 1);
            quote!(if let ::std::option::Option::Some(#v) = #place.as_mut() { #inner })
        }
        Ty::Vec(t) => {
            let inner = walk_defaults(quote!(#v), t, set, depth + 1);
            quote!(for #v in #place.iter_mut() { #inner })
        }
        Ty::Map(t) => {
            let inner = walk_defaults(quote!(#v), t, set, depth + 1);
            quote!(for #v in #place.values_mut() { #inner })
        }
        _ => return None,
    })
}

/// A string enum, its conversions and its serde impls.
pub fn enum_items(e: &EnumDef) -> TokenStream {
    let name = ident(&e.name);
    // The values as a marker, so `kubegen crd` reads them back from the type.
    let mut values = SchemaExtra::default();
    values.set.insert(
        "enum".to_owned(),
        serde_json::Value::Array(
            e.variants
                .iter()
                .map(|v| serde_json::Value::String(v.value.clone()))
                .collect(),
        ),
    );
    let doc = doc_with_markers(e.doc.as_deref(), &schema::markers(&values));
    let other = ident(&e.other_variant);
    let variants = e.variants.iter().map(|v| {
        let n = ident(&v.name);
        let doc = format!(" `{}`", v.value.replace('`', "'"));
        let doc = if v.value.is_empty() {
            " The empty string.".to_owned()
        } else {
            doc
        };
        quote! { #[doc = #doc] #n, }
    });
    let as_str_arms = e.variants.iter().map(|v| {
        let n = ident(&v.name);
        let value = &v.value;
        quote!(Self::#n => #value,)
    });
    let from_arms = e.variants.iter().map(|v| {
        let n = ident(&v.name);
        let value = &v.value;
        quote!(#value => Self::#n,)
    });
    quote! {
        #doc
        #[derive(::std::fmt::Debug, ::std::cmp::PartialEq, ::std::cmp::Eq, ::std::hash::Hash)]
        pub enum #name {
            #(#variants)*
            /// A value the schema does not list (a newer server's), kept as sent.
            #other(::std::string::String),
        }

        impl #name {
            /// The wire value.
            pub fn as_str(&self) -> &str {
                match self {
                    #(#as_str_arms)*
                    Self::#other(value) => value,
                }
            }
        }

        impl ::std::convert::From<::std::string::String> for #name {
            fn from(value: ::std::string::String) -> Self {
                match value.as_str() {
                    #(#from_arms)*
                    _ => Self::#other(value),
                }
            }
        }

        impl ::kubegen_runtime::serde::Serialize for #name {
            fn serialize<S: ::kubegen_runtime::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::kubegen_runtime::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::kubegen_runtime::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                let value = <::std::string::String as ::kubegen_runtime::serde::Deserialize>::deserialize(deserializer)?;
                ::std::result::Result::Ok(Self::from(value))
            }
        }
    }
}
