//! The processor chain: what to do with one Pod, decided from the Pod, the configuration
//! and the time, with no IO (the controller carries the actions out).
//!
//! - `evicted`: a Pod the kubelet evicted (`status.phase=Failed`, `status.reason=Evicted`)
//!   is deleted.
//! - `stuckTerminating`: a Pod whose `deletionTimestamp` is older than `after` is deleted
//!   with grace period 0 (and, when `removeFinalizers`, its finalizers are removed first).
//! - `imagePullBackOff`: a Pod with a container waiting in `ErrImagePull` or
//!   `ImagePullBackOff` since longer than `after` (counted from when this controller
//!   first saw it failing) gets its owning Deployment scaled to zero.
//! - `restarts`: a Pod whose containers restarted more than `maxRestarts` times in total
//!   is reported (event, log line, webhook).
//!
//! A condition seen but not old enough yet asks for a recheck when it will be.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kubegen_kubernetes::compact::core::v1::Pod;

use crate::config::Processors;

/// What to do with a Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Delete it (evicted).
    DeleteEvicted,
    /// Delete it with grace period 0, removing finalizers first when asked.
    ForceDelete {
        /// Remove `metadata.finalizers` first.
        remove_finalizers: bool,
        /// How long it has been terminating.
        terminating_for: Duration,
    },
    /// Scale the owning Deployment to zero replicas.
    ScaleOwnerToZero {
        /// The failing container and its reason.
        container: String,
        /// `ErrImagePull` or `ImagePullBackOff`.
        reason: String,
    },
    /// Report the Pod's restarts.
    ReportRestarts {
        /// Restarts summed over its containers.
        restarts: i32,
    },
    /// Look again after this long (a condition that is not old enough yet).
    RecheckAfter(Duration),
}

/// Whether a Pod was evicted by the kubelet.
pub fn is_evicted(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Failed") && s.reason.as_deref() == Some("Evicted")
    })
}

/// The first container waiting on an image pull, with the reason.
pub fn image_pull_failure(pod: &Pod) -> Option<(String, String)> {
    let status = pod.status.as_ref()?;
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .find_map(|c| {
            let waiting = c.state.as_ref()?.waiting.as_ref()?;
            let reason = waiting.reason.as_deref()?;
            matches!(reason, "ErrImagePull" | "ImagePullBackOff")
                .then(|| (c.name.clone(), reason.to_owned()))
        })
}

/// Restarts summed over all containers.
pub fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |cs| cs.iter().map(|c| c.restart_count).sum())
}

fn since(then: Timestamp, now: Timestamp) -> Duration {
    let span = now.as_second().saturating_sub(then.as_second());
    Duration::from_secs(u64::try_from(span).unwrap_or(0))
}

/// The actions for `pod` at `now`. `pull_failing_since` is when the controller first
/// saw the Pod failing to pull (the caller remembers it per Pod).
pub fn decide(
    pod: &Pod,
    config: &Processors,
    now: Timestamp,
    pull_failing_since: Option<Timestamp>,
) -> Vec<Action> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut actions = Vec::new();
    if config.evicted.applies_to(namespace) && is_evicted(pod) {
        actions.push(Action::DeleteEvicted);
        return actions;
    }
    let stuck = &config.stuck_terminating;
    if stuck.scope.applies_to(namespace) {
        if let Some(ts) = &pod.metadata.deletion_timestamp {
            let terminating_for = since(ts.0, now);
            if terminating_for >= stuck.after {
                actions.push(Action::ForceDelete {
                    remove_finalizers: stuck.remove_finalizers,
                    terminating_for,
                });
                return actions;
            }
            actions.push(Action::RecheckAfter(stuck.after - terminating_for));
        }
    }
    let pull = &config.image_pull_back_off;
    if pull.scope.applies_to(namespace) {
        if let (Some((container, reason)), Some(first)) =
            (image_pull_failure(pod), pull_failing_since)
        {
            let failing_for = since(first, now);
            if failing_for >= pull.after {
                actions.push(Action::ScaleOwnerToZero { container, reason });
            } else {
                actions.push(Action::RecheckAfter(pull.after - failing_for));
            }
        }
    }
    let r = &config.restarts;
    if r.scope.applies_to(namespace) {
        let n = restarts(pod);
        if n > r.max_restarts {
            actions.push(Action::ReportRestarts { restarts: n });
        }
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Scope};

    fn all_enabled() -> Processors {
        let mut p = Config::default().processors;
        let on = Scope {
            enabled: true,
            namespaces: Default::default(),
        };
        p.evicted = on.clone();
        p.stuck_terminating.scope = on.clone();
        p.image_pull_back_off.scope = on.clone();
        p.restarts.scope = on;
        p
    }

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).unwrap()
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn evicted_pods_are_deleted_and_nothing_else_runs() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns"},
            "status": {"phase": "Failed", "reason": "Evicted",
                       "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 9}]},
        }));
        assert_eq!(
            decide(&p, &all_enabled(), at("2026-01-01T00:00:00Z"), None),
            [Action::DeleteEvicted]
        );
        let mut off = all_enabled();
        off.evicted.namespaces = ["other".to_owned()].into_iter().collect();
        assert_eq!(
            decide(&p, &off, at("2026-01-01T00:00:00Z"), None),
            [Action::ReportRestarts { restarts: 9 }]
        );
    }

    #[test]
    fn terminating_pods_wait_for_the_limit_then_are_force_deleted() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns", "deletionTimestamp": "2026-01-01T00:00:00Z"},
        }));
        let config = all_enabled();
        assert_eq!(
            decide(&p, &config, at("2026-01-01T00:04:00Z"), None),
            [Action::RecheckAfter(Duration::from_secs(360))]
        );
        assert_eq!(
            decide(&p, &config, at("2026-01-01T00:10:00Z"), None),
            [Action::ForceDelete {
                remove_finalizers: false,
                terminating_for: Duration::from_secs(600)
            }]
        );
    }

    #[test]
    fn image_pull_failures_scale_the_owner_after_the_limit() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns"},
            "status": {"containerStatuses": [{"name": "web", "image": "nope", "imageID": "", "ready": false, "restartCount": 0,
                        "state": {"waiting": {"reason": "ImagePullBackOff"}}}]},
        }));
        let config = all_enabled();
        let first = at("2026-01-01T00:00:00Z");
        assert_eq!(
            decide(&p, &config, at("2026-01-01T00:01:00Z"), Some(first)),
            [Action::RecheckAfter(Duration::from_secs(240))]
        );
        assert_eq!(
            decide(&p, &config, at("2026-01-01T00:05:00Z"), Some(first)),
            [Action::ScaleOwnerToZero {
                container: "web".into(),
                reason: "ImagePullBackOff".into()
            }]
        );
        assert_eq!(
            image_pull_failure(&p),
            Some(("web".into(), "ImagePullBackOff".into()))
        );
    }
}
