//! What the in-memory API server serves: one [`Registration`] per resource.
//!
//! Contract: a registration is data (names, scope, subresources, the fields a field
//! selector may use) and one `Strategy` (the resource's behaviour on writes,
//! `strategy.rs`); it never depends on a k8s-openapi version, so the same server
//! serves any release's types. [`builtin`] lists registrations for every GA built-in
//! resource of Kubernetes 1.33 and later (the releases k8s-openapi 0.29 supports), with
//! kube-apiserver's short names, categories, subresources and the selectable fields it
//! allows.

mod strategy;

pub(crate) use strategy::{Object, Strategy, StrategyRef, Subresource, SubresourceKind, Wake};

use std::any::TypeId;

use kube::core::{ApiResource, NamespaceResourceScope};

/// How one resource is served: group/version/resource, kind, scope, subresources and the
/// fields a field selector may use.
///
/// ```
/// use kubegen_apiserver::Registration;
///
/// let foos = Registration::new("samplecontroller.k8s.io", "v1alpha1", "foos", "Foo")
///     .status_subresource()
///     .selectable_field("spec.deploymentName")
///     .list_items_type_meta(true);
/// assert_eq!(foos.api_version(), "samplecontroller.k8s.io/v1alpha1");
/// assert_eq!(foos.list_kind, "FooList");
/// assert!(foos.namespaced);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The API group; `""` for the core group.
    pub group: String,
    /// The version (`v1`).
    pub version: String,
    /// The plural resource name, as in URLs (`pods`).
    pub plural: String,
    /// The singular resource name (`pod`).
    pub singular: String,
    /// The kind (`Pod`).
    pub kind: String,
    /// The kind of lists (`PodList`).
    pub list_kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names discovery reports (`po`).
    pub short_names: Vec<String>,
    /// Whether `<name>/status` is served (and the main resource ignores status changes).
    pub status: bool,
    /// Whether `<name>/scale` is served.
    pub scale: bool,
    /// Where the scale subresource reads and writes (JSON paths such as
    /// `.spec.replicas`).
    pub scale_paths: ScalePaths,
    /// Fields a field selector may use besides `metadata.name` and `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// Whether list items carry `kind` and `apiVersion` (custom resources do; built-in
    /// types do not).
    pub list_items_type_meta: bool,
    /// Whether this is a custom resource (no strategic merge patch, 415).
    pub custom: bool,
    /// Whether a DELETE that removes the object at once answers with the object (as for
    /// pods) rather than a `Status` of `Success`.
    pub return_deleted_object: bool,
    /// The structural schema (`openAPIV3Schema`) of a custom resource version: objects
    /// are pruned, defaulted and validated against it on create and update.
    pub schema: Option<serde_json::Value>,
    /// Categories discovery reports (`all`), for `kubectl get <category>`.
    pub categories: Vec<String>,
    /// A custom resource version's `additionalPrinterColumns`, for Table output.
    pub printer_columns: Vec<PrinterColumn>,
    /// The CRD's storage version when it is another one: this version then serves the
    /// storage version's objects, converted by [`Registration::conversion`]. Empty: this
    /// version keeps its own objects.
    pub storage_version: String,
    /// How objects convert between the CRD's versions (`spec.conversion`).
    pub conversion: super::Conversion,
    /// A deprecated CRD version's warning (`deprecationWarning`, or kube-apiserver's
    /// `<group>/<version> <Kind> is deprecated`): every request to the version gets it
    /// as a `Warning` header.
    pub deprecation_warning: Option<String>,
    /// The schema's CEL rules, compiled when the registration is registered.
    pub(crate) cel: crate::cel_rules::CelRules,
    /// Every served version's schema and rules, for writes through another version than
    /// the one that stores the objects (set by [`Registration::from_crd`]).
    pub(crate) version_schemas: crate::cel_rules::VersionSchemas,
    /// What the resource's writes do besides the generic steps (`strategies::attach`
    /// sets the built-in kinds' when the registration is registered).
    pub(crate) strategy: StrategyRef,
}

/// One of a CRD version's `additionalPrinterColumns`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrinterColumn {
    /// The column's name (`Replicas`).
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub ty: String,
    /// An OpenAPI format (`int32`), or empty.
    pub format: String,
    /// A description, or empty.
    pub description: String,
    /// 0 for the default view; higher columns show with `-o wide`.
    pub priority: i64,
    /// A simple JSONPath into the object (`.spec.replicas`).
    pub json_path: String,
}

