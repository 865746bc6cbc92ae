//! Watch events and the streaming decoder of a watch body.
//!
//! Contract:
//! - Frames are JSON objects `{"type": T, "object": {...}}` decoded one after another
//!   from the byte stream, whatever separates them (a newline, nothing, or whitespace),
//!   and whatever the chunk boundaries (SEMANTICS 9.6, 9.7).
//! - A frame whose type is not ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, an object
//!   that does not decode, or a transport error ends the stream after one
//!   [`WatchEvent::Error`] carrying a 500 InternalError `Status` with a
//!   `ClientWatchDecoding` cause and the message `unable to decode an event from the
//!   watch stream: <why>` (SEMANTICS 3.21, 9.8), as client-go's stream watcher reports it.
//! - A body that ends in the middle of a frame ends the stream silently (client-go treats
//!   an unexpected EOF as a closed watch).
//! - ERROR frames sent by the server arrive as [`WatchEvent::Error`] with the server's
//!   `Status`; the stream then goes on until the server closes it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{FutureExt, Stream};
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::errors::{cause, reason, Status, StatusCause, StatusDetails, StatusError};

/// One event of a watch.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<K> {
    /// An object was added (or, at the start of a watch, exists).
    Added(K),
    /// An object was modified.
    Modified(K),
    /// An object was deleted; this is its last state.
    Deleted(K),
    /// A progress marker: every change up to this resourceVersion has been sent.
    Bookmark(Bookmark),
    /// An error `Status`, from the server or from decoding the stream.
    Error(StatusError),
}

/// The content of a BOOKMARK event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bookmark {
    /// The resourceVersion the watch has reached.
    pub resource_version: String,
    /// The bookmark's annotations (`k8s.io/initial-events-end: "true"` ends the initial
    /// events of a watch with `sendInitialEvents`).
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// The annotation that ends the initial events of a `sendInitialEvents` watch.
    pub const INITIAL_EVENTS_END: &'static str = "k8s.io/initial-events-end";

    /// Whether this bookmark ends the initial events.
    pub fn is_initial_events_end(&self) -> bool {
        self.annotations
            .get(Self::INITIAL_EVENTS_END)
            .is_some_and(|v| v == "true")
    }
}

#[derive(Deserialize)]
struct RawFrame<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct BookmarkObject {
    #[serde(default)]
    metadata: Option<BookmarkMeta>,
}

/// The error event client-go's stream watcher produces for a stream it cannot decode.
pub(crate) fn decoding_error(why: &str) -> StatusError {
    let message = format!("unable to decode an event from the watch stream: {why}");
    StatusError::new(500, reason::INTERNAL_ERROR, message.clone()).with_details(StatusDetails {
        causes: vec![StatusCause {
            reason: cause::CLIENT_WATCH_DECODING.into(),
            message,
            field: String::new(),
        }],
        ..Default::default()
    })
}

/// Decodes one protobuf watch frame (see `super::protobuf`); `bool`: without
/// `metadata.managedFields`.
pub(crate) type ProtobufEvent<K> = fn(&[u8], bool) -> Result<WatchEvent<K>, String>;

/// How a stream's objects decode: exact vector capacities (JSON), and the protobuf frame
/// decoder when the stream is protobuf (a value handed down, so that a JSON-only client
/// never compiles one for `K`).
pub(crate) struct Decoding<K> {
    pub(crate) exact: bool,
    pub(crate) protobuf: Option<ProtobufEvent<K>>,
}

impl<K> Clone for Decoding<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Decoding<K> {}

impl<K> Decoding<K> {
    /// JSON frames.
    pub(crate) fn json(exact: bool) -> Self {
        Decoding {
            exact,
            protobuf: None,
        }
    }
}

/// Splits a byte stream into watch events.
#[derive(Debug, Default)]
pub(crate) struct FrameDecoder {
    buf: Vec<u8>,
    pos: usize,
    /// Decode objects without `metadata.managedFields`.
    without_managed_fields: bool,
    /// Frames are protobuf (a 4-byte big-endian length, a `metav1.WatchEvent`).
    protobuf: bool,
}

fn object<'a>(raw: Option<&'a RawValue>, ty: &str) -> Result<&'a str, String> {
    raw.map(RawValue::get)
        .ok_or_else(|| format!("watch event {ty} has no object"))
}

