//! The three ways an end-to-end test reaches an API server: the in-memory server through
//! its tower Service (no sockets: what a fake clientset uses), the same server over TCP
//! (real HTTP through `kube::Client`), and a real control plane ([`super::envtest`]).
//! A suite written once over a [`Connection`] runs on all three, so what it asserts of the
//! in-memory server is also asserted of Kubernetes itself.
//!
//! Contract: [`Transport::connect`] gives a client whose default namespace is
//! `default`; for `Real` it starts a fresh control plane with the CRDs named (the
//! in-memory server is then unused), for `Tower` and `Tcp` the CRDs are the caller's to
//! register on the server. [`Connection::close`] stops what `connect` started.
//!
//! ```no_run
//! # async fn demo() {
//! use kubegen_runtime::testing::{transport::Transport, ApiServer};
//!
//! for transport in [Transport::Tower, Transport::Tcp, Transport::Real] {
//!     let server = ApiServer::new();
//!     let conn = transport.connect(&server, ["crds/"]).await.unwrap();
//!     let _client = conn.client();
//!     conn.close().await;
//! }
//! # }
//! ```

use std::path::PathBuf;

use super::envtest::{Environment, Error};
use super::{ApiServer, TcpServer};

/// How a test's client reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// The in-memory server's tower Service, in process.
    Tower,
    /// The in-memory server on a loopback port, through a real HTTP client.
    Tcp,
    /// A real etcd + kube-apiserver (+ controller manager) from
    /// [`envtest`](super::envtest).
    Real,
}

/// A client and what keeps its server up.
pub struct Connection {
    client: kube::Client,
    keep: Keep,
}

enum Keep {
    Nothing,
    Tcp(TcpServer),
    Real(Box<Environment>),
}

impl std::fmt::Debug for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Keep::Nothing => "Tower",
            Keep::Tcp(_) => "Tcp",
            Keep::Real(_) => "Real",
        })
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("transport", &self.keep)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A client for `server` (Tower, Tcp) or for a new control plane with the CRD files
    /// or directories `crds` installed (Real).
    pub async fn connect<P: Into<PathBuf>>(
        self,
        server: &ApiServer,
        crds: impl IntoIterator<Item = P>,
    ) -> Result<Connection, Error> {
        match self {
            Transport::Tower => Ok(Connection {
                client: kube::Client::new(server.service(), "default"),
                keep: Keep::Nothing,
            }),
            Transport::Tcp => {
                let tcp = server.serve_tcp().await.map_err(|source| Error::Io {
                    path: PathBuf::from("127.0.0.1:0"),
                    source,
                })?;
                let client = tcp.client().await.map_err(|e| Error::Kube {
                    context: "a client for the in-memory server's port".into(),
                    source: match e {
                        super::ConfigError::Kubeconfig(k) => kube::Error::InferKubeconfig(k),
                        super::ConfigError::Client(c) => c,
                    },
                })?;
                Ok(Connection {
                    client,
                    keep: Keep::Tcp(tcp),
                })
            }
            Transport::Real => {
                let env = Environment::builder().crd_paths(crds).start().await?;
                Ok(Connection {
                    client: env.client(),
                    keep: Keep::Real(Box::new(env)),
                })
            }
        }
    }
}

impl Connection {
    /// The client (cheap to clone).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The control plane, for `Transport::Real`.
    pub fn environment(&self) -> Option<&Environment> {
        match &self.keep {
            Keep::Real(env) => Some(env),
            _ => None,
        }
    }

    /// The kubeconfig file that reaches the server (`kubectl --kubeconfig`): the TCP
    /// port's or the control plane's; `None` for `Tower`, which has no socket.
    pub fn kubeconfig(&self) -> Option<&std::path::Path> {
        match &self.keep {
            Keep::Nothing => None,
            Keep::Tcp(tcp) => Some(tcp.kubeconfig_path()),
            Keep::Real(env) => Some(env.kubeconfig()),
        }
    }

    /// Stops the TCP listener or the control plane.
    pub async fn close(self) {
        match self.keep {
            Keep::Nothing => {}
            Keep::Tcp(tcp) => tcp.shutdown().await,
            Keep::Real(env) => env.stop().await,
        }
    }
}
