//! The in-memory API server's request handling, through its tower service
//! (`kubegen_runtime::testing::ApiServer::service`).
//!
//! The input is text, so the corpus is readable and crashes are easy to replay: up to
//! eight requests separated by lines `===`, each an HTTP-like head and a body:
//!
//! ```text
//! PATCH /api/v1/namespaces/default/configmaps/a?fieldManager=x
//! Content-Type: application/merge-patch+json
//! Accept: application/json;as=Table;g=meta.k8s.io;v=v1
//!
//! {"data":{"k":"v"}}
//! ```
//!
//! A request whose target is not a valid URI is skipped (the `http` crate rejects it
//! before any server could see it).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use kubegen_runtime::testing::{ApiServer, ApiService};
use tower::Service;

/// A custom resource served from the start, so requests reach the CRD code paths
/// without first having to create a CRD.
const GIZMO_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [gz]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 0, default: 1}
              tags: {type: array, items: {type: string}, x-kubernetes-list-type: set}
              mode: {type: string, enum: [a, b]}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

/// Lists that must keep answering 200 with JSON after any sequence of requests: a write
/// that stores what the kind's schema cannot decode would break them.
const LISTS: &[&str] = &[
    "/api/v1/configmaps",
    "/api/v1/pods",
    "/api/v1/namespaces",
    "/apis/apps/v1/deployments",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
];

/// How long (on the paused clock) a response may take before it counts as a hang.
const STALL: Duration = Duration::from_secs(120);

/// Properties: no panic; no request stalls (on a paused clock, so the server's own
/// timers cost no real time) except a watch's body, which is read until it idles; an
/// error response in JSON is a `Status` whose `code` is the HTTP status; no 500 (bad
/// input is the client's error); the built-in lists and the CRD list answer 200 with
/// JSON after the sequence.
pub fn apiserver(data: &[u8]) {
    let requests = parse(data);
    if requests.is_empty() {
        return;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
    {
        Ok(r) => r,
        Err(e) => panic!("cannot build a tokio runtime: {e}"),
    };
    runtime.block_on(async {
        let server = ApiServer::new();
        if let Err(e) = server.register_crd(GIZMO_CRD) {
            panic!("the fuzz target's own CRD is rejected: {e}");
        }
        let mut service = server.service();
        for r in requests {
            send(&mut service, r).await;
        }
        for path in LISTS {
            let req = Request {
                method: "GET".to_owned(),
                target: (*path).to_owned(),
                headers: Vec::new(),
                body: Vec::new(),
            };
            let (status, body) = send(&mut service, req)
                .await
                .unwrap_or_else(|| panic!("GET {path} is not a valid request"));
            assert_eq!(
                status,
                200,
                "GET {path} after the sequence: {}",
                lossy(&body)
            );
            if let Err(e) = serde_json::from_slice::<serde_json::Value>(&body) {
                panic!(
                    "GET {path} after the sequence is not JSON ({e}): {}",
                    lossy(&body)
                );
            }
        }
        server.shutdown();
    });
}

/// One request of the input.
#[derive(Debug)]
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn parse(data: &[u8]) -> Vec<Request> {
    split(data, b"\n===\n")
        .into_iter()
        .take(8)
        .filter_map(parse_one)
        .collect()
}

fn parse_one(part: &[u8]) -> Option<Request> {
    let (head, body) = match find(part, b"\n\n") {
        Some(i) => (&part[..i], &part[i + 2..]),
        None => (part, &[][..]),
    };
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.lines();
    let (method, target) = lines.next()?.split_once(' ')?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Some(Request {
        method: method.to_owned(),
        target: target.trim().to_owned(),
        headers,
        body: body.to_vec(),
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn split<'a>(mut data: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    while let Some(i) = find(data, sep) {
        out.push(&data[..i]);
        data = &data[i + sep.len()..];
    }
    out.push(data);
    out
}

/// Whether a body could make the server call out (a conversion webhook URL): this
/// workplace allows traffic to loopback only, so such bodies are not sent. Escapes are
/// refused too, since they could spell the same words.
fn may_call_out(body: &[u8]) -> bool {
    let lower = body.to_ascii_lowercase();
    find(&lower, b"webhook").is_some()
        || find(&lower, b"http").is_some()
        || find(&lower, b"\\u").is_some()
        || find(&lower, b"\\x").is_some()
}

fn is_watch(target: &str) -> bool {
    target.contains("/watch/")
        || target.contains("watch=true")
        || target.contains("watch=1")
        || target.contains("watch=True")
        || target.contains("watch=t")
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(2000)]).into_owned()
}

/// Sends one request; returns its status and (bounded) body, or `None` when the request
/// is not one the `http` crate can build.
async fn send(service: &mut ApiService, r: Request) -> Option<(u16, Vec<u8>)> {
    if may_call_out(&r.body) {
        return None;
    }
    let mut builder = http::Request::builder()
        .method(r.method.as_str())
        .uri(r.target.as_str());
    for (k, v) in &r.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let req = builder.body(Full::new(Bytes::from(r.body))).ok()?;
    let method = req.method().clone();
    let what = format!("{} {}", r.method, r.target);
    // The service is always ready (its `poll_ready` answers at once).
    let resp = match tokio::time::timeout(STALL, service.call(req)).await {
        Err(_) => panic!("{what}: no response within {STALL:?}"),
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => match e {},
    };
    let status = resp.status().as_u16();
    let json = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let watch = is_watch(&r.target) && status == 200;
    let mut body = resp.into_body();
    let mut bytes = Vec::new();
    loop {
        let idle = if watch { Duration::from_secs(1) } else { STALL };
        match tokio::time::timeout(idle, body.frame()).await {
            Err(_) if watch => break,
            Err(_) => panic!(
                "{what}: the response body stalled after {} bytes",
                bytes.len()
            ),
            Ok(None) => break,
            Ok(Some(Err(e))) => panic!("{what}: the response body failed: {e}"),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
                if bytes.len() > 8 << 20 {
                    break;
                }
            }
        }
    }
    assert_ne!(status, 500, "{what}: 500 for a request: {}", lossy(&bytes));
    if status >= 400 && json && method != http::Method::HEAD {
        let st: serde_json::Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{what}: {status} with a body that is not JSON ({e})"));
        assert_eq!(
            st["kind"], "Status",
            "{what}: {status} without a Status: {st}"
        );
        assert_eq!(
            st["code"], status,
            "{what}: {status} with a Status of another code: {st}"
        );
        let message = st["message"].as_str().unwrap_or_default();
        assert!(
            !message.is_empty(),
            "{what}: {status} with an empty message: {st}"
        );
    }
    Some((status, bytes))
}
