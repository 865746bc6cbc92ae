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
    let docs = [
        "A fake clientset for tests: the real [`Clientset`](super::clientset::Clientset) on a",
        "`kube::Client` whose transport is a fresh in-memory API server that serves every kind",
        "of this tree (and the common built-in kinds), seeded with typed or JSON objects,",
        "recording every request, with reactors that inject errors and delays or answer with",
        "objects. Each kind is registered from its `RESOURCE_INFO` and, where the input had",
        "one, its schema: the server prunes, defaults and validates objects as it would with",
        "the real CRD.",
        "",
        "This module exists only when `kubegen-runtime`'s `testing` feature is on. For tests:",
        "`kubegen-runtime = { version = \"...\", features = [\"testing\"] }` under",
        "`[dev-dependencies]`; for a feature of your own: `fake = [\"kubegen-runtime/testing\"]`.",
        "Each version of a multi-version kind is stored apart (there is no conversion).",
    ]
    .map(str::to_owned)
    .to_vec();
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

            /// Adds a reactor: matching requests are delayed, fail with its error or are
            /// answered with its object. Reactors added first are consulted first.
            pub fn add_reactor(&self, reactor: #t::Reactor) {
                self.server.react(reactor);
            }

            /// Adds a reaction for `verb` on `resource` (plural, or `*`) consulted before
            /// every reactor added so far (client-go's `PrependReactor`): it answers with
            /// an object ([`Answer::object`](kubegen_runtime::testing::Answer::object)), fails, or passes the
            /// request on ([`Answer::Pass`](kubegen_runtime::testing::Answer::Pass)).
            pub fn prepend_reactor(
                &self,
                verb: &str,
                resource: &str,
                reaction: impl ::std::ops::Fn(&#t::RequestRecord) -> #t::Answer
                    + ::std::marker::Send
                    + ::std::marker::Sync
                    + 'static,
            ) {
                self.server
                    .react_first(#t::Reactor::new(verb, resource).reaction(reaction));
            }
        }

        impl ::std::ops::Deref for FakeClientset {
            type Target = super::clientset::Clientset;

            fn deref(&self) -> &Self::Target {
                &self.clientset
            }
        }

        /// A fake clientset whose server holds `objects`, created in order: typed
        /// objects ([`SeedObject::from(&foo)`](kubegen_runtime::testing::SeedObject)) or
        /// JSON with `apiVersion` and `kind` (`SeedObject::from(json)`). Fails on an
        /// object of a kind the server does not serve, or one it rejects. Must be called
        /// inside a tokio runtime (the client needs one).
        pub async fn new_simple_clientset(
            objects: impl ::std::iter::IntoIterator<Item = #t::SeedObject>,
        ) -> ::std::result::Result<FakeClientset, ::kubegen_runtime::errors::StatusError> {
            let server = #t::ApiServer::new();
            for registration in registrations()? {
                server.register_if_absent(registration);
            }
            for object in objects {
                server.create_object(object.into_value()?)?;
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
