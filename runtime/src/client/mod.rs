//! A typed client for one resource's read path: get, list (one page or all pages) and
//! watch, with client-go's wire behaviour.
//!
//! Contract:
//! - [`kube::Client`] supplies transport, authentication and configuration only; this
//!   module builds every URL and query parameter itself (SEMANTICS 9.1-9.4) and reads
//!   every body itself. Unlike kube's `Api`, `resourceVersion=0` is sent together with
//!   `limit`, and an empty resourceVersion means "unset".
//! - A response that is not 2xx becomes [`Error::Api`], classified by the `Status` in its
//!   body (or by the HTTP code when the body is not a `Status`).
//! - List items decode without `kind`/`apiVersion`; [`ObjectList`] exposes the list's
//!   resourceVersion, `continue` token and `remainingItemCount`.
//! - [`ResourceClient::list_all`] follows client-go's pager: later pages send the
//!   `continue` token with resourceVersion and match cleared; when a continuation page
//!   fails with 410 Expired, it retries once as a full, unpaginated list with the original
//!   resourceVersion.
//! - [`ResourceClient::watch`] decodes frames with a streaming JSON decoder that does not
//!   rely on newlines; see [`WatchEvent`] for how errors surface.
//!
//! - Client-side rate limiting and `Retry-After` retries are opt-in, for every request of
//!   a [`kube::Client`]: [`RestConfig::wrap`] or [`RestConfig::client`] (see
//!   [`RestConfig`]); without them the client neither throttles nor retries.
//!
//! - A client of `kube::core::PartialObjectMeta<K>` ([`metadata::PartialObjectMetadata`]
//!   for resources chosen at run time) asks for metadata only (`Accept:
//!   application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`, the `List` form for
//!   lists), as client-go's metadata client does; see [`metadata`]. [`dynamic`] and
//!   [`discovery`] choose resources at run time.
//!
//! The write path (create, update, patch, apply, delete) lives in its own file; see
//! [`Patch`] and [`DeleteOptions`]. It does not retry or cache. The `scale` subresource
//! has its own verbs too ([`ResourceClient::get_scale`], `update_scale`, `patch_scale`).

mod adapter;
pub(crate) mod decode;
pub mod discovery;
pub mod dynamic;
mod exact;
pub mod metadata;
pub(crate) mod paging;
mod pool;
pub mod protobuf;
mod rest;
mod scale;
mod skip;
mod subresource;
mod watch;
mod write;

use std::fmt;
use std::marker::PhantomData;

use bytes::Bytes;
use futures::FutureExt;
use http::Request;
use http_body_util::BodyExt;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use tracing::Instrument;

use crate::errors::{Status, StatusError};

pub use rest::{
    RestConfig, RestConfigError, RestLayer, RestService, DEFAULT_BURST, DEFAULT_MAX_RETRIES,
    DEFAULT_QPS,
};
pub use watch::{Bookmark, WatchEvent, WatchStream};
pub use write::{
    DeleteOptions, Deleted, Patch, PatchOptions, Preconditions, PropagationPolicy, WriteOptions,
};
// The earlier names, deprecated (every options type is `*Options` now).
#[allow(deprecated)]
pub use write::{PatchParams, WriteParams};

