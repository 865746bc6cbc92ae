//! Discovery and a REST mapper (client-go's memory-cached discovery client and deferred
//! discovery REST mapper).
//!
//! Contract:
//! - [`DiscoveryClient::resources`] reads the server's API once (`/api`, `/api/v1`,
//!   `/apis` and every `/apis/<group>/<version>`, fetched concurrently) and keeps the
//!   answer in memory until [`DiscoveryClient::invalidate`]; concurrent callers share one
//!   fetch. Subresources (`pods/status`) are not resources of their own.
//! - [`RestMapper`] maps kinds to resources and back (plural, singular and short names,
//!   scope, the group's preferred version) over that cache. On a miss it resets the cache
//!   and asks once more, unless the cache was fetched by that very lookup, so a CRD
//!   created after the program started is found (client-go's
//!   `DeferredDiscoveryRESTMapper`); a second miss is [`DiscoveryError::NoMatch`].
//! - A partial resource (empty version, or an empty group meaning "any group") resolves
//!   to the group's preferred version; among groups, the core group wins, then the
//!   others in the server's order; a name that still matches two resources is
//!   [`DiscoveryError::Ambiguous`].
//!
//! It does not read the aggregated discovery format, does not cache on disk, and does not
//! expire the cache by time: call [`RestMapper::reset`] (or rely on the retry) when the
//! server's API changes.

use std::fmt;
use std::sync::Arc;

use futures::future::{join_all, BoxFuture, Shared};
use futures::FutureExt;
use http::Request;
use http_body_util::BodyExt;
use kube::core::{ApiResource, GroupVersionKind, GroupVersionResource};
use parking_lot::Mutex;
use serde::Deserialize;

use super::{checked, Error};

/// One resource the server serves, from discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResourceInfo {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The version.
    pub version: String,
    /// The plural resource name (`deployments`).
    pub resource: String,
    /// The singular name (`deployment`); may be empty on old servers.
    pub singular: String,
    /// The kind (`Deployment`).
    pub kind: String,
    /// Whether objects live in namespaces (the REST scope).
    pub namespaced: bool,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// The verbs the resource supports.
    pub verbs: Vec<String>,
}

impl ApiResourceInfo {
    /// The resource's group/version/resource.
    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::gvr(&self.group, &self.version, &self.resource)
    }

    /// The resource's group/version/kind.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::gvk(&self.group, &self.version, &self.kind)
    }

    /// The resource as kube's [`ApiResource`], what dynamic clients and informers take.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(&self.gvk(), &self.resource)
    }
}

/// One API group the server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiGroupInfo {
    /// The group's name (`""` for the core group).
    pub name: String,
    /// Its versions, in the server's order of preference.
    pub versions: Vec<String>,
    /// The version the server prefers.
    pub preferred_version: String,
}

/// What discovery found: every group and every resource of every version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerResources {
    /// The groups, the core group first.
    pub groups: Vec<ApiGroupInfo>,
    /// The resources, grouped by group and version in the order of `groups`.
    pub resources: Vec<ApiResourceInfo>,
}

impl ServerResources {
    fn preferred_version(&self, group: &str) -> Option<&str> {
        self.groups
            .iter()
            .find(|g| g.name == group)
            .map(|g| g.preferred_version.as_str())
    }

    fn group_rank(&self, group: &str) -> usize {
        self.groups
            .iter()
            .position(|g| g.name == group)
            .unwrap_or(usize::MAX)
    }
}

/// Errors of discovery and REST mapping.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// Reading discovery failed.
    #[error("discovery: {0}")]
    Client(#[from] Error),
    /// Nothing the server serves matches (client-go's `NoKindMatchError` /
    /// `NoResourceMatchError`).
    #[error("no matches for {0}")]
    NoMatch(String),
    /// More than one resource matches (client-go's `AmbiguousResourceError`).
    #[error("{what} matches multiple resources: {candidates:?}")]
    Ambiguous {
        /// What was looked up.
        what: String,
        /// The group/version/resources it matched.
        candidates: Vec<String>,
    },
}

