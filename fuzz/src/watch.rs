//! The watch stream decoder (`kubegen_runtime::client::WatchStream`).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::StreamExt;
use http_body::Frame;
use k8s_openapi::api::core::v1::ConfigMap;
use kubegen_runtime::client::{WatchEvent, WatchStream};
use serde::de::DeserializeOwned;

/// A body that delivers fixed chunks, then optionally a transport error.
struct Chunks {
    chunks: VecDeque<Bytes>,
    fail_at_end: bool,
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = String;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, String>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if std::mem::take(&mut self.fail_at_end) {
            return Poll::Ready(Some(Err("connection reset by fuzzer".to_owned())));
        }
        Poll::Ready(None)
    }
}

/// Layout: byte 0 holds flags (bit 0: decode as `serde_json::Value` rather than
/// `ConfigMap`; bit 1: the body ends with a transport error; bit 2: drop managedFields),
/// byte 1 the number of cut points (mod 16), then two bytes per cut point (little
/// endian offsets into the body), then the body.
///
/// Properties: the stream ends (the body is finite); the events do not depend on where
/// the body was cut into chunks (the same bytes in one chunk give the same events); a
/// decoding error is the last event and reads "unable to decode an event from the
/// watch stream"; a transport error ends the stream with one error event.
pub fn watch_decoder(data: &[u8]) {
    let [flags, cuts, rest @ ..] = data else {
        return;
    };
    let cuts = usize::from(*cuts % 16);
    if rest.len() < cuts * 2 {
        return;
    }
    let (cut_bytes, body) = rest.split_at(cuts * 2);
    let mut points: Vec<usize> = cut_bytes
        .chunks_exact(2)
        .map(|c| usize::from(u16::from_le_bytes([c[0], c[1]])) % (body.len() + 1))
        .collect();
    points.sort_unstable();
    points.dedup();
    let fail = flags & 2 != 0;
    let compact = flags & 4 != 0;
    if flags & 1 != 0 {
        check::<serde_json::Value>(body, &points, fail, compact);
    } else {
        check::<ConfigMap>(body, &points, fail, compact);
    }
}

fn check<K>(body: &[u8], points: &[usize], fail: bool, compact: bool)
where
    K: DeserializeOwned + PartialEq + std::fmt::Debug + Send + 'static,
{
    let whole = decode::<K>(vec![Bytes::copy_from_slice(body)], fail, compact);
    let mut chunks = Vec::new();
    let mut from = 0;
    for &p in points {
        chunks.push(Bytes::copy_from_slice(&body[from..p]));
        from = p;
    }
    chunks.push(Bytes::copy_from_slice(&body[from..]));
    let cut = decode::<K>(chunks, fail, compact);
    assert_eq!(
        whole, cut,
        "cutting the body at {points:?} changed the events"
    );
    for (i, ev) in whole.iter().enumerate() {
        let WatchEvent::Error(e) = ev else { continue };
        if is_decoding_error(e) && i + 1 != whole.len() {
            panic!("a decoding error is not the last event: {whole:?}");
        }
    }
    if fail {
        let last = whole.last().expect("a failed body gives an error event");
        assert!(
            matches!(last, WatchEvent::Error(e) if is_decoding_error(e)),
            "a transport error did not end the stream with a decoding error: {last:?}"
        );
    }
}

fn is_decoding_error(e: &kubegen_runtime::errors::StatusError) -> bool {
    e.status()
        .message
        .starts_with("unable to decode an event from the watch stream")
}

fn decode<K>(chunks: Vec<Bytes>, fail: bool, compact: bool) -> Vec<WatchEvent<K>>
where
    K: DeserializeOwned + Send + 'static,
{
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(r) => r,
        Err(e) => panic!("cannot build a tokio runtime: {e}"),
    };
    let body = Chunks {
        chunks: chunks.into(),
        fail_at_end: fail,
    };
    runtime.block_on(WatchStream::<K>::with_options(body, compact).collect::<Vec<_>>())
}
