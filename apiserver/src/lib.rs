//! An in-memory Kubernetes API server that speaks real Kubernetes HTTP, for tests, fake
//! clientsets, examples and benchmarks; `kubegen-runtime` re-exports it as
//! `kubegen_runtime::testing` under its `testing` feature (the path generated fake
//! clientsets name), and the `kubegen-apiserver` program (feature `cli`, default) serves
//! it on a port.
//!
//! Layout: `http` answers a request (`route`, `read`, `write`, dispatch in `http/mod`),
//! over `query` (parameters, continue tokens) and `response`; `watch` streams;
//! `writes` holds the storage's write verbs (a file per verb, the garbage collector in
//! `gc`); `store` the storage and history; `meta` the object helpers every write shares.
//! Per-resource behaviour is a strategy on the registration (`registry::strategy`, as
//! kube-apiserver's `rest.Strategy`), attached to the built-in kinds by `strategies`
//! and implemented beside its rules: `namespaces`, `crd_lifecycle`, `events`;
//! `registry`, `crd` and `versions` the resource semantics; the controllers that act
//! after a write are `namespace_controller`, `crd_controller` and `writes/gc`.
//! `cel_rules` and `schema_checks` hold a custom resource's validation beyond types and
//! bounds, `builtin_validation` and `builtin_defaults` the built-in kinds' (and every
//! object's metadata); `discovery`, `openapi`,
//! `table`, `media`, `protobuf` the wire forms; `server` and `typed` the admin API;
//! `faults` the request log and reactors. The apimachinery vocabulary (`errors`,
//! `labels`, `fields`, `types`) is the `kubegen-apimachinery` crate, shared with the
//! runtime.
//!
//! Contract:
//! - It serves the resources it has a [`Registration`] for (by default every GA
//!   built-in resource Kubernetes 1.33 and later share, [`builtin`]), at the real paths (`/api/v1/...`, `/apis/<group>/<version>/...`),
//!   namespaced and cluster-wide, plus `/version`, `/api`, `/apis` and per-group
//!   discovery, enough for [`kube::Client`] and [`kube::Discovery`].
//! - One global resourceVersion orders every write; each resource keeps a bounded
//!   history (etcd compaction): at most [`ApiServerBuilder::history_limit`] changes and
//!   [`ApiServerBuilder::history_bytes`] bytes (default 100 000 and 64 MiB). Lists honour label and field selectors,
//!   `limit`/`continue` (later pages come from the first page's snapshot, rebuilt from
//!   the history; 410 Expired once compacted), and `resourceVersion` /
//!   `resourceVersionMatch` as SEMANTICS 9 states, validation errors included.
//! - Watches start from a resourceVersion (410 Expired ERROR event when compacted) or
//!   with the current objects, honour selectors (leaving the selection is a DELETED,
//!   entering it an ADDED), send bookmarks when allowed (and periodically),
//!   `sendInitialEvents` with the initial-events-end bookmark, and end at
//!   `timeoutSeconds`.
//! - Errors are `Status` objects built by [`crate::errors::StatusError`]'s constructors.
//! - It is served in-process as a tower Service ([`ApiServer::service`], for
//!   `kube::Client::new`) and on a TCP port ([`ApiServer::serve_tcp`]) with a kubeconfig.
//! - `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (and the
//!   `List` form) answers metadata only, as kube-apiserver does (see `table`).
//! - Objects are kept as serialized JSON plus parsed metadata; lists copy stored bytes
//!   into the response, and watch frames are encoded once per change.
//!
//! - Writes: create (generateName, uid, DNS-1123 names), update with optimistic
//!   concurrency, the status subresource split, `metadata.generation`, the four PATCH
//!   types (strategic merge for built-in types only, 415 for custom resources),
//!   server-side apply with managedFields and conflicts, deletion with finalizers,
//!   preconditions, propagation policies and a minimal garbage collector, delete
//!   collection, `dryRun=All`, and optionally strict namespaces (see the `writes`,
//!   `patch` and `apply` modules' contracts).
//! - Custom resources registered from their CRD ([`ApiServer::register_crd`]) are
//!   pruned, defaulted and validated against their structural schema, CEL rules
//!   (`x-kubernetes-validations`) included. A CRD written through the API is validated (422), gets its names
//!   accepted and is established (or reports a name conflict), is served with its new
//!   schema after every change, and when deleted takes its custom resources with it
//!   (see the `crd_lifecycle` module's contract).
//! - Request bodies in JSON, YAML or (for every built-in kind) protobuf (the `protobuf`
//!   module); 415 for other media types, 413 over 3 MiB; `fieldValidation`; bodies of
//!   built-in kinds must decode into their k8s-openapi type, and their unknown fields are
//!   dropped (the `media` module).
//! - The subresources that act: `pods/eviction` (disruption budgets honoured),
//!   `pods/binding` and `serviceaccounts/token` (the `writes::actions` module).
//! - Responses as JSON, Table (`as=Table`, kubectl's columns, CRD printer columns) or
//!   PartialObjectMetadata, by the Accept header (the `table` module); OpenAPI v2 and v3
//!   built from the registrations (the `openapi` module); `/healthz`, `/readyz`,
//!   `/livez`.
//! - Namespaces: Terminating on DELETE, emptied by a namespace controller, then
//!   removed; 403 for new content in a Terminating namespace; in strict mode the system
//!   namespaces exist from the start and writes into a missing namespace get 404 (the
//!   `namespaces` module).
//! - Events (core/v1 and events.k8s.io/v1) are validated as
//!   kube-apiserver validates them (see the `events` module's contract).
//! - For tests: a typed admin API ([`ApiServer::objects`]) beside the JSON one, a request
//!   log, [`Reactor`]s matching the body and query too and injecting errors and delays
//!   or answering with objects,
//!   [`ApiServer::drop_watches`] (a clean cut) and [`ApiServer::expire_next_watch`].
//!
//! - The versions of a CRD share one storage; objects are converted to the version asked
//!   for on reads, lists, watches and writes, by conversion strategy None (`apiVersion`
//!   rewritten) or Webhook (a `ConversionReview` posted to `clientConfig.url`); see the
//!   `versions` and `conversion` modules. HorizontalPodAutoscaler is served the same way
//!   at `autoscaling/v1` (what `kubectl autoscale` writes) from its `autoscaling/v2`
//!   storage ([`BuiltinConversion`]).
//!
//! Admission plugins other than namespace lifecycle, quotas and most defaulting of
//! built-in types are not implemented. There is no
//! authentication or authorization.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod admission;
mod apply;
mod body;
mod builtin_conversion;
mod builtin_defaults;
mod builtin_types;
mod builtin_validation;
mod cel_rules;
mod conversion;
mod crd;
mod crd_controller;
mod crd_lifecycle;
mod discovery;
mod events;
mod faults;
mod http;
mod info;
mod media;
mod meta;
mod namespace_controller;
mod namespaces;
mod openapi;
mod owners;
mod patch;
mod protobuf;
mod query;
mod registry;
mod response;
mod schema_checks;
mod select;
mod server;
mod store;
mod strategies;
mod table;
mod tcp;
mod typed;
mod versions;
mod watch;
mod webhook_client;
mod webhook_hooks;
mod writes;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio_util::sync::CancellationToken;

