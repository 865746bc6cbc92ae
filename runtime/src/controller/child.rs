//! Children owned by a primary: create-or-update with a controller owner reference
//! (controller-runtime's `controllerutil.CreateOrUpdate` and
//! `SetControllerReference`).
//!
//! Contract of [`create_or_update`]:
//! - The child is read by name; when missing, a default object with that name is
//!   mutated, given the owner's controller reference and created ([`Operation::Created`]).
//! - When present, a copy is mutated and given the controller reference; an unchanged
//!   copy writes nothing ([`Operation::Unchanged`]), a changed one is replaced with the
//!   resourceVersion read, so a concurrent change is a 409 Conflict for the caller to
//!   retry ([`Operation::Updated`]).
//! - A child controlled by another owner is not taken over: [`Error::AlreadyOwned`]
//!   (only one owner reference may say `controller: true`).
//!
//! The owner must come from the API server (it needs a name and a uid); owner and child
//! share a namespace (or the owner is cluster-scoped): the API server's garbage
//! collector ignores references that cross namespaces.

use std::fmt;

use kube::api::{Api, PostParams};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::object::Object;

/// What [`create_or_update`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// The child did not exist and was created.
    Created,
    /// The child existed and was replaced.
    Updated,
    /// The child existed and already matched: nothing was written.
    Unchanged,
}

/// Why [`create_or_update`] failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The owner has no name or uid.
    #[error("the owner has no name or uid: pass the object read from the API server")]
    OwnerWithoutIdentity,
    /// Another object controls the child.
    #[error("{child} is already controlled by {kind} {name}; remove that owner reference first")]
    AlreadyOwned {
        /// The child's name.
        child: String,
        /// The controlling owner's kind.
        kind: String,
        /// The controlling owner's name.
        name: String,
    },
    /// The API request failed.
    #[error("{0}")]
    Api(#[from] kube::Error),
}

/// Makes `owner` the controller of `child` (controller-runtime's
/// `SetControllerReference`): its reference is added, or updated in place when present.
pub fn set_controller_reference<P, C>(owner: &P, child: &mut C) -> Result<(), Error>
where
    P: kube::Resource<DynamicType = ()>,
    C: kube::Resource,
{
    let wanted = owner
        .controller_owner_ref(&())
        .ok_or(Error::OwnerWithoutIdentity)?;
    if let Some(other) = child
        .meta()
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true) && r.uid != wanted.uid)
    {
        return Err(Error::AlreadyOwned {
            child: child_name(child),
            kind: other.kind.clone(),
            name: other.name.clone(),
        });
    }
    let refs = child
        .meta_mut()
        .owner_references
        .get_or_insert_with(Vec::new);
    match refs.iter_mut().find(|r| r.uid == wanted.uid) {
        Some(existing) => *existing = wanted,
        None => refs.push(wanted),
    }
    Ok(())
}

fn child_name<C: kube::Resource>(child: &C) -> String {
    child.meta().name.clone().unwrap_or_default()
}

/// Creates or updates the child `name` of `owner` through `api` (see the module docs);
/// `mutate` sets the fields the owner decides.
///
/// ```no_run
/// # async fn demo(owner: k8s_openapi::api::apps::v1::Deployment, client: kube::Client) -> Result<(), kubegen_runtime::controller::child::Error> {
/// use std::collections::BTreeMap;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubegen_runtime::controller::child::create_or_update;
///
/// let api = kube::Api::<ConfigMap>::namespaced(client, "default");
/// let (_cm, operation) = create_or_update(&api, &owner, "web-config", |cm| {
///     cm.data = Some(BTreeMap::from([("replicas".into(), "3".into())]));
/// })
/// .await?;
/// println!("{operation:?}");
/// # Ok(())
/// # }
/// ```
pub async fn create_or_update<P, C>(
    api: &Api<C>,
    owner: &P,
    name: &str,
    mutate: impl FnOnce(&mut C),
) -> Result<(C, Operation), Error>
where
    P: kube::Resource<DynamicType = ()>,
    C: Object + Default + PartialEq + Serialize + DeserializeOwned,
{
    match api.get_opt(name).await? {
        None => {
            let mut child = C::default();
            child.meta_mut().name = Some(name.to_owned());
            mutate(&mut child);
            set_controller_reference(owner, &mut child)?;
            let created = api.create(&PostParams::default(), &child).await?;
            Ok((created, Operation::Created))
        }
        Some(existing) => {
            let mut child = existing.clone();
            mutate(&mut child);
            set_controller_reference(owner, &mut child)?;
            if child == existing {
                return Ok((existing, Operation::Unchanged));
            }
            let updated = api.replace(name, &PostParams::default(), &child).await?;
            Ok((updated, Operation::Updated))
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Created => "created",
            Operation::Updated => "updated",
            Operation::Unchanged => "unchanged",
        })
    }
}
