//! Listers: read-only, label-selected views of an informer's [`Indexer`] (client-go's
//! generated listers, `GenericLister`, `ListAll` and `ListAllByNamespace`).
//!
//! Contract:
//! - Results are the cache's own shared objects (`Arc`s out of the indexer), never
//!   copies: identical to what the indexer holds at the time of the call. They are
//!   immutable by construction; a caller that needs to change one clones it first.
//! - A selector that [is empty](Selector::is_empty) (everything) returns every object
//!   without reading labels; `Selector::nothing()` returns nothing; any other selector
//!   keeps the objects whose labels it matches.
//! - A namespace lister reads the [`NAMESPACE_INDEX`] bucket of its namespace, not the
//!   whole store. When the indexer has no namespace index it logs a warning and scans
//!   (SEMANTICS 6.3). The namespace `""` means all namespaces for `list`.
//! - `get` misses are NotFound [`StatusError`]s worded as client-go's listers word them:
//!   the lowercase singular kind as resource (`pod "x" not found`, `deployment.apps "web"
//!   not found`), or the plural resource for a lister built with an explicit
//!   [`GroupResource`] (the generic lister: `pods "x" not found`).
//!
//! It does not order results and never contacts the API server: a miss means "not in the
//! cache (yet)".

use std::fmt;
use std::sync::Arc;

use crate::cache::store::{ReadOnlyIndexer, NAMESPACE_INDEX};
use crate::errors::{GroupResource, StatusError};
use crate::labels::Selector;
use crate::object::AnyObject;

/// The objects of `indexer` whose labels match `selector` (client-go's `ListAll`).
///
/// An empty selector returns everything without reading labels; `Selector::nothing()`
/// returns nothing.
pub fn list_all<K: AnyObject + ?Sized>(
    indexer: &ReadOnlyIndexer<K>,
    selector: &Selector,
) -> Vec<Arc<K>> {
    if selector.is_empty() {
        return indexer.list();
    }
    if selector.is_nothing() {
        return Vec::new();
    }
    indexer.list_filtered(|o| selector.matches(&o.object_meta().labels))
}

/// The objects of `indexer` in `namespace` whose labels match `selector` (client-go's
/// `ListAllByNamespace`); `namespace == ""` means all namespaces.
///
/// Reads the namespace index; without one, logs a warning and scans every object.
pub fn list_all_by_namespace<K: AnyObject + ?Sized>(
    indexer: &ReadOnlyIndexer<K>,
    namespace: &str,
    selector: &Selector,
) -> Vec<Arc<K>> {
    if namespace.is_empty() {
        return list_all(indexer, selector);
    }
    if selector.is_nothing() {
        return Vec::new();
    }
    let everything = selector.is_empty();
    let store = indexer.store();
    let by_index = store.by_index_filtered(NAMESPACE_INDEX, namespace, |o| {
        everything || selector.matches(&o.object_meta().labels)
    });
    match by_index {
        Ok(objs) => objs,
        Err(_) => {
            tracing::warn!(
                namespace,
                "cannot list by namespace: the indexer has no {NAMESPACE_INDEX:?} index; \
                 scanning every object instead"
            );
            store.list_filtered(|o| {
                let meta = o.object_meta();
                meta.namespace.as_deref().unwrap_or_default() == namespace
                    && (everything || selector.matches(&meta.labels))
            })
        }
    }
}

/// The group and resource a lister names in its NotFound errors.
#[derive(Debug, PartialEq, Eq)]
struct Resource {
    group: String,
    resource: String,
}

impl Resource {
    fn not_found(&self, name: &str) -> StatusError {
        StatusError::not_found(
            GroupResource {
                group: &self.group,
                resource: &self.resource,
            },
            name,
        )
    }
}

/// Lists and gets objects of one kind from an informer's indexer (client-go's generated
/// `<Kind>Lister`; with `K = dyn AnyObject`, its `GenericLister`).
///
/// Cloning is cheap and shares the indexer.
///
/// ```
/// use kubegen_runtime::cache::lister::Lister;
/// use kubegen_runtime::cache::store::{meta_namespace_key_func, namespace_indexers, Indexer};
/// use kubegen_runtime::labels::Selector;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let indexer = Indexer::new(meta_namespace_key_func(), namespace_indexers());
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("default".into());
/// pod.metadata.name = Some("web".into());
/// pod.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
/// indexer.add(pod).unwrap();
///
/// let pods = Lister::new(indexer);
/// let app_web = Selector::parse("app=web").unwrap();
/// assert_eq!(pods.namespaced("default").list(&app_web).len(), 1);
/// assert!(pods.namespaced("default").get("web").is_ok());
/// let err = pods.namespaced("default").get("db").unwrap_err();
/// assert!(err.is_not_found());
/// assert_eq!(err.to_string(), r#"pod "db" not found"#);
/// ```
pub struct Lister<K: ?Sized> {
    indexer: ReadOnlyIndexer<K>,
    resource: Arc<Resource>,
}