/// An error of a [`ResourceClient`] call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server answered with an error `Status`.
    #[error(transparent)]
    Api(#[from] StatusError),
    /// The request could not be sent or the response not read.
    #[error("transport error: {0}")]
    Transport(#[source] kube::Error),
    /// The response body could not be decoded.
    #[error("decoding the response: {0}")]
    Decode(#[source] serde_json::Error),
    /// The request could not be built.
    #[error("building the request: {0}")]
    Request(#[source] http::Error),
    /// A retry helper ([`crate::retry`]) had no step left to try anything.
    #[error(transparent)]
    Interrupted(#[from] crate::retry::Interrupted),
    /// An apply configuration could not be sent (no name) or extracted.
    #[error(transparent)]
    Apply(#[from] crate::apply::ApplyError),
}

impl Error {
    /// The API error, if this is one.
    pub fn status(&self) -> Option<&StatusError> {
        match self {
            Error::Api(s) => Some(s),
            _ => None,
        }
    }
}

/// Defines `Error::is_*` classifiers, each delegating to [`StatusError`]'s predicate of
/// the same meaning and false for errors that are not API errors.
macro_rules! classifiers {
    ($($(#[$doc:meta])* $name:ident => $pred:ident;)*) => {
        impl Error {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> bool {
                    self.status().is_some_and(StatusError::$pred)
                }
            )*
        }
    };
}

// apimachinery's `errors.IsXxx` functions, as methods: by the Status' reason first, by
// its HTTP code only when the reason is unknown or empty (see `crate::errors`).
classifiers! {
    /// `IsNotFound`: reason NotFound, or an unknown reason with 404.
    is_not_found => is_not_found;
    /// `IsAlreadyExists`: reason AlreadyExists (a 409 with reason Conflict is not).
    is_already_exists => is_already_exists;
    /// `IsConflict`: reason Conflict (server-side apply conflicts included), or an
    /// unknown reason with 409; AlreadyExists is not a conflict.
    is_conflict => is_conflict;
    /// `IsInvalid`: reason Invalid, or an unknown reason with 422.
    is_invalid => is_invalid;
    /// `IsGone`: reason Gone, or an unknown reason with 410; Expired is not Gone.
    is_gone => is_gone;
    /// `IsResourceExpired`: reason Expired (the reason only, as apimachinery checks).
    is_resource_expired => is_expired;
    /// `IsForbidden`: reason Forbidden, or an unknown reason with 403.
    is_forbidden => is_forbidden;
    /// `IsUnauthorized`: reason Unauthorized, or an unknown reason with 401.
    is_unauthorized => is_unauthorized;
    /// `IsTooManyRequests`: reason TooManyRequests, or code 429 whatever the reason.
    is_too_many_requests => is_too_many_requests;
    /// `IsServerTimeout`: reason ServerTimeout (no HTTP code means it).
    is_server_timeout => is_server_timeout;
    /// `IsTimeout`: reason Timeout, or an unknown reason with 504.
    is_timeout => is_timeout;
    /// `IsBadRequest`: reason BadRequest, or an unknown reason with 400.
    is_bad_request => is_bad_request;
    /// `IsInternalError`: reason InternalError, or an unknown reason with 500.
    is_internal_error => is_internal_error;
    /// `IsServiceUnavailable`: reason ServiceUnavailable, or an unknown reason with 503.
    is_service_unavailable => is_service_unavailable;
    /// `IsMethodNotSupported`: reason MethodNotAllowed, or an unknown reason with 405.
    is_method_not_supported => is_method_not_supported;
    /// `IsUnsupportedMediaType`: reason UnsupportedMediaType, or an unknown reason
    /// with 415.
    is_unsupported_media_type => is_unsupported_media_type;
    /// `IsTooLargeResourceVersion`: a 504 Timeout with a ResourceVersionTooLarge cause.
    is_too_large_resource_version => is_too_large_resource_version;
}

impl Error {
    /// `SuggestsClientDelay`: the seconds the server asked the client to wait
    /// (`details.retryAfterSeconds`), if any.
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.status().and_then(StatusError::retry_after_seconds)
    }
}

/// `resourceVersionMatch`: how a list's resourceVersion is interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// The state at exactly that version.
    Exact,
    /// Any state not older than that version.
    NotOlderThan,
}

impl fmt::Display for ResourceVersionMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResourceVersionMatch::Exact => "Exact",
            ResourceVersionMatch::NotOlderThan => "NotOlderThan",
        })
    }
}