impl DiscoveryError {
    /// `meta.IsNoMatchError`.
    pub fn is_no_match(&self) -> bool {
        matches!(self, DiscoveryError::NoMatch(_))
    }
}

type Fetch = Shared<BoxFuture<'static, Result<Arc<ServerResources>, Arc<Error>>>>;

/// A discovery client that keeps what it read in memory (client-go's
/// `memory.NewMemCacheClient(discovery)`). Cloning shares the cache.
#[derive(Clone)]
pub struct DiscoveryClient {
    client: kube::Client,
    cache: Arc<Mutex<Option<Fetch>>>,
}

impl fmt::Debug for DiscoveryClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiscoveryClient")
            .field("cached", &self.cache.lock().is_some())
            .finish()
    }
}

#[derive(Deserialize)]
struct WireVersions {
    #[serde(default)]
    versions: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireGroupVersion {
    version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireGroup {
    name: String,
    #[serde(default)]
    versions: Vec<WireGroupVersion>,
    #[serde(default)]
    preferred_version: Option<WireGroupVersion>,
}

#[derive(Deserialize)]
struct WireGroups {
    #[serde(default)]
    groups: Vec<WireGroup>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResource {
    name: String,
    #[serde(default)]
    singular_name: String,
    #[serde(default)]
    namespaced: bool,
    kind: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    short_names: Vec<String>,
}

#[derive(Deserialize)]
struct WireResources {
    #[serde(default)]
    resources: Vec<WireResource>,
}

async fn get_json<T: serde::de::DeserializeOwned>(
    client: &kube::Client,
    path: String,
) -> Result<T, Error> {
    let req = Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::empty())
        .map_err(Error::Request)?;
    let res = checked(client.send(req).await.map_err(Error::Transport)?).await?;
    let body = res
        .into_body()
        .collect()
        .await
        .map_err(Error::Transport)?
        .to_bytes();
    serde_json::from_slice(&body).map_err(Error::Decode)
}

async fn fetch(client: kube::Client) -> Result<ServerResources, Error> {
    let core: WireVersions = get_json(&client, "/api".into()).await?;
    let apis: WireGroups = get_json(&client, "/apis".into()).await?;
    let mut groups = Vec::new();
    if !core.versions.is_empty() {
        groups.push(ApiGroupInfo {
            name: String::new(),
            preferred_version: core.versions[0].clone(),
            versions: core.versions,
        });
    }
    for g in apis.groups {
        let versions: Vec<String> = g.versions.into_iter().map(|v| v.version).collect();
        let preferred = g
            .preferred_version
            .map(|v| v.version)
            .or_else(|| versions.first().cloned())
            .unwrap_or_default();
        groups.push(ApiGroupInfo {
            name: g.name,
            versions,
            preferred_version: preferred,
        });
    }
    let gvs: Vec<(String, String)> = groups
        .iter()
        .flat_map(|g| g.versions.iter().map(|v| (g.name.clone(), v.clone())))
        .collect();
    let lists = join_all(gvs.iter().map(|(g, v)| {
        let path = if g.is_empty() {
            format!("/api/{v}")
        } else {
            format!("/apis/{g}/{v}")
        };
        get_json::<WireResources>(&client, path)
    }))
    .await;
    let mut resources = Vec::new();
    for ((group, version), list) in gvs.into_iter().zip(lists) {
        let list = match list {
            Ok(l) => l,
            // A group version that went away between the two reads is simply absent.
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e),
        };
        for r in list.resources {
            if r.name.contains('/') {
                continue;
            }
            resources.push(ApiResourceInfo {
                group: group.clone(),
                version: version.clone(),
                resource: r.name,
                singular: r.singular_name,
                kind: r.kind,
                namespaced: r.namespaced,
                short_names: r.short_names,
                verbs: r.verbs,
            });
        }
    }
    Ok(ServerResources { groups, resources })
}

impl DiscoveryClient {
    /// A discovery client speaking through `client`, with an empty cache.
    pub fn new(client: kube::Client) -> Self {
        DiscoveryClient {
            client,
            cache: Arc::new(Mutex::new(None)),
        }
    }

