//! The write path of [`ResourceClient`]: create, update, status update, the four patch
//! types, server-side apply, delete and delete collection.
//!
//! Contract:
//! - Bodies are JSON; PATCH requests carry exactly one of the four Content-Types of
//!   SEMANTICS 9.23 ([`Patch::content_type`]). Server-side apply sends the object as JSON
//!   (valid YAML) with `application/apply-patch+yaml` and requires a field manager.
//! - Options become the query parameters client-go sends (`dryRun=All`,
//!   `fieldManager`, `force`); [`DeleteOptions`] is sent as a `DeleteOptions` body.
//! - A non-2xx answer is [`Error::Api`] with the server's `Status`, as for reads.
//! - A DELETE answers either the object (deletion pending, or a type that returns the
//!   deleted object) or a `Status`; [`Deleted`] tells which.
//!
//! It does not retry on conflicts (see client-go's `RetryOnConflict` pattern).

use http::Request;
use http_body_util::BodyExt;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::errors::Status;

use super::{checked, Error, ListOptions, ObjectList, ResourceClient};

/// A patch of one of the four types the API server accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum Patch {
    /// JSON merge patch (RFC 7386): `null` deletes, lists are replaced.
    Merge(Value),
    /// JSON patch (RFC 6902): a list of operations.
    Json(Value),
    /// Strategic merge patch (built-in types only; custom resources answer 415).
    Strategic(Value),
    /// Server-side apply of this configuration (needs a field manager).
    Apply(Value),
}

impl Patch {
    /// The Content-Type of this patch type (SEMANTICS 9.23).
    ///
    /// ```
    /// use kubegen_runtime::client::Patch;
    /// use serde_json::json;
    ///
    /// assert_eq!(Patch::Merge(json!({})).content_type(), "application/merge-patch+json");
    /// assert_eq!(Patch::Apply(json!({})).content_type(), "application/apply-patch+yaml");
    /// ```
    pub fn content_type(&self) -> &'static str {
        match self {
            Patch::Json(_) => "application/json-patch+json",
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
            Patch::Apply(_) => "application/apply-patch+yaml",
        }
    }

    pub(super) fn body(&self) -> &Value {
        match self {
            Patch::Json(v) | Patch::Merge(v) | Patch::Strategic(v) | Patch::Apply(v) => v,
        }
    }
}

/// The earlier name of [`PatchOptions`]: the runtime names every options type `*Options`.
#[deprecated(since = "0.1.0", note = "renamed to `PatchOptions`")]
pub type PatchParams = PatchOptions;

/// Options of a patch or apply (`PatchOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchOptions {
    /// `fieldManager`; required for apply.
    pub field_manager: Option<String>,
    /// `force`: take ownership of conflicting fields (apply only).
    pub force: bool,
    /// `dryRun=All`: validate without storing.
    pub dry_run: bool,
}

impl PatchOptions {
    /// Options for server-side apply as `manager`.
    pub fn apply(manager: &str) -> Self {
        PatchOptions {
            field_manager: Some(manager.into()),
            ..Default::default()
        }
    }

    /// Takes ownership of conflicting fields.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    /// Validates without storing.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    pub(super) fn query(&self) -> String {
        let mut q = Vec::new();
        if self.dry_run {
            q.push("dryRun=All".to_owned());
        }
        if let Some(m) = self.field_manager.as_deref().filter(|m| !m.is_empty()) {
            let mut s = String::from("fieldManager=");
            super::push_encoded(&mut s, m);
            q.push(s);
        }
        if self.force {
            q.push("force=true".to_owned());
        }
        q.join("&")
    }
}

/// The earlier name of [`WriteOptions`]: the runtime names every options type `*Options`.
#[deprecated(since = "0.1.0", note = "renamed to `WriteOptions`")]
pub type WriteParams = WriteOptions;

/// Options of create and update (`CreateOptions`/`UpdateOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// `fieldManager`: who owns the fields this write sets.
    pub field_manager: Option<String>,
    /// `dryRun=All`: validate without storing.
    pub dry_run: bool,
}

