//! The decoded admission webhooks of the stored configurations (the data `admission`
//! computes and the server keeps between requests; see `admission::config::load`). A
//! module of its own so that the server can hold the cache without importing
//! `admission`, which imports the server.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1 as ar;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::cel_rules::MatchConditions;

/// One webhook of a configuration, defaulted as `admissionregistration.k8s.io/v1` does.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    pub name: String,
    pub mutating: bool,
    pub rules: Vec<ar::RuleWithOperations>,
    pub namespace_selector: Option<LabelSelector>,
    pub object_selector: Option<LabelSelector>,
    /// `matchConditions`, compiled: all true for the webhook to be called.
    pub match_conditions: MatchConditions,
    /// `failurePolicy: Ignore` (the default is `Fail`).
    pub ignore_failure: bool,
    pub side_effects: String,
    pub timeout: Duration,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke: bool,
    /// `matchPolicy: Equivalent` (the default): a rule naming another version of the
    /// resource matches too.
    pub equivalent: bool,
    /// The version the webhook is called at, when its rules name another version of the
    /// resource than the request's (`None`: the request's).
    pub call_version: Option<String>,
    pub review_versions: Vec<String>,
    pub url: String,
    pub service: String,
    pub ca_bundle: Vec<u8>,
}

/// The webhooks of the stored configurations, as `admission::config::load` caches them.
#[derive(Debug, Default)]
pub(crate) struct Hooks {
    pub mutating: Vec<Hook>,
    pub validating: Vec<Hook>,
}

/// The cached webhooks and the (mutating, validating) configuration versions they were
/// read at.
pub(crate) type HooksAt = ((u64, u64), Arc<Hooks>);
