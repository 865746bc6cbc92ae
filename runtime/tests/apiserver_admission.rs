//! Admission webhooks called by the in-memory server, end to end: the webhooks are
//! served by `kubegen_runtime::webhook` over HTTPS with a self-signed certificate whose CA
//! is the configuration's `caBundle`. The same suite runs over the tower Service, over
//! TCP (with `kubectl apply`) and against a real kube-apiserver (ignored unless
//! `hack/test.sh real`): a denied object gets the webhook's message, a mutating
//! webhook's patch is stored. The finer behaviours (rules, selectors, failurePolicy,
//! dry run, reinvocation, deletes, the review's fields) run on the in-memory server.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1 as ar;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::admission::AdmissionRequest;
use kube::core::DynamicObject;
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use kubegen_runtime::webhook::{Mutation, Tls, Validation, WebhookServer};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const DENIED: &str = "the key `forbidden` is not allowed";

/// What the webhooks were sent, in order: (path, request as JSON).
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

fn record(seen: &Seen, path: &str, req: &AdmissionRequest<DynamicObject>) {
    let v = json!({
        "requestKind": req.request_kind,
        "operation": req.operation,
        "name": req.name,
        "namespace": req.namespace,
        "subResource": req.sub_resource,
        "kind": req.kind,
        "resource": req.resource,
        "dryRun": req.dry_run,
        "object": req.object,
        "oldObject": req.old_object,
        "options": req.options,
    });
    seen.lock().push((path.to_owned(), v));
}

fn data_has(o: &Option<DynamicObject>, key: &str) -> bool {
    o.as_ref()
        .and_then(|o| o.data.get("data"))
        .and_then(|d| d.get(key))
        .is_some()
}

/// The webhooks of the suite: validating (denies the key `forbidden`, warns otherwise),
/// mutating (adds the label `mutated: yes`), and helpers of the finer tests.
fn webhooks(seen: &Seen) -> WebhookServer {
    let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen.clone());
    WebhookServer::new()
        .validating("/validate", move |req: AdmissionRequest<DynamicObject>| {
            record(&s1, "/validate", &req);
            let forbidden = data_has(&req.object, "forbidden");
            let gone = req.operation == kube::core::admission::Operation::Delete
                && data_has(&req.old_object, "keep");
            async move {
                if forbidden {
                    Validation::deny(DENIED)
                } else if gone {
                    Validation::deny("this one stays")
                } else {
                    Validation::allow().warn("checked by the test webhook")
                }
            }
        })
        // Denies everything: the readiness probe of `active`.
        .validating("/probe", |_: AdmissionRequest<DynamicObject>| async {
            Validation::deny("probe")
        })
        .mutating("/mutate", move |req: AdmissionRequest<DynamicObject>| {
            record(&s2, "/mutate", &req);
            async move {
                match req.object {
                    Some(mut o) => {
                        o.metadata
                            .labels
                            .get_or_insert_with(Default::default)
                            .insert("mutated".into(), "yes".into());
                        Mutation::Object(o)
                    }
                    None => Mutation::Deny("no object".into()),
                }
            }
        })
        // Counts its calls into the label `second`: reinvocation shows as "2".
        .mutating(
            "/mutate-second",
            move |req: AdmissionRequest<DynamicObject>| {
                record(&s3, "/mutate-second", &req);
                async move {
                    match req.object {
                        Some(mut o) => {
                            let labels = o.metadata.labels.get_or_insert_with(Default::default);
                            let n: u32 = labels
                                .get("second")
                                .and_then(|v| v.parse().ok())
                                .unwrap_or(0);
                            labels.insert("second".into(), (n + 1).to_string());
                            Mutation::Object(o)
                        }
                        None => Mutation::Deny("no object".into()),
                    }
                }
            },
        )
        .mutating(
            "/mutate-late",
            move |req: AdmissionRequest<DynamicObject>| {
                record(&s4, "/mutate-late", &req);
                async move {
                    match req.object {
                        Some(mut o) => {
                            o.metadata
                                .annotations
                                .get_or_insert_with(Default::default)
                                .insert("late".into(), "yes".into());
                            Mutation::Object(o)
                        }
                        None => Mutation::Deny("no object".into()),
                    }
                }
            },
        )
}

