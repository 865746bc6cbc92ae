//! The Reflector: keeps a store in step with the API server by listing, then watching.
//!
//! Contract (client-go's `Reflector`, SEMANTICS 3):
//! - [`Reflector::run`] repeats list-then-watch until cancelled, waiting a jittered
//!   exponential backoff between rounds (800 ms doubling to 30 s, each wait in `[d, 2d)`,
//!   reset after 2 minutes without backing off).
//! - The first list asks for resourceVersion `"0"` (any cached state) in pages of 500;
//!   later lists ask for the last synced resourceVersion unpaginated (so a watch cache can
//!   serve them), unless the server paginated an earlier `"0"` list; a list that fails
//!   with 410 Expired or "too large resource version" is retried at once with `""`
//!   (the newest state). A continuation page that fails with 410 is retried once as a
//!   full list. The paging is `client::paging`'s, the one `ListPager` and
//!   `ResourceClient::list_all` use.
//! - A successful list [`ReflectorStore::replace`]s the store's content; then a watch
//!   starts from the list's resourceVersion, with bookmarks and a random timeout in
//!   `[min_watch_timeout, 2 * min_watch_timeout]`. Each event is applied to the store and
//!   advances the last synced resourceVersion.
//! - A watch that ends normally is resumed from the last resourceVersion without a
//!   relist; one that ends with 410 Expired/Gone, a decode error or another error ends
//!   the round (relist from the last resourceVersion, which means "not older than");
//!   connection refused and 429 at watch start back off and re-watch without relisting.
//!   A watch that closes within a second without any event is an error ("very short
//!   watch"). A watch silent for longer than its idle deadline (no event, no bookmark:
//!   something between client and server dropped it) is abandoned and restarted.
//! - The WatchList client is on by default (client-go 1.35; `KUBE_FEATURE_WatchListClient=false`
//!   in the environment turns the default off, [`ReflectorOptions::use_watch_list`] sets it):
//!   when the lister-watcher speaks the protocol ([`ListerWatcher::supports_watch_list`];
//!   [`ResourceClient`] does), the initial list is streamed: a watch with
//!   `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan` and bookmarks fills a
//!   temporary store until the bookmark annotated `k8s.io/initial-events-end`, then
//!   replaces the store and continues on the same stream. A server that rejects the
//!   request (any non-retriable failure) gets a classic LIST + WATCH in the same round.
//! - The consistency detector ([`ReflectorOptions::check_watch_list_consistency`], on when
//!   `KUBE_WATCHLIST_INCONSISTENCY_DETECTOR` is true in the environment) lists at the
//!   streamed list's resourceVersion (`resourceVersionMatch=Exact`) after each streamed
//!   list and reports any key missing on one side or at another resourceVersion as
//!   [`ReflectorError::Inconsistent`] to the error handler (client-go panics; kubegen
//!   reports, so that a test or an operator decides).
//! - Resync: every `resync_period` (0 = never), if `should_resync` allows, the store's
//!   [`ReflectorStore::resync`] runs.
//!
//! It does not decide what the store does with events, and it never holds an object
//! except to hand it to the store.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use parking_lot::Mutex;
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::cache::store::StoreError;
use crate::client::{
    self, paging, paging::PageOrigin, Bookmark, DeferredPage, ListOptions, ObjectList,
    ResourceClient, WatchEvent,
};
use crate::errors::StatusError;

/// A tweak applied to the options of every list and watch (client-go's
/// `TweakListOptionsFunc`): how informers and factories take label and field selectors.
pub type TweakListOptions = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// A lister-watcher whose every list and watch passes through a [`TweakListOptions`].
pub(crate) struct Tweaked<K> {
    pub(crate) inner: Arc<dyn ListerWatcher<K>>,
    pub(crate) tweak: TweakListOptions,
}

