//! Informers: `informers/mod.rs` (the `SharedInformerFactory`), `informers/<group>/mod.rs`
//! (a group's versions) and `informers/<group>/<version>.rs` (one typed informer per kind).
//!
//! The generated factory wraps the runtime's `InformerFactory`: one shared informer per
//! kind, options (namespace, list-option tweak, per-kind resync, transform) from the
//! runtime's `FactoryOptions`, and `for_resource(gvr)` that creates the informer of any
//! kind of this tree on request, as client-go's generated `ForResource` does.

use proc_macro2::TokenStream;
use quote::quote;

use super::{
    group_type, group_version_text, group_version_type, ident, inner_doc_attrs, kind_accessor,
    kind_stem, kind_type,
};
use crate::model::{Api, Group, Kind, Version};

/// `informers/mod.rs`: the `SharedInformerFactory`.
pub fn informers_mod(api: &Api) -> TokenStream {
    let doc = inner_doc_attrs(&[
        "The shared informer factory of this tree: one shared informer per kind, reached"
            .to_owned(),
        "by group and version (`factory.samplecontroller().v1alpha1().foos()`).".to_owned(),
    ]);
    let f = quote!(::kubegen_runtime::cache::factory);
    let mods = api.groups.iter().map(|g| {
        let m = ident(&g.module);
        quote!(pub mod #m;)
    });
    let accessors = api.groups.iter().map(|g| {
        let m = ident(&g.module);
        let ty = group_type(g, "Informers");
        let doc = format!(" Informers of the `{}` group.", g.name);
        quote! {
            #[doc = #doc]
            pub fn #m(&self) -> self::#m::#ty {
                self::#m::#ty::new(::std::clone::Clone::clone(&self.factory))
            }
        }
    });
    let known = api.groups.iter().flat_map(|g| {
        g.versions.iter().flat_map(move |v| {
            v.kinds.iter().map(move |k| {
                let (gm, vm, acc) = (ident(&g.module), ident(&v.module), kind_accessor(k));
                let (gn, vn, plural) = (&g.name, &v.name, &k.names.plural);
                quote! {
                    if gvr.group == #gn && gvr.version == #vn && gvr.resource == #plural {
                        let _ = self.#gm().#vm().#acc().informer();
                    }
                }
            })
        })
    });
    quote! {
        #doc

        #(#mods)*

        /// One shared informer per kind of this tree, started and stopped together.
        /// Cloning gives another handle to the same factory.
        #[derive(::std::clone::Clone, ::std::fmt::Debug)]
        pub struct SharedInformerFactory {
            factory: #f::InformerFactory,
            stop: ::kubegen_runtime::tokio_util::sync::CancellationToken,
        }

        impl SharedInformerFactory {
            /// A factory listing and watching through `clientset` in all namespaces, with
            /// `default_resync` as every informer's resync period.
            pub fn new(clientset: super::clientset::Clientset, default_resync: ::std::time::Duration) -> Self {
                Self::with_options(clientset, #f::FactoryOptions::new(default_resync))
            }

            /// A factory with options: namespace, list-option tweak, per-kind resync
            /// (`custom_resync::<Foo>(period)`) and transform.
            pub fn with_options(clientset: super::clientset::Clientset, options: #f::FactoryOptions) -> Self {
                Self {
                    factory: #f::InformerFactory::new(::std::clone::Clone::clone(clientset.client()), options),
                    stop: ::kubegen_runtime::tokio_util::sync::CancellationToken::new(),
                }
            }

            /// The runtime factory underneath.
            pub fn factory(&self) -> &#f::InformerFactory {
                &self.factory
            }

            #(#accessors)*

            /// Starts every informer requested so far and not started yet; informers
            /// requested later need another `start`. They run until `shutdown`.
            pub fn start(&self) {
                self.factory.start(&self.stop);
            }

            /// Waits until every started informer has synced (or the factory shuts down);
            /// returns each informer's type name with whether it synced.
            pub async fn wait_for_cache_sync(&self) -> ::std::collections::BTreeMap<&'static str, bool> {
                self.factory.wait_for_cache_sync(&self.stop).await
            }

            /// Stops every informer and waits for them to end; later `start`s do nothing.
            pub async fn shutdown(&self) {
                self.stop.cancel();
                self.factory.shutdown().await;
            }

            /// The informer of a group/version/resource, type-erased; kinds of this tree
            /// get their informer created on request, others must exist already.
            pub fn for_resource(
                &self,
                gvr: &::kubegen_runtime::object::GroupVersionResource,
            ) -> ::std::result::Result<#f::GenericInformer, #f::FactoryError> {
                #(#known)*
                self.factory.for_resource(gvr)
            }
        }
    }
}