/// Options of a list or watch (`metav1.ListOptions`), as a plain struct with builder
/// methods.
///
/// ```
/// use kubegen_runtime::client::ListOptions;
///
/// let opts = ListOptions::default().labels("app=web").limit(500).resource_version("0");
/// assert_eq!(
///     opts.to_query(false),
///     "labelSelector=app%3Dweb&resourceVersion=0&limit=500"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `resourceVersion`; empty means unset.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `limit` (page size); 0 means unset.
    pub limit: Option<i64>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u32>,
    /// `allowWatchBookmarks` (watch only).
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents` (watch only).
    pub send_initial_events: Option<bool>,
    /// Client-side only, never sent: decode listed and watched objects without their
    /// `metadata.managedFields`, which are then skipped rather than decoded and dropped
    /// (the informer asks for this unless told to keep them).
    pub without_managed_fields: bool,
}

/// Appends `s` to `out`, percent-encoded for a query value.
fn push_encoded(out: &mut String, s: &str) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => {
                out.push('%');
                out.push_str(&format!("{b:02X}"));
            }
        }
    }
}

impl ListOptions {
    /// Sets the label selector.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Sets the field selector.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Sets the resourceVersion.
    pub fn resource_version(mut self, rv: &str) -> Self {
        self.resource_version = Some(rv.into());
        self
    }

    /// Sets resourceVersionMatch.
    pub fn resource_version_match(mut self, m: ResourceVersionMatch) -> Self {
        self.resource_version_match = Some(m);
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Sets the continue token.
    pub fn continue_token(mut self, token: &str) -> Self {
        self.continue_token = Some(token.into());
        self
    }

    /// Sets timeoutSeconds.
    pub fn timeout(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Sets allowWatchBookmarks.
    pub fn bookmarks(mut self, allow: bool) -> Self {
        self.allow_watch_bookmarks = allow;
        self
    }

    /// Sets sendInitialEvents.
    pub fn send_initial_events(mut self, send: bool) -> Self {
        self.send_initial_events = Some(send);
        self
    }

    /// Decodes objects without `metadata.managedFields` (client-side; not a query
    /// parameter).
    pub fn without_managed_fields(mut self, on: bool) -> Self {
        self.without_managed_fields = on;
        self
    }

    /// The query string (without `?`) of a list (`watch` false) or a watch.
    pub fn to_query(&self, watch: bool) -> String {
        let mut q = String::new();
        let mut add = |k: &str, v: &str| {
            if !q.is_empty() {
                q.push('&');
            }
            q.push_str(k);
            q.push('=');
            push_encoded(&mut q, v);
        };
        if watch {
            add("watch", "true");
        }
        if let Some(s) = self.label_selector.as_deref().filter(|s| !s.is_empty()) {
            add("labelSelector", s);
        }
        if let Some(s) = self.field_selector.as_deref().filter(|s| !s.is_empty()) {
            add("fieldSelector", s);
        }
        if let Some(s) = self.resource_version.as_deref().filter(|s| !s.is_empty()) {
            add("resourceVersion", s);
        }
        if let Some(m) = self.resource_version_match {
            add("resourceVersionMatch", &m.to_string());
        }
        if let Some(l) = self.limit.filter(|l| *l > 0) {
            add("limit", &l.to_string());
        }
        if let Some(c) = self.continue_token.as_deref().filter(|s| !s.is_empty()) {
            add("continue", c);
        }
        if let Some(t) = self.timeout_seconds {
            add("timeoutSeconds", &t.to_string());
        }
        if self.allow_watch_bookmarks {
            add("allowWatchBookmarks", "true");
        }
        if let Some(s) = self.send_initial_events {
            add("sendInitialEvents", if s { "true" } else { "false" });
        }
        q
    }
}

/// One page of a list (or all pages, from [`ResourceClient::list_all`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectList<K> {
    /// The objects.
    pub items: Vec<K>,
    /// The list's resourceVersion (of its snapshot).
    pub resource_version: String,
    /// The token for the next page, if any.
    pub continue_token: Option<String>,
    /// How many items remain after this page, when the server computed it.
    pub remaining_item_count: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireListMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_: Option<String>,
    #[serde(default)]
    remaining_item_count: Option<i64>,
}

/// One listed page whose items may still be decoding (from
/// [`ResourceClient::list_deferred`]).
pub struct DeferredPage<K> {
    /// The items, in order, once decoded.
    pub items: futures::future::BoxFuture<'static, Result<Vec<K>, Error>>,
    /// The list's resourceVersion (of its snapshot).
    pub resource_version: String,
    /// The token for the next page, if any.
    pub continue_token: Option<String>,
    /// How many items remain after this page, when the server computed it.
    pub remaining_item_count: Option<i64>,
}

impl<K> fmt::Debug for DeferredPage<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeferredPage")
            .field("resource_version", &self.resource_version)
            .field("continue_token", &self.continue_token)
            .field("remaining_item_count", &self.remaining_item_count)
            .finish_non_exhaustive()
    }
}

/// A typed client for one resource in one namespace, all namespaces, or the cluster.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use k8s_openapi::api::core::v1::Pod;
/// use kubegen_runtime::client::{ListOptions, ResourceClient};
/// use kubegen_runtime::testing::ApiServer;
///
/// let server = ApiServer::new();
/// server
///     .create("pods", serde_json::json!({"metadata": {"name": "p", "namespace": "ns"}}))
///     .unwrap();
/// let client = kube::Client::new(server.service(), "default");
/// let pods = ResourceClient::<Pod>::namespaced(client, "ns");
/// assert_eq!(pods.list_url(&ListOptions::default()), "/api/v1/namespaces/ns/pods");
/// let list = pods.list(&ListOptions::default()).await.unwrap();
/// assert_eq!(list.items.len(), 1);
/// # }
/// ```
///
/// `W` is how reads are encoded: [`Negotiated`] (the default: protobuf for built-in
/// kinds, JSON otherwise, see [`protobuf`]), [`Generated`] (the same, decoded by `K`'s
/// generated protobuf decoder: the typed informers of the compact mirrors) or
/// [`JsonOnly`] ([`ResourceClient::json_only`]), which generated clients and informers
/// of custom resources use. A JSON-only client
/// compiles no protobuf decoder for `K`: custom resources are never served in protobuf,
/// and the decoder would be compiled in the user's crate for each of its types.
pub struct ResourceClient<K, W = Negotiated> {
    client: kube::Client,
    path: String,
    /// Whether reads ask for protobuf first: `K` is a built-in kind (see [`protobuf`]).
    protobuf: bool,
    _k: PhantomData<fn() -> (K, W)>,
}

