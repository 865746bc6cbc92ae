//! Client-side rate limiting and `Retry-After` retries for every request of a
//! [`kube::Client`], as client-go's REST client does them.
//!
//! Contract:
//! - [`RestConfig`] is the part of `rest.Config` that decides them: `qps`, `burst`, an
//!   optional shared [`TokenBucket`], `max_retries`. Unset (0) `qps`/`burst` mean 5/10, a
//!   negative `qps` means no limiter, and `qps > 0` with `burst <= 0` is an error
//!   (SEMANTICS 12, client-side rate limiting).
//! - One configuration makes one bucket: every [`kube::Client`] made by
//!   [`RestConfig::wrap`] or [`RestConfig::client`] (and every `ResourceClient`, clientset
//!   or informer over it) draws from it. Build the [`RestLayer`] once and reuse it (or
//!   set [`RestConfig::rate_limiter`]) to share one bucket between several clients.
//! - Every request waits on the bucket before its first attempt and before every retry.
//! - A response 429 or >= 500 carrying an integer `Retry-After` (seconds) is retried after
//!   that long, up to `max_retries` times (default 10, so at most 11 attempts), if its
//!   body can be replayed (a byte body; a streaming body disables retries). Without the
//!   header, or with an HTTP date, it is not retried. When retries run out the last
//!   response is returned as is (it becomes a TooManyRequests, ... [`super::Error::Api`]).
//! - A GET whose connection was reset or ended early (an `io::Error` of kind
//!   `ConnectionReset`, `ConnectionAborted`, `BrokenPipe` or `UnexpectedEof` in the error's
//!   source chain) is retried as a 500 with `Retry-After: 1`; other verbs are not.
//!
//! Not done: client-go's optional per-host exponential backoff (env
//! `KUBE_CLIENT_BACKOFF_BASE`), and joining an earlier attempt's error into the final
//! error's text. A client built from a kubeconfig by kube retries 429/503/504 itself:
//! [`RestConfig::client`] turns that off (`Config::default_retry = false`) so that retries
//! follow the rules above only.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use kube::client::Body;
use tokio::time::Instant;
use tower::{BoxError, Layer, Service, ServiceExt};

use crate::flowcontrol::TokenBucket;

/// client-go's default QPS when none is set.
pub const DEFAULT_QPS: f32 = 5.0;
/// client-go's default burst when none is set.
pub const DEFAULT_BURST: i32 = 10;
/// client-go's default number of retries of one request.
pub const DEFAULT_MAX_RETRIES: i32 = 10;

/// The header naming the API Priority and Fairness flow schema that throttled a request.
const FLOW_SCHEMA_UID: &str = "x-kubernetes-pf-flowschema-uid";

/// Rate limiting and retries for a client (the matching fields of client-go's
/// `rest.Config`), as a plain struct with builder methods.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kubegen_runtime::client::{ListOptions, ResourceClient, RestConfig};
/// use kubegen_runtime::testing::ApiServer;
///
/// let server = ApiServer::new();
/// // (from a kubeconfig: `RestConfig::default().qps(20.0).burst(40).client(config)?`)
/// let client = RestConfig::default()
///     .qps(20.0)
///     .burst(40)
///     .wrap(kube::Client::new(server.service(), "default"))?;
/// // Both draw from one bucket of 40 tokens refilled at 20 per second.
/// let pods = ResourceClient::<Pod>::all(client.clone());
/// let cms = ResourceClient::<ConfigMap>::all(client);
/// pods.list(&ListOptions::default()).await?;
/// cms.list(&ListOptions::default()).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RestConfig {
    /// Requests per second; 0 means [`DEFAULT_QPS`], negative means no limiter.
    pub qps: f32,
    /// The bucket's size; 0 means [`DEFAULT_BURST`] when `qps` is unset too.
    pub burst: i32,
    /// A bucket to use as is (and share); `qps` and `burst` are then ignored.
    pub rate_limiter: Option<Arc<TokenBucket>>,
    /// Retries of one request on `Retry-After`; negative means 0.
    pub max_retries: i32,
}

impl Default for RestConfig {
    fn default() -> Self {
        RestConfig {
            qps: 0.0,
            burst: 0,
            rate_limiter: None,
            max_retries: DEFAULT_MAX_RETRIES,
        }
    }
}

/// A [`RestConfig`] that cannot make a client.
#[derive(Debug, thiserror::Error)]
pub enum RestConfigError {
    /// `qps > 0` with `burst <= 0` and no bucket given.
    #[error(
        "burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0"
    )]
    BurstRequired,
    /// kube could not build the client from the configuration.
    #[error("building the client: {0}")]
    Client(#[source] kube::Error),
}

