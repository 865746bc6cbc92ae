//! Test support for the informer and factory tests: a fake API "source" behind the
//! [`ListerWatcher`] trait, and a recording event handler that tests can wait on.
//!
//! The source keeps the current objects; a list returns them, and each watch is a channel
//! the source pushes events into. Tests change objects *visibly* (stored and sent to the
//! open watches) or *silently* (stored only, so only a relist sees them), and can drop or
//! expire (410) the open watches.
//!
//! Handlers run on threads of their own. [`Recorder::wait_for`] blocks inside
//! `spawn_blocking`, which keeps tokio's paused clock from auto-advancing while the test
//! waits for a handler thread: time moves only where a test sleeps.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::cache::delta_fifo::DeltaObject;
use crate::cache::informer::ResourceEventHandler;
use crate::cache::reflector::ListerWatcher;
use crate::client::{self, ListOptions, ObjectList, WatchEvent};
use crate::errors::StatusError;
use crate::object::{object_key, Object};

/// A pod `ns/name` at resourceVersion `rv`.
pub(crate) fn pod(name: &str, rv: &str) -> Pod {
    pod_with(name, rv, &[])
}

/// A pod `ns/name` at `rv` with labels.
pub(crate) fn pod_with(name: &str, rv: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect()
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

struct SourceState<K> {
    objects: BTreeMap<String, K>,
    rv: u64,
    watchers: Vec<mpsc::UnboundedSender<WatchEvent<K>>>,
    list_error: Option<StatusError>,
    lists: Vec<ListOptions>,
    watches: Vec<ListOptions>,
}

/// A fake API server for one resource (see the module docs).
pub(crate) struct FakeSource<K> {
    state: Mutex<SourceState<K>>,
}

impl<K: Object> FakeSource<K> {
    /// A source holding `objects`.
    pub(crate) fn new(objects: Vec<K>) -> Arc<Self> {
        let objects = objects.into_iter().map(|o| (object_key(&o), o)).collect();
        Arc::new(FakeSource {
            state: Mutex::new(SourceState {
                objects,
                rv: 100,
                watchers: Vec::new(),
                list_error: None,
                lists: Vec::new(),
                watches: Vec::new(),
            }),
        })
    }

    fn send(&self, event: impl Fn() -> WatchEvent<K>) {
        let mut st = self.state.lock().unwrap();
        st.watchers.retain(|w| w.unbounded_send(event()).is_ok());
    }

    /// Stores `obj` and sends ADDED to the open watches.
    pub(crate) fn add(&self, obj: K) {
        self.set_silently(obj.clone());
        self.send(|| WatchEvent::Added(obj.clone()));
    }

    /// Stores `obj` and sends MODIFIED to the open watches.
    pub(crate) fn modify(&self, obj: K) {
        self.set_silently(obj.clone());
        self.send(|| WatchEvent::Modified(obj.clone()));
    }

    /// Removes `obj` and sends DELETED to the open watches.
    pub(crate) fn delete(&self, obj: K) {
        self.remove_silently(&object_key(&obj));
        self.send(|| WatchEvent::Deleted(obj.clone()));
    }

    /// Stores `obj` without telling any watch: only a relist sees it.
    pub(crate) fn set_silently(&self, obj: K) {
        let mut st = self.state.lock().unwrap();
        st.rv += 1;
        st.objects.insert(object_key(&obj), obj);
    }

    /// Removes `key` without telling any watch: only a relist sees it gone.
    pub(crate) fn remove_silently(&self, key: &str) {
        let mut st = self.state.lock().unwrap();
        st.rv += 1;
        st.objects.remove(key);
    }

    /// Ends every open watch with a 410 Gone error event: the reflector relists.
    pub(crate) fn expire_watches(&self) {
        self.send(|| WatchEvent::Error(StatusError::gone("too old resource version")));
        self.state.lock().unwrap().watchers.clear();
    }

    /// Makes every list fail with 403 Forbidden and this message (`None`: lists work).
    pub(crate) fn fail_lists(&self, message: Option<&str>) {
        self.state.lock().unwrap().list_error =
            message.map(|m| StatusError::new(403, "Forbidden", m));
    }

    /// How many watches are open.
    pub(crate) fn open_watches(&self) -> usize {
        let mut st = self.state.lock().unwrap();
        st.watchers.retain(|w| !w.is_closed());
        st.watchers.len()
    }

    /// The options of every list call so far.
    pub(crate) fn list_calls(&self) -> Vec<ListOptions> {
        self.state.lock().unwrap().lists.clone()
    }

    /// The options of every watch call so far.
    pub(crate) fn watch_calls(&self) -> Vec<ListOptions> {
        self.state.lock().unwrap().watches.clone()
    }
}

impl<K: Object> ListerWatcher<K> for FakeSource<K> {
    fn list(&self, opts: ListOptions) -> BoxFuture<'static, Result<ObjectList<K>, client::Error>> {
        let mut st = self.state.lock().unwrap();
        st.lists.push(opts);
        let result = match &st.list_error {
            Some(err) => Err(client::Error::Api(err.clone())),
            None => Ok(ObjectList {
                items: st.objects.values().cloned().collect(),
                resource_version: st.rv.to_string(),
                continue_token: None,
                remaining_item_count: None,
            }),
        };
        async move { result }.boxed()
    }

    fn watch(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'static, Result<BoxStream<'static, WatchEvent<K>>, client::Error>> {
        let (tx, rx) = mpsc::unbounded();
        let mut st = self.state.lock().unwrap();
        st.watches.push(opts);
        st.watchers.push(tx);
        async move { Ok(rx.boxed()) }.boxed()
    }
}

/// Yields (without advancing the paused clock) until `cond` holds; panics after many
/// rounds. For conditions that tokio tasks, not handler threads, make true.
pub(crate) async fn settle(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..100_000 {
        if cond() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never happened: {what}");
}

/// Sleeps in 10 ms steps of the (paused) clock until `cond` holds; for conditions that
/// need time to pass (backoff, resync).
pub(crate) async fn wait_until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..100_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never happened: {what}");
}

/// Waits for `cond`, made true by a handler thread, without advancing the paused clock.
pub(crate) async fn wait_for_thread(what: &'static str, cond: impl Fn() -> bool + Send + 'static) {
    tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !cond() {
            assert!(
                std::time::Instant::now() < deadline,
                "never happened: {what}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    })
    .await
    .unwrap();
}

/// `name@rv` of an object.
pub(crate) fn describe<K: Object>(obj: &K) -> String {
    format!(
        "{}@{}",
        obj.meta().name.as_deref().unwrap_or(""),
        obj.meta().resource_version.as_deref().unwrap_or("")
    )
}

/// A handler recording every notification as a line of text:
/// `add pod1@1 initial`, `add pod1@1`, `update pod1@1 -> pod1@2`, `delete pod1@1`,
/// `delete tombstone ns/pod1 pod1@1`.
#[derive(Default)]
pub(crate) struct Recorder {
    events: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Recorder {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Recorder::default())
    }

    pub(crate) fn push(&self, line: String) {
        self.events.lock().unwrap().push(line);
        self.changed.notify_all();
    }

    /// Everything recorded so far.
    pub(crate) fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }

    /// Removes and returns everything recorded so far.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    /// Waits (without advancing the paused clock) until `n` events were recorded, and
    /// returns them all.
    pub(crate) async fn wait_for(self: &Arc<Self>, n: usize) -> Vec<String> {
        self.wait_until(move |ev| ev.len() >= n).await
    }

    /// Waits (without advancing the paused clock) until some event contains `needle`;
    /// then removes and returns everything up to and including it.
    pub(crate) async fn take_through(self: &Arc<Self>, needle: &str) -> Vec<String> {
        let n = needle.to_owned();
        self.wait_until(move |ev| ev.iter().any(|e| e.contains(&n)))
            .await;
        let mut events = self.events.lock().unwrap();
        let at = events
            .iter()
            .position(|e| e.contains(needle))
            .unwrap_or_default();
        events.drain(..=at).collect()
    }

    async fn wait_until(
        self: &Arc<Self>,
        cond: impl Fn(&[String]) -> bool + Send + 'static,
    ) -> Vec<String> {
        let me = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            let mut events = me.events.lock().unwrap();
            while !cond(&events) {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                assert!(!left.is_zero(), "handler events so far: {events:?}");
                events = me.changed.wait_timeout(events, left).unwrap().0;
            }
            events.clone()
        })
        .await
        .unwrap()
    }
}

/// Registers a [`Recorder`] with an informer (the same recorder may back several
/// registrations).
pub(crate) struct Rec(pub(crate) Arc<Recorder>);

impl<K: Object> ResourceEventHandler<K> for Rec {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let initial = if is_in_initial_list { " initial" } else { "" };
        self.0
            .push(format!("add {}{initial}", describe(obj.as_ref())));
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        self.0.push(format!(
            "update {} -> {}",
            describe(old.as_ref()),
            describe(new.as_ref())
        ));
    }

    fn on_delete(&self, obj: &DeltaObject<K>) {
        let line = match obj {
            DeltaObject::Object(o) => format!("delete {}", describe(o.as_ref())),
            DeltaObject::Tombstone(t) => format!(
                "delete tombstone {} {}",
                t.key,
                t.obj.as_ref().map_or("-".into(), |o| describe(o.as_ref()))
            ),
        };
        self.0.push(line);
    }
}
