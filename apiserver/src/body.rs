//! The response body of the in-memory API server.
//!
//! Contract: a list body is written lazily from a snapshot of stored objects, in chunks
//! of about [`CHUNK`] bytes, copying each object's stored bytes once and never
//! serializing; a watch body forwards the (shared) frames the watcher task sends, and ends
//! when the task does.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::mpsc;

use super::store::Stored;

/// About how many bytes a list body writes per chunk.
pub(crate) const CHUNK: usize = 1024 * 1024;

/// The body of every response of the in-memory API server.
#[derive(Debug)]
pub struct Body(Kind);

enum Kind {
    Full(Option<Bytes>),
    List(ListBody),
    Watch {
        rx: mpsc::Receiver<Vec<Bytes>>,
        buf: VecDeque<Bytes>,
    },
}

#[derive(Debug)]
struct ListBody {
    head: Option<Bytes>,
    items: Vec<Arc<Stored>>,
    pos: usize,
    type_meta: bool,
    tail: Option<Bytes>,
}

impl Body {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Body(Kind::Full(Some(bytes.into())))
    }

    pub(crate) fn list(head: Bytes, items: Vec<Arc<Stored>>, type_meta: bool, tail: Bytes) -> Self {
        Body(Kind::List(ListBody {
            head: Some(head),
            items,
            pos: 0,
            type_meta,
            tail: Some(tail),
        }))
    }

    pub(crate) fn watch(rx: mpsc::Receiver<Vec<Bytes>>) -> Self {
        Body(Kind::Watch {
            rx,
            buf: VecDeque::new(),
        })
    }

    /// Whether this is a watch stream (chunks of whole frames, no end).
    pub(crate) fn is_stream(&self) -> bool {
        matches!(self.0, Kind::Watch { .. })
    }

    /// The whole body of a full or list response (`None` for a stream).
    pub(crate) fn into_bytes(self) -> Option<Bytes> {
        match self.0 {
            Kind::Full(b) => Some(b.unwrap_or_default()),
            Kind::List(l) => {
                let mut out = Vec::new();
                out.extend_from_slice(&l.head.unwrap_or_default());
                for (i, item) in l.items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write_item(&mut out, l.type_meta);
                }
                out.extend_from_slice(&l.tail.unwrap_or_default());
                Some(out.into())
            }
            Kind::Watch { .. } => None,
        }
    }
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Full(b) => f.debug_tuple("Full").field(b).finish(),
            Kind::List(l) => f.debug_tuple("List").field(l).finish(),
            Kind::Watch { .. } => f.write_str("Watch"),
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        match &mut this.0 {
            Kind::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Kind::List(l) => {
                if let Some(h) = l.head.take() {
                    return Poll::Ready(Some(Ok(Frame::data(h))));
                }
                if l.pos < l.items.len() {
                    let mut out = Vec::with_capacity(CHUNK + 8 * 1024);
                    while l.pos < l.items.len() && out.len() < CHUNK {
                        if l.pos > 0 {
                            out.push(b',');
                        }
                        l.items[l.pos].write_item(&mut out, l.type_meta);
                        l.pos += 1;
                    }
                    if l.pos == l.items.len() {
                        l.items = Vec::new();
                        l.pos = usize::MAX;
                        if let Some(t) = l.tail.take() {
                            out.extend_from_slice(&t);
                        }
                    }
                    return Poll::Ready(Some(Ok(Frame::data(out.into()))));
                }
                Poll::Ready(l.tail.take().map(|t| Ok(Frame::data(t))))
            }
            Kind::Watch { rx, buf } => loop {
                if let Some(b) = buf.pop_front() {
                    return Poll::Ready(Some(Ok(Frame::data(b))));
                }
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(batch)) => buf.extend(batch),
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                }
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Kind::Full(b) => b.is_none(),
            Kind::List(l) => l.head.is_none() && l.tail.is_none(),
            Kind::Watch { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}
