//! Apply configurations (typed server-side apply), as client-go's `applyconfigurations`
//! and controller-gen's `applyconfiguration` generator write them: for every kind with
//! a schema in the model (CRD input, and Rust input, whose schema the reader derives),
//! `applyconfigurations/<group>/<version>/<kind>.rs` holds
//!
//! - `<Kind>ApplyConfiguration` and one `...ApplyConfiguration` per object node of the
//!   kind's schema (named after the path, `FooSpecApplyConfiguration`): every field an
//!   `Option`, nested objects as their own apply configurations, lists of objects as
//!   lists of apply configurations, serialized with only the fields that are set;
//! - `with_<field>` builder methods (a list's appends, a map's merges, as Go's `WithX`),
//!   and on the root `with_labels`, `with_annotations`, `with_owner_references`,
//!   `with_finalizers`;
//! - the constructor `<kind>(name, namespace)` (or `<kind>(name)` when cluster-scoped)
//!   setting `apiVersion`, `kind` and the name;
//! - `extract_<kind>(&obj, manager)`, `extract_<kind>_status` (with a status
//!   subresource) and `extract_<kind>_from(&obj, manager, subresource)`: the fields
//!   `manager` owns, read from `metadata.managedFields` (`kubegen_runtime::apply::extract`).
//!
//! The apply configuration follows the schema, not the Rust type: it is what goes on
//! the wire. Typed clients take it with `apply_config` / `apply_status_config`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::types::{deserialize_impl, DeField, Duplicates, WhenAbsent};
use super::{ident, kind_module, kind_type, Module};
use crate::model::{Api, Group, Kind, Scope, Version};
use crate::names::{self, Namer};