impl<K: Send + 'static> ListerWatcher<K> for Tweaked<K> {
    fn supports_watch_list(&self) -> bool {
        self.inner.supports_watch_list()
    }
    fn list(
        &self,
        mut opts: ListOptions,
    ) -> BoxFuture<'static, Result<ObjectList<K>, client::Error>> {
        (self.tweak)(&mut opts);
        self.inner.list(opts)
    }
    fn list_deferred(
        &self,
        mut opts: ListOptions,
    ) -> BoxFuture<'static, Result<DeferredPage<K>, client::Error>> {
        (self.tweak)(&mut opts);
        self.inner.list_deferred(opts)
    }
    fn watch(
        &self,
        mut opts: ListOptions,
    ) -> BoxFuture<'static, Result<BoxStream<'static, WatchEvent<K>>, client::Error>> {
        (self.tweak)(&mut opts);
        self.inner.watch(opts)
    }
}

/// Lists and watches one resource (client-go's `ListerWatcher`).
///
/// [`ResourceClient`] implements it; tests implement it with fakes.
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// Lists one page.
    fn list(&self, opts: ListOptions) -> BoxFuture<'static, Result<ObjectList<K>, client::Error>>;
    /// Starts a watch.
    fn watch(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<BoxStream<'static, WatchEvent<K>>, client::Error>>;
    /// Whether [`watch`](Self::watch) speaks the streaming-list protocol (initial events,
    /// then the `k8s.io/initial-events-end` bookmark) when asked with
    /// `sendInitialEvents=true` (client-go's `DoesClientNotSupportWatchListSemantics`,
    /// the other way round). The default is `false`, so a fake or a wrapper that does not
    /// forward the request as is gets LIST + WATCH; [`ResourceClient`] says `true`.
    fn supports_watch_list(&self) -> bool {
        false
    }
    /// Lists one page, resolving as soon as the page's metadata (its continue token) is
    /// known while its items may still be decoding, so that the reflector can fetch the
    /// next page meanwhile. The default waits for [`ListerWatcher::list`].
    fn list_deferred(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<DeferredPage<K>, client::Error>>
    where
        K: Send + 'static,
    {
        let listed = self.list(opts);
        async move {
            let page = listed.await?;
            Ok(DeferredPage {
                resource_version: page.resource_version,
                continue_token: page.continue_token,
                remaining_item_count: page.remaining_item_count,
                items: futures::future::ready(Ok(page.items)).boxed(),
            })
        }
        .boxed()
    }
}

/// Objects listed and watched for a cache are decoded with exact vector capacities (see
/// `client::exact`): a cached object holds no spare vector capacity.
impl<K, W> ListerWatcher<K> for ResourceClient<K, W>
where
    K: kube::Resource + serde::de::DeserializeOwned + Clone + Send + 'static,
    W: client::WireDecoders<K>,
{
    fn list(&self, opts: ListOptions) -> BoxFuture<'static, Result<ObjectList<K>, client::Error>> {
        let c = self.clone();
        async move { c.list_with(&opts, true).await }.boxed()
    }

    fn watch(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<BoxStream<'static, WatchEvent<K>>, client::Error>> {
        let c = self.clone();
        async move { c.watch_with(&opts, true).await.map(|s| s.boxed()) }.boxed()
    }

    fn supports_watch_list(&self) -> bool {
        true
    }

    fn list_deferred(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<DeferredPage<K>, client::Error>> {
        let c = self.clone();
        async move { c.list_deferred_with(&opts, true).await }.boxed()
    }
}

/// What a reflector writes to (the part of client-go's `Store` it uses). The DeltaFIFO
/// implements it.
pub trait ReflectorStore<K>: Send + Sync {
    /// An object was added.
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// An object was modified.
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// An object was deleted.
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// The complete state at `resource_version`.
    fn replace(&self, objs: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError>;
    /// A periodic resync.
    fn resync(&self) -> Result<(), StoreError>;
    /// The watch reached `resource_version` (a bookmark); most stores ignore it.
    fn bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }
    /// The copy the store already holds of `obj`, when it is the same version of the same
    /// object (same key, same non-empty resourceVersion). A relist swaps each decoded
    /// object for it as soon as its page is decoded, so that relisting unchanged objects
    /// never holds two copies of the cache. Default: none.
    fn cached(&self, obj: &K) -> Option<Arc<K>> {
        let _ = obj;
        None
    }
}

/// Why a list-and-watch round ended.
#[derive(Debug, thiserror::Error)]
pub enum ReflectorError {
    /// The list failed.
    #[error("failed to list {kind}: {source}")]
    List {
        /// The listed kind.
        kind: String,
        /// The cause.
        #[source]
        source: client::Error,
    },
    /// The watch could not be started.
    #[error("failed to watch {kind}: {source}")]
    Watch {
        /// The watched kind.
        kind: String,
        /// The cause.
        #[source]
        source: client::Error,
    },
    /// The watch stream delivered an error.
    #[error("watch of {kind} ended with: {status}")]
    WatchEnded {
        /// The watched kind.
        kind: String,
        /// The error status.
        status: StatusError,
    },
    /// The watch closed at once, without a single event.
    #[error(
        "very short watch: {kind}: Unexpected watch close - watch lasted less than a second and no items received"
    )]
    VeryShortWatch {
        /// The watched kind.
        kind: String,
    },
    /// The consistency detector found the streamed list and a LIST at the same
    /// resourceVersion different (see the module docs).
    #[error("streamed list of {kind} at resourceVersion {resource_version} differs from a LIST at the same resourceVersion for {}: the server's watch cache and storage disagree; report it with these keys", .keys.join(", "))]
    Inconsistent {
        /// The kind.
        kind: String,
        /// The resourceVersion of both lists.
        resource_version: String,
        /// The keys missing on one side or at different resourceVersions, sorted.
        keys: Vec<String>,
    },
    /// The store refused a replace or a resync.
    #[error("store of {kind}: {source}")]
    Store {
        /// The kind.
        kind: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
}

