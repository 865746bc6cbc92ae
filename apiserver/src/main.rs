//! `kubegen-apiserver`: kubegen's in-memory Kubernetes API server as a program.
//!
//! It serves the built-in resources kubegen's test server knows, plus the custom
//! resources of the CRDs given with `-f` (files or directories of YAML/JSON manifests;
//! other objects in them are created after the CRDs), on plain HTTP at
//! `--bind`:`--port`, and writes a kubeconfig for it. Like a cluster, it starts with the
//! namespaces `default`, `kube-system`, `kube-public` and `kube-node-lease`, and rejects
//! writes into a missing namespace (`--lenient-namespaces`: no namespaces, any accepted);
//! other objects come only from `-f`. As kube-controller-manager's garbage collector,
//! it deletes objects whose owners do not exist. State lives in memory and is lost on exit. There is no authentication: bind to
//! 127.0.0.1 (the default) unless you know what you are doing.
//!
//! ```text
//! kubegen-apiserver --port 6443 -f crds/ --kubeconfig /tmp/kubegen.kubeconfig
//! KUBECONFIG=/tmp/kubegen.kubeconfig cargo run --bin my-controller
//! ```

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use clap::Parser;
use kubegen_apiserver::ApiServer;
use serde::Deserialize;
use serde_json::{json, Value};

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    name = "kubegen-apiserver",
    version,
    about = "An in-memory Kubernetes API server for developing and testing controllers"
)]
struct Args {
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Manifests to load (CRDs first, then other objects): files or directories
    /// (`.yaml`, `.yml`, `.json`, searched recursively). May be repeated.
    #[arg(short = 'f', long = "filename")]
    files: Vec<PathBuf>,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "kubegen-apiserver.kubeconfig")]
    kubeconfig: PathBuf,
    /// Accept writes into namespaces that do not exist, and start with no namespaces.
    /// By default the server behaves as a cluster: it starts with `default`,
    /// `kube-system`, `kube-public` and `kube-node-lease`, and a write into a missing
    /// namespace gets 404.
    #[arg(long)]
    lenient_namespaces: bool,
    /// The default; kept so that older command lines still work.
    #[arg(long, hide = true, conflicts_with = "lenient_namespaces")]
    strict_namespaces: bool,
}

/// Every manifest document in the given files and directories, in path order.
fn read_manifests(paths: &[PathBuf]) -> Result<Vec<Value>, String> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            for e in walkdir::WalkDir::new(p).sort_by_file_name() {
                let e = e.map_err(|e| format!("{}: {e}", p.display()))?;
                let ext = e.path().extension().and_then(|x| x.to_str()).unwrap_or("");
                if e.file_type().is_file() && matches!(ext, "yaml" | "yml" | "json") {
                    files.push(e.into_path());
                }
            }
        } else {
            files.push(p.clone());
        }
    }
    let mut docs = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        for d in serde_yaml::Deserializer::from_str(&text) {
            let v = Value::deserialize(d).map_err(|e| format!("{}: {e}", f.display()))?;
            if v.is_object() {
                docs.push(v);
            }
        }
    }
    Ok(docs)
}

/// Creates the CRDs, then the other objects; returns how many of each.
fn load(server: &ApiServer, docs: Vec<Value>) -> Result<(usize, usize), String> {
    let is_crd =
        |v: &Value| v.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition");
    let (crds, others): (Vec<Value>, Vec<Value>) = docs.into_iter().partition(is_crd);
    let (n_crds, n_others) = (crds.len(), others.len());
    for v in crds.into_iter().chain(others) {
        let what = format!(
            "{} {}",
            v.get("kind").and_then(Value::as_str).unwrap_or("?"),
            v.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("?")
        );
        server
            .create_object(v)
            .map_err(|e| format!("creating {what}: {e}"))?;
    }
    Ok((n_crds, n_others))
}

fn kubeconfig(url: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubegen", "cluster": {"server": url}}],
        "users": [{"name": "kubegen", "user": {}}],
        "contexts": [{"name": "kubegen", "context": {"cluster": "kubegen", "user": "kubegen", "namespace": "default"}}],
        "current-context": "kubegen",
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|d| d.join(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Err(e) = run(args).await {
        eprintln!("kubegen-apiserver: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), String> {
    let server = ApiServer::builder()
        .strict_namespaces(!args.lenient_namespaces)
        .collect_dangling_owners(true)
        .build();
    let docs = read_manifests(&args.files)?;
    let (crds, objects) = load(&server, docs)?;
    let tcp = server
        .serve_tcp_on(SocketAddr::new(args.bind, args.port))
        .await
        .map_err(|e| format!("listening on {}:{}: {e}", args.bind, args.port))?;
    let url = tcp.url();
    let text = serde_json::to_string_pretty(&kubeconfig(&url)).map_err(|e| e.to_string())?;
    std::fs::write(&args.kubeconfig, text)
        .map_err(|e| format!("writing {}: {e}", args.kubeconfig.display()))?;
    let kc = absolute(&args.kubeconfig);
    println!("kubegen-apiserver listening on {url} ({crds} CRDs, {objects} other objects loaded)");
    println!("kubeconfig written to {}", kc.display());
    println!();
    println!("Point a controller or kubectl at it:");
    println!("  export KUBECONFIG={}", kc.display());
    println!("  kubectl get crds");
    println!("  cargo run --bin <your-controller>");
    println!();
    println!("Ctrl-C stops the server (state is kept in memory only).");
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| format!("waiting for Ctrl-C: {e}"))?;
    tcp.shutdown().await;
    server.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loads_crds_then_objects_and_serves_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a-objects.yaml"),
            "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g1, namespace: default}\nspec: {x: 1}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b-crd.yaml"),
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#,
        )
        .unwrap();
        let server = ApiServer::new();
        let docs = read_manifests(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(load(&server, docs).unwrap(), (1, 2));
        let g = server
            .get("gizmos.example.com", "default", "g1")
            .unwrap()
            .unwrap();
        assert_eq!(g["spec"]["x"], 1);
        assert!(server.get("configmaps", "default", "c").unwrap().is_some());

        // A kube client built from the written kubeconfig sees the custom resource.
        let tcp = server.serve_tcp().await.unwrap();
        let path = dir.path().join("kc");
        std::fs::write(&path, kubeconfig(&tcp.url()).to_string()).unwrap();
        let kc = kube::config::Kubeconfig::read_from(&path).unwrap();
        let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(cfg).unwrap();
        let ar = kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("example.com", "v1", "Gizmo"),
            "gizmos",
        );
        let api: kube::Api<kube::core::DynamicObject> =
            kube::Api::namespaced_with(client, "default", &ar);
        assert_eq!(api.get("g1").await.unwrap().data["spec"]["x"], 1);
        tcp.shutdown().await;
    }
}
