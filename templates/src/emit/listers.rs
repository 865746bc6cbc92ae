//! Listers: `listers/mod.rs`, `listers/<group>/mod.rs` and `listers/<group>/<version>.rs`
//! with one typed lister per kind (and a namespace lister for namespaced kinds).
//!
//! Generated listers wrap the runtime's `Lister`/`NamespaceLister`: results are the
//! informer cache's own `Arc`s, misses are NotFound errors worded as client-go's
//! (`foo "x" not found`), and nothing here contacts the API server.

use proc_macro2::TokenStream;
use quote::quote;

use super::{group_version_text, ident, inner_doc_attrs, kind_accessor, kind_stem, kind_type};
use crate::model::{Api, Group, Kind, Scope, Version};

/// `listers/mod.rs`.
pub fn listers_mod(api: &Api) -> TokenStream {
    let doc = inner_doc_attrs(&[
        "Typed listers over informer caches, one module per group and version.".to_owned(),
    ]);
    let mods = api.groups.iter().map(|g| {
        let m = ident(&g.module);
        quote!(pub mod #m;)
    });
    quote! {
        #doc
        #(#mods)*
    }
}

/// `listers/<group>/mod.rs`.
pub fn group_mod(group: &Group) -> TokenStream {
    let doc = inner_doc_attrs(&[format!(
        "Listers of the `{}` API group, one module per version.",
        group.name
    )]);
    let mods = group.versions.iter().map(|v| {
        let m = ident(&v.module);
        quote!(pub mod #m;)
    });
    quote! {
        #doc
        #(#mods)*
    }
}

/// `listers/<group>/<version>.rs`.
pub fn version_file(group: &Group, version: &Version) -> TokenStream {
    let doc = inner_doc_attrs(&[format!(
        "Listers of `{}`: one per kind, reading an informer's cache.",
        group_version_text(group, version)
    )]);
    let kinds = version.kinds.iter().map(|k| kind_lister(group, version, k));
    quote! {
        #doc
        #(#kinds)*
    }
}

/// The lister (and namespace lister) of one kind.
pub fn kind_lister(group: &Group, version: &Version, kind: &Kind) -> TokenStream {
    let stem = kind_stem(kind);
    let k = &kind.names.kind;
    let lister = ident(&format!("{stem}Lister"));
    let obj = kind_type(group, version, kind, 3);
    let cache = quote!(::kubegen_runtime::cache::lister);
    let arc = quote!(::std::sync::Arc<#obj>);
    let selector = quote!(::kubegen_runtime::labels::Selector);
    let err = quote!(::kubegen_runtime::errors::StatusError);
    let doc = format!(" Lists and gets `{k}` objects from an informer's cache.");
    let list_doc = format!(" The `{k}` objects in every namespace whose labels match `selector`.");
    let scoped = match kind.scope {
        Scope::Namespaced => {
            let ns_lister = ident(&format!("{stem}NamespaceLister"));
            let accessor = kind_accessor(kind);
            let accessor_doc = format!(" The `{k}` objects of one namespace.");
            let ns_doc = format!(" Lists and gets `{k}` objects of one namespace.");
            quote! {
                impl #lister {
                    #[doc = #accessor_doc]
                    pub fn #accessor(&self, namespace: &str) -> #ns_lister {
                        #ns_lister { lister: self.lister.namespaced(namespace) }
                    }
                }

                #[doc = #ns_doc]
                #[derive(::std::clone::Clone, ::std::fmt::Debug)]
                pub struct #ns_lister {
                    lister: #cache::NamespaceLister<#obj>,
                }

                impl #ns_lister {
                    /// The objects of this namespace whose labels match `selector`.
                    pub fn list(&self, selector: &#selector) -> ::std::vec::Vec<#arc> {
                        self.lister.list(selector)
                    }

                    /// The object `name` of this namespace; NotFound if it is not cached.
                    pub fn get(&self, name: &str) -> ::std::result::Result<#arc, #err> {
                        self.lister.get(name)
                    }
                }
            }
        }
        Scope::Cluster => quote! {
            impl #lister {
                /// The object `name`; NotFound if it is not cached.
                pub fn get(&self, name: &str) -> ::std::result::Result<#arc, #err> {
                    self.lister.get(name)
                }
            }
        },
    };
    quote! {
        #[doc = #doc]
        #[derive(::std::clone::Clone, ::std::fmt::Debug)]
        pub struct #lister {
            lister: #cache::Lister<#obj>,
        }

        impl #lister {
            /// A typed lister over the runtime's lister.
            pub fn new(lister: #cache::Lister<#obj>) -> Self {
                Self { lister }
            }

            #[doc = #list_doc]
            pub fn list(&self, selector: &#selector) -> ::std::vec::Vec<#arc> {
                self.lister.list(selector)
            }

            /// The runtime lister underneath.
            pub fn lister(&self) -> &#cache::Lister<#obj> {
                &self.lister
            }
        }

        #scoped
    }
}