impl WriteOptions {
    pub(super) fn query(&self) -> String {
        PatchOptions {
            field_manager: self.field_manager.clone(),
            force: false,
            dry_run: self.dry_run,
        }
        .query()
    }
}

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// Dependents lose their owner reference and stay.
    Orphan,
    /// The owner goes now; the garbage collector deletes dependents afterwards.
    Background,
    /// Dependents go first; the owner waits under the `foregroundDeletion` finalizer.
    Foreground,
}

/// Preconditions of a deletion: it fails with 409 Conflict when they do not hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object's uid must be this.
    pub uid: Option<String>,
    /// The object's resourceVersion must be this.
    pub resource_version: Option<String>,
}

/// Options of a deletion (`DeleteOptions`), sent as the request body.
///
/// ```
/// use kubegen_runtime::client::{DeleteOptions, PropagationPolicy};
///
/// let opts = DeleteOptions::default().propagation(PropagationPolicy::Foreground);
/// assert_eq!(
///     opts.to_body()["propagationPolicy"],
///     serde_json::json!("Foreground")
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// How dependents are deleted.
    pub propagation_policy: Option<PropagationPolicy>,
    /// Seconds before the object is deleted (0: at once).
    pub grace_period_seconds: Option<i64>,
    /// Conditions the object must meet.
    pub preconditions: Option<Preconditions>,
    /// Validate without deleting.
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Sets the propagation policy.
    pub fn propagation(mut self, p: PropagationPolicy) -> Self {
        self.propagation_policy = Some(p);
        self
    }

    /// Requires the object to have this uid.
    pub fn precondition_uid(mut self, uid: &str) -> Self {
        self.preconditions.get_or_insert_with(Default::default).uid = Some(uid.into());
        self
    }

    /// Requires the object to be at this resourceVersion.
    pub fn precondition_resource_version(mut self, rv: &str) -> Self {
        self.preconditions
            .get_or_insert_with(Default::default)
            .resource_version = Some(rv.into());
        self
    }

    /// The `DeleteOptions` JSON body.
    pub fn to_body(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("kind".into(), "DeleteOptions".into());
        m.insert("apiVersion".into(), "v1".into());
        if let Some(p) = self.propagation_policy {
            let s = match p {
                PropagationPolicy::Orphan => "Orphan",
                PropagationPolicy::Background => "Background",
                PropagationPolicy::Foreground => "Foreground",
            };
            m.insert("propagationPolicy".into(), s.into());
        }
        if let Some(g) = self.grace_period_seconds {
            m.insert("gracePeriodSeconds".into(), g.into());
        }
        if let Some(p) = &self.preconditions {
            let mut pm = serde_json::Map::new();
            if let Some(u) = &p.uid {
                pm.insert("uid".into(), u.clone().into());
            }
            if let Some(rv) = &p.resource_version {
                pm.insert("resourceVersion".into(), rv.clone().into());
            }
            m.insert("preconditions".into(), Value::Object(pm));
        }
        if self.dry_run {
            m.insert("dryRun".into(), serde_json::json!(["All"]));
        }
        Value::Object(m)
    }
}

/// What a DELETE answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Deleted<T> {
    /// The object (or list): its deletion is pending, or the type returns deleted
    /// objects.
    Object(T),
    /// A `Status` of `Success`: the object is gone.
    Status(Box<Status>),
}

impl<T> Deleted<T> {
    /// The object, if the server answered one.
    pub fn object(self) -> Option<T> {
        match self {
            Deleted::Object(o) => Some(o),
            Deleted::Status(_) => None,
        }
    }
}

pub(super) fn with_query(url: String, q: &str) -> String {
    if q.is_empty() {
        url
    } else if url.contains('?') {
        format!("{url}&{q}")
    } else {
        format!("{url}?{q}")
    }
}

