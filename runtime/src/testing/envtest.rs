//! A real Kubernetes control plane for tests: etcd and kube-apiserver (and, where its
//! binary is there, kube-controller-manager) started on loopback, CRDs installed, a
//! `kube::Client` handed out, everything torn down on drop. This is controller-runtime's
//! envtest for Rust; the in-memory server (`kubegen_runtime::testing::ApiServer`) is the
//! fast fake, this is the oracle.
//!
//! Contract:
//! - [`Environment::start`] runs the binaries of the directory named by
//!   `KUBEGEN_ENVTEST_ASSETS`, else `KUBEBUILDER_ASSETS` (so envtest's
//!   `setup-envtest use` output works unchanged), else
//!   [`EnvironmentBuilder::binary_assets`]. It needs `etcd` and `kube-apiserver` there;
//!   `kube-controller-manager` is started when present (garbage collection, namespace
//!   deletion, service accounts are its controllers, not the API server's) unless
//!   [`EnvironmentBuilder::controller_manager`] says no. Without one the
//!   `ServiceAccount` admission plugin is disabled, as envtest does, so Pods can be
//!   created. `hack/real-apiserver.sh build` builds all three; `env` prints the variable.
//! - Every environment is its own: fresh etcd data, free loopback ports (below the
//!   kernel's ephemeral range; a port taken before its component binds it starts the
//!   processes again on others, up to three times), a random admin
//!   token in `system:masters`, RBAC on, a service-account key pair made here, the API
//!   server's own self-signed serving certificate (trusted by the client, not skipped).
//! - `start` returns once `/readyz` answers, the CRDs given are `Established` and served
//!   in discovery, and (with a controller manager) the `default` ServiceAccount exists.
//!   A component that exits or is not ready within [`EnvironmentBuilder::timeout`] is an
//!   error carrying the tail of its log.
//! - `KUBEGEN_ENVTEST_KUBECONFIG=<path>` uses that cluster instead (envtest's
//!   `USE_EXISTING_CLUSTER`): nothing is started or stopped; CRDs are still installed.
//! - Dropping the environment kills its processes and removes its directory;
//!   [`Environment::stop`] does the same and waits for them. A test process killed by a
//!   signal cannot run drop: its children then outlive it.
//!
//! Not done: webhooks, an aggregated API server, the scheduler (Pods stay `Pending`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), kubegen_runtime::testing::envtest::Error> {
//! use kubegen_runtime::testing::envtest::Environment;
//!
//! let env = Environment::builder()
//!     .crd_paths(["examples/sample-controller/crd"])
//!     .start()
//!     .await?;
//! let client = env.client(); // a kube::Client for the admin user
//! # let _ = client;
//! env.stop().await;
//! # Ok(())
//! # }
//! ```

use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;

/// The variable naming a directory of control-plane binaries (kubegen's name).
pub const ASSETS_VAR: &str = "KUBEGEN_ENVTEST_ASSETS";
/// The variable controller-runtime's envtest uses for the same directory.
pub const KUBEBUILDER_ASSETS_VAR: &str = "KUBEBUILDER_ASSETS";
/// The variable naming the kubeconfig of an existing cluster to use instead.
pub const KUBECONFIG_VAR: &str = "KUBEGEN_ENVTEST_KUBECONFIG";

