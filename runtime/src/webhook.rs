//! An admission webhook server (feature `webhook`), as controller-runtime's webhook
//! package serves them: HTTPS, one handler per path, typed requests and responses.
//!
//! - **Validating** handlers answer [`Validation::allow`] or [`Validation::deny`] (the
//!   message kube-apiserver shows the client: `admission webhook "<name>" denied the
//!   request: <message>`), with warnings.
//! - **Mutating** handlers return the object as it should be: the server computes the
//!   JSON patch from the request's object to it (controller-runtime's
//!   `PatchResponseFromRaw`), so handlers never write patches by hand.
//! - **TLS**: a certificate and key from PEM files, read again when either file changes
//!   (cert-manager rotates them in place), or a self-signed certificate for tests and
//!   local runs whose PEM is the `caBundle` of the webhook configuration
//!   ([`Tls::self_signed`]).
//! - **Conversion** handlers ([`WebhookServer::conversion`]) answer `ConversionReview`s:
//!   one function converts an object to the desired apiVersion.
//! - **Metrics** (feature `prometheus`, after [`prometheus::register`]): controller-runtime's
//!   `controller_runtime_webhook_requests_total{webhook,code}`,
//!   `controller_runtime_webhook_requests_in_flight{webhook}` and
//!   `controller_runtime_webhook_latency_seconds{webhook}`, `webhook` being the path of a
//!   served handler (requests to other paths are not counted).
//! - `/healthz` answers `ok`; [`WebhookServer::serve`] stops taking connections when its
//!   token is cancelled and waits for the requests in flight.
//!
//! Requests are `admission.k8s.io/v1` `AdmissionReview`s (kube's `admission` types);
//! a body that is not one is answered with a review that denies it and says why, as
//! controller-runtime does.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::core::Resource;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio_rustls::rustls;
use tokio_util::sync::CancellationToken;

mod metrics;
#[cfg(feature = "prometheus")]
pub use metrics::prometheus;

/// A validating handler's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validation {
    /// `None`: allowed; `Some(message)`: denied with it.
    pub denied: Option<String>,
    /// Warnings the client shows (`Warning:` lines of kubectl).
    pub warnings: Vec<String>,
}

impl Validation {
    /// Allowed.
    pub fn allow() -> Self {
        Validation::default()
    }

    /// Denied with `message`.
    pub fn deny(message: impl Into<String>) -> Self {
        Validation {
            denied: Some(message.into()),
            warnings: Vec::new(),
        }
    }

    /// Adds a warning.
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
}

/// A mutating handler's answer: the object as it should be stored, or a denial.
#[derive(Debug, Clone, PartialEq)]
pub enum Mutation<K> {
    /// Store this (the patch from the request's object to it is sent).
    Object(K),
    /// Deny the request with this message.
    Deny(String),
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
/// A handler takes the request body (an `AdmissionReview` or a `ConversionReview`),
/// decodes it once, straight into the review of its kind, and answers the review to send.
type Handler = Arc<dyn Fn(Bytes) -> BoxFuture<serde_json::Value> + Send + Sync>;

/// A handler of admission reviews: its response is sent as an `AdmissionReview`.
fn admission_handler<F>(f: F) -> Handler
where
    F: Fn(Bytes) -> BoxFuture<AdmissionResponse> + Send + Sync + 'static,
{
    Arc::new(move |body: Bytes| {
        let answer = f(body);
        Box::pin(async move { admission_review(answer.await) })
    })
}

/// The TLS a [`WebhookServer`] serves with.
#[derive(Clone)]
pub struct Tls {
    resolver: Arc<CertResolver>,
    ca_pem: Option<String>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("files", &self.resolver.files)
            .finish_non_exhaustive()
    }
}

/// Why the server could not start or its certificate could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// A certificate or key file could not be read or parsed.
    #[error("{path}: {problem}")]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A self-signed certificate could not be made.
    #[error("cannot make a self-signed certificate: {0}")]
    SelfSigned(String),
    /// The listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