impl<K, W> ResourceClient<K, W> {
    /// Sends a request with a JSON (or patch) body; answers the body of a 2xx response.
    /// `accept` is `application/json` unless a metadata form is asked for.
    pub(super) async fn send_json(
        &self,
        method: http::Method,
        uri: String,
        content_type: &str,
        body: Vec<u8>,
        accept: Option<&'static str>,
    ) -> Result<bytes::Bytes, Error> {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::CONTENT_TYPE, content_type)
            .header(http::header::ACCEPT, accept.unwrap_or("application/json"))
            .body(kube::client::Body::from(body))
            .map_err(Error::Request)?;
        let res = self.client.send(req).await.map_err(Error::Transport)?;
        let res = checked(res).await?;
        Ok(res
            .into_body()
            .collect()
            .await
            .map_err(Error::Transport)?
            .to_bytes())
    }
}

impl<K, W> ResourceClient<K, W>
where
    W: super::Wire,
    K: Resource + Serialize + DeserializeOwned + Send + 'static,
{
    async fn write(
        &self,
        method: http::Method,
        uri: String,
        content_type: &str,
        body: &impl Serialize,
    ) -> Result<K, Error> {
        let bytes = serde_json::to_vec(body).map_err(Error::Decode)?;
        let accept = super::metadata::accept::<K>(false);
        let out = self
            .send_json(method, uri, content_type, bytes, accept)
            .await?;
        super::decode::json(&out).map_err(Error::Decode)
    }

    /// Creates an object (POST to the collection); its namespace defaults to the
    /// client's.
    pub async fn create(&self, obj: &K, params: &WriteOptions) -> Result<K, Error> {
        let uri = with_query(self.path.clone(), &params.query());
        self.write(http::Method::POST, uri, "application/json", obj)
            .await
    }

    /// Replaces an object (PUT); a stale `metadata.resourceVersion` gets 409 Conflict,
    /// an empty one updates unconditionally.
    pub async fn update(&self, obj: &K, params: &WriteOptions) -> Result<K, Error> {
        let name = obj.meta().name.clone().unwrap_or_default();
        let uri = with_query(self.object_url(&name), &params.query());
        self.write(http::Method::PUT, uri, "application/json", obj)
            .await
    }

    /// Replaces an object's status (PUT to `<name>/status`); everything else is ignored.
    pub async fn update_status(&self, obj: &K, params: &WriteOptions) -> Result<K, Error> {
        let name = obj.meta().name.clone().unwrap_or_default();
        let uri = with_query(self.subresource_url(&name, "status"), &params.query());
        self.write(http::Method::PUT, uri, "application/json", obj)
            .await
    }

    /// Patches an object.
    pub async fn patch(
        &self,
        name: &str,
        patch: &Patch,
        params: &PatchOptions,
    ) -> Result<K, Error> {
        let uri = with_query(self.object_url(name), &params.query());
        self.write(http::Method::PATCH, uri, patch.content_type(), patch.body())
            .await
    }

    /// Patches an object's status.
    pub async fn patch_status(
        &self,
        name: &str,
        patch: &Patch,
        params: &PatchOptions,
    ) -> Result<K, Error> {
        let uri = with_query(self.subresource_url(name, "status"), &params.query());
        self.write(http::Method::PATCH, uri, patch.content_type(), patch.body())
            .await
    }

    /// Server-side apply of `obj` (created if absent); `params.field_manager` is required.
    pub async fn apply(&self, name: &str, obj: &K, params: &PatchOptions) -> Result<K, Error> {
        let v = serde_json::to_value(obj).map_err(Error::Decode)?;
        self.patch(name, &Patch::Apply(v), params).await
    }

    /// Server-side apply of `obj`'s status.
    pub async fn apply_status(
        &self,
        name: &str,
        obj: &K,
        params: &PatchOptions,
    ) -> Result<K, Error> {
        let v = serde_json::to_value(obj).map_err(Error::Decode)?;
        self.patch_status(name, &Patch::Apply(v), params).await
    }

    /// Server-side apply of an apply configuration (typed SSA): only the fields `cfg`
    /// sets are sent, so `opts.field_manager` claims exactly those. The object is
    /// created if absent.
    pub async fn apply_config<A: crate::apply::ApplyConfiguration>(
        &self,
        cfg: &A,
        opts: &crate::apply::ApplyOptions,
    ) -> Result<K, Error> {
        let (name, patch) = apply_body(cfg)?;
        self.patch(&name, &patch, &opts.to_patch_params()).await
    }

    /// Server-side apply of an apply configuration to the `status` subresource.
    pub async fn apply_status_config<A: crate::apply::ApplyConfiguration>(
        &self,
        cfg: &A,
        opts: &crate::apply::ApplyOptions,
    ) -> Result<K, Error> {
        let (name, patch) = apply_body(cfg)?;
        self.patch_status(&name, &patch, &opts.to_patch_params())
            .await
    }

    /// Deletes an object.
    pub async fn delete(&self, name: &str, opts: &DeleteOptions) -> Result<Deleted<K>, Error> {
        let body = serde_json::to_vec(&opts.to_body()).map_err(Error::Decode)?;
        let out = self
            .send_json(
                http::Method::DELETE,
                self.object_url(name),
                "application/json",
                body,
                super::metadata::accept::<K>(false),
            )
            .await?;
        decode_deleted(&out, super::decode::json)
    }

    /// Deletes every object the list options select; answers the deleted objects.
    pub async fn delete_collection(
        &self,
        opts: &DeleteOptions,
        list: &ListOptions,
    ) -> Result<Deleted<ObjectList<K>>, Error> {
        let body = serde_json::to_vec(&opts.to_body()).map_err(Error::Decode)?;
        let out = self
            .send_json(
                http::Method::DELETE,
                self.list_url(list),
                "application/json",
                body,
                super::metadata::accept::<K>(true),
            )
            .await?;
        decode_deleted(&out, |b| {
            let (metadata, items) = super::decode::json_list::<K>(b)?;
            Ok(ObjectList {
                resource_version: metadata
                    .and_then(|m| m.resource_version)
                    .unwrap_or_default(),
                items,
                continue_token: None,
                remaining_item_count: None,
            })
        })
    }
}