impl<K, W> Clone for ResourceClient<K, W> {
    fn clone(&self) -> Self {
        ResourceClient {
            client: self.client.clone(),
            path: self.path.clone(),
            protobuf: self.protobuf,
            _k: PhantomData,
        }
    }
}

impl<K, W> fmt::Debug for ResourceClient<K, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceClient")
            .field("path", &self.path)
            .field("protobuf", &self.protobuf)
            .finish()
    }
}

/// How a [`ResourceClient`]'s reads are encoded (sealed: [`Negotiated`], [`Generated`] or
/// [`JsonOnly`]).
pub trait Wire: sealed::Sealed + Send + Sync + 'static {
    /// Whether reads may ask for protobuf.
    #[doc(hidden)]
    const PROTOBUF: bool;
}

/// The protobuf decoders a [`Wire`] gives objects of `K` (sealed; implemented by every
/// `Wire` for the types it can decode).
pub trait WireDecoders<K>: Wire {
    /// The protobuf decoders of `K`, when reads may be answered in protobuf.
    #[doc(hidden)]
    fn protobuf() -> Option<ProtobufDecoders<K>>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Negotiated {}
    impl Sealed for super::Generated {}
    impl Sealed for super::JsonOnly {}
}

/// Reads ask for protobuf when `K` is a built-in kind (client-go's default for them), and
/// decode whichever the server answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Negotiated;

/// Reads ask for JSON only, and no protobuf decoder is compiled for `K`: for custom
/// resources, which kube-apiserver serves in JSON only.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonOnly;

