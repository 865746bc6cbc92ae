//! Building responses: JSON bodies, `Status` errors (with `Retry-After`), stored objects
//! copied as they are, and `Warning` headers.

use http::{header, Response, StatusCode};

use crate::body::Body;
use crate::errors::StatusError;
use crate::media;
use crate::store::Stored;

pub(crate) fn json_response(code: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Body::full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

pub(crate) fn error_response(err: &StatusError) -> Response<Body> {
    let body = serde_json::to_vec(err.status()).unwrap_or_default();
    let code = StatusCode::from_u16(err.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json_response(code, body);
    if let Some(s) = err.retry_after_seconds() {
        if let Ok(v) = header::HeaderValue::from_str(&s.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    r
}

pub(crate) fn object_response(code: StatusCode, s: &Stored) -> Response<Body> {
    let mut r = Response::new(Body::full(s.bytes.clone()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

/// Adds one `Warning` header per message.
pub(crate) fn with_warnings(mut r: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        if let Some(v) = media::warning_header(w) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}
