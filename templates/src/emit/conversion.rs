//! `conversion.rs`: conversions between the versions of a kind, hub and spoke
//! (conversion-gen's job, in controller-runtime's hub-and-spoke shape).
//!
//! For a kind whose API server converts with a webhook ([`Kind::conversion_webhook`]),
//! the storage version is the hub and every other served version is a spoke. A spoke's
//! `conversion` module holds `TryFrom` both ways between each of its structs and the
//! hub's struct at the same place (roots by kind, nested structs by field name), with
//! `Error = kubegen_runtime::conversion::ConversionError`:
//!
//! - a target field is copied from the source field of the same JSON name when the two
//!   have the same shape: the same type, or structs at both ends (converted by their own
//!   `TryFrom`, recursively), or string enums at both ends (through the wire value, so a
//!   value one version does not list survives in the other's catch-all), inside the same
//!   `Option` / `Vec` / map / `Box` wrappers;
//! - any other target field is a method of the module's `ManualConversion` trait, named
//!   `<struct>_<field>_to_<version>`, that computes the field from the whole source
//!   struct. The user implements the trait for the module's `Conversion` type; until
//!   every method is written the crate does not compile and the error names the missing
//!   method, hence the field (conversion-gen's "manual conversion required").
//!
//! A source field with no target is dropped (a hand-written method of the other
//! direction can keep it in an annotation). Unserved versions get no conversions: the
//! API server never asks for them. The hub's `conversion` module has one function per
//! kind returning a `kubegen_runtime::conversion::HubConverter` that holds every spoke:
//! the `ConversionReview` handler's body.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{ident, path_tokens, ty_tokens, Module};
use crate::model::{Field, Group, Kind, KindSource, StructDef, Ty, TypeDef, Version};
use crate::names::field_name;

/// The error type every generated conversion returns.
fn error_type() -> TokenStream {
    quote!(::kubegen_runtime::conversion::ConversionError)
}

/// The `conversion` module of `version`, when it is a hub or a spoke of some kind.
pub fn conversion_module(group: &Group, version: &Version) -> Option<Module> {
    let mut items = TokenStream::new();
    let mut docs = Vec::new();
    let spoke = spoke_items(group, version);
    if let Some((spoke_docs, spoke_items)) = spoke {
        docs.extend(spoke_docs);
        items.extend(spoke_items);
    }
    let hub = hub_items(group, version);
    if !hub.is_empty() {
        if !docs.is_empty() {
            docs.push(String::new());
        }
        docs.push(format!(
            "`{}/{}` is the hub (storage version) of: {}. Each `<kind>_converter()` holds the",
            group.name,
            version.name,
            hub.iter()
                .map(|(k, _)| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        docs.push(
            "kind's versions and converts between any two of them (a `ConversionReview`)."
                .to_owned(),
        );
        items.extend(hub.into_iter().map(|(_, f)| f));
    }
    if docs.is_empty() {
        return None;
    }
    Some(Module::new("conversion", docs, items))
}

/// Whether `kind` is converted by generated code at all.
fn converted(kind: &Kind) -> bool {
    kind.conversion_webhook && kind.served && !matches!(kind.source, KindSource::External { .. })
}

/// The storage version of `kind` in `group` and its kind there, when it is another
/// version than `version`.
fn hub_of<'a>(group: &'a Group, version: &Version, kind: &Kind) -> Option<(&'a Version, &'a Kind)> {
    group
        .versions
        .iter()
        .filter(|v| v.name != version.name)
        .find_map(|v| {
            v.kinds
                .iter()
                .find(|k| k.names.kind == kind.names.kind && k.storage && converted(k))
                .map(|k| (v, k))
        })
}

/// The root struct of a kind in its version.
fn root_struct<'a>(version: &'a Version, kind: &Kind) -> Option<&'a StructDef> {
    version.types.iter().find_map(|t| match (t, &kind.source) {
        (TypeDef::Struct(s), KindSource::Generated { type_name }) if &s.name == type_name => {
            Some(s)
        }
        (TypeDef::Struct(s), KindSource::User { rust_path, .. })
            if s.existing.as_deref() == Some(rust_path.as_str()) =>
        {
            Some(s)
        }
        _ => None,
    })
}

