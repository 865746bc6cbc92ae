//! kubernetes/sample-controller, on kubegen: the `Foo` API as Rust types with
//! `+genclient` markers ([`apis`]), its clientset, listers and informers generated at
//! build time by `kubegen::Builder::rust` ([`generated`]), the built-in API from
//! `kubegen-kubernetes`, and the controller ([`controller`]): for each Foo, a Deployment
//! named `spec.deploymentName` owned by the Foo, with `spec.replicas`, whose available
//! replicas the Foo's status reports.
//!
//! [`standin`] is the embedded demo's stand-in for kube-controller-manager (the in-memory
//! API server runs none): it moves Deployment statuses towards their specs. A real
//! cluster needs none.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// The kind is `Foo`: `foo` names one, as in sample-controller's Go code.
#![allow(clippy::disallowed_names)]

pub mod apis;
pub mod controller;
pub mod standin;

/// The Foo clientset, listers, informers and fake, generated from [`apis`] by build.rs.
#[allow(missing_docs)]
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/kubegen.rs"));
}

/// The Foo CRD, written from [`apis`] by `kubegen crd` at build time (`build.rs`);
/// `crd/samplecontroller.k8s.io_foos.yaml` is the same file, checked in for `kubectl apply`.
pub const CRD: &str = include_str!(concat!(
    env!("OUT_DIR"),
    "/crds/samplecontroller.k8s.io_foos.yaml"
));