/// The `applyconfigurations` module, or `None` when no kind has a schema.
pub fn applyconfigurations_module(api: &Api) -> Option<Module> {
    let resolver = builtin_resolver(api);
    // group module -> (its doc, version module -> (its doc, files, re-exported modules))
    let mut tree: BTreeMap<String, (String, BTreeMap<String, VersionFiles>)> = BTreeMap::new();
    for g in &api.groups {
        for v in &g.versions {
            for k in v
                .kinds
                .iter()
                .filter(|k| k.schema_json.is_some() && super::has_client(k))
            {
                version_files(
                    &mut tree,
                    &g.module,
                    display_group(g),
                    &v.module,
                    &format!("{}/{}", display_group(g), v.name),
                )
                .files
                .push(kind_file(g, v, k));
            }
        }
    }
    if let Some(resolver) = &resolver {
        let kinds = builtin_kinds(api);
        for (name, (g, v, _)) in &resolver.placed {
            let kind = kinds.get(name).copied();
            let gdoc = kind.map_or_else(
                || g.clone(),
                |(group, _, _)| display_group(group).to_owned(),
            );
            let vdoc = kind.map_or_else(
                || format!("{g}/{v}"),
                |(group, version, _)| format!("{}/{}", display_group(group), version.name),
            );
            version_files(&mut tree, g, &gdoc, v, &vdoc)
                .files
                .push(builtin_file(resolver, name, kind));
        }
    }
    if tree.is_empty() {
        return None;
    }
    let groups = tree.into_iter().map(|(g, (gdoc, versions))| {
        let versions = versions.into_iter().map(|(v, mut files)| {
            files.files.sort_by(|a, b| a.name.cmp(&b.name));
            let reexports = files.files.iter().map(|f| {
                let m = ident(&f.name);
                quote!(pub use self::#m::*;)
            });
            Module::new(
                v,
                vec![format!("Apply configurations of `{}`.", files.doc)],
                quote!(#(#reexports)*),
            )
            .children(files.files)
        });
        Module::new(
            g,
            vec![format!("Apply configurations of `{gdoc}`.")],
            quote!(),
        )
        .children(versions)
    });
    let feature = resolver
        .as_ref()
        .and_then(|r| r.feature)
        .map(|f| quote!(#[cfg(feature = #f)]));
    let mut module = Module::new(
        "applyconfigurations",
        vec![
            "Apply configurations: each kind's object with every field optional, for typed"
                .to_owned(),
            "server-side apply (`apply_config`) and `extract_<kind>` (client-go's".to_owned(),
            "`applyconfigurations`).".to_owned(),
        ],
        quote!(),
    )
    .attrs(super::modules::top_level_allows())
    .children(groups);
    module.outer_attrs = feature.unwrap_or_default();
    Some(module)
}

/// The files of one version's module.
struct VersionFiles {
    /// `apps/v1`.
    doc: String,
    files: Vec<Module>,
}

fn version_files<'t>(
    tree: &'t mut BTreeMap<String, (String, BTreeMap<String, VersionFiles>)>,
    group: &str,
    group_doc: &str,
    version: &str,
    version_doc: &str,
) -> &'t mut VersionFiles {
    tree.entry(group.to_owned())
        .or_insert_with(|| (group_doc.to_owned(), BTreeMap::new()))
        .1
        .entry(version.to_owned())
        .or_insert_with(|| VersionFiles {
            doc: version_doc.to_owned(),
            files: Vec::new(),
        })
}

fn display_group(g: &Group) -> &str {
    if g.name.is_empty() {
        "core"
    } else {
        &g.name
    }
}

/// Whether a built-in kind gets an apply configuration: it has a definition and an
/// apply verb.
pub fn builtin_applies(kind: &Kind) -> bool {
    kind.openapi.is_some() && super::has_client(kind) && kind.client.has(crate::model::Verb::Apply)
}

/// Built-in kinds with apply configurations, by definition name.
fn builtin_kinds(api: &Api) -> BTreeMap<&str, (&Group, &Version, &Kind)> {
    let mut out = BTreeMap::new();
    for g in &api.groups {
        for v in &g.versions {
            for k in v.kinds.iter().filter(|k| builtin_applies(k)) {
                if let Some(o) = &k.openapi {
                    out.insert(o.name.as_str(), (g, v, k));
                }
            }
        }
    }
    out
}

/// The definitions reachable from the built-in kinds that apply, placed in the module
/// of their package (a kind's package is its group and version; a package without
/// kinds, such as meta/v1, is named by its last two segments).
fn builtin_resolver(api: &Api) -> Option<Resolver<'_>> {
    let kinds = builtin_kinds(api);
    let (_, _, first) = kinds.values().next()?;
    let definitions = &first.openapi.as_ref()?.definitions;
    let schemas = &definitions.schemas;
    let package = |name: &str| name.rsplit_once('.').map_or("", |(p, _)| p).to_owned();
    let mut modules: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (name, (g, v, _)) in &kinds {
        modules.insert(package(name), (g.module.clone(), v.module.clone()));
    }
    let mut placed = BTreeMap::new();
    let mut direct: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut files: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut stack: Vec<&str> = kinds.keys().rev().copied().collect();
    let mut seen = BTreeSet::new();
    while let Some(name) = stack.pop() {
        if !seen.insert(name) || special_type(name).is_some() {
            continue;
        }
        let Some((key, schema)) = schemas.get_key_value(name) else {
            continue;
        };
        let mut refs = Vec::new();
        references(schema, &mut refs);
        stack.extend(refs.iter().rev());
        if !Resolver::is_struct(schemas, name) {
            continue;
        }
        let pkg = package(name);
        let (g, v) = modules.get(&pkg).cloned().unwrap_or_else(|| {
            let mut parts = pkg.rsplit('.');
            let v = names::module_name(parts.next().unwrap_or("v1"));
            let g = names::module_name(parts.next().unwrap_or("core"));
            (g, v)
        });
        let stem = match kinds.get(name) {
            Some((_, _, k)) => kind_module(k),
            None => names::field_name(short_name(name)),
        };
        let mut file = stem.clone();
        let mut n = 2;
        while !files.insert((g.clone(), v.clone(), file.clone())) {
            file = format!("{stem}_{n}");
            n += 1;
        }
        let props = schema.get("properties").and_then(Value::as_object);
        let held: BTreeSet<&str> = props
            .into_iter()
            .flat_map(|p| p.values())
            .filter_map(reference)
            .filter(|r| Resolver::is_struct(schemas, r))
            .collect();
        direct.insert(key.as_str(), held);
        placed.insert(key.as_str(), (g, v, file));
    }
    Some(Resolver {
        schemas,
        placed,
        direct,
        feature: definitions.feature.as_deref(),
    })
}

/// One built-in definition's file: its apply configuration, and for a kind its
/// constructor and extract functions.
fn builtin_file(
    resolver: &Resolver<'_>,
    name: &str,
    kind: Option<(&Group, &Version, &Kind)>,
) -> Module {
    let schema = resolver.schemas.get(name).unwrap_or(&Value::Null);
    let file = resolver.placed.get(name).map_or_else(
        || names::field_name(short_name(name)),
        |(_, _, f)| f.clone(),
    );
    let mut b = Builder::new();
    b.refs = Some(resolver);
    b.current = Some(name);
    match kind {
        Some((g, v, k)) => {
            let root_name = b.object(schema, &super::kind_stem(k), true);
            let items = &b.items;
            let atomic = atomic_paths(schema, resolver.schemas);
            let root = root_items(g, v, k, &root_name, &atomic);
            Module::new(
                file,
                vec![format!(
                    "The apply configuration of `{}` (`{}`), from Kubernetes' OpenAPI definition `{name}`.",
                    k.names.kind,
                    api_version(g, v)
                )],
                quote!(#(#items)* #root),
            )
        }
        None => {
            b.object(schema, short_name(name), false);
            let items = &b.items;
            Module::new(
                file,
                vec![format!(
                    "The apply configuration of `{}`, from Kubernetes' OpenAPI definition `{name}`.",
                    short_name(name)
                )],
                quote!(#(#items)*),
            )
        }
    }
}

/// Builds the apply-configuration structs of one kind from its schema (or, for built-in
/// kinds, of one OpenAPI definition).
struct Builder<'a> {
    namer: Namer,
    items: Vec<TokenStream>,
    /// Resolves `$ref`s (built-in definitions only).
    refs: Option<&'a Resolver<'a>>,
    /// The definition being emitted (built-in definitions only).
    current: Option<&'a str>,
}

impl Builder<'_> {
    fn new() -> Self {
        Builder {
            namer: Namer::default(),
            items: Vec::new(),
            refs: None,
            current: None,
        }
    }

    /// The Rust type of a value with `schema`, named from `hint` where it is a struct,
    /// and the type of its elements when it is a list or a map.
    fn ty(&mut self, schema: &Value, hint: &str) -> (TokenStream, Element) {
        let json = quote!(::kubegen_runtime::serde_json::Value);
        if let (Some(refs), Some(target)) = (self.refs, reference(schema)) {
            return (refs.type_of(target), Element::None);
        }
        if is_int_or_string(schema) {
            return (
                quote!(
                    ::kubegen_runtime::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString
                ),
                Element::None,
            );
        }
        let scalar = |t: TokenStream| (t, Element::None);
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => scalar(quote!(::std::string::String)),
            Some("boolean") => scalar(quote!(bool)),
            Some("integer") => match schema.get("format").and_then(Value::as_str) {
                Some("int32") => scalar(quote!(i32)),
                _ => scalar(quote!(i64)),
            },
            Some("number") => scalar(quote!(::kubegen_runtime::serde_json::Number)),
            Some("array") => {
                let (inner, strings) = match schema.get("items") {
                    Some(items) => (self.ty(items, hint).0, is_string(items)),
                    None => (json, false),
                };
                (
                    quote!(::std::vec::Vec<#inner>),
                    Element::List(inner, strings),
                )
            }
            Some("object") => {
                if has_properties(schema) {
                    let name = self.object(schema, hint, false);
                    let name = format_ident!("{}", name);
                    scalar(quote!(#name))
                } else if let Some(additional) =
                    schema.get("additionalProperties").filter(|a| a.is_object())
                {
                    let inner = self.ty(additional, hint).0;
                    (
                        quote!(::std::collections::BTreeMap<::std::string::String, #inner>),
                        Element::Map(inner, is_string(additional)),
                    )
                } else {
                    scalar(json)
                }
            }
            _ => scalar(json),
        }
    }

    /// Emits the struct for an object node; returns its name.
    fn object(&mut self, schema: &Value, hint: &str, root: bool) -> String {
        let name = self.namer.unique(&format!("{hint}ApplyConfiguration"));
        let ty = format_ident!("{}", name);
        let empty = serde_json::Map::new();
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut field_namer = Namer::default();
        let mut fields = Vec::new();
        let mut methods = Vec::new();
        let mut rust_names = Vec::new();
        for (json_name, prop) in props {
            let rust = field_namer.unique(&names::field_name(json_name));
            rust_names.push((json_name.as_str(), rust.clone()));
            let f = format_ident!("{}", rust);
            let (value_ty, element) = match (root, json_name.as_str()) {
                (true, "metadata") => (
                    quote!(::kubegen_runtime::apply::ObjectMetaApplyConfiguration),
                    Element::None,
                ),
                (true, "apiVersion" | "kind") => (quote!(::std::string::String), Element::None),
                _ if self.boxed(prop) => {
                    let inner = self.ty(prop, "").0;
                    (quote!(::std::boxed::Box<#inner>), Element::None)
                }
                _ => self.ty(prop, &format!("{hint}{}", names::type_part(json_name))),
            };
            let doc = format!(" `{json_name}`.");
            fields.push(quote! {
                #[doc = #doc]
                #[serde(rename = #json_name, default, skip_serializing_if = "::std::option::Option::is_none")]
                pub #f: ::std::option::Option<#value_ty>,
            });
            if root && matches!(json_name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            let with = format_ident!("with_{}", rust.trim_end_matches('_'));
            let method = match element {
                Element::List(_, true) => {
                    let doc =
                        format!(" Appends to `{json_name}` (nothing to append leaves it unset).");
                    quote! {
                        #[doc = #doc]
                        pub fn #with<S: ::std::convert::Into<::std::string::String>>(mut self, items: impl ::std::iter::IntoIterator<Item = S>) -> Self {
                            for item in items {
                                self.#f.get_or_insert_with(::std::vec::Vec::new).push(item.into());
                            }
                            self
                        }
                    }
                }
                Element::Map(_, true) => {
                    let doc =
                        format!(" Adds entries to `{json_name}` (no entries leave it unset).");
                    quote! {
                        #[doc = #doc]
                        pub fn #with<K: ::std::convert::Into<::std::string::String>, V: ::std::convert::Into<::std::string::String>>(mut self, entries: impl ::std::iter::IntoIterator<Item = (K, V)>) -> Self {
                            for (k, v) in entries {
                                self.#f.get_or_insert_with(::std::collections::BTreeMap::new).insert(k.into(), v.into());
                            }
                            self
                        }
                    }
                }
                Element::List(item, false) => {
                    let doc =
                        format!(" Appends to `{json_name}` (nothing to append leaves it unset).");
                    quote! {
                        #[doc = #doc]
                        pub fn #with(mut self, items: impl ::std::iter::IntoIterator<Item = #item>) -> Self {
                            for item in items {
                                self.#f.get_or_insert_with(::std::vec::Vec::new).push(item);
                            }
                            self
                        }
                    }
                }
                Element::Map(inner, false) => {
                    let doc =
                        format!(" Adds entries to `{json_name}` (no entries leave it unset).");
                    quote! {
                        #[doc = #doc]
                        pub fn #with<K: ::std::convert::Into<::std::string::String>>(mut self, entries: impl ::std::iter::IntoIterator<Item = (K, #inner)>) -> Self {
                            for (k, v) in entries {
                                self.#f.get_or_insert_with(::std::collections::BTreeMap::new).insert(k.into(), v);
                            }
                            self
                        }
                    }
                }
                Element::None if self.boxed(prop) => {
                    let inner = self
                        .refs
                        .map(|r| r.type_of(reference(prop).unwrap_or_default()));
                    let doc = format!(" Sets `{json_name}`.");
                    quote! {
                        #[doc = #doc]
                        pub fn #with(mut self, value: #inner) -> Self {
                            self.#f = ::std::option::Option::Some(::std::boxed::Box::new(value));
                            self
                        }
                    }
                }
                Element::None if is_string(prop) => {
                    let doc = format!(" Sets `{json_name}`.");
                    quote! {
                        #[doc = #doc]
                        pub fn #with(mut self, value: impl ::std::convert::Into<::std::string::String>) -> Self {
                            self.#f = ::std::option::Option::Some(value.into());
                            self
                        }
                    }
                }
                Element::None => {
                    let doc = format!(" Sets `{json_name}`.");
                    quote! {
                        #[doc = #doc]
                        pub fn #with(mut self, value: #value_ty) -> Self {
                            self.#f = ::std::option::Option::Some(value);
                            self
                        }
                    }
                }
            };
            methods.push(method);
        }
        // Objects holding an ObjectMeta (a kind, a Pod template) get its shortcuts, as
        // client-go's apply configurations embedding ObjectMetaApplyConfiguration do.
        let holds_meta = root
            || props.get("metadata").and_then(reference)
                == Some("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
        let root_methods = holds_meta.then(|| {
            quote! {
                /// Adds labels.
                pub fn with_labels<K: ::std::convert::Into<::std::string::String>, V: ::std::convert::Into<::std::string::String>>(mut self, labels: impl ::std::iter::IntoIterator<Item = (K, V)>) -> Self {
                    self.metadata = ::std::option::Option::Some(self.metadata.take().unwrap_or_default().with_labels(labels));
                    self
                }

                /// Adds annotations.
                pub fn with_annotations<K: ::std::convert::Into<::std::string::String>, V: ::std::convert::Into<::std::string::String>>(mut self, annotations: impl ::std::iter::IntoIterator<Item = (K, V)>) -> Self {
                    self.metadata = ::std::option::Option::Some(self.metadata.take().unwrap_or_default().with_annotations(annotations));
                    self
                }

                /// Adds owner references.
                pub fn with_owner_references(mut self, refs: impl ::std::iter::IntoIterator<Item = ::kubegen_runtime::apply::OwnerReferenceApplyConfiguration>) -> Self {
                    self.metadata = ::std::option::Option::Some(self.metadata.take().unwrap_or_default().with_owner_references(refs));
                    self
                }

                /// Adds finalizers.
                pub fn with_finalizers<S: ::std::convert::Into<::std::string::String>>(mut self, finalizers: impl ::std::iter::IntoIterator<Item = S>) -> Self {
                    self.metadata = ::std::option::Option::Some(self.metadata.take().unwrap_or_default().with_finalizers(finalizers));
                    self
                }
            }
        });
        let de_fields: Vec<_> = rust_names
            .iter()
            .map(|(json, rust)| DeField {
                json,
                rust,
                absent: WhenAbsent::Default,
            })
            .collect();
        let deserialize = deserialize_impl(&name, &de_fields, None, Duplicates::Error);
        let doc = format!(" The apply configuration of `{hint}`: only what is set is sent.");
        self.items.push(quote! {
            #[doc = #doc]
            #[derive(
                ::std::clone::Clone,
                ::std::fmt::Debug,
                ::std::default::Default,
                ::std::cmp::PartialEq,
                ::kubegen_runtime::serde::Serialize
            )]
            #[serde(crate = "::kubegen_runtime::serde")]
            pub struct #ty {
                #(#fields)*
            }

            #deserialize

            impl #ty {
                #(#methods)*
                #root_methods
            }
        });
        name
    }
}