impl Tls {
    /// A certificate chain and private key from PEM files, read again whenever either
    /// file's modification time changes (checked at each new connection).
    pub fn files(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Result<Self, WebhookError> {
        let files = (cert.into(), key.into());
        let loaded = load_pem(&files.0, &files.1)?;
        Ok(Tls {
            resolver: Arc::new(CertResolver {
                files: Some(files),
                current: Mutex::new(loaded),
            }),
            ca_pem: None,
        })
    }

    /// A self-signed certificate for `names` (DNS names or IP addresses, such as
    /// `127.0.0.1` or `my-webhook.my-ns.svc`); [`Tls::ca_pem`] is what the webhook
    /// configuration's `caBundle` must hold (base64-encoded).
    pub fn self_signed(names: &[&str]) -> Result<Self, WebhookError> {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let rcgen::CertifiedKey { cert, key_pair } = rcgen::generate_simple_self_signed(names)
            .map_err(|e| WebhookError::SelfSigned(e.to_string()))?;
        let cert_pem = cert.pem();
        let key_pem = key_pair.serialize_pem();
        let key = parse_key(key_pem.as_bytes(), Path::new("(self-signed key)"))?;
        let chain = parse_chain(cert_pem.as_bytes(), Path::new("(self-signed certificate)"))?;
        let certified = certified_key(chain, key, Path::new("(self-signed key)"))?;
        Ok(Tls {
            resolver: Arc::new(CertResolver {
                files: None,
                current: Mutex::new(Loaded {
                    key: Arc::new(certified),
                    stamp: None,
                }),
            }),
            ca_pem: Some(cert_pem),
        })
    }

    /// The PEM of the self-signed certificate (`None` for certificates from files).
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }
}

struct Loaded {
    key: Arc<rustls::sign::CertifiedKey>,
    /// Modification times of the cert and key files when they were read.
    stamp: Option<(SystemTime, SystemTime)>,
}

#[derive(Debug)]
struct CertResolver {
    files: Option<(PathBuf, PathBuf)>,
    current: Mutex<Loaded>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("stamp", &self.stamp)
            .finish()
    }
}

impl rustls::server::ResolvesServerCert for CertResolver {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        let mut current = self.current.lock();
        if let Some((cert, key)) = &self.files {
            let stamp = (modified(cert), modified(key));
            if let (Some(c), Some(k)) = stamp
                && current.stamp != Some((c, k))
            {
                match load_pem(cert, key) {
                    Ok(loaded) => *current = loaded,
                    // Keep serving the last good certificate (a rotation may be
                    // half-written); the next connection tries again.
                    Err(e) => tracing::warn!(error = %e, "webhook certificate reload failed"),
                }
            }
        }
        Some(current.key.clone())
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn load_pem(cert: &Path, key: &Path) -> Result<Loaded, WebhookError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| WebhookError::Certificate {
            path: p.to_path_buf(),
            problem: format!("cannot read: {e}"),
        })
    };
    let chain = parse_chain(&read(cert)?, cert)?;
    let private = parse_key(&read(key)?, key)?;
    let stamp = match (modified(cert), modified(key)) {
        (Some(c), Some(k)) => Some((c, k)),
        _ => None,
    };
    Ok(Loaded {
        key: Arc::new(certified_key(chain, private, key)?),
        stamp,
    })
}

fn parse_chain(
    pem: &[u8],
    path: &Path,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, WebhookError> {
    use rustls::pki_types::pem::PemObject;
    let chain: Result<Vec<_>, _> = rustls::pki_types::CertificateDer::pem_slice_iter(pem).collect();
    match chain {
        Ok(c) if !c.is_empty() => Ok(c),
        Ok(_) => Err(WebhookError::Certificate {
            path: path.to_path_buf(),
            problem: "no PEM certificate in the file".into(),
        }),
        Err(e) => Err(WebhookError::Certificate {
            path: path.to_path_buf(),
            problem: format!("not a PEM certificate chain: {e}"),
        }),
    }
}

fn parse_key(
    pem: &[u8],
    path: &Path,
) -> Result<rustls::pki_types::PrivateKeyDer<'static>, WebhookError> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::PrivateKeyDer::from_pem_slice(pem).map_err(|e| WebhookError::Certificate {
        path: path.to_path_buf(),
        problem: format!("not a PEM private key: {e}"),
    })
}

fn certified_key(
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    path: &Path,
) -> Result<rustls::sign::CertifiedKey, WebhookError> {
    let provider = rustls::crypto::ring::default_provider();
    rustls::sign::CertifiedKey::from_der(chain, key, &provider).map_err(|e| {
        WebhookError::Certificate {
            path: path.to_path_buf(),
            problem: format!("the key does not fit the certificate: {e}"),
        }
    })
}

