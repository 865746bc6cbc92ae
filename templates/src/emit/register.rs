//! `register.rs`: what makes a generated type a Kubernetes resource.
//!
//! Per kind: k8s-openapi's `Resource`, `ListableResource` and `Metadata` impls (so
//! `kube::Api<K>` and kube-runtime accept the type unchanged), the list type
//! (`k8s_openapi::List<K>`, whose `kind` is the CRD's `listKind`), GVK/GVR constructors,
//! and a `RESOURCE_INFO` constant with names, short names, categories, subresources
//! (scale paths) and printer columns: the one description of the resource, which the
//! fake clientset registers from. Per version: `GROUP` and `VERSION` constants.
//!
//! User-written kinds (Rust input) get only what they lack: a kube-derive type has
//! `kube::Resource` already (and k8s-openapi's traits would conflict with it through
//! kube's blanket impl), so it gets `RESOURCE_INFO` and the GVK/GVR functions only; a
//! type with hand-written k8s-openapi impls keeps them. External kinds get nothing here.

use proc_macro2::TokenStream;
use quote::quote;

use super::{ident, path_tokens, Module};
use crate::model::{Group, Kind, KindSource, PrinterColumn, Scope, TypeDef, Version};

/// The `register` module of a version.
pub fn register_module(group: &Group, version: &Version) -> Module {
    let docs = vec![format!(
        "Registration of `{}/{}`: resource traits, list types, names and subresources.",
        group.name, version.name
    )];
    let group_name = &group.name;
    let version_name = &version.name;
    let kinds = version.kinds.iter().map(|k| kind_items(group, version, k));
    Module::new(
        "register",
        docs,
        quote! {
            /// The API group of this version.
            pub const GROUP: &str = #group_name;

            /// This version's name.
            pub const VERSION: &str = #version_name;

            #(#kinds)*
        },
    )
}

/// Everything registered for one kind (nothing for external kinds).
pub fn kind_items(group: &Group, version: &Version, kind: &Kind) -> TokenStream {
    let (ty, has, new_fn) = match &kind.source {
        KindSource::Generated { type_name } => {
            let name = ident(type_name);
            (
                quote!(super::types::#name),
                crate::model::ExistingImpls::default(),
                new_fn(version, &kind.names.kind, type_name),
            )
        }
        KindSource::User { rust_path, has } => (path_tokens(rust_path), *has, quote!()),
        KindSource::External { .. } => return quote!(),
    };
    let list = ident(&kind.list_type_name);
    let api_version = if group.name.is_empty() {
        version.name.clone()
    } else {
        format!("{}/{}", group.name, version.name)
    };
    let group_name = &group.name;
    let version_name = &version.name;
    let kind_name = &kind.names.kind;
    let plural = &kind.names.plural;
    let list_kind = &kind.names.list_kind;
    let scope = match kind.scope {
        Scope::Namespaced => quote!(::kubegen_runtime::k8s_openapi::NamespaceResourceScope),
        Scope::Cluster => quote!(::kubegen_runtime::k8s_openapi::ClusterResourceScope),
    };
    let list_doc = format!(" A list of `{kind_name}` objects (`{list_kind}` on the wire).");
    let info = resource_info(group, version, kind);
    let traits = (!has.kube_resource && !has.k8s_openapi_resource).then(|| quote! {
        impl ::kubegen_runtime::k8s_openapi::Resource for #ty {
            const API_VERSION: &'static str = #api_version;
            const GROUP: &'static str = #group_name;
            const KIND: &'static str = #kind_name;
            const VERSION: &'static str = #version_name;
            const URL_PATH_SEGMENT: &'static str = #plural;
            type Scope = #scope;
        }

        impl ::kubegen_runtime::k8s_openapi::ListableResource for #ty {
            const LIST_KIND: &'static str = #list_kind;
        }

        impl ::kubegen_runtime::k8s_openapi::Metadata for #ty {
            type Ty = ::kubegen_runtime::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &<Self as ::kubegen_runtime::k8s_openapi::Metadata>::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut <Self as ::kubegen_runtime::k8s_openapi::Metadata>::Ty {
                &mut self.metadata
            }
        }
    });
    // k8s-openapi's `List` needs `ListableResource`, which a kube-derive type lacks.
    let list_type = (!has.kube_resource).then(|| {
        quote! {
            #[doc = #list_doc]
            pub type #list = ::kubegen_runtime::k8s_openapi::List<#ty>;
        }
    });
    quote! {
        #traits

        #list_type

        impl #ty {
            /// Names, scope, subresources and printer columns, as the schema declares them.
            pub const RESOURCE_INFO: ::kubegen_runtime::types::ResourceInfo = #info;

            #new_fn

            /// The group, version and kind.
            pub fn group_version_kind() -> ::kubegen_runtime::kube::core::GroupVersionKind {
                ::kubegen_runtime::kube::core::GroupVersionKind::gvk(#group_name, #version_name, #kind_name)
            }

            /// The group, version and resource (plural).
            pub fn group_version_resource() -> ::kubegen_runtime::kube::core::GroupVersionResource {
                ::kubegen_runtime::kube::core::GroupVersionResource::gvr(#group_name, #version_name, #plural)
            }
        }
    }
}

