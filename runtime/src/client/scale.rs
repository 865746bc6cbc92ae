//! The `scale` subresource of [`ResourceClient`]: [`ResourceClient::get_scale`],
//! [`ResourceClient::update_scale`] and [`ResourceClient::patch_scale`], client-go's
//! `GetScale`, `UpdateScale` and `Patch(..., "scale")`.
//!
//! Contract:
//! - Every verb reads and answers an `autoscaling/v1` [`Scale`] at
//!   `<object URL>/scale`, whatever the object's own type: Deployments, ReplicaSets,
//!   StatefulSets, and custom resources whose CRD enables `subresources.scale` (their
//!   replicas live at the CRD's `specReplicasPath` and `statusReplicasPath`).
//! - A resource that does not serve the subresource, or a missing object, answers
//!   404 NotFound ([`Error::Api`]); other errors, options and Content-Types are the
//!   write path's ([`WriteOptions`], [`PatchOptions`], [`Patch::content_type`]).
//! - [`ResourceClient::update_scale`] is a PUT that changes only the object's desired
//!   replicas; the object gets a new resourceVersion, which the answered Scale carries.
//!   The Scale's `metadata.resourceVersion` is the object's: a stale one is 409
//!   Conflict, an empty one updates unconditionally.
//!
//! - [`ResourceClient::apply_scale`] is client-go's `ApplyScale`: server-side apply of a
//!   [`ScaleApplyConfiguration`] to `scale`; the manager owns the object's replicas
//!   with subresource `scale`, so a manager of the object's own replicas conflicts
//!   (409 unless forced). The object must exist (404 otherwise).
//!
//! It does not retry on conflicts.

use k8s_openapi::api::autoscaling::v1::Scale;
use kube::Resource;

use super::{Error, Patch, PatchOptions, ResourceClient, WriteOptions};
use crate::apply::{ApplyOptions, ScaleApplyConfiguration};

const SCALE: &str = "scale";

impl<K: Resource, W: super::Wire> ResourceClient<K, W> {
    /// Gets the object's [`Scale`] (`GET <name>/scale`): its desired replicas in
    /// `spec.replicas`, the observed ones and the label selector in `status`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use kubegen_runtime::client::{ResourceClient, WriteOptions};
    /// use kubegen_runtime::testing::ApiServer;
    ///
    /// let server = ApiServer::new();
    /// server
    ///     .create(
    ///         "deployments.apps",
    ///         serde_json::json!({
    ///             "metadata": {"name": "web", "namespace": "ns"},
    ///             "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
    ///                 "template": {"metadata": {"labels": {"app": "web"}},
    ///                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    ///         }),
    ///     )
    ///     .unwrap();
    /// let client = kube::Client::new(server.service(), "default");
    /// let deployments = ResourceClient::<Deployment>::namespaced(client, "ns");
    ///
    /// let mut scale = deployments.get_scale("web").await.unwrap();
    /// assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    /// assert_eq!(scale.status.as_ref().unwrap().selector.as_deref(), Some("app=web"));
    ///
    /// scale.spec.as_mut().unwrap().replicas = Some(5);
    /// deployments
    ///     .update_scale("web", &scale, &WriteOptions::default())
    ///     .await
    ///     .unwrap();
    /// let web = deployments.get("web").await.unwrap();
    /// assert_eq!(web.spec.replicas, Some(5));
    /// # }
    /// ```
    pub async fn get_scale(&self, name: &str) -> Result<Scale, Error> {
        self.get_subresource(name, SCALE).await
    }

    /// Sets the object's desired replicas to `scale.spec.replicas` (`PUT <name>/scale`)
    /// and answers the new Scale; a stale `scale.metadata.resourceVersion` gets 409
    /// Conflict, an empty one updates unconditionally.
    pub async fn update_scale(
        &self,
        name: &str,
        scale: &Scale,
        params: &WriteOptions,
    ) -> Result<Scale, Error> {
        self.update_subresource(name, SCALE, scale, params).await
    }

    /// Patches the object's Scale (`PATCH <name>/scale`), e.g.
    /// `Patch::Merge(json!({"spec": {"replicas": 3}}))`, and answers the new Scale.
    pub async fn patch_scale(
        &self,
        name: &str,
        patch: &Patch,
        params: &PatchOptions,
    ) -> Result<Scale, Error> {
        self.patch_subresource(name, SCALE, patch, params).await
    }

    /// Server-side apply of `cfg` to the object's Scale (`PATCH <name>/scale`,
    /// `application/apply-patch+yaml`; client-go's `ApplyScale`): `opts.field_manager`
    /// owns the replicas `cfg` sets. Answers the new Scale.
    pub async fn apply_scale(
        &self,
        name: &str,
        cfg: &ScaleApplyConfiguration,
        opts: &ApplyOptions,
    ) -> Result<Scale, Error> {
        let mut cfg = cfg.clone();
        let meta = cfg.metadata.get_or_insert_with(Default::default);
        meta.name.get_or_insert_with(|| name.to_owned());
        let body = serde_json::to_value(&cfg).map_err(Error::Decode)?;
        self.patch_subresource(name, SCALE, &Patch::Apply(body), &opts.to_patch_params())
            .await
    }
}
