//! client-go's process-wide metrics of the REST client, reflectors and leader election,
//! under client-go's names (feature `prometheus` records them).
//!
//! Contract:
//! - Nothing is recorded until [`prometheus::register`] (feature `prometheus`) installs the
//!   metrics; before that, and without the feature, the hooks the runtime calls do nothing.
//!   Like client-go's `metrics.Register` and `leaderelection.SetProvider`, the metrics are
//!   global: one set per process, which any number of registries may expose.
//! - `rest_client_requests_total{code,method,host}` counts every attempt a
//!   [`RestConfig`](crate::client::RestConfig) client makes (a retried request counts once
//!   per attempt); `code` is the HTTP status, or `<error>` when no response came.
//!   `rest_client_request_duration_seconds{verb,url}` observes each attempt's time to the
//!   response headers; `url` is the URL with namespace and name replaced by `{namespace}`
//!   and `{name}` and without the query (client-go's URL template), so its cardinality is
//!   bounded by the resources used.
//! - `reflector_lists_total{name}`, `reflector_list_duration_seconds{name}`,
//!   `reflector_items_per_list{name}` and `reflector_watches_total{name}` count a
//!   reflector's successful lists (all pages) and started watches; `name` is its kind.
//! - `informer_queued_items{name}`, `informer_processing_latency_seconds{name}` and
//!   `informer_store_resource_version{name}` are an informer's queued FIFO items, the time
//!   to process each popped item, and its store's last resourceVersion (as a number);
//!   `name` is the informer's name (see [`InformerMetrics`]).
//! - `leader_election_master_status{name}` is 1 while a [`LeaderElector`] of that lock name
//!   leads ([`is_leading`]), 0 after.
//!
//! Tracing: lists, watches, relists and handler dispatch run in `tracing` spans named
//! `list`, `watch`, `relist` and `handle` (see each module).
//!
//! [`LeaderElector`]: crate::leaderelection::LeaderElector
//! [`is_leading`]: crate::leaderelection::LeaderElector::is_leading
//! [`InformerMetrics`]: crate::cache::informer::InformerMetrics

use std::time::Duration;

/// The URL template of a request path (client-go's `finalURLTemplate`): the namespace after
/// `namespaces/` and the object name after the resource become `{namespace}` and `{name}`;
/// the query is dropped.
#[cfg_attr(not(feature = "prometheus"), allow(dead_code))]
pub(crate) fn url_template(path: &str) -> String {
    let path = path.split('?').next().unwrap_or("");
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // /api/v1/... or /apis/<group>/<version>/...
    let rest_at = match segs.first() {
        Some(&"api") => 2,
        Some(&"apis") => 3,
        _ => return path.to_owned(),
    };
    let mut out: Vec<&str> = segs.iter().take(rest_at).copied().collect();
    let mut rest = segs.iter().skip(rest_at).copied().peekable();
    if rest.peek() == Some(&"namespaces") {
        out.push("namespaces");
        rest.next();
        match rest.next() {
            Some(_) if rest.peek().is_some() => out.push("{namespace}"),
            // `/api/v1/namespaces/<name>`: the namespace object itself.
            Some(_) => out.push("{name}"),
            None => {}
        }
    }
    if let Some(resource) = rest.next() {
        out.push(resource);
        if rest.next().is_some() {
            out.push("{name}");
        }
        out.extend(rest);
    }
    format!("/{}", out.join("/"))
}

/// Records one attempt of a request: its code (`None`: no response) and latency.
pub(crate) fn request_done(
    method: &http::Method,
    host: &str,
    path: &str,
    code: Option<u16>,
    latency: Duration,
) {
    #[cfg(feature = "prometheus")]
    if let Some(m) = prometheus::installed() {
        let code = code.map_or_else(|| "<error>".to_owned(), |c| c.to_string());
        m.requests
            .with_label_values(&[code.as_str(), method.as_str(), host])
            .inc();
        m.request_duration
            .with_label_values(&[method.as_str(), &url_template(path)])
            .observe(latency.as_secs_f64());
    }
    #[cfg(not(feature = "prometheus"))]
    let _ = (method, host, path, code, latency);
}

/// Records a reflector's successful list of `items` objects that took `took`.
pub(crate) fn reflector_listed(name: &str, items: usize, took: Duration) {
    #[cfg(feature = "prometheus")]
    if let Some(m) = prometheus::installed() {
        m.reflector_lists.with_label_values(&[name]).inc();
        m.reflector_list_duration
            .with_label_values(&[name])
            .observe(took.as_secs_f64());
        m.reflector_items_per_list
            .with_label_values(&[name])
            .observe(items as f64);
    }
    #[cfg(not(feature = "prometheus"))]
    let _ = (name, items, took);
}