impl RestConfig {
    /// Sets requests per second (negative: no limiter).
    pub fn qps(mut self, qps: f32) -> Self {
        self.qps = qps;
        self
    }

    /// Sets the bucket's size.
    pub fn burst(mut self, burst: i32) -> Self {
        self.burst = burst;
        self
    }

    /// Turns client-side rate limiting off (`QPS: -1`).
    pub fn unlimited(self) -> Self {
        self.qps(-1.0)
    }

    /// Uses (and shares) this bucket.
    pub fn rate_limiter(mut self, bucket: Arc<TokenBucket>) -> Self {
        self.rate_limiter = Some(bucket);
        self
    }

    /// Sets the retries of one request on `Retry-After`.
    pub fn max_retries(mut self, n: i32) -> Self {
        self.max_retries = n;
        self
    }

    /// The bucket this configuration asks for (`None`: unlimited).
    pub fn limiter(&self) -> Result<Option<Arc<TokenBucket>>, RestConfigError> {
        if let Some(b) = &self.rate_limiter {
            return Ok(Some(b.clone()));
        }
        if self.qps > 0.0 && self.burst <= 0 {
            return Err(RestConfigError::BurstRequired);
        }
        let qps = if self.qps == 0.0 {
            DEFAULT_QPS
        } else {
            self.qps
        };
        if qps < 0.0 {
            return Ok(None);
        }
        let burst = match self.burst {
            0 => DEFAULT_BURST,
            b if b < 0 => return Err(RestConfigError::BurstRequired),
            b => b,
        };
        let burst = u32::try_from(burst).map_err(|_| RestConfigError::BurstRequired)?;
        Ok(Some(Arc::new(TokenBucket::new(f64::from(qps), burst))))
    }

    /// A layer holding ONE bucket: every service it wraps shares it.
    pub fn layer(&self) -> Result<RestLayer, RestConfigError> {
        Ok(RestLayer {
            limiter: self.limiter()?,
            max_retries: u32::try_from(self.max_retries).unwrap_or(0),
            host: String::new(),
        })
    }

    /// `client` with this configuration's bucket and retries in front of it.
    pub fn wrap(&self, client: kube::Client) -> Result<kube::Client, RestConfigError> {
        Ok(self.layer()?.wrap(client))
    }

    /// A client from a kube configuration (kubeconfig, in-cluster, ...) with kube's own
    /// retries turned off and this configuration's rate limiting and retries on.
    pub fn client(&self, mut config: kube::Config) -> Result<kube::Client, RestConfigError> {
        config.default_retry = false;
        let host = config.cluster_url.host().unwrap_or_default().to_owned();
        let client = kube::Client::try_from(config).map_err(RestConfigError::Client)?;
        let mut layer = self.layer()?;
        layer.host = host;
        Ok(layer.wrap(client))
    }
}

/// The tower layer of a [`RestConfig`]: one bucket, shared by every service it wraps.
#[derive(Debug, Clone)]
pub struct RestLayer {
    limiter: Option<Arc<TokenBucket>>,
    max_retries: u32,
    /// The `host` label of `rest_client_requests_total` when a request's URI has none.
    host: String,
}

impl RestLayer {
    /// The shared bucket, if rate limiting is on.
    pub fn limiter(&self) -> Option<&Arc<TokenBucket>> {
        self.limiter.as_ref()
    }

    /// A client whose every request goes through this layer, then through `client`.
    pub fn wrap(&self, client: kube::Client) -> kube::Client {
        let ns = client.default_namespace().to_owned();
        kube::Client::new(self.layer(SendService(client)), ns)
    }
}

impl<S> Layer<S> for RestLayer {
    type Service = RestService<S>;

    fn layer(&self, inner: S) -> RestService<S> {
        RestService {
            inner,
            limiter: self.limiter.clone(),
            max_retries: self.max_retries,
            host: self.host.clone(),
        }
    }
}

/// A [`kube::Client`] as a tower service, so that a layer can sit in front of it.
#[derive(Clone)]
struct SendService(kube::Client);

impl Service<Request<Body>> for SendService {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, kube::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), kube::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move { client.send(req).await })
    }
}

/// The service a [`RestLayer`] makes: waits on the bucket, sends, and retries on
/// `Retry-After`.
#[derive(Debug, Clone)]
pub struct RestService<S> {
    inner: S,
    limiter: Option<Arc<TokenBucket>>,
    max_retries: u32,
    host: String,
}

