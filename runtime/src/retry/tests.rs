use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::client;
use crate::errors::{cause, reason, GroupResource, StatusCause, StatusDetails, StatusError};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn conflict() -> StatusError {
    StatusError::conflict(
        GroupResource {
            group: "",
            resource: "configmaps",
        },
        "c",
        StatusError::OPTIMISTIC_LOCK_MESSAGE,
    )
}

fn steps(n: i32) -> Backoff {
    Backoff {
        duration: Duration::from_millis(10),
        factor: 1.0,
        jitter: 0.0,
        steps: n,
        cap: Duration::ZERO,
    }
}

/// Runs `retry_on_conflict` over answers taken in order (the last one repeats), and
/// returns the result, the number of calls and the instants of the calls.
async fn run(
    backoff: Backoff,
    answers: Vec<Result<u32, client::Error>>,
) -> (Result<u32, client::Error>, Vec<Instant>) {
    let mut answers = answers.into_iter().peekable();
    let mut calls = Vec::new();
    let mut last: Option<Result<u32, client::Error>> = None;
    let r = retry_on_conflict(backoff, async || {
        calls.push(Instant::now());
        if let Some(a) = answers.next() {
            last = Some(match &a {
                Ok(v) => Ok(*v),
                Err(e) => Err(clone_err(e)),
            });
            return a;
        }
        match &last {
            Some(Ok(v)) => Ok(*v),
            Some(Err(e)) => Err(clone_err(e)),
            None => Ok(0),
        }
    })
    .await;
    (r, calls)
}

fn clone_err(e: &client::Error) -> client::Error {
    match e.status() {
        Some(s) => client::Error::Api(s.clone()),
        None => client::Error::Interrupted(Interrupted),
    }
}

// SEMANTICS 12.8
#[tokio::test(start_paused = true)]
async fn retry_on_conflict_counts_calls_and_returns_the_last_error() {
    let (r, calls) = run(steps(3), vec![Err(conflict().into())]).await;
    assert_eq!(calls.len(), 3);
    let err = r.expect_err("always conflicting");
    assert!(err.is_conflict());
    assert_eq!(err.status(), Some(&conflict()));

    let (r, calls) = run(steps(3), vec![Ok(7)]).await;
    assert_eq!((r.ok(), calls.len()), (Some(7), 1));

    let not_found = StatusError::not_found(
        GroupResource {
            group: "",
            resource: "configmaps",
        },
        "c",
    );
    let (r, calls) = run(steps(3), vec![Err(not_found.clone().into())]).await;
    assert_eq!(calls.len(), 1);
    assert_eq!(r.expect_err("not retried").status(), Some(&not_found));

    let (r, calls) = run(
        steps(3),
        vec![Err(conflict().into()), Err(conflict().into()), Ok(1)],
    )
    .await;
    assert_eq!((r.ok(), calls.len()), (Some(1), 3));
}

/// Each error of a sequence is a distinct value: the one returned is the last.
#[tokio::test(start_paused = true)]
async fn the_last_retriable_error_is_returned_not_the_first() {
    let mut n = 0;
    let r: Result<(), StatusError> = retry_on_conflict(steps(3), async || {
        n += 1;
        Err(StatusError::new(409, reason::CONFLICT, format!("try {n}")))
    })
    .await;
    assert_eq!(r.expect_err("conflicts").message(), "try 3");
}

impl From<Interrupted> for StatusError {
    fn from(_: Interrupted) -> Self {
        StatusError::new(500, "", "interrupted")
    }
}

// SEMANTICS 12.9
#[tokio::test(start_paused = true)]
async fn a_cancellation_error_is_returned_as_is() {
    let mut calls = 0;
    let r: Result<(), BoxError> = retry_on_conflict(DEFAULT_BACKOFF, async || {
        calls += 1;
        Err("context canceled".into())
    })
    .await;
    assert_eq!(calls, 1);
    assert_eq!(r.expect_err("cancelled").to_string(), "context canceled");
}