    /// Every group and resource the server serves: from the cache, or read now. The
    /// second value tells whether this call started the read (client-go's `Fresh`).
    pub async fn resources_fresh(&self) -> Result<(Arc<ServerResources>, bool), Error> {
        let (fetch, started) = {
            let mut cache = self.cache.lock();
            match cache.as_ref() {
                Some(f) => (f.clone(), false),
                None => {
                    let client = self.client.clone();
                    let f: Fetch =
                        async move { fetch(client).await.map(Arc::new).map_err(Arc::new) }
                            .boxed()
                            .shared();
                    *cache = Some(f.clone());
                    (f, true)
                }
            }
        };
        match fetch.clone().await {
            Ok(r) => Ok((r, started)),
            Err(e) => {
                // A failed read is not cached: the next call reads again.
                let mut cache = self.cache.lock();
                if cache.as_ref().is_some_and(|f| f.ptr_eq(&fetch)) {
                    *cache = None;
                }
                // The error is shared by every caller of that read: API errors keep
                // their Status (and classification), others their message.
                Err(match e.as_ref() {
                    Error::Api(status) => Error::Api(status.clone()),
                    other => Error::Transport(kube::Error::Service(other.to_string().into())),
                })
            }
        }
    }

    /// Every group and resource the server serves (cached).
    pub async fn resources(&self) -> Result<Arc<ServerResources>, Error> {
        self.resources_fresh().await.map(|(r, _)| r)
    }

    /// Forgets the cache (client-go's `Invalidate`); the next call reads again.
    pub fn invalidate(&self) {
        *self.cache.lock() = None;
    }
}

/// How a kind maps to a resource (client-go's `meta.RESTMapping`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestMapping {
    /// The resource.
    pub resource: GroupVersionResource,
    /// The kind.
    pub gvk: GroupVersionKind,
    /// Whether objects live in namespaces (`meta.RESTScopeNamespace`).
    pub namespaced: bool,
    /// Everything discovery said of the resource.
    pub info: ApiResourceInfo,
}

impl RestMapping {
    /// The resource as kube's [`ApiResource`].
    pub fn api_resource(&self) -> ApiResource {
        self.info.api_resource()
    }

    fn of(info: &ApiResourceInfo) -> Self {
        RestMapping {
            resource: info.gvr(),
            gvk: info.gvk(),
            namespaced: info.namespaced,
            info: info.clone(),
        }
    }
}

/// A REST mapper over memory-cached discovery that resets and retries once on a miss
/// (client-go's `restmapper.NewDeferredDiscoveryRESTMapper`). Cloning shares the cache.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kubegen_runtime::client::discovery::RestMapper;
/// use kubegen_runtime::object::GroupVersionResource;
/// use kubegen_runtime::testing::ApiServer;
///
/// let server = ApiServer::new();
/// let mapper = RestMapper::new(kube::Client::new(server.service(), "default"));
/// let m = mapper.rest_mapping("apps", "Deployment", &[]).await.unwrap();
/// assert_eq!((m.resource.resource.as_str(), m.namespaced), ("deployments", true));
/// let gvr = mapper.resource_for(&GroupVersionResource::gvr("", "", "cm")).await.unwrap();
/// assert_eq!(gvr, GroupVersionResource::gvr("", "v1", "configmaps"));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RestMapper {
    discovery: DiscoveryClient,
}

impl RestMapper {
    /// A mapper with its own discovery cache.
    pub fn new(client: kube::Client) -> Self {
        Self::with_discovery(DiscoveryClient::new(client))
    }

    /// A mapper over an existing discovery client (sharing its cache).
    pub fn with_discovery(discovery: DiscoveryClient) -> Self {
        RestMapper { discovery }
    }

    /// The discovery client under the mapper.
    pub fn discovery(&self) -> &DiscoveryClient {
        &self.discovery
    }

    /// Forgets what discovery found (client-go's `Reset`).
    pub fn reset(&self) {
        self.discovery.invalidate();
    }