/// The protobuf decoders of one type, as function pointers (opaque).
#[doc(hidden)]
pub struct ProtobufDecoders<K> {
    object: fn(&[u8], bool) -> Result<K, Error>,
    page: fn(Bytes, bool) -> Result<DeferredPage<K>, Error>,
    event: watch::ProtobufEvent<K>,
}

/// Reads ask for protobuf as [`Negotiated`] ones do, and decode it with `K`'s generated
/// decoder ([`kubegen_apimachinery::protobuf::fast::Message`]: matched by field number,
/// no table walk), the table-driven one taking over for any object it hands back. The
/// typed informers of the built-in kinds' compact mirrors use it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Generated;

impl ProtobufDecoders<()> {
    fn of<K, C>() -> ProtobufDecoders<K>
    where
        K: DeserializeOwned + Send + 'static,
        C: protobuf::Codec<K>,
    {
        ProtobufDecoders {
            object: protobuf::decode_object::<K, C>,
            page: protobuf::list_page::<K, C>,
            event: watch::convert_protobuf::<K, C>,
        }
    }
}

impl Wire for Negotiated {
    const PROTOBUF: bool = true;
}

impl<K: DeserializeOwned + Send + 'static> WireDecoders<K> for Negotiated {
    fn protobuf() -> Option<ProtobufDecoders<K>> {
        Some(ProtobufDecoders::of::<K, protobuf::Serde>())
    }
}

impl Wire for Generated {
    const PROTOBUF: bool = true;
}

impl<K: GeneratedDecoders> WireDecoders<K> for Generated {
    fn protobuf() -> Option<ProtobufDecoders<K>> {
        Some(K::protobuf_decoders())
    }
}

/// A type with a generated protobuf decoder whose protobuf decoders
/// ([`ProtobufDecoders::generated`]) are compiled in the crate that defines the type:
/// a crate that uses its informer calls them rather than compiling them again (the
/// table-driven fallback is most of a kind's decoding code). kubegen implements it for
/// the compact mirrors of the built-in kinds.
pub trait GeneratedDecoders:
    kubegen_apimachinery::protobuf::fast::Message + DeserializeOwned + Send + 'static
{
    /// `ProtobufDecoders::generated()`, in a non-generic function of the type's crate.
    fn protobuf_decoders() -> ProtobufDecoders<Self>;
}

impl<K> ProtobufDecoders<K>
where
    K: kubegen_apimachinery::protobuf::fast::Message + DeserializeOwned + Send + 'static,
{
    /// The decoders of [`Generated`] reads: `K`'s generated decoder, and the
    /// table-driven one for objects it hands back.
    pub fn generated() -> Self {
        ProtobufDecoders::of::<K, protobuf::Fast>()
    }
}

impl Wire for JsonOnly {
    const PROTOBUF: bool = false;
}

impl<K> WireDecoders<K> for JsonOnly {
    fn protobuf() -> Option<ProtobufDecoders<K>> {
        None
    }
}

/// A protobuf answer to a client that did not ask for one (a server ignoring `Accept`).
fn unexpected_protobuf() -> Error {
    Error::Decode(serde::de::Error::custom(
        "protobuf answer to a JSON-only client (the server ignored `Accept: application/json`)",
    ))
}

impl<K> ResourceClient<K>
where
    K: Resource<DynamicType = ()>,
{
    /// Objects of `K` in one namespace.
    pub fn namespaced(client: kube::Client, namespace: &str) -> Self {
        Self::namespaced_with(client, namespace, &())
    }

    /// Objects of `K` in all namespaces.
    pub fn all(client: kube::Client) -> Self {
        Self::all_with(client, &())
    }

    /// Objects of a cluster-scoped `K`.
    pub fn cluster(client: kube::Client) -> Self {
        Self::all_with(client, &())
    }
}

