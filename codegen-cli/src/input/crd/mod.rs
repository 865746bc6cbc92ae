//! CRD input: CustomResourceDefinition YAML (apiextensions.k8s.io/v1) -> the model.
//!
//! - [`schema`]: the typed schema model with YAML paths (and why not `openapiv3`);
//! - [`document`]: one CRD document -> group, names, scope, versions;
//! - [`convert`]: schemas -> types (the mapping table lives there);
//! - [`build_versions`]: CRDs -> one [`VersionPart`] per group and version; kinds of the
//!   same group and version share a module. [`crate::input::assemble()`] names the groups'
//!   modules and builds the [`Api`](kubegen_templates::model::Api).

pub mod convert;
pub mod document;
pub mod schema;
pub mod validate;

use std::collections::BTreeMap;

use kubegen_templates::names;

pub use document::{parse_file, Crd, CrdVersion};

use super::VersionPart;
use crate::error::Error;

/// Builds one [`VersionPart`] per group and version from parsed CRDs.
pub fn build_versions(crds: &[Crd]) -> Result<Vec<VersionPart>, Error> {
    let mut by_group: BTreeMap<&str, Vec<&Crd>> = BTreeMap::new();
    for crd in crds {
        by_group.entry(crd.group.as_str()).or_default().push(crd);
    }
    let mut parts = Vec::new();
    for (group, members) in &by_group {
        let mut by_version: BTreeMap<&str, Vec<(&Crd, &CrdVersion)>> = BTreeMap::new();
        let mut kinds: BTreeMap<&str, &Crd> = BTreeMap::new();
        let mut plurals: BTreeMap<&str, &Crd> = BTreeMap::new();
        for crd in members {
            if let Some(first) = kinds.insert(&crd.names.kind, crd) {
                return Err(Error::at(
                    format!("document {}: spec.names.kind", crd.document),
                    format!(
                        "kind {} of group {group} is also defined in {} (document {})",
                        crd.names.kind,
                        first.file.display(),
                        first.document
                    ),
                    "pass each CRD once",
                )
                .in_file(&crd.file));
            }
            if let Some(first) = plurals.insert(&crd.names.plural, crd) {
                return Err(Error::at(
                    format!("document {}: spec.names.plural", crd.document),
                    format!(
                        "plural {} of group {group} is also the plural of kind {} in {} (document {}); one resource cannot have two definitions, and the clients would have two `{}` methods",
                        crd.names.plural,
                        first.names.kind,
                        first.file.display(),
                        first.document,
                        names::field_name(&crd.names.plural),
                    ),
                    "give every CRD of a group its own plural (and `metadata.name: <plural>.<group>`), or pass each CRD once",
                )
                .in_file(&crd.file));
            }
            // Unserved versions too: conversion code needs every version's types; the
            // emitters give unserved kinds no clients, listers or informers.
            for v in &crd.versions {
                by_version.entry(&v.name).or_default().push((crd, v));
            }
        }
        for (version, entries) in &by_version {
            check_type_names(entries)?;
            let mut builder = convert::VersionBuilder::new(entries);
            for (crd, v) in entries {
                builder
                    .add_kind(crd, v)
                    .map_err(|e| document::in_document(e, crd.document).in_file(&crd.file))?;
            }
            let (crd, _) = entries[0];
            parts.push(VersionPart {
                group: (*group).to_owned(),
                version: builder.finish(version),
                origin: Error::at(format!("document {}: spec.group", crd.document), "", "")
                    .in_file(&crd.file),
            });
        }
    }
    Ok(parts)
}

/// Kinds and list kinds of one version become type names in one module: they must differ
/// (the API server's NamesAccepted condition demands the same).
fn check_type_names(entries: &[(&Crd, &CrdVersion)]) -> Result<(), Error> {
    let mut seen: BTreeMap<String, &Crd> = BTreeMap::new();
    for (crd, _) in entries {
        for (field, name) in [
            ("kind", &crd.names.kind),
            ("listKind", &crd.names.list_kind),
        ] {
            let type_name = names::type_name(name);
            if let Some(other) = seen.insert(type_name.clone(), crd) {
                return Err(Error::at(
                    format!("document {}: spec.names.{field}", crd.document),
                    format!(
                        "`{name}` is also a kind or list kind of {} (document {}) in group {}; both would be the Rust type `{type_name}`",
                        other.file.display(),
                        other.document,
                        crd.group
                    ),
                    "give every kind and list kind of a group a distinct name",
                )
                .in_file(&crd.file));
            }
        }
    }
    Ok(())
}
