//! The Kubernetes API `Status` as an error, classified as apimachinery classifies it.
//!
//! Contract:
//! - [`Status`] is the wire object (`kind: Status`, `apiVersion: v1`): it serializes to
//!   exactly the fields a real API server sends and deserializes whatever a server sends,
//!   missing fields included.
//! - [`StatusError`] wraps one. Its predicates (`is_not_found`, `is_conflict`, ...) look at
//!   the `reason` first; only when the reason is not one apimachinery knows (the empty
//!   reason counts as unknown) do they fall back to the HTTP code. So a 409 with reason
//!   `AlreadyExists` is not a conflict, and a 410 with reason `Expired` is not `Gone`
//!   (SEMANTICS 9.9-9.11).
//! - The constructors (`StatusError::not_found`, ...) produce the message, reason, code
//!   and details the API server (or client-go's listers) would produce, so listers,
//!   clients and the in-memory API server share one source of truth.
//!
//! It does not retry, log or translate errors into other types.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Reasons apimachinery defines (`metav1.StatusReason`).
pub mod reason {
    /// Unauthorized (401).
    pub const UNAUTHORIZED: &str = "Unauthorized";
    /// Forbidden (403).
    pub const FORBIDDEN: &str = "Forbidden";
    /// NotFound (404).
    pub const NOT_FOUND: &str = "NotFound";
    /// AlreadyExists (409).
    pub const ALREADY_EXISTS: &str = "AlreadyExists";
    /// Conflict (409).
    pub const CONFLICT: &str = "Conflict";
    /// Gone (410).
    pub const GONE: &str = "Gone";
    /// Invalid (422).
    pub const INVALID: &str = "Invalid";
    /// ServerTimeout (500).
    pub const SERVER_TIMEOUT: &str = "ServerTimeout";
    /// StoreReadError (500).
    pub const STORE_READ_ERROR: &str = "StorageReadError";
    /// Timeout (504).
    pub const TIMEOUT: &str = "Timeout";
    /// TooManyRequests (429).
    pub const TOO_MANY_REQUESTS: &str = "TooManyRequests";
    /// BadRequest (400).
    pub const BAD_REQUEST: &str = "BadRequest";
    /// MethodNotAllowed (405).
    pub const METHOD_NOT_ALLOWED: &str = "MethodNotAllowed";
    /// NotAcceptable (406).
    pub const NOT_ACCEPTABLE: &str = "NotAcceptable";
    /// RequestEntityTooLarge (413).
    pub const REQUEST_ENTITY_TOO_LARGE: &str = "RequestEntityTooLarge";
    /// UnsupportedMediaType (415).
    pub const UNSUPPORTED_MEDIA_TYPE: &str = "UnsupportedMediaType";
    /// InternalError (500).
    pub const INTERNAL_ERROR: &str = "InternalError";
    /// Expired (410).
    pub const EXPIRED: &str = "Expired";
    /// ServiceUnavailable (503).
    pub const SERVICE_UNAVAILABLE: &str = "ServiceUnavailable";

    /// Every reason above: a reason outside this list is "unknown" and classification
    /// falls back to the HTTP code.
    pub const KNOWN: &[&str] = &[
        UNAUTHORIZED,
        FORBIDDEN,
        NOT_FOUND,
        ALREADY_EXISTS,
        CONFLICT,
        GONE,
        INVALID,
        SERVER_TIMEOUT,
        STORE_READ_ERROR,
        TIMEOUT,
        TOO_MANY_REQUESTS,
        BAD_REQUEST,
        METHOD_NOT_ALLOWED,
        NOT_ACCEPTABLE,
        REQUEST_ENTITY_TOO_LARGE,
        UNSUPPORTED_MEDIA_TYPE,
        INTERNAL_ERROR,
        EXPIRED,
        SERVICE_UNAVAILABLE,
    ];
}

/// Cause types apimachinery defines (`metav1.CauseType`), used in
/// [`StatusCause::reason`].
pub mod cause {
    /// A required field was missing.
    pub const FIELD_VALUE_REQUIRED: &str = "FieldValueRequired";
    /// A field's value was not valid.
    pub const FIELD_VALUE_INVALID: &str = "FieldValueInvalid";
    /// A field's value was not one of the supported values.
    pub const FIELD_VALUE_NOT_SUPPORTED: &str = "FieldValueNotSupported";
    /// A field's value duplicated another.
    pub const FIELD_VALUE_DUPLICATE: &str = "FieldValueDuplicate";
    /// A field is forbidden.
    pub const FIELD_VALUE_FORBIDDEN: &str = "FieldValueForbidden";
    /// A field's value is too long.
    pub const FIELD_VALUE_TOO_LONG: &str = "FieldValueTooLong";
    /// A list or map has too many items.
    pub const FIELD_VALUE_TOO_MANY: &str = "FieldValueTooMany";
    /// A field's value is of the wrong type.
    pub const FIELD_VALUE_TYPE_INVALID: &str = "FieldValueTypeInvalid";
    /// A server-side apply conflict between field managers.
    pub const FIELD_MANAGER_CONFLICT: &str = "FieldManagerConflict";
    /// The requested resourceVersion is newer than the server knows.
    pub const RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";
    /// The client could not decode an event from a watch stream.
    pub const CLIENT_WATCH_DECODING: &str = "ClientWatchDecoding";
}

