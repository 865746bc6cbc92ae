//! Projections: informers over a controller's own slim type instead of the full object.
//!
//! A controller that reads a Pod's labels, node name and phase does not need the other
//! 90% of the Pod in its cache. A *projection* is a struct of your own with only the
//! fields you read, under the same JSON names; [`projection!`](crate::projection) makes
//! it a [`kube::Resource`] of the source kind (same group, version, kind, plural and
//! scope), so that [`ResourceClient`](crate::client::ResourceClient) lists and watches
//! the source resource and [`SharedIndexInformer`](crate::cache::informer::SharedIndexInformer)
//! caches it like any other type.
//!
//! Contract:
//! - Objects decode straight from the wire into the projection, in one pass: fields the
//!   struct does not name are skipped by the JSON parser (nothing is allocated for
//!   them) and the full object is never built. `metadata.managedFields` is skipped as
//!   for every informer.
//! - The projection must have a `metadata: ObjectMeta` field (keys, namespaces,
//!   resourceVersions, label selectors and indexers all read it) and derive
//!   `Deserialize`, `Clone` and `Debug`. Every other field is up to you; make fields
//!   that may be absent `Option`s or `#[serde(default)]`.
//! - Requests are those of the source kind: a projection of Pods asks for `pods` and
//!   gets full Pods from the server, so the saving is in the client's memory and CPU,
//!   not in bytes on the wire (for metadata only, the metadata informer also saves the
//!   transfer).
//!
//! It does not write: a projection lacks fields, so an update sent from it would clear
//! them. Write with the full type (or a patch) and read from the projection's cache.
//!
//! ```
//! use kubegen_runtime::k8s_openapi::api::core::v1::Pod;
//! use kubegen_runtime::object::ObjectMeta;
//! use kubegen_runtime::serde::Deserialize;
//!
//! /// What a node-draining controller reads of a Pod.
//! #[derive(Clone, Debug, Deserialize)]
//! #[serde(crate = "kubegen_runtime::serde")]
//! struct PodPlacement {
//!     metadata: ObjectMeta,
//!     #[serde(default)]
//!     spec: PlacementSpec,
//!     #[serde(default)]
//!     status: PlacementStatus,
//! }
//! #[derive(Clone, Debug, Default, Deserialize)]
//! #[serde(crate = "kubegen_runtime::serde", rename_all = "camelCase")]
//! struct PlacementSpec {
//!     node_name: Option<String>,
//! }
//! #[derive(Clone, Debug, Default, Deserialize)]
//! #[serde(crate = "kubegen_runtime::serde")]
//! struct PlacementStatus {
//!     phase: Option<String>,
//! }
//! kubegen_runtime::projection!(PodPlacement, Pod);
//!
//! use kubegen_runtime::kube::Resource;
//! assert_eq!(PodPlacement::plural(&()), "pods");
//! assert_eq!(PodPlacement::url_path(&(), Some("ns")), "/api/v1/namespaces/ns/pods");
//! let pod: PodPlacement = kubegen_runtime::serde_json::from_str(
//!     r#"{"metadata": {"name": "web-0", "namespace": "ns"},
//!         "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx"}]},
//!         "status": {"phase": "Running", "podIP": "10.0.0.1"}}"#,
//! )
//! .unwrap();
//! assert_eq!(pod.spec.node_name.as_deref(), Some("node-1"));
//! assert_eq!(kubegen_runtime::object::object_key(&pod), "ns/web-0");
//! ```
//!
//! An informer over it is the usual one:
//! `SharedIndexInformer::new(Arc::new(ResourceClient::<PodPlacement>::all(client)),
//! InformerOptions::default())` (see `examples/projection.rs`).

/// Makes `$projection` (a struct with a `metadata: ObjectMeta` field) a
/// [`kube::Resource`] of the same kind as `$source`, for informers that cache only the
/// fields a controller reads. See [`cache::projection`](crate::cache::projection).
#[macro_export]
macro_rules! projection {
    ($projection:ty, $source:ty) => {
        impl $crate::kube::Resource for $projection {
            type DynamicType = ();
            type Scope = <$source as $crate::kube::Resource>::Scope;

            fn kind(_: &()) -> ::std::borrow::Cow<'_, str> {
                <$source as $crate::kube::Resource>::kind(&())
            }
            fn group(_: &()) -> ::std::borrow::Cow<'_, str> {
                <$source as $crate::kube::Resource>::group(&())
            }
            fn version(_: &()) -> ::std::borrow::Cow<'_, str> {
                <$source as $crate::kube::Resource>::version(&())
            }
            fn api_version(_: &()) -> ::std::borrow::Cow<'_, str> {
                <$source as $crate::kube::Resource>::api_version(&())
            }
            fn plural(_: &()) -> ::std::borrow::Cow<'_, str> {
                <$source as $crate::kube::Resource>::plural(&())
            }
            fn meta(&self) -> &$crate::object::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut $crate::object::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}