/// `informers/<group>/mod.rs`: the group's versions.
pub fn group_mod(group: &Group) -> TokenStream {
    let doc = inner_doc_attrs(&[format!(
        "Informers of the `{}` API group, one module per version.",
        group.name
    )]);
    let f = quote!(::kubegen_runtime::cache::factory);
    let ty = group_type(group, "Informers");
    let ty_doc = format!(" Informers of the `{}` group, by version.", group.name);
    let mods = group.versions.iter().map(|v| {
        let m = ident(&v.module);
        quote!(pub mod #m;)
    });
    let accessors = group.versions.iter().map(|v| {
        let m = ident(&v.module);
        let vty = group_version_type(group, v, "Informers");
        let doc = format!(" Informers of `{}`.", group_version_text(group, v));
        quote! {
            #[doc = #doc]
            pub fn #m(&self) -> self::#m::#vty {
                self::#m::#vty::new(::std::clone::Clone::clone(&self.factory))
            }
        }
    });
    quote! {
        #doc

        #(#mods)*

        #[doc = #ty_doc]
        #[derive(::std::clone::Clone, ::std::fmt::Debug)]
        pub struct #ty {
            factory: #f::InformerFactory,
        }

        impl #ty {
            /// The group's informers in `factory`.
            pub fn new(factory: #f::InformerFactory) -> Self {
                Self { factory }
            }

            #(#accessors)*
        }
    }
}

/// `informers/<group>/<version>.rs`: one typed informer per kind.
pub fn version_file(group: &Group, version: &Version) -> TokenStream {
    let gv = group_version_text(group, version);
    let doc = inner_doc_attrs(&[format!("Typed informers of `{gv}`.")]);
    let f = quote!(::kubegen_runtime::cache::factory);
    let ty = group_version_type(group, version, "Informers");
    let ty_doc = format!(" Informers of `{gv}`, one per kind.");
    let accessors = version.kinds.iter().map(|k| {
        let acc = kind_accessor(k);
        let kty = ident(&format!("{}Informer", kind_stem(k)));
        let doc = format!(" The shared informer of `{}`.", k.names.kind);
        quote! {
            #[doc = #doc]
            pub fn #acc(&self) -> #kty {
                #kty::new(::std::clone::Clone::clone(&self.factory))
            }
        }
    });
    let kinds = version
        .kinds
        .iter()
        .map(|k| kind_informer(group, version, k));
    quote! {
        #doc

        #[doc = #ty_doc]
        #[derive(::std::clone::Clone, ::std::fmt::Debug)]
        pub struct #ty {
            factory: #f::InformerFactory,
        }

        impl #ty {
            /// The version's informers in `factory`.
            pub fn new(factory: #f::InformerFactory) -> Self {
                Self { factory }
            }

            #(#accessors)*
        }

        #(#kinds)*
    }
}

/// The typed informer of one kind: its shared informer and a typed lister.
pub fn kind_informer(group: &Group, version: &Version, kind: &Kind) -> TokenStream {
    let stem = kind_stem(kind);
    let ty = ident(&format!("{stem}Informer"));
    let lister = ident(&format!("{stem}Lister"));
    let obj = kind_type(group, version, kind, 3);
    let (gm, vm) = (ident(&group.module), ident(&version.module));
    let f = quote!(::kubegen_runtime::cache::factory);
    let doc = format!(
        " The shared informer of `{}` and a lister over its cache.",
        kind.names.kind
    );
    quote! {
        #[doc = #doc]
        #[derive(::std::clone::Clone, ::std::fmt::Debug)]
        pub struct #ty {
            factory: #f::InformerFactory,
        }

        impl #ty {
            /// The kind's informer in `factory`.
            pub fn new(factory: #f::InformerFactory) -> Self {
                Self { factory }
            }

            /// The shared informer (created on first use; started by the factory's
            /// `start`).
            pub fn informer(&self) -> ::kubegen_runtime::cache::informer::SharedIndexInformer<#obj> {
                self.factory.informer::<#obj>()
            }

            /// A lister over the informer's cache.
            pub fn lister(&self) -> super::super::super::listers::#gm::#vm::#lister {
                super::super::super::listers::#gm::#vm::#lister::new(self.informer().lister())
            }
        }
    }
}
