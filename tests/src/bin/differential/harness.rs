//! The two servers and one exchange with both: a [`Req`] is materialized twice, byte for
//! byte the same (unless a case builds it per side, e.g. to carry that side's
//! resourceVersion), and each answer is compared after normalization.
//!
//! Contract: a transport error or a timeout is an answer ([`Resp::error`]), never a
//! panic; comparison never looks at uid, timestamps or resourceVersion values, only at
//! whether they are there.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use kube::client::Body;
use serde_json::{json, Value};
use tokio::sync::Mutex;

/// How long one request may take, body included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One of the two servers.
#[derive(Clone)]
pub struct Side {
    pub client: kube::Client,
}

/// The in-memory server (index 0) and the real one (index 1).
#[derive(Clone)]
pub struct Pair {
    pub mem: Side,
    pub real: Side,
}

/// Which side; used to build per-side requests.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Which {
    Mem,
    Real,
}

/// A request, independent of the side it goes to.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: http::Method,
    pub path: String,
    pub body: Option<Vec<u8>>,
    pub content_type: String,
    pub accept: Option<String>,
}

impl Req {
    pub fn get(path: impl Into<String>) -> Req {
        Req {
            method: http::Method::GET,
            path: path.into(),
            body: None,
            content_type: "application/json".into(),
            accept: None,
        }
    }

    pub fn delete(path: impl Into<String>) -> Req {
        Req {
            method: http::Method::DELETE,
            ..Req::get(path)
        }
    }

    pub fn with_body(method: http::Method, path: impl Into<String>, body: &Value) -> Req {
        Req {
            method,
            path: path.into(),
            body: Some(body.to_string().into_bytes()),
            content_type: "application/json".into(),
            accept: None,
        }
    }

    pub fn post(path: impl Into<String>, body: &Value) -> Req {
        Req::with_body(http::Method::POST, path, body)
    }

    pub fn put(path: impl Into<String>, body: &Value) -> Req {
        Req::with_body(http::Method::PUT, path, body)
    }

    /// A PATCH with the given content type and a raw body.
    pub fn patch(path: impl Into<String>, content_type: &str, body: &str) -> Req {
        Req {
            method: http::Method::PATCH,
            path: path.into(),
            body: Some(body.as_bytes().to_vec()),
            content_type: content_type.into(),
            accept: None,
        }
    }

    pub fn accept(mut self, accept: &str) -> Req {
        self.accept = Some(accept.into());
        self
    }

    fn to_http(&self) -> Result<http::Request<Body>, String> {
        let mut b = http::Request::builder()
            .method(self.method.clone())
            .uri(&self.path);
        if self.body.is_some() {
            b = b.header(http::header::CONTENT_TYPE, &self.content_type);
        }
        b = b.header(
            http::header::ACCEPT,
            self.accept.as_deref().unwrap_or("application/json"),
        );
        b.body(Body::from(self.body.clone().unwrap_or_default()))
            .map_err(|e| format!("building the request: {e}"))
    }

    /// `METHOD path` and the body, shortened, for the report.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.method, self.path);
        if let Some(b) = &self.body {
            if self.content_type != "application/json" {
                let _ = write!(s, " ({})", self.content_type);
            }
            // Per-side bodies carry uid, timestamps and resourceVersion: show them
            // normalized so the report does not change from run to run.
            let text = match serde_json::from_slice::<Value>(b) {
                Ok(v) => normalize(&v).to_string(),
                Err(_) => String::from_utf8_lossy(b).into_owned(),
            };
            let _ = write!(s, " {}", shorten(&text, 300));
        }
        s
    }
}

/// An answer: the status code (0 on a transport error) and the body (JSON when it
/// parses, a string otherwise).
#[derive(Clone, Debug)]
pub struct Resp {
    pub code: u16,
    pub body: Value,
    pub error: Option<String>,
}

