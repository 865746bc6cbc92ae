use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::*;
use crate::client::{self, Bookmark, ObjectList};
use crate::errors::{reason, StatusDetails};

fn pod(rv: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(format!("p{rv}"));
    p.metadata.namespace = Some("ns".into());
    p.metadata.resource_version = Some(rv.into());
    p
}

fn added(rv: &str) -> WatchEvent<Pod> {
    WatchEvent::Added(pod(rv))
}

fn rv_of(e: &WatchEvent<Pod>) -> String {
    match e {
        WatchEvent::Added(p) | WatchEvent::Modified(p) | WatchEvent::Deleted(p) => {
            p.metadata.resource_version.clone().unwrap_or_default()
        }
        WatchEvent::Bookmark(b) => format!("bookmark {}", b.resource_version),
        WatchEvent::Error(s) => format!("error {}", s.code()),
    }
}

/// What one WATCH call answers.
enum Answer {
    /// The call fails.
    Fail(client::Error),
    /// A stream of these events, then the end (`close`) or nothing more.
    Events(Vec<WatchEvent<Pod>>, bool),
}

/// A ListerWatcher answering WATCH calls from a script (then with silent streams),
/// recording each call's options and instant.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Answer>>,
    calls: Mutex<Vec<(ListOptions, Instant)>>,
}

impl Scripted {
    fn new(answers: Vec<Answer>) -> Arc<Self> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.into()),
            calls: Mutex::new(Vec::new()),
        })
    }

    fn calls(&self) -> Vec<(ListOptions, Instant)> {
        self.calls.lock().clone()
    }

    fn watch_rvs(&self) -> Vec<String> {
        self.calls()
            .iter()
            .map(|(o, _)| o.resource_version.clone().unwrap_or_default())
            .collect()
    }
}

impl ListerWatcher<Pod> for Scripted {
    fn list(
        &self,
        _opts: ListOptions,
    ) -> BoxFuture<'static, Result<ObjectList<Pod>, client::Error>> {
        futures::future::pending().boxed()
    }

    fn watch(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<BoxStream<'static, WatchEvent<Pod>>, client::Error>> {
        self.calls.lock().push((opts, Instant::now()));
        let answer = self.answers.lock().pop_front();
        let result = match answer {
            Some(Answer::Fail(e)) => Err(e),
            Some(Answer::Events(events, true)) => Ok(futures::stream::iter(events).boxed()),
            Some(Answer::Events(events, false)) => Ok(futures::stream::iter(events)
                .chain(futures::stream::pending())
                .boxed()),
            None => Ok(futures::stream::pending().boxed()),
        };
        async move { result }.boxed()
    }
}

/// Reads `n` events, with a generous deadline on the paused clock.
async fn take(w: &mut RetryWatcher<Pod>, n: usize) -> Vec<WatchEvent<Pod>> {
    let mut out = Vec::new();
    for _ in 0..n {
        match tokio::time::timeout(Duration::from_secs(600), w.next()).await {
            Ok(Some(e)) => out.push(e),
            Ok(None) => break,
            Err(_) => panic!(
                "no event within 600 s; got {:?}",
                out.iter().map(rv_of).collect::<Vec<_>>()
            ),
        }
    }
    out
}

/// Whether the watcher's stream ends (rather than staying silent) within 600 s.
async fn ends(w: &mut RetryWatcher<Pod>) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(600), w.next()).await,
        Ok(None)
    )
}

