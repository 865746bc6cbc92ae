//! The clientset: `clientset/mod.rs` (the [`Clientset`]-to-be with one accessor per
//! group/version), `clientset/<group>/mod.rs`, and `clientset/<group>/<version>.rs` (the
//! group/version client and one typed client per kind).
//!
//! Generated clients are thin: every verb delegates to the runtime's `ResourceClient`, so
//! URLs, options, errors and decoding are the runtime's. A kind gets the verbs its scope
//! and subresources allow: `*_status` only with the `status` subresource; namespaced
//! kinds are reached with `foos(namespace)` (`""` = all namespaces), cluster-scoped ones
//! with `foos()`. Kinds whose CRD enables `subresources.scale` (and only those) get
//! `get_scale`, `update_scale` and `patch_scale`, which speak `autoscaling/v1` `Scale`.
//!
//! [`Clientset`]: self

use proc_macro2::TokenStream;
use quote::quote;

use super::{
    group_version_accessor, group_version_text, group_version_type, ident, inner_doc_attrs,
    kind_accessor, kind_stem, kind_type,
};
use crate::model::{Api, Group, Kind, Scope, Version};

/// `clientset/mod.rs`: the `Clientset`.
pub fn clientset_mod(api: &Api) -> TokenStream {
    let doc = inner_doc_attrs(&[
        "The typed clientset: one client per group/version, one typed client per kind, all"
            .to_owned(),
        "over the runtime's `ResourceClient` on one `kube::Client`.".to_owned(),
    ]);
    let mods = api.groups.iter().map(|g| {
        let m = ident(&g.module);
        quote!(pub mod #m;)
    });
    let accessors = api.groups.iter().flat_map(|g| {
        g.versions.iter().map(move |v| {
            let name = group_version_accessor(g, v);
            let (gm, vm) = (ident(&g.module), ident(&v.module));
            let ty = group_version_type(g, v, "Client");
            let doc = format!(" The `{}` client.", group_version_text(g, v));
            quote! {
                #[doc = #doc]
                pub fn #name(&self) -> self::#gm::#vm::#ty {
                    self::#gm::#vm::#ty::new(::std::clone::Clone::clone(&self.client))
                }
            }
        })
    });
    quote! {
        #doc

        #(#mods)*

        /// Clients for every group/version of this tree, sharing one `kube::Client`.
        /// Cloning is cheap.
        #[derive(::std::clone::Clone)]
        pub struct Clientset {
            client: ::kubegen_runtime::kube::Client,
        }

        impl ::std::fmt::Debug for Clientset {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct("Clientset").finish_non_exhaustive()
            }
        }

        impl Clientset {
            /// A clientset over `client` (transport, authentication and default namespace).
            pub fn new(client: ::kubegen_runtime::kube::Client) -> Self {
                Self { client }
            }

            /// The `kube::Client` every client of this clientset uses.
            pub fn client(&self) -> &::kubegen_runtime::kube::Client {
                &self.client
            }

            #(#accessors)*
        }
    }
}

/// `clientset/<group>/mod.rs`.
pub fn group_mod(group: &Group) -> TokenStream {
    let doc = inner_doc_attrs(&[format!(
        "Clients of the `{}` API group, one module per version.",
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

/// `clientset/<group>/<version>.rs`.
pub fn version_file(group: &Group, version: &Version) -> TokenStream {
    let gv = group_version_text(group, version);
    let doc = inner_doc_attrs(&[format!(
        "Typed clients of `{gv}`: [`{}`] and one client per kind.",
        group_version_type(group, version, "Client")
    )]);
    let client = group_version_type(group, version, "Client");
    let client_doc = format!(" The `{gv}` client: one typed client per kind. Cloning is cheap.");
    let accessors = version.kinds.iter().map(kind_accessor_fn);
    let kinds = version.kinds.iter().map(|k| kind_client(group, version, k));
    quote! {
        #doc

        #[doc = #client_doc]
        #[derive(::std::clone::Clone)]
        pub struct #client {
            client: ::kubegen_runtime::kube::Client,
        }

        impl ::std::fmt::Debug for #client {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(::std::stringify!(#client)).finish_non_exhaustive()
            }
        }

        impl #client {
            /// A client over `client`.
            pub fn new(client: ::kubegen_runtime::kube::Client) -> Self {
                Self { client }
            }

            #(#accessors)*
        }

        #(#kinds)*
    }
}

fn kind_accessor_fn(kind: &Kind) -> TokenStream {
    let name = kind_accessor(kind);
    let ty = ident(&format!("{}Client", kind_stem(kind)));
    let k = &kind.names.kind;
    match kind.scope {
        Scope::Namespaced => {
            let doc = format!(" `{k}` objects in `namespace` (`\"\"`: in all namespaces).");
            quote! {
                #[doc = #doc]
                pub fn #name(&self, namespace: &str) -> #ty {
                    #ty::namespaced(::std::clone::Clone::clone(&self.client), namespace)
                }
            }
        }
        Scope::Cluster => {
            let doc = format!(" `{k}` objects (cluster-scoped).");
            quote! {
                #[doc = #doc]
                pub fn #name(&self) -> #ty {
                    #ty::new(::std::clone::Clone::clone(&self.client))
                }
            }
        }
    }
}

