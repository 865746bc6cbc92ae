//! Informers: `informers` (the `SharedInformerFactory`), `informers::<group>` (a
//! group's versions), `informers::<group>::<version>` and one module per kind with its
//! typed informer. Only kinds that can be listed and watched have one, as informer-gen
//! decides.
//!
//! The generated factory wraps the runtime's `InformerFactory`: one shared informer per
//! kind, options (namespace, list-option tweak, per-kind resync, transform) from the
//! runtime's `FactoryOptions`, and `for_resource(gvr)` that creates the informer of any
//! kind of this tree on request, as client-go's generated `ForResource` does.

use proc_macro2::TokenStream;
use quote::quote;

use super::listers::{group_has_informers, version_has_informers};
use super::modules::top_level_allows;
use super::{
    cache_type, group_type, group_version_text, group_version_type, has_informer, ident,
    kind_accessor, kind_module, kind_stem, kind_type, supers, Module,
};
use crate::model::{Api, Group, Kind, Version};

/// The `informers` module: the `SharedInformerFactory`.
pub fn informers_module(api: &Api) -> Module {
    let docs = vec![
        "The shared informer factory of this tree: one shared informer per kind, reached"
            .to_owned(),
        "by group and version (`factory.samplecontroller().v1alpha1().foos()`).".to_owned(),
    ];
    let f = quote!(::kubegen_runtime::cache::factory);
    let groups: Vec<&Group> = api
        .groups
        .iter()
        .filter(|g| group_has_informers(g))
        .collect();
    let accessors = groups.iter().map(|g| {
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
    let known: Vec<TokenStream> = groups
        .iter()
        .flat_map(|g| {
            g.versions.iter().flat_map(move |v| {
                v.kinds.iter().filter(|k| has_informer(k)).map(move |k| {
                    let (gm, vm, acc) = (ident(&g.module), ident(&v.module), kind_accessor(k));
                    let (gn, vn, plural) = (&g.name, &v.name, &k.names.plural);
                    quote! {
                        if key == (#gn, #vn, #plural) {
                            let _ = self.#gm().#vm().#acc().informer();
                        }
                    }
                })
            })
        })
        .collect();
    let create_known = (!known.is_empty()).then(|| {
        quote! {
            let key = (gvr.group.as_str(), gvr.version.as_str(), gvr.resource.as_str());
            #(#known)*
        }
    });
    let items = quote! {
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

            /// This tree's accessors over a factory shared with another generated tree
            /// (another tree's `factory()` and `stop_token()`, e.g. the built-in API's
            /// from `kubegen-kubernetes`): informers are created once per type in the
            /// shared factory, and one `start`, `wait_for_cache_sync` or `shutdown` on
            /// either acts on the informers of both.
            pub fn from_shared(factory: #f::InformerFactory, stop: ::kubegen_runtime::tokio_util::sync::CancellationToken) -> Self {
                Self { factory, stop }
            }

            /// The runtime factory underneath.
            pub fn factory(&self) -> &#f::InformerFactory {
                &self.factory
            }

            /// The token that stops every informer of this factory (see `from_shared`).
            pub fn stop_token(&self) -> &::kubegen_runtime::tokio_util::sync::CancellationToken {
                &self.stop
            }

            #(#accessors)*

            /// Starts every informer requested so far and not started yet; informers
            /// requested later need another `start`. They run until `shutdown`.
            pub fn start(&self) {
                self.factory.start(&self.stop);
            }

            /// Waits until every started informer has synced (or the factory shuts down);
            /// returns each informer's name (`resource.group`, as client-go 1.36 reports
            /// it) with whether it synced.
            pub async fn wait_for_cache_sync(&self) -> ::std::collections::BTreeMap<::std::string::String, bool> {
                self.factory.wait_for_cache_sync_by_name(&self.stop).await
            }

            /// Stops every informer and waits for them to end; later `start`s do nothing.
            pub async fn shutdown(&self) {
                self.stop.cancel();
                self.factory.shutdown().await;
            }

            /// The informer of a group/version/resource, type-erased; kinds of this tree
            /// get their informer created on request, others must exist already.
            #[inline]
            pub fn for_resource(
                &self,
                gvr: &::kubegen_runtime::object::GroupVersionResource,
            ) -> ::std::result::Result<#f::GenericInformer, #f::FactoryError> {
                #create_known
                self.factory.for_resource(gvr)
            }
        }
    };
    Module::new("informers", docs, items)
        .attrs(top_level_allows())
        .children(groups.into_iter().map(group_module))
}

