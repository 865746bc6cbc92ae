//! Metadata-only clients (client-go's `metadata` package): objects as
//! `PartialObjectMetadata`, their `metadata` and nothing else.
//!
//! Contract:
//! - A [`ResourceClient`] of `kube::core::PartialObjectMeta<K>` (any `K`) asks the server
//!   for metadata only: `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`
//!   ([`ACCEPT_OBJECT`]) on get, watch, patch and delete, and
//!   `as=PartialObjectMetadataList` ([`ACCEPT_LIST`]) on list and delete-collection; the
//!   answer's objects are `meta.k8s.io/v1` `PartialObjectMetadata` whatever the
//!   resource. Every other client asks for whole objects, as before.
//! - [`MetadataClient::resource`] chooses the resource at run time by
//!   group/version/resource, with objects as [`PartialObjectMetadata`]; the typed form,
//!   `ResourceClient::<PartialObjectMeta<Pod>>::all(client)`, needs no resource at all.
//! - Informers over such clients cache a fraction of what whole objects cost (see the
//!   README's figures); `metadata.managedFields` are dropped by the informer as usual.
//!
//! The server must serve the metadata forms (kube-apiserver has since 1.15; the
//! in-memory server does); a server that answers whole objects instead still decodes,
//! as the metadata of those objects.

use kube::core::{ApiResource, DynamicObject, GroupVersionResource};

use super::dynamic::NamespaceableResource;

/// The `Accept` header of a metadata-only get, watch or write.
pub const ACCEPT_OBJECT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
/// The `Accept` header of a metadata-only list.
pub const ACCEPT_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// client-go's `metav1.PartialObjectMetadata` for a resource chosen at run time: the
/// object's `metadata`, with `apiVersion: meta.k8s.io/v1` and `kind:
/// PartialObjectMetadata` as the server sends them. Its [`kube::Resource`] impl takes
/// the resource from an [`ApiResource`].
pub type PartialObjectMetadata = kube::core::PartialObjectMeta<DynamicObject>;

/// The `Accept` header a client of `K` sends, when it is not plain JSON.
pub(crate) fn accept<K: kube::Resource>(list: bool) -> Option<&'static str> {
    match (K::metadata_api(), list) {
        (false, _) => None,
        (true, false) => Some(ACCEPT_OBJECT),
        (true, true) => Some(ACCEPT_LIST),
    }
}

/// The metadata client (client-go's `metadata.Interface`): resources chosen at run time,
/// objects as [`PartialObjectMetadata`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kubegen_runtime::client::metadata::MetadataClient;
/// use kubegen_runtime::client::ListOptions;
/// use kubegen_runtime::object::GroupVersionResource;
/// use kubegen_runtime::testing::ApiServer;
///
/// let server = ApiServer::new();
/// server
///     .create("pods", serde_json::json!({"metadata": {"name": "p", "namespace": "ns"}}))
///     .unwrap();
/// let client = MetadataClient::new(kube::Client::new(server.service(), "default"));
/// let pods = client.resource(&GroupVersionResource::gvr("", "v1", "pods"));
/// let list = pods.list(&ListOptions::default()).await.unwrap();
/// let types = list.items[0].types.as_ref().unwrap();
/// assert_eq!((types.api_version.as_str(), types.kind.as_str()), ("meta.k8s.io/v1", "PartialObjectMetadata"));
/// let p = pods.namespace("ns").get("p").await.unwrap();
/// assert_eq!(p.metadata.name.as_deref(), Some("p"));
/// # }
/// ```
#[derive(Clone)]
pub struct MetadataClient {
    client: kube::Client,
}

impl std::fmt::Debug for MetadataClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataClient").finish_non_exhaustive()
    }
}

impl MetadataClient {
    /// A metadata client speaking through `client`.
    pub fn new(client: kube::Client) -> Self {
        MetadataClient { client }
    }

    /// One resource, in all namespaces (or cluster-scoped) until
    /// [`NamespaceableResource::namespace`] narrows it.
    pub fn resource(
        &self,
        gvr: &GroupVersionResource,
    ) -> NamespaceableResource<PartialObjectMetadata> {
        NamespaceableResource::new(
            self.client.clone(),
            super::dynamic::api_resource_of(gvr, ""),
        )
    }

    /// One resource described by an [`ApiResource`] (from discovery or a REST mapping).
    pub fn api_resource(
        &self,
        resource: ApiResource,
    ) -> NamespaceableResource<PartialObjectMetadata> {
        NamespaceableResource::new(self.client.clone(), resource)
    }
}