impl Builder<'_> {
    /// Whether a property holds, directly, a definition that contains the current one
    /// (so its field must be boxed to have a size).
    fn boxed(&self, prop: &Value) -> bool {
        match (self.refs, self.current, reference(prop)) {
            (Some(refs), Some(current), Some(target)) => refs.must_box(current, target),
            _ => false,
        }
    }
}

/// The definition a schema names: `$ref`, or `allOf` with one `$ref` (OpenAPI v3's way
/// of adding a description or default to a reference).
pub(super) fn reference(schema: &Value) -> Option<&str> {
    let r = schema.get("$ref").or_else(|| {
        match schema
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            Some([one]) => one.get("$ref"),
            _ => None,
        }
    })?;
    r.as_str()?.rsplit('/').next()
}

/// Definitions with a Rust type of their own rather than an apply configuration.
fn special_type(name: &str) -> Option<TokenStream> {
    let k = quote!(::kubegen_runtime::k8s_openapi);
    Some(match name {
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" => {
            quote!(::kubegen_runtime::apply::ObjectMetaApplyConfiguration)
        }
        "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference" => {
            quote!(::kubegen_runtime::apply::OwnerReferenceApplyConfiguration)
        }
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time" => {
            quote!(#k::apimachinery::pkg::apis::meta::v1::Time)
        }
        "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" => {
            quote!(#k::apimachinery::pkg::apis::meta::v1::MicroTime)
        }
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
            quote!(#k::apimachinery::pkg::api::resource::Quantity)
        }
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
            quote!(#k::apimachinery::pkg::util::intstr::IntOrString)
        }
        _ => return None,
    })
}

