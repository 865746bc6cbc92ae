//! `fake.rs`: the fake clientset, the real `Clientset` on an in-memory API server.
//!
//! The root `mod.rs` declares it inside `::kubegen_runtime::testing_only! { ... }`, so it
//! exists exactly when the user's build enables `kubegen-runtime/testing` (in
//! `[dev-dependencies]` for tests, or from a feature of their own). The generated code
//! names no cfg of the user's crate, so `unexpected_cfgs` cannot fire.

use proc_macro2::TokenStream;
use quote::quote;

use super::inner_doc_attrs;
use crate::model::{Api, Scope};

/// `fake.rs`.
pub fn fake_file(api: &Api) -> TokenStream {
    let doc = inner_doc_attrs(&[
        "A fake clientset for tests: the real [`Clientset`](super::clientset::Clientset) on a"
            .to_owned(),
        "`kube::Client` whose transport is a fresh in-memory API server that serves every kind"
            .to_owned(),
        "of this tree (and the common built-in kinds), seeded with objects, recording every"
            .to_owned(),
        "request, with reactors to inject errors and delays.".to_owned(),
        String::new(),
        "This module exists only when `kubegen-runtime`'s `testing` feature is on. For tests:"
            .to_owned(),
        "`kubegen-runtime = { version = \"...\", features = [\"testing\"] }` under".to_owned(),
        "`[dev-dependencies]`; for a feature of your own: `fake = [\"kubegen-runtime/testing\"]`."
            .to_owned(),
        "Each version of a multi-version kind is stored apart (there is no conversion).".to_owned(),
    ]);
    let t = quote!(::kubegen_runtime::testing);
    let mut regs = Vec::new();
    for g in &api.groups {
        for v in &g.versions {
            for k in &v.kinds {
                let (gn, vn) = (&g.name, &v.name);
                let n = &k.names;
                let (plural, kind, singular, list_kind) =
                    (&n.plural, &n.kind, &n.singular, &n.list_kind);
                let short: Vec<TokenStream> = n
                    .short_names
                    .iter()
                    .map(|s| quote!(::std::string::String::from(#s)))
                    .collect();
                let namespaced = k.scope == Scope::Namespaced;
                let status = k.status_subresource;
                let (scale, scale_paths) = match &k.scale {
                    Some(s) => {
                        let (spec, st) = (&s.spec_replicas_path, &s.status_replicas_path);
                        let sel = s.label_selector_path.clone().unwrap_or_default();
                        (
                            true,
                            quote! {
                                #t::ScalePaths {
                                    spec_replicas: ::std::string::String::from(#spec),
                                    status_replicas: ::std::string::String::from(#st),
                                    label_selector: ::std::string::String::from(#sel),
                                }
                            },
                        )
                    }
                    None => (false, quote!(::std::default::Default::default())),
                };
                regs.push(quote! {
                    #t::Registration {
                        singular: ::std::string::String::from(#singular),
                        list_kind: ::std::string::String::from(#list_kind),
                        namespaced: #namespaced,
                        short_names: ::std::vec![#(#short),*],
                        status: #status,
                        scale: #scale,
                        scale_paths: #scale_paths,
                        list_items_type_meta: true,
                        custom: true,
                        ..#t::Registration::new(#gn, #vn, #plural, #kind)
                    }
                });
            }
        }
    }
    quote! {
        #doc

        /// The registrations of every kind of this tree, as an in-memory API server
        /// serves them (custom resources: list items carry apiVersion and kind).
        pub fn registrations() -> ::std::vec::Vec<#t::Registration> {
            ::std::vec![#(#regs),*]
        }

        /// The real clientset over an in-memory API server (derefs to the clientset).
        #[derive(::std::clone::Clone, ::std::fmt::Debug)]
        pub struct FakeClientset {
            clientset: super::clientset::Clientset,
            server: #t::ApiServer,
        }

        impl FakeClientset {
            /// The clientset (also reachable through `Deref`).
            pub fn clientset(&self) -> &super::clientset::Clientset {
                &self.clientset
            }

            /// The in-memory API server: its request log, reactors and direct access.
            pub fn server(&self) -> &#t::ApiServer {
                &self.server
            }

            /// Every request the server answered so far (client-go's `Actions()`).
            pub fn actions(&self) -> ::std::vec::Vec<#t::RequestRecord> {
                self.server.requests()
            }

            /// Adds a reactor: matching requests are delayed or fail with its error.
            /// Reactors added first are consulted first.
            pub fn add_reactor(&self, reactor: #t::Reactor) {
                self.server.react(reactor);
            }
        }

        impl ::std::ops::Deref for FakeClientset {
            type Target = super::clientset::Clientset;

            fn deref(&self) -> &Self::Target {
                &self.clientset
            }
        }

        /// A fake clientset whose server holds `objects` (JSON with `apiVersion` and
        /// `kind`, e.g. `serde_json::to_value(&foo)`), created in order. Fails on an
        /// object of a kind the server does not serve, or one it rejects.
        /// Must be called inside a tokio runtime (the client needs one).
        pub async fn new_simple_clientset(
            objects: impl ::std::iter::IntoIterator<Item = ::kubegen_runtime::serde_json::Value>,
        ) -> ::std::result::Result<FakeClientset, ::kubegen_runtime::errors::StatusError> {
            let server = #t::ApiServer::new();
            for registration in registrations() {
                server.register(registration);
            }
            for object in objects {
                server.create_object(object)?;
            }
            let client = ::kubegen_runtime::kube::Client::new(server.service(), "default");
            ::std::result::Result::Ok(FakeClientset {
                clientset: super::clientset::Clientset::new(client),
                server,
            })
        }
    }
}