impl FrameDecoder {
    /// How many bytes are buffered and not yet decoded.
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Appends bytes read from the body.
    pub(crate) fn push(&mut self, data: &[u8]) {
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete event; `None` when more bytes are needed; `Err` with the reason
    /// when the stream cannot be decoded.
    pub(crate) fn next<K: DeserializeOwned>(
        &mut self,
        how: Decoding<K>,
    ) -> Option<Result<WatchEvent<K>, String>> {
        if self.protobuf {
            return self.next_protobuf(how.protobuf);
        }
        let exact = how.exact;
        let rest = &self.buf[self.pos..];
        let skip = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(rest.len());
        self.pos += skip;
        let rest = &self.buf[self.pos..];
        if rest.is_empty() {
            return None;
        }
        if let Some((event, used)) = self.one_pass::<K>(exact) {
            self.pos += used;
            return Some(event);
        }
        let rest = &self.buf[self.pos..];
        let mut it = serde_json::Deserializer::from_slice(rest).into_iter::<RawFrame<'_>>();
        let (event, used) = match it.next() {
            None => return None,
            Some(Err(e)) if e.is_eof() => return None,
            Some(Err(e)) => return Some(Err(e.to_string())),
            Some(Ok(f)) => (
                convert::<K>(&f, self.without_managed_fields, exact),
                it.byte_offset(),
            ),
        };
        self.pos += used;
        Some(event)
    }
}

impl FrameDecoder {
    /// The next protobuf frame's event; `None` when the frame is not complete yet.
    fn next_protobuf<K>(
        &mut self,
        decode: Option<ProtobufEvent<K>>,
    ) -> Option<Result<WatchEvent<K>, String>> {
        let rest = &self.buf[self.pos..];
        let len: [u8; 4] = rest.get(..4)?.try_into().ok()?;
        let len = usize::try_from(u32::from_be_bytes(len)).ok()?;
        let frame = rest.get(4..4 + len)?;
        let event = match decode {
            Some(decode) => decode(frame, self.without_managed_fields),
            None => Err("protobuf frames on a stream without a protobuf decoder".to_owned()),
        };
        self.pos += 4 + len;
        Some(event)
    }

    /// The next event decoded in one pass, its object straight into `K` (no separate
    /// scan for the object's extent), when the frame ends before a newline and names its
    /// type before its object, as API servers write frames. `None` sends the caller to
    /// the two-pass decode, which then also produces any error (with its usual message).
    fn one_pass<K: DeserializeOwned>(
        &self,
        exact: bool,
    ) -> Option<(Result<WatchEvent<K>, String>, usize)> {
        let rest = &self.buf[self.pos..];
        let line = &rest[..memchr::memchr(b'\n', rest)?];
        // Validated once here, the line then decodes without a UTF-8 check per string
        // (and its arrays counted from the same text, see `super::exact`).
        let line = std::str::from_utf8(line).ok()?;
        let (ty, object) = super::exact::with_lengths_if(exact, line, || {
            frame::<K>(line, self.without_managed_fields)
        })?;
        // The frame ends the line (what follows the newline is the next one).
        let used = line.len();
        let event = match object {
            FrameObject::Typed(obj) => match ty.as_ref() {
                "ADDED" => WatchEvent::Added(obj),
                "MODIFIED" => WatchEvent::Modified(obj),
                _ => WatchEvent::Deleted(obj),
            },
            FrameObject::Raw(raw) => {
                return Some((
                    convert::<K>(
                        &RawFrame { ty, object: raw },
                        self.without_managed_fields,
                        exact,
                    ),
                    used,
                ));
            }
        };
        Some((Ok(event), used))
    }
}

/// The frame of `line` (its type and object); `None` when it does not decode, or
/// anything but whitespace follows it on the line.
fn frame<K: DeserializeOwned>(
    line: &str,
    skip: bool,
) -> Option<(Cow<'_, str>, FrameObject<'_, K>)> {
    use serde::de::DeserializeSeed as _;
    let mut de = serde_json::Deserializer::from_str(line);
    let parts = FrameSeed::<K> {
        skip,
        kind: std::marker::PhantomData,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(parts)
}

/// A frame's object: decoded already when the type (seen first) says it is an object
/// of the watched kind, raw otherwise (bookmarks, errors, an object before its type).
enum FrameObject<'a, K> {
    Typed(K),
    Raw(Option<&'a RawValue>),
}

/// A frame decoded in one pass; `skip` drops the object's `metadata.managedFields`.
/// Exact vector capacities come from the caller's `with_lengths`. The flag is a value,
/// not a type parameter, so that `K`'s `Deserialize` is compiled once for it.
struct FrameSeed<K> {
    skip: bool,
    kind: std::marker::PhantomData<fn() -> K>,
}

impl<'de, K: DeserializeOwned> serde::de::DeserializeSeed<'de> for FrameSeed<K> {
    type Value = (Cow<'de, str>, FrameObject<'de, K>);

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de, K: DeserializeOwned> serde::de::Visitor<'de> for FrameSeed<K> {
    type Value = (Cow<'de, str>, FrameObject<'de, K>);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a watch event")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let mut ty: Option<Cow<'de, str>> = None;
        let mut object: Option<FrameObject<'de, K>> = None;
        while let Some(BorrowedStr(key)) = map.next_key::<BorrowedStr<'de>>()? {
            match key.as_ref() {
                "type" if ty.is_none() => ty = Some(map.next_value::<BorrowedStr<'de>>()?.0),
                "object" if object.is_none() => {
                    let typed = matches!(ty.as_deref(), Some("ADDED" | "MODIFIED" | "DELETED"));
                    object = Some(if typed {
                        FrameObject::Typed(map.next_value_seed(ObjectSeed::<K> {
                            skip: self.skip,
                            kind: std::marker::PhantomData,
                        })?)
                    } else {
                        FrameObject::Raw(Some(map.next_value::<&'de RawValue>()?))
                    });
                }
                "type" | "object" => return Err(A::Error::custom("duplicate field")),
                _ => {
                    // Through the exact adapter, which keeps its array counts in step
                    // (when the caller asked for exact capacities).
                    map.next_value_seed(super::exact::Ignore)?;
                }
            }
        }
        Ok((
            ty.ok_or_else(|| A::Error::missing_field("type"))?,
            object.unwrap_or(FrameObject::Raw(None)),
        ))
    }
}

/// An object of the watched kind, without its `metadata.managedFields` when `skip`.
struct ObjectSeed<K> {
    skip: bool,
    kind: std::marker::PhantomData<fn() -> K>,
}

impl<'de, K: DeserializeOwned> serde::de::DeserializeSeed<'de> for ObjectSeed<K> {
    type Value = K;
    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<K, D::Error> {
        super::decode::deserialize(de, self.skip)
    }
}

/// A string borrowed from the input when it has no escapes, owned otherwise.
struct BorrowedStr<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for BorrowedStr<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = BorrowedStr<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BorrowedStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BorrowedStr(Cow::Owned(v.to_owned())))
            }
        }
        de.deserialize_str(V)
    }
}

