//! Protobuf on the read path, for built-in kinds (client-go's default for them).
//!
//! Contract:
//! - A [`super::ResourceClient`] of a built-in kind (one `kubegen_apimachinery::protobuf`
//!   has a description of: every kind of `k8s.io/api`, `apiextensions` and
//!   `apiregistration`) sends `Accept: application/vnd.kubernetes.protobuf,
//!   application/json` ([`ACCEPT`]) on get, list and watch, as client-go's typed clients
//!   do. Custom resources, metadata-only clients and writes keep JSON (kube-apiserver has
//!   no protobuf for custom resources).
//! - The answer's `Content-Type` decides the decoding: protobuf bodies (the `k8s\0`
//!   envelope; on watch, frames of a 4-byte big-endian length and a `metav1.WatchEvent`
//!   whose object is such a body) decode straight into `K` through
//!   `kubegen_apimachinery::protobuf::Deserializer`, which presents exactly the JSON
//!   kube-apiserver would have written; anything else decodes as JSON. So a server
//!   without protobuf (the in-memory server, an aggregated API) costs nothing.
//! - `metadata.managedFields` are skipped the same way as in JSON when asked; vectors
//!   come at their exact sizes without the JSON path's pre-count (protobuf gives the
//!   item counts).
//! - [`json_only`] turns protobuf off for every client and informer over a
//!   [`kube::Client`] (its reads then ask for JSON only).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::FutureExt;
use http::{Request, Response};
use kube::client::Body;
use kubegen_apimachinery::protobuf::{self as pb, Deserializer, List};
use serde::de::DeserializeOwned;
use tower::Service;

use super::{decode, DeferredPage, Error};

/// The `Accept` header of a read of a built-in kind: protobuf, else JSON.
pub const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// Whether a client of `K` asks for protobuf: a built-in kind, not metadata-only.
pub(crate) fn offered_for<K: kube::Resource>(dt: &K::DynamicType) -> bool {
    !K::metadata_api() && pb::is_built_in(&K::api_version(dt), &K::kind(dt))
}

/// Whether a response's body is protobuf (`Content-Type:
/// application/vnd.kubernetes.protobuf`, with `;stream=watch` on watches).
pub(crate) fn is_protobuf<B>(res: &Response<B>) -> bool {
    res.headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(pb::MEDIA_TYPE))
        })
}

fn decode_error(e: impl std::fmt::Display) -> Error {
    Error::Decode(serde::de::Error::custom(format_args!("protobuf: {e}")))
}

/// How objects of `K` decode from protobuf: [`Serde`] or [`Fast`].
pub(crate) trait Codec<K>: 'static {
    /// Decodes one object (`de` is a whole object's or a list item's deserializer).
    fn decode(de: Deserializer<'_>, without_managed_fields: bool) -> Result<K, pb::Unsupported>;
}

/// The table-driven deserializer, for any serde type.
pub(crate) struct Serde;

impl<K: DeserializeOwned> Codec<K> for Serde {
    fn decode(de: Deserializer<'_>, without_managed_fields: bool) -> Result<K, pb::Unsupported> {
        decode::deserialize_protobuf(de, without_managed_fields)
    }
}

/// `K`'s generated decoder (`pb::fast::Message`), and [`Serde`] for an object it hands
/// back.
pub(crate) struct Fast;

impl<K> Codec<K> for Fast
where
    K: DeserializeOwned + pb::fast::Message,
{
    fn decode(de: Deserializer<'_>, without_managed_fields: bool) -> Result<K, pb::Unsupported> {
        match pb::fast::decode_object::<K>(de.message(), de.bytes(), without_managed_fields) {
            Some(obj) => Ok(obj),
            None => Serde::decode(de, without_managed_fields),
        }
    }
}

/// Decodes one object body (`k8s\0` envelope).
pub(crate) fn decode_object<K, C: Codec<K>>(
    body: &[u8],
    without_managed_fields: bool,
) -> Result<K, Error> {
    let de = pb::envelope(body)
        .and_then(Deserializer::object)
        .map_err(decode_error)?;
    C::decode(de, without_managed_fields).map_err(decode_error)
}

