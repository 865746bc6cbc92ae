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

#[derive(Debug)]
enum Kind {
    Full(Option<Bytes>),
    List(ListBody),
    Watch {
        rx: mpsc::Receiver<Vec<Bytes>>,
        buf: VecDeque<Bytes>,
        /// Frames go out with `PartialObjectMetadata` objects (see `metadata`).
        partial: bool,
    },
}

/// What a body answers: one object (or a `Status`), a list, or a watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Object,
    List,
    Watch,
}

#[derive(Debug)]
struct ListBody {
    head: Option<Bytes>,
    items: Vec<Arc<Stored>>,
    pos: usize,
    type_meta: bool,
    /// Items go out as `PartialObjectMetadata` (see `metadata`).
    partial: bool,
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
            partial: false,
            tail: Some(tail),
        }))
    }

    pub(crate) fn watch(rx: mpsc::Receiver<Vec<Bytes>>) -> Self {
        Body(Kind::Watch {
            rx,
            buf: VecDeque::new(),
            partial: false,
        })
    }

    pub(crate) fn shape(&self) -> Shape {
        match &self.0 {
            Kind::Full(_) => Shape::Object,
            Kind::List(_) => Shape::List,
            Kind::Watch { .. } => Shape::Watch,
        }
    }

    /// This answer with metadata only (`PartialObjectMetadata`), before any byte of it
    /// was read.
    pub(crate) fn into_partial(self) -> Result<Self, crate::errors::StatusError> {
        Ok(Body(match self.0 {
            Kind::Full(b) => Kind::Full(b.map(super::metadata::partial_object).transpose()?),
            Kind::List(mut l) => {
                l.head = l.head.map(|h| super::metadata::list_head(&h)).transpose()?;
                l.partial = true;
                Kind::List(l)
            }
            Kind::Watch { rx, buf, .. } => Kind::Watch {
                rx,
                buf,
                partial: true,
            },
        }))
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
                        if l.partial {
                            super::metadata::write_item(&l.items[l.pos], &mut out);
                        } else {
                            l.items[l.pos].write_item(&mut out, l.type_meta);
                        }
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
            Kind::Watch { rx, buf, partial } => loop {
                if let Some(b) = buf.pop_front() {
                    let b = if *partial {
                        super::metadata::watch_frames(b)
                    } else {
                        b
                    };
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
