//! Input-neutral assembly of the model: every input yields [`VersionPart`]s (a group
//! name and one version of it with its kinds and types); [`assemble`] merges them into
//! one [`Api`], naming each group's module.
//!
//! Group module names are the group's first DNS label (`samplecontroller.k8s.io` ->
//! `samplecontroller`; the core group `""` is `core`). When two groups share it
//! (`gateway.networking.k8s.io`, `gateway.networking.x-k8s.io`), each takes labels until
//! the names differ (`gateway_networking_k8s`, `gateway_networking_x_k8s`).
//! `--group-alias group=module` overrides the rule for a group. Two inputs may not
//! define the same group and version (a CRD and a Rust module both serving
//! `example.com/v1`): that is an error naming both.

use std::collections::BTreeMap;

use kubegen_templates::model::{Api, Group, Version};
use kubegen_templates::names;

use crate::error::Error;

/// One version of one group, as an input built it.
#[derive(Debug, Clone)]
pub struct VersionPart {
    /// The API group (`samplecontroller.k8s.io`; empty for the core group).
    pub group: String,
    /// The version with its kinds and types (module already named).
    pub version: Version,
    /// Where it came from, for errors: an [`Error`] whose file and place point at the
    /// input (its problem and fix are unused).
    pub origin: Error,
}

/// Merges parts into the model. `aliases` maps group names to module names.
pub fn assemble(parts: Vec<VersionPart>, aliases: &BTreeMap<String, String>) -> Result<Api, Error> {
    let mut by_group: BTreeMap<String, Vec<VersionPart>> = BTreeMap::new();
    for part in parts {
        by_group.entry(part.group.clone()).or_default().push(part);
    }
    let modules = group_modules(by_group.keys().map(String::as_str), aliases)?;
    let mut groups = Vec::new();
    for (name, mut parts) in by_group {
        parts.sort_by(|a, b| a.version.module.cmp(&b.version.module));
        for pair in parts.windows(2) {
            if pair[0].version.module == pair[1].version.module {
                let first = &pair[0].origin;
                return Err(Error {
                    problem: format!(
                        "{name}/{} is also defined by {}{}",
                        pair[1].version.name,
                        first
                            .file
                            .as_ref()
                            .map_or(String::new(), |f| f.display().to_string()),
                        first
                            .line_col
                            .map_or(String::new(), |(l, c)| format!(":{l}:{c}"))
                    ),
                    fix:
                        "define each group and version in one input (all CRDs, or one Rust module)"
                            .to_owned(),
                    ..pair[1].origin.clone()
                });
            }
        }
        let module = modules
            .get(&name)
            .cloned()
            .unwrap_or_else(|| names::module_name(&name));
        groups.push(Group {
            name,
            module,
            versions: parts.into_iter().map(|p| p.version).collect(),
        });
    }
    groups.sort_by(|a, b| a.module.cmp(&b.module));
    Ok(Api { groups })
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
