//! Watch: a task per watch that reads the resource's history after its cursor and sends
//! the encoded frames to the response body.
//!
//! Contract:
//! - Events arrive in resourceVersion order, each exactly once, filtered by namespace
//!   and selectors; an object that starts matching arrives as ADDED, one that stops
//!   matching as DELETED (carrying its new state).
//! - Frames of unfiltered events are the ones encoded at write time, shared by every
//!   watcher; only converted events (selector transitions), initial events and bookmarks
//!   are encoded per watch.
//! - A bookmark carries a version such that every change of the resource up to it has
//!   been sent. A watcher whose cursor falls out of the history (compaction, or a reader
//!   too slow for the history limit) gets a 410 Expired ERROR event and its watch ends.
//! - The watch ends at `timeoutSeconds`, when the client goes away, or at shutdown.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Response};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::errors::StatusError;

use super::body::Body;
use super::query::{parse_rv, validate, Query};
use super::select::Filter;
use super::server::Inner;
use super::store::{Event, EventType, Stored, FRAME_SUFFIX};
use super::table::{self, Output};

/// The annotation of the bookmark that ends the initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// How many history events a watcher takes per lock.
const BATCH: usize = 4096;

/// Starts a watch: validates, decides where it starts, spawns the watcher task.
pub(crate) async fn start(
    inner: Arc<Inner>,
    idx: usize,
    ns: Option<String>,
    q: Query,
    output: Output,
    stop: CancellationToken,
) -> Result<Response<Body>, StatusError> {
    validate(&q)?;
    let reg = inner.registration(idx);
    let schema_changed = reg.custom && inner.state.read().collections[idx].schema_changed;
    let convert = match output {
        Output::Json if !schema_changed => None,
        Output::PartialObjectMetadataList => {
            return Err(StatusError::new(
                406,
                "NotAcceptable",
                format!(
                    "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                    reg.kind
                ),
            ))
        }
        out => Some(Convert {
            output: out,
            include: table::include(q.include_object.as_deref())?,
            reg: reg.clone(),
            first: true,
        }),
    };
    let filter = Filter::parse(
        &reg,
        q.label_selector.as_deref(),
        q.field_selector.as_deref(),
    )?;
    let rv = q.resource_version.as_deref().filter(|v| *v != "0");
    let initial_events = match q.send_initial_events {
        Some(send) => send,
        None => rv.is_none(),
    };
    if let (true, Some(v)) = (initial_events, rv) {
        let x = parse_rv(v)?;
        if x > inner.state.read().rv && !inner.wait_for(x).await {
            let cur = inner.state.read().rv;
            return Err(StatusError::resource_version_too_large(format!(
                "Too large resource version: {x}, current: {cur}"
            )));
        }
    }
    let start_rv = match rv {
        Some(v) if !initial_events => Some(parse_rv(v)?),
        _ => None,
    };
    let mut w = Watcher {
        inner: inner.clone(),
        idx,
        ns,
        filter,
        cursor: 0,
        bookmarks: q.allow_watch_bookmarks,
        kind: reg.kind.clone(),
        api_version: reg.api_version(),
        tx: mpsc::channel(16).0,
        cut: inner.faults.watch_cut(),
        convert,
    };
    let mut initial = Vec::new();
    let mut expired = None;
    {
        let st = inner.state.read();
        // The cut is taken with the starting point: a watch starting after a drop is
        // not dropped, one starting before is.
        w.cut = inner.faults.watch_cut();
        let coll = &st.collections[idx];
        match start_rv {
            None => {
                w.cursor = st.rv;
                if initial_events {
                    coll.visit(None, w.ns.as_deref(), None, |o| {
                        if w.filter.matches(&o.labels, &o.fields) {
                            initial.push(o.clone());
                        }
                        true
                    });
                }
            }
            Some(x) => {
                w.cursor = x;
                if x < coll.oldest {
                    expired = Some(too_old(x, coll.oldest));
                }
            }
        }
    }
    if expired.is_none() && inner.faults.take_expire(start_rv) {
        let cur = inner.state.read().rv;
        expired = Some(too_old(start_rv.unwrap_or(0), cur));
        initial.clear();
    }
    let end_bookmark = q.send_initial_events == Some(true) && q.allow_watch_bookmarks;
    let (tx, rx) = mpsc::channel(16);
    w.tx = tx;
    let timeout = q.timeout_seconds.map(Duration::from_secs);
    let dropped = w.cut.token.clone();
    tokio::spawn(w.run(initial, end_bookmark, expired, timeout, stop, dropped));
    let mut r = Response::new(Body::watch(rx));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(if output == Output::Protobuf {
            "application/vnd.kubernetes.protobuf;stream=watch"
        } else {
            "application/json"
        }),
    );
    Ok(r)
}

