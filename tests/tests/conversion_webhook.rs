//! The generated conversions as a conversion webhook: `shape_converter()` (golden
//! `apis::convert::v1::conversion`) behind `WebhookServer::conversion` over HTTPS with a
//! self-signed certificate, as the webhook of fixtures/crds/conversion.yaml. A Shape
//! created at v1beta1 (`spec.size`) is read at v1 (`spec.replicas`) and the reverse, on
//! the in-memory server (tower and TCP) and on a real kube-apiserver.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, WebhookClientConfig,
};
use k8s_openapi::ByteString;
use kube::api::{Api, PostParams};
use kubegen_runtime::testing::transport::Transport;
use kubegen_runtime::testing::ApiServer;
use kubegen_runtime::tokio_util::sync::CancellationToken;
use kubegen_runtime::webhook::{Tls, WebhookServer};
use kubegen_tests::golden::apis::convert::{v1, v1beta1};
use serde_json::json;

/// fixtures/crds/conversion.yaml with its webhook at `url`, trusting `ca`.
fn shapes_crd(url: &str, ca: &str) -> CustomResourceDefinition {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/crds/conversion.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut crd: CustomResourceDefinition = serde_yaml::from_str(&text).unwrap();
    let webhook = crd
        .spec
        .conversion
        .as_mut()
        .and_then(|c| c.webhook.as_mut())
        .expect("the fixture converts by webhook");
    webhook.client_config = Some(WebhookClientConfig {
        url: Some(url.to_owned()),
        ca_bundle: Some(ByteString(ca.as_bytes().to_vec())),
        service: None,
    });
    crd
}

/// Retries `f` until it succeeds (a new CRD is served a moment after it is created).
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut last = None;
    for _ in 0..100 {
        match f().await {
            Ok(v) => return v,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: {last:?}");
}

async fn converted_through_the_generated_webhook(transport: Transport) {
    let server = ApiServer::new();
    let conn = transport
        .connect(&server, Vec::<std::path::PathBuf>::new())
        .await
        .unwrap();
    let client = conn.client();
    let tls = Tls::self_signed(&["127.0.0.1"]).unwrap();
    let ca = tls.ca_pem().unwrap().to_owned();
    let converter = v1::conversion::shape_converter();
    let stop = CancellationToken::new();
    let (addr, task) = WebhookServer::new()
        .conversion("/convert", move |desired, object| {
            converter
                .convert(desired, object)
                .map_err(|e| e.to_string())
        })
        .serve("127.0.0.1:0".parse().unwrap(), tls, stop.clone())
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(
        &PostParams::default(),
        &shapes_crd(&format!("https://{addr}/convert"), &ca),
    )
    .await
    .unwrap();

    let create = PostParams::default();
    let beta: Api<v1beta1::Shape> = Api::namespaced(client.clone(), "default");
    let ga: Api<v1::Shape> = Api::namespaced(client.clone(), "default");

    // Written at v1beta1, read at v1: `size` becomes `replicas` through the crate's
    // ManualConversion. (A color only v1beta1 lists is refused by the in-memory server,
    // which validates at the storage version; tests/tests/conversion.rs checks that the
    // converter keeps it.)
    let a: v1beta1::Shape = serde_json::from_value(json!({
        "apiVersion": "convert.example.com/v1beta1", "kind": "Shape",
        "metadata": {"name": "a"},
        "spec": {"size": 3, "color": "green", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }))
    .unwrap();
    eventually("create a at v1beta1", || beta.create(&create, &a)).await;
    let at_v1 = eventually("read a at v1", || ga.get("a")).await;
    let spec = at_v1.spec.expect("spec");
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(spec.color, v1::ShapeSpecColor::Green);
    assert_eq!(spec.ports.expect("ports")[0].port, Some(80));

    // Written at v1, read at v1beta1.
    let b: v1::Shape = serde_json::from_value(json!({
        "apiVersion": "convert.example.com/v1", "kind": "Shape",
        "metadata": {"name": "b"},
        "spec": {"replicas": 5, "color": "blue", "labels": {"tier": "web"}},
    }))
    .unwrap();
    eventually("create b at v1", || ga.create(&create, &b)).await;
    let at_beta = eventually("read b at v1beta1", || beta.get("b")).await;
    let spec = at_beta.spec.expect("spec");
    assert_eq!(spec.size, Some(5));
    assert_eq!(spec.color, v1beta1::ShapeSpecColor::Blue);
    assert_eq!(spec.labels.expect("labels")["tier"], "web");

    stop.cancel();
    task.await.unwrap();
    conn.close().await;
}

#[tokio::test]
async fn generated_conversions_serve_the_in_memory_server_over_tower() {
    converted_through_the_generated_webhook(Transport::Tower).await;
}

#[tokio::test]
async fn generated_conversions_serve_the_in_memory_server_over_tcp() {
    converted_through_the_generated_webhook(Transport::Tcp).await;
}

#[tokio::test]
#[ignore = "needs a real control plane: hack/test.sh real"]
async fn generated_conversions_serve_kube_apiserver() {
    converted_through_the_generated_webhook(Transport::Real).await;
}