impl ReflectorError {
    /// The API status behind the error, if any.
    pub fn status(&self) -> Option<&StatusError> {
        match self {
            ReflectorError::List { source, .. } | ReflectorError::Watch { source, .. } => {
                source.status()
            }
            ReflectorError::WatchEnded { status, .. } => Some(status),
            _ => None,
        }
    }
}

/// Jittered exponential backoff (client-go's `ExponentialBackoffManager` as the reflector
/// configures it).
#[derive(Debug, Clone)]
pub struct Backoff {
    /// The first delay.
    pub initial: Duration,
    /// The growth factor per step.
    pub factor: f64,
    /// Each delay `d` becomes a random value in `[d, d * (1 + jitter))`.
    pub jitter: f64,
    /// The largest delay before jitter.
    pub cap: Duration,
    /// A backoff this long after the previous one starts again from `initial`.
    pub reset_after: Duration,
    next: Duration,
    last: Option<Instant>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(
            Duration::from_millis(800),
            2.0,
            1.0,
            Duration::from_secs(30),
            Duration::from_secs(120),
        )
    }
}

impl Backoff {
    /// A backoff with the given parameters.
    pub fn new(
        initial: Duration,
        factor: f64,
        jitter: f64,
        cap: Duration,
        reset_after: Duration,
    ) -> Self {
        Backoff {
            initial,
            factor,
            jitter,
            cap,
            reset_after,
            next: initial,
            last: None,
        }
    }

    /// The next delay to wait.
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) > self.reset_after)
        {
            self.next = self.initial;
        }
        self.last = Some(now);
        let base = self.next;
        self.next = base.mul_f64(self.factor).min(self.cap);
        if self.jitter > 0.0 {
            let extra = rand::rng().random_range(0.0..self.jitter);
            base + base.mul_f64(extra)
        } else {
            base
        }
    }

    async fn wait(&mut self, cancel: &CancellationToken) {
        let d = self.next_delay();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = cancel.cancelled() => {}
        }
    }
}

/// The earlier name of [`ReflectorOptions`]: the runtime names every options type `*Options`.
#[deprecated(since = "0.1.0", note = "renamed to `ReflectorOptions`")]
pub type ReflectorConfig = ReflectorOptions;