fn too_old(x: u64, oldest: u64) -> StatusError {
    StatusError::expired(format!("too old resource version: {x} ({oldest})"))
}

fn error_frame(err: &StatusError, protobuf: bool) -> Bytes {
    if protobuf {
        let status = serde_json::to_value(err.status()).unwrap_or_default();
        if let Some(frame) = protobuf_frame("ERROR", &status) {
            return frame;
        }
    }
    let obj = serde_json::to_string(err.status()).unwrap_or_default();
    format!("{{\"type\":\"ERROR\",\"object\":{obj}}}\n").into()
}

/// A protobuf watch frame (`None` when the object has no protobuf encoding: a kind the
/// table does not know, which the caller then sends as an ERROR).
fn protobuf_frame(ty: &str, obj: &Value) -> Option<Bytes> {
    let mut obj = obj.as_object()?.clone();
    if ty == "ERROR" {
        obj.entry("apiVersion").or_insert_with(|| "v1".into());
        obj.entry("kind").or_insert_with(|| "Status".into());
    }
    match crate::protobuf::encode_object(&obj) {
        Ok(body) => Some(crate::protobuf::watch_frame(ty, &body).into()),
        Err(e) => {
            tracing::warn!("a watch event has no protobuf encoding: {e}");
            None
        }
    }
}

/// Copies many small frames into chunks of about `chunk` bytes, so that a fast stream
/// costs a write per chunk rather than per event; a lone frame is sent as the shared
/// bytes themselves, and with `chunk` 0 every frame is.
fn coalesce(frames: Vec<Bytes>, chunk: usize) -> Vec<Bytes> {
    if frames.len() <= 1 || chunk == 0 {
        return frames;
    }
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(chunk + 16 * 1024);
    for f in frames {
        buf.extend_from_slice(&f);
        if buf.len() >= chunk {
            out.push(std::mem::replace(&mut buf, Vec::with_capacity(chunk + 16 * 1024)).into());
        }
    }
    if !buf.is_empty() {
        out.push(buf.into());
    }
    out
}

struct Watcher {
    inner: Arc<Inner>,
    idx: usize,
    ns: Option<String>,
    filter: Filter,
    cursor: u64,
    bookmarks: bool,
    kind: String,
    api_version: String,
    tx: mpsc::Sender<Vec<Bytes>>,
    /// Where `drop_watches` ends this watch.
    cut: Arc<super::faults::WatchCut>,
    /// Table or PartialObjectMetadata events instead of the objects.
    convert: Option<Convert>,
}

/// How a Table or PartialObjectMetadata watch (or any watch of custom resources whose
/// schema changed) re-encodes each event.
struct Convert {
    output: Output,
    include: table::Include,
    reg: Arc<super::registry::Registration>,
    /// Only the first Table carries columnDefinitions.
    first: bool,
}

