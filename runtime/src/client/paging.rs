//! The paging protocol of client-go's `tools/pager`, written once for
//! [`ResourceClient::list_all`](super::ResourceClient::list_all) and
//! [`ListPager`](crate::pager::ListPager).
//!
//! Contract (SEMANTICS 12): the first request carries the caller's options; a first page
//! without a continue token is the result as is. Otherwise the items of every page are
//! joined in order under the FIRST page's resourceVersion; each later request carries the
//! previous continue token, no resourceVersion nor resourceVersionMatch, and keeps limit
//! and selectors. A continuation failing with 410 Expired is, when asked, followed by one
//! request without limit nor continue, with the original resourceVersion and match, whose
//! list is the result (still paginated). Cancellation is checked before each request.
//!
//! It does not choose a page size (callers set `limit`) and does not fetch ahead.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use super::{Error, ListOptions, ObjectList};

/// Why paging stopped early.
#[derive(Debug)]
pub(crate) enum PagingError {
    /// A request failed.
    List(Error),
    /// The token was cancelled between pages.
    Cancelled,
}

/// Lists every page through `fetch`: `(list, paginated)` (see the module docs).
pub(crate) async fn list_pages<K, Fut>(
    opts: ListOptions,
    full_list_if_expired: bool,
    cancel: Option<&CancellationToken>,
    mut fetch: impl FnMut(ListOptions) -> Fut,
) -> Result<(ObjectList<K>, bool), PagingError>
where
    Fut: Future<Output = Result<ObjectList<K>, Error>>,
{
    let original = opts.clone();
    let mut opts = opts;
    let mut joined: Option<ObjectList<K>> = None;
    loop {
        if cancel.is_some_and(CancellationToken::is_cancelled) {
            return Err(PagingError::Cancelled);
        }
        let had_continue = opts.continue_token.is_some();
        let page = match fetch(opts.clone()).await {
            Ok(page) => page,
            Err(e) if e.is_resource_expired() && full_list_if_expired && had_continue => {
                let full = ListOptions {
                    limit: None,
                    continue_token: None,
                    ..original
                };
                return fetch(full)
                    .await
                    .map(|list| (list, true))
                    .map_err(PagingError::List);
            }
            Err(e) => return Err(PagingError::List(e)),
        };
        let next = page.continue_token.clone().filter(|t| !t.is_empty());
        let Some(mut all) = joined.take() else {
            if next.is_none() {
                return Ok((page, false));
            }
            joined = Some(ObjectList {
                continue_token: None,
                remaining_item_count: None,
                ..page
            });
            opts = continuation(opts, next);
            continue;
        };
        all.items.extend(page.items);
        if next.is_none() {
            return Ok((all, true));
        }
        joined = Some(all);
        opts = continuation(opts, next);
    }
}

/// The options of the request after a page with continue token `next`.
pub(crate) fn continuation(opts: ListOptions, next: Option<String>) -> ListOptions {
    ListOptions {
        continue_token: next,
        resource_version: None,
        resource_version_match: None,
        ..opts
    }
}
