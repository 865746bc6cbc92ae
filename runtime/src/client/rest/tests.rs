use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Method, Request, Response};
use kube::client::Body;
use tower::{Layer, ServiceExt};

use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, HeaderValue::from_str(v).expect("header value"));
    }
    h
}

// SEMANTICS 12.3
#[test]
fn config_defaults_unlimited_and_the_burst_error() {
    let none = RestConfig::default().qps(-1.0).limiter().expect("valid");
    assert!(none.is_none());
    let none = RestConfig::default().unlimited().limiter().expect("valid");
    assert!(none.is_none());
    let default = RestConfig::default()
        .limiter()
        .expect("valid")
        .expect("a limiter");
    assert_eq!((default.qps(), default.burst()), (5.0, 10));
    let err = RestConfig::default()
        .qps(20.0)
        .limiter()
        .expect_err("burst 0 with qps 20");
    assert_eq!(
        err.to_string(),
        "burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0"
    );
    let given = Arc::new(TokenBucket::new(1.0, 1));
    let used = RestConfig::default()
        .qps(20.0)
        .rate_limiter(given.clone())
        .limiter()
        .expect("valid")
        .expect("the given bucket");
    assert!(Arc::ptr_eq(&given, &used));
    let layer = RestConfig::default()
        .qps(20.0)
        .burst(40)
        .layer()
        .expect("valid");
    let b = layer.limiter().expect("a limiter");
    assert_eq!((b.qps(), b.burst()), (20.0, 40));
}

// SEMANTICS 12.5
#[test]
fn which_responses_are_retried_and_the_reason_text() {
    let ra0 = headers(&[("retry-after", "0")]);
    assert_eq!(retry_after_response(1, 0, 429, &ra0), None, "maxRetries 0");

    let throttled = headers(&[
        ("retry-after", "2"),
        ("x-kubernetes-pf-flowschema-uid", "fs-1"),
    ]);
    assert_eq!(
        retry_after_response(1, 10, 429, &throttled),
        Some(Retry {
            after: Duration::from_secs(2),
            reason: r#"retries: 1, retry-after: 2s - retry-reason: due to server-side throttling, FlowSchema UID: "fs-1""#.into(),
        })
    );
    assert_eq!(
        retry_after_response(1, 10, 503, &headers(&[("retry-after", "3")])),
        Some(Retry {
            after: Duration::from_secs(3),
            reason: "retries: 1, retry-after: 3s - retry-reason: 503".into(),
        })
    );
    assert_eq!(retry_after_response(1, 10, 429, &HeaderMap::new()), None);
    let date = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]);
    assert_eq!(retry_after_response(1, 10, 503, &date), None);
    assert_eq!(
        retry_after_response(1, 10, 409, &ra0),
        None,
        "only 429 and 5xx"
    );

    let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
    let decisions: Vec<bool> = (1..=4)
        .map(|n| retry_after_error(n, 3, &Method::GET, &eof).is_some())
        .collect();
    assert_eq!(decisions, [true, true, true, false]);
    let r = retry_after_error(1, 3, &Method::GET, &eof).expect("retried");
    assert_eq!(r.after, Duration::from_secs(1));
    assert!(r.reason.starts_with(
        "retries: 1, retry-after: 1s - retry-reason: due to retryable error, error: "
    ));
    let other = std::io::Error::other("boom");
    assert!(retry_after_error(1, 3, &Method::GET, &other).is_none());
}

/// A service failing every call with an `io::Error` of `kind`, counting its calls.
fn failing(
    kind: std::io::ErrorKind,
    calls: Arc<AtomicUsize>,
) -> impl tower::Service<
    Request<Body>,
    Response = Response<Body>,
    Error = std::io::Error,
    Future = std::future::Ready<Result<Response<Body>, std::io::Error>>,
> + Clone {
    tower::service_fn(move |_req: Request<Body>| {
        calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Err(std::io::Error::from(kind)))
    })
}