/// `informers::<group>`: the group's versions.
pub fn group_module(group: &Group) -> Module {
    let docs = vec![format!(
        "Informers of the `{}` API group, one module per version.",
        group.name
    )];
    let f = quote!(::kubegen_runtime::cache::factory);
    let ty = group_type(group, "Informers");
    let ty_doc = format!(" Informers of the `{}` group, by version.", group.name);
    let versions: Vec<&Version> = group
        .versions
        .iter()
        .filter(|v| version_has_informers(v))
        .collect();
    let accessors = versions.iter().map(|v| {
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
    let items = quote! {
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
    };
    Module::new(group.module.clone(), docs, items)
        .children(versions.into_iter().map(|v| version_module(group, v)))
}

/// `informers::<group>::<version>`: the version's informers, a module per kind.
pub fn version_module(group: &Group, version: &Version) -> Module {
    let gv = group_version_text(group, version);
    let docs = vec![format!("Typed informers of `{gv}`.")];
    let f = quote!(::kubegen_runtime::cache::factory);
    let ty = group_version_type(group, version, "Informers");
    let ty_doc = format!(" Informers of `{gv}`, one per kind.");
    let kinds: Vec<&Kind> = version.kinds.iter().filter(|k| has_informer(k)).collect();
    let accessors = kinds.iter().map(|k| {
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
    let uses = kinds.iter().map(|k| {
        let m = ident(&kind_module(k));
        quote!(pub use self::#m::*;)
    });
    let items = quote! {
        #(#uses)*

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
    };
    Module::new(version.module.clone(), docs, items).children(kinds.iter().map(|k| {
        Module::new(
            kind_module(k),
            vec![format!(
                "The shared informer of `{}` (`{gv}`).",
                k.names.kind
            )],
            kind_informer(group, version, k),
        )
    }))
}

/// The typed informer of one kind: its shared informer and a typed lister. A kind with a
/// compact mirror caches the mirror (see [`super::compact`]) and also offers an informer
/// of its own type, `k8s_openapi_informer()`.
pub fn kind_informer(group: &Group, version: &Version, kind: &Kind) -> TokenStream {
    let stem = kind_stem(kind);
    let ty = ident(&format!("{stem}Informer"));
    let lister = ident(&format!("{stem}Lister"));
    let obj = cache_type(group, version, kind, 4);
    let (gm, vm) = (ident(&group.module), ident(&version.module));
    let root = supers(4);
    let f = quote!(::kubegen_runtime::cache::factory);
    let doc = format!(
        " The shared informer of `{}` and a lister over its cache.",
        kind.names.kind
    );
    let own_type = own_type_accessors(group, version, kind);
    let informer = if super::clientset::json_only_wire(kind) {
        ident("json_informer")
    } else if super::compact::has_compact(kind) {
        // Every compact mirror of a kind has a generated protobuf decoder.
        ident("generated_informer")
    } else {
        ident("informer")
    };
    let cached = if super::compact::has_compact(kind) {
        quote! {
            /// The shared informer (created on first use; started by the factory's
            /// `start`). It caches the kind's compact mirror: the same fields, with every
            /// optional struct boxed, decoded from protobuf by its generated decoder.
        }
    } else {
        quote! {
            /// The shared informer (created on first use; started by the factory's
            /// `start`).
        }
    };
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

            #cached
            #[inline]
            pub fn informer(&self) -> ::kubegen_runtime::cache::informer::SharedIndexInformer<#obj> {
                self.factory.#informer::<#obj>()
            }

            /// A lister over the informer's cache.
            #[inline]
            pub fn lister(&self) -> #root listers::#gm::#vm::#lister {
                #root listers::#gm::#vm::#lister::new(self.informer().lister())
            }

            #own_type
        }
    }
}

/// A kind with a compact mirror: the informer and lister of the kind's own type (the
/// opt-out from the compact cache), and the earlier names of the compact ones.
fn own_type_accessors(group: &Group, version: &Version, kind: &Kind) -> Option<TokenStream> {
    let compact = super::compact::compact_type(group, version, kind, 4)?;
    let own = kind_type(group, version, kind, 4);
    let own_name = own.to_string().replace(' ', "");
    let own_name = own_name
        .trim_start_matches("::kubegen_runtime")
        .trim_start_matches("::");
    let informer_doc = format!(" The shared informer of the kind's own type, `{own_name}`.");
    Some(quote! {
        #[doc = #informer_doc]
        /// For code that must cache that type rather than the compact mirror
        /// `informer()` caches. A separate informer with its own watch: use one or the
        /// other.
        #[inline]
        pub fn k8s_openapi_informer(&self) -> ::kubegen_runtime::cache::informer::SharedIndexInformer<#own> {
            self.factory.informer::<#own>()
        }

        /// A lister over `k8s_openapi_informer()`'s cache.
        #[inline]
        pub fn k8s_openapi_lister(&self) -> ::kubegen_runtime::cache::lister::Lister<#own> {
            self.k8s_openapi_informer().lister()
        }

        /// The same informer as `informer()`.
        #[deprecated(note = "`informer()` caches the compact mirror now")]
        #[inline]
        pub fn compact_informer(&self) -> ::kubegen_runtime::cache::informer::SharedIndexInformer<#compact> {
            self.informer()
        }

        /// A runtime lister over `informer()`'s cache.
        #[deprecated(note = "`lister()` reads the compact mirror now")]
        #[inline]
        pub fn compact_lister(&self) -> ::kubegen_runtime::cache::lister::Lister<#compact> {
            self.informer().lister()
        }
    })
}
