//! `fake.rs`: the fake clientset, the real `Clientset` on an in-memory API server.
//!
//! The root `mod.rs` declares it inside `::kubegen_runtime::testing_only! { ... }`, so it
//! exists exactly when the user's build enables `kubegen-runtime/testing` (in
//! `[dev-dependencies]` for tests, or from a feature of their own). The generated code
//! names no cfg of the user's crate, so `unexpected_cfgs` cannot fire.

use proc_macro2::TokenStream;
use quote::quote;

use super::{has_client, kind_type, Module};
use crate::model::{Api, Kind, KindSource, Scope};

/// A built-in kind's registration, for kinds the in-memory server does not serve by
/// itself (registering one it serves keeps the server's own, which knows more).
fn external_registration(group: &str, version: &str, k: &Kind) -> TokenStream {
    let t = quote!(::kubegen_runtime::testing);
    let n = &k.names;
    let (plural, kind, singular, list_kind) = (&n.plural, &n.kind, &n.singular, &n.list_kind);
    let short = &n.short_names;
    let cluster = (k.scope == Scope::Cluster).then(|| quote!(.cluster_scoped()));
    let status = k.status_subresource.then(|| quote!(.status_subresource()));
    let scale = k.scale.is_some().then(|| quote!(.scale_subresource()));
    quote! {
        #t::Registration::new(#group, #version, #plural, #kind)
            .list_kind(#list_kind)
            .singular(#singular)
            .short_names(&[#(#short),*])
            #cluster #status #scale
    }
}

/// The `fake` module.
pub fn fake_module(api: &Api) -> Module {
    let docs = vec![
        "A fake clientset for tests: the real [`Clientset`](super::clientset::Clientset) on a"
            .to_owned(),
        "`kube::Client` whose transport is a fresh in-memory API server that serves every kind"
            .to_owned(),
        "of this tree (and the common built-in kinds), seeded with objects, recording every"
            .to_owned(),
        "request, with reactors to inject errors and delays. Each kind is registered from its"
            .to_owned(),
        "`RESOURCE_INFO` and, where the input had one, its schema: the server prunes, defaults"
            .to_owned(),
        "and validates objects as it would with the real CRD.".to_owned(),
        String::new(),
        "This module exists only when `kubegen-runtime`'s `testing` feature is on. For tests:"
            .to_owned(),
        "`kubegen-runtime = { version = \"...\", features = [\"testing\"] }` under".to_owned(),
        "`[dev-dependencies]`; for a feature of your own: `fake = [\"kubegen-runtime/testing\"]`."
            .to_owned(),
        "Each version of a multi-version kind is stored apart (there is no conversion).".to_owned(),
    ];
    let t = quote!(::kubegen_runtime::testing);
    let mut regs = Vec::new();
    for g in &api.groups {
        for v in &g.versions {
            for k in &v.kinds {
                if !has_client(k) {
                    continue;
                }
                if let KindSource::External { .. } = k.source {
                    regs.push(external_registration(&g.name, &v.name, k));
                    continue;
                }
                let ty = kind_type(g, v, k, 1);
                let reg = quote!(#t::Registration::from_resource_info(&#ty::RESOURCE_INFO));
                regs.push(match &k.schema_json {
                    Some(json) => quote!(#reg.with_schema_json(#json)?),
                    None => reg,
                });
            }
        }
    }
    let items = quote! {
        /// The registrations of every kind of this tree, as an in-memory API server
        /// serves them (custom resources: list items carry apiVersion and kind).
        pub fn registrations() -> ::std::result::Result<::std::vec::Vec<#t::Registration>, ::kubegen_runtime::errors::StatusError> {
            ::std::result::Result::Ok(::std::vec::Vec::from([#(#regs),*]))
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
            for registration in registrations()? {
                server.register_if_absent(registration);
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
    };
    Module::new("fake", docs, items).attrs(super::modules::top_level_allows())
}