impl Resp {
    fn failed(e: String) -> Resp {
        Resp {
            code: 0,
            body: Value::Null,
            error: Some(e),
        }
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.code)
    }

    /// `metadata.resourceVersion` of the answer, or "".
    pub fn rv(&self) -> String {
        self.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn uid(&self) -> String {
        self.body["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// A one-line summary: the code, and the reason and causes of a Status.
    pub fn summary(&self) -> String {
        if let Some(e) = &self.error {
            return format!("transport error: {}", shorten(e, 200));
        }
        if self.body["kind"] == "Status" {
            let reason = match self.body["reason"].as_str() {
                Some(r) if !r.is_empty() => r,
                _ => self.body["status"].as_str().unwrap_or(""),
            };
            let mut s = format!("{} {reason}", self.code);
            let causes = causes(&self.body);
            if !causes.is_empty() {
                let _ = write!(s, " causes [{}]", causes.join(", "));
            }
            return s;
        }
        let kind = self.body["kind"].as_str().unwrap_or("");
        if kind.is_empty() {
            format!("{}", self.code)
        } else {
            format!("{} {kind}", self.code)
        }
    }

    /// What a Status says in words, with uids and resourceVersions taken out: the
    /// messages of its causes, sorted (kube-apiserver joins them in an order that varies
    /// from run to run), or its message when it has no causes.
    pub fn message(&self) -> String {
        let mut parts: Vec<String> = self.body["details"]["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{}: {}",
                    c["field"].as_str().unwrap_or(""),
                    c["message"].as_str().unwrap_or("")
                )
            })
            .collect();
        parts.sort();
        let text = if parts.is_empty() {
            self.body["message"].as_str().unwrap_or_default().to_owned()
        } else {
            parts.join("; ")
        };
        scrub_message(&text)
    }
}

/// Takes uids and resourceVersion values out of a message.
fn scrub_message(text: &str) -> String {
    static PATTERNS: std::sync::OnceLock<Vec<(regex::Regex, &'static str)>> =
        std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            (
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                "<uid>",
            ),
            (r"current: [0-9]+", "current: <rv>"),
            (r"in record \([0-9]+\)", "in record (<rv>)"),
        ]
        .into_iter()
        .filter_map(|(p, r)| regex::Regex::new(p).ok().map(|re| (re, r)))
        .collect()
    });
    let mut out = text.to_owned();
    for (re, rep) in patterns {
        out = re.replace_all(&out, *rep).into_owned();
    }
    out
}

/// `resp` with the names a server made from `generate_name` (the prefix and five
/// random characters) written as `<prefix><suffix>`, wherever they appear.
pub fn scrub_generated(resp: &Resp, generate_name: &str) -> Resp {
    let Ok(re) = regex::Regex::new(&format!("{}[a-z0-9]{{5}}", regex::escape(generate_name)))
    else {
        return resp.clone();
    };
    let text = resp.body.to_string();
    let replaced = re.replace_all(&text, format!("{generate_name}<suffix>").as_str());
    Resp {
        body: serde_json::from_str(&replaced).unwrap_or_else(|_| resp.body.clone()),
        ..resp.clone()
    }
}

/// `field: reason` of each cause of a Status, sorted.
pub fn causes(status: &Value) -> Vec<String> {
    let mut out: Vec<String> = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or("")
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Side {
    /// Sends `req` and reads the whole answer.
    pub async fn send(&self, req: &Req) -> Resp {
        let http = match req.to_http() {
            Ok(r) => r,
            Err(e) => return Resp::failed(e),
        };
        let fut = async {
            let res = self.client.send(http).await.map_err(|e| e.to_string())?;
            let code = res.status().as_u16();
            let bytes = res
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok::<_, String>((code, bytes))
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, fut).await {
            Err(_) => Resp::failed("timed out".into()),
            Ok(Err(e)) => Resp::failed(e),
            Ok(Ok((code, bytes))) => Resp {
                code,
                body: parse_body(&bytes),
                error: None,
            },
        }
    }

    /// Opens a watch: its events are collected in the background.
    pub async fn watch(&self, req: &Req) -> Result<Watch, Resp> {
        let http = req.to_http().map_err(Resp::failed)?;
        let res = match tokio::time::timeout(REQUEST_TIMEOUT, self.client.send(http)).await {
            Err(_) => return Err(Resp::failed("timed out".into())),
            Ok(Err(e)) => return Err(Resp::failed(e.to_string())),
            Ok(Ok(r)) => r,
        };
        let code = res.status().as_u16();
        if code != 200 {
            let bytes = res
                .into_body()
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            return Err(Resp {
                code,
                body: parse_body(&bytes),
                error: None,
            });
        }
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let mut body = res.into_body();
        let task = tokio::spawn(async move {
            let mut buf: Vec<u8> = Vec::new();
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else { break };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                buf.extend_from_slice(&data);
                while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=pos).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                        sink.lock().await.push(v);
                    }
                }
            }
            if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                sink.lock().await.push(v);
            }
        });
        Ok(Watch { events, task })
    }
}