/// Admission webhooks served over HTTPS, one handler per path.
#[derive(Default, Clone)]
pub struct WebhookServer {
    handlers: BTreeMap<String, Handler>,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("paths", &self.handlers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl WebhookServer {
    /// A server with no handlers.
    pub fn new() -> Self {
        WebhookServer::default()
    }

    /// Serves a validating webhook for objects of `K` at `path` (`/validate-...`).
    pub fn validating<K, F, Fut>(mut self, path: &str, handler: F) -> Self
    where
        K: Resource + DeserializeOwned + Send + 'static,
        F: Fn(AdmissionRequest<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Validation> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let h = admission_handler(move |body: Bytes| -> BoxFuture<AdmissionResponse> {
            let handler = handler.clone();
            Box::pin(async move {
                let typed: AdmissionRequest<K> = match decode(&body) {
                    Ok(t) => t,
                    Err(why) => return AdmissionResponse::invalid(why),
                };
                let base = AdmissionResponse::from(&typed);
                let v = handler(typed).await;
                let mut resp = match v.denied {
                    Some(message) => base.deny(message),
                    None => base,
                };
                resp.warnings = (!v.warnings.is_empty()).then_some(v.warnings);
                resp
            })
        });
        self.handlers.insert(path.to_owned(), h);
        self
    }

    /// Serves a mutating webhook for objects of `K` at `path` (`/mutate-...`): the
    /// handler returns the object as it should be and the server sends the JSON patch
    /// from the request's object to it.
    pub fn mutating<K, F, Fut>(mut self, path: &str, handler: F) -> Self
    where
        K: Resource + DeserializeOwned + Serialize + Send + 'static,
        F: Fn(AdmissionRequest<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Mutation<K>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let h = admission_handler(move |body: Bytes| -> BoxFuture<AdmissionResponse> {
            let handler = handler.clone();
            Box::pin(async move {
                let typed: AdmissionRequest<K> = match decode(&body) {
                    Ok(t) => t,
                    Err(why) => return AdmissionResponse::invalid(why),
                };
                let base = AdmissionResponse::from(&typed);
                // The patch goes from the object as `K` reads it to the handler's `K`:
                // fields `K` does not model are in neither, so the patch leaves them be.
                let original = typed
                    .object
                    .as_ref()
                    .and_then(|o| serde_json::to_value(o).ok())
                    .unwrap_or(serde_json::Value::Null);
                match handler(typed).await {
                    Mutation::Deny(message) => base.deny(message),
                    Mutation::Object(obj) => {
                        let wanted = match serde_json::to_value(&obj) {
                            Ok(v) => v,
                            Err(e) => return base.deny(format!("cannot encode the object: {e}")),
                        };
                        let patch = json_patch::diff(&original, &wanted);
                        if patch.0.is_empty() {
                            return base;
                        }
                        base.clone()
                            .with_patch(patch)
                            .unwrap_or_else(|e| base.deny(format!("cannot encode the patch: {e}")))
                    }
                }
            })
        });
        self.handlers.insert(path.to_owned(), h);
        self
    }

    /// Serves a CRD conversion webhook at `path` (`/convert`), as controller-runtime's
    /// `conversion.Webhook` does: `convert` turns one object into the review's
    /// `desiredAPIVersion` (its first argument). The objects of a review are converted in
    /// order; the first error fails the whole review with its message, which the API
    /// server reports as `conversion webhook for <gvk> failed: <message>`. A body that
    /// is not a `ConversionReview` is answered with a failed review that says why.
    ///
    /// ```
    /// use kubegen_runtime::webhook::WebhookServer;
    ///
    /// // v1 `spec.size` is v2 `spec.replicas`.
    /// let server = WebhookServer::new().conversion("/convert", |desired, mut obj| {
    ///     let (from, to) = if desired == "example.com/v2" { ("size", "replicas") } else { ("replicas", "size") };
    ///     let spec = obj["spec"].as_object_mut().ok_or("no spec")?;
    ///     if let Some(v) = spec.remove(from) {
    ///         spec.insert(to.into(), v);
    ///     }
    ///     obj["apiVersion"] = desired.into();
    ///     Ok(obj)
    /// });
    /// # let _ = server;
    /// ```
    pub fn conversion<F>(mut self, path: &str, convert: F) -> Self
    where
        F: Fn(&str, serde_json::Value) -> Result<serde_json::Value, String> + Send + Sync + 'static,
    {
        let convert = Arc::new(convert);
        let h: Handler = Arc::new(move |body: Bytes| {
            let convert = convert.clone();
            Box::pin(async move { conversion_review(&body, &*convert) })
        });
        self.handlers.insert(path.to_owned(), h);
        self
    }

    /// Binds `addr` (port 0 for any free one) and serves until `shutdown` is cancelled;
    /// returns the bound address and the task, which ends once the requests in flight
    /// are answered.
    pub async fn serve(
        self,
        addr: SocketAddr,
        tls: Tls,
        shutdown: CancellationToken,
    ) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), WebhookError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| WebhookError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| WebhookError::Bind { addr, source })?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| WebhookError::SelfSigned(e.to_string()))?
        .with_no_client_auth()
        .with_cert_resolver(tls.resolver.clone());
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let handlers = Arc::new(self.handlers);
        let task = tokio::spawn(async move {
            let tracker = tokio_util::task::TaskTracker::new();
            loop {
                let (stream, _) = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            tracing::warn!(error = %e, "webhook accept failed");
                            continue;
                        }
                    },
                };
                let (acceptor, handlers) = (acceptor.clone(), handlers.clone());
                let shutdown = shutdown.clone();
                tracker.spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let handlers = handlers.clone();
                        async move { Ok::<_, Infallible>(route(&handlers, req).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let conn =
                        hyper::server::conn::http1::Builder::new().serve_connection(io, service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => return,
                        _ = shutdown.cancelled() => {}
                    }
                    // Shutting down: answer the request in flight, if any, then close.
                    // An idle keep-alive connection closes now; without this the task
                    // would wait for the client to drop it (kube-apiserver keeps idle
                    // connections to a webhook for 90 s).
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                });
            }
            tracker.close();
            tracker.wait().await;
        });
        Ok((local, task))
    }
}

