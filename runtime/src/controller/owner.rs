//! Owned objects to their owners' keys (controller-runtime's `EnqueueRequestForOwner`).
//!
//! Contract: an owned object maps to the key of each owner reference whose apiVersion's
//! group and whose kind are the primary's; with [`OwnerMatch::Controller`] (the default
//! of [`Builder::owns`](super::Builder::owns)) only the reference with `controller: true`
//! counts. The version is not compared: an owner written at another version of the same
//! group is the same object. A namespaced owner lives in its child's namespace (owner
//! references cannot cross namespaces); a cluster-scoped owner's key is its name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// Which owner references of an owned object enqueue their owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OwnerMatch {
    /// Only the controller reference (`controller: true`), as controller-runtime's
    /// `OnlyControllerOwner()`.
    #[default]
    Controller,
    /// Every reference to an owner of the primary's group and kind.
    EveryOwner,
}

/// The primary kind as owner references name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnerKind {
    pub(crate) group: String,
    pub(crate) kind: String,
    pub(crate) cluster_scoped: bool,
}

impl OwnerKind {
    /// The keys of the owners of an object in `namespace` with `refs`.
    pub(crate) fn owner_keys(
        &self,
        namespace: Option<&str>,
        refs: &[OwnerReference],
        matching: OwnerMatch,
    ) -> Vec<String> {
        refs.iter()
            .filter(|r| matching == OwnerMatch::EveryOwner || r.controller == Some(true))
            .filter(|r| r.kind == self.kind && group_of(&r.api_version) == self.group)
            .map(|r| match namespace {
                Some(ns) if !self.cluster_scoped && !ns.is_empty() => format!("{ns}/{}", r.name),
                _ => r.name.clone(),
            })
            .collect()
    }
}

/// The group of an apiVersion (`apps/v1` -> `apps`, `v1` -> ``).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(
        api_version: &str,
        kind: &str,
        name: &str,
        controller: Option<bool>,
    ) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller,
            block_owner_deletion: None,
        }
    }

    #[test]
    fn only_the_controller_reference_of_the_primary_kind_maps() {
        let foo = OwnerKind {
            group: "example.com".into(),
            kind: "Foo".into(),
            cluster_scoped: false,
        };
        let refs = [
            owner("example.com/v1", "Foo", "a", Some(true)),
            owner("example.com/v1", "Foo", "b", None),
            owner("other.com/v1", "Foo", "c", Some(true)),
            owner("example.com/v1", "Bar", "d", Some(true)),
        ];
        assert_eq!(
            foo.owner_keys(Some("n"), &refs, OwnerMatch::Controller),
            ["n/a"]
        );
        assert_eq!(
            foo.owner_keys(Some("n"), &refs, OwnerMatch::EveryOwner),
            ["n/a", "n/b"]
        );
        // Another version of the same group is the same owner.
        let v2 = [owner("example.com/v2beta1", "Foo", "a", Some(true))];
        assert_eq!(
            foo.owner_keys(Some("n"), &v2, OwnerMatch::Controller),
            ["n/a"]
        );
    }

    #[test]
    fn core_group_and_cluster_scoped_owners() {
        let node = OwnerKind {
            group: String::new(),
            kind: "Node".into(),
            cluster_scoped: true,
        };
        let refs = [owner("v1", "Node", "n1", Some(true))];
        assert_eq!(
            node.owner_keys(Some("ns"), &refs, OwnerMatch::Controller),
            ["n1"]
        );
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(group_of("v1"), "");
    }
}
