//! The admission webhooks the stored `admissionregistration.k8s.io/v1`
//! Mutating- and ValidatingWebhookConfigurations declare, with their v1 defaults, and
//! which of them a request matches (kube-apiserver's `webhook/predicates`).
//!
//! Contract:
//! - A configuration applies to the next request after it is stored (kube-apiserver
//!   picks them up from an informer, a moment later): the webhooks are decoded, and their
//!   `matchConditions` compiled, again whenever a configuration was written or deleted,
//!   and kept otherwise. Configurations are taken in name order, webhooks in their order.
//! - A rule matches when its `operations`, `apiGroups`, `apiVersions` contain the
//!   request's (or `*`), one of its `resources` names the resource and subresource
//!   (`foos`, `foos/status`, `*` for every resource without subresource, `*/status`,
//!   `foos/*`, `*/*`) and its `scope` (`Cluster`, `Namespaced`, `*`) fits.
//! - `namespaceSelector` is matched against the labels of the object's namespace (of the
//!   object itself for a Namespace); cluster-scoped objects always match.
//!   `objectSelector` matches when the object or the old object has matching labels.
//!   Empty selectors match everything.
//! - A configuration that does not decode is skipped with a log line (kube-apiserver
//!   would have refused it).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1 as ar;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kubegen_apimachinery::labels::Selector;
use serde_json::Value;

use super::Attributes;
use crate::cel_rules::MatchConditions;
use crate::server::Inner;
pub(crate) use crate::webhook_hooks::{Hook, Hooks};

const GROUP_VERSION: &str = "admissionregistration.k8s.io/v1";
/// The configuration resources: requests on them are never sent to webhooks, so a
/// broken webhook cannot lock its own configuration.
pub(super) const MUTATING: &str = "mutatingwebhookconfigurations";
pub(super) const VALIDATING: &str = "validatingwebhookconfigurations";

/// The webhooks of every stored configuration: mutating, then validating. Decoded (and
/// their `matchConditions` compiled) once per change of either configuration resource:
/// the result is cached under the two collections' latest resourceVersions.
pub(crate) fn load(inner: &Inner) -> Arc<Hooks> {
    let versions = {
        let st = inner.state.read();
        let last = |plural| {
            st.lookup(GROUP_VERSION, plural)
                .map_or(0, |idx| st.collections[idx].last_rv)
        };
        (last(MUTATING), last(VALIDATING))
    };
    let mut cache = inner.admission_hooks.lock();
    if let Some((at, hooks)) = cache.as_ref() {
        if *at == versions {
            return hooks.clone();
        }
    }
    let (mutating, validating) = decode(inner);
    let hooks = Arc::new(Hooks {
        mutating,
        validating,
    });
    *cache = Some((versions, hooks.clone()));
    hooks
}

fn decode(inner: &Inner) -> (Vec<Hook>, Vec<Hook>) {
    (
        read::<ar::MutatingWebhookConfiguration>(inner, MUTATING)
            .into_iter()
            .flat_map(|c| c.webhooks.unwrap_or_default())
            .map(|w| {
                let mut h = hook(
                    w.name,
                    w.client_config,
                    w.rules,
                    w.failure_policy,
                    w.side_effects,
                    w.timeout_seconds,
                    w.admission_review_versions,
                );
                h.mutating = true;
                h.reinvoke = w.reinvocation_policy.as_deref() == Some("IfNeeded");
                h.namespace_selector = w.namespace_selector;
                h.object_selector = w.object_selector;
                h.match_conditions = conditions(w.match_conditions);
                h.equivalent = w.match_policy.as_deref() != Some("Exact");
                h
            })
            .collect(),
        read::<ar::ValidatingWebhookConfiguration>(inner, VALIDATING)
            .into_iter()
            .flat_map(|c| c.webhooks.unwrap_or_default())
            .map(|w| {
                let mut h = hook(
                    w.name,
                    w.client_config,
                    w.rules,
                    w.failure_policy,
                    w.side_effects,
                    w.timeout_seconds,
                    w.admission_review_versions,
                );
                h.namespace_selector = w.namespace_selector;
                h.object_selector = w.object_selector;
                h.match_conditions = conditions(w.match_conditions);
                h.equivalent = w.match_policy.as_deref() != Some("Exact");
                h
            })
            .collect(),
    )
}

fn conditions(c: Option<Vec<ar::MatchCondition>>) -> MatchConditions {
    MatchConditions::compile(
        c.unwrap_or_default()
            .into_iter()
            .map(|c| (c.name, c.expression)),
    )
}

/// The stored configurations of `plural`, in name order.
fn read<T: serde::de::DeserializeOwned>(inner: &Inner, plural: &str) -> Vec<T> {
    let st = inner.state.read();
    let Some(idx) = st.lookup(GROUP_VERSION, plural) else {
        return Vec::new();
    };
    let mut named: Vec<(String, T)> = st.collections[idx]
        .objects
        .values()
        .filter_map(|s| {
            let v = Value::Object(s.to_value().ok()?);
            let name = v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            match serde_json::from_value(v) {
                Ok(c) => Some((name, c)),
                Err(e) => {
                    tracing::warn!(%name, error = %e, "skipping a webhook configuration that does not decode");
                    None
                }
            }
        })
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    named.into_iter().map(|(_, c)| c).collect()
}

