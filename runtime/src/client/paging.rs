//! The paging protocol of client-go's `tools/pager`, written once for
//! [`ResourceClient::list_all`](super::ResourceClient::list_all),
//! [`ListPager`](crate::pager::ListPager) and the reflector's lists.
//!
//! Contract (SEMANTICS 12): the first request carries the caller's options; a first page
//! without a continue token is the result as is. Otherwise the items of every page are
//! joined in order under the FIRST page's resourceVersion; each later request carries the
//! previous continue token, no resourceVersion nor resourceVersionMatch, and keeps limit
//! and selectors. A continuation failing with 410 Expired is, when asked, followed by one
//! request without limit nor continue, with the original resourceVersion and match, whose
//! list is the result (still paginated). Cancellation is checked before each request.
//!
//! [`pages`] is the protocol as a stream of pages, each with where it came from: callers
//! that consume pages as they come (the reflector decodes a page while the next one is
//! fetched; `ListPager::each_list_item` hands out items) read it; [`list_pages`] joins it
//! into one list. A page is requested only when the stream is polled for it.
//!
//! It does not choose a page size (callers set `limit`) and does not fetch ahead by
//! itself.

use std::future::Future;

use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::{DeferredPage, Error, ListOptions, ObjectList};

/// Why paging stopped early.
#[derive(Debug)]
pub(crate) enum PagingError {
    /// A request failed.
    List(Error),
    /// The token was cancelled between pages.
    Cancelled,
}

/// Which request of the protocol answered with a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageOrigin {
    /// The first request, with the caller's options.
    First,
    /// A request with the previous page's continue token.
    Continued,
    /// The full list after a continuation expired: the whole result, replacing every
    /// page before it.
    FullAfterExpired,
}

/// A page of a list: what the protocol reads of it.
pub(crate) trait Page {
    /// The token for the next page; `None` (or empty) on the last page.
    fn continue_token(&self) -> Option<&str>;
}

impl<K> Page for ObjectList<K> {
    fn continue_token(&self) -> Option<&str> {
        self.continue_token.as_deref()
    }
}

impl<K> Page for DeferredPage<K> {
    fn continue_token(&self) -> Option<&str> {
        self.continue_token.as_deref()
    }
}

fn next_token(page: &impl Page) -> Option<String> {
    page.continue_token()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

struct Paging<F> {
    next: Option<(ListOptions, PageOrigin)>,
    original: ListOptions,
    full_list_if_expired: bool,
    cancel: Option<CancellationToken>,
    fetch: F,
}

/// The pages of a list, in order, through `fetch` (see the module docs). The stream ends
/// after the last page, or after its first error (`Err` is its last item). It yields at
/// least one item.
pub(crate) fn pages<P, Fut>(
    opts: ListOptions,
    full_list_if_expired: bool,
    cancel: Option<CancellationToken>,
    fetch: impl FnMut(ListOptions) -> Fut,
) -> impl Stream<Item = Result<(P, PageOrigin), PagingError>>
where
    P: Page,
    Fut: Future<Output = Result<P, Error>>,
{
    let state = Paging {
        next: Some((opts.clone(), PageOrigin::First)),
        original: opts,
        full_list_if_expired,
        cancel,
        fetch,
    };
    futures::stream::unfold(state, |mut st| async move {
        let (opts, origin) = st.next.take()?;
        if st
            .cancel
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
        {
            return Some((Err(PagingError::Cancelled), st));
        }
        match (st.fetch)(opts.clone()).await {
            Ok(page) => {
                if origin != PageOrigin::FullAfterExpired
                    && let Some(token) = next_token(&page)
                {
                    st.next = Some((continuation(opts, Some(token)), PageOrigin::Continued));
                }
                Some((Ok((page, origin)), st))
            }
            Err(e)
                if e.is_resource_expired()
                    && st.full_list_if_expired
                    && opts.continue_token.is_some()
                    && origin != PageOrigin::FullAfterExpired =>
            {
                let full = ListOptions {
                    limit: None,
                    continue_token: None,
                    ..st.original.clone()
                };
                let item = (st.fetch)(full)
                    .await
                    .map(|page| (page, PageOrigin::FullAfterExpired))
                    .map_err(PagingError::List);
                Some((item, st))
            }
            Err(e) => Some((Err(PagingError::List(e)), st)),
        }
    })
}

/// Lists every page through `fetch`: `(list, paginated)` (see the module docs).
pub(crate) async fn list_pages<K, Fut>(
    opts: ListOptions,
    full_list_if_expired: bool,
    cancel: Option<&CancellationToken>,
    fetch: impl FnMut(ListOptions) -> Fut,
) -> Result<(ObjectList<K>, bool), PagingError>
where
    Fut: Future<Output = Result<ObjectList<K>, Error>>,
{
    let stream = pages(opts, full_list_if_expired, cancel.cloned(), fetch);
    let mut stream = std::pin::pin!(stream);
    let mut joined: Option<ObjectList<K>> = None;
    while let Some(item) = stream.next().await {
        let (page, origin) = item?;
        match origin {
            PageOrigin::First if next_token(&page).is_none() => return Ok((page, false)),
            PageOrigin::First => {
                joined = Some(ObjectList {
                    continue_token: None,
                    remaining_item_count: None,
                    ..page
                });
            }
            PageOrigin::Continued => {
                if let Some(all) = joined.as_mut() {
                    all.items.extend(page.items);
                }
            }
            PageOrigin::FullAfterExpired => return Ok((page, true)),
        }
    }
    // The stream yields at least its first page or an error, so `joined` is set here.
    joined.map(|all| (all, true)).ok_or(PagingError::Cancelled)
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