/// A reflector's configuration: a plain struct with builder methods.
///
/// ```
/// use std::time::Duration;
/// use kubegen_runtime::cache::reflector::ReflectorOptions;
///
/// let config = ReflectorOptions::default()
///     .resync_period(Duration::from_secs(30))
///     .page_size(100);
/// assert_eq!(config.page_size, Some(100));
/// ```
#[derive(Debug, Clone)]
pub struct ReflectorOptions {
    /// How often to resync the store (0 = never).
    pub resync_period: Duration,
    /// The page size of lists; `None` follows client-go's rules (500 when paginating).
    pub page_size: Option<i64>,
    /// Watches time out after a random time in `[min, 2 * min]`; at least 5 minutes.
    pub min_watch_timeout: Duration,
    /// A watch with no event for this long is restarted; `None` = the watch's timeout
    /// plus 30 s.
    pub watch_idle_timeout: Option<Duration>,
    /// How long to keep re-watching after 500 InternalError events (0 = relist at once).
    pub max_internal_error_retry_duration: Duration,
    /// Stream the initial list with `sendInitialEvents` instead of a LIST, when the
    /// lister-watcher supports it (default: on, unless `KUBE_FEATURE_WatchListClient` is
    /// false in the environment).
    pub use_watch_list: bool,
    /// After each streamed list, LIST at its resourceVersion and report differences
    /// (default: `KUBE_WATCHLIST_INCONSISTENCY_DETECTOR` from the environment, off when
    /// unset).
    pub check_watch_list_consistency: bool,
    /// The backoff between rounds and between failed watch starts.
    pub backoff: Backoff,
    /// Ask the lister-watcher for objects without `metadata.managedFields`
    /// ([`ListOptions::without_managed_fields`]), skipped while decoding.
    pub without_managed_fields: bool,
}

impl Default for ReflectorOptions {
    fn default() -> Self {
        ReflectorOptions {
            resync_period: Duration::ZERO,
            page_size: None,
            min_watch_timeout: MIN_WATCH_TIMEOUT,
            watch_idle_timeout: None,
            max_internal_error_retry_duration: Duration::ZERO,
            use_watch_list: env_flag(WATCH_LIST_CLIENT_ENV, true),
            check_watch_list_consistency: env_flag(CONSISTENCY_DETECTOR_ENV, false),
            backoff: Backoff::default(),
            without_managed_fields: false,
        }
    }
}

/// client-go's floor for watch timeouts.
const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);
const DEFAULT_PAGE_SIZE: i64 = 500;
/// How many listed pages may be decoding while the next one is fetched.
const PAGES_IN_FLIGHT: usize = 2;

impl ReflectorOptions {
    /// Sets the resync period.
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }
    /// Sets the list page size.
    pub fn page_size(mut self, size: i64) -> Self {
        self.page_size = Some(size);
        self
    }
    /// Sets the minimum watch timeout (only raised above 5 minutes, never lowered).
    pub fn min_watch_timeout(mut self, timeout: Duration) -> Self {
        self.min_watch_timeout = timeout.max(MIN_WATCH_TIMEOUT);
        self
    }
    /// Sets the idle deadline after which a silent watch is restarted.
    pub fn watch_idle_timeout(mut self, timeout: Duration) -> Self {
        self.watch_idle_timeout = Some(timeout);
        self
    }
    /// Streams the initial list (`sendInitialEvents`) when the lister-watcher supports it.
    pub fn use_watch_list(mut self, on: bool) -> Self {
        self.use_watch_list = on;
        self
    }
    /// Checks every streamed list against a LIST at the same resourceVersion.
    pub fn check_watch_list_consistency(mut self, on: bool) -> Self {
        self.check_watch_list_consistency = on;
        self
    }
    /// Sets the backoff.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }
    /// Sets how long 500 InternalError watch events are retried without relisting.
    pub fn max_internal_error_retry_duration(mut self, d: Duration) -> Self {
        self.max_internal_error_retry_duration = d;
        self
    }
    /// Asks for objects without `metadata.managedFields`.
    pub fn without_managed_fields(mut self, on: bool) -> Self {
        self.without_managed_fields = on;
        self
    }
}

