//! The apimachinery vocabulary kubegen's runtime and its in-memory API server share.
//!
//! Both `kubegen-runtime` and `kubegen-apiserver` depend on this crate, so the server
//! (behind the runtime's `testing` feature) does not depend on the runtime, and the
//! runtime re-exports every module here at its historical path
//! (`kubegen_runtime::errors`, `labels`, `fields`, `types`): generated code and users
//! name those paths, not this crate's.
//!
//! Modules:
//!
//! - [`errors`]: the API `Status` as an error, classified by reason first, with the
//!   constructors the API server and listers share;
//! - `crd_validation` (feature `crd-validation`): kube-apiserver's rules for a
//!   CustomResourceDefinition, shared by the generator and the in-memory server;
//! - [`labels`] and [`fields`]: selector parsing and matching (apimachinery's grammar);
//! - [`protobuf`]: Kubernetes' protobuf encoding of every built-in kind, by a table
//!   written from `k8s.io/api`: decoded into kube-apiserver's JSON or straight into
//!   typed objects through serde (the runtime's client), and encoded from JSON (the
//!   in-memory server's answers);
//! - [`types`]: wire types that keep what standard types would lose (timestamps,
//!   numbers, conditions, explicit nulls) and the constant resource descriptions
//!   generated code fills in.
//!
//! Like the runtime, it never picks a k8s-openapi version: the binary that uses it
//! enables one.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "crd-validation")]
pub mod crd_validation;
pub mod errors;
pub mod fields;
pub mod labels;
pub mod protobuf;
pub mod types;
