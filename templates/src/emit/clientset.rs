//! The clientset: `clientset` (the [`Clientset`]-to-be with one accessor per
//! group/version), `clientset::<group>`, `clientset::<group>::<version>` (the
//! group/version client) and `clientset::<group>::<version>::<kind>` (one typed client
//! per kind, in a file of its own, as code-generator does).
//!
//! Generated clients are thin: every verb delegates to the runtime's `ResourceClient`, so
//! URLs, options, errors and decoding are the runtime's. A kind's client has exactly the
//! verbs of its [`ClientTags`](crate::model::ClientTags) (`update_status` and
//! `patch_status` with `updateStatus`, `apply_status` with `applyStatus`, ...), plus its
//! extension methods: `GetScale`/`UpdateScale`/`PatchScale` on `scale` speak
//! `autoscaling/v1` `Scale` through the runtime's scale verbs, others go through the
//! runtime's generic subresource calls. Namespaced kinds are reached with
//! `foos(namespace)` (`""` = all namespaces), cluster-scoped ones with `foos()`.
//!
//! [`Clientset`]: self

use proc_macro2::TokenStream;
use quote::quote;

use super::modules::top_level_allows;
use super::{
    group_version_accessor, group_version_text, group_version_type, has_client, ident,
    kind_accessor, kind_module, kind_stem, kind_type, path_tokens, Module,
};
use crate::model::{Api, ExtensionMethod, Group, Kind, Scope, TypeRef, Verb, Version};

/// Whether a version has any typed client.
fn version_has_clients(version: &Version) -> bool {
    version.kinds.iter().any(has_client)
}

