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

use futures::Stream;
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

/// Splits a byte stream into watch events.
#[derive(Debug, Default)]
pub(crate) struct FrameDecoder {
    buf: Vec<u8>,
    pos: usize,
}

fn object<'a>(raw: Option<&'a RawValue>, ty: &str) -> Result<&'a str, String> {
    raw.map(RawValue::get)
        .ok_or_else(|| format!("watch event {ty} has no object"))
}

impl FrameDecoder {
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
    pub(crate) fn next<K: DeserializeOwned>(&mut self) -> Option<Result<WatchEvent<K>, String>> {
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
        let mut it = serde_json::Deserializer::from_slice(rest).into_iter::<RawFrame<'_>>();
        let (event, used) = match it.next() {
            None => return None,
            Some(Err(e)) if e.is_eof() => return None,
            Some(Err(e)) => return Some(Err(e.to_string())),
            Some(Ok(f)) => (convert::<K>(&f), it.byte_offset()),
        };
        self.pos += used;
        Some(event)
    }
}

fn convert<K: DeserializeOwned>(f: &RawFrame<'_>) -> Result<WatchEvent<K>, String> {
    let ty = f.ty.as_ref();
    let typed = |raw| -> Result<K, String> {
        serde_json::from_str(object(raw, ty)?).map_err(|e| e.to_string())
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

struct Reader<B> {
    body: B,
    dec: FrameDecoder,
    done: bool,
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
        let reader = Reader {
            body,
            dec: FrameDecoder::default(),
            done: false,
        };
        let s = futures::stream::unfold(reader, |mut r| async move {
            if r.done {
                return None;
            }
            loop {
                match r.dec.next::<K>() {
                    Some(Ok(ev)) => return Some((ev, r)),
                    Some(Err(why)) => {
                        r.done = true;
                        return Some((WatchEvent::Error(decoding_error(&why)), r));
                    }
                    None => {}
                }
                match r.body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            r.dec.push(&data);
                        }
                    }
                    Some(Err(e)) => {
                        r.done = true;
                        let ev = WatchEvent::Error(decoding_error(&e.to_string()));
                        return Some((ev, r));
                    }
                    None => return None,
                }
            }
        });
        WatchStream { inner: Box::pin(s) }
    }
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
            while let Some(e) = d.next::<Value>() {
                let stop = e.is_err();
                out.push(e);
                if stop {
                    return out;
                }
            }
        }
        out
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
    fn garbage_is_a_decoding_error() {
        // SEMANTICS 3.21
        let evs = decode_all(&[b"{\"type\":\"ADDED\",\"object\":{}}\nnot json\n"]);
        assert_eq!(evs.len(), 2);
        assert!(evs[1].is_err());
    }
}