async fn settle_calls(lw: &Scripted, n: usize) {
    for _ in 0..1000 {
        if lw.calls().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{n} watch calls never happened: {:?}", lw.watch_rvs());
}

fn watcher(rv: &str, lw: &Arc<Scripted>) -> RetryWatcher<Pod> {
    RetryWatcher::new(rv, lw.clone(), ListOptions::default()).expect("a valid RV")
}

// SEMANTICS 12.12
#[tokio::test]
async fn empty_and_zero_resource_versions_are_refused() {
    let lw = Scripted::new(vec![]);
    for rv in ["", "0"] {
        let err =
            RetryWatcher::<Pod>::new(rv, lw.clone(), ListOptions::default()).expect_err("refused");
        assert_eq!(
            err.to_string(),
            format!("initial RV {rv:?} is not supported due to issues with underlying WATCH")
        );
    }
    assert!(lw.calls().is_empty());
}

// SEMANTICS 12.13
#[tokio::test(start_paused = true)]
async fn closed_watches_resume_from_the_last_resource_version() {
    let lw = Scripted::new(vec![
        Answer::Events(vec![added("5")], true),
        Answer::Events(vec![added("6")], true),
    ]);
    let mut w = watcher("4", &lw);
    let got: Vec<String> = take(&mut w, 2).await.iter().map(rv_of).collect();
    assert_eq!(got, ["5", "6"]);
    settle_calls(&lw, 3).await;
    assert_eq!(lw.watch_rvs(), ["4", "5", "6"]);
    assert!(lw.calls().iter().all(|(o, _)| o.allow_watch_bookmarks));
    let starts: Vec<Instant> = lw.calls().iter().map(|(_, at)| *at).collect();
    for pair in starts.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_secs(1),
            "watches start 1 s apart"
        );
    }

    let lw = Scripted::new(vec![
        Answer::Events(vec![added("2"), added("5")], true),
        Answer::Events(vec![added("6"), added("7")], true),
        Answer::Events(vec![added("11")], false),
    ]);
    let mut w = watcher("1", &lw);
    let got: Vec<String> = take(&mut w, 5).await.iter().map(rv_of).collect();
    assert_eq!(got, ["2", "5", "6", "7", "11"]);
    assert_eq!(lw.watch_rvs(), ["1", "5", "7"]);
}

// SEMANTICS 12.14
#[tokio::test(start_paused = true)]
async fn a_410_event_is_passed_on_and_ends_the_watcher() {
    let lw = Scripted::new(vec![Answer::Events(
        vec![
            added("6"),
            WatchEvent::Error(StatusError::gone("too old resource version: 5 (6)")),
            added("7"),
            added("8"),
        ],
        false,
    )]);
    let mut w = watcher("5", &lw);
    let got: Vec<String> = take(&mut w, 3).await.iter().map(rv_of).collect();
    assert_eq!(
        got,
        ["6", "error 410"],
        "nothing after the 410, and the stream ended"
    );
    w.done().await;
    assert_eq!(lw.calls().len(), 1);
}

// SEMANTICS 12.15
#[tokio::test(start_paused = true)]
async fn error_events_and_failed_calls_are_retried() {
    for code in [504, 500, 666] {
        let lw = Scripted::new(vec![
            Answer::Events(
                vec![
                    added("6"),
                    WatchEvent::Error(StatusError::new(code, "", "transient")),
                    added("never"),
                ],
                false,
            ),
            Answer::Events(vec![added("7")], false),
        ]);
        let mut w = watcher("5", &lw);
        let got: Vec<String> = take(&mut w, 2).await.iter().map(rv_of).collect();
        assert_eq!(got, ["6", "7"], "code {code}");
        assert_eq!(lw.watch_rvs(), ["5", "6"], "code {code}");
    }

    let slow = StatusError::new(500, reason::INTERNAL_ERROR, "busy").with_details(StatusDetails {
        retry_after_seconds: Some(3),
        ..Default::default()
    });
    let lw = Scripted::new(vec![
        Answer::Events(vec![WatchEvent::Error(slow)], false),
        Answer::Events(vec![added("7")], false),
    ]);
    let mut w = watcher("5", &lw);
    take(&mut w, 1).await;
    let calls = lw.calls();
    assert!(
        calls[1].1 - calls[0].1 >= Duration::from_secs(3),
        "retryAfterSeconds waited"
    );

    let failures: Vec<client::Error> = vec![
        StatusError::new(500, "", "plain failure").into(),
        StatusError::expired("too old resource version").into(),
        client::Error::Decode(serde::de::Error::custom("cut short")),
    ];
    for failure in failures {
        let text = failure.to_string();
        let lw = Scripted::new(vec![
            Answer::Fail(failure),
            Answer::Events(vec![added("6")], false),
        ]);
        let mut w = watcher("5", &lw);
        let got: Vec<String> = take(&mut w, 1).await.iter().map(rv_of).collect();
        assert_eq!(got, ["6"], "recovers from {text}");
        assert_eq!(lw.watch_rvs(), ["5", "5"]);
    }
}