fn parse_body(bytes: &Bytes) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// A watch being read.
pub struct Watch {
    events: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Watch {
    /// Waits until `pred` holds for the events so far, or `timeout`; returns them.
    pub async fn until(&self, timeout: Duration, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let ev = self.events.lock().await;
                if pred(&ev) || tokio::time::Instant::now() >= deadline || self.task.is_finished() {
                    return ev.clone();
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Pair {
    pub fn side(&self, w: Which) -> &Side {
        match w {
            Which::Mem => &self.mem,
            Which::Real => &self.real,
        }
    }

    /// Sends the same request to both servers.
    pub async fn both(&self, req: &Req) -> (Resp, Resp) {
        tokio::join!(self.mem.send(req), self.real.send(req))
    }
}

/// Normalizes what legitimately differs between two servers: uid, timestamps,
/// resourceVersion values, managedFields times, generateName suffixes, the suffix of a
/// Pod's service-account token volume, a Service's allocated cluster IPs.
pub fn normalize(v: &Value) -> Value {
    let mut v = v.clone();
    normalize_in_place(&mut v);
    v
}

fn normalize_in_place(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Object(meta)) = map.get_mut("metadata") {
                normalize_meta(meta);
            }
            // A Status's details and owner references carry uids too.
            if let Some(u) = map.get_mut("uid").filter(|u| u.is_string()) {
                *u = json!("<uid>");
            }
            for (k, child) in map.iter_mut() {
                match k.as_str() {
                    "metadata" => {}
                    // A Service's allocated addresses: whether they are there, not which.
                    "clusterIP" => allocated(child),
                    "clusterIPs" => match child {
                        Value::Array(ips) => ips.iter_mut().for_each(allocated),
                        _ => allocated(child),
                    },
                    _ => normalize_in_place(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_in_place),
        // The service-account token volume of a Pod has a random suffix.
        Value::String(s) if s.starts_with("kube-api-access-") => {
            *s = "kube-api-access-<suffix>".into();
        }
        _ => {}
    }
}

fn allocated(v: &mut Value) {
    if v.as_str().is_some_and(|s| !s.is_empty() && s != "None") {
        *v = json!("<allocated>");
    }
}

fn normalize_meta(meta: &mut serde_json::Map<String, Value>) {
    for key in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "resourceVersion",
    ] {
        if meta.contains_key(key) {
            meta.insert(key.into(), json!(format!("<{key}>")));
        }
    }
    if let Some(Value::String(gen)) = meta.get("generateName").cloned() {
        if let Some(Value::String(name)) = meta.get_mut("name") {
            if name.starts_with(&gen) {
                *name = format!("{gen}<suffix>");
            }
        }
    }
    if let Some(Value::Array(mf)) = meta.get_mut("managedFields") {
        for entry in mf.iter_mut() {
            if let Some(t) = entry.get_mut("time") {
                *t = json!("<time>");
            }
        }
    }
    if let Some(Value::Array(owners)) = meta.get_mut("ownerReferences") {
        for o in owners.iter_mut() {
            if let Some(u) = o.get_mut("uid") {
                *u = json!("<uid>");
            }
        }
    }
    if meta.get("continue").is_some_and(|c| c != "") {
        meta.insert("continue".into(), json!("<continue>"));
    }
}

/// The paths where two JSON values differ, at most `limit`, each with both values.
pub fn diff(a: &Value, b: &Value, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("", a, b, &mut out, limit);
    out
}

fn diff_at(path: &str, a: &Value, b: &Value, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(w)) => diff_at(&p, u, w, out, limit),
                    (Some(u), None) => {
                        push(out, limit, format!("{p}: mem {} / real absent", brief(u)))
                    }
                    (None, Some(w)) => {
                        push(out, limit, format!("{p}: mem absent / real {}", brief(w)))
                    }
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, w)) in x.iter().zip(y).enumerate() {
                diff_at(&format!("{path}[{i}]"), u, w, out, limit);
            }
        }
        _ => push(
            out,
            limit,
            format!(
                "{}: mem {} / real {}",
                if path.is_empty() { "." } else { path },
                brief(a),
                brief(b)
            ),
        ),
    }
}

fn push(out: &mut Vec<String>, limit: usize, s: String) {
    if out.len() < limit {
        out.push(s);
    }
}

/// A JSON value in at most 120 characters.
pub fn brief(v: &Value) -> String {
    shorten(&v.to_string(), 120)
}

pub fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(n).collect();
        format!("{cut}…")
    }
}