impl Registration {
    /// A namespaced resource with no subresources; `listKind` is `<kind>List` and the
    /// singular name the lowercase kind.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str) -> Self {
        Registration {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            namespaced: true,
            short_names: Vec::new(),
            status: false,
            scale: false,
            scale_paths: ScalePaths::default(),
            selectable_fields: Vec::new(),
            list_items_type_meta: false,
            custom: false,
            return_deleted_object: false,
            schema: None,
            categories: Vec::new(),
            printer_columns: Vec::new(),
            storage_version: String::new(),
            conversion: super::Conversion::None,
            deprecation_warning: None,
            cel: Default::default(),
            version_schemas: Default::default(),
            strategy: StrategyRef::default(),
        }
    }

    /// The registration of a [`kube::Resource`] type, its scope read from `K::Scope`.
    pub fn for_resource<K>() -> Self
    where
        K: kube::Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        let ar = ApiResource::erase::<K>(&());
        let namespaced = TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>();
        Self::from_api_resource(&ar, namespaced)
    }

    /// The registration of a dynamic resource.
    pub fn from_api_resource(ar: &ApiResource, namespaced: bool) -> Self {
        let mut r = Self::new(&ar.group, &ar.version, &ar.plural, &ar.kind);
        r.namespaced = namespaced;
        r
    }

    /// Makes the resource cluster-scoped.
    pub fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    /// Sets the list kind.
    pub fn list_kind(mut self, list_kind: &str) -> Self {
        self.list_kind = list_kind.into();
        self
    }

    /// Sets the singular name.
    pub fn singular(mut self, singular: &str) -> Self {
        self.singular = singular.into();
        self
    }

    /// Adds short names.
    pub fn short_names(mut self, names: &[&str]) -> Self {
        self.short_names
            .extend(names.iter().map(|s| (*s).to_owned()));
        self
    }

    /// Adds categories (`all`).
    pub fn categories(mut self, names: &[&str]) -> Self {
        self.categories
            .extend(names.iter().map(|s| (*s).to_owned()));
        self
    }

    /// Serves the `status` subresource.
    pub fn status_subresource(mut self) -> Self {
        self.status = true;
        self
    }

    /// Serves the `scale` subresource.
    pub fn scale_subresource(mut self) -> Self {
        self.scale = true;
        self
    }

    /// Allows a field in field selectors (a dotted JSON path such as `spec.nodeName`).
    pub fn selectable_field(mut self, path: &str) -> Self {
        self.selectable_fields.push(path.into());
        self
    }

    /// Sets whether list items carry `kind` and `apiVersion`.
    pub fn list_items_type_meta(mut self, yes: bool) -> Self {
        self.list_items_type_meta = yes;
        self
    }

    /// Marks the resource as a custom resource (strategic merge patches get 415).
    pub fn custom(mut self, yes: bool) -> Self {
        self.custom = yes;
        self
    }

    /// Sets whether an immediate DELETE answers with the deleted object.
    pub fn return_deleted_object(mut self, yes: bool) -> Self {
        self.return_deleted_object = yes;
        self
    }

    /// Sets the structural schema objects are pruned, defaulted and validated against.
    pub fn schema(mut self, schema: serde_json::Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// Whether strategic merge patches apply: built-in groups only, never custom
    /// resources.
    pub fn supports_strategic_merge(&self) -> bool {
        !self.custom && BUILTIN_GROUPS.contains(&self.group.as_str())
    }

    /// `v1` for the core group, `<group>/<version>` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether a field selector may use `field`.
    pub fn is_selectable(&self, field: &str) -> bool {
        field == "metadata.name"
            || (field == "metadata.namespace" && self.namespaced)
            || self.selectable_fields.iter().any(|f| f == field)
    }
}