impl<K> ResourceClient<K> {
    /// The same client, asking for JSON only and compiling no protobuf decoder for `K`
    /// (see [`JsonOnly`]): what generated clients of custom resources use.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kubegen_runtime::client::{JsonOnly, ListOptions, ResourceClient};
    /// use kubegen_runtime::testing::ApiServer;
    ///
    /// let server = ApiServer::new();
    /// let client = kube::Client::new(server.service(), "default");
    /// let negotiated = ResourceClient::<ConfigMap>::namespaced(client, "default");
    /// assert!(negotiated.prefers_protobuf()); // a built-in kind
    /// let cms: ResourceClient<ConfigMap, JsonOnly> = negotiated.json_only();
    /// assert!(!cms.prefers_protobuf());
    /// assert!(cms.list(&ListOptions::default()).await.unwrap().items.is_empty());
    /// # }
    /// ```
    pub fn json_only(self) -> ResourceClient<K, JsonOnly> {
        self.rewire()
    }

    /// The same client with reads encoded as `W` says.
    pub(crate) fn rewire<W: Wire>(self) -> ResourceClient<K, W> {
        ResourceClient {
            client: self.client,
            path: self.path,
            protobuf: self.protobuf && W::PROTOBUF,
            _k: PhantomData,
        }
    }
}

impl<K: Resource> ResourceClient<K> {
    /// Objects in one namespace, for a type with dynamic type information (an
    /// [`kube::core::ApiResource`] for [`kube::core::DynamicObject`]).
    pub fn namespaced_with(client: kube::Client, namespace: &str, dt: &K::DynamicType) -> Self {
        ResourceClient {
            client,
            path: K::url_path(dt, Some(namespace)),
            protobuf: protobuf::offered_for::<K>(dt),
            _k: PhantomData,
        }
    }

    /// Objects in all namespaces, or of a cluster-scoped resource, for a type with
    /// dynamic type information.
    pub fn all_with(client: kube::Client, dt: &K::DynamicType) -> Self {
        ResourceClient {
            client,
            path: K::url_path(dt, None),
            protobuf: protobuf::offered_for::<K>(dt),
            _k: PhantomData,
        }
    }
}

impl<K: Resource, W: Wire> ResourceClient<K, W> {
    /// The collection URL of a list with these options.
    pub fn list_url(&self, opts: &ListOptions) -> String {
        self.with_query(opts.to_query(false))
    }

    /// The collection URL of a watch with these options.
    pub fn watch_url(&self, opts: &ListOptions) -> String {
        self.with_query(opts.to_query(true))
    }

    /// The URL of one object.
    pub fn object_url(&self, name: &str) -> String {
        format!("{}/{name}", self.path)
    }

    /// The URL of an object's subresource (`status`, `scale`, ...).
    pub fn subresource_url(&self, name: &str, subresource: &str) -> String {
        format!("{}/{name}/{subresource}", self.path)
    }

    /// Whether this client's reads ask for protobuf (`K` is a built-in kind and not
    /// metadata-only); the server may still answer JSON, which then decodes as JSON.
    pub fn prefers_protobuf(&self) -> bool {
        self.protobuf
    }

    /// The `Accept` header of a read (`list`: of a collection).
    fn accept(&self, list: bool) -> Option<&'static str> {
        metadata::accept::<K>(list).or(self.protobuf.then_some(protobuf::ACCEPT))
    }

    fn with_query(&self, q: String) -> String {
        if q.is_empty() {
            self.path.clone()
        } else {
            format!("{}?{q}", self.path)
        }
    }
}

/// Reads a response: the body of a 2xx one, an [`Error::Api`] otherwise.
pub(crate) async fn checked(
    res: http::Response<kube::client::Body>,
) -> Result<http::Response<kube::client::Body>, Error> {
    let code = res.status();
    if code.is_success() {
        return Ok(res);
    }
    let body = res
        .into_body()
        .collect()
        .await
        .map_err(Error::Transport)?
        .to_bytes();
    Err(Error::Api(status_from_body(code.as_u16(), &body)))
}

fn status_from_body(code: u16, body: &[u8]) -> StatusError {
    match serde_json::from_slice::<Status>(body) {
        Ok(mut st) if st.kind == "Status" => {
            if st.code == 0 {
                st.code = code;
            }
            st.into()
        }
        _ => StatusError::new(code, "", String::from_utf8_lossy(body).into_owned()),
    }
}

