//! Per-resource behaviour, as kube-apiserver's `rest.Strategy`: what a resource's writes
//! do beyond the generic steps every write shares (metadata, schema, generation,
//! finalizers, storage).
//!
//! Contract:
//! - Every [`Registration`] carries exactly one [`Strategy`]; the writes ask it and never
//!   look at a resource's name. The default ([`GENERIC`]) adds nothing: a registered type
//!   the server knows nothing about is stored as sent.
//! - A strategy edits or judges one object; it reaches no storage. Work that needs the
//!   server afterwards (a controller to run) is returned as [`Wake`] items, which the
//!   writes hand to the controllers once the write is committed.
//! - The strategies of the built-in kinds live beside what they implement (`namespaces`,
//!   `crd_lifecycle`, `events`, `builtin_defaults`, ...) and are attached to a
//!   registration by `strategies::attach` when it is registered on a server.

use serde_json::{Map, Value};

use super::Registration;
use crate::errors::StatusError;

/// A JSON object, as the writes handle it.
pub(crate) type Object = Map<String, Value>;

/// A controller to run after a write is committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Wake {
    /// A namespace began terminating: run the namespace controller on it.
    Namespace(String),
    /// A CRD was written: run the names controller on it.
    CrdNames(String),
    /// A CRD began terminating: delete its custom resources.
    CrdCleanup(String),
    /// A CRD is gone: stop serving its resource and look at its group's names again.
    CrdRemoved,
}

/// What a subresource of the object itself does (the verbs' own subresources, `status`
/// and `scale`, are the registration's flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubresourceKind {
    /// Reads and writes the object's status, as `status` does (a CSR's `approval`).
    Status,
    /// `PUT` replaces a Namespace's `spec.finalizers` only.
    Finalize,
}

/// One subresource entry: its name in URLs and what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Subresource {
    /// The name after the object's name in URLs (`approval`).
    pub name: &'static str,
    /// What it does.
    pub kind: SubresourceKind,
}

/// The behaviour of one resource's writes. Every method has the generic default.
pub(crate) trait Strategy: Send + Sync {
    /// The strategy's name, for debugging and equality of registrations.
    fn name(&self) -> &'static str;

    /// PrepareForCreate: the kind's server-set fields of a new object from a client,
    /// after its metadata was filled.
    fn prepare_for_create(&self, _obj: &mut Object) -> Result<(), StatusError> {
        Ok(())
    }

    /// What a client's create does to the status (kube-apiserver's create strategies):
    /// a kind with a status subresource drops the client's status.
    fn reset_status(&self, reg: &Registration, obj: &mut Object) {
        if reg.status {
            obj.remove("status");
        }
    }

    /// Defaults of the kind, on create (`prev` None) or update through the API.
    fn defaults(&self, _reg: &Registration, _obj: &mut Object, _prev: Option<&Object>) {}

    /// Validation of the kind beyond metadata and schema, on create or update.
    fn validate(
        &self,
        _reg: &Registration,
        _obj: &Object,
        _prev: Option<&Object>,
    ) -> Result<(), StatusError> {
        Ok(())
    }

    /// The last checks and edits of a new object, under the storage lock (after the
    /// name was found free).
    fn before_insert(&self, _obj: &mut Object) -> Result<(), StatusError> {
        Ok(())
    }

    /// PrepareForUpdate of the main resource (not the status): what an update may not
    /// change.
    fn prepare_for_update(&self, _prev: &Object, _new: &mut Object) {}

    /// Canonicalize and the last validation of an update, under the storage lock.
    fn before_update(&self, _new: &mut Object) -> Result<(), StatusError> {
        Ok(())
    }

    /// Whether a PUT must carry `metadata.resourceVersion` (the apiextensions server's
    /// resources: CRDs and custom resources).
    fn update_requires_resource_version(&self, reg: &Registration) -> bool {
        reg.custom
    }

    /// AllowCreateOnUpdate: whether a PUT to a name that does not exist creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Metadata fields a status write takes besides the status.
    fn status_metadata(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether the object may be deleted (403 otherwise).
    fn check_deletable(&self, _name: &str) -> Result<(), StatusError> {
        Ok(())
    }

    /// Graceful deletion (`CheckGracefulDelete`): marks `obj`, not yet being deleted, as
    /// kube-apiserver does before it removes it (deletionTimestamp,
    /// deletionGracePeriodSeconds from `grace`, the option the client sent) and returns
    /// true; false: the kind is removed without being marked.
    fn mark_graceful_deletion(
        &self,
        _obj: &mut Object,
        _grace: Option<i64>,
    ) -> Result<bool, StatusError> {
        Ok(false)
    }

    /// The first DELETE of a kind whose deletion only marks the object (sets its
    /// deletionTimestamp and what else the kind shows) and leaves the rest to a
    /// controller: the controller to wake. None: deleted as any object is.
    fn begin_deletion(&self, _obj: &mut Object) -> Result<Option<Wake>, StatusError> {
        Ok(None)
    }

    /// Controllers to run after an object was stored (`removed`: its last finalizer
    /// went, so it is gone).
    fn after_write(&self, _obj: &Object, _removed: bool) -> Vec<Wake> {
        Vec::new()
    }

    /// The kind's subresources besides `status` and `scale`.
    fn subresources(&self) -> &'static [Subresource] {
        &[]
    }
}

/// The strategy of a resource the server knows nothing special about.
#[derive(Debug)]
pub(crate) struct Generic;

impl Strategy for Generic {
    fn name(&self) -> &'static str {
        "generic"
    }
}

/// The default strategy.
pub(crate) static GENERIC: Generic = Generic;

/// A registration's strategy: a shared reference compared by name, so that
/// registrations stay plain comparable data.
#[derive(Clone, Copy)]
pub(crate) struct StrategyRef(pub &'static dyn Strategy);

impl Default for StrategyRef {
    fn default() -> Self {
        StrategyRef(&GENERIC)
    }
}

impl std::ops::Deref for StrategyRef {
    type Target = dyn Strategy;
    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl std::fmt::Debug for StrategyRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

impl PartialEq for StrategyRef {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

impl Eq for StrategyRef {}
