//! A recorder for tests that sends each event as one line of text (client-go's
//! `record.FakeRecorder`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use k8s_openapi::api::core::v1::ObjectReference;

use super::EventRecorder;

/// Sends `"<type> <reason> <message>"` for every event to a channel of `buffer` lines.
///
/// With [`FakeRecorder::include_object`] the line gets
/// `" involvedObject{kind=<kind>,apiVersion=<apiVersion>}"`; non-empty annotations append
/// `" map[k1:v1 k2:v2]"` (keys sorted, as Go prints a map). A full buffer blocks the
/// caller, as client-go's does: size it for the events a test emits.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kubegen_runtime::record::{reference, EventRecorder, FakeRecorder};
///
/// let (recorder, events) = FakeRecorder::new(10);
/// recorder.eventf(&reference(&Pod::default()), "Warning", "Failed", format_args!("x={}", 5));
/// assert_eq!(events.try_recv().unwrap(), "Warning Failed x=5");
/// ```
#[derive(Debug, Clone)]
pub struct FakeRecorder {
    events: Option<SyncSender<String>>,
    include_object: bool,
}

impl FakeRecorder {
    /// A recorder and the receiving end of its channel of `buffer` lines.
    pub fn new(buffer: usize) -> (Self, Receiver<String>) {
        let (tx, rx) = sync_channel(buffer);
        (
            FakeRecorder {
                events: Some(tx),
                include_object: false,
            },
            rx,
        )
    }

    /// A recorder that discards every event (a nil `Events` channel).
    pub fn discarding() -> Self {
        FakeRecorder {
            events: None,
            include_object: false,
        }
    }

    /// Appends the involved object's kind and apiVersion to each line (`IncludeObject`).
    pub fn include_object(mut self, include: bool) -> Self {
        self.include_object = include;
        self
    }

    fn send(
        &self,
        object: &ObjectReference,
        annotations: Option<&BTreeMap<String, String>>,
        event_type: &str,
        reason: &str,
        message: &str,
    ) {
        let Some(tx) = &self.events else { return };
        let mut line = format!("{event_type} {reason} {message}");
        if self.include_object {
            line.push_str(&format!(
                " involvedObject{{kind={},apiVersion={}}}",
                object.kind.as_deref().unwrap_or_default(),
                object.api_version.as_deref().unwrap_or_default()
            ));
        }
        if let Some(a) = annotations.filter(|a| !a.is_empty()) {
            line.push(' ');
            line.push_str(&go_map(a));
        }
        // The receiver may be gone when a test no longer reads; nothing to report then.
        let _ = tx.send(line);
    }
}

/// A map as Go's `%v` prints it: `map[k1:v1 k2:v2]`, keys sorted.
pub(crate) fn go_map(m: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("map[{}]", pairs.join(" "))
}

impl EventRecorder for FakeRecorder {
    fn event(&self, object: &ObjectReference, event_type: &str, reason: &str, message: &str) {
        self.send(object, None, event_type, reason, message);
    }

    fn eventf(
        &self,
        object: &ObjectReference,
        event_type: &str,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        self.send(object, None, event_type, reason, &message.to_string());
    }

    fn annotated_eventf(
        &self,
        object: &ObjectReference,
        annotations: &BTreeMap<String, String>,
        event_type: &str,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        self.send(
            object,
            Some(annotations),
            event_type,
            reason,
            &message.to_string(),
        );
    }
}
