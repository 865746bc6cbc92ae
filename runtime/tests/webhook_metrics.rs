//! The webhook server's metrics (features `webhook` and `prometheus`): after
//! `webhook::prometheus::register`, each review counts in
//! `controller_runtime_webhook_requests_total{webhook,code}` and
//! `controller_runtime_webhook_latency_seconds{webhook}`, and the in-flight gauge is back
//! to 0 once it is answered.

use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use kubegen_runtime::webhook::{Tls, Validation, WebhookServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn reviews_are_counted_under_controller_runtimes_names() {
    use rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls;
    let registry = prometheus::Registry::new();
    kubegen_runtime::webhook::prometheus::register(&registry).unwrap();
    let tls = Tls::self_signed(&["127.0.0.1"]).unwrap();
    let ca = tls.ca_pem().unwrap().to_owned();
    let stop = CancellationToken::new();
    let (addr, task) = WebhookServer::new()
        .validating(
            "/validate",
            |_: kube::core::admission::AdmissionRequest<kube::core::DynamicObject>| async {
                Validation::allow()
            },
        )
        .serve("127.0.0.1:0".parse().unwrap(), tls, stop.clone())
        .await
        .unwrap();

    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE", "userInfo": {}, "object": {"metadata": {"name": "c"}}}});
    for _ in 0..3 {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config.clone()))
            .connect(name, tcp)
            .await
            .unwrap();
        let (mut send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        let req = http::Request::post("/validate")
            .header("content-type", "application/json")
            .header("host", "127.0.0.1")
            .body(Full::new(bytes::Bytes::from(review.to_string())))
            .unwrap();
        let resp = send.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        resp.into_body().collect().await.unwrap();
    }

    let text = kubegen_runtime::metrics::prometheus::encode(&registry).unwrap();
    assert!(
        text.contains(
            "controller_runtime_webhook_requests_total{code=\"200\",webhook=\"/validate\"} 3"
        ),
        "{text}"
    );
    assert!(
        text.contains("controller_runtime_webhook_latency_seconds_count{webhook=\"/validate\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("controller_runtime_webhook_requests_in_flight{webhook=\"/validate\"} 0"),
        "{text}"
    );
    stop.cancel();
    task.await.unwrap();
}
