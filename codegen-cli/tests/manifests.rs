//! `kubegen rbac` and `kubegen webhook`: manifests from markers in comments, merged and
//! sorted as controller-gen's `rbac` and `webhook` generators do (the CI stage
//! hack/controller-gen-compare.sh checks them against controller-gen itself), and
//! errors at the marker's file:line:col.

use std::path::PathBuf;

use serde_json::json;

fn file(text: &str) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("controller.rs");
    std::fs::write(&path, text).unwrap();
    (dir, vec![path])
}

#[test]
fn rbac_rules_merge_as_controller_gen_merges_them() {
    let (_dir, files) = file(
        "// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list\n\
         /// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=list;get\n\
         //! +kubebuilder:rbac:groups=core,resources=events,verbs=create\n\
         // +kubebuilder:rbac:groups=\"\",resources=events,verbs=patch\n\
         // +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;*\n\
         // +kubebuilder:rbac:urls=/metrics,verbs=get\n\
         // +kubebuilder:rbac:groups=core,resources=pods,verbs=get,namespace=ops\n\
         fn reconcile() {}\n",
    );
    let m = kubegen::manifests::rbac(&files, "manager-role")
        .unwrap()
        .expect("a manifest");
    assert_eq!(m.file_name, "role.yaml");
    assert_eq!(
        m.objects,
        vec![
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "manager-role"},
                "rules": [
                    {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
                    // `core` is the empty group; one rule per key, verbs merged.
                    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
                    // Resources alike but for their name share one rule.
                    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["get", "list"]},
                    // `*` stands alone.
                    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["*"]},
                ],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "manager-role", "namespace": "ops"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
            }),
        ]
    );
    assert!(m.yaml.starts_with("---\n"), "{}", m.yaml);
}

#[test]
fn rbac_errors_name_the_marker() {
    let (_dir, files) =
        file("fn a() {}\n    // +kubebuilder:rbac:groups=apps,resources=deployments\n");
    let e = kubegen::manifests::rbac(&files, "r").unwrap_err();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].line_col, Some((2, 8)), "{}", e[0]);
    assert!(e[0].problem.contains("no verbs"), "{}", e[0]);
    let (_dir, files) = file("// +kubebuilder:rbac:group=apps,verbs=get\n");
    let e = kubegen::manifests::rbac(&files, "r").unwrap_err();
    assert!(e[0].problem.contains("no argument `group`"), "{}", e[0]);
    assert!(e[0].fix.contains("groups="), "{}", e[0]);
}

#[test]
fn webhooks_become_configurations_sorted_by_name() {
    let (_dir, files) = file(
        "// +kubebuilder:webhook:path=/validate-v1-widget,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=widgets,verbs=create;update,versions=v1,name=vwidget.example.com,admissionReviewVersions=v1,timeoutSeconds=5\n\
         // +kubebuilder:webhook:path=/mutate-v1-widget,mutating=true,failurePolicy=ignore,sideEffects=none,groups=example.com,resources=widgets,verbs=create,versions=v1,name=mwidget.example.com,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded\n\
         // +kubebuilder:webhook:url=https://x.example.com/v,mutating=false,failurePolicy=fail,sideEffects=None,groups=core,resources=pods,verbs=delete,versions=v1,name=apod.example.com,admissionReviewVersions=v1\n",
    );
    let m = kubegen::manifests::webhooks(&files)
        .unwrap()
        .expect("a manifest");
    assert_eq!(m.file_name, "manifests.yaml");
    assert_eq!(m.objects.len(), 2);
    assert_eq!(m.objects[0]["kind"], "MutatingWebhookConfiguration");
    assert_eq!(
        m.objects[0]["metadata"]["name"],
        "mutating-webhook-configuration"
    );
    let mutating = &m.objects[0]["webhooks"][0];
    assert_eq!(mutating["failurePolicy"], "Ignore");
    assert_eq!(mutating["sideEffects"], "None");
    assert_eq!(mutating["reinvocationPolicy"], "IfNeeded");
    assert_eq!(
        mutating["clientConfig"],
        json!({"service": {"name": "webhook-service", "namespace": "system", "path": "/mutate-v1-widget"}})
    );
    let validating = &m.objects[1]["webhooks"];
    assert_eq!(validating[0]["name"], "apod.example.com");
    assert_eq!(
        validating[0]["clientConfig"],
        json!({"url": "https://x.example.com/v"})
    );
    assert_eq!(validating[0]["rules"][0]["apiGroups"], json!([""]));
    assert_eq!(validating[0]["rules"][0]["operations"], json!(["DELETE"]));
    assert_eq!(validating[1]["timeoutSeconds"], 5);
    assert_eq!(
        validating[1]["rules"][0]["operations"],
        json!(["CREATE", "UPDATE"])
    );
}

#[test]
fn webhook_errors_name_the_marker_and_the_rule() {
    let base = "mutating=false,failurePolicy=fail,groups=g,resources=r,verbs=create,versions=v1,name=n,admissionReviewVersions=v1";
    for (extra, problem) in [
        ("path=/p", "no sideEffects"),
        ("path=/p,sideEffects=Some", "not allowed"),
        ("sideEffects=None", "exactly one of `path`"),
        (
            "path=/p,url=https://x,sideEffects=None",
            "exactly one of `path`",
        ),
        (
            "path=/p,sideEffects=None,timeoutSeconds=31",
            "between 1 and 30",
        ),
        ("path=/p,sideEffects=None,matchPolicy=Fuzzy", "matchPolicy"),
    ] {
        let (_dir, files) = file(&format!("// +kubebuilder:webhook:{base},{extra}\n"));
        let e = kubegen::manifests::webhooks(&files).unwrap_err();
        assert!(e[0].problem.contains(problem), "{extra}: {}", e[0]);
        assert_eq!(e[0].line_col, Some((1, 4)), "{}", e[0]);
    }
}
