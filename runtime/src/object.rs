//! Objects, keys and references.
//!
//! Contract:
//! - Every object the runtime handles is a [`kube::Resource`]: k8s-openapi's built-in
//!   types, kube-derive types, kubegen-generated types and [`DynamicObject`] alike. The
//!   runtime reads only their `metadata`; it never needs to know the concrete type
//!   except where a caller asks for it back.
//! - An object's key is `namespace/name`, or `name` when its namespace is empty
//!   (cluster-scoped), as client-go's `MetaNamespaceKeyFunc` computes it. The name is not
//!   validated: an object with an empty name has key `ns/` (or `""`). Every typed object
//!   has metadata, so computing a key cannot fail.
//! - [`split_meta_namespace_key`] is the inverse: `name` gives an empty namespace,
//!   `ns/name` both parts, anything with more than one `/` is an error.
//! - [`AnyObject`] erases the concrete type for generic listers and informers; the
//!   concrete type can be recovered with [`AnyObject::as_any`] or
//!   [`downcast_arc`].
//!
//! It does not validate names, namespaces or any other metadata: that is the API
//! server's job.

use std::any::Any;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
pub use kube::core::{
    ApiResource, DynamicObject, GroupVersion, GroupVersionKind, GroupVersionResource,
};

/// An object the runtime can cache and share across tasks.
///
/// Blanket-implemented for every [`kube::Resource`] that is `Clone + Send + Sync +
/// Debug + 'static`; users never implement it by hand.
pub trait Object: kube::Resource + Clone + Send + Sync + fmt::Debug + 'static {}

impl<T> Object for T where T: kube::Resource + Clone + Send + Sync + fmt::Debug + 'static {}