fn convert<K: DeserializeOwned>(
    f: &RawFrame<'_>,
    without_managed_fields: bool,
    exact: bool,
) -> Result<WatchEvent<K>, String> {
    let ty = f.ty.as_ref();
    let typed = |raw| -> Result<K, String> {
        super::decode::decode_object(object(raw, ty)?, without_managed_fields, exact)
            .map_err(|e| e.to_string())
    };
    match ty {
        "ADDED" => typed(f.object).map(WatchEvent::Added),
        "MODIFIED" => typed(f.object).map(WatchEvent::Modified),
        "DELETED" => typed(f.object).map(WatchEvent::Deleted),
        "BOOKMARK" => {
            let b: BookmarkObject =
                serde_json::from_str(object(f.object, ty)?).map_err(|e| e.to_string())?;
            let meta = b.metadata.unwrap_or_default();
            Ok(WatchEvent::Bookmark(Bookmark {
                resource_version: meta.resource_version.unwrap_or_default(),
                annotations: meta.annotations.unwrap_or_default(),
            }))
        }
        "ERROR" => {
            let st: Status =
                serde_json::from_str(object(f.object, ty)?).map_err(|e| e.to_string())?;
            Ok(WatchEvent::Error(st.into()))
        }
        other => Err(format!("got invalid watch event type: {other}")),
    }
}