type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;
type ErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;
type ResourceVersionObserver = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Default)]
struct SyncState {
    last_sync_resource_version: String,
    /// The last list failed with Expired or too-large: list at "" next.
    resource_version_unavailable: bool,
    /// A "0" list came back paginated: the server has no watch cache, keep paginating.
    paginated_result: bool,
}

/// Keeps a [`ReflectorStore`] in step with the API server (see the module docs).
pub struct Reflector<K> {
    kind: String,
    lw: Arc<dyn ListerWatcher<K>>,
    store: Arc<dyn ReflectorStore<K>>,
    config: Mutex<ReflectorOptions>,
    should_resync: Option<ShouldResync>,
    error_handler: ErrorHandler,
    rv_observer: Option<ResourceVersionObserver>,
    state: Mutex<SyncState>,
}

impl<K> fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("kind", &self.kind)
            .field(
                "last_sync_resource_version",
                &self.state.lock().last_sync_resource_version,
            )
            .finish_non_exhaustive()
    }
}

/// client-go's default watch error handler: log, quietly for an expired watch.
fn default_error_handler(kind: &str, err: &ReflectorError) {
    if err.status().is_some_and(|s| s.is_expired() || s.is_gone()) {
        tracing::debug!(kind, %err, "watch closed with expired resourceVersion; relisting");
    } else {
        tracing::warn!(kind, %err, "list/watch failed");
    }
}

enum WatchOutcome {
    /// The watch closed normally: re-watch from the last resourceVersion.
    Rewatch,
    /// The round is over without error (410, cancelled): relist.
    Relist,
    /// Back off, then re-watch without relisting.
    BackoffRewatch,
}

