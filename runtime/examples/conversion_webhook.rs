//! A CRD with two versions converted by a conversion webhook, on the in-memory API
//! server: the program serves the webhook itself on a local port (v1 `spec.size` is v2
//! `spec.replicas`), registers the CRD with `conversion.strategy: Webhook` pointing at it,
//! writes an object at v1 and reads it back at v2.
//!
//! ```text
//! cargo run -p kubegen-runtime --example conversion_webhook --features testing
//! ```

use std::error::Error;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kubegen_runtime::testing::ApiServer;
use serde_json::{json, Value};

/// Converts every object of a ConversionReview to its desired apiVersion.
fn review(req: &Value) -> Value {
    let r = &req["request"];
    let desired = r["desiredAPIVersion"].clone();
    let converted: Vec<Value> = r["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut o| {
            let (from, to) = if desired == "example.com/v2" {
                ("size", "replicas")
            } else {
                ("replicas", "size")
            };
            if let Some(spec) = o["spec"].as_object_mut()
                && let Some(v) = spec.remove(from)
            {
                spec.insert(to.into(), v);
            }
            o["apiVersion"] = desired.clone();
            o
        })
        .collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": r["uid"], "result": {"status": "Success"}, "convertedObjects": converted}})
}

/// Serves the webhook on a free local port and returns its URL.
async fn serve_webhook() -> Result<String, Box<dyn Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/convert", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let svc = hyper::service::service_fn(
                |req: http::Request<hyper::body::Incoming>| async move {
                    let body = req.into_body().collect().await?.to_bytes();
                    let reply = review(&serde_json::from_slice(&body).unwrap_or(Value::Null));
                    println!(
                        "webhook: converted to {}",
                        reply["response"]["convertedObjects"][0]["apiVersion"]
                    );
                    Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(
                        reply.to_string(),
                    ))))
                },
            );
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc),
            );
        }
    });
    Ok(url)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let url = serve_webhook().await?;
    let server = ApiServer::new();
    let version = |name: &str, field: &str| {
        json!({"name": name, "served": true, "storage": name == "v1",
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}}})
    };
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo"},
            "versions": [version("v1", "size"), version("v2", "replicas")],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": url}, "conversionReviewVersions": ["v1"]}},
        },
    });
    server.register_crd(&crd.to_string())?;

    let client = kube::Client::new(server.service(), "default");
    let api = |v: &str| {
        let gvk = GroupVersionKind::gvk("example.com", v, "Foo");
        Api::<DynamicObject>::namespaced_with(
            client.clone(),
            "default",
            &ApiResource::from_gvk(&gvk),
        )
    };
    let mut obj = DynamicObject::new(
        "a",
        &ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Foo")),
    );
    obj.data = json!({"spec": {"size": 3}});
    api("v1").create(&PostParams::default(), &obj).await?;
    let at_v2 = api("v2").get("a").await?;
    println!(
        "read at v2: apiVersion {:?}, spec {}",
        at_v2.types.map(|t| t.api_version),
        at_v2.data["spec"]
    );
    Ok(())
}
