//! The CRDs `kubegen crd` writes from the Rust fixtures (fixtures/golden-crd) against the
//! in-memory API server, over its tower Service and over TCP, and on a real kube-apiserver
//! (`hack/test.sh real`): every CRD is accepted,
//! objects the generated types serialize are stored, and the markers' validation is
//! enforced (a violating object gets 422 naming the field), as is the marker default.

use kubegen_runtime::client::WriteOptions;
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use kubegen_tests::apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use kubegen_tests::golden_rust::clientset::Clientset;

const GOLDEN_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/golden-crd");

/// A server with every golden CRD registered (each must be accepted).
fn server_with_crds() -> ApiServer {
    let server = ApiServer::new();
    let mut files: Vec<_> = std::fs::read_dir(GOLDEN_CRD)
        .expect("fixtures/golden-crd exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let regs = server
            .register_crd(&text)
            .unwrap_or_else(|e| panic!("{} was refused: {e:?}", file.display()));
        assert!(!regs.is_empty(), "{}", file.display());
    }
    server
}

fn foo(name: &str, deployment: &str, replicas: Option<i32>) -> Foo {
    let mut obj = Foo {
        spec: FooSpec {
            deployment_name: deployment.to_owned(),
            replicas,
        },
        ..Foo::default()
    };
    obj.metadata.name = Some(name.to_owned());
    obj.metadata.namespace = Some("default".to_owned());
    obj
}

async fn enforce(transport: Transport) {
    let server = server_with_crds();
    let conn = transport
        .connect(&server, [GOLDEN_CRD])
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    let foos = Clientset::new(conn.client())
        .samplecontroller_v1alpha1()
        .foos("default");
    let params = WriteOptions::default();

    // Valid, and defaulted by the marker default (`+kubebuilder:default=1`).
    let created = foos
        .create(&foo("ok", "web", None), &params)
        .await
        .unwrap_or_else(|e| panic!("{transport:?}: {e}"));
    assert_eq!(created.spec.replicas, Some(1), "{transport:?}");

    // `Maximum=10` on replicas.
    let err = foos
        .create(&foo("too-many", "web", Some(11)), &params)
        .await
        .expect_err("replicas 11 violates Maximum=10");
    let status = err.status().expect("an API status");
    assert!(status.is_invalid(), "{transport:?}: {status:?}");
    assert!(
        format!("{status:?}").contains("spec.replicas"),
        "{transport:?}: the 422 names the field: {status:?}"
    );

    // `Pattern` on deploymentName.
    let err = foos
        .create(&foo("bad-name", "Not_A_Name", Some(1)), &params)
        .await
        .expect_err("the pattern refuses upper case and underscores");
    let status = err.status().expect("an API status");
    assert!(status.is_invalid(), "{transport:?}: {status:?}");
    assert!(
        format!("{status:?}").contains("spec.deploymentName"),
        "{transport:?}: {status:?}"
    );
    conn.close().await;
}

#[tokio::test]
async fn golden_crds_are_accepted_and_enforced_over_tower() {
    enforce(Transport::Tower).await;
}

#[tokio::test]
async fn golden_crds_are_accepted_and_enforced_over_tcp() {
    enforce(Transport::Tcp).await;
}

/// The same CRDs on a real kube-apiserver: it accepts every one (or `connect` fails
/// naming the file) and enforces the markers' validation and default as ours does.
#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn golden_crds_are_accepted_and_enforced_on_a_real_apiserver() {
    enforce(Transport::Real).await;
}

/// The checked-in CRDs are what `kubegen crd` writes today (also checked by
/// hack/verify-codegen.sh; this keeps `cargo test` alone honest).
#[test]
fn golden_crds_are_current() {
    let written = kubegen::crds(&[concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/rust").into()])
        .unwrap_or_else(|e| panic!("{e:?}"));
    let diff = kubegen::verify_crds(GOLDEN_CRD.as_ref(), &written);
    assert!(diff.is_none(), "{diff:?}");
}