// SEMANTICS 12.10
#[tokio::test(start_paused = true)]
async fn default_retry_and_default_backoff_sleep_as_client_go() {
    // The delays themselves, exactly: the k-th is duration * factor^(k-1), jittered
    // into [d, 1.1 d).
    for _ in 0..200 {
        let mut b = DEFAULT_RETRY;
        for _ in 0..4 {
            let d = b.step();
            assert!(
                d >= Duration::from_millis(10) && d < Duration::from_millis(11),
                "{d:?}"
            );
        }
        let mut b = DEFAULT_BACKOFF;
        for (lo, hi) in [(10, 11), (50, 55), (250, 275)] {
            let d = b.step();
            let (lo, hi) = (Duration::from_millis(lo), Duration::from_millis(hi));
            assert!(d >= lo && d < hi, "{d:?} not in [{lo:?}, {hi:?})");
        }
    }

    // The calls and the sleeps between them, on the paused clock (whose timer has
    // millisecond ticks, so a sleep of 10.4 ms is seen as 11 ms).
    let (r, calls) = run(DEFAULT_RETRY, vec![Err(conflict().into())]).await;
    assert!(r.expect_err("conflicts").is_conflict());
    assert_eq!(calls.len(), 5);
    for w in calls.windows(2) {
        let slept = w[1] - w[0];
        assert!(
            slept >= Duration::from_millis(10) && slept <= Duration::from_millis(11),
            "{slept:?}"
        );
    }

    let (_, calls) = run(DEFAULT_BACKOFF, vec![Err(conflict().into())]).await;
    assert_eq!(calls.len(), 4);
    let bounds = [(10, 11), (50, 55), (250, 275)];
    for (w, (lo, hi)) in calls.windows(2).zip(bounds) {
        let slept = w[1] - w[0];
        assert!(
            slept >= Duration::from_millis(lo) && slept <= Duration::from_millis(hi),
            "{slept:?} not in [{lo}, {hi}] ms"
        );
    }

    for n in [0, -1] {
        let (r, calls) = run(steps(n), vec![Ok(1)]).await;
        assert!(calls.is_empty());
        let err = r.expect_err("no step");
        assert!(matches!(err, client::Error::Interrupted(_)));
        assert_eq!(err.to_string(), "timed out waiting for the condition");
    }
}