/// A protobuf frame's event (see `super::protobuf`).
pub(crate) fn convert_protobuf<K, C: super::protobuf::Codec<K>>(
    frame: &[u8],
    without_managed_fields: bool,
) -> Result<WatchEvent<K>, String> {
    use kubegen_apimachinery::protobuf as pb;
    let ev = pb::watch_event(frame).map_err(|e| e.to_string())?;
    let object = || {
        if ev.object.is_empty() {
            return Err(format!("watch event {} has no object", ev.kind));
        }
        pb::envelope(ev.object)
            .and_then(pb::Deserializer::object)
            .map_err(|e| e.to_string())
    };
    let typed = || -> Result<K, String> {
        C::decode(object()?, without_managed_fields).map_err(|e| e.to_string())
    };
    match ev.kind {
        "ADDED" => typed().map(WatchEvent::Added),
        "MODIFIED" => typed().map(WatchEvent::Modified),
        "DELETED" => typed().map(WatchEvent::Deleted),
        "BOOKMARK" => {
            let b = BookmarkObject::deserialize(object()?).map_err(|e| e.to_string())?;
            let meta = b.metadata.unwrap_or_default();
            Ok(WatchEvent::Bookmark(Bookmark {
                resource_version: meta.resource_version.unwrap_or_default(),
                annotations: meta.annotations.unwrap_or_default(),
            }))
        }
        "ERROR" => {
            let st = Status::deserialize(object()?).map_err(|e| e.to_string())?;
            Ok(WatchEvent::Error(st.into()))
        }
        other => Err(format!("got invalid watch event type: {other}")),
    }
}

/// The events of one watch, in order; ends when the server closes the watch, or after
/// a decoding error event.
pub struct WatchStream<K> {
    inner: Pin<Box<dyn Stream<Item = WatchEvent<K>> + Send>>,
}

impl<K> std::fmt::Debug for WatchStream<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream").finish_non_exhaustive()
    }
}

struct Reader<B, K> {
    body: B,
    dec: FrameDecoder,
    /// How objects decode.
    how: Decoding<K>,
    /// No more events.
    done: bool,
    kind: std::marker::PhantomData<fn() -> K>,
}

/// Buffers at least this large are decoded on the decoding pool (see [`super::pool`]);
/// smaller ones in the reader's own task. A hop to the pool and back costs two thread
/// wake-ups: over TLS a real kube-apiserver's watch arrives a record (at most 16 KiB, a
/// few events) at a time, and handing each record to the pool made a 20k-Pod streaming
/// list cost 80k context switches against client-go's 8-20k.
const POOL_DECODE_BYTES: usize = 256 * 1024;

/// How many times a reader yields to let more of the body arrive before it decodes, and
/// the buffer size at which it stops waiting.
const GATHER_YIELDS: usize = 4;
const GATHER_BYTES: usize = 64 * 1024;

/// Buffers at least this large are split in two at a newline and decoded on two
/// decoding threads at once.
const SPLIT_DECODE_BYTES: usize = 32 * 1024;

/// How many decoded batches may wait for the consumer.
const BATCHES_AHEAD: usize = 4;

/// Decodes every complete event in `dec`; stops after a decoding error, which becomes the
/// last event (`true`: the stream must end).
fn decode_batch<K: DeserializeOwned>(
    dec: &mut FrameDecoder,
    out: &mut Vec<WatchEvent<K>>,
    how: Decoding<K>,
) -> bool {
    loop {
        match dec.next::<K>(how) {
            Some(Ok(ev)) => out.push(ev),
            Some(Err(why)) => {
                out.push(WatchEvent::Error(decoding_error(&why)));
                return true;
            }
            None => return false,
        }
    }
}

impl FrameDecoder {
    /// Moves the undecoded bytes after the first newline past their middle into a second
    /// decoder, or returns `None` when there is no such newline. A raw newline byte in
    /// JSON can only be whitespace, and the server ends each frame with one; whether it
    /// really ended a frame is known once this decoder has consumed everything before it.
    fn split_at_newline(&mut self) -> Option<FrameDecoder> {
        if self.protobuf {
            return None;
        }
        let rest = &self.buf[self.pos..];
        let mid = rest.len() / 2;
        let at = mid + memchr::memchr(b'\n', &rest[mid..])? + 1;
        if at >= rest.len() {
            return None;
        }
        let tail = rest[at..].to_vec();
        self.buf.truncate(self.pos + at);
        Some(FrameDecoder {
            buf: tail,
            pos: 0,
            without_managed_fields: self.without_managed_fields,
            protobuf: false,
        })
    }
}

/// Decodes `dec` on the decoding pool.
async fn decode_on_pool<K>(
    mut dec: FrameDecoder,
    how: Decoding<K>,
) -> Result<(FrameDecoder, Vec<WatchEvent<K>>, bool), String>
where
    K: DeserializeOwned + Send + 'static,
{
    super::pool::run(move || {
        let mut events = Vec::new();
        let stop = decode_batch::<K>(&mut dec, &mut events, how);
        (dec, events, stop)
    })
    .await
}

