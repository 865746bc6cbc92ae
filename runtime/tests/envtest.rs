//! `testing::envtest` against the real binaries (`hack/real-apiserver.sh build`): a
//! control plane starts, installs CRDs, serves a client and kubectl, runs the controller
//! manager's garbage collector, and is gone after `stop`.
//!
//! These tests need the binaries, so they are `#[ignore]`d in a plain `cargo test` (the
//! summary counts them) and run by `hack/test.sh real` with `--ignored`.

use std::time::{Duration, Instant};

use kubegen_runtime::testing::envtest::{Environment, Error};
use serde_json::{json, Value};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.envtest.example.com}
spec:
  group: envtest.example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
"#;

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Value, kube::Error> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .unwrap();
    let text = client.request_text(req).await?;
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real (KUBEGEN_ENVTEST_ASSETS)"]
async fn a_control_plane_installs_crds_serves_clients_and_collects_garbage() {
    let env = Environment::builder().crd_yaml(CRD).start().await.unwrap();
    assert!(env.owns_control_plane());
    let client = env.client();

    // The CRD is served at once (start waited for Established and discovery).
    let path = "/apis/envtest.example.com/v1/namespaces/default/widgets";
    let created = send(
        &client,
        "POST",
        path,
        Some(
            json!({"apiVersion": "envtest.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 2}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(created["spec"]["size"], 2);
    // The real server's validation: minimum.
    let err = send(
        &client,
        "POST",
        path,
        Some(
            json!({"apiVersion": "envtest.example.com/v1", "kind": "Widget",
            "metadata": {"name": "bad"}, "spec": {"size": 0}}),
        ),
    )
    .await
    .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 422, "{s:?}");
            assert!(s.message.contains("spec.size"), "{}", s.message);
        }
        other => panic!("expected 422, got {other}"),
    }

    // kubectl works with the written kubeconfig (the serving certificate is trusted).
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(env.kubeconfig())
        .args(["get", "widgets", "-o", "name"])
        .output()
        .expect("kubectl is installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "widget.envtest.example.com/w"
    );

    // The controller manager runs: a Pod can be created (default ServiceAccount) and a
    // ConfigMap owned by a deleted one is garbage-collected.
    let pod = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/pods",
        Some(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
    let owner = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})),
    )
    .await
    .unwrap();
    send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dependent",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner["metadata"]["uid"]}]}}),
        ),
    )
    .await
    .unwrap();
    send(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/owner",
        None,
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match send(
            &client,
            "GET",
            "/api/v1/namespaces/default/configmaps/dependent",
            None,
        )
        .await
        {
            Err(kube::Error::Api(s)) if s.code == 404 => break,
            _ if Instant::now() > deadline => panic!("the dependent was not garbage-collected"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }

    let kubeconfig = env.kubeconfig().to_owned();
    env.stop().await;
    assert!(
        !kubeconfig.exists(),
        "the environment's directory is removed"
    );
    let err = send(&client, "GET", "/version", None).await.unwrap_err();
    assert!(!matches!(err, kube::Error::Api(_)), "{err}");
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real (KUBEGEN_ENVTEST_ASSETS)"]
async fn a_crd_the_server_refuses_is_an_error_naming_its_file() {
    let dir = std::env::temp_dir().join(format!("envtest-bad-crd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    // A protected group without the approval annotation.
    std::fs::write(&file, CRD.replace("envtest.example.com", "envtest.k8s.io")).unwrap();
    let err = Environment::builder()
        .controller_manager(false)
        .crd_paths([&dir])
        .start()
        .await
        .unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    match &err {
        Error::Crd {
            source_name,
            problem,
        } => {
            assert!(source_name.ends_with("bad.yaml"), "{err}");
            assert!(problem.contains("api-approved.kubernetes.io"), "{problem}");
        }
        other => panic!("expected a CRD error, got {other}"),
    }
}