/// The items of a list body in this index range, decoded.
fn decode_items<K, C: Codec<K>>(
    body: &[u8],
    range: std::ops::Range<usize>,
    without_managed_fields: bool,
) -> Result<Vec<K>, Error> {
    let list = List::parse(body).map_err(decode_error)?;
    let Some(items) = list.items.get(range) else {
        return Err(decode_error("the list changed between two reads"));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(C::decode(list.item(item), without_managed_fields).map_err(decode_error)?);
    }
    Ok(out)
}

/// One list page in protobuf: its metadata at once, its items decoded inline when few,
/// else on the decoding threads (in parallel chunks when there are many) while the
/// caller goes on.
pub(crate) fn list_page<K, C>(
    body: Bytes,
    without_managed_fields: bool,
) -> Result<DeferredPage<K>, Error>
where
    K: Send + 'static,
    C: Codec<K>,
{
    let list = List::parse(&body).map_err(decode_error)?;
    let n = list.items.len();
    let page = |items| DeferredPage {
        items,
        resource_version: list.resource_version.clone(),
        continue_token: Some(list.continue_token.clone()).filter(|c| !c.is_empty()),
        remaining_item_count: list.remaining_item_count,
    };
    if n < decode::PARALLEL_MIN_ITEMS && body.len() < decode::WHOLE_PAGE_MIN_BYTES {
        let items = decode_items::<K, C>(&body, 0..n, without_managed_fields);
        return Ok(page(futures::future::ready(items).boxed()));
    }
    let chunks = if body.len() >= decode::CHUNKED_MIN_BYTES {
        super::pool::width().max(1)
    } else {
        1
    };
    let per_chunk = n.div_ceil(chunks).max(1);
    let mut tasks = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + per_chunk).min(n);
        let body = body.clone();
        tasks.push(tokio::spawn(super::pool::run(move || {
            decode_items::<K, C>(&body, start..end, without_managed_fields)
        })));
        start = end;
    }
    let items = async move {
        let mut out = Vec::with_capacity(n);
        for t in tasks {
            match t.await {
                Ok(Ok(part)) => out.extend(part?),
                Ok(Err(e)) => return Err(decode_error(e)),
                Err(e) => return Err(decode_error(e)),
            }
        }
        Ok(out)
    }
    .boxed();
    Ok(page(items))
}

/// Turns protobuf off for every read through `client`: a request that asks for
/// protobuf ([`ACCEPT`]) asks for `application/json` instead. Every
/// [`super::ResourceClient`], clientset and informer built over the returned client
/// then reads JSON, as before protobuf was the default.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use k8s_openapi::api::core::v1::Pod;
/// use kubegen_runtime::client::{protobuf, ListOptions, ResourceClient};
/// use kubegen_runtime::testing::ApiServer;
///
/// let server = ApiServer::new();
/// let client = protobuf::json_only(kube::Client::new(server.service(), "default"));
/// let pods = ResourceClient::<Pod>::all(client);
/// assert!(pods.list(&ListOptions::default()).await.unwrap().items.is_empty());
/// # }
/// ```
pub fn json_only(client: kube::Client) -> kube::Client {
    let ns = client.default_namespace().to_owned();
    kube::Client::new(AcceptJson(client), ns)
}

/// The service of [`json_only`].
#[derive(Clone)]
struct AcceptJson(kube::Client);

impl Service<Request<Body>> for AcceptJson {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, kube::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), kube::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        let headers = req.headers_mut();
        if headers
            .get(http::header::ACCEPT)
            .is_some_and(|v| v.as_bytes() == ACCEPT.as_bytes())
        {
            headers.insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static("application/json"),
            );
        }
        let client = self.0.clone();
        Box::pin(async move { client.send(req).await })
    }
}