/// What can go wrong starting or using an environment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No directory holds the binaries.
    #[error(
        "no control-plane binaries: set {ASSETS_VAR} (or {KUBEBUILDER_ASSETS_VAR}) to a directory holding \
         kube-apiserver and etcd; `hack/real-apiserver.sh build` builds them and \
         `eval \"$(hack/real-apiserver.sh env)\"` sets the variable ({0})"
    )]
    NoBinaries(String),
    /// A binary could not be started.
    #[error("cannot start {binary}: {source}")]
    Spawn {
        /// The binary's path.
        binary: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A component exited or did not become ready.
    #[error("{component} {problem}; the end of its log ({log}):\n{tail}")]
    NotReady {
        /// `etcd`, `kube-apiserver`, ...
        component: String,
        /// What happened.
        problem: String,
        /// The log file.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// A CRD file could not be read or installed.
    #[error("CRD {source_name}: {problem}")]
    Crd {
        /// The file (or `text #n` for CRDs given as text).
        source_name: String,
        /// What went wrong.
        problem: String,
    },
    /// A file of the environment could not be written or read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The client could not be built or a request failed.
    #[error("{context}: {source}")]
    Kube {
        /// What was being done.
        context: String,
        /// Why.
        source: kube::Error,
    },
}

/// A result of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How to start an [`Environment`]; from [`Environment::builder`].
#[derive(Debug, Clone)]
pub struct EnvironmentBuilder {
    assets: Option<PathBuf>,
    crd_paths: Vec<PathBuf>,
    crd_texts: Vec<String>,
    controller_manager: bool,
    apiserver_args: Vec<String>,
    timeout: Duration,
}

impl Default for EnvironmentBuilder {
    fn default() -> Self {
        EnvironmentBuilder {
            assets: None,
            crd_paths: Vec::new(),
            crd_texts: Vec::new(),
            controller_manager: true,
            apiserver_args: Vec::new(),
            timeout: Duration::from_secs(90),
        }
    }
}

impl EnvironmentBuilder {
    /// The directory of the binaries when neither variable is set.
    pub fn binary_assets(mut self, dir: impl Into<PathBuf>) -> Self {
        self.assets = Some(dir.into());
        self
    }

    /// CRD files, or directories whose `*.yaml`, `*.yml` and `*.json` files are CRDs
    /// (several documents per file allowed; other kinds are ignored, as envtest does).
    pub fn crd_paths<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.crd_paths.extend(paths.into_iter().map(Into::into));
        self
    }

    /// A CRD as YAML or JSON text, e.g. what `kubegen crd` wrote.
    pub fn crd_yaml(mut self, text: impl Into<String>) -> Self {
        self.crd_texts.push(text.into());
        self
    }

    /// Whether to run kube-controller-manager when its binary is there (default yes).
    pub fn controller_manager(mut self, on: bool) -> Self {
        self.controller_manager = on;
        self
    }

    /// One more kube-apiserver flag (`--feature-gates=...`); later flags win.
    pub fn apiserver_arg(mut self, arg: impl Into<String>) -> Self {
        self.apiserver_args.push(arg.into());
        self
    }

    /// How long a component or a CRD may take to be ready (default 90 s: a cold
    /// kube-apiserver on two busy cores takes 5-15 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Starts the control plane (or connects to `KUBEGEN_ENVTEST_KUBECONFIG`'s) and
    /// installs the CRDs.
    pub async fn start(self) -> Result<Environment> {
        let crds = self.read_crds()?;
        let mut env = match std::env::var_os(KUBECONFIG_VAR) {
            Some(path) if !path.is_empty() => Environment::existing(PathBuf::from(path)).await?,
            _ => {
                let assets = self.assets_dir()?;
                retry_port_conflicts(|| self.start_processes(assets.clone())).await?
            }
        };
        env.timeout = self.timeout;
        env.install_crds(crds).await?;
        Ok(env)
    }

    fn read_crds(&self) -> Result<Vec<(String, Value)>> {
        let mut out = Vec::new();
        for path in &self.crd_paths {
            let files = if path.is_dir() {
                let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                    .map_err(|source| Error::Io {
                        path: path.clone(),
                        source,
                    })?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        matches!(
                            p.extension().and_then(|e| e.to_str()),
                            Some("yaml" | "yml" | "json")
                        )
                    })
                    .collect();
                files.sort();
                files
            } else {
                vec![path.clone()]
            };
            for file in files {
                let text = std::fs::read_to_string(&file).map_err(|source| Error::Io {
                    path: file.clone(),
                    source,
                })?;
                out.extend(crd_documents(&file.display().to_string(), &text)?);
            }
        }
        for (i, text) in self.crd_texts.iter().enumerate() {
            out.extend(crd_documents(&format!("text #{i}"), text)?);
        }
        Ok(out)
    }

    fn assets_dir(&self) -> Result<PathBuf> {
        let mut searched = Vec::new();
        for var in [ASSETS_VAR, KUBEBUILDER_ASSETS_VAR] {
            match std::env::var_os(var) {
                Some(v) if !v.is_empty() => return Ok(PathBuf::from(v)),
                _ => searched.push(format!("{var} is not set")),
            }
        }
        match &self.assets {
            Some(dir) => Ok(dir.clone()),
            None => Err(Error::NoBinaries(searched.join(", "))),
        }
    }

    async fn start_processes(&self, assets: PathBuf) -> Result<Environment> {
        let binary = |name: &str| {
            let p = assets.join(name);
            if p.is_file() {
                Ok(p)
            } else {
                Err(Error::NoBinaries(format!(
                    "{} has no {name}",
                    assets.display()
                )))
            }
        };
        let etcd = binary("etcd")?;
        let apiserver = binary("kube-apiserver")?;
        let kcm = assets.join("kube-controller-manager");
        let with_kcm = self.controller_manager && kcm.is_file();

        let dir = Scratch::new()?;
        let certs = dir.path.join("certs");
        create_dir(&certs)?;
        let (key_pem, pub_pem) = service_account_keys()?;
        let sa_key = write_file(&certs.join("sa.key"), &key_pem)?;
        let sa_pub = write_file(&certs.join("sa.pub"), &pub_pem)?;
        let token = random_hex(32);
        let tokens = write_file(
            &certs.join("tokens.csv"),
            &format!("{token},admin,admin,system:masters\n"),
        )?;
        let [port, etcd_client, etcd_peer, kcm_port] = free_ports()?;

        let mut env = Environment {
            client: None,
            kubeconfig: dir.path.join("kubeconfig"),
            processes: Vec::new(),
            dir: Some(dir),
            timeout: self.timeout,
        };
        let root = env.dir.as_ref().map(|d| d.path.clone()).unwrap_or_default();
        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let mut etcd_cmd = Command::new(&etcd);
        etcd_cmd
            .arg("--data-dir")
            .arg(root.join("etcd"))
            .args(["--listen-client-urls", &etcd_url])
            .args(["--advertise-client-urls", &etcd_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("default={peer_url}")])
            // Test data: no fsync (envtest does the same), much faster on slow disks.
            .arg("--unsafe-no-fsync");
        env.spawn("etcd", etcd_cmd)?;

        let mut api = Command::new(&apiserver);
        api.args(["--etcd-servers", &etcd_url])
            .args([
                "--bind-address",
                "127.0.0.1",
                "--advertise-address",
                "127.0.0.1",
            ])
            .args(["--secure-port", &port.to_string()])
            .arg("--cert-dir")
            .arg(&certs)
            .arg("--service-account-key-file")
            .arg(&sa_pub)
            .arg("--service-account-signing-key-file")
            .arg(&sa_key)
            .args(["--service-account-issuer", "https://kubernetes.default.svc"])
            .arg("--token-auth-file")
            .arg(&tokens)
            .args(["--authorization-mode", "RBAC"])
            .args(["--service-cluster-ip-range", "10.96.0.0/24"])
            .arg("--allow-privileged=true");
        if !with_kcm {
            api.arg("--disable-admission-plugins=ServiceAccount");
        }
        api.args(&self.apiserver_args);
        env.spawn("kube-apiserver", api)?;

        let url = format!("https://127.0.0.1:{port}");
        let deadline = Instant::now() + self.timeout;
        // The serving certificate exists once the API server has made it.
        let crt = certs.join("apiserver.crt");
        let ca = loop {
            env.check_running("kube-apiserver", "exited before serving")?;
            match std::fs::read(&crt) {
                Ok(b) if !b.is_empty() => break b,
                _ => {}
            }
            if Instant::now() > deadline {
                return Err(env.not_ready("kube-apiserver", "wrote no serving certificate"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let kubeconfig = kubeconfig_yaml(&url, &ca, &token);
        write_file(&env.kubeconfig, &kubeconfig)?;
        let mut config = kube::Config::new(url.parse().map_err(|e| Error::Crd {
            source_name: url.clone(),
            problem: format!("not a URL: {e}"),
        })?);
        config.root_cert = Some(pem_blocks(&ca, "CERTIFICATE"));
        config.auth_info.token = Some(token.clone().into());
        config.default_namespace = "default".into();
        // As the in-memory server's TCP client: every error reaches the test as sent.
        config.default_retry = false;
        let client = kube::Client::try_from(config).map_err(|source| Error::Kube {
            context: "building the client".into(),
            source,
        })?;
        loop {
            env.check_running("kube-apiserver", "exited before it was ready")?;
            if get(&client, "/readyz").await.is_ok() {
                break;
            }
            if Instant::now() > deadline {
                return Err(env.not_ready("kube-apiserver", "did not answer /readyz"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        env.client = Some(client);

        if with_kcm {
            let mut c = Command::new(&kcm);
            for flag in [
                "--kubeconfig",
                "--authentication-kubeconfig",
                "--authorization-kubeconfig",
            ] {
                c.arg(flag).arg(&env.kubeconfig);
            }
            c.arg("--service-account-private-key-file")
                .arg(&sa_key)
                .arg("--root-ca-file")
                .arg(&crt)
                .args(["--leader-elect=false", "--bind-address", "127.0.0.1"])
                .args(["--secure-port", &kcm_port.to_string()])
                .args([
                    "--controllers",
                    "serviceaccount-controller,serviceaccount-token-controller,\
                     namespace-controller,garbage-collector-controller",
                ]);
            env.spawn("kube-controller-manager", c)?;
            loop {
                env.check_running("kube-controller-manager", "exited")?;
                let sa = "/api/v1/namespaces/default/serviceaccounts/default";
                if get(env.client_ref(), sa).await.is_ok() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(
                        env.not_ready("kube-controller-manager", "made no default ServiceAccount")
                    );
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok(env)
    }
}

/// A running control plane (or an existing cluster); see the module docs.
pub struct Environment {
    client: Option<kube::Client>,
    kubeconfig: PathBuf,
    processes: Vec<Process>,
    dir: Option<Scratch>,
    timeout: Duration,
}

#[derive(Debug)]
struct Process {
    name: String,
    child: Child,
    log: PathBuf,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("kubeconfig", &self.kubeconfig)
            .field("processes", &self.processes)
            .finish_non_exhaustive()
    }
}

impl Environment {
    /// A builder: CRDs, binaries, flags.
    pub fn builder() -> EnvironmentBuilder {
        EnvironmentBuilder::default()
    }

    /// Starts a control plane with no CRDs: `Environment::builder().start()`.
    pub async fn start() -> Result<Environment> {
        Self::builder().start().await
    }

    async fn existing(kubeconfig: PathBuf) -> Result<Environment> {
        let kc =
            kube::config::Kubeconfig::read_from(&kubeconfig).map_err(|source| Error::Kube {
                context: format!("reading {KUBECONFIG_VAR}={}", kubeconfig.display()),
                source: kube::Error::InferKubeconfig(source),
            })?;
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|source| Error::Kube {
                    context: format!("loading {}", kubeconfig.display()),
                    source: kube::Error::InferKubeconfig(source),
                })?;
        let client = kube::Client::try_from(config).map_err(|source| Error::Kube {
            context: "building the client".into(),
            source,
        })?;
        Ok(Environment {
            client: Some(client),
            kubeconfig,
            processes: Vec::new(),
            dir: None,
            timeout: Duration::from_secs(90),
        })
    }

    /// A client for the admin user (`system:masters`), default namespace `default`.
    pub fn client(&self) -> kube::Client {
        self.client_ref().clone()
    }

    fn client_ref(&self) -> &kube::Client {
        // Set before an Environment is handed out; only start_processes sees it unset.
        self.client
            .as_ref()
            .expect("the environment's client is set once kube-apiserver is ready")
    }

    /// A kubeconfig file for this control plane (for kubectl or another process).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Whether this environment started its own processes (false for
    /// `KUBEGEN_ENVTEST_KUBECONFIG`).
    pub fn owns_control_plane(&self) -> bool {
        !self.processes.is_empty()
    }

    /// Installs CRDs (YAML or JSON text, several documents allowed) and waits until each
    /// is `Established` and served in discovery.
    pub async fn install_crd_yaml(&self, text: &str) -> Result<()> {
        self.install_crds(crd_documents("text", text)?).await
    }

    async fn install_crds(&self, crds: Vec<(String, Value)>) -> Result<()> {
        const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        let client = self.client_ref();
        for (source_name, crd) in &crds {
            let body = serde_json::to_vec(crd).map_err(|e| Error::Crd {
                source_name: source_name.clone(),
                problem: e.to_string(),
            })?;
            let req = http::Request::post(CRDS)
                .header("content-type", "application/json")
                .body(body)
                .map_err(|e| Error::Crd {
                    source_name: source_name.clone(),
                    problem: e.to_string(),
                })?;
            match client.request_text(req).await {
                Ok(_) => {}
                // An existing cluster may hold it from an earlier run: keep it.
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => {
                    return Err(Error::Crd {
                        source_name: source_name.clone(),
                        problem: format!("refused by kube-apiserver: {e}"),
                    });
                }
            }
        }
        let deadline = Instant::now() + self.timeout;
        for (source_name, crd) in &crds {
            let name = crd
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            loop {
                let got: Value = serde_json::from_str(
                    &get(client, &format!("{CRDS}/{name}"))
                        .await
                        .unwrap_or_default(),
                )
                .unwrap_or(Value::Null);
                if established(&got) && served(client, &got).await {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(Error::Crd {
                        source_name: source_name.clone(),
                        problem: format!(
                            "{name} not Established and served within {:?}: {}",
                            self.timeout,
                            got.pointer("/status/conditions").unwrap_or(&Value::Null)
                        ),
                    });
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    /// Stops the processes (SIGKILL: the data is thrown away) and removes the
    /// directory, waiting for both.
    pub async fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // Reverse order: the controller manager, then the API server, then etcd.
        while let Some(mut p) = self.processes.pop() {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
        if let Some(dir) = self.dir.take() {
            drop(dir);
        }
    }

    fn spawn(&mut self, name: &str, mut cmd: Command) -> Result<()> {
        let root = self
            .dir
            .as_ref()
            .map(|d| d.path.clone())
            .unwrap_or_default();
        let log = root.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).map_err(|source| Error::Io {
            path: log.clone(),
            source,
        })?;
        let err = file.try_clone().map_err(|source| Error::Io {
            path: log.clone(),
            source,
        })?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|source| Error::Spawn {
                binary: PathBuf::from(cmd.get_program()),
                source,
            })?;
        self.processes.push(Process {
            name: name.to_owned(),
            child,
            log,
        });
        Ok(())
    }

    fn check_running(&mut self, name: &str, problem: &str) -> Result<()> {
        let mut exited = None;
        for p in &mut self.processes {
            if let Ok(Some(status)) = p.child.try_wait() {
                exited = Some((p.name.clone(), status));
                break;
            }
        }
        match exited {
            Some((which, status)) => {
                let problem = if which == name {
                    format!("{problem} ({status})")
                } else {
                    format!("could not start: {which} exited ({status})")
                };
                Err(self.not_ready(&which, &problem))
            }
            None => Ok(()),
        }
    }

    fn not_ready(&self, name: &str, problem: &str) -> Error {
        let log = self
            .processes
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.log.clone())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n");
        Error::NotReady {
            component: name.to_owned(),
            problem: problem.to_owned(),
            log,
            tail,
        }
    }
}

impl Drop for Environment {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A directory removed on drop.
#[derive(Debug)]
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new() -> Result<Scratch> {
        let path = std::env::temp_dir().join(format!(
            "kubegen-envtest-{}-{}",
            std::process::id(),
            random_hex(6)
        ));
        create_dir(&path)?;
        Ok(Scratch { path })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

fn write_file(path: &Path, text: &str) -> Result<PathBuf> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(path.to_owned())
}

fn random_hex(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes * 2);
    for _ in 0..bytes {
        let _ = write!(s, "{:02x}", rand::random::<u8>());
    }
    s
}

/// How many times `start` starts the processes when a component could not bind its port.
const START_ATTEMPTS: u32 = 3;

/// Runs `start` until it succeeds, fails otherwise than on a port conflict, or has run
/// [`START_ATTEMPTS`] times. A port chosen free can be taken before the component binds it
/// (another control plane starting beside this one); the failed attempt's processes and
/// directory are gone once its error is returned, and the next one chooses other ports.
async fn retry_port_conflicts<T, F, Fut>(mut start: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut attempt = 1;
    loop {
        match start().await {
            Err(e) if attempt < START_ATTEMPTS && is_port_conflict(&e) => attempt += 1,
            done => return done,
        }
    }
}

/// Whether starting failed because a component's port was taken between its choice and
/// its bind (etcd, kube-apiserver and kube-controller-manager all log Go's
/// `bind: address already in use`).
fn is_port_conflict(e: &Error) -> bool {
    matches!(e, Error::NotReady { tail, .. } if tail.contains("address already in use"))
}

/// Four loopback ports free now, chosen below the kernel's ephemeral range when it leaves
/// room: a port from that range (what binding port 0 returns) can be taken by any outgoing
/// connection on the machine (the API server's own to etcd among them) in the seconds
/// before the component binds it. Another process may still take one; the component then
/// fails to bind and `start` starts again on other ports.
fn free_ports() -> Result<[u16; 4]> {
    let (low, _) = ephemeral_range().unwrap_or((32768, 60999));
    let mut listeners: Vec<TcpListener> = Vec::new();
    if low > 2048 {
        // Random ports in [1024, low): try a bounded number of them.
        for _ in 0..200 {
            if listeners.len() == 4 {
                break;
            }
            let port = 1024 + rand::random::<u16>() % (low - 1024);
            if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
                listeners.push(l);
            }
        }
    }
    while listeners.len() < 4 {
        let l = TcpListener::bind(("127.0.0.1", 0)).map_err(|source| Error::Io {
            path: PathBuf::from("127.0.0.1:0"),
            source,
        })?;
        listeners.push(l);
    }
    let mut ports = [0u16; 4];
    for (p, l) in ports.iter_mut().zip(&listeners) {
        *p = l.local_addr().map(|a| a.port()).unwrap_or(0);
    }
    Ok(ports)
}

/// Linux's `net.ipv4.ip_local_port_range` (the ports outgoing connections take), when the
/// file is there.
fn ephemeral_range() -> Option<(u16, u16)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|n| n.parse::<u16>().ok());
    Some((it.next()??, it.next()??))
}

/// A P-256 key pair for service-account tokens: PKCS#8 private key and SPKI public key,
/// both PEM (kube-apiserver and the controller manager accept ECDSA keys).
fn service_account_keys() -> Result<(String, String)> {
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};
    let rng = ring::rand::SystemRandom::new();
    let key_error = |what: &str| Error::Io {
        path: PathBuf::from("service-account key"),
        source: std::io::Error::other(what.to_owned()),
    };
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
        .map_err(|_| key_error("cannot generate a P-256 key"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|_| key_error("cannot read the generated key"))?;
    // SubjectPublicKeyInfo for id-ecPublicKey on prime256v1, then the 65-byte point.
    const SPKI_P256: [u8; 26] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ];
    let mut spki = SPKI_P256.to_vec();
    spki.extend_from_slice(pair.public_key().as_ref());
    Ok((pem("PRIVATE KEY", pkcs8.as_ref()), pem("PUBLIC KEY", &spki)))
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    let _ = writeln!(out, "-----END {label}-----");
    out
}

/// The DER of every `label` block of a PEM file.
fn pem_blocks(pem: &[u8], label: &str) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(pem);
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let mut out = Vec::new();
    let mut rest = text.as_ref();
    while let Some(start) = rest.find(&begin) {
        let body = &rest[start + begin.len()..];
        let Some(stop) = body.find(&end) else { break };
        let b64: String = body[..stop].split_whitespace().collect();
        if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b64) {
            out.push(der);
        }
        rest = &body[stop + end.len()..];
    }
    out
}

fn kubeconfig_yaml(url: &str, ca: &[u8], token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {url}\n    \
         certificate-authority-data: {ca}\nusers:\n- name: admin\n  user:\n    token: {token}\n\
         contexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: admin\n    \
         namespace: default\ncurrent-context: envtest\n"
    )
}

/// The CRDs of one file or text (other kinds and empty documents are skipped).
fn crd_documents(source_name: &str, text: &str) -> Result<Vec<(String, Value)>> {
    use serde::Deserialize as _;
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let v = Value::deserialize(doc).map_err(|e| Error::Crd {
            source_name: source_name.to_owned(),
            problem: format!("document {i} is not valid YAML: {e}"),
        })?;
        if v.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
            out.push((source_name.to_owned(), v));
        }
    }
    Ok(out)
}