/// The metadata of a [`Status`] (a `ListMeta`; usually empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusMeta {
    /// Only set on 410 Expired for a list: a token to continue inconsistently.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "continue")]
    pub continue_: Option<String>,
    /// Rarely set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// The API `Status` object (`kind: Status`, `apiVersion: v1`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status`.
    #[serde(default = "status_kind")]
    pub kind: String,
    /// Always `v1`.
    #[serde(default = "status_api_version")]
    pub api_version: String,
    /// List metadata, usually empty.
    #[serde(default)]
    pub metadata: StatusMeta,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A machine-readable reason (see [`reason`]); empty when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Extra data about the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code; 0 when not set.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: u16,
}

fn is_zero(n: &u16) -> bool {
    *n == 0
}
fn status_kind() -> String {
    "Status".into()
}
fn status_api_version() -> String {
    "v1".into()
}

/// Details of a [`Status`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The name of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The API group of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The kind (API server: the plural resource; Invalid: the Kind; listers: the
    /// lowercase singular kind).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The UID of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The individual causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds a client should wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<i32>,
}

/// One cause of a [`Status`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause type (see [`cause`]); serialized as `reason`, as apimachinery does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field path concerned (`spec.replicas`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// The group-qualified resource an error is about, for messages like
/// `deployments.apps "web" not found`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupResource<'a> {
    /// The API group; `""` for the core group.
    pub group: &'a str,
    /// The resource (API server: plural; listers: lowercase singular kind).
    pub resource: &'a str,
}

impl fmt::Display for GroupResource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// An API error: a [`Status`] with `status: Failure`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusError {
    status: Box<Status>,
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.status.message.is_empty() {
            write!(f, "{} ({})", self.reason(), self.status.code)
        } else {
            f.write_str(&self.status.message)
        }
    }
}

impl std::error::Error for StatusError {}

impl From<Status> for StatusError {
    fn from(status: Status) -> Self {
        StatusError {
            status: Box::new(status),
        }
    }
}

fn known(reason: &str) -> bool {
    reason::KNOWN.contains(&reason)
}