    /// Looks up with the cache, and once more after a reset on a miss unless the cache
    /// was read by this very lookup.
    async fn lookup<T>(
        &self,
        find: impl Fn(&ServerResources) -> Result<T, DiscoveryError>,
    ) -> Result<T, DiscoveryError> {
        let (found, fresh) = self.discovery.resources_fresh().await?;
        match find(&found) {
            Err(e) if e.is_no_match() && !fresh => {
                self.reset();
                let found = self.discovery.resources().await?;
                find(&found)
            }
            other => other,
        }
    }

    /// The mapping of a kind in a group (client-go's `RESTMapping(gk, versions...)`):
    /// in the first of `versions` that serves it, or the group's preferred version when
    /// `versions` is empty (then any version serving it, in the server's order).
    pub async fn rest_mapping(
        &self,
        group: &str,
        kind: &str,
        versions: &[&str],
    ) -> Result<RestMapping, DiscoveryError> {
        self.lookup(|s| {
            let of_kind = |v: &str| {
                s.resources
                    .iter()
                    .find(|r| r.group == group && r.kind == kind && r.version == v)
            };
            let found = if versions.is_empty() {
                s.preferred_version(group).and_then(of_kind).or_else(|| {
                    s.resources
                        .iter()
                        .find(|r| r.group == group && r.kind == kind)
                })
            } else {
                versions.iter().find_map(|v| of_kind(v))
            };
            found.map(RestMapping::of).ok_or_else(|| {
                let gk = if group.is_empty() {
                    kind.to_owned()
                } else {
                    format!("{kind}.{group}")
                };
                DiscoveryError::NoMatch(format!("kind {gk:?} in versions {versions:?}"))
            })
        })
        .await
    }