impl<B, K> Reader<B, K>
where
    B: http_body::Body<Data = bytes::Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
    K: DeserializeOwned + Send + 'static,
{
    /// Reads one chunk (waiting for it) and whatever else the body has already
    /// delivered, and decodes every complete event; after the last batch `done` is set.
    async fn next_batch(&mut self) -> Vec<WatchEvent<K>> {
        let mut failure = None;
        let mut ended = {
            // (A body error need not be `Send`: none is kept past this block.)
            let first = self.body.frame().await;
            self.push_frame(first, &mut failure).is_none()
        };
        if !ended {
            ended = self.push_ready(&mut failure);
        }
        // A server that writes each event on its own delivers a chunk per event: let what
        // the connection has nearly delivered join this batch, so that the consumer is
        // woken once per burst rather than per event.
        for _ in 0..GATHER_YIELDS {
            if ended || self.dec.buffered() >= GATHER_BYTES {
                break;
            }
            let before = self.dec.buffered();
            tokio::task::yield_now().await;
            ended = self.push_ready(&mut failure);
            if self.dec.buffered() == before {
                break;
            }
        }
        let mut events = Vec::new();
        let stop = if self.dec.buffered() >= POOL_DECODE_BYTES {
            self.decode_pooled(&mut events).await
        } else {
            decode_batch::<K>(&mut self.dec, &mut events, self.how)
        };
        if stop {
            self.done = true;
        } else if ended {
            if let Some(why) = failure {
                events.push(WatchEvent::Error(decoding_error(&why)));
            }
            self.done = true;
        }
        events
    }

    /// Adds one frame of the body to the decoder: `Some(())` if the body goes on, `None`
    /// at its end or at an error (kept in `failure`).
    fn push_frame(
        &mut self,
        frame: Option<Result<http_body::Frame<bytes::Bytes>, B::Error>>,
        failure: &mut Option<String>,
    ) -> Option<()> {
        match frame? {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    self.dec.push(&data);
                }
                Some(())
            }
            Err(e) => {
                *failure = Some(e.to_string());
                None
            }
        }
    }

    /// Adds every frame the body has already delivered; true at its end or at an error.
    fn push_ready(&mut self, failure: &mut Option<String>) -> bool {
        while let Some(frame) = self.body.frame().now_or_never() {
            if self.push_frame(frame, failure).is_none() {
                return true;
            }
        }
        false
    }

    /// Decodes the buffer on the decoding pool, in two halves on two threads when it is
    /// large; returns whether the stream must end.
    async fn decode_pooled(&mut self, events: &mut Vec<WatchEvent<K>>) -> bool {
        let mut dec = std::mem::take(&mut self.dec);
        let second = if dec.buffered() >= SPLIT_DECODE_BYTES && super::pool::width() > 1 {
            dec.split_at_newline()
        } else {
            None
        };
        let Some(second) = second else {
            return match decode_on_pool::<K>(dec, self.how).await {
                Ok((dec, evs, stop)) => {
                    self.dec = dec;
                    *events = evs;
                    stop
                }
                Err(e) => {
                    events.push(WatchEvent::Error(decoding_error(&e)));
                    true
                }
            };
        };
        let (first, second) = futures::join!(
            decode_on_pool::<K>(dec, self.how),
            decode_on_pool::<K>(second, self.how)
        );
        match (first, second) {
            (Ok((dec, evs, true)), _) => {
                self.dec = dec;
                *events = evs;
                true
            }
            (Ok((dec, mut evs, false)), Ok((second, more, stop))) if dec.buffered() == 0 => {
                // The first half ended exactly at the newline: the second half started
                // at a frame and its events follow.
                evs.extend(more);
                *events = evs;
                self.dec = second;
                stop
            }
            (Ok((mut dec, mut evs, false)), Ok((second, _, _))) => {
                // The newline was inside a frame: the second half is decoded again,
                // after the first half's unfinished frame.
                dec.push(&second.buf);
                let stop = decode_batch::<K>(&mut dec, &mut evs, self.how);
                self.dec = dec;
                *events = evs;
                stop
            }
            (Err(e), _) | (_, Err(e)) => {
                events.push(WatchEvent::Error(decoding_error(&e)));
                true
            }
        }
    }
}