fn hook(
    name: String,
    cc: ar::WebhookClientConfig,
    rules: Option<Vec<ar::RuleWithOperations>>,
    failure_policy: Option<String>,
    side_effects: String,
    timeout_seconds: Option<i32>,
    review_versions: Vec<String>,
) -> Hook {
    let service = cc
        .service
        .map(|s| {
            format!(
                "{}/{}:{}{}",
                s.namespace,
                s.name,
                s.port.unwrap_or(443),
                s.path.unwrap_or_default()
            )
        })
        .unwrap_or_default();
    Hook {
        name,
        mutating: false,
        rules: rules.unwrap_or_default(),
        namespace_selector: None,
        object_selector: None,
        match_conditions: MatchConditions::default(),
        ignore_failure: failure_policy.as_deref() == Some("Ignore"),
        side_effects,
        // v1's default, bounded to 1..=30 s as validation requires.
        timeout: Duration::from_secs(timeout_seconds.unwrap_or(10).clamp(1, 30) as u64),
        reinvoke: false,
        equivalent: true,
        call_version: None,
        review_versions,
        url: cc.url.unwrap_or_default(),
        service,
        ca_bundle: cc.ca_bundle.map(|b| b.0).unwrap_or_default(),
    }
}

impl Hook {
    /// Whether one of the rules names the request.
    pub(crate) fn matches_rules(&self, a: &Attributes) -> bool {
        self.rules.iter().any(|r| rule_matches(r, a))
    }

    /// The webhook if it is to be called about the request: its rules name the request,
    /// or (`matchPolicy: Equivalent`) one of `versions`, the other versions of the
    /// resource, at which it is then called.
    pub(crate) fn matching(mut self, a: &Attributes, versions: &[String]) -> Option<Hook> {
        if self.matches_rules(a) {
            return Some(self);
        }
        if !self.equivalent {
            return None;
        }
        let v = versions
            .iter()
            .find(|v| self.matches_rules(&a.at_version(v)))?;
        self.call_version = Some(v.clone());
        Some(self)
    }