/// The hub's converter functions: one per kind this version stores, with its spokes,
/// each with the kind's name.
fn hub_items(group: &Group, version: &Version) -> Vec<(String, TokenStream)> {
    let mut out = Vec::new();
    for kind in version.kinds.iter().filter(|k| k.storage && converted(k)) {
        let Some(hub) = root_struct(version, kind) else {
            continue;
        };
        let spokes: Vec<TokenStream> = group
            .versions
            .iter()
            .filter(|v| v.name != version.name)
            .filter_map(|v| {
                let k = v
                    .kinds
                    .iter()
                    .find(|k| k.names.kind == kind.names.kind && converted(k))?;
                let s = root_struct(v, k)?;
                let path = struct_path(v, s);
                Some(quote!(.spoke::<#path>()))
            })
            .collect();
        if spokes.is_empty() {
            continue;
        }
        let hub_path = struct_path(version, hub);
        let name = format_ident!(
            "{}_converter",
            field_name(&kind.names.kind).trim_end_matches('_')
        );
        let doc = format!(
            " `{}` at every served version, converted through this hub version (`{}/{}`).",
            kind.names.kind, group.name, version.name
        );
        out.push((
            kind.names.kind.clone(),
            quote! {
                #[doc = #doc]
                pub fn #name() -> ::kubegen_runtime::conversion::HubConverter<#hub_path> {
                    ::kubegen_runtime::conversion::HubConverter::new() #(#spokes)*
                }
            },
        ));
    }
    out
}

/// A struct's path seen from a `conversion` module (`apis::<group>::<version>::conversion`).
fn struct_path(version: &Version, s: &StructDef) -> TokenStream {
    match &s.existing {
        Some(path) => path_tokens(path),
        None => {
            let (v, n) = (ident(&version.module), ident(&s.name));
            quote!(super::super::#v::#n)
        }
    }
}

/// `ty` with each named type replaced by its path from a `conversion` module.
fn resolve(ty: &Ty, version: &Version) -> Ty {
    let inner = |t: &Ty| Box::new(resolve(t, version));
    match ty {
        Ty::Vec(t) => Ty::Vec(inner(t)),
        Ty::Map(t) => Ty::Map(inner(t)),
        Ty::Option(t) => Ty::Option(inner(t)),
        Ty::Box(t) => Ty::Box(inner(t)),
        Ty::Named(name) => Ty::External(match version.types.iter().find(|t| t.name() == name) {
            Some(TypeDef::Struct(StructDef {
                existing: Some(path),
                ..
            })) => path.clone(),
            Some(TypeDef::ExistingEnum(e)) => e.path.clone(),
            _ => format!("super::super::{}::{name}", version.module),
        }),
        other => other.clone(),
    }
}

/// A field's type as a value of `version` (with the `Option` or `Nullable` an optional
/// field adds). A `Nullable` is copied only when it holds the same type in both versions.
fn field_ty(f: &Field, version: &Version) -> Ty {
    match (f.optional, f.nullable) {
        (true, false) => Ty::Option(Box::new(f.ty.clone())),
        (true, true) => Ty::External(format!(
            "::kubegen_runtime::types::Nullable<{}>",
            ty_tokens(&resolve(&f.ty, version), &quote!())
        )),
        _ => f.ty.clone(),
    }
}

/// Whether values of `ty` are the same Rust type in every version (no named types).
fn plain(ty: &Ty) -> bool {
    match ty {
        Ty::Vec(t) | Ty::Map(t) | Ty::Option(t) | Ty::Box(t) => plain(t),
        Ty::Named(_) | Ty::ApiVersion | Ty::KindField => false,
        _ => true,
    }
}

/// A method of the spoke's `ManualConversion` trait: one target field.
struct Hook {
    name: syn::Ident,
    doc: String,
    source: TokenStream,
    ty: TokenStream,
}

/// One spoke version's pairs with its hub: what is generated, and what is left to the user.
struct Pairing<'a> {
    spoke: &'a Version,
    hub: &'a Version,
    /// Struct pairs `(spoke, hub)` to convert, queued as fields reach them.
    queue: Vec<Pair>,
    seen: BTreeSet<Pair>,
    hooks: BTreeMap<String, Hook>,
    impls: Vec<TokenStream>,
}

/// A struct pair `(spoke type name, hub type name)`.
type Pair = (String, String);

/// A converted value: the value itself, or a `Result` of it.
enum Conv {
    Value(TokenStream),
    Result(TokenStream),
}

/// Which way a conversion goes.
#[derive(Clone, Copy)]
enum Direction {
    ToHub,
    FromHub,
}

impl<'a> Pairing<'a> {
    fn structs(&self, d: Direction) -> (&'a Version, &'a Version) {
        match d {
            Direction::ToHub => (self.spoke, self.hub),
            Direction::FromHub => (self.hub, self.spoke),
        }
    }

    fn find(version: &'a Version, name: &str) -> Option<&'a TypeDef> {
        version.types.iter().find(|t| t.name() == name)
    }

    fn push(&mut self, pair: Pair) {
        if self.seen.insert(pair.clone()) {
            self.queue.push(pair);
        }
    }

    /// The expression converting `value` of `src` into `dst`: a value, or (when it can
    /// fail) a `Result` the caller ends with `?`; `None` when the shapes differ.
    fn expr(
        &mut self,
        d: Direction,
        src: &Ty,
        dst: &Ty,
        value: TokenStream,
        depth: usize,
    ) -> Option<Conv> {
        if src == dst && plain(src) {
            return Some(Conv::Value(value));
        }
        let (from, to) = self.structs(d);
        let error = error_type();
        let v = format_ident!("v{}", depth);
        // Elements converted by a struct's own `TryFrom` are mapped with the function
        // itself (a closure that only calls it is clippy's `redundant_closure`).
        let element = |this: &mut Self, a: &Ty, b: &Ty| -> Option<(TokenStream, bool)> {
            if let Some(f) = this.struct_try_from(d, a, b) {
                return Some((f, true));
            }
            Some(match this.expr(d, a, b, quote!(#v), depth + 1)? {
                Conv::Value(inner) => (quote!(|#v| #inner), false),
                Conv::Result(inner) => (quote!(|#v| #inner), true),
            })
        };
        match (src, dst) {
            (Ty::ApiVersion, Ty::ApiVersion) | (Ty::KindField, Ty::KindField) => {
                Some(Conv::Value(quote!(::std::default::Default::default())))
            }
            (Ty::Vec(a), Ty::Vec(b)) => {
                let (f, fallible) = element(self, a, b)?;
                Some(if fallible {
                    let t = ty_tokens(&resolve(b, to), &quote!());
                    Conv::Result(quote! {
                        #value
                            .into_iter()
                            .map(#f)
                            .collect::<::std::result::Result<::std::vec::Vec<#t>, #error>>()
                    })
                } else {
                    Conv::Value(quote!(#value.into_iter().map(#f).collect()))
                })
            }
            (Ty::Map(a), Ty::Map(b)) => {
                let k = format_ident!("k{}", depth);
                Some(match self.expr(d, a, b, quote!(#v), depth + 1)? {
                    Conv::Value(inner) => Conv::Value(
                        quote!(#value.into_iter().map(|(#k, #v)| (#k, #inner)).collect()),
                    ),
                    Conv::Result(inner) => {
                        let t = ty_tokens(&resolve(b, to), &quote!());
                        Conv::Result(quote! {
                            #value
                                .into_iter()
                                .map(|(#k, #v)| #inner.map(|#v| (#k, #v)))
                                .collect::<::std::result::Result<::std::collections::BTreeMap<::std::string::String, #t>, #error>>()
                        })
                    }
                })
            }
            (Ty::Option(a), Ty::Option(b)) => {
                let (f, fallible) = element(self, a, b)?;
                Some(if fallible {
                    Conv::Result(quote!(#value.map(#f).transpose()))
                } else {
                    Conv::Value(quote!(#value.map(#f)))
                })
            }
            (Ty::Box(a), Ty::Box(b)) => {
                Some(match self.expr(d, a, b, quote!((*#value)), depth + 1)? {
                    Conv::Value(inner) => Conv::Value(quote!(::std::boxed::Box::new(#inner))),
                    Conv::Result(inner) => Conv::Result(quote!(#inner.map(::std::boxed::Box::new))),
                })
            }
            (Ty::Named(a), Ty::Named(b)) => {
                if let Some(f) = self.struct_try_from(d, src, dst) {
                    return Some(Conv::Result(quote!(#f(#value))));
                }
                match (Self::find(from, a)?, Self::find(to, b)?) {
                    (TypeDef::Enum(_), TypeDef::Enum(_)) => {
                        let t = ty_tokens(&resolve(dst, to), &quote!());
                        Some(Conv::Value(
                            quote!(<#t as ::std::convert::From<::std::string::String>>::from(::std::borrow::ToOwned::to_owned(#value.as_str()))),
                        ))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `<Target as TryFrom<Source>>::try_from` when `src` and `dst` are structs (the
    /// pair is queued for its own impls).
    fn struct_try_from(&mut self, d: Direction, src: &Ty, dst: &Ty) -> Option<TokenStream> {
        let (Ty::Named(a), Ty::Named(b)) = (src, dst) else {
            return None;
        };
        let (from, to) = self.structs(d);
        let (Some(TypeDef::Struct(_)), Some(TypeDef::Struct(_))) =
            (Self::find(from, a), Self::find(to, b))
        else {
            return None;
        };
        self.push(match d {
            Direction::ToHub => (a.clone(), b.clone()),
            Direction::FromHub => (b.clone(), a.clone()),
        });
        let (s, t) = (
            ty_tokens(&resolve(src, from), &quote!()),
            ty_tokens(&resolve(dst, to), &quote!()),
        );
        Some(quote!(<#t as ::std::convert::TryFrom<#s>>::try_from))
    }

    /// `TryFrom<source>` for `target`, the struct pair `(spoke, hub)` in direction `d`.
    fn struct_impl(&mut self, d: Direction, source: &StructDef, target: &StructDef) -> TokenStream {
        let (from, to) = self.structs(d);
        let (source_path, target_path) = (struct_path(from, source), struct_path(to, target));
        let error = error_type();
        let mut lets = Vec::new();
        let mut inits = Vec::new();
        let mut uses_from = false;
        for t in &target.fields {
            let name = ident(&t.rust_name);
            let matched = source
                .fields
                .iter()
                .find(|s| {
                    s.json_name == t.json_name && s.flatten == t.flatten && s.nullable == t.nullable
                })
                .and_then(|s| {
                    let value = {
                        let n = ident(&s.rust_name);
                        quote!(from.#n)
                    };
                    self.expr(d, &field_ty(s, from), &field_ty(t, to), value, 0)
                });
            let value = match matched {
                Some(Conv::Value(value)) => value,
                Some(Conv::Result(value)) => quote!(#value?),
                None if t.ty == Ty::ApiVersion || t.ty == Ty::KindField => {
                    quote!(::std::default::Default::default())
                }
                None => {
                    let hook = self.hook(d, source, target, &t.rust_name, &field_ty(t, to));
                    let local = format_ident!(
                        "{}",
                        format!("manual_{}", t.rust_name.trim_end_matches('_'))
                    );
                    lets.push(
                        quote!(let #local = <Conversion as ManualConversion>::#hook(&from)?;),
                    );
                    quote!(#local)
                }
            };
            uses_from = true;
            inits.push(quote!(#name: #value,));
        }
        if let Some(unknown) = &target.unknown_fields {
            let name = ident(unknown);
            let value = match &source.unknown_fields {
                Some(s) => {
                    let s = ident(s);
                    quote!(from.#s)
                }
                None => {
                    let ty = Ty::Map(Box::new(Ty::Json));
                    let hook = self.hook(d, source, target, unknown, &ty);
                    let local = format_ident!("manual_{}", unknown.trim_end_matches('_'));
                    lets.push(
                        quote!(let #local = <Conversion as ManualConversion>::#hook(&from)?;),
                    );
                    quote!(#local)
                }
            };
            uses_from = true;
            inits.push(quote!(#name: #value,));
        }
        let arg = if uses_from {
            quote!(from)
        } else {
            quote!(_from)
        };
        quote! {
            impl ::std::convert::TryFrom<#source_path> for #target_path {
                type Error = #error;

                fn try_from(#arg: #source_path) -> ::std::result::Result<Self, Self::Error> {
                    #(#lets)*
                    ::std::result::Result::Ok(Self { #(#inits)* })
                }
            }
        }
    }

    /// Registers the manual method producing `field` of `target` from `source`.
    fn hook(
        &mut self,
        d: Direction,
        source: &StructDef,
        target: &StructDef,
        field: &str,
        ty: &Ty,
    ) -> syn::Ident {
        let (from, to) = self.structs(d);
        let base = format!(
            "{}_{}_to_{}",
            field_name(&target.name).trim_end_matches('_'),
            field.trim_end_matches('_'),
            to.module
        );
        // Two source structs may reach one target struct: the second method names its source.
        let name = match self.hooks.get(&base) {
            Some(h) if h.source.to_string() != struct_path(from, source).to_string() => format!(
                "{}_from_{}_to_{}",
                field_name(&target.name).trim_end_matches('_'),
                field_name(&source.name).trim_end_matches('_'),
                to.module
            ),
            _ => base,
        };
        let doc = format!(
            " Manual conversion required: `{}.{}` at `{}` has no field of the same name and shape in `{}` at `{}`; compute it from the source struct.",
            target.name, field, to.name, source.name, from.name
        );
        let ty = ty_tokens(&resolve(ty, to), &quote!());
        self.hooks.entry(name.clone()).or_insert(Hook {
            name: ident(&name),
            doc,
            source: struct_path(from, source),
            ty,
        });
        ident(&name)
    }

    /// Converts every queued pair, both ways, until no new pair turns up.
    fn run(&mut self) {
        while let Some((s, h)) = self.queue.pop() {
            let (Some(TypeDef::Struct(spoke)), Some(TypeDef::Struct(hub))) =
                (Self::find(self.spoke, &s), Self::find(self.hub, &h))
            else {
                continue;
            };
            let to_hub = self.struct_impl(Direction::ToHub, spoke, hub);
            let from_hub = self.struct_impl(Direction::FromHub, hub, spoke);
            self.impls.push(to_hub);
            self.impls.push(from_hub);
        }
    }
}

/// A spoke version's conversions to its hubs, with the trait for what is hand-written.
fn spoke_items(group: &Group, version: &Version) -> Option<(Vec<String>, TokenStream)> {
    let mut impls = Vec::new();
    let mut hooks: BTreeMap<String, Hook> = BTreeMap::new();
    let mut kinds = Vec::new();
    // Spoke kinds grouped by hub version, so one pairing walks each version pair once.
    let mut by_hub: BTreeMap<&str, (&Version, Vec<Pair>)> = BTreeMap::new();
    for kind in version.kinds.iter().filter(|k| !k.storage && converted(k)) {
        let Some((hub_version, hub_kind)) = hub_of(group, version, kind) else {
            continue;
        };
        let (Some(spoke), Some(hub)) = (
            root_struct(version, kind),
            root_struct(hub_version, hub_kind),
        ) else {
            continue;
        };
        kinds.push(format!(
            "`{}` (hub `{}`)",
            kind.names.kind, hub_version.name
        ));
        by_hub
            .entry(hub_version.name.as_str())
            .or_insert((hub_version, Vec::new()))
            .1
            .push((spoke.name.clone(), hub.name.clone()));
    }
    if kinds.is_empty() {
        return None;
    }
    for (hub, roots) in by_hub.into_values() {
        let mut pairing = Pairing {
            spoke: version,
            hub,
            queue: Vec::new(),
            seen: BTreeSet::new(),
            hooks: std::mem::take(&mut hooks),
            impls: Vec::new(),
        };
        for root in roots.into_iter().rev() {
            pairing.push(root);
        }
        pairing.run();
        hooks = pairing.hooks;
        impls.extend(pairing.impls);
    }
    let mut docs = vec![
        format!(
            "Conversions between `{}/{}` (a spoke) and the storage version (the hub) of: {}.",
            group.name,
            version.name,
            kinds.join(", ")
        ),
        "`TryFrom` both ways for each struct pair: fields of the same name and shape are copied;"
            .to_owned(),
    ];
    let trait_items = if hooks.is_empty() {
        docs.push("every field here has one.".to_owned());
        TokenStream::new()
    } else {
        docs.push(
            "the others are the methods of [`ManualConversion`], which the crate implements for"
                .to_owned(),
        );
        docs.push("[`Conversion`] (manual conversion required).".to_owned());
        let error = error_type();
        let methods = hooks.values().map(|h| {
            let (name, doc, source, ty) = (&h.name, &h.doc, &h.source, &h.ty);
            quote! {
                #[doc = #doc]
                fn #name(from: &#source) -> ::std::result::Result<#ty, #error>;
            }
        });
        let fields: Vec<String> = hooks.keys().map(|k| format!("`{k}`")).collect();
        let trait_doc = format!(
            " The field conversions kubegen cannot generate (manual conversion required): {}. Implement this trait for [`Conversion`] in the crate that mounts the generated tree; until every method is written the crate does not compile, and the error names the missing method, which names the field.",
            fields.join(", ")
        );
        quote! {
            #[doc = #trait_doc]
            pub trait ManualConversion {
                #(#methods)*
            }

            /// What the generated conversions call [`ManualConversion`]'s methods on.
            #[derive(::std::fmt::Debug, ::std::clone::Clone, ::std::marker::Copy, ::std::default::Default)]
            pub struct Conversion;
        }
    };
    Some((docs, quote!(#trait_items #(#impls)*)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClientTags, Names, Scope};

    fn field(name: &str, ty: Ty) -> Field {
        Field {
            json_name: name.to_owned(),
            rust_name: field_name(name),
            ty,
            doc: None,
            optional: true,
            required: false,
            nullable: false,
            default: None,
            flatten: false,
            skip: false,
            schema: Default::default(),
        }
    }

    fn structure(name: &str, fields: Vec<Field>) -> TypeDef {
        TypeDef::Struct(StructDef {
            name: name.to_owned(),
            existing: None,
            doc: None,
            origin: String::new(),
            fields,
            unknown_fields: None,
            schema: Default::default(),
        })
    }

    fn version(name: &str, storage: bool, spec: Vec<Field>, webhook: bool) -> Version {
        let mut root = vec![
            field("apiVersion", Ty::ApiVersion),
            field("kind", Ty::KindField),
            field("spec", Ty::Named("FooSpec".to_owned())),
        ];
        for f in &mut root[..2] {
            f.optional = false;
        }
        Version {
            name: name.to_owned(),
            module: name.to_owned(),
            kinds: vec![Kind {
                names: Names {
                    kind: "Foo".to_owned(),
                    plural: "foos".to_owned(),
                    singular: "foo".to_owned(),
                    list_kind: "FooList".to_owned(),
                    ..Names::default()
                },
                scope: Scope::Namespaced,
                status_subresource: false,
                scale: None,
                client: ClientTags::all(false),
                schema_json: None,
                printer_columns: Vec::new(),
                served: true,
                storage,
                deprecated: false,
                conversion_webhook: webhook,
                deprecation_warning: None,
                source: KindSource::Generated {
                    type_name: "Foo".to_owned(),
                },
                list_type_name: "FooList".to_owned(),
                selectable_fields: Vec::new(),
                crd_metadata: Default::default(),
                openapi: None,
            }],
            types: vec![structure("Foo", root), structure("FooSpec", spec)],
        }
    }

    fn group(webhook: bool) -> Group {
        Group {
            name: "example.com".to_owned(),
            module: "example".to_owned(),
            versions: vec![
                version(
                    "v1",
                    true,
                    vec![field("replicas", Ty::I32), field("note", Ty::String)],
                    webhook,
                ),
                version(
                    "v1beta1",
                    false,
                    vec![field("size", Ty::I32), field("note", Ty::String)],
                    webhook,
                ),
            ],
        }
    }

    fn text(module: Option<Module>) -> String {
        module.map(|m| m.items.to_string()).unwrap_or_default()
    }

    #[test]
    fn a_renamed_field_is_a_manual_method_each_way() {
        let g = group(true);
        let spoke = text(conversion_module(&g, &g.versions[1]));
        assert!(spoke.contains("pub trait ManualConversion"), "{spoke}");
        assert!(
            spoke.contains(
                "fn foo_spec_replicas_to_v1 (from : & super :: super :: v1beta1 :: FooSpec)"
            ),
            "{spoke}"
        );
        assert!(
            spoke
                .contains("fn foo_spec_size_to_v1beta1 (from : & super :: super :: v1 :: FooSpec)"),
            "{spoke}"
        );
        // The field with the same name and shape is copied.
        assert!(spoke.contains("note : from . note"), "{spoke}");
        let hub = text(conversion_module(&g, &g.versions[0]));
        assert!(hub.contains("pub fn foo_converter ()"), "{hub}");
        assert!(
            hub.contains(". spoke :: < super :: super :: v1beta1 :: Foo > ()"),
            "{hub}"
        );
    }

    #[test]
    fn nothing_is_generated_without_a_conversion_webhook() {
        let g = group(false);
        assert!(conversion_module(&g, &g.versions[0]).is_none());
        assert!(conversion_module(&g, &g.versions[1]).is_none());
    }

    #[test]
    fn an_unserved_version_is_no_spoke() {
        let mut g = group(true);
        g.versions[1].kinds[0].served = false;
        assert!(conversion_module(&g, &g.versions[1]).is_none());
        assert!(conversion_module(&g, &g.versions[0]).is_none());
    }
}