impl StatusError {
    /// An error with the given code, reason and message, and no details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Status {
            kind: status_kind(),
            api_version: status_api_version(),
            status: Some("Failure".into()),
            message: message.into(),
            reason: reason.into(),
            code,
            ..Default::default()
        }
        .into()
    }

    /// Sets the details.
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.status.details = Some(details);
        self
    }

    /// The wire object.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The wire object, by value.
    pub fn into_status(self) -> Status {
        *self.status
    }

    /// The HTTP code.
    pub fn code(&self) -> u16 {
        self.status.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.status.message
    }

    /// The reason as apimachinery's `ReasonForError` sees it: the status' own reason if it
    /// is a known one, else the reason its HTTP code implies (`""` if none).
    pub fn reason(&self) -> &str {
        let r = self.status.reason.as_str();
        if known(r) {
            return r;
        }
        match self.status.code {
            400 => reason::BAD_REQUEST,
            401 => reason::UNAUTHORIZED,
            403 => reason::FORBIDDEN,
            404 => reason::NOT_FOUND,
            405 => reason::METHOD_NOT_ALLOWED,
            406 => reason::NOT_ACCEPTABLE,
            409 => reason::CONFLICT,
            410 => reason::GONE,
            413 => reason::REQUEST_ENTITY_TOO_LARGE,
            415 => reason::UNSUPPORTED_MEDIA_TYPE,
            422 => reason::INVALID,
            429 => reason::TOO_MANY_REQUESTS,
            500 => reason::INTERNAL_ERROR,
            503 => reason::SERVICE_UNAVAILABLE,
            504 => reason::TIMEOUT,
            _ => "",
        }
    }

    /// The details, if any.
    pub fn details(&self) -> Option<&StatusDetails> {
        self.status.details.as_ref()
    }

    /// Whether a cause of the given type is among the details.
    pub fn has_cause(&self, cause_type: &str) -> bool {
        self.details()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == cause_type))
    }

    /// 404 NotFound.
    pub fn is_not_found(&self) -> bool {
        self.reason() == reason::NOT_FOUND
    }
    /// 409 AlreadyExists (not a Conflict).
    pub fn is_already_exists(&self) -> bool {
        self.reason() == reason::ALREADY_EXISTS
    }
    /// 409 Conflict (not AlreadyExists).
    pub fn is_conflict(&self) -> bool {
        self.reason() == reason::CONFLICT
    }
    /// 410 Gone (not Expired).
    pub fn is_gone(&self) -> bool {
        self.reason() == reason::GONE
    }
    /// 410 Expired: the reason only, as apimachinery's `IsResourceExpired`.
    pub fn is_expired(&self) -> bool {
        self.status.reason == reason::EXPIRED
    }
    /// 422 Invalid.
    pub fn is_invalid(&self) -> bool {
        self.reason() == reason::INVALID
    }
    /// 400 BadRequest.
    pub fn is_bad_request(&self) -> bool {
        self.reason() == reason::BAD_REQUEST
    }
    /// 401 Unauthorized.
    pub fn is_unauthorized(&self) -> bool {
        self.reason() == reason::UNAUTHORIZED
    }
    /// 403 Forbidden.
    pub fn is_forbidden(&self) -> bool {
        self.reason() == reason::FORBIDDEN
    }
    /// 405 MethodNotAllowed.
    pub fn is_method_not_supported(&self) -> bool {
        self.reason() == reason::METHOD_NOT_ALLOWED
    }
    /// 415 UnsupportedMediaType.
    pub fn is_unsupported_media_type(&self) -> bool {
        self.reason() == reason::UNSUPPORTED_MEDIA_TYPE
    }
    /// 429 TooManyRequests (by reason or code, as apimachinery checks both).
    pub fn is_too_many_requests(&self) -> bool {
        self.reason() == reason::TOO_MANY_REQUESTS || self.status.code == 429
    }
    /// 500 InternalError.
    pub fn is_internal_error(&self) -> bool {
        self.reason() == reason::INTERNAL_ERROR
    }
    /// 500 ServerTimeout.
    pub fn is_server_timeout(&self) -> bool {
        self.reason() == reason::SERVER_TIMEOUT
    }
    /// 504 Timeout.
    pub fn is_timeout(&self) -> bool {
        self.reason() == reason::TIMEOUT
    }
    /// 503 ServiceUnavailable.
    pub fn is_service_unavailable(&self) -> bool {
        self.reason() == reason::SERVICE_UNAVAILABLE
    }
    /// The requested resourceVersion is newer than the server has: a 504 Timeout with a
    /// `ResourceVersionTooLarge` cause, or the legacy message "Too large resource version".
    pub fn is_too_large_resource_version(&self) -> bool {
        (self.is_timeout() && self.has_cause(cause::RESOURCE_VERSION_TOO_LARGE))
            || self.status.message.contains("Too large resource version")
    }
    /// Seconds the server asked the client to wait, if any.
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.details().and_then(|d| d.retry_after_seconds)
    }

    /// 404 `<resource>[.<group>] "<name>" not found`.
    pub fn not_found(gr: GroupResource<'_>, name: &str) -> Self {
        Self::new(404, reason::NOT_FOUND, format!("{gr} {name:?} not found"))
            .with_details(details(gr, name))
    }

    /// 409 `<resource>[.<group>] "<name>" already exists`.
    pub fn already_exists(gr: GroupResource<'_>, name: &str) -> Self {
        Self::new(
            409,
            reason::ALREADY_EXISTS,
            format!("{gr} {name:?} already exists"),
        )
        .with_details(details(gr, name))
    }

    /// 409 Conflict: `Operation cannot be fulfilled on <gr> "<name>": <why>`.
    pub fn conflict(gr: GroupResource<'_>, name: &str, why: &str) -> Self {
        Self::new(
            409,
            reason::CONFLICT,
            format!("Operation cannot be fulfilled on {gr} {name:?}: {why}"),
        )
        .with_details(details(gr, name))
    }

    /// The message of a conflict on a stale resourceVersion.
    pub const OPTIMISTIC_LOCK_MESSAGE: &'static str = "the object has been modified; please apply your changes to the latest version and try again";

    /// 422 `<Kind>[.<group>] "<name>" is invalid: <causes>`, with one cause per field
    /// error; `details.kind` is the Kind, as the API server sends it.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let gk = GroupResource {
            group,
            resource: kind,
        };
        let list = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect::<Vec<_>>();
        let joined = if list.len() == 1 {
            list[0].clone()
        } else {
            format!("[{}]", list.join(", "))
        };
        Self::new(
            422,
            reason::INVALID,
            format!("{gk} {name:?} is invalid: {joined}"),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
            causes,
            ..Default::default()
        })
    }

    /// 400 BadRequest with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, reason::BAD_REQUEST, message)
    }

    /// 410 Expired with a message (`too old resource version: 5 (8)`).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, reason::EXPIRED, message)
    }

    /// 410 Gone with a message.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, reason::GONE, message)
    }

    /// 500 InternalError: `Internal error occurred: <message>`.
    pub fn internal(message: impl fmt::Display) -> Self {
        Self::new(
            500,
            reason::INTERNAL_ERROR,
            format!("Internal error occurred: {message}"),
        )
    }

    /// 504 Timeout with a `ResourceVersionTooLarge` cause.
    pub fn resource_version_too_large(message: impl Into<String>) -> Self {
        Self::new(504, reason::TIMEOUT, message).with_details(StatusDetails {
            causes: vec![StatusCause {
                reason: cause::RESOURCE_VERSION_TOO_LARGE.into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            retry_after_seconds: Some(1),
            ..Default::default()
        })
    }

    /// 429 TooManyRequests with a Retry-After hint.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i32) -> Self {
        Self::new(429, reason::TOO_MANY_REQUESTS, message).with_details(StatusDetails {
            retry_after_seconds: Some(retry_after_seconds),
            ..Default::default()
        })
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, reason::METHOD_NOT_ALLOWED, message)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, reason::UNSUPPORTED_MEDIA_TYPE, message)
    }
}