/// A version name's place in kube's version priority: GA before beta before alpha,
/// within a stability the higher major then the higher minor first, every kube-like
/// version (`v1`, `v2beta3`) before any other name, other names alphabetically.
/// `Ordering::Less` means `a` comes first.
pub(crate) fn version_priority(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (major, tail) = rest.split_at(digits);
        if major.is_empty() || major.starts_with('0') {
            return None;
        }
        let major = major.parse().ok()?;
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stability, minor) = if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else {
            (0, tail.strip_prefix("alpha")?)
        };
        if minor.is_empty() || minor.starts_with('0') || !minor.bytes().all(|c| c.is_ascii_digit())
        {
            return None;
        }
        Some((major, stability, minor.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The fields behind a `scale` subresource (a CRD's `subresources.scale`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath` (`.spec.replicas`).
    pub spec_replicas: String,
    /// `statusReplicasPath` (`.status.replicas`).
    pub status_replicas: String,
    /// `labelSelectorPath`: a string field, or for built-in types the `LabelSelector`
    /// at `.spec.selector`; empty: none.
    pub label_selector: String,
}

impl Default for ScalePaths {
    fn default() -> Self {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: ".spec.selector".into(),
        }
    }
}

/// The API groups of built-in Kubernetes types (served by kube-apiserver itself).
pub const BUILTIN_GROUPS: &[&str] = &[
    "",
    "apps",
    "batch",
    "autoscaling",
    "policy",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Registrations for the GA built-in resources, with the selectable fields the real
/// API server allows.
pub fn builtin() -> Vec<Registration> {
    let core = |plural: &str, kind: &str| Registration::new("", "v1", plural, kind);
    // Served at v2 (its storage version) and at v1.
    let hpa = Registration::new(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
    )
    .categories(&["all"])
    .short_names(&["hpa"])
    .status_subresource();
    vec![
        core("pods", "Pod")
            .categories(&["all"])
            .short_names(&["po"])
            .return_deleted_object(true)
            .status_subresource()
            .selectable_field("spec.nodeName")
            .selectable_field("spec.restartPolicy")
            .selectable_field("spec.schedulerName")
            .selectable_field("spec.serviceAccountName")
            .selectable_field("spec.hostNetwork")
            .selectable_field("status.phase")
            .selectable_field("status.podIP")
            .selectable_field("status.nominatedNodeName"),
        core("services", "Service")
            .categories(&["all"])
            .short_names(&["svc"])
            .return_deleted_object(true)
            .status_subresource(),
        core("endpoints", "Endpoints")
            .short_names(&["ep"])
            .singular("endpoints"),
        core("configmaps", "ConfigMap").short_names(&["cm"]),
        core("secrets", "Secret").selectable_field("type"),
        core("serviceaccounts", "ServiceAccount").short_names(&["sa"]),
        core("namespaces", "Namespace")
            .cluster_scoped()
            .short_names(&["ns"])
            .status_subresource()
            .selectable_field("status.phase"),
        core("nodes", "Node")
            .cluster_scoped()
            .short_names(&["no"])
            .status_subresource()
            .selectable_field("spec.unschedulable"),
        core("persistentvolumes", "PersistentVolume")
            .cluster_scoped()
            .short_names(&["pv"])
            .status_subresource(),
        core("persistentvolumeclaims", "PersistentVolumeClaim")
            .short_names(&["pvc"])
            .status_subresource(),
        core("events", "Event")
            .short_names(&["ev"])
            .selectable_field("involvedObject.kind")
            .selectable_field("involvedObject.namespace")
            .selectable_field("involvedObject.name")
            .selectable_field("involvedObject.uid")
            .selectable_field("involvedObject.apiVersion")
            .selectable_field("involvedObject.resourceVersion")
            .selectable_field("involvedObject.fieldPath")
            .selectable_field("reason")
            .selectable_field("reportingComponent")
            .selectable_field("source")
            .selectable_field("type"),
        Registration::new("apps", "v1", "deployments", "Deployment")
            .categories(&["all"])
            .short_names(&["deploy"])
            .status_subresource()
            .scale_subresource(),
        Registration::new("apps", "v1", "replicasets", "ReplicaSet")
            .categories(&["all"])
            .short_names(&["rs"])
            .status_subresource()
            .scale_subresource()
            .selectable_field("status.replicas"),
        Registration::new("apps", "v1", "statefulsets", "StatefulSet")
            .categories(&["all"])
            .short_names(&["sts"])
            .status_subresource()
            .scale_subresource(),
        Registration::new("apps", "v1", "daemonsets", "DaemonSet")
            .categories(&["all"])
            .short_names(&["ds"])
            .status_subresource(),
        Registration::new("batch", "v1", "jobs", "Job")
            .categories(&["all"])
            .status_subresource()
            .selectable_field("status.successful"),
        Registration::new("batch", "v1", "cronjobs", "CronJob")
            .categories(&["all"])
            .short_names(&["cj"])
            .status_subresource(),
        Registration::new("coordination.k8s.io", "v1", "leases", "Lease"),
        Registration::new("rbac.authorization.k8s.io", "v1", "roles", "Role"),
        Registration::new(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "RoleBinding",
        ),
        Registration::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
        )
        .cluster_scoped(),
        Registration::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
        )
        .cluster_scoped(),
        Registration::new("networking.k8s.io", "v1", "ingresses", "Ingress")
            .short_names(&["ing"])
            .status_subresource(),
        Registration::new("events.k8s.io", "v1", "events", "Event").short_names(&["ev"]),
        // The rest of the GA kinds every supported Kubernetes version (1.33+) serves, with
        // kube-apiserver's short names, categories and subresources.
        core("limitranges", "LimitRange").short_names(&["limits"]),
        core("podtemplates", "PodTemplate"),
        core("replicationcontrollers", "ReplicationController")
            .categories(&["all"])
            .short_names(&["rc"])
            .status_subresource()
            .scale_subresource(),
        core("resourcequotas", "ResourceQuota")
            .short_names(&["quota"])
            .status_subresource(),
        Registration::new("apps", "v1", "controllerrevisions", "ControllerRevision"),
        hpa.clone(),
        // kubectl autoscale writes v1; objects are stored at v2 and converted.
        Registration {
            version: "v1".into(),
            storage_version: hpa.version.clone(),
            conversion: super::Conversion::Builtin(
                super::BuiltinConversion::HorizontalPodAutoscaler,
            ),
            ..hpa
        },
        Registration::new(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
        )
        .short_names(&["pdb"])
        .status_subresource(),
        Registration::new("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
        Registration::new(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            "NetworkPolicy",
        )
        .short_names(&["netpol"]),
        Registration::new("networking.k8s.io", "v1", "ingressclasses", "IngressClass")
            .cluster_scoped(),
        Registration::new("networking.k8s.io", "v1", "ipaddresses", "IPAddress")
            .cluster_scoped()
            .short_names(&["ip"]),
        Registration::new("networking.k8s.io", "v1", "servicecidrs", "ServiceCIDR")
            .cluster_scoped()
            .status_subresource(),
        Registration::new("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass").cluster_scoped(),
        Registration::new(
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            "PriorityClass",
        )
        .cluster_scoped()
        .short_names(&["pc"]),
        Registration::new("storage.k8s.io", "v1", "storageclasses", "StorageClass")
            .cluster_scoped()
            .short_names(&["sc"]),
        Registration::new("storage.k8s.io", "v1", "csidrivers", "CSIDriver").cluster_scoped(),
        Registration::new("storage.k8s.io", "v1", "csinodes", "CSINode").cluster_scoped(),
        Registration::new(
            "storage.k8s.io",
            "v1",
            "csistoragecapacities",
            "CSIStorageCapacity",
        ),
        Registration::new(
            "storage.k8s.io",
            "v1",
            "volumeattachments",
            "VolumeAttachment",
        )
        .cluster_scoped()
        .status_subresource(),
        Registration::new(
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            "CertificateSigningRequest",
        )
        .cluster_scoped()
        .short_names(&["csr"])
        .status_subresource(),
        Registration::new(
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
        )
        .cluster_scoped()
        .categories(&["api-extensions"]),
        Registration::new(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
        )
        .cluster_scoped()
        .categories(&["api-extensions"]),
        Registration::new(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
            "ValidatingAdmissionPolicy",
        )
        .cluster_scoped()
        .categories(&["api-extensions"])
        .status_subresource(),
        Registration::new(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
        )
        .cluster_scoped()
        .categories(&["api-extensions"]),
        Registration::new(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "flowschemas",
            "FlowSchema",
        )
        .cluster_scoped()
        .status_subresource(),
        Registration::new(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "prioritylevelconfigurations",
            "PriorityLevelConfiguration",
        )
        .cluster_scoped()
        .status_subresource(),
        Registration::new("apiregistration.k8s.io", "v1", "apiservices", "APIService")
            .cluster_scoped()
            .categories(&["api-extensions"])
            .status_subresource(),
        Registration::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
        )
        .cluster_scoped()
        .short_names(&["crd", "crds"])
        .status_subresource(),
    ]
}

#[cfg(test)]
mod tests {
    use super::version_priority;

    #[test]
    fn kube_version_priority() {
        // SEMANTICS 13.21
        let mut vs = [
            "v1alpha1", "foo", "v2", "v1beta1", "v10", "bar", "v1", "v1beta2", "v2alpha1",
        ];
        vs.sort_by(|a, b| version_priority(a, b));
        assert_eq!(
            vs,
            ["v10", "v2", "v1", "v1beta2", "v1beta1", "v2alpha1", "v1alpha1", "bar", "foo"]
        );
        let first = |a, b| version_priority(a, b) == std::cmp::Ordering::Less;
        assert!(first("v1beta1", "v2alpha3"));
        assert!(first("v1alpha10", "v1alpha2"));
        assert!(first("version1", "version2"));
        assert!(first("version1", "version10"));
    }
}