    /// Whether the selectors let the request through: `object` and `old` are the
    /// request's objects, `namespace_labels` the labels of the object's namespace.
    pub(crate) fn selects(
        &self,
        a: &Attributes,
        object: Option<&Value>,
        old: Option<&Value>,
        namespace_labels: &BTreeMap<String, String>,
    ) -> Result<bool, String> {
        if let Some(sel) = non_empty(&self.namespace_selector) {
            let sel = selector(sel, "namespaceSelector")?;
            let own = a.is_namespace();
            if own {
                let labels = labels_of(object.or(old));
                if !sel.matches(&labels) {
                    return Ok(false);
                }
            } else if a.namespaced && !sel.matches(namespace_labels) {
                return Ok(false);
            }
        }
        if let Some(sel) = non_empty(&self.object_selector) {
            let sel = selector(sel, "objectSelector")?;
            let hit = |o: Option<&Value>| o.is_some_and(|o| sel.matches(&labels_of(Some(o))));
            if !hit(object) && !hit(old) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

fn non_empty(s: &Option<LabelSelector>) -> Option<&LabelSelector> {
    s.as_ref().filter(|s| {
        s.match_labels.as_ref().is_some_and(|m| !m.is_empty())
            || s.match_expressions.as_ref().is_some_and(|m| !m.is_empty())
    })
}

fn selector(s: &LabelSelector, field: &str) -> Result<Selector, String> {
    Selector::from_label_selector(s).map_err(|e| format!("invalid {field}: {e}"))
}

/// An object's labels (none for a missing object).
pub(crate) fn labels_of(o: Option<&Value>) -> BTreeMap<String, String> {
    o.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn contains(list: &Option<Vec<String>>, want: &str) -> bool {
    list.iter().flatten().any(|x| x == "*" || x == want)
}

fn rule_matches(r: &ar::RuleWithOperations, a: &Attributes) -> bool {
    let scope = match r.scope.as_deref() {
        Some("Cluster") => !a.namespaced,
        Some("Namespaced") => a.namespaced,
        _ => true,
    };
    scope
        && contains(&r.operations, a.operation.as_str())
        && contains(&r.api_groups, &a.group)
        && contains(&r.api_versions, &a.version)
        && r.resources.iter().flatten().any(|res| {
            let (res, sub) = res.split_once('/').unwrap_or((res, ""));
            (res == "*" || res == a.resource) && (sub == "*" || sub == a.subresource)
        })
}

#[cfg(test)]
mod tests {
    use super::super::Operation;
    use super::*;

    fn attrs(resource: &str, sub: &str, namespaced: bool) -> Attributes {
        Attributes {
            group: "example.com".into(),
            version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            kind: "Foo".into(),
            request_version: "v1".into(),
            namespace: if namespaced {
                "default".into()
            } else {
                String::new()
            },
            name: "x".into(),
            namespaced,
            operation: Operation::Update,
            dry_run: false,
            options: Value::Null,
        }
    }

    fn rule(resources: &[&str], scope: Option<&str>) -> ar::RuleWithOperations {
        ar::RuleWithOperations {
            api_groups: Some(vec!["example.com".into()]),
            api_versions: Some(vec!["*".into()]),
            operations: Some(vec!["UPDATE".into()]),
            resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
            scope: scope.map(str::to_owned),
        }
    }

    #[test]
    fn resources_match_with_their_subresources_and_wildcards() {
        let main = attrs("foos", "", true);
        let status = attrs("foos", "status", true);
        let cases: [(&[&str], bool, bool); 7] = [
            (&["foos"], true, false),
            (&["foos/status"], false, true),
            (&["*"], true, false),
            (&["*/status"], false, true),
            (&["foos/*"], true, true),
            (&["*/*"], true, true),
            (&["bars", "bars/status"], false, false),
        ];
        for (resources, on_main, on_status) in cases {
            let r = rule(resources, None);
            assert_eq!(rule_matches(&r, &main), on_main, "{resources:?} on foos");
            assert_eq!(
                rule_matches(&r, &status),
                on_status,
                "{resources:?} on foos/status"
            );
        }
    }

    #[test]
    fn operations_groups_versions_and_scope_must_all_match() {
        let a = attrs("foos", "", true);
        assert!(rule_matches(&rule(&["foos"], Some("*")), &a));
        assert!(rule_matches(&rule(&["foos"], Some("Namespaced")), &a));
        assert!(!rule_matches(&rule(&["foos"], Some("Cluster")), &a));
        assert!(rule_matches(
            &rule(&["foos"], Some("Cluster")),
            &attrs("foos", "", false)
        ));
        let mut r = rule(&["foos"], None);
        r.operations = Some(vec!["CREATE".into(), "DELETE".into()]);
        assert!(!rule_matches(&r, &a));
        r.operations = Some(vec!["*".into()]);
        assert!(rule_matches(&r, &a));
        // Another version of the resource: matchPolicy Equivalent calls at it.
        let h = Hook {
            rules: vec![ar::RuleWithOperations {
                api_versions: Some(vec!["v2".into()]),
                ..r.clone()
            }],
            ..hook(
                "h".into(),
                Default::default(),
                None,
                None,
                "None".into(),
                None,
                vec![],
            )
        };
        let versions = ["v2".to_owned()];
        assert_eq!(
            h.clone()
                .matching(&a, &versions)
                .unwrap()
                .call_version
                .as_deref(),
            Some("v2")
        );
        assert!(Hook {
            equivalent: false,
            ..h
        }
        .matching(&a, &versions)
        .is_none());
        r.api_groups = Some(vec!["".into()]);
        assert!(!rule_matches(&r, &a));
        r.api_groups = Some(vec!["example.com".into()]);
        r.api_versions = Some(vec!["v2".into()]);
        assert!(!rule_matches(&r, &a));
    }

    #[test]
    fn selectors_see_the_namespace_and_either_object() {
        let sel = |k: &str| {
            Some(LabelSelector {
                match_labels: Some([(k.to_owned(), "yes".to_owned())].into()),
                ..Default::default()
            })
        };
        let mut h = hook(
            "h".into(),
            Default::default(),
            None,
            None,
            "None".into(),
            None,
            vec!["v1".into()],
        );
        assert_eq!(h.timeout, Duration::from_secs(10));
        assert!(!h.ignore_failure);
        h.namespace_selector = sel("team");
        let a = attrs("foos", "", true);
        let labelled = serde_json::json!({"metadata": {"labels": {"team": "yes", "obj": "yes"}}});
        let bare = serde_json::json!({"metadata": {}});
        let ns: BTreeMap<String, String> = [("team".to_owned(), "yes".to_owned())].into();
        assert_eq!(h.selects(&a, Some(&bare), None, &ns), Ok(true));
        assert_eq!(
            h.selects(&a, Some(&bare), None, &BTreeMap::new()),
            Ok(false)
        );
        // Cluster-scoped objects are never skipped by a namespace selector.
        let cluster = attrs("foos", "", false);
        assert_eq!(
            h.selects(&cluster, Some(&bare), None, &BTreeMap::new()),
            Ok(true)
        );
        h.namespace_selector = None;
        h.object_selector = sel("obj");
        assert_eq!(h.selects(&a, Some(&bare), None, &ns), Ok(false));
        assert_eq!(h.selects(&a, Some(&bare), Some(&labelled), &ns), Ok(true));
        assert_eq!(h.selects(&a, Some(&labelled), None, &ns), Ok(true));
        assert_eq!(h.selects(&a, None, None, &ns), Ok(false));
    }
}
