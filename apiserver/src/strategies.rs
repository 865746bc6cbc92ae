//! The strategies of the built-in kinds, and the one table that attaches them to
//! registrations (kube-apiserver wires each resource's storage with its strategy; this
//! is that wiring).
//!
//! Contract: [`attach`] gives a registration that is not a custom resource and has no
//! strategy yet the strategy of its group and resource; every built-in kind gets the
//! defaults a real server applies and the status a new object starts with
//! (`builtin_defaults`), plus its own behaviour. Custom resources keep the generic
//! strategy.

use serde_json::Value;

use crate::builtin_defaults;
use crate::crd_lifecycle::CrdStrategy;
use crate::errors::StatusError;
use crate::events::EventStrategy;
use crate::meta::meta_mut;
use crate::namespaces::NamespaceStrategy;
use crate::registry::{
    Object, Registration, Strategy, StrategyRef, Subresource, SubresourceKind, Wake,
};

/// Attaches the strategy of a built-in kind to `reg` (see the module's contract).
pub(crate) fn attach(mut reg: Registration) -> Registration {
    if reg.custom || reg.strategy != StrategyRef::default() {
        return reg;
    }
    let strategy: &'static dyn Strategy = match (reg.group.as_str(), reg.plural.as_str()) {
        ("", "namespaces") => &NAMESPACE,
        ("apiextensions.k8s.io", "customresourcedefinitions") => &CRD,
        ("" | "events.k8s.io", "events") => &EVENT,
        ("certificates.k8s.io", "certificatesigningrequests") => &CSR,
        ("", "pods") => &POD,
        ("", "secrets") => &SECRET,
        ("apps", "deployments") => &DEPLOYMENT,
        ("", "services" | "endpoints" | "limitranges")
        | ("coordination.k8s.io", "leases")
        | (
            "rbac.authorization.k8s.io",
            "roles" | "rolebindings" | "clusterroles" | "clusterrolebindings",
        ) => &CREATE_ON_UPDATE,
        _ => &BUILTIN,
    };
    reg.strategy = StrategyRef(strategy);
    reg
}

/// A built-in kind: its own behaviour (`kind`) and what every built-in kind gets.
struct BuiltinKind {
    kind: &'static dyn Strategy,
}

static BUILTIN: BuiltinKind = BuiltinKind { kind: &Plain };
static NAMESPACE: BuiltinKind = BuiltinKind {
    kind: &NamespaceStrategy,
};
static CRD: BuiltinKind = BuiltinKind { kind: &CrdStrategy };
static EVENT: BuiltinKind = BuiltinKind {
    kind: &EventStrategy,
};
static CSR: BuiltinKind = BuiltinKind {
    kind: &CertificateSigningRequest,
};
static POD: BuiltinKind = BuiltinKind { kind: &Pod };
static SECRET: BuiltinKind = BuiltinKind { kind: &Secret };
static DEPLOYMENT: BuiltinKind = BuiltinKind { kind: &Deployment };
static CREATE_ON_UPDATE: BuiltinKind = BuiltinKind {
    kind: &CreateOnUpdate,
};

impl Strategy for BuiltinKind {
    fn name(&self) -> &'static str {
        self.kind.name()
    }
    fn prepare_for_create(&self, obj: &mut Object) -> Result<(), StatusError> {
        self.kind.prepare_for_create(obj)
    }
    fn reset_status(&self, reg: &Registration, obj: &mut Object) {
        self.kind.reset_status(reg, obj);
        if let Some(status) = builtin_defaults::initial_status(reg) {
            obj.insert("status".into(), status);
        }
    }
    fn defaults(&self, reg: &Registration, obj: &mut Object, prev: Option<&Object>) {
        builtin_defaults::apply(reg, obj, prev);
        self.kind.defaults(reg, obj, prev);
    }
    fn validate(
        &self,
        reg: &Registration,
        obj: &Object,
        prev: Option<&Object>,
    ) -> Result<(), StatusError> {
        self.kind.validate(reg, obj, prev)
    }
    fn before_insert(&self, obj: &mut Object) -> Result<(), StatusError> {
        self.kind.before_insert(obj)
    }
    fn prepare_for_update(&self, prev: &Object, new: &mut Object) {
        self.kind.prepare_for_update(prev, new);
    }
    fn before_update(&self, new: &mut Object) -> Result<(), StatusError> {
        self.kind.before_update(new)
    }
    fn update_requires_resource_version(&self, reg: &Registration) -> bool {
        self.kind.update_requires_resource_version(reg)
    }
    fn allow_create_on_update(&self) -> bool {
        self.kind.allow_create_on_update()
    }
    fn status_metadata(&self) -> &'static [&'static str] {
        self.kind.status_metadata()
    }
    fn check_deletable(&self, name: &str) -> Result<(), StatusError> {
        self.kind.check_deletable(name)
    }
    fn mark_graceful_deletion(
        &self,
        obj: &mut Object,
        grace: Option<i64>,
    ) -> Result<bool, StatusError> {
        self.kind.mark_graceful_deletion(obj, grace)
    }
    fn begin_deletion(&self, obj: &mut Object) -> Result<Option<Wake>, StatusError> {
        self.kind.begin_deletion(obj)
    }
    fn after_write(&self, obj: &Object, removed: bool) -> Vec<Wake> {
        self.kind.after_write(obj, removed)
    }
    fn subresources(&self) -> &'static [Subresource] {
        self.kind.subresources()
    }
}

