//! Typed server-side apply: apply configurations, their options, and `Extract`.
//!
//! An *apply configuration* is a kind's object with every field optional: it holds
//! exactly the fields a field manager means to own, and serializes only those (a full
//! typed object would claim every field it serializes, defaults included). kubegen
//! generates one per kind (`applyconfigurations/<group>/<version>/<kind>.rs` in the
//! generated tree, as client-go's `applyconfigurations` and controller-gen's
//! `applyconfiguration` generator), with a constructor that sets `apiVersion`, `kind`,
//! `name` (and `namespace`), `with_*` builder methods, and `extract_<kind>` functions
//! built on [`extract`] here. Typed clients take them: `apply_config(&cfg, &opts)`.
//!
//! [`extract`] reads an object's `metadata.managedFields` (FieldsV1) and keeps the fields
//! one manager owns through `Apply` (at the object, or a subresource such as `status`):
//! what that manager applied last, to be changed and applied again.

mod extract;
mod meta;

pub use extract::{atomic_object_paths, extract, extract_with, owned_fields};
pub use meta::{
    ObjectMetaApplyConfiguration, OwnerReferenceApplyConfiguration, ScaleApplyConfiguration,
    ScaleSpecApplyConfiguration,
};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The options of a server-side apply (client-go's `metav1.ApplyOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyOptions {
    /// `fieldManager`: who owns what is applied (required by the server).
    pub field_manager: String,
    /// `force`: take ownership of fields another manager owns instead of a 409 conflict.
    pub force: bool,
    /// `dryRun=All`: validate and return the result without storing it.
    pub dry_run: bool,
}

impl ApplyOptions {
    /// Options applying as `field_manager`.
    pub fn new(field_manager: impl Into<String>) -> Self {
        ApplyOptions {
            field_manager: field_manager.into(),
            ..Default::default()
        }
    }

    /// Takes ownership of conflicting fields.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    /// Validates without storing.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// The same options as the runtime's patch parameters.
    pub fn to_patch_params(&self) -> crate::client::PatchOptions {
        crate::client::PatchOptions {
            field_manager: Some(self.field_manager.clone()),
            force: self.force,
            dry_run: self.dry_run,
        }
    }
}

/// An apply configuration: a kind's object with only the fields it sets.
pub trait ApplyConfiguration: Serialize + DeserializeOwned + Clone {
    /// `metadata.name`, which the request's URL names.
    fn name(&self) -> Option<&str>;
}

/// Why an apply configuration could not be sent or extracted.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The configuration has no `metadata.name`.
    #[error("the apply configuration has no metadata.name; set it with the kind's constructor")]
    NoName,
    /// The object's owned fields do not fit the apply configuration.
    #[error("the fields owned by {manager:?} do not decode as the apply configuration: {source}")]
    Decode {
        /// The field manager.
        manager: String,
        /// serde's error.
        source: serde_json::Error,
    },
}