// The shared apimachinery vocabulary, at the paths the modules name (`crate::errors`).
pub use kubegen_apimachinery::{errors, types};
use kubegen_apimachinery::{fields, labels};

pub use body::Body;
pub use builtin_conversion::BuiltinConversion;
pub use conversion::{Conversion, ConversionWebhook};
pub use faults::{Answer, Reactor, RequestRecord};
pub use patch::MERGE_KEYS;
pub use registry::{builtin, PrinterColumn, Registration, ScalePaths, BUILTIN_GROUPS};
pub use server::{ApiServer, ApiServerBuilder, ListLimit, PreparedChanges};
pub use tcp::{ConfigError, TcpServer};
pub use typed::{Objects, SeedObject};

/// The in-process transport: a tower Service answering HTTP requests from memory.
///
/// Build a client on it with `kube::Client::new(server.service(), "default")` inside a
/// tokio runtime.
#[derive(Clone, Debug)]
pub struct ApiService {
    inner: Arc<server::Inner>,
    stop: CancellationToken,
}

impl ApiService {
    fn new(inner: Arc<server::Inner>, stop: CancellationToken) -> Self {
        ApiService { inner, stop }
    }
}

impl<B> tower::Service<::http::Request<B>> for ApiService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: std::fmt::Display,
{
    type Response = ::http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ::http::Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        let stop = self.stop.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let bytes = match media::read_body(body).await {
                Ok(b) => b,
                Err(e) => {
                    return Ok(response::error_response(&e));
                }
            };
            Ok(http::handle(inner, ::http::Request::from_parts(parts, bytes), stop).await)
        })
    }
}
