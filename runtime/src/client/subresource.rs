//! Any subresource of [`ResourceClient`]: [`ResourceClient::get_subresource`],
//! [`ResourceClient::create_subresource`], [`ResourceClient::update_subresource`] and
//! [`ResourceClient::patch_subresource`], what client-go's generated extension methods
//! (`+genclient:method=...,subresource=...`) call.
//!
//! Contract:
//! - Each call speaks to `<object URL>/<subresource>` and decodes the answer into the
//!   caller's result type, whatever the object's own type (a Pod's `eviction` answers a
//!   `Status`-like body, a `scale` an `autoscaling/v1` `Scale`).
//! - Errors, options and Content-Types are the write path's ([`WriteOptions`],
//!   [`PatchOptions`], [`Patch::content_type`]); a resource that does not serve the
//!   subresource answers 404 NotFound ([`Error::Api`]).
//!
//! It does not retry, and does not check that the server serves the subresource first.

use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::write::with_query;
use super::{read_all, Error, Patch, PatchOptions, ResourceClient, WriteOptions};

impl<K: Resource, W: super::Wire> ResourceClient<K, W> {
    /// `GET <name>/<subresource>`, decoded as `R`.
    pub async fn get_subresource<R: DeserializeOwned>(
        &self,
        name: &str,
        subresource: &str,
    ) -> Result<R, Error> {
        let body = read_all(&self.client, self.subresource_url(name, subresource), None).await?;
        super::decode::json(&body).map_err(Error::Decode)
    }

    /// `POST <name>/<subresource>` with `input` as JSON, decoded as `R` (client-go's
    /// `CreateEviction`-style methods).
    pub async fn create_subresource<I: Serialize, R: DeserializeOwned>(
        &self,
        name: &str,
        subresource: &str,
        input: &I,
        params: &WriteOptions,
    ) -> Result<R, Error> {
        self.send_subresource(http::Method::POST, name, subresource, input, params)
            .await
    }

    /// `PUT <name>/<subresource>` with `input` as JSON, decoded as `R`.
    pub async fn update_subresource<I: Serialize, R: DeserializeOwned>(
        &self,
        name: &str,
        subresource: &str,
        input: &I,
        params: &WriteOptions,
    ) -> Result<R, Error> {
        self.send_subresource(http::Method::PUT, name, subresource, input, params)
            .await
    }

    /// `PATCH <name>/<subresource>` with `patch`, decoded as `R`.
    pub async fn patch_subresource<R: DeserializeOwned>(
        &self,
        name: &str,
        subresource: &str,
        patch: &Patch,
        params: &PatchOptions,
    ) -> Result<R, Error> {
        let uri = with_query(self.subresource_url(name, subresource), &params.query());
        let body = serde_json::to_vec(patch.body()).map_err(Error::Decode)?;
        let out = self
            .send_json(http::Method::PATCH, uri, patch.content_type(), body, None)
            .await?;
        super::decode::json(&out).map_err(Error::Decode)
    }

    async fn send_subresource<I: Serialize, R: DeserializeOwned>(
        &self,
        method: http::Method,
        name: &str,
        subresource: &str,
        input: &I,
        params: &WriteOptions,
    ) -> Result<R, Error> {
        let uri = with_query(self.subresource_url(name, subresource), &params.query());
        let body = serde_json::to_vec(input).map_err(Error::Decode)?;
        let out = self
            .send_json(method, uri, "application/json", body, None)
            .await?;
        super::decode::json(&out).map_err(Error::Decode)
    }
}