impl Convert {
    fn frame(&mut self, ty: &str, obj: &Value) -> Bytes {
        // Objects stored under an older schema show through the current one.
        let mut obj = obj.clone();
        if let (true, Some(schema)) = (self.reg.custom, &self.reg.schema) {
            super::crd::read_view(&mut obj, schema);
        }
        let obj = &obj;
        if self.output == Output::Protobuf {
            return protobuf_frame(ty, obj).unwrap_or_else(|| {
                error_frame(
                    &StatusError::internal(format!("{} has no protobuf encoding", self.reg.kind)),
                    true,
                )
            });
        }
        let object = if self.output == Output::Json {
            obj.clone()
        } else if self.output == Output::Table {
            let meta = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null)});
            let mut t = table::table(&self.reg, std::slice::from_ref(obj), meta, self.include);
            if !std::mem::take(&mut self.first) {
                if let Some(m) = t.as_object_mut() {
                    m.remove("columnDefinitions");
                }
            }
            t
        } else {
            table::partial(obj)
        };
        format!("{}\n", json!({"type": ty, "object": object})).into()
    }

    /// Re-encodes a frame as written at commit time.
    fn shared(&mut self, frame: &[u8]) -> Option<Bytes> {
        let v: Value = serde_json::from_slice(frame).ok()?;
        let ty = v.get("type")?.as_str()?.to_owned();
        Some(self.frame(&ty, v.get("object")?))
    }
}

/// What one history event becomes for one watcher.
enum Out {
    Shared(Bytes),
    Converted(EventType, Arc<Stored>),
}

impl Watcher {
    fn bookmark(&self, rv: u64, end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if end {
            meta["annotations"] = json!({ INITIAL_EVENTS_END: "true" });
        }
        let obj = json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": meta});
        if self.protobuf() {
            if let Some(frame) = protobuf_frame("BOOKMARK", &obj) {
                return frame;
            }
        }
        format!("{{\"type\":\"BOOKMARK\",\"object\":{obj}}}\n").into()
    }

    /// Whether this watch answers in protobuf.
    fn protobuf(&self) -> bool {
        self.convert
            .as_ref()
            .is_some_and(|c| c.output == Output::Protobuf)
    }

    fn translate(&self, e: &Event) -> Option<Out> {
        if let Some(ns) = &self.ns {
            if *e.obj.namespace != **ns {
                return None;
            }
        }
        if self.filter.is_everything() {
            return Some(Out::Shared(e.frame.clone()));
        }
        let now = self.filter.matches(&e.obj.labels, &e.obj.fields);
        let before = e
            .prev
            .as_ref()
            .is_some_and(|p| self.filter.matches(&p.labels, &p.fields));
        match (e.ty, before, now) {
            (EventType::Added, _, true) | (EventType::Deleted, _, true) => {
                Some(Out::Shared(e.frame.clone()))
            }
            (EventType::Modified, true, true) => Some(Out::Shared(e.frame.clone())),
            (EventType::Modified, false, true) => {
                Some(Out::Converted(EventType::Added, e.obj.clone()))
            }
            // kube-apiserver sends the object as it was when it still matched, at the
            // change's resourceVersion.
            (EventType::Modified, true, false) => {
                let gone = match &e.prev {
                    Some(p) => Arc::new(super::store::respliced(p, e.rv, EventType::Deleted).1),
                    None => e.obj.clone(),
                };
                Some(Out::Converted(EventType::Deleted, gone))
            }
            _ => None,
        }
    }

    async fn send(&self, batch: Vec<Bytes>) -> bool {
        batch.is_empty() || self.tx.send(batch).await.is_ok()
    }

    async fn send_initial(&mut self, initial: Vec<Arc<Stored>>) -> bool {
        if let Some(c) = self.convert.as_mut() {
            let frames: Vec<Bytes> = initial
                .iter()
                .filter_map(|o| o.to_value().ok())
                .map(|o| c.frame("ADDED", &Value::Object(o)))
                .collect();
            return self.send(coalesce(frames, self.inner.watch_chunk)).await;
        }
        let size = self.inner.watch_chunk;
        let mut buf = Vec::with_capacity(size + 16 * 1024);
        for o in initial {
            buf.extend_from_slice(EventType::Added.frame_prefix());
            buf.extend_from_slice(&o.bytes);
            buf.extend_from_slice(FRAME_SUFFIX);
            if buf.len() >= size {
                let chunk = std::mem::replace(&mut buf, Vec::with_capacity(size + 16 * 1024));
                if !self.send(vec![chunk.into()]).await {
                    return false;
                }
            }
        }
        buf.is_empty() || self.send(vec![buf.into()]).await
    }