async fn read_all(
    client: &kube::Client,
    uri: String,
    accept: Option<&'static str>,
) -> Result<bytes::Bytes, Error> {
    Ok(read_body(client, uri, accept).await?.0)
}

/// The body of a GET and whether it is protobuf (by its `Content-Type`).
async fn read_body(
    client: &kube::Client,
    uri: String,
    accept: Option<&'static str>,
) -> Result<(bytes::Bytes, bool), Error> {
    let mut req = Request::get(uri);
    if let Some(accept) = accept {
        req = req.header(http::header::ACCEPT, accept);
    }
    let req = req
        .body(kube::client::Body::empty())
        .map_err(Error::Request)?;
    let res = client.send(req).await.map_err(Error::Transport)?;
    let res = checked(res).await?;
    let pb = protobuf::is_protobuf(&res);
    let body = res
        .into_body()
        .collect()
        .await
        .map_err(Error::Transport)?
        .to_bytes();
    Ok((body, pb))
}

impl<K, W> ResourceClient<K, W>
where
    K: Resource + DeserializeOwned + Send + 'static,
    W: WireDecoders<K>,
{
    /// Gets one object by name.
    pub async fn get(&self, name: &str) -> Result<K, Error> {
        let (body, pb) = read_body(&self.client, self.object_url(name), self.accept(false)).await?;
        if pb {
            return match W::protobuf() {
                Some(d) => (d.object)(&body, false),
                None => Err(unexpected_protobuf()),
            };
        }
        decode::json(&body).map_err(Error::Decode)
    }

    /// Lists one page. A large page's items are decoded on the decoding threads (in
    /// order); with [`ListOptions::without_managed_fields`] they come without
    /// `metadata.managedFields`.
    pub async fn list(&self, opts: &ListOptions) -> Result<ObjectList<K>, Error> {
        self.list_with(opts, false).await
    }

    /// [`ResourceClient::list`]; with `exact`, every decoded item's vectors at their
    /// exact capacities (for items that are cached).
    pub(crate) async fn list_with(
        &self,
        opts: &ListOptions,
        exact: bool,
    ) -> Result<ObjectList<K>, Error> {
        let page = self.list_deferred_with(opts, exact).await?;
        Ok(ObjectList {
            items: page.items.await?,
            resource_version: page.resource_version,
            continue_token: page.continue_token,
            remaining_item_count: page.remaining_item_count,
        })
    }

    /// Lists one page and returns once its body is read and its metadata known; the
    /// items decode in the background (a spawned task; on the decoding threads for
    /// large pages: a page of usual size whose metadata comes first as one job, in one
    /// pass, a very large one in parallel chunks) and arrive through
    /// [`DeferredPage::items`], so that the caller can fetch the next page meanwhile.
    pub async fn list_deferred(&self, opts: &ListOptions) -> Result<DeferredPage<K>, Error> {
        self.list_deferred_with(opts, false).await
    }

    /// [`ResourceClient::list_deferred`]; with `exact`, every decoded item's vectors at
    /// their exact capacities.
    pub(crate) async fn list_deferred_with(
        &self,
        opts: &ListOptions,
        exact: bool,
    ) -> Result<DeferredPage<K>, Error> {
        let url = self.list_url(opts);
        let span = tracing::debug_span!("list", url = %url);
        let (body, pb) = read_body(&self.client, url, self.accept(true))
            .instrument(span)
            .await?;
        let without_managed_fields = opts.without_managed_fields;
        if pb {
            return match W::protobuf() {
                Some(d) => (d.page)(body, without_managed_fields),
                None => Err(unexpected_protobuf()),
            };
        }
        let whole = (decode::WHOLE_PAGE_MIN_BYTES..decode::CHUNKED_MIN_BYTES)
            .contains(&body.len())
            .then(|| decode::leading_metadata(&body))
            .flatten();
        if let Some(meta) = whole {
            // A page of the usual size: its metadata (the continue token) is known at
            // once, and the page decodes in one pass as one job on the decoding threads
            // while the caller fetches the next page.
            let task = tokio::spawn(pool::run(move || {
                decode::decode_page::<K>(&body, without_managed_fields, exact)
            }));
            let items = async move {
                match task.await {
                    Ok(Ok(r)) => r.map_err(Error::Decode),
                    Ok(Err(e)) => Err(Error::Decode(serde::de::Error::custom(e))),
                    Err(e) => Err(Error::Decode(serde::de::Error::custom(e))),
                }
            }
            .boxed();
            return Ok(DeferredPage {
                items,
                resource_version: meta.resource_version.unwrap_or_default(),
                continue_token: meta.continue_.filter(|c| !c.is_empty()),
                remaining_item_count: meta.remaining_item_count,
            });
        }
        let mut raw = decode::RawList::parse(body).map_err(Error::Decode)?;
        let meta = raw.metadata.take();
        let items = if raw.len() < decode::PARALLEL_MIN_ITEMS {
            let items = raw
                .decode_items(without_managed_fields, exact)
                .await
                .map_err(Error::Decode);
            futures::future::ready(items).boxed()
        } else {
            let task = tokio::spawn(raw.decode_items(without_managed_fields, exact));
            async move {
                match task.await {
                    Ok(r) => r.map_err(Error::Decode),
                    Err(e) => Err(Error::Decode(serde::de::Error::custom(e))),
                }
            }
            .boxed()
        };
        Ok(DeferredPage {
            items,
            resource_version: meta
                .as_ref()
                .and_then(|m| m.resource_version.clone())
                .unwrap_or_default(),
            continue_token: meta
                .as_ref()
                .and_then(|m| m.continue_.clone())
                .filter(|c| !c.is_empty()),
            remaining_item_count: meta.and_then(|m| m.remaining_item_count),
        })
    }

    /// Lists every page, as client-go's pager does: the list's resourceVersion is the
    /// first page's; a 410 Expired on a later page is retried once as a full list
    /// (no limit, no continue, the original resourceVersion and match).
    pub async fn list_all(&self, opts: &ListOptions) -> Result<ObjectList<K>, Error> {
        let paged = paging::list_pages(
            opts.clone(),
            true,
            None,
            |o| async move { self.list(&o).await },
        )
        .await;
        match paged {
            Ok((list, _)) => Ok(list),
            Err(paging::PagingError::List(e)) => Err(e),
            // No token was given: nothing can cancel.
            Err(paging::PagingError::Cancelled) => unreachable!("list_all has no cancellation"),
        }
    }

    /// Starts a watch. The request's own failure (validation, 404, ...) is an `Err`;
    /// everything after the response headers arrives as [`WatchEvent`]s.
    pub async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<K>, Error> {
        self.watch_with(opts, false).await
    }

    /// [`ResourceClient::watch`]; with `exact`, every decoded object's vectors at their
    /// exact capacities.
    pub(crate) async fn watch_with(
        &self,
        opts: &ListOptions,
        exact: bool,
    ) -> Result<WatchStream<K>, Error> {
        let url = self.watch_url(opts);
        let span = tracing::debug_span!("watch", url = %url);
        let mut req = Request::get(url);
        if let Some(accept) = self.accept(false) {
            req = req.header(http::header::ACCEPT, accept);
        }
        let req = req
            .body(kube::client::Body::empty())
            .map_err(Error::Request)?;
        let res = async { checked(self.client.send(req).await.map_err(Error::Transport)?).await }
            .instrument(span)
            .await?;
        if protobuf::is_protobuf(&res) {
            let Some(d) = W::protobuf() else {
                return Err(unexpected_protobuf());
            };
            return Ok(WatchStream::protobuf(
                res.into_body(),
                opts.without_managed_fields,
                d.event,
            ));
        }
        Ok(WatchStream::with_decoding(
            res.into_body(),
            opts.without_managed_fields,
            exact,
        ))
    }
}