impl<K: kube::Resource + Send + Sync + 'static> Reflector<K> {
    /// A reflector that lists and watches with `lw` into `store`. `kind` names the
    /// resource in errors and logs.
    pub fn new(
        kind: impl Into<String>,
        lw: Arc<dyn ListerWatcher<K>>,
        store: Arc<dyn ReflectorStore<K>>,
        config: ReflectorOptions,
    ) -> Self {
        Reflector {
            kind: kind.into(),
            lw,
            store,
            config: Mutex::new(config),
            should_resync: None,
            error_handler: Arc::new(|_| {}),
            rv_observer: None,
            state: Mutex::new(SyncState::default()),
        }
        .with_default_error_handler()
    }

    fn with_default_error_handler(mut self) -> Self {
        let kind = self.kind.clone();
        self.error_handler = Arc::new(move |e| default_error_handler(&kind, e));
        self
    }

    /// Sets the predicate consulted before each periodic resync.
    pub fn with_should_resync(mut self, f: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.should_resync = Some(Arc::new(f));
        self
    }

    /// Sets the handler called with the error of every failed round.
    pub fn with_error_handler(
        mut self,
        f: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        self.error_handler = Arc::new(f);
        self
    }

    /// Sets a callback that sees every resourceVersion the reflector syncs to.
    pub fn with_resource_version_observer(
        mut self,
        f: impl Fn(&str) + Send + Sync + 'static,
    ) -> Self {
        self.rv_observer = Some(Arc::new(f));
        self
    }

    /// The resourceVersion the store was last synced to (`""` before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.state.lock().last_sync_resource_version.clone()
    }

    fn set_last_sync(&self, rv: &str) {
        self.state.lock().last_sync_resource_version = rv.to_owned();
        if let Some(o) = &self.rv_observer {
            o(rv);
        }
    }

    /// Runs list-and-watch rounds until `cancel` fires, backing off between rounds.
    pub async fn run(&self, cancel: CancellationToken) {
        let mut backoff = self.config.lock().backoff.clone();
        while !cancel.is_cancelled() {
            if let Err(err) = self.list_and_watch(&cancel).await {
                (self.error_handler)(&err);
            }
            if cancel.is_cancelled() {
                break;
            }
            backoff.wait(&cancel).await;
        }
    }

    /// One round: list (or stream the initial list), then watch until the watch ends.
    /// Returns `Ok` when the round ended in a way that only calls for a relist.
    pub async fn list_and_watch(&self, cancel: &CancellationToken) -> Result<(), ReflectorError> {
        let config = self.config.lock().clone();
        let mut first_stream = None;
        if config.use_watch_list && self.lw.supports_watch_list() {
            match self.watch_list(&config, cancel).await {
                Ok(Some(stream)) => first_stream = Some(stream),
                Ok(None) => return Ok(()),
                Err(err) => {
                    tracing::debug!(kind = %self.kind, %err, "streaming list failed; falling back to LIST");
                }
            }
        }
        if first_stream.is_none() {
            let listed = tokio::select! {
                r = self.list(&config) => r,
                _ = cancel.cancelled() => return Ok(()),
            };
            listed?;
        }
        self.watch_loop(&config, first_stream, cancel).await
    }

    fn base_options(&self, config: &ReflectorOptions) -> ListOptions {
        ListOptions {
            without_managed_fields: config.without_managed_fields,
            ..Default::default()
        }
    }

    fn relist_resource_version(&self) -> String {
        let st = self.state.lock();
        if st.resource_version_unavailable {
            String::new()
        } else if st.last_sync_resource_version.is_empty() {
            "0".to_owned()
        } else {
            st.last_sync_resource_version.clone()
        }
    }

    async fn list(&self, config: &ReflectorOptions) -> Result<(), ReflectorError> {
        loop {
            let rv = self.relist_resource_version();
            let limit = match config.page_size {
                Some(size) => size,
                None if self.state.lock().paginated_result => DEFAULT_PAGE_SIZE,
                None if rv != "0" && !rv.is_empty() => 0,
                None => DEFAULT_PAGE_SIZE,
            };
            let mut opts = self.base_options(config);
            opts.resource_version = Some(rv.clone());
            opts.limit = (limit > 0).then_some(limit);
            let started = Instant::now();
            let span = tracing::debug_span!("relist", kind = %self.kind, resource_version = %rv);
            match self.list_pages(opts).instrument(span).await {
                Ok((items, list_rv, paginated)) => {
                    crate::metrics::reflector_listed(&self.kind, items.len(), started.elapsed());
                    {
                        let mut st = self.state.lock();
                        if rv == "0" && paginated {
                            st.paginated_result = true;
                        }
                        st.resource_version_unavailable = false;
                    }
                    self.store.replace(items, &list_rv).map_err(|source| {
                        ReflectorError::Store {
                            kind: self.kind.clone(),
                            source,
                        }
                    })?;
                    self.set_last_sync(&list_rv);
                    return Ok(());
                }
                Err(err) => {
                    let retry = err.status().is_some_and(|s| {
                        s.is_expired() || s.is_gone() || s.is_too_large_resource_version()
                    });
                    if retry && !rv.is_empty() {
                        self.state.lock().resource_version_unavailable = true;
                        continue;
                    }
                    return Err(ReflectorError::List {
                        kind: self.kind.clone(),
                        source: err,
                    });
                }
            }
        }
    }

    /// Lists all pages: `(items, resourceVersion of the first page, paginated)`, by the
    /// protocol of `client::paging` (shared with `ListPager` and
    /// `ResourceClient::list_all`). The next page is requested while earlier pages are
    /// still decoding (at most [`PAGES_IN_FLIGHT`] of them).
    async fn list_pages(
        &self,
        opts: ListOptions,
    ) -> Result<(Vec<Arc<K>>, String, bool), client::Error> {
        let pages = paging::pages(opts, true, None, |o| self.lw.list_deferred(o));
        let mut pages = std::pin::pin!(pages);
        let mut list_rv = String::new();
        let mut paginated = false;
        let mut decoding = VecDeque::new();
        let mut items: Vec<Arc<K>> = Vec::new();
        while let Some(page) = pages.next().await {
            let (page, origin) = page.map_err(|e| match e {
                paging::PagingError::List(e) => e,
                // No token was given: nothing can cancel.
                paging::PagingError::Cancelled => {
                    unreachable!("a reflector's list has no cancellation")
                }
            })?;
            match origin {
                PageOrigin::First => {
                    list_rv = page.resource_version;
                    paginated = page.continue_token.is_some_and(|t| !t.is_empty());
                }
                PageOrigin::Continued => paginated = true,
                PageOrigin::FullAfterExpired => {
                    // The snapshot is gone: this one full list is the result.
                    decoding.clear();
                    items = Vec::new();
                    list_rv = page.resource_version;
                }
            }
            decoding.push_back(page.items);
            while decoding.len() > PAGES_IN_FLIGHT {
                if let Some(next) = decoding.pop_front() {
                    self.collect(&mut items, next.await?);
                }
            }
        }
        for next in decoding {
            self.collect(&mut items, next.await?);
        }
        Ok((items, list_rv, paginated))
    }

    /// Appends a decoded page, each object replaced by the store's own copy when that is
    /// the same version ([`ReflectorStore::cached`]): the decoded duplicate is freed here,
    /// one page at a time.
    fn collect(&self, items: &mut Vec<Arc<K>>, page: Vec<K>) {
        items.reserve(page.len());
        items.extend(
            page.into_iter()
                .map(|obj| self.store.cached(&obj).unwrap_or_else(|| Arc::new(obj))),
        );
    }

    fn watch_options(&self, config: &ReflectorOptions) -> ListOptions {
        let min = config
            .min_watch_timeout
            .max(MIN_WATCH_TIMEOUT)
            .as_secs()
            .max(1);
        let timeout = rand::rng().random_range(min..=2 * min);
        let mut opts = self.base_options(config);
        opts.resource_version = Some(self.last_sync_resource_version());
        opts.timeout_seconds = u32::try_from(timeout).ok();
        opts.allow_watch_bookmarks = true;
        opts
    }

    fn idle_deadline(config: &ReflectorOptions, opts: &ListOptions) -> Duration {
        config.watch_idle_timeout.unwrap_or_else(|| {
            Duration::from_secs(u64::from(opts.timeout_seconds.unwrap_or(600)))
                + Duration::from_secs(30)
        })
    }

    async fn watch_loop(
        &self,
        config: &ReflectorOptions,
        mut first_stream: Option<(BoxStream<'static, WatchEvent<K>>, Duration)>,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError> {
        let mut backoff = config.backoff.clone();
        let mut internal_errors_since: Option<Instant> = None;
        let resync = self.resync_loop(config, cancel);
        tokio::pin!(resync);
        loop {
            if cancel.is_cancelled() {
                return Ok(());
            }
            let (stream, idle) = match first_stream.take() {
                Some(s) => s,
                None => {
                    let opts = self.watch_options(config);
                    let idle = Self::idle_deadline(config, &opts);
                    let started = tokio::select! {
                        r = self.lw.watch(opts) => r,
                        _ = cancel.cancelled() => return Ok(()),
                        r = &mut resync => return r,
                    };
                    match started {
                        Ok(s) => {
                            crate::metrics::reflector_watch_started(&self.kind);
                            (s, idle)
                        }
                        Err(err) if is_retriable_watch_start(&err) => {
                            tracing::debug!(kind = %self.kind, %err, "watch start failed; backing off and re-watching");
                            backoff.wait(cancel).await;
                            continue;
                        }
                        Err(err) => {
                            return Err(ReflectorError::Watch {
                                kind: self.kind.clone(),
                                source: err,
                            });
                        }
                    }
                }
            };
            let outcome = tokio::select! {
                r = self.handle_watch(stream, idle, config, &mut internal_errors_since) => r,
                _ = cancel.cancelled() => return Ok(()),
                r = &mut resync => return r,
            };
            match outcome? {
                WatchOutcome::Rewatch => {}
                WatchOutcome::Relist => return Ok(()),
                WatchOutcome::BackoffRewatch => backoff.wait(cancel).await,
            }
        }
    }

    /// Resyncs the store every resync period; only returns on a store error.
    async fn resync_loop(
        &self,
        config: &ReflectorOptions,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError> {
        if config.resync_period.is_zero() {
            cancel.cancelled().await;
            return Ok(());
        }
        loop {
            tokio::select! {
                _ = tokio::time::sleep(config.resync_period) => {}
                _ = cancel.cancelled() => return Ok(()),
            }
            if self.should_resync.as_ref().is_none_or(|f| f()) {
                self.store
                    .resync()
                    .map_err(|source| ReflectorError::Store {
                        kind: self.kind.clone(),
                        source,
                    })?;
            }
        }
    }

    async fn handle_watch(
        &self,
        mut stream: BoxStream<'static, WatchEvent<K>>,
        idle: Duration,
        config: &ReflectorOptions,
        internal_errors_since: &mut Option<Instant>,
    ) -> Result<WatchOutcome, ReflectorError> {
        let started = Instant::now();
        let mut events = 0usize;
        loop {
            let next = match tokio::time::timeout(idle, stream.next()).await {
                Ok(next) => next,
                Err(_) => {
                    tracing::warn!(kind = %self.kind, ?idle, "watch silent past its idle deadline; restarting it");
                    return Ok(WatchOutcome::Rewatch);
                }
            };
            let Some(event) = next else {
                if events == 0 && started.elapsed() < Duration::from_secs(1) {
                    return Err(ReflectorError::VeryShortWatch {
                        kind: self.kind.clone(),
                    });
                }
                return Ok(WatchOutcome::Rewatch);
            };
            events += 1;
            match event {
                WatchEvent::Added(obj) => self.apply(obj, StoreOp::Add),
                WatchEvent::Modified(obj) => self.apply(obj, StoreOp::Update),
                WatchEvent::Deleted(obj) => self.apply(obj, StoreOp::Delete),
                WatchEvent::Bookmark(Bookmark {
                    resource_version, ..
                }) => {
                    self.store.bookmark(&resource_version);
                    self.set_last_sync(&resource_version);
                }
                WatchEvent::Error(status) => {
                    if status.is_expired() || status.is_gone() {
                        (self.error_handler)(&ReflectorError::WatchEnded {
                            kind: self.kind.clone(),
                            status,
                        });
                        return Ok(WatchOutcome::Relist);
                    }
                    if status.is_too_many_requests() {
                        return Ok(WatchOutcome::BackoffRewatch);
                    }
                    if status.is_internal_error()
                        && !status.has_cause(crate::errors::cause::CLIENT_WATCH_DECODING)
                    {
                        let since = *internal_errors_since.get_or_insert_with(Instant::now);
                        if since.elapsed() < config.max_internal_error_retry_duration {
                            return Ok(WatchOutcome::Rewatch);
                        }
                    }
                    return Err(ReflectorError::WatchEnded {
                        kind: self.kind.clone(),
                        status,
                    });
                }
            }
        }
    }

    /// One watch event into the store. The operation is a value, not a closure, so this is
    /// compiled once per `K` rather than once per event type.
    fn apply(&self, obj: K, op: StoreOp) {
        let rv = obj.meta().resource_version.clone().unwrap_or_default();
        let obj = Arc::new(obj);
        let result = match op {
            StoreOp::Add => self.store.add(obj),
            StoreOp::Update => self.store.update(obj),
            StoreOp::Delete => self.store.delete(obj),
        };
        if let Err(err) = result {
            tracing::error!(kind = %self.kind, %err, "store rejected a watch event");
        }
        self.set_last_sync(&rv);
    }
}

/// What a watch event does to the reflector's store.
#[derive(Debug, Clone, Copy)]
enum StoreOp {
    Add,
    Update,
    Delete,
}

/// Connection refused and 429 at watch start: back off and re-watch, no relist.
fn is_retriable_watch_start(err: &client::Error) -> bool {
    if err.status().is_some_and(StatusError::is_too_many_requests) {
        return true;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = e.source();
    }
    false
}

mod watch_list;

use watch_list::env_flag;
pub use watch_list::{CONSISTENCY_DETECTOR_ENV, WATCH_LIST_CLIENT_ENV};

#[cfg(test)]
mod tests;
