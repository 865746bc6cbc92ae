//! `kubegen::Builder::rust` from a build script (tests/build.rs): the tree generated from
//! the hand-written types of fixtures/rust, included from OUT_DIR next to those types
//! (mounted at `crate::apis`, as `Builder::types_path("crate::apis")` names them),
//! compiles and serves them.

// The test uses part of the API; a user's library exports all of it.
#[allow(dead_code, unused_imports)]
#[path = "../../fixtures/rust/mod.rs"]
mod apis;

#[allow(dead_code)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/rust_apis.rs"));
}

use apis::documents::v1::{Document, DocumentSpec};
use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use k8s_openapi::Resource;
use kubegen_runtime::client::WriteOptions;

#[tokio::test]
async fn build_script_tree_serves_the_user_types() {
    assert_eq!(Foo::API_VERSION, "samplecontroller.k8s.io/v1alpha1");
    assert_eq!(Foo::RESOURCE_INFO.plural, "foos");
    let cs = generated::fake::new_simple_clientset(Vec::new())
        .await
        .unwrap();
    let mut obj = Foo {
        spec: FooSpec {
            deployment_name: "d".to_owned(),
            replicas: None,
        },
        ..Foo::default()
    };
    obj.metadata.name = Some("f".to_owned());
    let created = cs
        .samplecontroller_v1alpha1()
        .foos("default")
        .create(&obj, &WriteOptions::default())
        .await
        .unwrap();
    // The fake registers the schema derived from the types, so the server applies the
    // marker default (`+kubebuilder:default=1` on replicas), as a cluster would.
    assert_eq!(
        created.spec,
        FooSpec {
            replicas: Some(1),
            ..obj.spec.clone()
        }
    );
    let doc = Document::new(
        "d",
        DocumentSpec {
            title: "t".to_owned(),
            pages: 1,
        },
    );
    let created = cs
        .documents_v1()
        .documents("default")
        .create(&doc, &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(created.spec, doc.spec);
}

#[test]
fn every_rust_file_is_an_input_for_rerun_if_changed() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/rust");
    let files = kubegen::input_files(&[dir.into()]).unwrap();
    assert!(files.iter().any(|f| f.ends_with("widgets/v1beta1/doc.rs")));
    assert_eq!(
        files.len(),
        12,
        "every .rs file of fixtures/rust: {files:?}"
    );
}
