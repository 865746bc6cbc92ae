//! The ops pod cleaner, on kubegen's generated built-in API (`kubegen-kubernetes`) and
//! runtime: a Pod informer, a rate-limited work queue, workers, and a chain of
//! processors configured by a YAML file ([`config`]):
//!
//! - delete Pods the kubelet evicted;
//! - force-delete Pods stuck terminating longer than a limit;
//! - scale to zero the Deployment of Pods in image pull back-off longer than a limit;
//! - report Pods restarting more than a limit (log line, optional webhook).
//!
//! [`processors`] decides (pure, unit-tested), [`controller`] acts, [`scenario`] is the
//! embedded demo. The binary runs the demo on an in-memory API server by default, or
//! against a cluster with `--kubeconfig`/`--cluster`; `--dry-run` changes nothing.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod config;
pub mod controller;
pub mod processors;
pub mod scenario;
pub mod webhook;