// SEMANTICS 12.11
#[tokio::test(start_paused = true)]
async fn only_what_is_conflict_accepts_is_retried() {
    let exists = StatusError::already_exists(
        GroupResource {
            group: "",
            resource: "configmaps",
        },
        "c",
    );
    let (r, calls) = run(steps(3), vec![Err(exists.into())]).await;
    assert_eq!(calls.len(), 1);
    assert!(r.expect_err("exists").is_already_exists());

    let bare = StatusError::new(409, "", "conflict without a reason");
    let (_, calls) = run(steps(3), vec![Err(bare.into())]).await;
    assert_eq!(calls.len(), 3);

    let apply = StatusError::new(409, reason::CONFLICT, "Apply failed with 1 conflict")
        .with_details(StatusDetails {
            causes: vec![StatusCause {
                reason: cause::FIELD_MANAGER_CONFLICT.into(),
                message: "conflict with \"other\"".into(),
                field: ".data.k".into(),
            }],
            ..Default::default()
        });
    let (_, calls) = run(steps(3), vec![Err(apply.into())]).await;
    assert_eq!(calls.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn wrapped_conflicts_are_seen_through_boxed_errors() {
    #[derive(Debug, thiserror::Error)]
    #[error("reconciling: {0}")]
    struct Wrapper(#[source] client::Error);

    let mut calls = 0;
    let r: Result<(), BoxError> = retry_on_conflict(steps(2), async || {
        calls += 1;
        Err(Box::new(Wrapper(conflict().into())) as BoxError)
    })
    .await;
    assert_eq!(calls, 2);
    assert!(r.is_err());
}

#[test]
fn step_follows_wait_backoff_including_the_cap() {
    let mut b = Backoff {
        duration: Duration::from_millis(100),
        factor: 2.0,
        jitter: 0.0,
        steps: 10,
        cap: Duration::from_millis(300),
    };
    assert_eq!(b.step(), Duration::from_millis(100));
    assert_eq!(b.step(), Duration::from_millis(200));
    assert_eq!(b.steps, 0, "400 ms passed the cap, which ends the steps");
    assert_eq!(b.duration, Duration::from_millis(300));
    assert_eq!(b.step(), Duration::from_millis(300));
    assert_eq!(b.step(), Duration::from_millis(300));

    let mut flat = Backoff { factor: 0.0, ..b };
    flat.steps = 2;
    assert_eq!(flat.step(), Duration::from_millis(300));
    assert_eq!(flat.steps, 1);
}

/// With a cap, `on_error` stops calling once a step reaches it, as
/// `wait.ExponentialBackoff` does: steps 10, but the second step passes the cap and sets
/// the steps to 0, so after that sleep no third call is made.
#[tokio::test(start_paused = true)]
async fn on_error_stops_when_the_cap_ends_the_steps() {
    let b = Backoff {
        duration: Duration::from_millis(100),
        factor: 2.0,
        jitter: 0.0,
        steps: 10,
        cap: Duration::from_millis(300),
    };
    let (r, calls) = run(b, vec![Err(conflict().into())]).await;
    assert!(r.is_err());
    assert_eq!(calls.len(), 2);
}

#[test]
fn client_error_classifiers_follow_the_status() {
    let e: client::Error = StatusError::new(410, reason::EXPIRED, "too old").into();
    assert!(e.is_resource_expired() && !e.is_gone());
    let e: client::Error = StatusError::new(410, "", "gone").into();
    assert!(e.is_gone() && !e.is_resource_expired());
    let e: client::Error = StatusError::new(409, reason::ALREADY_EXISTS, "x").into();
    assert!(e.is_already_exists() && !e.is_conflict());
    let e: client::Error = StatusError::new(500, reason::SERVER_TIMEOUT, "x").into();
    assert!(e.is_server_timeout() && !e.is_internal_error());
    let e: client::Error = StatusError::new(500, "Weird", "x").into();
    assert!(e.is_internal_error() && !e.is_server_timeout());
    let e: client::Error = StatusError::new(429, reason::SERVICE_UNAVAILABLE, "x").into();
    assert!(e.is_too_many_requests() && e.is_service_unavailable());
    let e: client::Error = StatusError::too_many_requests("slow", 3).into();
    assert_eq!(e.retry_after_seconds(), Some(3));
    type Classifier = fn(&client::Error) -> bool;
    let table: [(u16, Classifier); 8] = [
        (400, client::Error::is_bad_request),
        (401, client::Error::is_unauthorized),
        (403, client::Error::is_forbidden),
        (404, client::Error::is_not_found),
        (422, client::Error::is_invalid),
        (503, client::Error::is_service_unavailable),
        (504, client::Error::is_timeout),
        (405, client::Error::is_method_not_supported),
    ];
    for (code, pred) in table {
        let e: client::Error = StatusError::new(code, "", "unknown reason").into();
        assert!(pred(&e), "{code}");
        let e: client::Error = StatusError::new(code, reason::CONFLICT, "known reason").into();
        assert!(!pred(&e), "{code} with reason Conflict");
    }
    let transport = client::Error::Interrupted(Interrupted);
    assert!(!transport.is_not_found() && !transport.is_conflict());
}

/// A real conflicting writer: between this closure's read and its update, another
/// client updates the object, so the first update is a 409 from the server; the retry
/// reads again and keeps both writes.
#[cfg(feature = "testing")]
#[tokio::test(start_paused = true)]
async fn retry_on_conflict_against_the_server_with_a_concurrent_writer() {
    use k8s_openapi::api::core::v1::ConfigMap;

    use crate::client::{ResourceClient, WriteOptions};
    use crate::testing::ApiServer;

    let server = ApiServer::new();
    server
        .create(
            "configmaps",
            serde_json::json!({"metadata": {"name": "c", "namespace": "ns"}}),
        )
        .expect("seed");
    let mine =
        ResourceClient::<ConfigMap>::namespaced(kube::Client::new(server.service(), "ns"), "ns");
    let theirs = mine.clone();
    let mut calls = 0;
    let updated = retry_on_conflict(DEFAULT_RETRY, async || {
        calls += 1;
        let mut cm = mine.get("c").await?;
        if calls == 1 {
            let mut other = theirs.get("c").await?;
            other
                .data
                .get_or_insert_default()
                .insert("theirs".into(), "1".into());
            theirs.update(&other, &WriteOptions::default()).await?;
        }
        cm.data
            .get_or_insert_default()
            .insert("mine".into(), calls.to_string());
        mine.update(&cm, &WriteOptions::default()).await
    })
    .await
    .expect("the second try wins");
    assert_eq!(calls, 2);
    let data = updated.data.expect("data");
    assert_eq!(data.get("theirs").map(String::as_str), Some("1"));
    assert_eq!(data.get("mine").map(String::as_str), Some("2"));
    let updates = server
        .requests()
        .into_iter()
        .filter(|r| r.verb == "update")
        .count();
    assert_eq!(updates, 3, "theirs, my conflicting one, my retry");
}
