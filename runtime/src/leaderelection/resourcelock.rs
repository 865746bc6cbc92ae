//! The lock an election runs on: the [`LeaderElectionRecord`], the [`ResourceLock`] trait
//! and its implementation over a coordination.k8s.io/v1 Lease, [`LeaseLock`].
//!
//! Contract:
//! - A lock reads and writes one record with optimistic concurrency: [`ResourceLock::update`]
//!   replaces the record of the object last read or written through this lock, and fails
//!   (409 Conflict for a Lease) when someone else wrote it since. It never retries.
//! - [`LeaseLock`] maps the record onto the Lease's spec field by field (client-go's
//!   mapping); missing spec fields read as zero values. Times are `MicroTime`s and keep
//!   their microseconds both ways (k8s-openapi's `MicroTime` holds a `jiff::Timestamp` and
//!   writes six fractional digits).
//! - A lock knows nothing of timing: validity, transitions and retries are the elector's.

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::client::{self, ResourceClient, WriteOptions};
use crate::errors::StatusError;

/// The election state stored in the lock (client-go's `LeaderElectionRecord`).
///
/// Its JSON form is what electors compare to decide whether the record changed since they
/// last looked (a renewal changes `renewTime`, so it changes the bytes).
///
/// ```
/// use kubegen_runtime::leaderelection::LeaderElectionRecord;
///
/// let r: LeaderElectionRecord = serde_json::from_str(
///     r#"{"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2024-01-01T00:00:00.123456Z"}"#,
/// )
/// .unwrap();
/// assert_eq!(r.holder_identity, "a");
/// assert_eq!(r.leader_transitions, 0);
/// assert!(String::from_utf8(r.to_bytes()).unwrap().contains("00:00:00.123456Z"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LeaderElectionRecord {
    /// Who holds the lock; empty when nobody does (after a release).
    pub holder_identity: String,
    /// How long, in whole seconds, the holder's claim lasts after an observer last saw the
    /// record change.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lock.
    pub acquire_time: Option<MicroTime>,
    /// When the current holder last renewed the lock.
    pub renew_time: Option<MicroTime>,
    /// How many times the lock changed hands.
    pub leader_transitions: i32,
    /// The coordinated-election strategy (`spec.strategy`); empty when unset.
    pub strategy: String,
    /// The coordinated-election preferred holder (`spec.preferredHolder`); empty when unset.
    pub preferred_holder: String,
}

impl LeaderElectionRecord {
    /// The record as JSON bytes, the form electors compare.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing plain strings, integers and timestamps that came from valid values
        // does not fail; should a timestamp ever be out of jiff's range, an empty byte
        // string only means "changed" to the next comparison.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The record a Lease's spec holds (missing fields read as zero values).
    pub fn from_lease_spec(spec: &LeaseSpec) -> Self {
        LeaderElectionRecord {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.clone(),
            renew_time: spec.renew_time.clone(),
            leader_transitions: spec.lease_transitions.unwrap_or_default(),
            strategy: spec.strategy.clone().unwrap_or_default(),
            preferred_holder: spec.preferred_holder.clone().unwrap_or_default(),
        }
    }

    /// The Lease spec holding this record (empty strategy and preferred holder are
    /// omitted).
    pub fn to_lease_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.clone(),
            renew_time: self.renew_time.clone(),
            lease_transitions: Some(self.leader_transitions),
            strategy: Some(self.strategy.clone()).filter(|s| !s.is_empty()),
            preferred_holder: Some(self.preferred_holder.clone()).filter(|s| !s.is_empty()),
        }
    }
}

/// An error of a [`ResourceLock`] operation.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The API call failed (a 404 from `get` means there is no lock object yet).
    #[error(transparent)]
    Client(#[from] client::Error),
    /// `update` was called before any `get` or `create` read the object.
    #[error("lease not initialized, call get or create first")]
    NotInitialized,
}