// SEMANTICS 12.16
#[tokio::test(start_paused = true)]
async fn forbidden_and_unauthorized_calls_end_the_watcher_with_one_error() {
    for code in [403, 401] {
        let status = StatusError::new(code, "", "no");
        let lw = Scripted::new(vec![Answer::Fail(status.clone().into())]);
        let mut w = watcher("5", &lw);
        let got = take(&mut w, 2).await;
        assert_eq!(got, [WatchEvent::Error(status)], "code {code}");
        assert_eq!(lw.calls().len(), 1);
    }
}

// SEMANTICS 12.17 (bookmarks; unknown event types are NA, see docs/SEMANTICS-NA.md)
#[tokio::test(start_paused = true)]
async fn bookmarks_move_the_resource_version_and_are_not_passed_on() {
    let lw = Scripted::new(vec![
        Answer::Events(
            vec![WatchEvent::Bookmark(Bookmark {
                resource_version: "10".into(),
                ..Default::default()
            })],
            true,
        ),
        Answer::Events(vec![added("11")], false),
    ]);
    let mut w = watcher("5", &lw);
    let got: Vec<String> = take(&mut w, 1).await.iter().map(rv_of).collect();
    assert_eq!(got, ["11"]);
    assert_eq!(lw.watch_rvs(), ["5", "10"]);
}

#[tokio::test(start_paused = true)]
async fn an_object_without_resource_version_ends_the_watcher_with_an_internal_error() {
    let lw = Scripted::new(vec![Answer::Events(vec![added("")], false)]);
    let mut w = watcher("5", &lw);
    let got = take(&mut w, 2).await;
    assert_eq!(got.len(), 1);
    let WatchEvent::Error(status) = &got[0] else {
        panic!(
            "not an error: {:?}",
            got.iter().map(rv_of).collect::<Vec<_>>()
        );
    };
    assert!(
        status.is_internal_error() && status.code() == 500,
        "{status}"
    );
}

#[tokio::test(start_paused = true)]
async fn stop_ends_the_stream() {
    let lw = Scripted::new(vec![]);
    let mut w = watcher("5", &lw);
    w.stop();
    w.done().await;
    assert!(ends(&mut w).await);
}

