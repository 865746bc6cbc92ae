// The runtime's integration tests, one binary: each file in this folder is a module
// here rather than a test target of its own. Separate targets each linked kube,
// k8s-openapi and the in-memory server again (21 binaries of ~130 MB, minutes of the
// test stage and most of its disk); one binary compiles and links those once.
// Run one file's tests with a filter: `cargo test -p kubegen-runtime --features testing
// --test integration informer_converge::`.

#[cfg(all(feature = "webhook", feature = "testing"))]
mod apiserver_admission;
#[cfg(feature = "testing")]
mod apiserver_conversion;
#[cfg(feature = "testing")]
mod apiserver_lifecycle;
#[cfg(feature = "testing")]
mod apiserver_owners;
#[cfg(feature = "testing")]
mod apiserver_read;
#[cfg(feature = "testing")]
mod apiserver_write;
#[cfg(feature = "testing")]
mod controller;
#[cfg(feature = "testing")]
mod controller_helpers;
#[cfg(feature = "testing")]
mod controller_leader;
#[cfg(all(feature = "testing", feature = "prometheus"))]
mod controller_metrics;
#[cfg(feature = "testing")]
mod dynamic;
#[cfg(feature = "testing")]
mod envtest;
#[cfg(feature = "testing")]
mod informer_converge;
#[cfg(feature = "testing")]
mod informer_http;
#[cfg(feature = "testing")]
mod informer_parity;
#[cfg(feature = "testing")]
mod leader_election;
#[cfg(all(feature = "testing", feature = "prometheus"))]
mod metrics;
#[cfg(feature = "testing")]
mod protobuf;
#[cfg(feature = "testing")]
mod record;
#[cfg(feature = "testing")]
mod server_variants;
#[cfg(all(feature = "webhook", feature = "testing"))]
mod webhook;
#[cfg(all(feature = "webhook", feature = "prometheus"))]
mod webhook_metrics;