/// A lister over type-erased objects, built with the plural resource it serves
/// (client-go's `GenericLister`, from `ForResource`).
pub type GenericLister = Lister<dyn AnyObject>;

/// A namespace view of a [`GenericLister`] (client-go's `GenericNamespaceLister`).
pub type GenericNamespaceLister = NamespaceLister<dyn AnyObject>;

impl<K: ?Sized> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            indexer: self.indexer.clone(),
            resource: Arc::clone(&self.resource),
        }
    }
}

impl<K: ?Sized> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("group", &self.resource.group)
            .field("resource", &self.resource.resource)
            .field("indexer", &self.indexer)
            .finish()
    }
}

impl<K> Lister<K>
where
    K: AnyObject + kube::Resource<DynamicType = ()>,
{
    /// A lister over `indexer` whose errors name `K`'s lowercase kind and group, as
    /// client-go's generated listers do (`deployment.apps "web" not found`).
    pub fn new(indexer: impl Into<ReadOnlyIndexer<K>>) -> Self {
        Self::for_resource(
            indexer,
            GroupResource {
                group: &K::group(&()),
                resource: &K::kind(&()).to_lowercase(),
            },
        )
    }
}

impl<K: AnyObject + ?Sized> Lister<K> {
    /// A lister over `indexer` whose errors name `resource` (for the generic lister: the
    /// plural resource, `pods "x" not found`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kubegen_runtime::cache::lister::GenericLister;
    /// use kubegen_runtime::cache::store::{meta_namespace_key_func, namespace_indexers, Indexer};
    /// use kubegen_runtime::errors::GroupResource;
    /// use kubegen_runtime::object::AnyObject;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let indexer: Indexer<dyn AnyObject> =
    ///     Indexer::new(meta_namespace_key_func(), namespace_indexers());
    /// let pods = GenericLister::for_resource(indexer, GroupResource { group: "", resource: "pods" });
    /// let err = pods.namespaced("ns").get("x").unwrap_err();
    /// assert_eq!(err.to_string(), r#"pods "x" not found"#);
    /// ```
    pub fn for_resource(
        indexer: impl Into<ReadOnlyIndexer<K>>,
        resource: GroupResource<'_>,
    ) -> Self {
        Lister {
            indexer: indexer.into(),
            resource: Arc::new(Resource {
                group: resource.group.to_owned(),
                resource: resource.resource.to_owned(),
            }),
        }
    }

    /// The objects in every namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        list_all(&self.indexer, selector)
    }

    /// The object named `name`, for a cluster-scoped kind (its key is the name).
    pub fn get(&self, name: &str) -> Result<Arc<K>, StatusError> {
        self.indexer
            .get_by_key(name)
            .ok_or_else(|| self.resource.not_found(name))
    }

    /// A view of one namespace (client-go's `<Kind>s(namespace)`, or `ByNamespace`).
    pub fn namespaced(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            lister: self.clone(),
            namespace: namespace.to_owned(),
        }
    }

    /// The indexer this lister reads, read-only.
    pub fn indexer(&self) -> &ReadOnlyIndexer<K> {
        &self.indexer
    }
}

/// Lists and gets objects of one kind in one namespace (client-go's generated
/// `<Kind>NamespaceLister`).
pub struct NamespaceLister<K: ?Sized> {
    lister: Lister<K>,
    namespace: String,
}

impl<K: ?Sized> Clone for NamespaceLister<K> {
    fn clone(&self) -> Self {
        NamespaceLister {
            lister: self.lister.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<K: ?Sized> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .field("lister", &self.lister)
            .finish()
    }
}

impl<K: AnyObject + ?Sized> NamespaceLister<K> {
    /// The objects in this namespace whose labels match `selector` (every namespace when
    /// the namespace is `""`).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        list_all_by_namespace(&self.lister.indexer, &self.namespace, selector)
    }