/// Why and after how long a request is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Retry {
    pub after: Duration,
    pub reason: String,
}

/// client-go's `IsNextRetry` for a response: `attempts` made so far (>= 1), the answer's
/// code and headers. `None`: no retry.
pub(crate) fn retry_after_response(
    attempts: u32,
    max_retries: u32,
    code: u16,
    headers: &http::HeaderMap,
) -> Option<Retry> {
    if attempts > max_retries || !(code == 429 || code >= 500) {
        return None;
    }
    let secs: u64 = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let why = if code == 429 {
        let uid = headers
            .get(FLOW_SCHEMA_UID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        format!("due to server-side throttling, FlowSchema UID: {uid:?}")
    } else {
        code.to_string()
    };
    Some(Retry {
        after: Duration::from_secs(secs),
        reason: format!("retries: {attempts}, retry-after: {secs}s - retry-reason: {why}"),
    })
}

/// client-go's `IsNextRetry` for a failed round trip of a GET: a reset or cut connection
/// is retried as a 500 with `Retry-After: 1`.
pub(crate) fn retry_after_error(
    attempts: u32,
    max_retries: u32,
    method: &http::Method,
    err: &(dyn std::error::Error + 'static),
) -> Option<Retry> {
    if attempts > max_retries || method != http::Method::GET || !connection_cut(err) {
        return None;
    }
    Some(Retry {
        after: Duration::from_secs(1),
        reason: format!(
            "retries: {attempts}, retry-after: 1s - retry-reason: due to retryable error, error: {err}"
        ),
    })
}

fn connection_cut(err: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::*;
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
            )
        {
            return true;
        }
        cur = e.source();
    }
    false
}

/// A copy of a request's head, to send again.
struct Head {
    method: http::Method,
    uri: http::Uri,
    version: http::Version,
    headers: http::HeaderMap,
}

impl Head {
    fn request(&self, body: Body) -> Request<Body> {
        let mut req = Request::new(body);
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = self.version;
        *req.headers_mut() = self.headers.clone();
        req
    }
}

impl<S, B> Service<Request<Body>> for RestService<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<B>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness of the inner service is awaited per attempt, on a clone.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let limiter = self.limiter.clone();
        let max_retries = self.max_retries;
        let layer_host = self.host.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let head = Head {
                method: parts.method,
                uri: parts.uri,
                version: parts.version,
                headers: parts.headers,
            };
            // A byte body can be sent again; a streaming one cannot, which disables
            // retries.
            let host = head.uri.host().map_or(layer_host, str::to_owned);
            let replay = body.try_clone();
            let mut body = Some(body);
            let mut attempts = 0u32;
            loop {
                let Some(this) = body.take().or_else(|| replay.as_ref()?.try_clone()) else {
                    // Not reached: without a replayable body `max` is 0, so no retry.
                    return Err("the request body cannot be sent again".into());
                };
                if let Some(bucket) = &limiter {
                    let waited = bucket.accept().await;
                    if waited > Duration::from_millis(50) {
                        tracing::info!(
                            ?waited,
                            method = %head.method,
                            uri = %head.uri,
                            "Waited before sending request: client-side throttling, not priority and fairness"
                        );
                    }
                }
                attempts += 1;
                let max = if replay.is_some() { max_retries } else { 0 };
                let mut svc = inner.clone();
                let sent = Instant::now();
                let res = match svc.ready().await {
                    Ok(svc) => svc.call(head.request(this)).await,
                    Err(e) => Err(e),
                };
                crate::metrics::request_done(
                    &head.method,
                    &host,
                    head.uri.path(),
                    res.as_ref().ok().map(|r| r.status().as_u16()),
                    sent.elapsed(),
                );
                let retry = match res {
                    Ok(resp) => {
                        match retry_after_response(
                            attempts,
                            max,
                            resp.status().as_u16(),
                            resp.headers(),
                        ) {
                            Some(r) => r,
                            None => return Ok(resp),
                        }
                    }
                    Err(e) => {
                        let e: BoxError = e.into();
                        match retry_after_error(attempts, max, &head.method, e.as_ref()) {
                            Some(r) => r,
                            None => return Err(e),
                        }
                    }
                };
                tracing::debug!(method = %head.method, uri = %head.uri, reason = %retry.reason, "retrying request");
                tokio::time::sleep(retry.after).await;
            }
        })
    }
}

#[cfg(test)]
mod tests;
