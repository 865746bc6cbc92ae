//! register.rs of the golden tree: resource traits, list kinds, scopes, names,
//! subresources and printer columns, as the fixture CRDs declare them.

use k8s_openapi::{ClusterResourceScope, ListableResource, NamespaceResourceScope, Resource};
use kubegen_runtime::types::{PrinterColumn, ScaleSubresource};
use kubegen_tests::golden::apis;

fn scope_is<K: Resource<Scope = S>, S>() {}

#[test]
fn sample_controller_foo_is_a_namespaced_resource() {
    use apis::samplecontroller::v1alpha1::{Foo, GROUP, VERSION};
    assert_eq!(Foo::API_VERSION, "samplecontroller.k8s.io/v1alpha1");
    assert_eq!(
        (Foo::GROUP, Foo::VERSION, Foo::KIND),
        ("samplecontroller.k8s.io", "v1alpha1", "Foo")
    );
    assert_eq!((GROUP, VERSION), ("samplecontroller.k8s.io", "v1alpha1"));
    assert_eq!(Foo::URL_PATH_SEGMENT, "foos");
    assert_eq!(Foo::LIST_KIND, "FooList");
    scope_is::<Foo, NamespaceResourceScope>();
    let gvk = Foo::group_version_kind();
    assert_eq!(
        (gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str()),
        ("samplecontroller.k8s.io", "v1alpha1", "Foo")
    );
    assert_eq!(Foo::group_version_resource().resource, "foos");
    let info = Foo::RESOURCE_INFO;
    assert!(info.status_subresource);
    assert_eq!(info.scale_subresource, None);
}

#[test]
fn generated_kinds_work_with_kube_unchanged() {
    use apis::samplecontroller::v1alpha1::Foo;
    use kube::Resource as _;
    assert_eq!(Foo::plural(&()), "foos");
    assert_eq!(Foo::api_version(&()), "samplecontroller.k8s.io/v1alpha1");
    let mut foo = Foo::default();
    foo.meta_mut().name = Some("x".into());
    assert_eq!(foo.meta().name.as_deref(), Some("x"));
    assert_eq!(foo.object_ref(&()).kind.as_deref(), Some("Foo"));
}

#[test]
fn cluster_scoped_kind_with_names_and_printer_columns() {
    use apis::widgets::v1::ClusterWidget;
    scope_is::<ClusterWidget, ClusterResourceScope>();
    let info = ClusterWidget::RESOURCE_INFO;
    assert!(!info.namespaced);
    assert_eq!(info.short_names, ["cw", "cwidget"]);
    assert_eq!(info.categories, ["all", "widgets"]);
    assert_eq!(info.printer_columns.len(), 3);
    assert_eq!(
        info.printer_columns[2],
        PrinterColumn {
            name: "Size",
            type_: "integer",
            format: Some("int32"),
            description: None,
            priority: 1,
            json_path: ".spec.size",
        }
    );
    assert_eq!(
        info.printer_columns[0].description,
        Some("The widget's color.")
    );
}

#[test]
fn status_and_scale_subresources() {
    use apis::scaling::v1::ReplicaSet;
    let info = ReplicaSet::RESOURCE_INFO;
    assert!(info.status_subresource);
    assert_eq!(
        info.scale_subresource,
        Some(ScaleSubresource {
            spec_replicas_path: ".spec.replicas",
            status_replicas_path: ".status.replicas",
            label_selector_path: Some(".status.selector"),
        })
    );
    assert_eq!(info.short_names, ["rs"]);
}

#[test]
fn every_served_version_is_its_own_module() {
    use apis::multi::{v1, v2};
    assert_eq!(v1::Gadget::API_VERSION, "multi.example.com/v1");
    assert_eq!(v2::Gadget::API_VERSION, "multi.example.com/v2");
    let (v1_info, v2_info) = (v1::Gadget::RESOURCE_INFO, v2::Gadget::RESOURCE_INFO);
    assert!(v1_info.deprecated && !v1_info.storage);
    assert_eq!(
        v1_info.deprecation_warning,
        Some("multi.example.com/v1 Gadget is deprecated; use v2")
    );
    assert!(v2_info.storage && !v2_info.deprecated);
    let v2_spec = v2::GadgetSpec {
        parts: Some(vec![v2::GadgetSpecParts {
            name: "a".into(),
            count: None,
        }]),
    };
    let v1_spec = v1::GadgetSpec {
        part_names: Some(vec!["a".into()]),
    };
    assert_ne!(format!("{v1_spec:?}"), format!("{v2_spec:?}"));
}

#[test]
fn colliding_group_labels_get_distinct_modules() {
    use apis::{gateway_networking_k8s, gateway_networking_x_k8s};
    assert_eq!(
        gateway_networking_k8s::v1::Route::GROUP,
        "gateway.networking.k8s.io"
    );
    assert_eq!(
        gateway_networking_x_k8s::v1alpha1::Mesh::GROUP,
        "gateway.networking.x-k8s.io"
    );
    scope_is::<gateway_networking_x_k8s::v1alpha1::Mesh, ClusterResourceScope>();
}