/// An object whose concrete type has been erased, for generic listers and informers.
///
/// Blanket-implemented for every [`kube::Resource`] that is `Send + Sync + Debug +
/// 'static`.
pub trait AnyObject: Send + Sync + fmt::Debug + 'static {
    /// The object's metadata.
    fn object_meta(&self) -> &ObjectMeta;
    /// The object as [`Any`], to downcast by reference.
    fn as_any(&self) -> &dyn Any;
    /// The shared object as `Arc<dyn Any>`, to downcast without copying (see
    /// [`downcast_arc`]).
    fn into_any_arc(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<T> AnyObject for T
where
    T: kube::Resource + Send + Sync + fmt::Debug + 'static,
{
    fn object_meta(&self) -> &ObjectMeta {
        self.meta()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn into_any_arc(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// Recovers the concrete type of a type-erased shared object, without copying it.
///
/// Returns the object unchanged in `Err` when it is not a `K`.
pub fn downcast_arc<K: AnyObject>(obj: Arc<dyn AnyObject>) -> Result<Arc<K>, Arc<dyn AnyObject>> {
    if obj.as_any().is::<K>() {
        match obj.into_any_arc().downcast::<K>() {
            Ok(k) => Ok(k),
            // `is::<K>()` just held, so the downcast cannot fail.
            Err(_) => unreachable!("type checked by Any::is"),
        }
    } else {
        Err(obj)
    }
}

/// The key of an object's metadata: `namespace/name`, or `name` when the namespace is
/// empty or absent (client-go's `MetaNamespaceKeyFunc`).
pub fn meta_namespace_key(meta: &ObjectMeta) -> String {
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => {
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        _ => name.to_owned(),
    }
}

/// The key of an object: `namespace/name`, or `name` when cluster-scoped.
pub fn object_key<K: kube::Resource>(obj: &K) -> String {
    meta_namespace_key(obj.meta())
}

/// A key that could not be split into namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected key format: {key:?}")]
pub struct KeyFormatError {
    /// The key as given.
    pub key: String,
}

/// Splits a key made by [`meta_namespace_key`] into `(namespace, name)`; the namespace is
/// `""` for a cluster-scoped key (client-go's `SplitMetaNamespaceKey`).
///
/// `"ns/foo"` gives `("ns", "foo")`, `"foo"` and `"/foo"` give `("", "foo")`, and a key
/// with more than one `/` is an error.
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), KeyFormatError> {
    let mut parts = key.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Ok(("", name)),
        (Some(ns), Some(name), None) => Ok((ns, name)),
        _ => Err(KeyFormatError {
            key: key.to_owned(),
        }),
    }
}

/// A reference to one object by namespace and name (client-go's `ObjectName`).
///
/// It displays as the object's key: `namespace/name`, or `name` when the namespace is
/// `None`. Workqueues of controllers usually carry these.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// The namespace; `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectRef {
    /// A reference to a namespaced object.
    pub fn new_namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        let namespace = namespace.into();
        ObjectRef {
            namespace: (!namespace.is_empty()).then_some(namespace),
            name: name.into(),
        }
    }

    /// A reference to a cluster-scoped object.
    pub fn new_cluster(name: impl Into<String>) -> Self {
        ObjectRef {
            namespace: None,
            name: name.into(),
        }
    }

    /// The reference to an object.
    pub fn from_obj<K: kube::Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        ObjectRef {
            namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
            name: meta.name.clone().unwrap_or_default(),
        }
    }

    /// The object's key, as [`meta_namespace_key`] computes it.
    pub fn key(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

impl FromStr for ObjectRef {
    type Err = KeyFormatError;

    fn from_str(key: &str) -> Result<Self, Self::Err> {
        let (ns, name) = split_meta_namespace_key(key)?;
        Ok(ObjectRef::new_namespaced(ns, name))
    }
}

/// Decodes a required field of a built-in type as k8s-openapi does: `null` gives the
/// field's default, as a missing field does (Go writes `null` for a nil pointer without
/// `omitempty`, such as a DaemonSet's unset `spec.selector`). Generated compact mirrors
/// (`kubegen_kubernetes::compact`) name it in `#[serde(deserialize_with = ..)]`.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    Ok(<Option<T> as serde::Deserialize>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};

    fn pod(ns: &str, name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn keys_of_namespaced_and_cluster_objects() {
        // SEMANTICS 1.1
        assert_eq!(object_key(&pod("ns", "foo")), "ns/foo");
        let node = Node {
            metadata: ObjectMeta {
                name: Some("n1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(object_key(&node), "n1");
        // An empty namespace is cluster-scoped; an empty name is not validated.
        assert_eq!(object_key(&pod("", "x")), "x");
        assert_eq!(object_key(&pod("ns", "")), "ns/");
    }

    #[test]
    fn split_keys() {
        // SEMANTICS 1.2
        assert_eq!(split_meta_namespace_key("ns/foo"), Ok(("ns", "foo")));
        assert_eq!(split_meta_namespace_key("foo"), Ok(("", "foo")));
        assert_eq!(split_meta_namespace_key("/foo"), Ok(("", "foo")));
        let err = split_meta_namespace_key("a/b/c").unwrap_err();
        assert_eq!(err.to_string(), r#"unexpected key format: "a/b/c""#);
    }

    #[test]
    fn object_ref_displays_as_key_and_parses_back() {
        let r = ObjectRef::from_obj(&pod("ns", "foo"));
        assert_eq!(r.to_string(), "ns/foo");
        assert_eq!("ns/foo".parse::<ObjectRef>(), Ok(r));
        let c: ObjectRef = "n1".parse().unwrap();
        assert_eq!(c, ObjectRef::new_cluster("n1"));
        assert_eq!(c.key(), "n1");
        assert_eq!(ObjectRef::new_namespaced("", "x").namespace, None);
    }

    #[test]
    fn any_object_downcasts_without_copy() {
        let p: Arc<dyn AnyObject> = Arc::new(pod("ns", "foo"));
        assert_eq!(p.object_meta().name.as_deref(), Some("foo"));
        let before = Arc::as_ptr(&p) as *const ();
        let back = downcast_arc::<Node>(p).unwrap_err();
        let pod = downcast_arc::<Pod>(back).unwrap();
        assert_eq!(Arc::as_ptr(&pod) as *const (), before);
    }
}
