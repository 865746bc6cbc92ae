//! meta/v1 `ObjectMeta` and `OwnerReference` as apply configurations: only what is set is
//! sent, so applying labels does not claim a name's other metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The metadata of an apply configuration (client-go's `ObjectMetaApplyConfiguration`):
/// the fields a client may set; the server owns the rest (uid, resourceVersion, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMetaApplyConfiguration {
    /// `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `generateName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    /// `namespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `labels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// `annotations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// `ownerReferences`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Vec<OwnerReferenceApplyConfiguration>>,
    /// `finalizers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<Vec<String>>,
}

impl ObjectMetaApplyConfiguration {
    /// Sets `name`.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets `namespace`.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Sets `generateName`.
    pub fn with_generate_name(mut self, prefix: impl Into<String>) -> Self {
        self.generate_name = Some(prefix.into());
        self
    }

    /// Adds labels (a key given twice keeps the last value). As in client-go, adding
    /// none leaves the field unset, so an apply does not claim an empty map.
    pub fn with_labels<K: Into<String>, V: Into<String>>(
        mut self,
        labels: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        for (k, v) in labels {
            self.labels
                .get_or_insert_with(BTreeMap::new)
                .insert(k.into(), v.into());
        }
        self
    }

    /// Adds annotations.
    pub fn with_annotations<K: Into<String>, V: Into<String>>(
        mut self,
        annotations: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        for (k, v) in annotations {
            self.annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(k.into(), v.into());
        }
        self
    }

    /// Adds owner references.
    pub fn with_owner_references(
        mut self,
        refs: impl IntoIterator<Item = OwnerReferenceApplyConfiguration>,
    ) -> Self {
        for r in refs {
            self.owner_references.get_or_insert_with(Vec::new).push(r);
        }
        self
    }

    /// Adds finalizers.
    pub fn with_finalizers<S: Into<String>>(
        mut self,
        finalizers: impl IntoIterator<Item = S>,
    ) -> Self {
        for f in finalizers {
            self.finalizers.get_or_insert_with(Vec::new).push(f.into());
        }
        self
    }
}

/// An owner reference as an apply configuration (every field optional, as in
/// client-go's `OwnerReferenceApplyConfiguration`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReferenceApplyConfiguration {
    /// `apiVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `uid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// `controller`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// `blockOwnerDeletion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReferenceApplyConfiguration {
    /// A reference to `owner` (its apiVersion, kind, name and uid), marked as its
    /// controller when `controller` is true (with `blockOwnerDeletion`, as
    /// `metav1.NewControllerRef` does).
    pub fn to<K>(owner: &K, controller: bool) -> Self
    where
        K: k8s_openapi::Resource
            + k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    {
        let meta = owner.metadata();
        OwnerReferenceApplyConfiguration {
            api_version: Some(K::API_VERSION.to_owned()),
            kind: Some(K::KIND.to_owned()),
            name: meta.name.clone(),
            uid: meta.uid.clone(),
            controller: controller.then_some(true),
            block_owner_deletion: controller.then_some(true),
        }
    }
}

/// An `autoscaling/v1` Scale as an apply configuration (client-go's
/// `ScaleApplyConfiguration`), for `apply_scale`: the replicas a manager wants.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleApplyConfiguration {
    /// `autoscaling/v1`.
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub api_version: Option<String>,
    /// `Scale`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `metadata` (its name is the object's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMetaApplyConfiguration>,
    /// `spec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ScaleSpecApplyConfiguration>,
}

/// The `spec` of a [`ScaleApplyConfiguration`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleSpecApplyConfiguration {
    /// `replicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

impl ScaleApplyConfiguration {
    /// The Scale of the object `name`, with `apiVersion` and `kind` set.
    pub fn new(name: impl Into<String>) -> Self {
        ScaleApplyConfiguration {
            api_version: Some("autoscaling/v1".to_owned()),
            kind: Some("Scale".to_owned()),
            metadata: Some(ObjectMetaApplyConfiguration::default().with_name(name)),
            spec: None,
        }
    }

    /// Sets `spec.replicas`.
    pub fn with_replicas(mut self, replicas: i32) -> Self {
        self.spec.get_or_insert_with(Default::default).replicas = Some(replicas);
        self
    }
}

impl super::ApplyConfiguration for ScaleApplyConfiguration {
    fn name(&self) -> Option<&str> {
        self.metadata.as_ref()?.name.as_deref()
    }
}