    /// Takes the events after the cursor; `Err` when the cursor was compacted away.
    fn take(&self) -> Result<Vec<Arc<Event>>, StatusError> {
        let st = self.inner.state.read();
        let coll = &st.collections[self.idx];
        // Read under the state lock, which drop_watches also holds: events after the cut
        // were written after drop_watches returned and are never sent.
        let limit = self.cut.limit();
        if self.cursor >= coll.last_rv || self.cursor >= limit {
            return Ok(Vec::new());
        }
        if self.cursor < coll.oldest {
            return Err(too_old(self.cursor, coll.oldest));
        }
        let first = coll.history.partition_point(|e| e.rv <= self.cursor);
        Ok(coll
            .history
            .range(first..)
            .take_while(|e| e.rv <= limit)
            .take(BATCH)
            .cloned()
            .collect())
    }

    /// Sends every event after the cursor; false when the watch must end.
    async fn drain(&mut self) -> bool {
        loop {
            let events = match self.take() {
                Ok(e) => e,
                Err(err) => {
                    let _ = self.send(vec![error_frame(&err, self.protobuf())]).await;
                    return false;
                }
            };
            let Some(last) = events.last() else {
                return true;
            };
            self.cursor = last.rv;
            let mut batch = Vec::with_capacity(events.len());
            for e in &events {
                let out = self.translate(e);
                match (out, self.convert.as_mut()) {
                    (Some(Out::Shared(b)), None) => batch.push(b),
                    (Some(Out::Converted(ty, obj)), None) => batch.push(obj.frame(ty)),
                    (Some(Out::Shared(b)), Some(c)) => batch.extend(c.shared(&b)),
                    (Some(Out::Converted(ty, obj)), Some(c)) => {
                        batch.extend(c.shared(&obj.frame(ty)))
                    }
                    (None, _) => {}
                }
            }
            if !self.send(coalesce(batch, self.inner.watch_chunk)).await {
                return false;
            }
        }
    }

    async fn run(
        mut self,
        initial: Vec<Arc<Stored>>,
        end_bookmark: bool,
        expired: Option<StatusError>,
        timeout: Option<Duration>,
        stop: CancellationToken,
        dropped: CancellationToken,
    ) {
        let work = async {
            if let Some(err) = expired {
                let _ = self.send(vec![error_frame(&err, self.protobuf())]).await;
                return;
            }
            if !self.send_initial(initial).await {
                return;
            }
            if end_bookmark {
                let b = self.bookmark(self.cursor, true);
                if !self.send(vec![b]).await {
                    return;
                }
            }
            let mut changed = self.inner.state.read().collections[self.idx]
                .notify
                .subscribe();
            let mut tick = tokio::time::interval(self.inner.bookmark_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                changed.borrow_and_update();
                if !self.drain().await {
                    return;
                }
                if self.cut.token.is_cancelled() {
                    return;
                }
                tokio::select! {
                    r = changed.changed() => if r.is_err() { return },
                    _ = tick.tick(), if self.bookmarks && !self.cut.token.is_cancelled() => {
                        let rv = {
                            let st = self.inner.state.read();
                            let coll = &st.collections[self.idx];
                            let pending = coll.history.back().is_some_and(|e| e.rv > self.cursor);
                            (!pending).then_some(st.rv)
                        };
                        if let Some(rv) = rv {
                            self.cursor = rv;
                            let b = self.bookmark(rv, false);
                            if !self.send(vec![b]).await {
                                return;
                            }
                        }
                    }
                    _ = self.tx.closed() => return,
                }
            }
        };
        let deadline = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = work => {}
            _ = deadline => {}
            _ = stop.cancelled() => {}
            _ = dropped.cancelled() => {}
        }
    }
}