/// The request of an `AdmissionReview` body, decoded as one of `K`; a body that is not
/// one is answered with a review that denies it and says why, as controller-runtime does.
fn decode<K: Resource + DeserializeOwned>(body: &[u8]) -> Result<AdmissionRequest<K>, String> {
    let review: AdmissionReview<K> = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not an AdmissionReview: {e}"))?;
    review
        .try_into()
        .map_err(|e| format!("the review has no request: {e}"))
}

async fn route(
    handlers: &BTreeMap<String, Handler>,
    req: http::Request<hyper::body::Incoming>,
) -> http::Response<Full<Bytes>> {
    let respond = |status: u16, content_type: &str, body: Vec<u8>| {
        http::Response::builder()
            .status(status)
            .header("content-type", content_type)
            .body(Full::new(Bytes::from(body)))
            .unwrap_or_else(|_| http::Response::new(Full::new(Bytes::new())))
    };
    let path = req.uri().path().to_owned();
    if path == "/healthz" || path == "/readyz" {
        return respond(200, "text/plain", b"ok".to_vec());
    }
    let Some(handler) = handlers.get(&path) else {
        return respond(
            404,
            "text/plain",
            format!("no webhook at {path}").into_bytes(),
        );
    };
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return respond(
                400,
                "text/plain",
                format!("cannot read the body: {e}").into_bytes(),
            );
        }
    };
    let _in_flight = metrics::InFlight::start(&path);
    let started = std::time::Instant::now();
    let out = handler(body).await;
    metrics::observe(&path, 200, started.elapsed());
    respond(
        200,
        "application/json",
        serde_json::to_vec(&out).unwrap_or_default(),
    )
}

/// The `AdmissionReview` that carries `response`.
fn admission_review(response: AdmissionResponse) -> serde_json::Value {
    let mut out = serde_json::to_value(response.into_review()).unwrap_or_default();
    // `patch` is a Go []byte: base64 text on the wire (kube's type writes the bytes as
    // a number array, which Go also reads, but no other client does).
    if let Some(patch) = out.pointer_mut("/response/patch")
        && let Some(bytes) = patch.as_array().map(|a| {
            a.iter()
                .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Vec<u8>>()
        })
    {
        use base64::Engine as _;
        *patch = serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
    out
}

/// The answer to a `ConversionReview` body: every object converted by `convert`, or a
/// failure naming the first that could not be.
fn conversion_review(
    body: &[u8],
    convert: &dyn Fn(&str, serde_json::Value) -> Result<serde_json::Value, String>,
) -> serde_json::Value {
    use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
    use kube::core::Status;
    let request = serde_json::from_slice::<ConversionReview>(body)
        .map_err(|e| format!("the body is not a ConversionReview: {e}"))
        .and_then(|r| {
            ConversionRequest::from_review(r).map_err(|_| "the review has no request".to_owned())
        });
    let response = match request {
        Err(why) => ConversionResponse::invalid(Status::failure(&why, "")),
        Ok(request) => {
            let desired = request.desired_api_version.clone();
            let objects = request.objects.clone();
            let converted: Result<Vec<_>, String> =
                objects.into_iter().map(|o| convert(&desired, o)).collect();
            let base = ConversionResponse::for_request(request);
            match converted {
                Ok(objects) => base.success(objects),
                Err(why) => base.failure(Status::failure(&why, "")),
            }
        }
    };
    serde_json::to_value(response.into_review()).unwrap_or_default()
}