/// Records a reflector's started watch.
pub(crate) fn reflector_watch_started(name: &str) {
    #[cfg(feature = "prometheus")]
    if let Some(m) = prometheus::installed() {
        m.reflector_watches.with_label_values(&[name]).inc();
    }
    #[cfg(not(feature = "prometheus"))]
    let _ = name;
}

/// Records how many items an informer's FIFO holds.
pub(crate) fn informer_queued(name: &str, items: usize) {
    #[cfg(feature = "prometheus")]
    if let Some(m) = prometheus::installed() {
        m.informer_queued
            .with_label_values(&[name])
            .set(items as f64);
    }
    #[cfg(not(feature = "prometheus"))]
    let _ = (name, items);
}

/// Records the processing time of one item an informer popped.
pub(crate) fn informer_processed(name: &str, took: Duration) {
    #[cfg(feature = "prometheus")]
    if let Some(m) = prometheus::installed() {
        m.informer_latency
            .with_label_values(&[name])
            .observe(took.as_secs_f64());
    }
    #[cfg(not(feature = "prometheus"))]
    let _ = (name, took);
}

/// Records the resourceVersion an informer's store was last synced to.
pub(crate) fn informer_resource_version(name: &str, rv: &str) {
    #[cfg(feature = "prometheus")]
    if let (Some(m), Ok(rv)) = (prometheus::installed(), rv.parse::<f64>()) {
        m.informer_resource_version
            .with_label_values(&[name])
            .set(rv);
    }
    #[cfg(not(feature = "prometheus"))]
    let _ = (name, rv);
}

/// Records whether the elector of lock `name` leads.
pub(crate) fn leader_status(name: &str, leading: bool) {
    #[cfg(feature = "prometheus")]
    if let Some(m) = prometheus::installed() {
        m.leader_status
            .with_label_values(&[name])
            .set(if leading { 1.0 } else { 0.0 });
    }
    #[cfg(not(feature = "prometheus"))]
    let _ = (name, leading);
}

/// The Prometheus metrics (feature `prometheus`) and a minimal `/metrics` endpoint.
#[cfg(feature = "prometheus")]
pub mod prometheus {
    use std::sync::OnceLock;

    use ::prometheus::{
        exponential_buckets, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry,
    };

    pub(crate) struct Metrics {
        pub(crate) requests: IntCounterVec,
        pub(crate) request_duration: HistogramVec,
        pub(crate) reflector_lists: IntCounterVec,
        pub(crate) reflector_list_duration: HistogramVec,
        pub(crate) reflector_items_per_list: HistogramVec,
        pub(crate) reflector_watches: IntCounterVec,
        pub(crate) leader_status: GaugeVec,
        pub(crate) informer_queued: GaugeVec,
        pub(crate) informer_latency: HistogramVec,
        pub(crate) informer_resource_version: GaugeVec,
    }

    static METRICS: OnceLock<Metrics> = OnceLock::new();

