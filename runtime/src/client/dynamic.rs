//! The dynamic client (client-go's `dynamic` package): resources chosen at run time by
//! group/version/resource, objects as [`DynamicObject`].
//!
//! Contract:
//! - [`DynamicClient::resource`] needs no discovery: the URL is built from the
//!   group/version/resource alone, so any resource the server serves can be reached,
//!   a CRD created after the program started included. Use
//!   [`discovery::RestMapper`](super::discovery::RestMapper) to go from a kind (or a
//!   short name) to the resource.
//! - A [`NamespaceableResource`] is the resource in all namespaces (or a cluster-scoped
//!   one) and dereferences to its [`ResourceClient`], so it has every verb (get, list,
//!   list_all, watch, create, update, update_status, patch, patch_status, apply,
//!   apply_status, delete, delete_collection) with the same URLs, options, errors and
//!   wire behaviour as typed clients; [`NamespaceableResource::namespace`] narrows it to
//!   one namespace.
//! - Objects keep every field the server sent (`DynamicObject::data`), with `apiVersion`
//!   and `kind` as sent (list items without them get them from the informer, see
//!   [`crate::cache::dynamic`]).
//!
//! It does not check that the server serves the resource before a request: a resource
//! it does not serve answers 404 NotFound.

use std::fmt;
use std::ops::Deref;

use kube::core::{ApiResource, DynamicObject, GroupVersionResource};

use super::ResourceClient;

/// The [`ApiResource`] of a group/version/resource whose kind may be unknown (`""`);
/// URLs need only the group, version and plural.
pub(crate) fn api_resource_of(gvr: &GroupVersionResource, kind: &str) -> ApiResource {
    ApiResource {
        group: gvr.group.clone(),
        version: gvr.version.clone(),
        api_version: if gvr.group.is_empty() {
            gvr.version.clone()
        } else {
            format!("{}/{}", gvr.group, gvr.version)
        },
        kind: kind.to_owned(),
        plural: gvr.resource.clone(),
    }
}

/// The dynamic client (client-go's `dynamic.Interface`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kubegen_runtime::client::dynamic::DynamicClient;
/// use kubegen_runtime::client::WriteOptions;
/// use kubegen_runtime::object::{DynamicObject, GroupVersionResource};
/// use kubegen_runtime::testing::ApiServer;
///
/// let server = ApiServer::new();
/// let client = DynamicClient::new(kube::Client::new(server.service(), "default"));
/// let cms = client.resource(&GroupVersionResource::gvr("", "v1", "configmaps"));
/// let cm: DynamicObject = serde_json::from_value(serde_json::json!({
///     "apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": {"name": "c"}, "data": {"k": "v"},
/// })).unwrap();
/// let created = cms.namespace("ns").create(&cm, &WriteOptions::default()).await.unwrap();
/// assert_eq!(created.data["data"]["k"], "v");
/// # }
/// ```
#[derive(Clone)]
pub struct DynamicClient {
    client: kube::Client,
}

impl fmt::Debug for DynamicClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicClient").finish_non_exhaustive()
    }
}

impl DynamicClient {
    /// A dynamic client speaking through `client`.
    pub fn new(client: kube::Client) -> Self {
        DynamicClient { client }
    }

    /// One resource, in all namespaces (or cluster-scoped) until
    /// [`NamespaceableResource::namespace`] narrows it.
    pub fn resource(&self, gvr: &GroupVersionResource) -> NamespaceableResource<DynamicObject> {
        NamespaceableResource::new(self.client.clone(), api_resource_of(gvr, ""))
    }

    /// One resource described by an [`ApiResource`] (from discovery or a REST mapping).
    pub fn api_resource(&self, resource: ApiResource) -> NamespaceableResource<DynamicObject> {
        NamespaceableResource::new(self.client.clone(), resource)
    }
}

/// One resource of a [`DynamicClient`] or a
/// [`MetadataClient`](super::metadata::MetadataClient) (client-go's
/// `NamespaceableResourceInterface`): dereferences to the client of all namespaces (or
/// of the cluster-scoped resource).
pub struct NamespaceableResource<K> {
    client: kube::Client,
    resource: ApiResource,
    all: ResourceClient<K>,
}

impl<K> Clone for NamespaceableResource<K> {
    fn clone(&self) -> Self {
        NamespaceableResource {
            client: self.client.clone(),
            resource: self.resource.clone(),
            all: self.all.clone(),
        }
    }
}

impl<K> fmt::Debug for NamespaceableResource<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceableResource")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl<K> NamespaceableResource<K>
where
    K: kube::Resource<DynamicType = ApiResource>,
{
    pub(crate) fn new(client: kube::Client, resource: ApiResource) -> Self {
        let all = ResourceClient::all_with(client.clone(), &resource);
        NamespaceableResource {
            client,
            resource,
            all,
        }
    }

    /// The resource in one namespace (client-go's `Namespace(ns)`).
    pub fn namespace(&self, namespace: &str) -> ResourceClient<K> {
        ResourceClient::namespaced_with(self.client.clone(), namespace, &self.resource)
    }

    /// The resource this client speaks to.
    pub fn api_resource(&self) -> &ApiResource {
        &self.resource
    }
}

impl<K> Deref for NamespaceableResource<K> {
    type Target = ResourceClient<K>;

    fn deref(&self) -> &ResourceClient<K> {
        &self.all
    }
}