// SEMANTICS 12.18
#[tokio::test(start_paused = true)]
async fn until_without_retry_satisfies_conditions_in_order() {
    fn is_added() -> Condition<Pod> {
        Box::new(|e| Ok(matches!(e, WatchEvent::Added(_))))
    }
    fn is_modified() -> Condition<Pod> {
        Box::new(|e| Ok(matches!(e, WatchEvent::Modified(_))))
    }
    fn is_deleted() -> Condition<Pod> {
        Box::new(|e| Ok(matches!(e, WatchEvent::Deleted(_))))
    }
    let events = futures::stream::iter([added("1"), WatchEvent::Modified(pod("2"))]);
    let last = until_without_retry(
        std::future::pending(),
        events,
        vec![is_added(), is_modified()],
    )
    .await
    .expect("satisfied");
    assert_eq!(last, Some(WatchEvent::Modified(pod("2"))));

    let events = futures::stream::iter([added("1")]).chain(futures::stream::pending());
    let err = until_without_retry(
        tokio::time::sleep(Duration::from_millis(10)),
        events,
        vec![is_added(), is_added(), is_deleted()],
    )
    .await
    .expect_err("times out");
    assert!(matches!(err, UntilError::Interrupted { .. }), "{err}");
    assert_eq!(err.to_string(), "timed out waiting for the condition");
    assert_eq!(err.last_event(), Some(&added("1")));

    let events = futures::stream::iter([added("1")]);
    let bad: Condition<Pod> = Box::new(|_| Err("something bad".into()));
    let err = until_without_retry(std::future::pending(), events, vec![bad])
        .await
        .expect_err("fails");
    assert!(err.to_string().contains("something bad"));
    assert_eq!(err.last_event(), Some(&added("1")));

    let events = futures::stream::iter([added("1")]);
    let err = until_without_retry(std::future::pending(), events, vec![is_modified()])
        .await
        .expect_err("closed");
    assert_eq!(
        err.to_string(),
        "watch closed before UntilWithoutRetry timeout"
    );
}

#[cfg(feature = "testing")]
mod server {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use serde_json::json;

    use super::*;
    use crate::client::ResourceClient;
    use crate::testing::{ApiServer, Reactor};

    fn cm(name: &str) -> serde_json::Value {
        json!({"metadata": {"name": name, "namespace": "ns"}})
    }

    async fn next_cm(w: &mut RetryWatcher<ConfigMap>) -> WatchEvent<ConfigMap> {
        tokio::time::timeout(Duration::from_secs(600), w.next())
            .await
            .expect("an event within 600 s")
            .expect("the watcher goes on")
    }

    fn watch_queries(server: &ApiServer) -> Vec<String> {
        server
            .requests()
            .into_iter()
            .filter(|r| r.verb == "watch")
            .map(|r| r.query)
            .collect()
    }

