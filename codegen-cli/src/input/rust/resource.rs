//! A kind's resource markers (controller-gen's `+kubebuilder:resource`, `subresource`,
//! `printcolumn`, `selectablefield`, `storageversion`, `unservedversion`,
//! `deprecatedversion`, `skipversion`, `metadata`; kubegen's `+kubegen:resource:*`) ->
//! the model's kind, read through the marker registry. The model is then the one
//! description of the resource: the generated resource info (short names, printer
//! columns), the fake clientset's registration and `kubegen crd` all read it.

use kubegen_templates::markers::ResourceFacts;

use super::kinds::FoundKind;
use super::source::Item;
use crate::error::Error;

/// What `item`'s markers say about the resource of `found`, applied to its kind.
/// Returns whether the version is marked `+kubebuilder:skipversion`.
pub fn apply(item: &Item, found: &mut FoundKind) -> Result<ResourceFacts, Error> {
    let mut facts = ResourceFacts::new();
    for (i, m) in item.markers.iter().enumerate() {
        facts
            .apply(&m.name, m.value.as_deref(), i)
            .map_err(|e| m.error(&item.file, e.problem, e.fix))?;
    }
    let kube_derive = item.derives("CustomResource");
    let kind = &mut found.kind;
    if let Some(k) = &facts.kind {
        kind.names.kind = k.clone();
    }
    if let Some(p) = &facts.plural {
        kind.names.plural = p.clone();
    }
    if let Some(s) = &facts.singular {
        kind.names.singular = s.clone();
    }
    if let Some(s) = facts.scope {
        kind.scope = s;
    }
    if let Some(s) = &facts.short_names {
        kind.names.short_names = s.clone();
    }
    if let Some(c) = &facts.categories {
        kind.names.categories = c.clone();
    }
    kind.status_subresource |= facts.kind_status;
    if facts.scale.is_some() {
        kind.scale = facts.scale.clone();
    }
    kind.printer_columns.extend(facts.columns.iter().cloned());
    kind.selectable_fields
        .extend(facts.selectable.iter().cloned());
    kind.crd_metadata
        .annotations
        .extend(facts.metadata.annotations.clone());
    kind.crd_metadata
        .labels
        .extend(facts.metadata.labels.clone());
    if kind.names.singular.is_empty() {
        kind.names.singular = kind.names.kind.to_lowercase();
    }
    if !kube_derive {
        // Markers say it (kube-derive's attributes said it already: storage defaults to
        // true there, as in kube-derive). A lone version is the storage version; with
        // several, exactly one must be marked (checked over all versions).
        kind.storage = facts.storage;
        kind.served = facts.served;
        if let Some(warning) = &facts.deprecated {
            kind.deprecated = true;
            kind.deprecation_warning = warning.clone();
        }
        // controller-gen's rule, after `+kubegen:resource:kind=` named the kind.
        kind.names.list_kind = facts
            .list_kind
            .clone()
            .unwrap_or_else(|| format!("{}List", kind.names.kind));
    } else if let Some(l) = &facts.list_kind {
        kind.names.list_kind = l.clone();
    }
    Ok(facts)
}