impl<K> WatchStream<K>
where
    K: DeserializeOwned + Send + 'static,
{
    /// Decodes the events of a watch response body.
    pub fn new<B>(body: B) -> Self
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        Self::with_options(body, false)
    }

    /// Decodes the events of a watch response body, objects without their
    /// `metadata.managedFields` when `without_managed_fields` is set.
    ///
    /// Everything the body has already delivered is decoded as one batch, on the
    /// decoding threads when it is large (split over two of them when larger still).
    /// Inside a tokio runtime, a task of its own reads and decodes ahead of the consumer
    /// (at most a few batches), so that decoding overlaps with handling the events.
    pub fn with_options<B>(body: B, without_managed_fields: bool) -> Self
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        Self::with_decoding(body, without_managed_fields, false)
    }

    /// [`WatchStream::with_options`], with exact vector capacities in every decoded
    /// object when `exact` (see `super::exact`).
    pub(crate) fn with_decoding<B>(body: B, without_managed_fields: bool, exact: bool) -> Self
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let dec = FrameDecoder {
            without_managed_fields,
            ..FrameDecoder::default()
        };
        Self::from_decoder(body, dec, Decoding::json(exact))
    }

    /// Decodes the events of a protobuf watch response body (`Content-Type:
    /// application/vnd.kubernetes.protobuf;stream=watch`; see `super::protobuf`).
    pub(crate) fn protobuf<B>(
        body: B,
        without_managed_fields: bool,
        decode: ProtobufEvent<K>,
    ) -> Self
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let dec = FrameDecoder {
            without_managed_fields,
            protobuf: true,
            ..FrameDecoder::default()
        };
        Self::from_decoder(
            body,
            dec,
            Decoding {
                exact: false,
                protobuf: Some(decode),
            },
        )
    }

    fn from_decoder<B>(body: B, dec: FrameDecoder, how: Decoding<K>) -> Self
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + Unpin + 'static,
        B::Error: std::fmt::Display,
    {
        let mut reader = Reader {
            how,
            body,
            dec,
            done: false,
            kind: std::marker::PhantomData,
        };
        let batches: Pin<Box<dyn Stream<Item = Vec<WatchEvent<K>>> + Send>> =
            if tokio::runtime::Handle::try_current().is_ok() {
                let (tx, rx) = tokio::sync::mpsc::channel(BATCHES_AHEAD);
                tokio::spawn(async move {
                    while !reader.done {
                        // Ends (dropping the body) once the consumer is gone.
                        let events = tokio::select! {
                            events = reader.next_batch() => events,
                            _ = tx.closed() => return,
                        };
                        if !events.is_empty() && tx.send(events).await.is_err() {
                            return;
                        }
                    }
                });
                Box::pin(tokio_stream_from(rx))
            } else {
                Box::pin(futures::stream::unfold(reader, |mut r| async move {
                    loop {
                        if r.done {
                            return None;
                        }
                        let events = r.next_batch().await;
                        if !events.is_empty() {
                            return Some((events, r));
                        }
                    }
                }))
            };
        let s = futures::StreamExt::flat_map(batches, futures::stream::iter);
        WatchStream { inner: Box::pin(s) }
    }
}

/// The batches a reader task sends, as a stream.
fn tokio_stream_from<T: Send + 'static>(
    rx: tokio::sync::mpsc::Receiver<T>,
) -> impl Stream<Item = T> + Send {
    futures::stream::unfold(rx, |mut rx| async move {
        let item = rx.recv().await?;
        Some((item, rx))
    })
}