fn decode_deleted<T>(
    body: &[u8],
    decode: impl FnOnce(&[u8]) -> Result<T, serde_json::Error>,
) -> Result<Deleted<T>, Error> {
    #[derive(serde::Deserialize)]
    struct Kind {
        #[serde(default)]
        kind: String,
    }
    let k: Kind = serde_json::from_slice(body).map_err(Error::Decode)?;
    if k.kind == "Status" {
        Ok(Deleted::Status(Box::new(
            serde_json::from_slice(body).map_err(Error::Decode)?,
        )))
    } else {
        Ok(Deleted::Object(decode(body).map_err(Error::Decode)?))
    }
}

/// The name an apply configuration names and its apply patch.
fn apply_body<A: crate::apply::ApplyConfiguration>(cfg: &A) -> Result<(String, Patch), Error> {
    let name = cfg
        .name()
        .ok_or(crate::apply::ApplyError::NoName)?
        .to_owned();
    let v = serde_json::to_value(cfg).map_err(Error::Decode)?;
    Ok((name, Patch::Apply(v)))
}

#[cfg(test)]
mod earlier_names {
    /// Code written against the earlier names keeps compiling (with a deprecation
    /// warning) and means the same types.
    #[test]
    #[allow(deprecated)]
    fn the_earlier_names_are_the_options_types() {
        let patch: crate::client::PatchParams = super::PatchOptions::apply("manager");
        assert_eq!(patch.field_manager.as_deref(), Some("manager"));
        let write: crate::client::WriteParams = super::WriteOptions::default();
        assert_eq!(write, super::WriteOptions::default());
        let informer: crate::cache::InformerConfig = crate::cache::InformerOptions::default();
        let _: crate::cache::ReflectorConfig = crate::cache::ReflectorOptions::default();
        assert_eq!(
            format!("{informer:?}"),
            format!("{:?}", crate::cache::InformerOptions::default())
        );
        // The same type under both names (this compiles only if it is).
        fn same(
            o: crate::leaderelection::LeaderElectionConfig,
        ) -> crate::leaderelection::LeaderElectionOptions {
            o
        }
        let _ = same;
        fn same_queue(
            o: crate::workqueue::QueueConfig<String>,
        ) -> crate::workqueue::QueueOptions<String> {
            o
        }
        let _ = same_queue;
    }
}