struct Hooks {
    addr: SocketAddr,
    ca: Vec<u8>,
    seen: Seen,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

async fn serve_webhooks() -> Hooks {
    let tls = Tls::self_signed(&["127.0.0.1"]).unwrap();
    let ca = tls.ca_pem().unwrap().as_bytes().to_vec();
    let seen: Seen = Arc::default();
    let stop = CancellationToken::new();
    let (addr, task) = webhooks(&seen)
        .serve("127.0.0.1:0".parse().unwrap(), tls, stop.clone())
        .await
        .unwrap();
    Hooks {
        addr,
        ca,
        seen,
        stop,
        task,
    }
}

impl Hooks {
    fn config(&self, path: &str) -> ar::WebhookClientConfig {
        ar::WebhookClientConfig {
            url: Some(format!("https://{}{path}", self.addr)),
            ca_bundle: Some(ByteString(self.ca.clone())),
            service: None,
        }
    }

    fn calls(&self, path: &str) -> Vec<Value> {
        self.seen
            .lock()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, v)| v.clone())
            .collect()
    }

    async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap();
    }
}

fn rule(ops: &[&str], resources: &[&str]) -> ar::RuleWithOperations {
    ar::RuleWithOperations {
        api_groups: Some(vec!["".into()]),
        api_versions: Some(vec!["v1".into()]),
        operations: Some(ops.iter().map(|s| (*s).to_owned()).collect()),
        resources: Some(resources.iter().map(|s| (*s).to_owned()).collect()),
        scope: None,
    }
}

fn opted_in() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
        match_labels: Some([("webhook-test".to_owned(), "yes".to_owned())].into()),
        ..Default::default()
    }
}

fn validating(
    name: &str,
    webhooks: Vec<ar::ValidatingWebhook>,
) -> ar::ValidatingWebhookConfiguration {
    ar::ValidatingWebhookConfiguration {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        webhooks: Some(webhooks),
    }
}

fn mutating(name: &str, webhooks: Vec<ar::MutatingWebhook>) -> ar::MutatingWebhookConfiguration {
    ar::MutatingWebhookConfiguration {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        webhooks: Some(webhooks),
    }
}

fn validating_hook(
    h: &Hooks,
    name: &str,
    rules: Vec<ar::RuleWithOperations>,
) -> ar::ValidatingWebhook {
    ar::ValidatingWebhook {
        name: name.into(),
        admission_review_versions: vec!["v1".into()],
        client_config: h.config("/validate"),
        side_effects: "None".into(),
        failure_policy: Some("Fail".into()),
        object_selector: Some(opted_in()),
        rules: Some(rules),
        ..Default::default()
    }
}

fn mutating_hook(h: &Hooks, name: &str, path: &str) -> ar::MutatingWebhook {
    ar::MutatingWebhook {
        name: name.into(),
        admission_review_versions: vec!["v1".into()],
        client_config: h.config(path),
        side_effects: "None".into(),
        failure_policy: Some("Fail".into()),
        object_selector: Some(opted_in()),
        rules: Some(vec![rule(&["CREATE", "UPDATE"], &["configmaps"])]),
        ..Default::default()
    }
}

fn cm(name: &str, key: &str, opted: bool) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            labels: opted.then(|| [("webhook-test".to_owned(), "yes".to_owned())].into()),
            ..Default::default()
        },
        data: Some([(key.to_owned(), "x".to_owned())].into()),
        ..Default::default()
    }
}

async fn install(
    client: &kube::Client,
    v: ar::ValidatingWebhookConfiguration,
    m: Option<ar::MutatingWebhookConfiguration>,
) {
    let pp = PostParams::default();
    Api::<ar::ValidatingWebhookConfiguration>::all(client.clone())
        .create(&pp, &v)
        .await
        .unwrap();
    if let Some(m) = m {
        Api::<ar::MutatingWebhookConfiguration>::all(client.clone())
            .create(&pp, &m)
            .await
            .unwrap();
    }
}

fn label(o: &ConfigMap, k: &str) -> Option<String> {
    o.metadata.labels.as_ref().and_then(|l| l.get(k).cloned())
}