/// `new(name, spec)` (or `new(name)` for a kind without `spec`), as kube-derive gives.
///
/// A root without `Default` (a required field whose type has none, see
/// [`types_without_default`](super::types::types_without_default)) is built field by
/// field; when a field other than `spec` is required and has no default, there is no
/// `new`: the caller must name that field's value, and a struct literal does it.
fn new_fn(version: &Version, kind_name: &str, type_name: &str) -> TokenStream {
    let Some(root) = version.types.iter().find_map(|t| match t {
        TypeDef::Struct(s) if s.name == type_name => Some(s),
        _ => None,
    }) else {
        return quote!();
    };
    let without_default = super::types::types_without_default(version);
    let spec = root.fields.iter().find(|f| f.json_name == "spec");
    let meta = quote! {
        metadata: ::kubegen_runtime::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: ::std::option::Option::Some(::std::string::String::from(name)),
            ..::std::default::Default::default()
        },
    };
    let rest = if without_default.contains(type_name) {
        let mut fields = Vec::new();
        for f in &root.fields {
            if f.json_name == "spec" || f.json_name == "metadata" {
                continue;
            }
            if !f.optional && super::types::lacks_default(&f.ty, &without_default) {
                return quote!();
            }
            let n = ident(&f.rust_name);
            fields.push(quote!(#n: ::std::default::Default::default(),));
        }
        if let Some(unknown) = &root.unknown_fields {
            let n = ident(unknown);
            fields.push(quote!(#n: ::std::default::Default::default(),));
        }
        quote!(#(#fields)*)
    } else {
        quote!(..::std::default::Default::default())
    };
    match spec {
        Some(f) => {
            let ty = super::ty_tokens(&f.ty, &quote!(super::types::));
            let n = ident(&f.rust_name);
            // The parameter is named like the field, so a required spec is shorthand.
            let value = if f.optional {
                let spec = super::types::present(f, quote!(spec));
                quote!(#n: #spec,)
            } else if f.rust_name == "spec" {
                quote!(spec,)
            } else {
                quote!(#n: spec,)
            };
            let doc =
                format!(" A `{kind_name}` named `name` with `spec`; everything else default.");
            quote! {
                #[doc = #doc]
                pub fn new(name: &str, spec: #ty) -> Self {
                    Self {
                        #meta
                        #value
                        #rest
                    }
                }
            }
        }
        None => {
            let doc = format!(" A `{kind_name}` named `name`; everything else default.");
            quote! {
                #[doc = #doc]
                pub fn new(name: &str) -> Self {
                    Self {
                        #meta
                        #rest
                    }
                }
            }
        }
    }
}

/// The `ResourceInfo` constant expression.
pub fn resource_info(group: &Group, version: &Version, kind: &Kind) -> TokenStream {
    let n = &kind.names;
    let (group_name, version_name, kind_name) = (&group.name, &version.name, &n.kind);
    let (list_kind, plural, singular) = (&n.list_kind, &n.plural, &n.singular);
    let short_names = &n.short_names;
    let categories = &n.categories;
    let namespaced = kind.scope == Scope::Namespaced;
    let status = kind.status_subresource;
    let scale = match &kind.scale {
        Some(s) => {
            let spec = &s.spec_replicas_path;
            let status = &s.status_replicas_path;
            let selector = option_str(s.label_selector_path.as_deref());
            quote! {
                ::std::option::Option::Some(::kubegen_runtime::types::ScaleSubresource {
                    spec_replicas_path: #spec,
                    status_replicas_path: #status,
                    label_selector_path: #selector,
                })
            }
        }
        None => quote!(::std::option::Option::None),
    };
    let columns = kind.printer_columns.iter().map(printer_column);
    let (served, storage, deprecated) = (kind.served, kind.storage, kind.deprecated);
    let deprecation_warning = option_str(kind.deprecation_warning.as_deref());
    quote! {
        ::kubegen_runtime::types::ResourceInfo {
            group: #group_name,
            version: #version_name,
            kind: #kind_name,
            list_kind: #list_kind,
            plural: #plural,
            singular: #singular,
            short_names: &[#(#short_names),*],
            categories: &[#(#categories),*],
            namespaced: #namespaced,
            status_subresource: #status,
            scale_subresource: #scale,
            printer_columns: &[#(#columns),*],
            served: #served,
            storage: #storage,
            deprecated: #deprecated,
            deprecation_warning: #deprecation_warning,
        }
    }
}

/// One `PrinterColumn` expression.
pub fn printer_column(c: &PrinterColumn) -> TokenStream {
    let (name, type_, json_path, priority) = (&c.name, &c.type_, &c.json_path, c.priority);
    let format = option_str(c.format.as_deref());
    let description = option_str(c.description.as_deref());
    quote! {
        ::kubegen_runtime::types::PrinterColumn {
            name: #name,
            type_: #type_,
            format: #format,
            description: #description,
            priority: #priority,
            json_path: #json_path,
        }
    }
}

fn option_str(value: Option<&str>) -> TokenStream {
    match value {
        Some(v) => quote!(::std::option::Option::Some(#v)),
        None => quote!(::std::option::Option::None),
    }
}
