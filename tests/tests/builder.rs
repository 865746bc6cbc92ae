//! `kubegen::Builder` from a build script (tests/build.rs): the single-file tree it
//! writes into OUT_DIR mounts with `include!` and works like the checked-in tree: types,
//! clientset, informer factory, listers and the fake clientset.

// A test binary uses only part of the generated API; a user's library exports it all.
#[allow(dead_code)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/samplecontroller.rs"));
}

use generated::apis::samplecontroller::v1alpha1::{Foo, FooList};
use k8s_openapi::{ListableResource, Resource};

#[test]
fn build_script_output_is_the_same_api() {
    assert_eq!(Foo::API_VERSION, "samplecontroller.k8s.io/v1alpha1");
    assert_eq!(Foo::LIST_KIND, "FooList");
    let json = serde_json::json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "FooList", "metadata": {},
        "items": [{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": {"name": "a"}, "spec": {"replicas": 2}}],
    });
    let list: FooList = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&list).unwrap(), json);
    let copy = list.items[0].clone();
    assert_eq!(copy, list.items[0]);
}

#[test]
fn single_file_nests_every_module() {
    let mut config = kubegen::Config::new(vec![concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/crds/samplecontroller.yaml"
    )
    .into()]);
    config.layout = kubegen::Layout::SingleFile;
    let files = kubegen::generate(&config).unwrap().files;
    assert_eq!(files.len(), 1);
    let text = &files[0].contents;
    assert!(text.contains("pub mod apis {"));
    assert!(text.contains("pub mod v1alpha1 {"));
    assert!(text.contains("mod zz_generated_deepcopy {"));
    assert!(
        !text.lines().any(|l| l.trim_end().ends_with("mod types;")),
        "every declaration expanded"
    );
}

#[tokio::test]
async fn single_file_clientset_factory_and_fake_behave_like_the_tree() {
    use generated::apis::samplecontroller::v1alpha1::FooSpec;
    use generated::informers::SharedInformerFactory;
    use kubegen_runtime::client::WriteOptions;
    use kubegen_runtime::labels::Selector;

    let cs = generated::fake::new_simple_clientset(Vec::new())
        .await
        .unwrap();
    let mut obj = Foo::new("web", FooSpec::default());
    obj.metadata.namespace = Some("ns".into());
    let created = cs
        .samplecontroller_v1alpha1()
        .foos("ns")
        .create(&obj, &WriteOptions::default())
        .await
        .unwrap();
    let factory = SharedInformerFactory::new(cs.clientset().clone(), Default::default());
    let foos = factory.samplecontroller().v1alpha1().foos();
    let _ = foos.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));
    assert_eq!(*foos.lister().foos("ns").get("web").unwrap(), created);
    assert_eq!(foos.lister().list(&Selector::everything()).len(), 1);
    assert_eq!(cs.actions()[0].verb, "create");
    factory.shutdown().await;
}
