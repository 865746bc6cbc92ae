//! Test support (feature `testing`): the in-memory Kubernetes API server (every item of
//! the `kubegen-apiserver` crate, at the paths generated fake clientsets name) and
//! [`envtest`], which runs a real control plane (etcd, kube-apiserver,
//! kube-controller-manager) for tests that must hold against Kubernetes itself.

pub use kubegen_apiserver::*;

pub mod envtest;
pub mod transport;
