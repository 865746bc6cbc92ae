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
use serde_json::Value;

use super::{ident, kind_module, kind_type, Module};
use crate::model::{Api, Group, Kind, Scope, Version};
use crate::names::{self, Namer};

/// The `applyconfigurations` module, or `None` when no kind has a schema.
pub fn applyconfigurations_module(api: &Api) -> Option<Module> {
    let groups: Vec<Module> = api
        .groups
        .iter()
        .filter_map(|g| {
            let versions: Vec<Module> = g
                .versions
                .iter()
                .filter_map(|v| version_module(g, v))
                .collect();
            (!versions.is_empty()).then(|| {
                Module::new(
                    g.module.clone(),
                    vec![format!("Apply configurations of `{}`.", display_group(g))],
                    quote!(),
                )
                .children(versions)
            })
        })
        .collect();
    if groups.is_empty() {
        return None;
    }
    Some(
        Module::new(
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
        .children(groups),
    )
}

fn display_group(g: &Group) -> &str {
    if g.name.is_empty() {
        "core"
    } else {
        &g.name
    }
}

fn version_module(group: &Group, version: &Version) -> Option<Module> {
    let kinds: Vec<&Kind> = version
        .kinds
        .iter()
        .filter(|k| k.schema_json.is_some() && super::has_client(k))
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let modules: Vec<Module> = kinds.iter().map(|k| kind_file(group, version, k)).collect();
    let reexports = kinds.iter().map(|k| {
        let m = ident(&kind_module(k));
        quote!(pub use self::#m::*;)
    });
    Some(
        Module::new(
            version.module.clone(),
            vec![format!(
                "Apply configurations of `{}/{}`.",
                display_group(group),
                version.name
            )],
            quote!(#(#reexports)*),
        )
        .children(modules),
    )
}

/// Builds the apply-configuration structs of one kind from its schema.
struct Builder {
    namer: Namer,
    items: Vec<TokenStream>,
}

impl Builder {
    /// The Rust type of a value with `schema`, named from `hint` where it is a struct,
    /// and the type of its elements when it is a list or a map.
    fn ty(&mut self, schema: &Value, hint: &str) -> (TokenStream, Element) {
        let json = quote!(::kubegen_runtime::serde_json::Value);
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
                let inner = match schema.get("items") {
                    Some(items) => self.ty(items, hint).0,
                    None => json,
                };
                (quote!(::std::vec::Vec<#inner>), Element::List(inner))
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
                        Element::Map(inner),
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
        for (json_name, prop) in props {
            let rust = field_namer.unique(&names::field_name(json_name));
            let f = format_ident!("{}", rust);
            let (value_ty, element) = match (root, json_name.as_str()) {
                (true, "metadata") => (
                    quote!(::kubegen_runtime::apply::ObjectMetaApplyConfiguration),
                    Element::None,
                ),
                (true, "apiVersion" | "kind") => (quote!(::std::string::String), Element::None),
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
                Element::List(item) => {
                    let doc = format!(" Appends to `{json_name}`.");
                    quote! {
                        #[doc = #doc]
                        pub fn #with(mut self, items: impl ::std::iter::IntoIterator<Item = #item>) -> Self {
                            self.#f.get_or_insert_with(::std::vec::Vec::new).extend(items);
                            self
                        }
                    }
                }
                Element::Map(inner) => {
                    let doc = format!(" Adds entries to `{json_name}`.");
                    quote! {
                        #[doc = #doc]
                        pub fn #with<K: ::std::convert::Into<::std::string::String>>(mut self, entries: impl ::std::iter::IntoIterator<Item = (K, #inner)>) -> Self {
                            self.#f
                                .get_or_insert_with(::std::collections::BTreeMap::new)
                                .extend(entries.into_iter().map(|(k, v)| (k.into(), v)));
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
        let root_methods = root.then(|| {
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
        let doc = format!(" The apply configuration of `{hint}`: only what is set is sent.");
        self.items.push(quote! {
            #[doc = #doc]
            #[derive(
                ::std::clone::Clone,
                ::std::fmt::Debug,
                ::std::default::Default,
                ::std::cmp::PartialEq,
                ::kubegen_runtime::serde::Serialize,
                ::kubegen_runtime::serde::Deserialize
            )]
            #[serde(crate = "::kubegen_runtime::serde")]
            pub struct #ty {
                #(#fields)*
            }

            impl #ty {
                #(#methods)*
                #root_methods
            }
        });
        name
    }
}

/// What a list or map holds, for its `with_` method.
enum Element {
    /// Not a list or map.
    None,
    /// A list of this.
    List(TokenStream),
    /// A map to this.
    Map(TokenStream),
}

fn has_properties(schema: &Value) -> bool {
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
    let mut b = Builder {
        namer: Namer::default(),
        items: Vec::new(),
    };
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
    let root = format_ident!("{}", root_name);
    let kind_ty = kind_type(group, version, kind, 4);
    let api_version = if group.name.is_empty() {
        version.name.clone()
    } else {
        format!("{}/{}", group.name, version.name)
    };
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
    let items = &b.items;
    let doc_extract = format!(" The fields `field_manager` owns in `obj` through server-side apply, as a `{root_name}` to change and apply again (client-go's `Extract{stem}`).");
    let body = quote! {
        #(#items)*

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
            let value = ::kubegen_runtime::serde_json::to_value(obj).map_err(decode)?;
            let owned = ::kubegen_runtime::apply::extract(&value, field_manager, subresource);
            ::kubegen_runtime::serde_json::from_value(owned).map_err(decode)
        }
    };
    Module::new(
        kind_module(kind),
        vec![format!(
            "The apply configuration of `{kind_name}` (`{api_version}`), from its schema."
        )],
        body,
    )
}