    /// A dropped connection is resumed from the last resourceVersion: nothing is lost and
    /// nothing is repeated.
    #[tokio::test(start_paused = true)]
    async fn dropped_watches_resume_over_the_server() {
        let server = ApiServer::new();
        let start = server.resource_version().to_string();
        let cms = ResourceClient::<ConfigMap>::all(kube::Client::new(server.service(), "default"));
        let mut w =
            RetryWatcher::new(&start, Arc::new(cms), ListOptions::default()).expect("valid RV");
        let a = server.create("configmaps", cm("a")).expect("a");
        let first = next_cm(&mut w).await;
        assert!(matches!(&first, WatchEvent::Added(c) if c.metadata.name.as_deref() == Some("a")));
        server.drop_watches();
        // The body's end reaches the watcher asynchronously: wait for its second watch,
        // so that "b" comes on it and not on the first one.
        for _ in 0..600 {
            if watch_queries(&server).len() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        server.create("configmaps", cm("b")).expect("b");
        let second = next_cm(&mut w).await;
        assert!(matches!(&second, WatchEvent::Added(c) if c.metadata.name.as_deref() == Some("b")));
        let queries = watch_queries(&server);
        assert_eq!(queries.len(), 2, "{queries:?}");
        let a_rv = a["metadata"]["resourceVersion"].as_str().expect("rv");
        assert!(
            queries[1].contains(&format!("resourceVersion={a_rv}")),
            "{queries:?}"
        );
        assert!(queries
            .iter()
            .all(|q| q.contains("allowWatchBookmarks=true")));
    }

    /// A forced 410 reaches the consumer and ends the watcher (SEMANTICS 12.14 over the
    /// server).
    #[tokio::test(start_paused = true)]
    async fn a_forced_410_ends_the_watcher_over_the_server() {
        let server = ApiServer::new();
        server.create("configmaps", cm("a")).expect("a");
        let rv = server.resource_version().to_string();
        server.expire_next_watch();
        let cms = ResourceClient::<ConfigMap>::all(kube::Client::new(server.service(), "default"));
        let mut w = RetryWatcher::new(&rv, Arc::new(cms), ListOptions::default()).expect("valid");
        let event = next_cm(&mut w).await;
        assert!(
            matches!(&event, WatchEvent::Error(s) if s.code() == 410),
            "{event:?}"
        );
        assert!(tokio::time::timeout(Duration::from_secs(600), w.next())
            .await
            .expect("ends")
            .is_none());
        assert_eq!(watch_queries(&server).len(), 1);
    }

    // SEMANTICS 12.16 over the server
    #[tokio::test(start_paused = true)]
    async fn a_forbidden_watch_over_the_server_is_one_error() {
        let server = ApiServer::new();
        server.react(Reactor::new("watch", "configmaps").error(StatusError::new(
            403,
            reason::FORBIDDEN,
            "configmaps is forbidden",
        )));
        let cms = ResourceClient::<ConfigMap>::all(kube::Client::new(server.service(), "default"));
        let mut w = RetryWatcher::new("1", Arc::new(cms), ListOptions::default()).expect("valid");
        let event = next_cm(&mut w).await;
        assert!(
            matches!(&event, WatchEvent::Error(s) if s.is_forbidden()),
            "{event:?}"
        );
        assert!(w.next().await.is_none());
    }

    // SEMANTICS 12.19
    // On the real clock: informer handlers run on threads of their own, which a paused
    // clock does not wait for (it would jump past the stop deadline).
    #[tokio::test]
    async fn until_with_sync_waits_for_sync_runs_the_precondition_and_the_conditions() {
        fn secrets(server: &ApiServer) -> Arc<dyn ListerWatcher<Secret>> {
            Arc::new(ResourceClient::<Secret>::all(kube::Client::new(
                server.service(),
                "default",
            )))
        }
        fn is_added() -> Condition<Secret> {
            Box::new(|e| Ok(matches!(e, WatchEvent::Added(_))))
        }

        let silent = ApiServer::new();
        // Neither the LIST nor the WatchList client's streaming watch is ever answered.
        silent.react(Reactor::new("list", "secrets").delay(Duration::from_secs(3600)));
        silent.react(Reactor::new("watch", "secrets").delay(Duration::from_secs(3600)));
        let err = until_with_sync(
            tokio::time::sleep(Duration::from_millis(500)),
            secrets(&silent),
            None,
            vec![is_added()],
        )
        .await
        .expect_err("no event");
        assert!(
            matches!(err, UntilError::Interrupted { last: None }),
            "{err}"
        );
        let never: Precondition<Secret> = Box::new(|_| Ok(true));
        let err = until_with_sync(
            tokio::time::sleep(Duration::from_millis(500)),
            secrets(&silent),
            Some(never),
            vec![is_added()],
        )
        .await
        .expect_err("never synced");
        assert!(matches!(err, UntilError::Sync), "{err}");
        assert!(err
            .to_string()
            .starts_with("UntilWithSync: unable to sync caches: "));

        let server = ApiServer::new();
        server
            .create(
                "secrets",
                json!({"metadata": {"name": "first", "namespace": "ns"}}),
            )
            .expect("seed");
        let has_first: Precondition<Secret> =
            Box::new(|store| Ok(store.get_by_key("ns/first").is_some()));
        let done = until_with_sync(
            std::future::pending(),
            secrets(&server),
            Some(has_first),
            vec![is_added()],
        )
        .await
        .expect("precondition true");
        assert!(done.is_none());

        let no: Precondition<Secret> = Box::new(|_| Ok(false));
        let event = until_with_sync(
            tokio::time::sleep(Duration::from_secs(60)),
            secrets(&server),
            Some(no),
            vec![is_added()],
        )
        .await
        .expect("added")
        .expect("an event");
        assert!(
            matches!(&event, WatchEvent::Added(s) if s.metadata.name.as_deref() == Some("first")),
            "{event:?}"
        );
    }
}
