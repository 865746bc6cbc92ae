//! kubegen's runtime: what kubegen-generated code links against.
//!
//! It holds client-go's cache and queue machinery, ported to Rust on tokio, with
//! client-go's semantics (see `SEMANTICS.md` in the project's shared docs):
//!
//! - [`object`]: keys (`namespace/name`), [`object::ObjectRef`], traits over
//!   [`kube::Resource`] so k8s-openapi types, kube-derive types, generated types and
//!   [`kube::core::DynamicObject`] all fit;
//! - [`errors`]: the API `Status` as an error, classified by reason first;
//! - [`labels`] and [`fields`]: selector parsing and matching (apimachinery's grammar);
//! - [`cache`]: the thread-safe store and indexer, listers, the DeltaFIFO; informers and
//!   factories, typed and for resources chosen at run time (dynamic, metadata);
//! - [`workqueue`]: the rate-limited workqueue and its rate limiters;
//! - [`flowcontrol`]: the token bucket shared by the workqueue and client-side rate
//!   limiting;
//! - [`client`]: a typed client over [`kube::Client`] for the list/watch read path;
//!   dynamic and metadata-only clients by group/version/resource, discovery and a REST
//!   mapper;
//! - [`leaderelection`]: leader election on a coordination.k8s.io/v1 Lease;
//! - [`retry`]: `retry_on_conflict` and `on_error` (client-go's `util/retry`);
//! - [`record`]: event recording (client-go's `tools/record` and `tools/events`): the
//!   broadcaster, recorder, correlator (aggregation, dedup, spam filter) and fakes;
//! - [`pager`]: `ListPager` (client-go's `tools/pager`);
//! - [`watch`]: `RetryWatcher`, `until`, `until_with_sync` (client-go's `tools/watch`);
//! - [`metrics`]: client-go's REST client, reflector and leader-election metrics;
//! - `testing` (feature `testing`): an in-memory Kubernetes API server.
//!
//! # Cargo features
//!
//! | feature | enables |
//! |---|---|
//! | `testing` | `kubegen_runtime::testing`: the in-memory API server (tower Service and TCP) |
//! | `prometheus` | Prometheus implementations of the workqueue metrics and of client-go's REST client, reflector and leader-election metrics ([`metrics`]), with a `/metrics` endpoint |
//!
//! The crate never picks a k8s-openapi version: like kube-rs, the binary that uses it
//! enables one (`k8s-openapi = { version = "0.29", features = ["latest"] }`).
//!
//! Generated code names only `::kubegen_runtime::...` paths, so this crate re-exports
//! [`kube`], [`k8s_openapi`], [`serde`] and [`serde_json`]: a user adds one dependency.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use k8s_openapi;
pub use kube;
pub use serde;
pub use serde_json;
pub use tokio_util;

/// Expands its items only when this crate's `testing` feature is on, and to nothing
/// otherwise.
///
/// Generated trees declare their fake clientset with it (`testing_only! { pub mod
/// fake; }`): the user decides where fakes exist by enabling `kubegen-runtime/testing`
/// (in `[dev-dependencies]` for tests, or from a feature of their own), and the generated
/// code names no cfg of the user's crate, so no `unexpected_cfgs` warning can fire.
#[cfg(feature = "testing")]
#[macro_export]
macro_rules! testing_only {
    ($($item:item)*) => { $($item)* };
}

/// Expands its items only when this crate's `testing` feature is on (it is off here).
#[cfg(not(feature = "testing"))]
#[macro_export]
macro_rules! testing_only {
    ($($item:item)*) => {};
}

pub mod cache;
pub mod client;
pub mod errors;
pub mod fields;
pub mod flowcontrol;
pub mod labels;
pub mod leaderelection;
pub mod metrics;
pub mod object;
pub mod pager;
pub mod record;
pub mod retry;
#[cfg(feature = "testing")]
pub mod testing;
pub mod types;
pub mod watch;
pub mod workqueue;
