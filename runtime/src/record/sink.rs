//! Where a broadcaster writes core/v1 events (client-go's `EventSink` and
//! `EventSinkImpl`).

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Event;
use serde_json::Value;

use crate::client::{self, Patch, PatchOptions, ResourceClient, WriteOptions};
use crate::errors::StatusError;

/// Why a sink write failed; the variant decides whether it is retried.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The API server answered with an error `Status`: not retried (except where
    /// events.k8s.io retries AlreadyExists after a series PATCH).
    #[error(transparent)]
    Api(#[from] StatusError),
    /// The request could not be built (or was invalid before sending): not retried.
    #[error("building the request: {0}")]
    Request(String),
    /// The response was not what a write returns: retried.
    #[error("unexpected response: {0}")]
    Unexpected(String),
    /// The request could not be sent or its response not read: retried.
    #[error("transport error: {0}")]
    Transport(String),
}

impl SinkError {
    /// Whether a later attempt may succeed (client-go's `writeEventErr` switch).
    pub fn is_retryable(&self) -> bool {
        matches!(self, SinkError::Unexpected(_) | SinkError::Transport(_))
    }

    /// Whether this is a 404 `Status` (any reason).
    pub fn is_not_found(&self) -> bool {
        matches!(self, SinkError::Api(s) if s.code() == 404)
    }
}

impl From<client::Error> for SinkError {
    fn from(e: client::Error) -> Self {
        match e {
            client::Error::Api(s) => SinkError::Api(s),
            client::Error::Transport(e) => SinkError::Transport(e.to_string()),
            client::Error::Decode(e) => SinkError::Unexpected(e.to_string()),
            client::Error::Request(e) => SinkError::Request(e.to_string()),
            client::Error::Interrupted(e) => SinkError::Request(e.to_string()),
            client::Error::Apply(e) => SinkError::Request(e.to_string()),
        }
    }
}

/// Writes core/v1 events: create, and strategic-merge patch of a repeated event.
pub trait EventSink: Send + Sync + 'static {
    /// Creates the event (POST) in its namespace; answers the stored event.
    fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>>;
    /// Patches the event named like `event` in its namespace with a strategic-merge
    /// `patch`; answers the stored event.
    fn patch<'a>(
        &'a self,
        event: &'a Event,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Event, SinkError>>;
}

/// The sink of a [`kube::Client`]: `/api/v1/namespaces/<event namespace>/events`
/// (client-go's `EventSinkImpl`).
#[derive(Clone)]
pub struct ClientEventSink {
    client: kube::Client,
}

impl std::fmt::Debug for ClientEventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientEventSink").finish_non_exhaustive()
    }
}

impl ClientEventSink {
    /// Writes events with `client`.
    pub fn new(client: kube::Client) -> Self {
        ClientEventSink { client }
    }

    fn events(&self, event: &Event) -> ResourceClient<Event> {
        let ns = event.metadata.namespace.as_deref().unwrap_or_default();
        ResourceClient::namespaced(self.client.clone(), ns)
    }
}

impl EventSink for ClientEventSink {
    fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(async move {
            Ok(self
                .events(event)
                .create(event, &WriteOptions::default())
                .await?)
        })
    }

    fn patch<'a>(
        &'a self,
        event: &'a Event,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(async move {
            let name = event.metadata.name.as_deref().unwrap_or_default();
            let p = Patch::Strategic(patch.clone());
            Ok(self
                .events(event)
                .patch(name, &p, &PatchOptions::default())
                .await?)
        })
    }
}
