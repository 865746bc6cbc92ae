//! The WatchList client's half of the reflector (client-go's `watchList` and
//! `util/consistencydetector`): streaming the initial list with `sendInitialEvents`, the
//! environment switches, and the consistency detector (see the parent module's docs for
//! the contract).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    is_retriable_watch_start, Reflector, ReflectorError, ReflectorOptions, DEFAULT_PAGE_SIZE,
};
use crate::client::{Bookmark, ResourceVersionMatch, WatchEvent};

/// The environment variable that turns the WatchList client off (client-go's feature gate
/// as an environment variable).
pub const WATCH_LIST_CLIENT_ENV: &str = "KUBE_FEATURE_WatchListClient";
/// The environment variable that turns the watch-list consistency detector on.
pub const CONSISTENCY_DETECTOR_ENV: &str = "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR";

/// A boolean environment variable, as Go's `strconv.ParseBool` reads it; `default` when
/// unset or unreadable (with a warning for the latter).
pub(super) fn env_flag(name: &str, default: bool) -> bool {
    parse_flag(name, std::env::var(name).ok().as_deref(), default)
}

pub(super) fn parse_flag(name: &str, value: Option<&str>, default: bool) -> bool {
    match value {
        None | Some("") => default,
        Some("1" | "t" | "T" | "true" | "TRUE" | "True") => true,
        Some("0" | "f" | "F" | "false" | "FALSE" | "False") => false,
        Some(other) => {
            tracing::warn!(
                name,
                value = other,
                default,
                "not a boolean (use true or false); using the default"
            );
            default
        }
    }
}

impl<K: kube::Resource + Send + Sync + 'static> Reflector<K> {
    /// Streams the initial list. `Ok(Some)`: the store was replaced and the stream goes on
    /// in the watch phase; `Ok(None)`: cancelled or retriable (the caller ends the round);
    /// `Err` (why): fall back to LIST.
    pub(super) async fn watch_list(
        &self,
        config: &ReflectorOptions,
        cancel: &CancellationToken,
    ) -> Result<Option<(BoxStream<'static, WatchEvent<K>>, Duration)>, String> {
        // Between attempts whose stream ended before the initial-events-end bookmark, as
        // client-go backs off on retriable watch-list errors (no busy loop on a server
        // that closes such watches at once).
        let mut backoff = config.backoff.clone();
        loop {
            let mut opts = self.watch_options(config);
            if self.state.lock().resource_version_unavailable {
                opts.resource_version = Some(String::new());
            }
            opts.send_initial_events = Some(true);
            opts.resource_version_match = Some(ResourceVersionMatch::NotOlderThan);
            let idle = Self::idle_deadline(config, &opts);
            let started = tokio::select! {
                r = self.lw.watch(opts) => r,
                _ = cancel.cancelled() => return Ok(None),
            };
            let mut stream = match started {
                Ok(s) => {
                    crate::metrics::reflector_watch_started(&self.kind);
                    s
                }
                Err(err) if is_retriable_watch_start(&err) => return Ok(None),
                Err(err) => return Err(err.to_string()),
            };
            let mut temp: HashMap<String, Arc<K>> = HashMap::new();
            let opened = Instant::now();
            let mut events = 0usize;
            let mut warned_at = Instant::now();
            loop {
                let next = tokio::select! {
                    n = tokio::time::timeout(Duration::from_secs(10), stream.next()) => n,
                    _ = cancel.cancelled() => return Ok(None),
                };
                let event = match next {
                    Err(_) => {
                        if warned_at.elapsed() >= Duration::from_secs(10) {
                            tracing::warn!(kind = %self.kind, "still waiting for the end of the initial events of a streaming list");
                            warned_at = Instant::now();
                        }
                        continue;
                    }
                    // Closed at once without a single event: a server that does not
                    // stream lists this way (client-go's very short watch): LIST instead.
                    Ok(None) if events == 0 && opened.elapsed() < Duration::from_secs(1) => {
                        return Err("the watch closed at once, without events".to_owned());
                    }
                    // Closed before the end bookmark: discard and start a new request.
                    Ok(None) => break,
                    Ok(Some(e)) => e,
                };
                events += 1;
                match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                        temp.insert(crate::object::object_key(&o), Arc::new(o));
                    }
                    WatchEvent::Deleted(o) => {
                        temp.remove(&crate::object::object_key(&o));
                    }
                    WatchEvent::Bookmark(b) => {
                        if b.annotations
                            .get(Bookmark::INITIAL_EVENTS_END)
                            .map(String::as_str)
                            == Some("true")
                        {
                            let streamed = config
                                .check_watch_list_consistency
                                .then(|| resource_versions(temp.values()));
                            let items: Vec<Arc<K>> = temp.into_values().collect();
                            if let Err(message) = self.store.replace(items, &b.resource_version) {
                                tracing::error!(kind = %self.kind, %message, "store refused the streamed list");
                                return Ok(None);
                            }
                            self.state.lock().resource_version_unavailable = false;
                            self.set_last_sync(&b.resource_version);
                            if let Some(streamed) = streamed {
                                self.check_consistency(config, streamed, &b.resource_version)
                                    .await;
                            }
                            return Ok(Some((stream, idle)));
                        }
                    }
                    WatchEvent::Error(status) => {
                        if status.is_expired()
                            || status.is_gone()
                            || status.is_too_large_resource_version()
                        {
                            self.state.lock().resource_version_unavailable = true;
                            break;
                        }
                        return Err(status.to_string());
                    }
                }
            }
            if cancel.is_cancelled() {
                return Ok(None);
            }
            backoff.wait(cancel).await;
        }
    }

    /// The consistency detector: LISTs at `rv` exactly and reports, through the error
    /// handler, every key whose presence or resourceVersion differs from `streamed`.
    async fn check_consistency(
        &self,
        config: &ReflectorOptions,
        streamed: HashMap<String, String>,
        rv: &str,
    ) {
        let mut opts = self.base_options(config);
        opts.resource_version = Some(rv.to_owned());
        opts.resource_version_match = Some(ResourceVersionMatch::Exact);
        opts.limit = Some(config.page_size.unwrap_or(DEFAULT_PAGE_SIZE));
        let listed = match self.list_pages(opts).await {
            Ok((items, _, _)) => resource_versions(items.iter()),
            Err(err) => {
                tracing::warn!(kind = %self.kind, %err, resource_version = rv, "consistency detector: the LIST at the streamed resourceVersion failed; not checked");
                return;
            }
        };
        let mut keys: Vec<String> = streamed
            .iter()
            .filter(|(k, v)| listed.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .chain(
                listed
                    .keys()
                    .filter(|k| !streamed.contains_key(*k))
                    .cloned(),
            )
            .collect();
        if keys.is_empty() {
            return;
        }
        keys.sort();
        let err = ReflectorError::Inconsistent {
            kind: self.kind.clone(),
            resource_version: rv.to_owned(),
            keys,
        };
        tracing::error!(kind = %self.kind, %err, "consistency detector");
        (self.error_handler)(&err);
    }
}

/// Each object's key and resourceVersion.
fn resource_versions<'a, K: kube::Resource + 'a>(
    objs: impl Iterator<Item = &'a Arc<K>>,
) -> HashMap<String, String> {
    objs.map(|o| {
        (
            crate::object::object_key(o.as_ref()),
            o.meta().resource_version.clone().unwrap_or_default(),
        )
    })
    .collect()
}