fn details(gr: GroupResource<'_>, name: &str) -> StatusDetails {
    StatusDetails {
        name: name.into(),
        group: gr.group.into(),
        kind: gr.resource.into(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str) -> StatusError {
        StatusError::new(code, reason, "m")
    }

    #[test]
    fn known_reason_wins_over_code() {
        // SEMANTICS 9.9
        let expired = status(410, "Expired");
        assert!(expired.is_expired());
        assert!(!expired.is_gone());
        let gone = status(410, "Gone");
        assert!(gone.is_gone());
        assert!(!gone.is_expired());
        // SEMANTICS 9.11
        assert!(status(404, "Weird").is_not_found());
        assert!(status(409, "").is_conflict());
        let exists = status(409, "AlreadyExists");
        assert!(!exists.is_conflict());
        assert!(exists.is_already_exists());
        // An unknown reason and an unmapped code classify as nothing.
        let odd = status(418, "Teapot");
        assert_eq!(odd.reason(), "");
        assert!(!odd.is_not_found() && !odd.is_conflict());
    }

    #[test]
    fn not_found_keeps_message_and_details() {
        // SEMANTICS 9.10
        let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"pods \"foo\" not found","reason":"NotFound",
            "details":{"name":"foo","kind":"pods"},"code":404}"#;
        let st: Status = serde_json::from_str(body).unwrap();
        let err = StatusError::from(st);
        assert!(err.is_not_found());
        assert_eq!(err.to_string(), r#"pods "foo" not found"#);
        assert_eq!(err.details().unwrap().name, "foo");
        assert_eq!(err.details().unwrap().kind, "pods");
    }

    #[test]
    fn constructors_match_the_api_server() {
        let core = GroupResource {
            group: "",
            resource: "pods",
        };
        let nf = StatusError::not_found(core, "foo");
        assert_eq!(nf.message(), r#"pods "foo" not found"#);
        assert_eq!(nf.code(), 404);
        let apps = GroupResource {
            group: "apps",
            resource: "deployments",
        };
        assert_eq!(
            StatusError::already_exists(apps, "web").message(),
            r#"deployments.apps "web" already exists"#
        );
        let c = StatusError::conflict(core, "foo", StatusError::OPTIMISTIC_LOCK_MESSAGE);
        assert!(c.is_conflict());
        assert!(c.message().contains("the object has been modified"));
        let inv = StatusError::invalid(
            "",
            "Pod",
            "foo",
            vec![StatusCause {
                reason: cause::FIELD_VALUE_REQUIRED.into(),
                message: "Required value".into(),
                field: "spec.containers".into(),
            }],
        );
        assert_eq!(
            inv.message(),
            r#"Pod "foo" is invalid: spec.containers: Required value"#
        );
        assert!(inv.is_invalid());
        let tl = StatusError::resource_version_too_large("Too large resource version");
        assert!(tl.is_too_large_resource_version());
        assert!(tl.is_timeout());
        let wire = serde_json::to_value(nf.status()).unwrap();
        assert_eq!(wire["kind"], "Status");
        assert_eq!(wire["apiVersion"], "v1");
        assert_eq!(wire["status"], "Failure");
        assert_eq!(wire["details"]["kind"], "pods");
    }
}