impl From<StatusError> for LockError {
    fn from(e: StatusError) -> Self {
        LockError::Client(client::Error::Api(e))
    }
}

impl LockError {
    /// The lock object does not exist (404).
    pub fn is_not_found(&self) -> bool {
        self.status().is_some_and(StatusError::is_not_found)
    }

    /// Someone else wrote the lock object since this lock last read it (409 Conflict).
    pub fn is_conflict(&self) -> bool {
        self.status().is_some_and(StatusError::is_conflict)
    }

    fn status(&self) -> Option<&StatusError> {
        match self {
            LockError::Client(e) => e.status(),
            LockError::NotInitialized => None,
        }
    }
}

/// The lock an election runs on (client-go's `resourcelock.Interface`).
///
/// [`LeaseLock`] is the implementation for Kubernetes; tests may put anything behind it.
/// Every method takes `&self`: the lock keeps, inside, the object it last read or wrote so
/// that `update` can send that object's resourceVersion.
pub trait ResourceLock: Send + Sync {
    /// Who this candidate is; the holder identity it writes.
    fn identity(&self) -> &str;

    /// The lock for messages, e.g. `namespace/name`.
    fn describe(&self) -> String;

    /// Reads the record (an error whose [`LockError::is_not_found`] is true when there is
    /// no lock object).
    fn get(&self) -> BoxFuture<'_, Result<LeaderElectionRecord, LockError>>;

    /// Creates the lock object holding `record`.
    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>>;

    /// Replaces the record of the object last read or written, failing with a conflict
    /// when it changed since.
    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>>;
}

/// A [`ResourceLock`] over a coordination.k8s.io/v1 Lease (client-go's `LeaseLock`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kubegen_runtime::leaderelection::{LeaderElectionRecord, LeaseLock, ResourceLock};
/// use kubegen_runtime::testing::ApiServer;
///
/// let server = ApiServer::new();
/// let client = kube::Client::new(server.service(), "default");
/// let lock = LeaseLock::new(client, "kube-system", "my-controller", "pod-a");
/// assert!(lock.get().await.unwrap_err().is_not_found());
/// let record = LeaderElectionRecord {
///     holder_identity: "pod-a".into(),
///     lease_duration_seconds: 15,
///     ..Default::default()
/// };
/// lock.create(record.clone()).await.unwrap();
/// assert_eq!(lock.get().await.unwrap().holder_identity, "pod-a");
/// # }
/// ```
pub struct LeaseLock {
    client: ResourceClient<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease: Mutex<Option<Lease>>,
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl LeaseLock {
    /// A lock on the Lease `namespace/name`, held as `identity`.
    pub fn new(client: kube::Client, namespace: &str, name: &str, identity: &str) -> Self {
        LeaseLock {
            client: ResourceClient::namespaced(client, namespace),
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease: Mutex::new(None),
        }
    }

    /// The Lease as last read or written through this lock.
    pub fn lease(&self) -> Option<Lease> {
        self.lease.lock().clone()
    }
}

impl ResourceLock for LeaseLock {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn get(&self) -> BoxFuture<'_, Result<LeaderElectionRecord, LockError>> {
        Box::pin(async move {
            let lease = self.client.get(&self.name).await?;
            let record = lease
                .spec
                .as_ref()
                .map(LeaderElectionRecord::from_lease_spec)
                .unwrap_or_default();
            *self.lease.lock() = Some(lease);
            Ok(record)
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(record.to_lease_spec()),
            };
            let created = self.client.create(&lease, &WriteOptions::default()).await?;
            *self.lease.lock() = Some(created);
            Ok(())
        })
    }

    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let mut lease = self.lease.lock().clone().ok_or(LockError::NotInitialized)?;
            lease.spec = Some(record.to_lease_spec());
            let updated = self.client.update(&lease, &WriteOptions::default()).await?;
            *self.lease.lock() = Some(updated);
            Ok(())
        })
    }
}