/// A built-in kind with nothing of its own.
struct Plain;

impl Strategy for Plain {
    fn name(&self) -> &'static str {
        "builtin"
    }
}

/// The kinds a PUT creates when the name does not exist yet (kube-apiserver's
/// `AllowCreateOnUpdate`: Services, Endpoints, LimitRanges, Leases and the RBAC kinds;
/// Events have their own strategy).
struct CreateOnUpdate;

impl Strategy for CreateOnUpdate {
    fn name(&self) -> &'static str {
        "create-on-update"
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
}

/// Pods: a client's new Pod starts Pending with its QoS class; a DELETE marks the Pod
/// first, as kube-apiserver's graceful deletion does (a Pod on no node with grace 0, one
/// on a node with the option's grace, else `terminationGracePeriodSeconds`, else 30 s;
/// `metadata.generation` goes up). The in-memory server runs no kubelet: a marked Pod
/// without finalizers is removed at once, whatever its grace period.
struct Pod;

impl Strategy for Pod {
    fn name(&self) -> &'static str {
        "pods"
    }
    fn mark_graceful_deletion(
        &self,
        obj: &mut Object,
        grace: Option<i64>,
    ) -> Result<bool, StatusError> {
        let spec = obj.get("spec");
        let scheduled = spec
            .and_then(|s| s.get("nodeName"))
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let own = spec
            .and_then(|s| s.get("terminationGracePeriodSeconds"))
            .and_then(Value::as_i64);
        let grace = if scheduled {
            grace.or(own).unwrap_or(30).max(0)
        } else {
            0
        };
        let at = k8s_openapi::jiff::Timestamp::now()
            + k8s_openapi::jiff::SignedDuration::from_secs(grace);
        let meta = meta_mut(obj)?;
        let generation = meta.get("generation").and_then(Value::as_i64).unwrap_or(1);
        meta.insert(
            "deletionTimestamp".into(),
            Value::String(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        );
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
        meta.insert("generation".into(), Value::from(generation + 1));
        Ok(true)
    }
    fn reset_status(&self, _reg: &Registration, obj: &mut Object) {
        let qos = qos_class(obj);
        obj.insert(
            "status".into(),
            serde_json::json!({"phase": "Pending", "qosClass": qos}),
        );
    }
}

/// Secrets: the type defaults to `Opaque`.
struct Secret;

impl Strategy for Secret {
    fn name(&self) -> &'static str {
        "secrets"
    }
    fn prepare_for_create(&self, obj: &mut Object) -> Result<(), StatusError> {
        if obj.get("type").is_none_or(|t| t == "") {
            obj.insert("type".into(), Value::String("Opaque".into()));
        }
        Ok(())
    }
}

/// Deployments: the status strategy takes annotations too (not labels).
struct Deployment;

impl Strategy for Deployment {
    fn name(&self) -> &'static str {
        "deployments"
    }
    fn status_metadata(&self) -> &'static [&'static str] {
        &["annotations"]
    }
}

/// CertificateSigningRequests: an `approval` subresource beside `status` (`kubectl
/// certificate approve|deny` writes the status conditions through it).
struct CertificateSigningRequest;

impl Strategy for CertificateSigningRequest {
    fn name(&self) -> &'static str {
        "certificatesigningrequests"
    }
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource {
            name: "approval",
            kind: SubresourceKind::Status,
        }]
    }
}

/// A Pod's QoS class from its containers' resources: BestEffort without any request
/// or limit, Guaranteed when every container limits cpu and memory and requests what
/// it limits (a missing request defaults to the limit), Burstable otherwise.
fn qos_class(pod: &Object) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| {
            pod.get("spec")
                .and_then(|s| s.get(*k))
                .and_then(Value::as_array)
        })
        .flatten()
        .collect();
    let res = |c: &Value, k: &str| {
        c.get("resources")
            .and_then(|r| r.get(k))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let any = containers
        .iter()
        .any(|c| !res(c, "requests").is_empty() || !res(c, "limits").is_empty());
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let (req, lim) = (res(c, "requests"), res(c, "limits"));
        ["cpu", "memory"].iter().all(|r| lim.contains_key(*r))
            && req.iter().all(|(k, v)| lim.get(k) == Some(v))
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}