    /// The object named `name` in this namespace (key `namespace/name`, joined as
    /// client-go joins it even when the namespace is `""`).
    pub fn get(&self, name: &str) -> Result<Arc<K>, StatusError> {
        let key = format!("{}/{}", self.namespace, name);
        self.lister
            .indexer
            .get_by_key(&key)
            .ok_or_else(|| self.lister.resource.not_found(name))
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use k8s_openapi::api::storage::v1::StorageClass;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::cache::store::{meta_namespace_key_func, namespace_indexers, Indexer, Indexers};

    fn meta(ns: &str, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            namespace: (!ns.is_empty()).then(|| ns.to_string()),
            name: Some(name.into()),
            labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            }),
            ..Default::default()
        }
    }

    fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: meta(ns, name, labels),
            ..Default::default()
        }
    }

    fn pod_indexer(pods: Vec<Pod>) -> Indexer<Pod> {
        let indexer = Indexer::new(meta_namespace_key_func(), namespace_indexers());
        for p in pods {
            indexer.add(p).unwrap();
        }
        indexer
    }

    fn names<K: AnyObject + ?Sized>(objs: &[Arc<K>]) -> BTreeSet<String> {
        objs.iter()
            .map(|o| o.object_meta().name.clone().unwrap_or_default())
            .collect()
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn sel(s: &str) -> Selector {
        Selector::parse(s).unwrap()
    }

    #[test]
    fn list_by_selector() {
        // SEMANTICS 6.1
        let lister = Lister::new(pod_indexer(vec![
            pod("ns", "a", &[("app", "x")]),
            pod("ns", "b", &[("app", "y")]),
            pod("ns", "c", &[]),
        ]));
        assert_eq!(
            names(&lister.list(&Selector::everything())),
            set(&["a", "b", "c"])
        );
        assert_eq!(names(&lister.list(&sel("app=x"))), set(&["a"]));
        assert_eq!(names(&lister.list(&sel("app"))), set(&["a", "b"]));
        assert_eq!(names(&lister.list(&sel("!app"))), set(&["c"]));
        assert!(lister.list(&Selector::nothing()).is_empty());
        // The same through the namespace view and the helpers.
        let ns = lister.namespaced("ns");
        assert_eq!(names(&ns.list(&sel("app=x"))), set(&["a"]));
        assert!(ns.list(&Selector::nothing()).is_empty());
        assert_eq!(
            names(&list_all(lister.indexer(), &sel("app in (x,y)"))),
            set(&["a", "b"])
        );
        assert!(list_all_by_namespace(lister.indexer(), "ns", &Selector::nothing()).is_empty());
    }

    #[test]
    fn namespace_lister_lists_its_namespace() {
        // SEMANTICS 6.2
        let lister = Lister::new(pod_indexer(vec![
            pod("ns1", "a", &[]),
            pod("ns2", "b", &[]),
        ]));
        assert_eq!(
            names(&lister.namespaced("ns1").list(&Selector::everything())),
            set(&["a"])
        );
        assert_eq!(
            names(&lister.namespaced("ns2").list(&Selector::everything())),
            set(&["b"])
        );
        assert_eq!(
            names(&lister.namespaced("").list(&Selector::everything())),
            set(&["a", "b"])
        );
        assert!(lister
            .namespaced("ns3")
            .list(&Selector::everything())
            .is_empty());
        assert_eq!(lister.namespaced("ns1").namespace(), "ns1");
    }

    #[test]
    fn namespace_lister_scans_without_the_namespace_index() {
        // SEMANTICS 6.3
        let indexer = Indexer::new(meta_namespace_key_func(), Indexers::new());
        indexer.add(pod("ns1", "a", &[("app", "x")])).unwrap();
        indexer.add(pod("ns1", "c", &[])).unwrap();
        indexer.add(pod("ns2", "b", &[("app", "x")])).unwrap();
        let lister = Lister::new(indexer);
        assert_eq!(
            names(&lister.namespaced("ns1").list(&Selector::everything())),
            set(&["a", "c"])
        );
        assert_eq!(
            names(&lister.namespaced("ns1").list(&sel("app=x"))),
            set(&["a"])
        );
    }

    #[test]
    fn get_miss_is_not_found_with_lister_wording() {
        // SEMANTICS 6.4
        let lister = Lister::new(pod_indexer(vec![pod("ns1", "there", &[])]));
        assert!(lister.namespaced("ns1").get("there").is_ok());
        let err = lister.namespaced("ns1").get("missing").unwrap_err();
        assert!(err.is_not_found());
        assert_eq!(err.code(), 404);
        assert_eq!(err.reason(), "NotFound");
        assert_eq!(err.message(), r#"pod "missing" not found"#);
        let details = err.details().unwrap();
        assert_eq!(details.kind, "pod");
        assert_eq!(details.name, "missing");
        assert_eq!(details.group, "");
        // The object exists in another namespace only: still a miss.
        assert!(lister
            .namespaced("ns2")
            .get("there")
            .unwrap_err()
            .is_not_found());
    }

    #[test]
    fn grouped_kinds_name_their_group() {
        // SEMANTICS 6.5
        let indexer = Indexer::new(meta_namespace_key_func(), namespace_indexers());
        let lister = Lister::<Deployment>::new(indexer);
        let err = lister.namespaced("default").get("web").unwrap_err();
        assert!(err.is_not_found());
        assert_eq!(err.message(), r#"deployment.apps "web" not found"#);
        assert_eq!(err.details().unwrap().group, "apps");
        assert_eq!(err.details().unwrap().kind, "deployment");

        let classes = Lister::<StorageClass>::new(Indexer::new(
            meta_namespace_key_func(),
            namespace_indexers(),
        ));
        assert_eq!(
            classes.get("x").unwrap_err().message(),
            r#"storageclass.storage.k8s.io "x" not found"#
        );
    }

    #[test]
    fn cluster_scoped_get_uses_the_name_as_key() {
        // SEMANTICS 6.6
        let indexer = Indexer::new(meta_namespace_key_func(), namespace_indexers());
        indexer
            .add(Node {
                metadata: meta("", "n1", &[]),
                ..Default::default()
            })
            .unwrap();
        let nodes = Lister::<Node>::new(indexer);
        assert_eq!(
            nodes.get("n1").unwrap().metadata.name.as_deref(),
            Some("n1")
        );
        assert_eq!(
            nodes.get("n2").unwrap_err().message(),
            r#"node "n2" not found"#
        );
        assert_eq!(names(&nodes.list(&Selector::everything())), set(&["n1"]));
    }

    #[test]
    fn generic_lister_uses_its_plural_resource() {
        // SEMANTICS 6.7
        let indexer: Indexer<dyn AnyObject> =
            Indexer::new(meta_namespace_key_func(), namespace_indexers());
        indexer
            .add(Arc::new(pod("ns", "a", &[("app", "x")])) as Arc<dyn AnyObject>)
            .unwrap();
        indexer
            .add(Arc::new(pod("other", "b", &[])) as Arc<dyn AnyObject>)
            .unwrap();
        let lister = GenericLister::for_resource(
            indexer,
            GroupResource {
                group: "",
                resource: "pods",
            },
        );
        let ns: GenericNamespaceLister = lister.namespaced("ns");
        let err = ns.get("x").unwrap_err();
        assert!(err.is_not_found());
        assert_eq!(err.message(), r#"pods "x" not found"#);
        assert_eq!(err.details().unwrap().kind, "pods");
        let found = ns.get("a").unwrap();
        let typed = crate::object::downcast_arc::<Pod>(found).unwrap();
        assert_eq!(typed.metadata.name.as_deref(), Some("a"));
        assert_eq!(names(&ns.list(&sel("app=x"))), set(&["a"]));
        assert_eq!(
            names(&lister.list(&Selector::everything())),
            set(&["a", "b"])
        );

        // An explicit group-resource for a grouped kind.
        let deployments = GenericLister::for_resource(
            Indexer::new(meta_namespace_key_func(), namespace_indexers()),
            GroupResource {
                group: "apps",
                resource: "deployments",
            },
        );
        assert_eq!(
            deployments
                .namespaced("d")
                .get("web")
                .unwrap_err()
                .message(),
            r#"deployments.apps "web" not found"#
        );
    }

    #[test]
    fn results_are_the_cached_instances() {
        // SEMANTICS 6.8
        let indexer = pod_indexer(vec![]);
        let stored = Arc::new(pod("ns", "a", &[("app", "x")]));
        indexer.add(Arc::clone(&stored)).unwrap();
        let lister = Lister::new(indexer);
        assert!(Arc::ptr_eq(
            &lister.list(&Selector::everything())[0],
            &stored
        ));
        assert!(Arc::ptr_eq(&lister.list(&sel("app=x"))[0], &stored));
        assert!(Arc::ptr_eq(
            &lister.namespaced("ns").list(&Selector::everything())[0],
            &stored
        ));
        assert!(Arc::ptr_eq(
            &lister.namespaced("ns").get("a").unwrap(),
            &stored
        ));
    }
}
