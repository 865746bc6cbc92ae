//! Object references, event names and the recorder's clock.

use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// The reference to a typed object (client-go's `reference.GetReference`): kind and
/// apiVersion from the type (`"v1"` for the core group, `"<group>/<version>"`
/// otherwise), name, namespace, uid and resourceVersion from its metadata, no field
/// path.
///
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kubegen_runtime::record::reference;
///
/// let mut d = Deployment::default();
/// d.metadata.name = Some("web".into());
/// let r = reference(&d);
/// assert_eq!((r.kind.as_deref(), r.api_version.as_deref()), (Some("Deployment"), Some("apps/v1")));
/// ```
pub fn reference<K: kube::Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    reference_with(object, &())
}

/// The reference to a typed object with a field path (`GetPartialReference`), such as
/// `"spec.containers{app}"` or `"spec.containers[2]"`.
pub fn partial_reference<K: kube::Resource<DynamicType = ()>>(
    object: &K,
    field_path: &str,
) -> ObjectReference {
    let mut r = reference(object);
    r.field_path = Some(field_path.to_owned()).filter(|p| !p.is_empty());
    r
}

/// The reference to an object whose kind is known at run time (a
/// [`kube::core::DynamicObject`] with its [`kube::core::ApiResource`]).
pub fn reference_with<K: kube::Resource>(object: &K, dt: &K::DynamicType) -> ObjectReference {
    let meta = object.meta();
    let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    ObjectReference {
        kind: Some(K::kind(dt).into_owned()).filter(|s| !s.is_empty()),
        api_version: Some(K::api_version(dt).into_owned()).filter(|s| !s.is_empty()),
        name: non_empty(&meta.name),
        namespace: non_empty(&meta.namespace),
        uid: non_empty(&meta.uid),
        resource_version: non_empty(&meta.resource_version),
        field_path: None,
    }
}

/// An event's name: `"<name>.<lowercase hex of unix_nanos>"`, or a random UUID (36
/// characters) when that is not a DNS-1123 subdomain (client-go's
/// `util.GenerateEventName`).
///
/// ```
/// use kubegen_runtime::record::generate_event_name;
///
/// assert_eq!(generate_event_name("test-pod", 105999103295324396), "test-pod.178959f726d80ec");
/// assert_eq!(generate_event_name("Pod", 1).len(), 36);
/// ```
pub fn generate_event_name(name: &str, unix_nanos: i128) -> String {
    let candidate = format!("{name}.{unix_nanos:x}");
    if is_dns1123_subdomain(&candidate) {
        candidate
    } else {
        random_uuid()
    }
}

/// Whether `s` is a DNS-1123 subdomain: at most 253 characters of dot-separated labels,
/// each of lowercase letters, digits and `-`, starting and ending alphanumeric.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(&f), Some(&l)) => {
                    alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-')
                }
                _ => false,
            }
        })
}

/// A random (version 4) UUID in its 36-character text form.
fn random_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Wall time that advances with `tokio::time`: the system time when the clock was made
/// plus the tokio time elapsed since, so a paused tokio clock pauses it too.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    wall: SystemTime,
    start: Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock reading the system time now.
    pub fn new() -> Self {
        Clock::starting_at(SystemTime::now())
    }

    /// A clock that reads `wall` now (for tests that need a known time).
    pub fn starting_at(wall: SystemTime) -> Self {
        Clock {
            wall,
            start: Instant::now(),
        }
    }

    /// The tokio instant now (for intervals).
    pub fn instant(&self) -> Instant {
        Instant::now()
    }

    /// The wall time of a tokio instant.
    pub fn wall_at(&self, at: Instant) -> Timestamp {
        let t = self.wall + at.saturating_duration_since(self.start);
        let since = t
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Timestamp::from_duration(since.try_into().unwrap_or_default())
            .unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// The wall time now.
    pub fn now(&self) -> Timestamp {
        self.wall_at(Instant::now())
    }
}