async fn get(client: &kube::Client, path: &str) -> Result<String, kube::Error> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    client.request_text(req).await
}

fn established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Established")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Whether discovery lists the CRD's plural at every served version.
async fn served(client: &kube::Client, crd: &Value) -> bool {
    let group = crd.pointer("/spec/group").and_then(Value::as_str);
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str);
    let (Some(group), Some(plural)) = (group, plural) else {
        return false;
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for v in versions {
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
        let Ok(text) = get(client, &format!("/apis/{group}/{name}")).await else {
            return false;
        };
        let listed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let has = listed
            .get("resources")
            .and_then(Value::as_array)
            .is_some_and(|rs| {
                rs.iter()
                    .any(|r| r.get("name").and_then(Value::as_str) == Some(plural))
            });
        if !has {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(component: &str, tail: &str) -> Error {
        Error::NotReady {
            component: component.into(),
            problem: "exited (exit status: 1)".into(),
            log: PathBuf::from("/tmp/x.log"),
            tail: tail.into(),
        }
    }

    const KCM_BIND: &str = "E1127 run.go:72] \"command failed\" err=\"failed to create listener: \
        failed to listen on 127.0.0.1:34795: listen tcp 127.0.0.1:34795: bind: address already in use\"";

    #[tokio::test]
    async fn a_port_taken_before_its_component_binds_it_starts_again() {
        // The failure CI met: kube-controller-manager's port taken in the seconds between
        // its choice and its start.
        let mut calls = 0;
        let out = retry_port_conflicts(|| {
            calls += 1;
            let n = calls;
            async move {
                if n == 1 {
                    Err(exited("kube-controller-manager", KCM_BIND))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(out.unwrap(), 2);
        assert_eq!(calls, 2);

        // Every attempt conflicting: the last error is returned, after START_ATTEMPTS.
        let mut calls = 0;
        let out: Result<()> = retry_port_conflicts(|| {
            calls += 1;
            async {
                Err(exited(
                    "etcd",
                    "listen tcp 127.0.0.1:2379: bind: address already in use",
                ))
            }
        })
        .await;
        assert!(out
            .unwrap_err()
            .to_string()
            .contains("address already in use"));
        assert_eq!(calls, START_ATTEMPTS);

        // Any other failure is not retried.
        let mut calls = 0;
        let out: Result<()> = retry_port_conflicts(|| {
            calls += 1;
            async { Err(exited("kube-apiserver", "error: unknown flag: --nope")) }
        })
        .await;
        assert!(out.unwrap_err().to_string().contains("unknown flag"));
        assert_eq!(calls, 1);
    }

    #[test]
    fn ports_are_distinct_and_below_the_ephemeral_range() {
        let ports = free_ports().unwrap();
        let mut sorted = ports.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 4, "{ports:?}");
        if let Some((low, _)) = ephemeral_range().filter(|(low, _)| *low > 2048) {
            assert!(
                ports.iter().all(|p| (1024..low).contains(p)),
                "{ports:?} vs {low}"
            );
        }
        for p in ports {
            // Each is free (nothing holds it once chosen).
            TcpListener::bind(("127.0.0.1", p)).unwrap();
        }
    }

    #[test]
    fn pem_round_trips_through_the_block_reader() {
        let der: Vec<u8> = (0..200u8).collect();
        let text = pem("CERTIFICATE", &der);
        assert!(text.lines().all(|l| l.len() <= 64), "{text}");
        let two = format!("{text}{}", pem("CERTIFICATE", &[1, 2, 3]));
        assert_eq!(
            pem_blocks(two.as_bytes(), "CERTIFICATE"),
            vec![der, vec![1, 2, 3]]
        );
        assert!(pem_blocks(two.as_bytes(), "PRIVATE KEY").is_empty());
    }

    #[test]
    fn service_account_keys_are_p256_pem() {
        let (key, public) = service_account_keys().unwrap();
        let key_der = pem_blocks(key.as_bytes(), "PRIVATE KEY");
        let pub_der = pem_blocks(public.as_bytes(), "PUBLIC KEY");
        assert_eq!(key_der.len(), 1);
        assert_eq!(pub_der.len(), 1);
        // The SPKI prefix and an uncompressed point.
        assert_eq!(pub_der[0].len(), 26 + 65);
        assert_eq!(pub_der[0][26], 0x04);
        // ring reads the private key back.
        let rng = ring::rand::SystemRandom::new();
        ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &key_der[0],
            &rng,
        )
        .unwrap();
    }

    #[test]
    fn crd_documents_keeps_only_crds_and_names_bad_yaml() {
        let text =
            "kind: CustomResourceDefinition\nmetadata: {name: a.x.io}\n---\nkind: ConfigMap\n---\n";
        let docs = crd_documents("f.yaml", text).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].1["metadata"]["name"], "a.x.io");
        let err = crd_documents("bad.yaml", "kind: [").unwrap_err();
        assert!(
            err.to_string().starts_with("CRD bad.yaml: document 0"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn no_binaries_is_an_error_naming_the_variables_and_the_script() {
        if std::env::var_os(ASSETS_VAR).is_some()
            || std::env::var_os(KUBEBUILDER_ASSETS_VAR).is_some()
            || std::env::var_os(KUBECONFIG_VAR).is_some()
        {
            // The variables are process-wide: with them set, the case is the
            // directory without binaries.
            let err = Environment::builder()
                .start_processes(PathBuf::from("/nonexistent"))
                .await
                .unwrap_err();
            assert!(err.to_string().contains("has no etcd"), "{err}");
            return;
        }
        let err = Environment::start().await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains(ASSETS_VAR), "{text}");
        assert!(text.contains(KUBEBUILDER_ASSETS_VAR), "{text}");
        assert!(text.contains("hack/real-apiserver.sh build"), "{text}");
        let err = Environment::builder()
            .binary_assets("/nonexistent")
            .start()
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent has no etcd"),
            "{err}"
        );
    }
}