/// The typed client of one kind.
pub fn kind_client(group: &Group, version: &Version, kind: &Kind) -> TokenStream {
    let k = &kind.names.kind;
    let ty = ident(&format!("{}Client", kind_stem(kind)));
    let obj = kind_type(group, version, kind, 3);
    let c = quote!(::kubegen_runtime::client);
    let result = |t: TokenStream| quote!(::std::result::Result<#t, #c::Error>);
    let doc = format!(
        " The typed client of `{k}` (`{}`): every verb delegates to `ResourceClient`.",
        kind.names.plural
    );
    let ns_doc =
        format!(" `{k}` objects in `namespace`; `\"\"` means all namespaces (list, watch).");
    let ctor = match kind.scope {
        Scope::Namespaced => quote! {
            #[doc = #ns_doc]
            pub fn namespaced(client: ::kubegen_runtime::kube::Client, namespace: &str) -> Self {
                let inner = if namespace.is_empty() {
                    #c::ResourceClient::all(client)
                } else {
                    #c::ResourceClient::namespaced(client, namespace)
                };
                Self { inner }
            }
        },
        Scope::Cluster => quote! {
            /// The client of this cluster-scoped kind.
            pub fn new(client: ::kubegen_runtime::kube::Client) -> Self {
                Self { inner: #c::ResourceClient::cluster(client) }
            }
        },
    };
    let r_obj = result(obj.clone());
    let r_list = result(quote!(#c::ObjectList<#obj>));
    let r_watch = result(quote!(#c::WatchStream<#obj>));
    let r_deleted = result(quote!(#c::Deleted<#obj>));
    let r_deleted_list = result(quote!(#c::Deleted<#c::ObjectList<#obj>>));
    let status = kind.status_subresource.then(|| {
        quote! {
            /// Replaces the object's status (`PUT <name>/status`); other changes are ignored.
            pub async fn update_status(&self, obj: &#obj, params: &#c::WriteParams) -> #r_obj {
                self.inner.update_status(obj, params).await
            }

            /// Patches the object's status.
            pub async fn patch_status(&self, name: &str, patch: &#c::Patch, params: &#c::PatchParams) -> #r_obj {
                self.inner.patch_status(name, patch, params).await
            }

            /// Server-side apply of `obj`'s status (`params.field_manager` is required).
            pub async fn apply_status(&self, name: &str, obj: &#obj, params: &#c::PatchParams) -> #r_obj {
                self.inner.apply_status(name, obj, params).await
            }
        }
    });
    let scale_ty = quote!(::kubegen_runtime::k8s_openapi::api::autoscaling::v1::Scale);
    let r_scale = result(scale_ty.clone());
    let scale = kind.scale.is_some().then(|| {
        quote! {
            /// Gets the object's `Scale` (`GET <name>/scale`): desired replicas, observed
            /// replicas and label selector.
            pub async fn get_scale(&self, name: &str) -> #r_scale {
                self.inner.get_scale(name).await
            }

            /// Sets the object's desired replicas (`PUT <name>/scale`); a stale
            /// resourceVersion in `scale` is a 409 Conflict.
            pub async fn update_scale(&self, name: &str, scale: &#scale_ty, params: &#c::WriteParams) -> #r_scale {
                self.inner.update_scale(name, scale, params).await
            }

            /// Patches the object's `Scale` (`PATCH <name>/scale`).
            pub async fn patch_scale(&self, name: &str, patch: &#c::Patch, params: &#c::PatchParams) -> #r_scale {
                self.inner.patch_scale(name, patch, params).await
            }
        }
    });
    quote! {
        #[doc = #doc]
        #[derive(::std::clone::Clone, ::std::fmt::Debug)]
        pub struct #ty {
            inner: #c::ResourceClient<#obj>,
        }

        impl #ty {
            #ctor

            /// The runtime client underneath (URLs, and verbs not generated here).
            pub fn resource_client(&self) -> &#c::ResourceClient<#obj> {
                &self.inner
            }

            /// Gets one object by name.
            pub async fn get(&self, name: &str) -> #r_obj {
                self.inner.get(name).await
            }

            /// Lists one page (all objects unless `opts.limit` is set).
            pub async fn list(&self, opts: &#c::ListOptions) -> #r_list {
                self.inner.list(opts).await
            }

            /// Watches for changes.
            pub async fn watch(&self, opts: &#c::ListOptions) -> #r_watch {
                self.inner.watch(opts).await
            }

            /// Creates an object.
            pub async fn create(&self, obj: &#obj, params: &#c::WriteParams) -> #r_obj {
                self.inner.create(obj, params).await
            }

            /// Replaces an object; a stale resourceVersion is a 409 Conflict.
            pub async fn update(&self, obj: &#obj, params: &#c::WriteParams) -> #r_obj {
                self.inner.update(obj, params).await
            }

            #status

            #scale

            /// Patches an object (merge, JSON or apply patch).
            pub async fn patch(&self, name: &str, patch: &#c::Patch, params: &#c::PatchParams) -> #r_obj {
                self.inner.patch(name, patch, params).await
            }

            /// Server-side apply of `obj` (`params.field_manager` is required).
            pub async fn apply(&self, name: &str, obj: &#obj, params: &#c::PatchParams) -> #r_obj {
                self.inner.apply(name, obj, params).await
            }

            /// Deletes an object.
            pub async fn delete(&self, name: &str, opts: &#c::DeleteOptions) -> #r_deleted {
                self.inner.delete(name, opts).await
            }

            /// Deletes every object `list` selects.
            pub async fn delete_collection(&self, opts: &#c::DeleteOptions, list: &#c::ListOptions) -> #r_deleted_list {
                self.inner.delete_collection(opts, list).await
            }
        }
    }
}
