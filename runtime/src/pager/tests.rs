use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;

use super::*;
use crate::client::{ResourceVersionMatch, WatchEvent};
use crate::errors::StatusError;

/// A collection of `n` pods at resourceVersion "rv:20", paged by `limit` with continue
/// tokens "rv:20:<offset>"; request number `expire_at` (0-based) fails with 410 Expired.
struct Pages {
    n: usize,
    expire_at: Option<usize>,
    requests: Mutex<Vec<ListOptions>>,
}

impl Pages {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Pages {
            n,
            expire_at: None,
            requests: Mutex::new(Vec::new()),
        })
    }

    fn expiring(n: usize, at: usize) -> Arc<Self> {
        Arc::new(Pages {
            n,
            expire_at: Some(at),
            requests: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<ListOptions> {
        self.requests.lock().clone()
    }
}

fn pod(i: usize) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(format!("p{i}"));
    p
}

impl ListerWatcher<Pod> for Pages {
    fn list(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<ObjectList<Pod>, client::Error>> {
        let index = {
            let mut r = self.requests.lock();
            r.push(opts.clone());
            r.len() - 1
        };
        let result = if self.expire_at == Some(index) {
            Err(StatusError::expired("The provided continue parameter is too old").into())
        } else {
            let start = opts
                .continue_token
                .as_deref()
                .and_then(|t| t.rsplit(':').next())
                .and_then(|o| o.parse::<usize>().ok())
                .unwrap_or(0);
            let end = match opts.limit {
                Some(l) if l > 0 => (start + l as usize).min(self.n),
                _ => self.n,
            };
            Ok(ObjectList {
                items: (start..end).map(pod).collect(),
                resource_version: "rv:20".into(),
                continue_token: (end < self.n).then(|| format!("rv:20:{end}")),
                remaining_item_count: None,
            })
        };
        async move { result }.boxed()
    }

    fn watch(
        &self,
        _opts: ListOptions,
    ) -> BoxFuture<'static, Result<BoxStream<'static, WatchEvent<Pod>>, client::Error>> {
        futures::future::pending().boxed()
    }
}

fn pager(pages: &Arc<Pages>) -> ListPager<Pod> {
    ListPager::new(Arc::clone(pages) as Arc<dyn ListerWatcher<Pod>>).page_size(10)
}

// SEMANTICS 12.20
#[tokio::test]
async fn list_joins_pages_and_keeps_the_first_resource_version() {
    for (n, paginated, requests) in [
        (0, false, 1),
        (9, false, 1),
        (10, false, 1),
        (11, true, 2),
        (21, true, 3),
    ] {
        let pages = Pages::new(n);
        let (list, p) = pager(&pages)
            .list(&CancellationToken::new(), ListOptions::default())
            .await
            .expect("listed");
        assert_eq!(list.items.len(), n);
        assert_eq!(list.resource_version, "rv:20");
        assert!(list.continue_token.is_none());
        assert_eq!(p, paginated, "{n} items");
        let reqs = pages.requests();
        assert_eq!(reqs.len(), requests, "{n} items");
        assert!(reqs.iter().all(|o| o.limit == Some(10)));
    }
}

// SEMANTICS 12.21
#[tokio::test]
async fn continuations_clear_resource_version_and_match_and_keep_the_rest() {
    let pages = Pages::new(11);
    let opts = ListOptions::default()
        .resource_version("rv:10")
        .resource_version_match(ResourceVersionMatch::NotOlderThan)
        .labels("app=web");
    pager(&pages)
        .list(&CancellationToken::new(), opts)
        .await
        .expect("listed");
    let reqs = pages.requests();
    assert_eq!(reqs[0].resource_version.as_deref(), Some("rv:10"));
    assert_eq!(
        reqs[0].resource_version_match,
        Some(ResourceVersionMatch::NotOlderThan)
    );
    assert_eq!(reqs[0].continue_token, None);
    assert_eq!(reqs[1].continue_token.as_deref(), Some("rv:20:10"));
    assert_eq!(reqs[1].resource_version, None);
    assert_eq!(reqs[1].resource_version_match, None);
    assert_eq!(reqs[1].limit, Some(10));
    assert_eq!(reqs[1].label_selector.as_deref(), Some("app=web"));
}

// SEMANTICS 12.22
#[tokio::test]
async fn an_expired_continuation_falls_back_to_one_full_list() {
    let pages = Pages::expiring(21, 1);
    let err = pager(&pages)
        .full_list_if_expired(false)
        .list(&CancellationToken::new(), ListOptions::default())
        .await
        .expect_err("expired");
    assert!(
        matches!(&err, PagerError::List(e) if e.is_resource_expired()),
        "{err}"
    );

    let pages = Pages::expiring(21, 1);
    let opts = ListOptions::default().resource_version("rv:5");
    let (list, paginated) = pager(&pages)
        .list(&CancellationToken::new(), opts)
        .await
        .expect("full list");
    assert_eq!((list.items.len(), paginated), (21, true));
    let reqs = pages.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[2].limit, None);
    assert_eq!(reqs[2].continue_token, None);
    assert_eq!(reqs[2].resource_version.as_deref(), Some("rv:5"));

    let pages = Pages::new(3);
    ListPager::new(Arc::clone(&pages) as Arc<dyn ListerWatcher<Pod>>)
        .list(&CancellationToken::new(), ListOptions::default())
        .await
        .expect("listed");
    assert_eq!(pages.requests()[0].limit, Some(DEFAULT_PAGE_SIZE));
    assert_eq!(DEFAULT_PAGE_SIZE, 500);
}

// SEMANTICS 12.23
#[tokio::test]
async fn each_list_item_visits_in_order_and_stops_on_errors() {
    let pages = Pages::new(51);
    let mut seen = Vec::new();
    pager(&pages)
        .each_list_item(
            &CancellationToken::new(),
            ListOptions::default(),
            |p: Pod| {
                seen.push(p.metadata.name.unwrap_or_default());
                Ok::<_, String>(())
            },
        )
        .await
        .expect("all items");
    assert_eq!(seen, (0..51).map(|i| format!("p{i}")).collect::<Vec<_>>());

    let mut visited = 0;
    let err = pager(&Pages::new(51))
        .each_list_item(&CancellationToken::new(), ListOptions::default(), |_| {
            visited += 1;
            if visited == 3 {
                Err("stop at 3")
            } else {
                Ok(())
            }
        })
        .await
        .expect_err("fn failed");
    assert_eq!(visited, 3);
    assert!(matches!(err, PagerError::Item("stop at 3")));

    let cancel = CancellationToken::new();
    let mut visited = 0;
    let err = pager(&Pages::new(51))
        .each_list_item(&cancel, ListOptions::default(), |_| {
            visited += 1;
            if visited == 3 {
                cancel.cancel();
            }
            Ok::<_, String>(())
        })
        .await
        .expect_err("cancelled");
    assert!(matches!(err, PagerError::Cancelled), "{err}");
    assert_eq!(visited, 10, "the page being visited is finished");

    let mut visited = 0;
    let err = pager(&Pages::expiring(51, 1))
        .each_list_item(&CancellationToken::new(), ListOptions::default(), |_| {
            visited += 1;
            Ok::<_, String>(())
        })
        .await
        .expect_err("expired");
    assert_eq!(visited, 10);
    assert!(
        matches!(&err, PagerError::List(e) if e.is_resource_expired()),
        "{err}"
    );

    let err = pager(&Pages::new(5))
        .page_buffer_size(-1)
        .each_list_item(&CancellationToken::new(), ListOptions::default(), |_| {
            Ok::<_, String>(())
        })
        .await
        .expect_err("negative buffer");
    assert_eq!(
        err.to_string(),
        "ListPager.PageBufferSize must be >= 0, got -1"
    );
}