    /// The mapping of a resource, given fully or partially: its name may be the plural,
    /// the singular or a short name; an empty version means the preferred one; an empty
    /// group means any group (the core group first).
    pub async fn rest_mapping_for(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<RestMapping, DiscoveryError> {
        self.lookup(|s| find_resource(s, gvr).map(RestMapping::of))
            .await
    }

    /// The fully qualified resource of a partial one (client-go's `ResourceFor`).
    pub async fn resource_for(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<GroupVersionResource, DiscoveryError> {
        self.rest_mapping_for(gvr).await.map(|m| m.resource)
    }

    /// The kind of a (partial) resource (client-go's `KindFor`).
    pub async fn kind_for(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<GroupVersionKind, DiscoveryError> {
        self.rest_mapping_for(gvr).await.map(|m| m.gvk)
    }

    /// The short names of a resource (empty when it has none).
    pub async fn short_names(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<Vec<String>, DiscoveryError> {
        self.rest_mapping_for(gvr).await.map(|m| m.info.short_names)
    }
}

fn find_resource<'a>(
    s: &'a ServerResources,
    gvr: &GroupVersionResource,
) -> Result<&'a ApiResourceInfo, DiscoveryError> {
    let name = gvr.resource.to_ascii_lowercase();
    let named = |r: &ApiResourceInfo| {
        r.resource == name || r.singular == name || r.short_names.contains(&name)
    };
    let mut matches: Vec<&ApiResourceInfo> = s
        .resources
        .iter()
        .filter(|r| gvr.group.is_empty() || r.group == gvr.group)
        .filter(|r| gvr.version.is_empty() || r.version == gvr.version)
        .filter(|r| named(r))
        .collect();
    if gvr.version.is_empty() {
        // One version per resource of a group: the preferred one when it serves it.
        let mut kept: Vec<&ApiResourceInfo> = Vec::new();
        for r in &matches {
            if kept
                .iter()
                .any(|k| k.group == r.group && k.resource == r.resource)
            {
                continue;
            }
            let preferred = s.preferred_version(&r.group);
            let pick = matches
                .iter()
                .find(|m| {
                    m.group == r.group
                        && m.resource == r.resource
                        && Some(m.version.as_str()) == preferred
                })
                .unwrap_or(r);
            kept.push(pick);
        }
        matches = kept;
    }
    if gvr.group.is_empty() && matches.len() > 1 {
        if let Some(core) = matches.iter().find(|r| r.group.is_empty()) {
            return Ok(core);
        }
        matches.sort_by_key(|r| s.group_rank(&r.group));
        // Exact plural names win over singular and short names, as in kubectl.
        if let Some(exact) = matches.iter().find(|r| r.resource == name) {
            return Ok(exact);
        }
    }
    match matches.as_slice() {
        [] => Err(DiscoveryError::NoMatch(format!(
            "resource {:?} in group {:?} version {:?}",
            gvr.resource, gvr.group, gvr.version
        ))),
        [one] => Ok(one),
        [first, ..] if gvr.group.is_empty() => Ok(first),
        many => Err(DiscoveryError::Ambiguous {
            what: gvr.resource.clone(),
            candidates: many
                .iter()
                .map(|r| format!("{}/{}, Resource={}", r.group, r.version, r.resource))
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(
        group: &str,
        version: &str,
        plural: &str,
        kind: &str,
        short: &[&str],
    ) -> ApiResourceInfo {
        ApiResourceInfo {
            group: group.into(),
            version: version.into(),
            resource: plural.into(),
            singular: kind.to_ascii_lowercase(),
            kind: kind.into(),
            namespaced: true,
            short_names: short.iter().map(|s| (*s).to_owned()).collect(),
            verbs: vec!["get".into(), "list".into(), "watch".into()],
        }
    }

    fn group(name: &str, versions: &[&str], preferred: &str) -> ApiGroupInfo {
        ApiGroupInfo {
            name: name.into(),
            versions: versions.iter().map(|v| (*v).to_owned()).collect(),
            preferred_version: preferred.into(),
        }
    }

    fn server() -> ServerResources {
        ServerResources {
            groups: vec![
                group("", &["v1"], "v1"),
                group("events.k8s.io", &["v1"], "v1"),
                group("example.com", &["v1beta1", "v1"], "v1"),
            ],
            resources: vec![
                res("", "v1", "events", "Event", &["ev"]),
                res("events.k8s.io", "v1", "events", "Event", &["ev"]),
                res("example.com", "v1beta1", "widgets", "Widget", &["wd"]),
                res("example.com", "v1", "widgets", "Widget", &["wd"]),
                res("example.com", "v1", "gizmos", "Gizmo", &["things"]),
                res("example.com", "v1", "things", "Thing", &[]),
            ],
        }
    }

    fn find(g: &str, v: &str, r: &str) -> Result<GroupVersionResource, DiscoveryError> {
        find_resource(&server(), &GroupVersionResource::gvr(g, v, r)).map(ApiResourceInfo::gvr)
    }

    #[test]
    fn partial_resources_resolve_to_the_core_group_and_preferred_versions() {
        let gvr = GroupVersionResource::gvr;
        assert_eq!(find("", "", "events").ok(), Some(gvr("", "v1", "events")));
        assert_eq!(find("", "", "ev").ok(), Some(gvr("", "v1", "events")));
        assert_eq!(
            find("events.k8s.io", "", "ev").ok(),
            Some(gvr("events.k8s.io", "v1", "events"))
        );
        assert_eq!(
            find("", "", "widget").ok(),
            Some(gvr("example.com", "v1", "widgets"))
        );
        assert_eq!(
            find("example.com", "v1beta1", "wd").ok(),
            Some(gvr("example.com", "v1beta1", "widgets"))
        );
        // A plural name beats another resource's short name when no group is given.
        assert_eq!(
            find("", "", "things").ok(),
            Some(gvr("example.com", "v1", "things"))
        );
    }

    #[test]
    fn misses_and_ambiguities_are_errors() {
        assert!(find("", "", "nothing").is_err_and(|e| e.is_no_match()));
        assert!(find("example.com", "v2", "widgets").is_err_and(|e| e.is_no_match()));
        let err = find("example.com", "v1", "things").expect_err("two resources");
        assert!(
            matches!(&err, DiscoveryError::Ambiguous { candidates, .. } if candidates.len() == 2),
            "{err}"
        );
    }
}