    pub(crate) fn installed() -> Option<&'static Metrics> {
        METRICS.get()
    }

    fn build() -> Result<Metrics, ::prometheus::Error> {
        Ok(Metrics {
            requests: IntCounterVec::new(
                Opts::new(
                    "rest_client_requests_total",
                    "Number of HTTP requests, partitioned by status code, method, and host.",
                ),
                &["code", "method", "host"],
            )?,
            request_duration: HistogramVec::new(
                HistogramOpts::new(
                    "rest_client_request_duration_seconds",
                    "Request latency in seconds. Broken down by verb, and host.",
                )
                .buckets(vec![
                    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
                ]),
                &["verb", "url"],
            )?,
            reflector_lists: IntCounterVec::new(
                Opts::new(
                    "reflector_lists_total",
                    "Total number of API lists done by the reflectors",
                ),
                &["name"],
            )?,
            reflector_list_duration: HistogramVec::new(
                HistogramOpts::new(
                    "reflector_list_duration_seconds",
                    "How long an API list takes to return and decode for the reflectors",
                ),
                &["name"],
            )?,
            reflector_items_per_list: HistogramVec::new(
                HistogramOpts::new(
                    "reflector_items_per_list",
                    "How many objects an API list returns to the reflectors",
                )
                .buckets(exponential_buckets(1.0, 4.0, 10)?),
                &["name"],
            )?,
            reflector_watches: IntCounterVec::new(
                Opts::new(
                    "reflector_watches_total",
                    "Total number of API watches done by the reflectors",
                ),
                &["name"],
            )?,
            leader_status: GaugeVec::new(
                Opts::new(
                    "leader_election_master_status",
                    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
                ),
                &["name"],
            )?,
            informer_queued: GaugeVec::new(
                Opts::new(
                    "informer_queued_items",
                    "Number of items queued in the informer's FIFO, by informer name",
                ),
                &["name"],
            )?,
            informer_latency: HistogramVec::new(
                HistogramOpts::new(
                    "informer_processing_latency_seconds",
                    "Time to process one item popped from the informer's FIFO, by informer name",
                )
                .buckets(exponential_buckets(0.000_01, 4.0, 12)?),
                &["name"],
            )?,
            informer_resource_version: GaugeVec::new(
                Opts::new(
                    "informer_store_resource_version",
                    "The resourceVersion the informer's store was last synced to, by informer name",
                ),
                &["name"],
            )?,
        })
    }

    /// Installs the process-wide metrics (once) and registers them in `registry`. Call it
    /// at start-up; what happened before is not counted. Registering twice in the same
    /// registry fails with `AlreadyReg`.
    ///
    /// ```
    /// let registry = prometheus::Registry::new();
    /// kubegen_runtime::metrics::prometheus::register(&registry).unwrap();
    /// ```
    pub fn register(registry: &Registry) -> Result<(), ::prometheus::Error> {
        let m = match METRICS.get() {
            Some(m) => m,
            None => {
                let built = build()?;
                // A concurrent first call may have won; either set is fine.
                METRICS.get_or_init(|| built)
            }
        };
        registry.register(Box::new(m.requests.clone()))?;
        registry.register(Box::new(m.request_duration.clone()))?;
        registry.register(Box::new(m.reflector_lists.clone()))?;
        registry.register(Box::new(m.reflector_list_duration.clone()))?;
        registry.register(Box::new(m.reflector_items_per_list.clone()))?;
        registry.register(Box::new(m.reflector_watches.clone()))?;
        registry.register(Box::new(m.leader_status.clone()))?;
        registry.register(Box::new(m.informer_queued.clone()))?;
        registry.register(Box::new(m.informer_latency.clone()))?;
        registry.register(Box::new(m.informer_resource_version.clone()))?;
        Ok(())
    }

    /// The text exposition of everything in `registry`.
    pub fn encode(registry: &Registry) -> Result<String, ::prometheus::Error> {
        ::prometheus::TextEncoder::new().encode_to_string(&registry.gather())
    }

    /// Serves `GET /metrics` (the text exposition of `registry`) on `listener` until
    /// `stop` is cancelled: a minimal HTTP/1.1 endpoint, one request per connection, for
    /// a scraper; any other path is a 404.
    ///
    /// ```no_run
    /// # async fn demo() -> std::io::Result<()> {
    /// let registry = prometheus::Registry::new();
    /// kubegen_runtime::metrics::prometheus::register(&registry).unwrap();
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
    /// let stop = tokio_util::sync::CancellationToken::new();
    /// kubegen_runtime::metrics::prometheus::serve(listener, registry, stop).await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn serve(
        listener: tokio::net::TcpListener,
        registry: Registry,
        stop: tokio_util::sync::CancellationToken,
    ) {
        loop {
            let conn = tokio::select! {
                c = listener.accept() => c,
                _ = stop.cancelled() => return,
            };
            let Ok((stream, _)) = conn else { continue };
            let registry = registry.clone();
            tokio::spawn(async move {
                if let Err(e) = answer(stream, &registry).await {
                    tracing::debug!(error = %e, "metrics endpoint: connection failed");
                }
            });
        }
    }

    async fn answer(mut stream: tokio::net::TcpStream, registry: &Registry) -> std::io::Result<()> {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

        let mut reader = BufReader::new(&mut stream);
        let mut request_line = String::new();
        reader.read_line(&mut request_line).await?;
        // Skip the headers: the endpoint needs none of them.
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await? == 0 || line.trim().is_empty() {
                break;
            }
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let (status, body) = if method == "GET" && path.split('?').next() == Some("/metrics") {
            match encode(registry) {
                Ok(text) => ("200 OK", text),
                Err(e) => (
                    "500 Internal Server Error",
                    format!("encoding metrics: {e}\n"),
                ),
            }
        } else {
            ("404 Not Found", "only GET /metrics is served\n".to_owned())
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::url_template;

    #[test]
    fn url_templates_hide_namespaces_and_names() {
        for (path, want) in [
            ("/api/v1/pods", "/api/v1/pods"),
            (
                "/api/v1/namespaces/ns/pods?watch=true",
                "/api/v1/namespaces/{namespace}/pods",
            ),
            (
                "/api/v1/namespaces/ns/pods/web",
                "/api/v1/namespaces/{namespace}/pods/{name}",
            ),
            (
                "/apis/apps/v1/namespaces/ns/deployments/web/scale",
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
            ),
            ("/api/v1/namespaces/ns", "/api/v1/namespaces/{name}"),
            ("/api/v1/nodes/n1/status", "/api/v1/nodes/{name}/status"),
            ("/version", "/version"),
        ] {
            assert_eq!(url_template(path), want, "{path}");
        }
    }
}