// SEMANTICS 12.7
#[tokio::test(start_paused = true)]
async fn a_get_cut_short_is_retried_a_post_is_not() {
    let layer = RestConfig::default()
        .unlimited()
        .max_retries(1)
        .layer()
        .expect("valid");

    let calls = Arc::new(AtomicUsize::new(0));
    let svc = layer.layer(failing(std::io::ErrorKind::UnexpectedEof, calls.clone()));
    let req = Request::get("/api/v1/pods")
        .body(Body::empty())
        .expect("request");
    let err = svc.oneshot(req).await.expect_err("always fails");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let io = err.downcast_ref::<std::io::Error>().expect("the io error");
    assert_eq!(io.kind(), std::io::ErrorKind::UnexpectedEof);

    let calls = Arc::new(AtomicUsize::new(0));
    let svc = layer.layer(failing(std::io::ErrorKind::ConnectionReset, calls.clone()));
    let req = Request::post("/api/v1/namespaces/ns/pods")
        .body(Body::from(b"{}".to_vec()))
        .expect("request");
    svc.oneshot(req).await.expect_err("fails");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "POST is not retried");
}

#[cfg(feature = "testing")]
mod server {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde_json::json;
    use tokio::time::Instant;

    use super::*;
    use crate::client::{ListOptions, ResourceClient, WriteOptions};
    use crate::errors::{StatusDetails, StatusError};
    use crate::testing::{ApiServer, Reactor};

    fn with_retry_after(code: u16, secs: i32) -> StatusError {
        StatusError::new(code, "", format!("answer {code}")).with_details(StatusDetails {
            retry_after_seconds: Some(secs),
            ..Default::default()
        })
    }

    fn count(server: &ApiServer, verb: &str) -> usize {
        server.requests().iter().filter(|r| r.verb == verb).count()
    }

    // SEMANTICS 12.2 (second part, over the in-memory server)
    #[tokio::test(start_paused = true)]
    async fn the_default_bucket_lets_ten_through_then_one_every_200ms() {
        let server = ApiServer::new();
        let client = RestConfig::default()
            .wrap(kube::Client::new(server.service(), "default"))
            .expect("valid");
        let pods = ResourceClient::<Pod>::all(client);
        let start = Instant::now();
        let tasks: Vec<_> = (0..12)
            .map(|_| {
                let pods = pods.clone();
                tokio::spawn(async move {
                    pods.list(&ListOptions::default())
                        .await
                        .map(|_| start.elapsed())
                })
            })
            .collect();
        let mut at = Vec::new();
        for t in tasks {
            at.push(t.await.expect("task").expect("list"));
        }
        at.sort();
        let ms = |d: Duration| d.as_millis();
        assert!(at[..10].iter().all(|d| d.is_zero()), "{at:?}");
        assert!((200..=201).contains(&ms(at[10])), "{at:?}");
        assert!((400..=401).contains(&ms(at[11])), "{at:?}");
        assert_eq!(count(&server, "list"), 12);
    }

    // SEMANTICS 12.3 (one bucket across the core and apps clients of one configuration)
    #[tokio::test(start_paused = true)]
    async fn clients_of_one_configuration_share_one_bucket() {
        let server = ApiServer::new();
        let client = RestConfig::default()
            .qps(20.0)
            .burst(40)
            .wrap(kube::Client::new(server.service(), "default"))
            .expect("valid");
        let pods = ResourceClient::<Pod>::all(client.clone());
        let deployments = ResourceClient::<Deployment>::all(client);
        let start = Instant::now();
        for _ in 0..20 {
            pods.list(&ListOptions::default()).await.expect("pods");
            deployments
                .list(&ListOptions::default())
                .await
                .expect("deployments");
        }
        assert!(start.elapsed().is_zero(), "40 requests fit the burst");
        deployments
            .list(&ListOptions::default())
            .await
            .expect("41st");
        assert!(
            start.elapsed() >= Duration::from_millis(50),
            "the 41st waits for a token: {:?}",
            start.elapsed()
        );
        let unlimited = RestConfig::default()
            .unlimited()
            .wrap(kube::Client::new(server.service(), "default"))
            .expect("valid");
        let pods = ResourceClient::<Pod>::all(unlimited);
        let start = Instant::now();
        for _ in 0..100 {
            pods.list(&ListOptions::default()).await.expect("pods");
        }
        assert!(start.elapsed().is_zero(), "no limiter, no wait");
    }