/// The `clientset` module: the `Clientset`.
pub fn clientset_module(api: &Api) -> Module {
    let docs = vec![
        "The typed clientset: one client per group/version, one typed client per kind, all"
            .to_owned(),
        "over the runtime's `ResourceClient` on one `kube::Client`.".to_owned(),
    ];
    let groups: Vec<&Group> = api
        .groups
        .iter()
        .filter(|g| g.versions.iter().any(version_has_clients))
        .collect();
    let accessors = groups.iter().flat_map(|g| {
        g.versions
            .iter()
            .filter(|v| version_has_clients(v))
            .map(move |v| {
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
    let items = quote! {
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
    };
    Module::new("clientset", docs, items)
        .attrs(top_level_allows())
        .children(groups.into_iter().map(group_module))
}

/// `clientset::<group>`.
pub fn group_module(group: &Group) -> Module {
    let docs = vec![format!(
        "Clients of the `{}` API group, one module per version.",
        group.name
    )];
    Module::new(group.module.clone(), docs, quote!()).children(
        group
            .versions
            .iter()
            .filter(|v| version_has_clients(v))
            .map(|v| version_module(group, v)),
    )
}

/// `clientset::<group>::<version>`: the group/version client, and a module per kind.
pub fn version_module(group: &Group, version: &Version) -> Module {
    let gv = group_version_text(group, version);
    let client = group_version_type(group, version, "Client");
    let docs = vec![format!(
        "Typed clients of `{gv}`: [`{client}`] and one client per kind."
    )];
    let client_doc = format!(" The `{gv}` client: one typed client per kind. Cloning is cheap.");
    let kinds: Vec<&Kind> = version.kinds.iter().filter(|k| has_client(k)).collect();
    let accessors = kinds.iter().map(|k| kind_accessor_fn(k));
    let uses = kinds.iter().map(|k| {
        let m = ident(&kind_module(k));
        quote!(pub use self::#m::*;)
    });
    let items = quote! {
        #(#uses)*

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
    };
    Module::new(version.module.clone(), docs, items).children(kinds.iter().map(|k| {
        Module::new(
            kind_module(k),
            vec![format!("The typed client of `{}` (`{gv}`).", k.names.kind)],
            kind_client(group, version, k),
        )
    }))
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

/// Whether a kind's clients and informers read JSON only (`ResourceClient<K, JsonOnly>`,
/// `InformerFactory::json_informer`): every kind that is not one of Kubernetes' own (no
/// OpenAPI definition of the built-in API), that is every custom resource. Their
/// protobuf decoder would be compiled in the user's crate for each type and never used.
pub fn json_only_wire(kind: &Kind) -> bool {
    kind.openapi.is_none()
}

/// The typed client of one kind: the verbs of its tags and its extension methods.
pub fn kind_client(group: &Group, version: &Version, kind: &Kind) -> TokenStream {
    let k = &kind.names.kind;
    let ty = ident(&format!("{}Client", kind_stem(kind)));
    let obj = kind_type(group, version, kind, 4);
    let c = quote!(::kubegen_runtime::client);
    let result = |t: TokenStream| quote!(::std::result::Result<#t, #c::Error>);
    let doc = format!(
        " The typed client of `{k}` (`{}`): every verb delegates to `ResourceClient`.",
        kind.names.plural
    );
    let ns_doc =
        format!(" `{k}` objects in `namespace`; `\"\"` means all namespaces (list, watch).");
    // Custom resources are read in JSON only (kube-apiserver has no protobuf for them),
    // and their clients compile no protobuf decoder (see `json_only_wire`).
    let (wire, json_only) = if json_only_wire(kind) {
        (quote!(, #c::JsonOnly), quote!(.json_only()))
    } else {
        (quote!(), quote!())
    };
    let namespaced_init = if json_only.is_empty() {
        quote!(Self { inner })
    } else {
        quote!(Self { inner: inner #json_only })
    };
    let ctor = match kind.scope {
        Scope::Namespaced => quote! {
            #[doc = #ns_doc]
            pub fn namespaced(client: ::kubegen_runtime::kube::Client, namespace: &str) -> Self {
                let inner = if namespace.is_empty() {
                    #c::ResourceClient::all(client)
                } else {
                    #c::ResourceClient::namespaced(client, namespace)
                };
                #namespaced_init
            }
        },
        Scope::Cluster => quote! {
            /// The client of this cluster-scoped kind.
            pub fn new(client: ::kubegen_runtime::kube::Client) -> Self {
                Self { inner: #c::ResourceClient::cluster(client) #json_only }
            }
        },
    };
    let r_obj = result(obj.clone());
    let r_list = result(quote!(#c::ObjectList<#obj>));
    let r_watch = result(quote!(#c::WatchStream<#obj>));
    let r_deleted = result(quote!(#c::Deleted<#obj>));
    let r_deleted_list = result(quote!(#c::Deleted<#c::ObjectList<#obj>>));
    // Kinds with a schema have an apply configuration (`applyconfigurations`).
    let apply_cfg = (kind.schema_json.is_some()
        || super::applyconfigurations::builtin_applies(kind))
    .then(|| {
        let root = super::supers(4);
        let (g, v) = (ident(&group.module), ident(&version.module));
        let ac = ident(&format!("{}ApplyConfiguration", kind_stem(kind)));
        quote!(#root applyconfigurations::#g::#v::#ac)
    });
    // Built-in apply configurations may sit behind a feature of the mounting crate.
    let gate = kind
        .openapi
        .as_ref()
        .and_then(|o| o.definitions.feature.as_deref())
        .map(|f| quote!(#[cfg(feature = #f)]));
    let verbs = Verb::ALL.iter().filter(|v| kind.client.has(**v)).map(|verb| match verb {
        Verb::Get => quote! {
            /// Gets one object by name.
            pub async fn get(&self, name: &str) -> #r_obj {
                self.inner.get(name).await
            }
        },
        Verb::List => quote! {
            /// Lists one page (all objects unless `opts.limit` is set).
            pub async fn list(&self, opts: &#c::ListOptions) -> #r_list {
                self.inner.list(opts).await
            }
        },
        Verb::Watch => quote! {
            /// Watches for changes.
            pub async fn watch(&self, opts: &#c::ListOptions) -> #r_watch {
                self.inner.watch(opts).await
            }
        },
        Verb::Create => quote! {
            /// Creates an object.
            pub async fn create(&self, obj: &#obj, params: &#c::WriteOptions) -> #r_obj {
                self.inner.create(obj, params).await
            }
        },
        Verb::Update => quote! {
            /// Replaces an object; a stale resourceVersion is a 409 Conflict.
            pub async fn update(&self, obj: &#obj, params: &#c::WriteOptions) -> #r_obj {
                self.inner.update(obj, params).await
            }
        },
        Verb::UpdateStatus => quote! {
            /// Replaces the object's status (`PUT <name>/status`); other changes are ignored.
            pub async fn update_status(&self, obj: &#obj, params: &#c::WriteOptions) -> #r_obj {
                self.inner.update_status(obj, params).await
            }

            /// Patches the object's status.
            pub async fn patch_status(&self, name: &str, patch: &#c::Patch, params: &#c::PatchOptions) -> #r_obj {
                self.inner.patch_status(name, patch, params).await
            }
        },
        Verb::ApplyStatus => {
            let typed = apply_cfg.as_ref().map(|ac| quote! {
                /// Server-side apply of an apply configuration to the status subresource:
                /// `opts.field_manager` owns exactly the status fields `cfg` sets.
                #gate
                pub async fn apply_status_config(&self, cfg: &#ac, opts: &::kubegen_runtime::apply::ApplyOptions) -> #r_obj {
                    self.inner.apply_status_config(cfg, opts).await
                }
            });
            quote! {
                /// Server-side apply of `obj`'s status (`params.field_manager` is required).
                pub async fn apply_status(&self, name: &str, obj: &#obj, params: &#c::PatchOptions) -> #r_obj {
                    self.inner.apply_status(name, obj, params).await
                }

                #typed
            }
        }
        Verb::Patch => quote! {
            /// Patches an object (merge, JSON or apply patch).
            pub async fn patch(&self, name: &str, patch: &#c::Patch, params: &#c::PatchOptions) -> #r_obj {
                self.inner.patch(name, patch, params).await
            }
        },
        Verb::Apply => {
            let typed = apply_cfg.as_ref().map(|ac| quote! {
                /// Server-side apply of an apply configuration (typed SSA):
                /// `opts.field_manager` owns exactly the fields `cfg` sets; the object is
                /// created if absent.
                #gate
                pub async fn apply_config(&self, cfg: &#ac, opts: &::kubegen_runtime::apply::ApplyOptions) -> #r_obj {
                    self.inner.apply_config(cfg, opts).await
                }
            });
            let doc = if typed.is_some() {
                " Server-side apply of a whole `obj` (`params.field_manager` is required); it claims every field `obj` serializes: `apply_config` sends only what an apply configuration sets."
            } else {
                " Server-side apply of `obj` (`params.field_manager` is required)."
            };
            quote! {
                #[doc = #doc]
                pub async fn apply(&self, name: &str, obj: &#obj, params: &#c::PatchOptions) -> #r_obj {
                    self.inner.apply(name, obj, params).await
                }

                #typed
            }
        }
        Verb::Delete => quote! {
            /// Deletes an object.
            pub async fn delete(&self, name: &str, opts: &#c::DeleteOptions) -> #r_deleted {
                self.inner.delete(name, opts).await
            }
        },
        Verb::DeleteCollection => quote! {
            /// Deletes every object `list` selects.
            pub async fn delete_collection(&self, opts: &#c::DeleteOptions, list: &#c::ListOptions) -> #r_deleted_list {
                self.inner.delete_collection(opts, list).await
            }
        },
    });
    let methods = kind
        .client
        .methods
        .iter()
        .map(|m| extension_method(m, &obj));
    // client-go's ApplyScale, where the kind serves scale and takes apply.
    let apply_scale = (kind.scale.is_some() && kind.client.has(Verb::Apply)).then(|| {
        let scale = quote!(::kubegen_runtime::k8s_openapi::api::autoscaling::v1::Scale);
        quote! {
            /// Server-side apply of the object's Scale (`cfg.spec.replicas`):
            /// `opts.field_manager` owns the replicas through the `scale` subresource.
            pub async fn apply_scale(&self, name: &str, cfg: &::kubegen_runtime::apply::ScaleApplyConfiguration, opts: &::kubegen_runtime::apply::ApplyOptions) -> ::std::result::Result<#scale, #c::Error> {
                self.inner.apply_scale(name, cfg, opts).await
            }
        }
    });
    quote! {
        #[doc = #doc]
        #[derive(::std::clone::Clone, ::std::fmt::Debug)]
        pub struct #ty {
            inner: #c::ResourceClient<#obj #wire>,
        }

        impl #ty {
            #ctor

            /// The runtime client underneath (URLs, and verbs not generated here).
            pub fn resource_client(&self) -> &#c::ResourceClient<#obj #wire> {
                &self.inner
            }

            #(#verbs)*

            #(#methods)*

            #apply_scale
        }
    }
}

/// One `+genclient:method=...` method. The scale methods of `autoscaling/v1` `Scale`
/// use the runtime's scale verbs; every other method its generic subresource calls.
pub fn extension_method(m: &ExtensionMethod, obj: &TokenStream) -> TokenStream {
    use heck::ToSnakeCase;
    let c = quote!(::kubegen_runtime::client);
    let name = ident(&crate::names::field_name(&m.name.to_snake_case()));
    let sub = m.subresource.as_deref().unwrap_or("");
    let type_of = |t: &Option<TypeRef>| match t {
        None => obj.clone(),
        Some(TypeRef::Scale) => quote!(::kubegen_runtime::k8s_openapi::api::autoscaling::v1::Scale),
        Some(TypeRef::Path(p)) => path_tokens(p),
    };
    let (input, output) = (type_of(&m.input), type_of(&m.result));
    let r_out = quote!(::std::result::Result<#output, #c::Error>);
    let scale = sub == "scale"
        && matches!(m.result, Some(TypeRef::Scale))
        && matches!(m.input, None | Some(TypeRef::Scale));
    let target = if sub.is_empty() {
        "the object".to_owned()
    } else {
        format!("`<name>/{sub}`")
    };
    match (m.verb, scale) {
        (Verb::Get, true) => quote! {
            /// Gets the object's `Scale` (`GET <name>/scale`): desired replicas, observed
            /// replicas and label selector.
            pub async fn #name(&self, name: &str) -> #r_out {
                self.inner.get_scale(name).await
            }
        },
        (Verb::Update, true) => quote! {
            /// Sets the object's desired replicas (`PUT <name>/scale`); a stale
            /// resourceVersion in `scale` is a 409 Conflict.
            pub async fn #name(&self, name: &str, scale: &#input, params: &#c::WriteOptions) -> #r_out {
                self.inner.update_scale(name, scale, params).await
            }
        },
        (Verb::Patch, true) => quote! {
            /// Patches the object's `Scale` (`PATCH <name>/scale`).
            pub async fn #name(&self, name: &str, patch: &#c::Patch, params: &#c::PatchOptions) -> #r_out {
                self.inner.patch_scale(name, patch, params).await
            }
        },
        (Verb::Get, false) => {
            let doc = format!(" `GET` {target}.");
            quote! {
                #[doc = #doc]
                pub async fn #name(&self, name: &str) -> #r_out {
                    self.inner.get_subresource(name, #sub).await
                }
            }
        }
        (Verb::Create, false) => {
            let doc = format!(" `POST` {target}.");
            quote! {
                #[doc = #doc]
                pub async fn #name(&self, name: &str, input: &#input, params: &#c::WriteOptions) -> #r_out {
                    self.inner.create_subresource(name, #sub, input, params).await
                }
            }
        }
        (Verb::Update, false) => {
            let doc = format!(" `PUT` {target}.");
            quote! {
                #[doc = #doc]
                pub async fn #name(&self, name: &str, input: &#input, params: &#c::WriteOptions) -> #r_out {
                    self.inner.update_subresource(name, #sub, input, params).await
                }
            }
        }
        (Verb::Patch, false) | (Verb::Apply, _) => {
            let doc = format!(" `PATCH` {target}.");
            quote! {
                #[doc = #doc]
                pub async fn #name(&self, name: &str, patch: &#c::Patch, params: &#c::PatchOptions) -> #r_out {
                    self.inner.patch_subresource(name, #sub, patch, params).await
                }
            }
        }
        // The model's validation admits only the verbs above for methods.
        (verb, _) => {
            let message = format!(
                "kubegen: extension method {} has verb {}, which methods do not support",
                m.name,
                verb.name()
            );
            quote!(::std::compile_error!(#message);)
        }
    }
}
