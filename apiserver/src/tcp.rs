//! The server on a real TCP port through hyper (HTTP/1.1, plain HTTP on 127.0.0.1), with
//! a kubeconfig file written for it.
//!
//! Contract: [`TcpServer::shutdown`] stops accepting, ends the watches served over this
//! listener, lets in-flight responses finish and waits for every connection to close.
//! The kubeconfig file is removed when the [`TcpServer`] is dropped.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::http::handle;
use super::server::{ApiServer, Inner};

/// The in-memory API server listening on a TCP port.
///
/// ```no_run
/// # #[tokio::main]
/// # async fn main() {
/// use kubegen_apiserver::ApiServer;
///
/// let server = ApiServer::new();
/// let tcp = server.serve_tcp().await.unwrap();
/// let client = tcp.client().await.unwrap();
/// let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client);
/// assert!(pods.list(&Default::default()).await.unwrap().items.is_empty());
/// tcp.shutdown().await;
/// # }
/// ```
#[derive(Debug)]
pub struct TcpServer {
    addr: SocketAddr,
    kubeconfig: PathBuf,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// An error building a client for a [`TcpServer`].
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The kubeconfig could not be read.
    #[error("reading the kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// kube could not build a client from it.
    #[error("building the client: {0}")]
    Client(#[from] kube::Error),
}

impl ApiServer {
    /// Serves this server on `127.0.0.1` on a free port.
    pub async fn serve_tcp(&self) -> io::Result<TcpServer> {
        self.serve_tcp_on(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
    }

    /// Serves this server on the given address (port 0: a free one; see
    /// [`TcpServer::addr`]).
    pub async fn serve_tcp_on(&self, addr: SocketAddr) -> io::Result<TcpServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let kubeconfig = std::env::temp_dir().join(format!(
            "kubegen-apiserver-{}-{}.kubeconfig",
            std::process::id(),
            addr.port()
        ));
        write_kubeconfig(&kubeconfig, addr)?;
        let stop = self.inner.shutdown.child_token();
        let task = tokio::spawn(accept_loop(listener, self.inner.clone(), stop.clone()));
        Ok(TcpServer {
            addr,
            kubeconfig,
            stop,
            task: Some(task),
        })
    }
}

fn write_kubeconfig(path: &Path, addr: SocketAddr) -> io::Result<()> {
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubegen", "cluster": {"server": format!("http://{addr}")}}],
        "users": [{"name": "kubegen", "user": {}}],
        "contexts": [{"name": "kubegen", "context": {"cluster": "kubegen", "user": "kubegen", "namespace": "default"}}],
        "current-context": "kubegen",
    });
    std::fs::write(path, doc.to_string())
}

async fn accept_loop(listener: TcpListener, inner: Arc<Inner>, stop: CancellationToken) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            r = listener.accept() => {
                let Ok((stream, _)) = r else { continue };
                let _ = stream.set_nodelay(true);
                conns.spawn(serve_connection(stream, inner.clone(), stop.clone()));
            }
        }
    }
    drop(listener);
    while conns.join_next().await.is_some() {}
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    inner: Arc<Inner>,
    stop: CancellationToken,
) {
    let svc_stop = stop.clone();
    let svc = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let inner = inner.clone();
        let stop = svc_stop.clone();
        async move {
            let (parts, body) = req.into_parts();
            let bytes = match super::media::read_body(body).await {
                Ok(b) => b,
                Err(e) => {
                    return Ok::<_, Infallible>(super::response::error_response(&e));
                }
            };
            Ok(handle(inner, http::Request::from_parts(parts, bytes), stop).await)
        }
    });
    let conn =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

impl TcpServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The kubeconfig file written for this server (context `kubegen`, namespace
    /// `default`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// A [`kube::Config`] read from the kubeconfig file, as a user's program would build
    /// it.
    pub async fn config(&self) -> Result<kube::Config, ConfigError> {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig)?;
        let cfg =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await?;
        Ok(cfg)
    }

    /// A [`kube::Client`] for this server, built from the kubeconfig, with kube's
    /// default retry of 429/503/504 responses turned off so that every error reaches the
    /// caller as the server sent it (a 504 `ResourceVersionTooLarge` would otherwise be
    /// retried 15 times with exponential backoff).
    pub async fn client(&self) -> Result<kube::Client, ConfigError> {
        let mut config = self.config().await?;
        config.default_retry = false;
        Ok(kube::Client::try_from(config)?)
    }

    /// Stops accepting, ends the watches of this listener and waits for every
    /// connection to close.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        self.stop.cancel();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}