    // SEMANTICS 12.4
    #[tokio::test(start_paused = true)]
    async fn a_post_is_retried_through_429_and_5xx_with_its_whole_body() {
        let server = ApiServer::new();
        for code in [429, 500, 501, 504] {
            server.react(
                Reactor::new("create", "configmaps")
                    .times(1)
                    .error(with_retry_after(code, 0)),
            );
        }
        let client = RestConfig::default()
            .unlimited()
            .wrap(kube::Client::new(server.service(), "ns"))
            .expect("valid");
        let cms = ResourceClient::<ConfigMap>::namespaced(client, "ns");
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "big", "namespace": "ns"},
            "data": {"k": "x".repeat(4000)},
        }))
        .expect("configmap");
        let created = cms
            .create(&cm, &WriteOptions::default())
            .await
            .expect("created");
        assert_eq!(created.metadata.name.as_deref(), Some("big"));
        let creates: Vec<_> = server
            .requests()
            .into_iter()
            .filter(|r| r.verb == "create")
            .collect();
        assert_eq!(creates.len(), 5);
        for r in &creates {
            let body = r.body.as_ref().expect("a body");
            assert_eq!(body["data"]["k"].as_str().map(str::len), Some(4000));
        }
    }

    // SEMANTICS 12.5 (over the server: maxRetries 0, and the wait of Retry-After)
    #[tokio::test(start_paused = true)]
    async fn retry_after_is_waited_and_max_retries_zero_sends_once() {
        let server = ApiServer::new();
        server.react(
            Reactor::new("list", "pods")
                .times(1)
                .error(StatusError::too_many_requests("slow down", 2)),
        );
        let once = RestConfig::default()
            .unlimited()
            .max_retries(0)
            .wrap(kube::Client::new(server.service(), "default"))
            .expect("valid");
        let err = ResourceClient::<Pod>::all(once)
            .list(&ListOptions::default())
            .await
            .expect_err("not retried");
        assert!(err.is_too_many_requests());
        assert_eq!(count(&server, "list"), 1);

        server.react(
            Reactor::new("list", "pods")
                .times(1)
                .error(StatusError::too_many_requests("slow down", 2)),
        );
        let client = RestConfig::default()
            .unlimited()
            .wrap(kube::Client::new(server.service(), "default"))
            .expect("valid");
        let start = Instant::now();
        ResourceClient::<Pod>::all(client)
            .list(&ListOptions::default())
            .await
            .expect("second attempt");
        assert!(
            start.elapsed() >= Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(count(&server, "list"), 3);

        server.react(
            Reactor::new("list", "pods")
                .times(1)
                .error(StatusError::new(503, "", "no Retry-After")),
        );
        let client = RestConfig::default()
            .unlimited()
            .wrap(kube::Client::new(server.service(), "default"))
            .expect("valid");
        let err = ResourceClient::<Pod>::all(client)
            .list(&ListOptions::default())
            .await
            .expect_err("not retried");
        assert!(err.is_service_unavailable());
        assert_eq!(count(&server, "list"), 4);
    }

    // SEMANTICS 12.6
    #[tokio::test(start_paused = true)]
    async fn always_throttled_means_eleven_requests_then_too_many_requests() {
        let server = ApiServer::new();
        server.react(
            Reactor::new("get", "pods").error(StatusError::too_many_requests("slow down", 1)),
        );
        let client = RestConfig::default()
            .wrap(kube::Client::new(server.service(), "default"))
            .expect("valid");
        let err = ResourceClient::<Pod>::namespaced(client, "ns")
            .get("p")
            .await
            .expect_err("throttled");
        assert!(err.is_too_many_requests(), "{err}");
        assert_eq!(err.retry_after_seconds(), Some(1));
        assert_eq!(count(&server, "get"), 11);
    }

    // SEMANTICS 12.7 (a streaming body disables retries)
    #[tokio::test(start_paused = true)]
    async fn a_streaming_body_is_sent_once() {
        let server = ApiServer::new();
        server
            .create(
                "configmaps",
                json!({"metadata": {"name": "c", "namespace": "ns"}}),
            )
            .expect("seed");
        // A response body of kube's is a streaming (not replayable) body.
        let plain = kube::Client::new(server.service(), "ns");
        let streaming = plain
            .send(
                Request::get("/api/v1/namespaces/ns/configmaps/c")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("get")
            .into_body();
        assert!(streaming.try_clone().is_none());
        server.react(
            Reactor::new("update", "configmaps")
                .error(StatusError::too_many_requests("slow down", 0)),
        );
        let client = RestConfig::default()
            .unlimited()
            .wrap(plain)
            .expect("valid");
        let res = client
            .send(
                Request::put("/api/v1/namespaces/ns/configmaps/c")
                    .header("content-type", "application/json")
                    .body(streaming)
                    .expect("request"),
            )
            .await
            .expect("a response");
        assert_eq!(res.status(), 429);
        assert_eq!(count(&server, "update"), 1);
    }
}