/// `kubectl apply -f -` of `manifest`: (success, stdout, stderr). Asynchronous, so the
/// test's runtime keeps serving the in-memory server and the webhooks meanwhile.
async fn kubectl_apply(kubeconfig: &Path, manifest: &Value) -> (bool, String, String) {
    use tokio::io::AsyncWriteExt as _;
    let mut child = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["apply", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl is on PATH");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(manifest.to_string().as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The suite the three transports share.
async fn denial_and_mutation(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<PathBuf>::new())
        .await
        .unwrap();
    let client = conn.client();
    let hooks = serve_webhooks().await;
    install(
        &client,
        validating(
            "test-validating",
            vec![validating_hook(
                &hooks,
                "vcm.kubegen.example.com",
                vec![rule(&["CREATE", "UPDATE"], &["configmaps"])],
            )],
        ),
        Some(mutating(
            "test-mutating",
            vec![mutating_hook(&hooks, "mcm.kubegen.example.com", "/mutate")],
        )),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    // kube-apiserver picks configurations up from an informer: retry until the denial
    // shows (the in-memory server denies the first time).
    let mut denied = None;
    for attempt in 0..100 {
        match cms
            .create(&pp, &cm(&format!("bad-{attempt}"), "forbidden", true))
            .await
        {
            Err(kube::Error::Api(status)) => {
                denied = Some(status);
                break;
            }
            Err(e) => panic!("{e}"),
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    let status = denied.expect("the validating webhook denied the object");
    // A webhook that sets no code of 400 or more gets 400 Bad Request (what
    // kube-apiserver 1.36 answers), its reason (none here) and message.
    assert_eq!(
        (status.code, status.reason.as_str()),
        (400, ""),
        "{status:?}"
    );
    assert_eq!(
        status.message,
        format!("admission webhook \"vcm.kubegen.example.com\" denied the request: {DENIED}")
    );

    // Allowed: the mutating webhook's patch is on the stored object.
    cms.create(&pp, &cm("good", "a", true)).await.unwrap();
    let stored = cms.get("good").await.unwrap();
    assert_eq!(label(&stored, "mutated").as_deref(), Some("yes"));
    // Not opted in by label: neither webhook sees it.
    cms.create(&pp, &cm("plain", "forbidden", false))
        .await
        .unwrap();
    assert_eq!(label(&cms.get("plain").await.unwrap(), "mutated"), None);

    // kubectl apply prints the webhook's message, and the warning of an allowed object.
    if let Some(kubeconfig) = conn.kubeconfig() {
        let mut manifest = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "applied", "namespace": "default", "labels": {"webhook-test": "yes"}},
            "data": {"forbidden": "x"},
        });
        let (ok, _, stderr) = kubectl_apply(kubeconfig, &manifest).await;
        assert!(!ok, "kubectl apply of a denied object fails");
        assert!(
            stderr.contains(&format!(
                "admission webhook \"vcm.kubegen.example.com\" denied the request: {DENIED}"
            )),
            "{stderr}"
        );
        manifest["data"] = json!({"a": "b"});
        let (ok, stdout, stderr) = kubectl_apply(kubeconfig, &manifest).await;
        assert!(ok, "{stderr}");
        assert!(stdout.contains("configmap/applied created"), "{stdout}");
        assert!(
            stderr.contains("Warning: checked by the test webhook"),
            "{stderr}"
        );
        assert_eq!(
            label(&cms.get("applied").await.unwrap(), "mutated").as_deref(),
            Some("yes")
        );
    }
    hooks.stop().await;
    conn.close().await;
}

#[tokio::test]
async fn a_denied_object_gets_the_webhooks_message_over_tower() {
    denial_and_mutation(Transport::Tower).await;
}

#[tokio::test]
async fn a_denied_object_gets_the_webhooks_message_over_tcp_and_kubectl() {
    denial_and_mutation(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn a_denied_object_gets_the_webhooks_message_from_kube_apiserver() {
    denial_and_mutation(Transport::Real).await;
}

/// Waits until the validating configurations created so far apply (kube-apiserver reads
/// them through an informer, a moment later; the in-memory server at once): a last
/// configuration whose webhook denies objects labelled `probe: yes` must deny one.
async fn active(client: &kube::Client, hooks: &Hooks) {
    let mut probe = validating_hook(
        hooks,
        "probe.example.com",
        vec![rule(&["CREATE"], &["configmaps"])],
    );
    probe.client_config = hooks.config("/probe");
    probe.object_selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some([("probe".to_owned(), "yes".to_owned())].into()),
            ..Default::default()
        },
    );
    Api::<ar::ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &validating("zz-probe", vec![probe]))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..100 {
        let mut o = cm(&format!("probe-{i}"), "a", false);
        o.metadata.labels = Some([("probe".to_owned(), "yes".to_owned())].into());
        if cms.create(&PostParams::default(), &o).await.is_err() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the webhook configurations never applied");
}

/// A tower client of a fresh in-memory server, and the webhooks.
async fn in_memory() -> (ApiServer, kube::Client, Hooks) {
    let server = ApiServer::new();
    let client = kube::Client::new(server.service(), "default");
    (server, client, serve_webhooks().await)
}

fn api_error(r: Result<impl std::fmt::Debug, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn an_update_sends_the_old_object_and_the_request_attributes() {
    let (_server, client, hooks) = in_memory().await;
    install(
        &client,
        validating(
            "v",
            vec![validating_hook(
                &hooks,
                "v.example.com",
                vec![rule(&["UPDATE"], &["configmaps"])],
            )],
        ),
        Some(mutating(
            "m",
            vec![mutating_hook(&hooks, "m.example.com", "/mutate")],
        )),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &cm("c", "a", true))
        .await
        .unwrap();
    // The create went to the mutating webhook only (the validating rule is UPDATE).
    assert!(hooks.calls("/validate").is_empty());
    let create = &hooks.calls("/mutate")[0];
    assert_eq!(create["operation"], "CREATE");
    assert_eq!(create["oldObject"], Value::Null);
    assert_eq!(create["options"]["kind"], "CreateOptions");
    assert!(create["object"]["metadata"].get("uid").is_none());

    let patch = json!({"data": {"b": "y"}});
    let pp = PatchParams {
        field_manager: Some("tester".into()),
        ..Default::default()
    };
    let patched = cms.patch("c", &pp, &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(label(&patched, "mutated").as_deref(), Some("yes"));
    let update = hooks.calls("/validate").pop().unwrap();
    assert_eq!(update["operation"], "UPDATE");
    assert_eq!(update["name"], "c");
    assert_eq!(update["namespace"], "default");
    assert_eq!(
        update["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    let resource = &update["resource"];
    assert_eq!(
        (
            &resource["group"],
            &resource["version"],
            &resource["resource"]
        ),
        (&json!(""), &json!("v1"), &json!("configmaps"))
    );
    assert_eq!(update["dryRun"], false);
    assert_eq!(update["options"]["kind"], "PatchOptions");
    assert_eq!(update["options"]["fieldManager"], "tester");
    assert_eq!(update["oldObject"]["data"], json!({"a": "x"}));
    assert_eq!(update["object"]["data"], json!({"a": "x", "b": "y"}));
    assert_eq!(
        update["object"]["metadata"]["uid"], update["oldObject"]["metadata"]["uid"],
        "an update is admitted against the object it replaces"
    );
    // What the validating webhook saw is what was stored.
    assert_eq!(update["object"]["metadata"]["labels"]["mutated"], "yes");
    assert_eq!(cms.get("c").await.unwrap().data, patched.data);
    hooks.stop().await;
}

/// failurePolicy: `Fail` answers kube-apiserver's InternalError, `Ignore` lets the
/// write through (checked on kube-apiserver 1.36 too).
async fn failure_policy(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<PathBuf>::new())
        .await
        .unwrap();
    let client = conn.client();
    let hooks = serve_webhooks().await;
    let mut down = validating_hook(
        &hooks,
        "down.example.com",
        vec![rule(&["CREATE"], &["configmaps"])],
    );
    down.client_config.url = Some("https://127.0.0.1:1/validate".into());
    install(&client, validating("down", vec![down.clone()]), None).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // kube-apiserver applies a new configuration a moment later: retry, bounded.
    let mut refused = None;
    for i in 0..100 {
        match cms
            .create(&PostParams::default(), &cm(&format!("a{i}"), "ok", true))
            .await
        {
            Err(kube::Error::Api(s)) => {
                refused = Some((i, *s));
                break;
            }
            Err(e) => panic!("{e}"),
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    let (i, st) = refused.expect("the unreachable webhook refuses the create");
    assert_eq!((st.code, st.reason.as_str()), (500, "InternalError"));
    let why = "failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:1/validate?timeout=10s\"";
    assert!(
        st.message
            .starts_with(&format!("Internal error occurred: {why}")),
        "{}",
        st.message
    );
    let causes = st.details.unwrap().causes;
    assert!(
        causes.len() == 1 && causes[0].message.starts_with(why),
        "{causes:?}"
    );
    assert!(cms.get_opt(&format!("a{i}")).await.unwrap().is_none());

    let configs = Api::<ar::ValidatingWebhookConfiguration>::all(client.clone());
    let mut ignore = configs.get("down").await.unwrap();
    ignore.webhooks.as_mut().unwrap()[0].failure_policy = Some("Ignore".into());
    configs
        .replace("down", &PostParams::default(), &ignore)
        .await
        .unwrap();
    let mut created = false;
    for _ in 0..100 {
        if cms
            .create(&PostParams::default(), &cm("ignored", "ok", true))
            .await
            .is_ok()
        {
            created = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(created, "failurePolicy Ignore lets the create through");
    hooks.stop().await;
    conn.close().await;
}

/// `matchConditions`: CEL over `object`, `oldObject` and `request` decides whether the
/// webhook is called; a false condition skips it even when another cannot be evaluated;
/// a condition that cannot be evaluated is a failed call under `failurePolicy`.
async fn match_conditions(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<PathBuf>::new())
        .await
        .unwrap();
    let client = conn.client();
    let hooks = serve_webhooks().await;
    let condition = |name: &str, expression: &str| ar::MatchCondition {
        name: name.into(),
        expression: expression.into(),
    };
    let mut hook = validating_hook(
        &hooks,
        "conditions.example.com",
        vec![rule(&["CREATE"], &["configmaps"])],
    );
    hook.match_conditions = Some(vec![
        condition("checked", "object.metadata.name.startsWith('checked-')"),
        condition(
            "create",
            "request.operation == 'CREATE' && oldObject == null",
        ),
    ]);
    install(&client, validating("conditions", vec![hook]), None).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // kube-apiserver applies a new configuration a moment later: retry, bounded.
    let mut denied = None;
    for i in 0..100 {
        let name = format!("checked-{i}");
        match cms
            .create(&PostParams::default(), &cm(&name, "forbidden", true))
            .await
        {
            Err(kube::Error::Api(s)) => {
                denied = Some(*s);
                break;
            }
            Err(e) => panic!("{e}"),
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    let st = denied.expect("the conditions hold for checked-*: the webhook denies");
    assert!(st.message.contains(DENIED), "{}", st.message);

    // A condition false: not called, so not denied.
    cms.create(&PostParams::default(), &cm("other", "forbidden", true))
        .await
        .expect("a false condition skips the webhook");
    let names: Vec<Value> = hooks
        .calls("/validate")
        .iter()
        .map(|r| r["name"].clone())
        .collect();
    assert!(!names.contains(&json!("other")), "{names:?}");

    // A condition that cannot be evaluated (ConfigMaps have no `spec`).
    let configs = Api::<ar::ValidatingWebhookConfiguration>::all(client.clone());
    let mut broken = configs.get("conditions").await.unwrap();
    broken.webhooks.as_mut().unwrap()[0].match_conditions = Some(vec![
        condition("checked", "object.metadata.name.startsWith('checked-')"),
        condition("broken", "object.spec.replicas == 1"),
    ]);
    configs
        .replace("conditions", &PostParams::default(), &broken)
        .await
        .unwrap();
    let mut refused = None;
    for i in 0..100 {
        match cms
            .create(
                &PostParams::default(),
                &cm(&format!("checked-ok-{i}"), "ok", true),
            )
            .await
        {
            Err(kube::Error::Api(s)) => {
                refused = Some((i, *s));
                break;
            }
            Err(e) => panic!("{e}"),
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    let (i, st) = refused.expect("failurePolicy Fail refuses when a condition cannot be evaluated");
    assert_eq!((st.code, st.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        st.message,
        format!(
            "configmaps \"checked-ok-{i}\" is forbidden: expression 'object.spec.replicas == 1' resulted in error: no such key: spec"
        )
    );
    // False wins over the error: a name the first condition rejects is let through.
    cms.create(&PostParams::default(), &cm("unchecked", "forbidden", true))
        .await
        .expect("a false condition skips the webhook even when another fails");

    hooks.stop().await;
    conn.close().await;
}

#[tokio::test]
async fn match_conditions_pick_the_requests_a_webhook_sees() {
    match_conditions(Transport::Tower).await;
}

#[tokio::test]
async fn match_conditions_pick_the_requests_a_webhook_sees_over_tcp() {
    match_conditions(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn match_conditions_on_kube_apiserver() {
    match_conditions(Transport::Real).await;
}

/// The in-memory server keeps the decoded webhooks (their matchConditions compiled)
/// between requests: a stored, replaced or deleted configuration must still apply to the
/// very next request, with no retry (kube-apiserver takes a moment; the fake must not be
/// later than that).
async fn configuration_changes_apply_at_once(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<PathBuf>::new())
        .await
        .unwrap();
    let client = conn.client();
    let hooks = serve_webhooks().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    cms.create(&pp, &cm("before", "forbidden", true))
        .await
        .expect("no configuration yet");

    let mut hook = validating_hook(
        &hooks,
        "cached.example.com",
        vec![rule(&["CREATE"], &["configmaps"])],
    );
    hook.match_conditions = Some(vec![ar::MatchCondition {
        name: "a".into(),
        expression: "object.metadata.name.startsWith('a-')".into(),
    }]);
    install(&client, validating("cached", vec![hook]), None).await;
    let st = api_error(cms.create(&pp, &cm("a-1", "forbidden", true)).await);
    assert!(st.message.contains(DENIED), "{}", st.message);
    cms.create(&pp, &cm("b-1", "forbidden", true))
        .await
        .expect("the condition is false for b-1");

    // Replaced: the new condition is compiled and used by the next request.
    let configs = Api::<ar::ValidatingWebhookConfiguration>::all(client.clone());
    let mut changed = configs.get("cached").await.unwrap();
    changed.webhooks.as_mut().unwrap()[0].match_conditions = Some(vec![ar::MatchCondition {
        name: "b".into(),
        expression: "object.metadata.name.startsWith('b-')".into(),
    }]);
    configs.replace("cached", &pp, &changed).await.unwrap();
    cms.create(&pp, &cm("a-2", "forbidden", true))
        .await
        .expect("the replaced condition is false for a-2");
    let st = api_error(cms.create(&pp, &cm("b-2", "forbidden", true)).await);
    assert!(st.message.contains(DENIED), "{}", st.message);

    // A second configuration stored beside it applies too.
    let other = validating_hook(
        &hooks,
        "other.example.com",
        vec![rule(&["CREATE"], &["configmaps"])],
    );
    install(&client, validating("other", vec![other]), None).await;
    let st = api_error(cms.create(&pp, &cm("c-1", "forbidden", true)).await);
    assert!(st.message.contains(DENIED), "{}", st.message);

    // Deleted: the next request is not sent.
    configs.delete("cached", &Default::default()).await.unwrap();
    configs.delete("other", &Default::default()).await.unwrap();
    let before = hooks.calls("/validate").len();
    cms.create(&pp, &cm("b-3", "forbidden", true))
        .await
        .expect("no configuration left");
    assert_eq!(hooks.calls("/validate").len(), before);

    hooks.stop().await;
    conn.close().await;
}

#[tokio::test]
async fn a_configuration_change_applies_to_the_next_request() {
    configuration_changes_apply_at_once(Transport::Tower).await;
}

#[tokio::test]
async fn a_configuration_change_applies_to_the_next_request_over_tcp() {
    configuration_changes_apply_at_once(Transport::Tcp).await;
}

#[tokio::test]
async fn failure_policy_fail_refuses_and_ignore_lets_through() {
    failure_policy(Transport::Tower).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn failure_policy_on_kube_apiserver() {
    failure_policy(Transport::Real).await;
}

#[tokio::test]
async fn a_dry_run_is_sent_as_one_and_refused_by_webhooks_with_side_effects() {
    let (_server, client, hooks) = in_memory().await;
    let mut hook = validating_hook(
        &hooks,
        "v.example.com",
        vec![rule(&["CREATE"], &["configmaps"])],
    );
    install(&client, validating("v", vec![hook.clone()]), None).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let st = api_error(cms.create(&dry, &cm("d", "forbidden", true)).await);
    assert!(st.message.ends_with(DENIED), "{}", st.message);
    cms.create(&dry, &cm("d", "fine", true)).await.unwrap();
    let seen = hooks.calls("/validate");
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s["dryRun"] == true));
    assert_eq!(seen[1]["options"]["dryRun"], json!(["All"]));
    assert!(
        cms.get_opt("d").await.unwrap().is_none(),
        "a dry run stores nothing"
    );

    hook.side_effects = "Some".into();
    let configs = Api::<ar::ValidatingWebhookConfiguration>::all(client.clone());
    let mut c = configs.get("v").await.unwrap();
    c.webhooks = Some(vec![hook]);
    configs
        .replace("v", &PostParams::default(), &c)
        .await
        .unwrap();
    let st = api_error(cms.create(&dry, &cm("d", "fine", true)).await);
    assert_eq!(st.code, 400);
    assert_eq!(
        st.message,
        "admission webhook \"v.example.com\" does not support dry run"
    );
    assert_eq!(hooks.calls("/validate").len(), 2, "not called");
    hooks.stop().await;
}

#[tokio::test]
async fn a_webhook_with_reinvocation_if_needed_sees_later_changes() {
    for (policy, calls) in [("IfNeeded", "2"), ("Never", "1")] {
        let (_server, client, hooks) = in_memory().await;
        let mut second = mutating_hook(&hooks, "second.example.com", "/mutate-second");
        second.reinvocation_policy = Some(policy.into());
        // Configurations run in name order: `a-second` first, then `b-late`, which
        // changes the object after `a-second` saw it.
        install(
            &client,
            validating(
                "v",
                vec![validating_hook(
                    &hooks,
                    "v.example.com",
                    vec![rule(&["CREATE"], &["configmaps"])],
                )],
            ),
            Some(mutating("a-second", vec![second])),
        )
        .await;
        Api::<ar::MutatingWebhookConfiguration>::all(client.clone())
            .create(
                &PostParams::default(),
                &mutating(
                    "b-late",
                    vec![mutating_hook(&hooks, "late.example.com", "/mutate-late")],
                ),
            )
            .await
            .unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        let out = cms
            .create(&PostParams::default(), &cm("r", "a", true))
            .await
            .unwrap();
        assert_eq!(label(&out, "second").as_deref(), Some(calls), "{policy}");
        assert_eq!(
            out.metadata
                .annotations
                .unwrap()
                .get("late")
                .map(String::as_str),
            Some("yes")
        );
        hooks.stop().await;
    }
}

async fn delete_denied(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<PathBuf>::new())
        .await
        .unwrap();
    let client = conn.client();
    let hooks = serve_webhooks().await;
    install(
        &client,
        validating(
            "v",
            vec![validating_hook(
                &hooks,
                "v.example.com",
                vec![rule(&["DELETE"], &["configmaps"])],
            )],
        ),
        None,
    )
    .await;
    active(&client, &hooks).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams::default();
    cms.create(&pp, &cm("kept", "keep", true)).await.unwrap();
    cms.create(&pp, &cm("gone", "other", true)).await.unwrap();
    let st = api_error(cms.delete("kept", &DeleteParams::default()).await);
    assert_eq!(
        st.message,
        "admission webhook \"v.example.com\" denied the request: this one stays"
    );
    assert!(cms.get_opt("kept").await.unwrap().is_some());
    cms.delete("gone", &DeleteParams::default()).await.unwrap();
    assert!(cms.get_opt("gone").await.unwrap().is_none());
    let seen = hooks.calls("/validate");
    assert_eq!(seen[0]["operation"], "DELETE");
    assert_eq!(seen[0]["object"], Value::Null);
    assert_eq!(seen[0]["oldObject"]["data"], json!({"keep": "x"}));
    assert_eq!(seen[0]["options"]["kind"], "DeleteOptions");
    hooks.stop().await;
    conn.close().await;
}

#[tokio::test]
async fn a_delete_can_be_denied_with_the_old_object() {
    delete_denied(Transport::Tower).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn a_delete_can_be_denied_on_kube_apiserver() {
    delete_denied(Transport::Real).await;
}

async fn namespace_selector(transport: Transport) {
    use k8s_openapi::api::core::v1::Namespace;
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<PathBuf>::new())
        .await
        .unwrap();
    let client = conn.client();
    let hooks = serve_webhooks().await;
    let mut hook = validating_hook(
        &hooks,
        "v.example.com",
        vec![rule(&["CREATE"], &["configmaps"])],
    );
    hook.object_selector = None;
    hook.namespace_selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some([("env".to_owned(), "prod".to_owned())].into()),
            ..Default::default()
        },
    );
    install(&client, validating("v", vec![hook]), None).await;
    active(&client, &hooks).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for (name, env) in [("prod", "prod"), ("dev", "dev")] {
        let ns = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                labels: Some([("env".to_owned(), env.to_owned())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    let pp = PostParams::default();
    Api::<ConfigMap>::namespaced(client.clone(), "dev")
        .create(&pp, &cm("c", "forbidden", false))
        .await
        .unwrap();
    let st = api_error(
        Api::<ConfigMap>::namespaced(client, "prod")
            .create(&pp, &cm("c", "forbidden", false))
            .await,
    );
    assert!(st.message.ends_with(DENIED), "{}", st.message);
    assert_eq!(hooks.calls("/validate").len(), 1, "dev was never sent");
    hooks.stop().await;
    conn.close().await;
}

#[tokio::test]
async fn a_namespace_selector_picks_the_namespaces_by_their_labels() {
    namespace_selector(Transport::Tower).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn a_namespace_selector_on_kube_apiserver() {
    namespace_selector(Transport::Real).await;
}

/// gadgets.example.com at v1 (storage) and v2, converted by apiVersion only.
fn gadgets_crd(
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    let version = |name: &str| {
        json!({"name": name, "served": true, "storage": name == "v1",
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}})
    };
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [version("v1"), version("v2")],
        },
    }))
    .unwrap()
}

/// matchPolicy: a rule naming v1 is called for a request at v2 when Equivalent (at v1:
/// the object converted, `requestKind` still v2, the patch stored), not when Exact.
async fn match_policy(transport: Transport) {
    use kube::api::{ApiResource, DynamicObject};
    use kube::core::GroupVersionKind;
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<PathBuf>::new())
        .await
        .unwrap();
    let client = conn.client();
    let hooks = serve_webhooks().await;
    let crds: Api<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    > = Api::all(client.clone());
    crds.create(&PostParams::default(), &gadgets_crd())
        .await
        .unwrap();
    let mut equivalent = mutating_hook(&hooks, "equivalent.example.com", "/mutate");
    equivalent.rules = Some(vec![ar::RuleWithOperations {
        api_groups: Some(vec!["example.com".into()]),
        api_versions: Some(vec!["v1".into()]),
        operations: Some(vec!["CREATE".into()]),
        resources: Some(vec!["gadgets".into()]),
        scope: None,
    }]);
    let mut exact = equivalent.clone();
    exact.name = "exact.example.com".into();
    exact.client_config = hooks.config("/mutate-second");
    exact.match_policy = Some("Exact".into());
    Api::<ar::MutatingWebhookConfiguration>::all(client.clone())
        .create(
            &PostParams::default(),
            &mutating("m", vec![equivalent, exact]),
        )
        .await
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v2", "Gadget"),
        "gadgets",
    );
    let gadgets = Api::<DynamicObject>::namespaced_with(client.clone(), "default", &ar);
    // kube-apiserver serves the CRD and applies the configuration a moment later.
    let mut stored = None;
    for i in 0..100 {
        let g: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "example.com/v2", "kind": "Gadget",
            "metadata": {"name": format!("g{i}"), "labels": {"webhook-test": "yes"}},
            "spec": {"size": 1}}))
        .unwrap();
        if let Ok(o) = gadgets.create(&PostParams::default(), &g).await
            && o.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("mutated"))
        {
            stored = Some(o);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let stored = stored.expect("the Equivalent webhook mutated the v2 request");
    assert_eq!(stored.types.unwrap().api_version, "example.com/v2");
    let call = hooks.calls("/mutate").pop().unwrap();
    assert_eq!(call["kind"]["version"], "v1");
    assert_eq!(call["resource"]["version"], "v1");
    assert_eq!(call["requestKind"]["version"], "v2");
    assert_eq!(call["object"]["apiVersion"], "example.com/v1");
    assert!(
        hooks.calls("/mutate-second").is_empty(),
        "matchPolicy Exact does not match v2"
    );
    hooks.stop().await;
    conn.close().await;
}

#[tokio::test]
async fn match_policy_equivalent_calls_at_the_rules_version() {
    match_policy(Transport::Tower).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn match_policy_on_kube_apiserver() {
    match_policy(Transport::Real).await;
}
