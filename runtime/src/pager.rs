//! Listing a large collection page by page (client-go's `tools/pager`).
//!
//! Contract (SEMANTICS 12, tools/pager):
//! - [`ListPager::new`] pages by 500, falls back to a full list when a continuation
//!   expires, and buffers 10 pages ahead in [`ListPager::each_list_item`].
//! - [`ListPager::list`] asks for `opts.limit` items per page, or `page_size` when unset.
//!   A first page without a continue token is returned unchanged (`paginated` false).
//!   Otherwise the items of every page are joined in order into one list carrying the
//!   FIRST page's resourceVersion; later requests carry the previous continue token, no
//!   resourceVersion nor resourceVersionMatch, and keep limit and selectors.
//! - A continuation request failing with 410 Expired, with `full_list_if_expired`, is
//!   followed by one request without limit nor continue, with the original
//!   resourceVersion and resourceVersionMatch, whose list is returned as is (`paginated`
//!   stays true). Any other failure is returned.
//! - [`ListPager::each_list_item`] fetches pages ahead in a background task (at most
//!   `page_buffer_size` waiting; a negative size is an error) and calls `f` on every item
//!   in order; an error of `f` or of a page ends it (no full-list fallback there).
//! - Cancellation is checked between pages: a cancelled token ends `list` and
//!   `each_list_item` with [`PagerError::Cancelled`] after the current page.
//!
//! Unlike client-go's `EachListItem`, continuation requests clear the caller's
//! resourceVersion as `list` does: client-go keeps it, and a server rejects a
//! resourceVersion other than "" or "0" together with `continue` (400).

use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cache::reflector::ListerWatcher;
use crate::client::paging;
use crate::client::{self, ListOptions, ObjectList};

/// client-go's default page size.
pub const DEFAULT_PAGE_SIZE: i64 = 500;
/// client-go's default number of pages `each_list_item` fetches ahead.
pub const DEFAULT_PAGE_BUFFER_SIZE: i32 = 10;

/// Why a pager gave up.
#[derive(Debug, thiserror::Error)]
pub enum PagerError<E = std::convert::Infallible> {
    /// A list request failed.
    #[error(transparent)]
    List(#[from] client::Error),
    /// The token was cancelled between pages.
    #[error("context canceled")]
    Cancelled,
    /// `page_buffer_size` was negative.
    #[error("ListPager.PageBufferSize must be >= 0, got {0}")]
    PageBufferSize(i32),
    /// The item function failed.
    #[error("{0}")]
    Item(E),
}

/// Lists a collection in pages (client-go's `ListPager`), as a plain struct with builder
/// methods.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubegen_runtime::client::{ListOptions, ResourceClient};
/// use kubegen_runtime::pager::ListPager;
/// use kubegen_runtime::testing::ApiServer;
/// use tokio_util::sync::CancellationToken;
///
/// let server = ApiServer::new();
/// for i in 0..5 {
///     server.create("configmaps", serde_json::json!({"metadata": {"name": format!("c{i}"), "namespace": "ns"}}))?;
/// }
/// let cms = ResourceClient::<ConfigMap>::all(kube::Client::new(server.service(), "default"));
/// let pager = ListPager::new(Arc::new(cms)).page_size(2);
/// let (list, paginated) = pager.list(&CancellationToken::new(), ListOptions::default()).await?;
/// assert_eq!((list.items.len(), paginated), (5, true));
/// # Ok(())
/// # }
/// ```
pub struct ListPager<K> {
    lw: Arc<dyn ListerWatcher<K>>,
    /// Items per page when the options set no limit.
    pub page_size: i64,
    /// Retry an expired continuation as one full list.
    pub full_list_if_expired: bool,
    /// Pages `each_list_item` may fetch ahead.
    pub page_buffer_size: i32,
}

impl<K> fmt::Debug for ListPager<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListPager")
            .field("page_size", &self.page_size)
            .field("full_list_if_expired", &self.full_list_if_expired)
            .field("page_buffer_size", &self.page_buffer_size)
            .finish_non_exhaustive()
    }
}

impl<K: Send + 'static> ListPager<K> {
    /// A pager with client-go's defaults (500 per page, full list if expired, 10 pages
    /// buffered).
    pub fn new(lw: Arc<dyn ListerWatcher<K>>) -> Self {
        ListPager {
            lw,
            page_size: DEFAULT_PAGE_SIZE,
            full_list_if_expired: true,
            page_buffer_size: DEFAULT_PAGE_BUFFER_SIZE,
        }
    }

    /// Sets the page size.
    pub fn page_size(mut self, n: i64) -> Self {
        self.page_size = n;
        self
    }

    /// Sets whether an expired continuation falls back to a full list.
    pub fn full_list_if_expired(mut self, on: bool) -> Self {
        self.full_list_if_expired = on;
        self
    }

    /// Sets how many pages `each_list_item` fetches ahead.
    pub fn page_buffer_size(mut self, n: i32) -> Self {
        self.page_buffer_size = n;
        self
    }

    fn first_options(&self, mut opts: ListOptions) -> ListOptions {
        if opts.limit.is_none_or(|l| l == 0) {
            opts.limit = Some(self.page_size);
        }
        opts
    }

    /// Lists every page: `(list, paginated)` (client-go's `List`; the protocol is
    /// `client::paging`'s, shared with `ResourceClient::list_all`).
    pub async fn list(
        &self,
        cancel: &CancellationToken,
        opts: ListOptions,
    ) -> Result<(ObjectList<K>, bool), PagerError> {
        let opts = self.first_options(opts);
        paging::list_pages(opts, self.full_list_if_expired, Some(cancel), |o| {
            self.lw.list(o)
        })
        .await
        .map_err(|e| match e {
            paging::PagingError::List(e) => PagerError::List(e),
            paging::PagingError::Cancelled => PagerError::Cancelled,
        })
    }

    /// Calls `f` on every item of every page, in order, fetching pages ahead
    /// (client-go's `EachListItem`).
    pub async fn each_list_item<E>(
        &self,
        cancel: &CancellationToken,
        opts: ListOptions,
        mut f: impl FnMut(K) -> Result<(), E>,
    ) -> Result<(), PagerError<E>> {
        let buffer = usize::try_from(self.page_buffer_size)
            .map_err(|_| PagerError::PageBufferSize(self.page_buffer_size))?;
        let (tx, mut rx) = mpsc::channel(buffer.max(1));
        let lw = Arc::clone(&self.lw);
        let opts = self.first_options(opts);
        let producer_cancel = cancel.clone();
        let producer = tokio::spawn(async move {
            // client-go's EachListItem has no full-list fallback: an expired continue is
            // the caller's error.
            let pages = paging::pages(opts, false, Some(producer_cancel), |o| lw.list(o));
            let mut pages = std::pin::pin!(pages);
            while let Some(page) = pages.next().await {
                let page = match page {
                    Ok((page, _)) => Ok(page),
                    Err(paging::PagingError::List(e)) => Err(e),
                    // The consumer sees the token too and reports the cancellation.
                    Err(paging::PagingError::Cancelled) => return,
                };
                if tx.send(page).await.is_err() {
                    return;
                }
            }
        });
        // The producer ends when this function returns and drops the receiver.
        let _stop_producer = AbortOnDrop(producer);
        while let Some(page) = rx.recv().await {
            for item in page.map_err(|e| PagerError::List(e))?.items {
                f(item).map_err(PagerError::Item)?;
            }
            if cancel.is_cancelled() {
                return Err(PagerError::Cancelled);
            }
        }
        if cancel.is_cancelled() {
            return Err(PagerError::Cancelled);
        }
        Ok(())
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests;