/// The built-in definitions reachable from the kinds that have apply configurations,
/// where each is emitted, and which references need a box.
struct Resolver<'a> {
    schemas: &'a BTreeMap<String, Value>,
    /// Definition -> (group module, version module, file module), for definitions that
    /// get an apply configuration.
    placed: BTreeMap<&'a str, (String, String, String)>,
    /// Direct (unboxed) struct references: definition -> definitions it holds by value.
    direct: BTreeMap<&'a str, BTreeSet<&'a str>>,
    /// The feature gating the module.
    feature: Option<&'a str>,
}

impl<'a> Resolver<'a> {
    /// Whether `name` gets an apply configuration of its own: it has properties and no
    /// special type.
    fn is_struct(schemas: &BTreeMap<String, Value>, name: &str) -> bool {
        special_type(name).is_none() && schemas.get(name).is_some_and(has_properties)
    }

    /// The Rust type of a reference to `target`, from a file of the generated
    /// `applyconfigurations/<group>/<version>/` directory.
    fn type_of(&self, target: &str) -> TokenStream {
        if let Some(t) = special_type(target) {
            return t;
        }
        match self.placed.get(target) {
            Some((g, v, _)) => {
                let (g, v) = (ident(g), ident(v));
                let ty = format_ident!("{}ApplyConfiguration", short_name(target));
                quote!(super::super::super::#g::#v::#ty)
            }
            None => {
                // A definition without properties: its own schema says what it is.
                let mut b = Builder::new();
                match self.schemas.get(target) {
                    Some(schema) if !has_properties(schema) => b.ty(schema, "").0,
                    _ => quote!(::kubegen_runtime::serde_json::Value),
                }
            }
        }
    }

    /// Whether `from` holding `target` by value would make `from` contain itself.
    fn must_box(&self, from: &str, target: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![target];
        while let Some(n) = stack.pop() {
            if n == from {
                return true;
            }
            if seen.insert(n) {
                stack.extend(self.direct.get(n).into_iter().flatten().copied());
            }
        }
        false
    }
}

/// The paths of a kind's atomic objects (`x-kubernetes-map-type: atomic`), following
/// `$ref`s into `definitions` (built-in kinds; a definition is not entered twice on one
/// path), in `kubegen_runtime::apply::extract_with`'s form.
fn atomic_paths(schema: &Value, definitions: &BTreeMap<String, Value>) -> Vec<String> {
    fn walk<'d>(
        s: &'d Value,
        definitions: &'d BTreeMap<String, Value>,
        path: &mut Vec<String>,
        entered: &mut Vec<&'d str>,
        out: &mut Vec<String>,
    ) {
        if path.len() > 32 {
            return;
        }
        let atomic =
            |s: &Value| s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        if atomic(s) {
            out.push(path.join("."));
            return;
        }
        if let Some(target) = reference(s) {
            if entered.contains(&target) {
                return;
            }
            if let Some(def) = definitions.get(target) {
                entered.push(target);
                walk(def, definitions, path, entered, out);
                entered.pop();
            }
            return;
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (name, p) in props {
                path.push(name.clone());
                walk(p, definitions, path, entered, out);
                path.pop();
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = s.get(key).filter(|v| v.is_object()) {
                path.push("*".to_owned());
                walk(inner, definitions, path, entered, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(
        schema,
        definitions,
        &mut Vec::new(),
        &mut Vec::new(),
        &mut out,
    );
    out.sort();
    out.dedup();
    out
}

/// `Container` of `io.k8s.api.core.v1.Container`.
pub(super) fn short_name(definition: &str) -> &str {
    definition.rsplit('.').next().unwrap_or(definition)
}

/// Every definition `name`'s schema references.
pub(super) fn references<'v>(schema: &'v Value, out: &mut Vec<&'v str>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.rsplit('/').next().unwrap_or(r)),
                    _ => references(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}

/// What a list or map holds, for its `with_` method.
enum Element {
    /// Not a list or map.
    None,
    /// A list of this (and whether it is a string, whose appends take `Into<String>`).
    List(TokenStream, bool),
    /// A map to this (and whether it is a string).
    Map(TokenStream, bool),
}

pub(super) fn has_properties(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
}

/// A string that is not an int-or-string (its setter takes `impl Into<String>`).
fn is_string(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("string") && !is_int_or_string(schema)
}

fn is_int_or_string(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
}

/// One kind's file.
fn kind_file(group: &Group, version: &Version, kind: &Kind) -> Module {
    let schema: Value = kind
        .schema_json
        .as_deref()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(Value::Null);
    let stem = super::kind_stem(kind);
    let mut b = Builder::new();
    // The root is an object even when its schema says nothing of its fields.
    let mut root_schema = schema.clone();
    if let Value::Object(m) = &mut root_schema {
        let props = m
            .entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(p) = props {
            for key in ["apiVersion", "kind", "metadata"] {
                p.entry(key)
                    .or_insert_with(|| serde_json::json!({"type": "object"}));
            }
        }
    }
    let root_name = b.object(&root_schema, &stem, true);
    let items = &b.items;
    let atomic = atomic_paths(&schema, &BTreeMap::new());
    let root = root_items(group, version, kind, &root_name, &atomic);
    let kind_name = &kind.names.kind;
    let api_version = api_version(group, version);
    Module::new(
        kind_module(kind),
        vec![format!(
            "The apply configuration of `{kind_name}` (`{api_version}`), from its schema."
        )],
        quote!(#(#items)* #root),
    )
}

fn api_version(group: &Group, version: &Version) -> String {
    if group.name.is_empty() {
        version.name.clone()
    } else {
        format!("{}/{}", group.name, version.name)
    }
}

/// The constructor, the `ApplyConfiguration` impl and the extract functions of a kind
/// whose root apply configuration is `root_name`.
fn root_items(
    group: &Group,
    version: &Version,
    kind: &Kind,
    root_name: &str,
    atomic: &[String],
) -> TokenStream {
    let stem = super::kind_stem(kind);
    let root = format_ident!("{}", root_name);
    let kind_ty = kind_type(group, version, kind, 4);
    let api_version = api_version(group, version);
    let kind_name = &kind.names.kind;
    let ctor = format_ident!("{}", names::field_name(&stem));
    let (params, namespace, ctor_doc) = match kind.scope {
        Scope::Namespaced => (
            quote!(name: &str, namespace: &str),
            quote!(.with_namespace(namespace)),
            format!(" A `{kind_name}` apply configuration named `name` in `namespace`, with `apiVersion` and `kind` set."),
        ),
        Scope::Cluster => (
            quote!(name: &str),
            quote!(),
            format!(" A `{kind_name}` apply configuration named `name`, with `apiVersion` and `kind` set."),
        ),
    };
    let extract = format_ident!("extract_{}", names::field_name(&stem));
    let extract_from = format_ident!("extract_{}_from", names::field_name(&stem));
    let extract_status = format_ident!("extract_{}_status", names::field_name(&stem));
    let status = kind.status_subresource.then(|| {
        quote! {
            /// The `status` fields `field_manager` owns in `obj` (applied to the status
            /// subresource).
            pub fn #extract_status(obj: &#kind_ty, field_manager: &str) -> ::std::result::Result<#root, ::kubegen_runtime::apply::ApplyError> {
                #extract_from(obj, field_manager, "status")
            }
        }
    });
    let doc_extract = format!(" The fields `field_manager` owns in `obj` through server-side apply, as a `{root_name}` to change and apply again (client-go's `Extract{stem}`).");
    quote! {
        #[doc = #ctor_doc]
        pub fn #ctor(#params) -> #root {
            #root {
                api_version: ::std::option::Option::Some(::std::string::String::from(#api_version)),
                kind: ::std::option::Option::Some(::std::string::String::from(#kind_name)),
                metadata: ::std::option::Option::Some(
                    ::kubegen_runtime::apply::ObjectMetaApplyConfiguration::default()
                        .with_name(name)
                        #namespace
                ),
                ..::std::default::Default::default()
            }
        }

        impl ::kubegen_runtime::apply::ApplyConfiguration for #root {
            fn name(&self) -> ::std::option::Option<&str> {
                self.metadata.as_ref()?.name.as_deref()
            }
        }

        #[doc = #doc_extract]
        pub fn #extract(obj: &#kind_ty, field_manager: &str) -> ::std::result::Result<#root, ::kubegen_runtime::apply::ApplyError> {
            #extract_from(obj, field_manager, "")
        }

        #status

        /// The fields `field_manager` owns in `obj` at `subresource` (`""` for the object
        /// itself, `"status"`, `"scale"`).
        pub fn #extract_from(obj: &#kind_ty, field_manager: &str, subresource: &str) -> ::std::result::Result<#root, ::kubegen_runtime::apply::ApplyError> {
            let decode = |source| ::kubegen_runtime::apply::ApplyError::Decode {
                manager: ::std::string::String::from(field_manager),
                source,
            };
            // The kind's atomic objects (`x-kubernetes-map-type: atomic`), owned whole.
            const ATOMIC: &[&str] = &[#(#atomic),*];
            let value = ::kubegen_runtime::serde_json::to_value(obj).map_err(decode)?;
            let owned = ::kubegen_runtime::apply::extract_with(&value, field_manager, subresource, ATOMIC);
            ::kubegen_runtime::serde_json::from_value(owned).map_err(decode)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn atomic_paths_follow_references_once() {
        let defs: BTreeMap<String, Value> = [
            (
                "a.Spec".to_owned(),
                json!({"properties": {
                    "selector": {"allOf": [{"$ref": "#/components/schemas/a.Selector"}]},
                    "items": {"type": "array", "items": {"$ref": "#/components/schemas/a.Spec"}},
                    "labels": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/a.Selector"}}
                }}),
            ),
            (
                "a.Selector".to_owned(),
                json!({"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"x": {"type": "string"}}}),
            ),
        ]
        .into();
        let root = json!({"properties": {"spec": {"$ref": "#/components/schemas/a.Spec"}}});
        assert_eq!(
            atomic_paths(&root, &defs),
            ["spec.labels.*", "spec.selector"],
            "a definition is not entered again below itself"
        );
    }
}
