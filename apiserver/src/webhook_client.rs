//! The HTTP client of the webhooks the server calls (conversion and admission): one
//! JSON review posted to `clientConfig.url`, its JSON reply decoded.
//!
//! Contract:
//! - HTTPS trusts `caBundle` when given, else the system roots; plain HTTP is allowed
//!   (kube-apiserver refuses it, a test server may use it).
//! - Connecting, sending and reading are each bounded by the caller's timeout.
//! - A `clientConfig.service` names a Service of a cluster, which an in-memory server
//!   cannot reach: the call fails with an error saying so (use `url`).
//! - A reply with a non-2xx code is an error in client-go's words; errors name the URL
//!   as Go's `Post "<url>": ...` does.

use std::time::Duration;

use serde_json::Value;

/// Where a webhook is served (`clientConfig`).
pub(crate) struct Target<'a> {
    /// `clientConfig.url`, empty when the webhook is a Service reference.
    pub url: &'a str,
    /// `clientConfig.service` as `namespace/name:port/path`, for the error message.
    pub service: &'a str,
    /// `clientConfig.caBundle`: PEM certificates trusted for an HTTPS `url`.
    pub ca_bundle: &'a [u8],
}

/// Posts `review` to the webhook and returns the decoded reply.
pub(crate) async fn post(
    target: &Target<'_>,
    timeout: Duration,
    review: &Value,
) -> Result<Value, String> {
    if target.url.is_empty() {
        return Err(format!(
            "the webhook is the service {}, which the in-memory API server cannot reach; use clientConfig.url",
            target.service
        ));
    }
    let uri: http::Uri = target
        .url
        .parse()
        .map_err(|e| format!("invalid clientConfig.url {:?}: {e}", target.url))?;
    let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
        return Err(format!(
            "invalid clientConfig.url {:?}: no scheme and host",
            target.url
        ));
    };
    let base: http::Uri = format!("{scheme}://{authority}")
        .parse()
        .map_err(|e| format!("invalid clientConfig.url {:?}: {e}", target.url))?;
    let mut config = kube::Config::new(base);
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    if !target.ca_bundle.is_empty() {
        config.root_cert = Some(pem_certificates(target.ca_bundle));
    }
    let client =
        kube::Client::try_from(config).map_err(|e| format!("Post {:?}: {e}", target.url))?;
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
    let req = http::Request::post(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(body))
        .map_err(|e| e.to_string())?;
    let resp = client
        .send(req)
        .await
        .map_err(|e| format!("Post {:?}: {e}", target.url))?;
    let code = resp.status();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .map_err(|e| format!("Post {:?}: {e}", target.url))?
        .to_bytes();
    if !code.is_success() {
        // client-go's words for an error status without a Status body.
        return Err(format!(
            "the server responded with the status code {} but did not return more information",
            code.as_u16()
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}

/// The DER certificates of a PEM bundle.
fn pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("-----BEGIN CERTIFICATE") {
            cur = Some(String::new());
        } else if line.starts_with("-----END CERTIFICATE") {
            if let Some(b) = cur.take().and_then(|b| decode_base64(&b)) {
                out.push(b);
            }
        } else if let Some(b) = cur.as_mut() {
            b.push_str(line);
        }
    }
    out
}

/// Standard base64 (with padding, whitespace ignored); `None` when malformed.
pub(crate) fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_bundles_decode() {
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64("aGVsbG8gd29ybGQ=").unwrap(), b"hello world");
        assert!(decode_base64("a*").is_none());
        let pem = b"-----BEGIN CERTIFICATE-----\naGk=\n-----END CERTIFICATE-----\n";
        assert_eq!(pem_certificates(pem), vec![b"hi".to_vec()]);
    }
}