impl<K> Stream for WatchStream<K> {
    type Item = WatchEvent<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchEvent<K>>> {
        self.inner.as_mut().poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn decode_all(chunks: &[&[u8]]) -> Vec<Result<WatchEvent<Value>, String>> {
        let mut d = FrameDecoder::default();
        let mut out = Vec::new();
        for c in chunks {
            d.push(c);
            while let Some(e) = d.next::<Value>(Decoding::json(false)) {
                let stop = e.is_err();
                out.push(e);
                if stop {
                    return out;
                }
            }
        }
        out
    }

    async fn stream_all(body: Vec<u8>) -> Vec<WatchEvent<Value>> {
        use futures::StreamExt;
        let body = http_body_util::Full::new(bytes::Bytes::from(body));
        WatchStream::<Value>::with_options(body, false)
            .collect()
            .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_batches_split_in_two_keep_every_event_in_order() {
        let frame = |i: usize, pretty: bool| {
            let f = serde_json::json!({"type": "ADDED", "object": {"metadata": {"name": format!("o{i}")}, "data": "x".repeat(4000)}});
            let mut text = if pretty {
                serde_json::to_string_pretty(&f).unwrap()
            } else {
                f.to_string()
            };
            text.push('\n');
            text
        };
        // Enough frames to be decoded on the pool (POOL_DECODE_BYTES), so split in two.
        // Compact frames: the split falls between two frames. Pretty-printed frames
        // around the middle: it falls inside one, and the second half is decoded again.
        const N: usize = 100;
        const { assert!(N * 4000 >= POOL_DECODE_BYTES && POOL_DECODE_BYTES >= SPLIT_DECODE_BYTES) };
        for pretty_middle in [false, true] {
            let body: String = (0..N)
                .map(|i| frame(i, pretty_middle && (N / 2 - 2..N / 2 + 2).contains(&i)))
                .collect();
            let events = stream_all(body.into_bytes()).await;
            let names: Vec<String> = events
                .iter()
                .map(|e| match e {
                    WatchEvent::Added(v) => v["metadata"]["name"].as_str().unwrap().to_owned(),
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            let want: Vec<String> = (0..N).map(|i| format!("o{i}")).collect();
            assert_eq!(names, want, "pretty middle: {pretty_middle}");
        }
        // A decoding error in the second half still ends the stream after the first
        // half's events.
        let mut body: String = (0..N / 2).map(|i| frame(i, false)).collect();
        body.push_str("not json\n");
        body.push_str(&(N / 2..N).map(|i| frame(i, false)).collect::<String>());
        let events = stream_all(body.into_bytes()).await;
        assert_eq!(events.len(), N / 2 + 1);
        assert!(
            matches!(&events[N / 2], WatchEvent::Error(e) if e.has_cause(cause::CLIENT_WATCH_DECODING))
        );
    }

    /// A body that delivers `chunks` one at a time, pausing after every `pause_every`-th
    /// (0: never), as a server that writes and flushes each event does.
    fn trickle(
        chunks: Vec<Vec<u8>>,
        pause_every: usize,
    ) -> impl http_body::Body<Data = bytes::Bytes, Error = std::convert::Infallible> + Send + Unpin
    {
        use futures::StreamExt;
        let frames =
            futures::stream::iter(chunks.into_iter().enumerate()).then(move |(i, c)| async move {
                if pause_every > 0 && i % pause_every == pause_every - 1 {
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                Ok::<_, std::convert::Infallible>(http_body::Frame::data(bytes::Bytes::from(c)))
            });
        http_body_util::StreamBody::new(Box::pin(frames))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_event_per_chunk_on_the_pool_keeps_every_event_in_order() {
        use futures::StreamExt;
        // A server that writes each event in a chunk of its own, on a multi-thread
        // runtime: events split across chunks, chunks of one event, two events in one
        // chunk, pauses between bursts, and an error that ends the stream.
        const N: usize = 300;
        let frame = |i: usize| {
            format!(
                "{}\n",
                serde_json::json!({"type": "MODIFIED", "object": {"metadata": {"name": format!("o{i}"), "resourceVersion": i.to_string()}}})
            )
            .into_bytes()
        };
        for pause_every in [0, 1, 7] {
            let mut chunks: Vec<Vec<u8>> = (0..N).map(frame).collect();
            // One frame split in three chunks, one chunk holding two frames.
            let split = chunks.remove(10);
            chunks.insert(10, split[..5].to_vec());
            chunks.insert(11, split[5..9].to_vec());
            chunks.insert(12, split[9..].to_vec());
            let joined = [chunks.remove(20), chunks.remove(20)].concat();
            chunks.insert(20, joined);
            chunks.push(b"not json\n".to_vec());
            chunks.push(frame(N));
            let events: Vec<WatchEvent<Value>> =
                WatchStream::with_options(trickle(chunks, pause_every), false)
                    .collect()
                    .await;
            assert_eq!(events.len(), N + 1, "pause every {pause_every}");
            for (i, e) in events[..N].iter().enumerate() {
                match e {
                    WatchEvent::Modified(v) => {
                        assert_eq!(
                            v["metadata"]["name"],
                            format!("o{i}"),
                            "pause every {pause_every}"
                        )
                    }
                    other => panic!("event {i}: unexpected {other:?}"),
                }
            }
            assert!(
                matches!(&events[N], WatchEvent::Error(e) if e.has_cause(cause::CLIENT_WATCH_DECODING)),
                "pause every {pause_every}: {:?}",
                events[N]
            );
        }
    }

    #[test]
    fn newline_separated_frames_and_bookmark() {
        // SEMANTICS 9.6
        let body = br#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"1"}}}
{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12746"}}}
"#;
        let evs = decode_all(&[body]);
        assert_eq!(evs.len(), 2);
        assert!(matches!(&evs[0], Ok(WatchEvent::Added(v)) if v["metadata"]["name"] == "a"));
        match &evs[1] {
            Ok(WatchEvent::Bookmark(b)) => assert_eq!(b.resource_version, "12746"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn frames_without_newlines_split_anywhere() {
        // SEMANTICS 9.7
        let body: &[u8] = br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}{"type":"DELETED","object":{"metadata":{"name":"b"}}}"#;
        for cut in 0..body.len() {
            let evs = decode_all(&[&body[..cut], &body[cut..]]);
            assert_eq!(evs.len(), 2, "cut at {cut}");
            assert!(matches!(&evs[1], Ok(WatchEvent::Deleted(v)) if v["metadata"]["name"] == "b"));
        }
    }

    #[test]
    fn invalid_type_is_a_decoding_error() {
        // SEMANTICS 9.8
        let evs = decode_all(&[br#"{"type":"FOO","object":{}}"#]);
        assert_eq!(
            evs,
            vec![Err("got invalid watch event type: FOO".to_owned())]
        );
        let err = decoding_error("got invalid watch event type: FOO");
        assert_eq!(err.code(), 500);
        assert!(err.is_internal_error());
        assert!(err.has_cause(cause::CLIENT_WATCH_DECODING));
        assert_eq!(
            err.message(),
            "unable to decode an event from the watch stream: got invalid watch event type: FOO"
        );
    }

    #[test]
    fn one_pass_frames_decode_as_the_two_pass_decoder_does() {
        // Each frame alone without its newline takes the two-pass path; with it, the
        // one-pass path. Both must agree, errors included.
        let frames = [
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{"managedFields":1}}}"#,
            r#"{"object":{"metadata":{"name":"before-type"}},"type":"ADDED"}"#,
            r#"{"type":"DEL\u0045TED","object":{"metadata":{"name":"escaped"}}}"#,
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}"#,
            r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"gone"}}"#,
            r#"{"type":"ADDED","extra":[1,{"x":2}],"object":{"metadata":{"name":"extra"}}}"#,
            r#"{"type":"ADDED"}"#,
            r#"{"type":"FOO","object":{}}"#,
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"},"object":1},"type":"MODIFIED"}"#,
            r#"{"type":"ADDED","object":{"metadata":{"name":7}}}"#,
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"arrays","ownerReferences":[{"apiVersion":"v1","kind":"K","name":"o","uid":"u"}]},"spec":{"containers":[{"name":"c","ports":[{"containerPort":80},{"containerPort":81}]}]}}}"#,
            r#"{"type":"MODIFIED","object":{"spec":{"containers":[{"name":"c","ports":[{"containerPort":"x"}]}]}}}"#,
            r#"{"type":"MODIFIED","object":{"spec":{"containers":[{"name":"c"},]}}}"#,
        ];
        for skip in [false, true] {
            for frame in frames {
                let decode = |text: &str, exact: bool| {
                    let mut d = FrameDecoder {
                        without_managed_fields: skip,
                        ..FrameDecoder::default()
                    };
                    d.push(text.as_bytes());
                    let ev = d.next::<k8s_openapi::api::core::v1::Pod>(Decoding::json(exact));
                    (ev, d.buffered())
                };
                let (plain, _) = decode(frame, false);
                for exact in [false, true] {
                    let (one, rest_one) = decode(&format!("{frame}\n"), exact);
                    let (two, rest_two) = decode(frame, exact);
                    assert_eq!(one, two, "skip {skip}, exact {exact}: {frame}");
                    if one.as_ref().is_some_and(|e| e.is_ok()) {
                        assert_eq!((rest_one, rest_two), (1, 0), "{frame}");
                        assert_eq!(one, plain, "skip {skip}, exact {exact}: {frame}");
                    } else {
                        // Errors alike; only their positions may differ with `exact`.
                        assert_eq!(
                            one.map(|e| e.is_err()),
                            plain.as_ref().map(|e| e.is_err()),
                            "{frame}"
                        );
                    }
                }
            }
        }
        let mut d = FrameDecoder {
            without_managed_fields: true,
            ..FrameDecoder::default()
        };
        d.push(format!("{}\n", frames[0]).as_bytes());
        match d.next::<Value>(Decoding::json(true)) {
            Some(Ok(WatchEvent::Modified(v))) => {
                assert_eq!(v["metadata"], serde_json::json!({"name": "a"}));
                assert_eq!(v["spec"]["managedFields"], 1);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn garbage_is_a_decoding_error() {
        // SEMANTICS 3.21
        let evs = decode_all(&[b"{\"type\":\"ADDED\",\"object\":{}}\nnot json\n"]);
        assert_eq!(evs.len(), 2);
        assert!(evs[1].is_err());
    }
}
