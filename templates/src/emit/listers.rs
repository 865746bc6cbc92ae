//! Listers: `listers`, `listers::<group>`, `listers::<group>::<version>` and one module
//! per kind with its typed lister (and a namespace lister for namespaced kinds). Only
//! kinds that can be listed and watched have one, as lister-gen decides.
//!
//! Generated listers wrap the runtime's `Lister`/`NamespaceLister`: results are the
//! informer cache's own `Arc`s, misses are NotFound errors worded as client-go's
//! (`foo "x" not found`), and nothing here contacts the API server.

use proc_macro2::TokenStream;
use quote::quote;

use super::modules::top_level_allows;
use super::{
    cache_type, group_version_text, has_informer, ident, kind_accessor, kind_module, kind_stem,
    Module,
};
use crate::model::{Api, Group, Kind, Scope, Version};

/// Whether a version has a kind with an informer (and so a lister).
pub fn version_has_informers(version: &Version) -> bool {
    version.kinds.iter().any(has_informer)
}

/// Whether a group has a kind with an informer.
pub fn group_has_informers(group: &Group) -> bool {
    group.versions.iter().any(version_has_informers)
}

/// The `listers` module.
pub fn listers_module(api: &Api) -> Module {
    let docs =
        vec!["Typed listers over informer caches, one module per group and version.".to_owned()];
    Module::new("listers", docs, quote!())
        .attrs(top_level_allows())
        .children(
            api.groups
                .iter()
                .filter(|g| group_has_informers(g))
                .map(group_module),
        )
}

/// `listers::<group>`.
pub fn group_module(group: &Group) -> Module {
    let docs = vec![format!(
        "Listers of the `{}` API group, one module per version.",
        group.name
    )];
    Module::new(group.module.clone(), docs, quote!()).children(
        group
            .versions
            .iter()
            .filter(|v| version_has_informers(v))
            .map(|v| version_module(group, v)),
    )
}

/// `listers::<group>::<version>`: a module per kind, re-exported.
pub fn version_module(group: &Group, version: &Version) -> Module {
    let gv = group_version_text(group, version);
    let docs = vec![format!(
        "Listers of `{gv}`: one per kind, reading an informer's cache."
    )];
    let kinds: Vec<&Kind> = version.kinds.iter().filter(|k| has_informer(k)).collect();
    let uses = kinds.iter().map(|k| {
        let m = ident(&kind_module(k));
        quote!(pub use self::#m::*;)
    });
    Module::new(version.module.clone(), docs, quote!(#(#uses)*)).children(kinds.iter().map(|k| {
        Module::new(
            kind_module(k),
            vec![format!("The lister of `{}` (`{gv}`).", k.names.kind)],
            kind_lister(group, version, k),
        )
    }))
}

/// The lister (and namespace lister) of one kind.
pub fn kind_lister(group: &Group, version: &Version, kind: &Kind) -> TokenStream {
    let stem = kind_stem(kind);
    let k = &kind.names.kind;
    let lister = ident(&format!("{stem}Lister"));
    let obj = cache_type(group, version, kind, 4);
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
