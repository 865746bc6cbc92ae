//! CRD input: CustomResourceDefinition YAML (apiextensions.k8s.io/v1) -> the model.
//!
//! - [`schema`]: the typed schema model with YAML paths (and why not `openapiv3`);
//! - [`document`]: one CRD document -> group, names, scope, versions;
//! - [`convert`]: schemas -> types (the mapping table lives there);
//! - [`build_api`]: CRDs -> [`Api`]: one group module per API group, one version module
//!   per served version, kinds of the same group and version share a module.
//!
//! Group module names are the group's first DNS label (`samplecontroller.k8s.io` ->
//! `samplecontroller`). When two groups share it (`gateway.networking.k8s.io`,
//! `gateway.networking.x-k8s.io`), each takes labels until the names differ
//! (`gateway_networking_k8s`, `gateway_networking_x_k8s`). `--group-alias group=module`
//! overrides the rule for a group.

pub mod convert;
pub mod document;
pub mod schema;

use std::collections::BTreeMap;

use kubegen_templates::model::{Api, Group};
use kubegen_templates::names;

pub use document::{parse_file, Crd, CrdVersion};

use crate::error::Error;

/// Builds the model from parsed CRDs. `aliases` maps group names to module names.
pub fn build_api(crds: &[Crd], aliases: &BTreeMap<String, String>) -> Result<Api, Error> {
    let mut by_group: BTreeMap<&str, Vec<&Crd>> = BTreeMap::new();
    for crd in crds {
        by_group.entry(crd.group.as_str()).or_default().push(crd);
    }
    let modules = group_modules(by_group.keys().copied(), aliases)?;
    let mut groups = Vec::new();
    for (group, members) in &by_group {
        let mut by_version: BTreeMap<&str, Vec<(&Crd, &CrdVersion)>> = BTreeMap::new();
        let mut kinds: BTreeMap<&str, &Crd> = BTreeMap::new();
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
            for v in crd.versions.iter().filter(|v| v.served) {
                by_version.entry(&v.name).or_default().push((crd, v));
            }
        }
        let mut versions = Vec::new();
        for (version, entries) in &by_version {
            check_type_names(entries)?;
            let mut builder = convert::VersionBuilder::new(entries);
            for (crd, v) in entries {
                builder.add_kind(crd, v).map_err(|e| e.in_file(&crd.file))?;
            }
            versions.push(builder.finish(version));
        }
        if versions.is_empty() {
            continue;
        }
        versions.sort_by(|a, b| a.module.cmp(&b.module));
        let module = modules
            .get(*group)
            .cloned()
            .unwrap_or_else(|| names::module_name(group));
        groups.push(Group {
            name: (*group).to_owned(),
            module,
            versions,
        });
    }
    groups.sort_by(|a, b| a.module.cmp(&b.module));
    Ok(Api { groups })
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

/// Module names for groups: aliases first, then the first DNS label, extended label by
/// label for groups that would collide.
pub fn group_modules<'a>(
    groups: impl Iterator<Item = &'a str>,
    aliases: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Error> {
    let groups: Vec<&str> = groups.collect();
    let mut out = BTreeMap::new();
    let labels = |g: &str| g.split('.').map(names::module_name).collect::<Vec<_>>();
    for g in &groups {
        if let Some(alias) = aliases.get(*g) {
            out.insert((*g).to_owned(), names::module_name(alias));
            continue;
        }
        let mine = labels(g);
        let mut take = 1;
        loop {
            let candidate = mine[..take.min(mine.len())].join("_");
            let clash = groups
                .iter()
                .filter(|o| *o != g && !aliases.contains_key(**o))
                .any(|o| {
                    let theirs = labels(o);
                    theirs[..take.min(theirs.len())].join("_") == candidate
                })
                || aliases.values().any(|a| names::module_name(a) == candidate);
            if !clash || take >= mine.len() {
                out.insert((*g).to_owned(), candidate);
                break;
            }
            take += 1;
        }
    }
    let mut seen: BTreeMap<&String, &String> = BTreeMap::new();
    for (g, m) in &out {
        if let Some(other) = seen.insert(m, g) {
            return Err(Error::at(
                "",
                format!("groups {other} and {g} both map to module `{m}`"),
                format!("pass --group-alias {g}=<module> to name one of them"),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colliding_groups_extend_until_distinct() {
        let m = group_modules(
            [
                "gateway.networking.k8s.io",
                "gateway.networking.x-k8s.io",
                "samplecontroller.k8s.io",
            ]
            .into_iter(),
            &BTreeMap::new(),
        )
        .unwrap();
        assert_eq!(m["gateway.networking.k8s.io"], "gateway_networking_k8s");
        assert_eq!(m["gateway.networking.x-k8s.io"], "gateway_networking_x_k8s");
        assert_eq!(m["samplecontroller.k8s.io"], "samplecontroller");
    }

    #[test]
    fn aliases_win() {
        let aliases = BTreeMap::from([(
            "gateway.networking.x-k8s.io".to_owned(),
            "gatewayx".to_owned(),
        )]);
        let m = group_modules(
            ["gateway.networking.k8s.io", "gateway.networking.x-k8s.io"].into_iter(),
            &aliases,
        )
        .unwrap();
        assert_eq!(m["gateway.networking.k8s.io"], "gateway");
        assert_eq!(m["gateway.networking.x-k8s.io"], "gatewayx");
    }
}
