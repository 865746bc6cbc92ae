//! The configuration file: which processors run, in which namespaces, with which limits.
//!
//! ```yaml
//! workers: 2
//! processors:
//!   evicted:          {enabled: true, namespaces: []}           # [] = every namespace
//!   stuckTerminating: {enabled: true, after: 10m, removeFinalizers: false}
//!   imagePullBackOff: {enabled: true, after: 5m}
//!   restarts:         {enabled: true, maxRestarts: 5, webhook: http://127.0.0.1:9000/hook}
//! ```
//!
//! Durations are `<n>s`, `<n>m` or `<n>h`. Unknown keys are errors, so a typo never turns
//! a processor off silently.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// Workers taking keys from the queue.
    #[serde(default = "default_workers")]
    pub workers: usize,
    /// The processors, applied in this order to every Pod.
    #[serde(default)]
    pub processors: Processors,
}

fn default_workers() -> usize {
    2
}

impl Default for Config {
    fn default() -> Self {
        Config {
            workers: default_workers(),
            processors: Processors::default(),
        }
    }
}

/// Every processor's settings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Processors {
    /// Delete Pods the kubelet evicted.
    #[serde(default)]
    pub evicted: Scope,
    /// Force-delete Pods terminating for longer than `after`.
    #[serde(default)]
    pub stuck_terminating: StuckTerminating,
    /// Scale to zero the Deployment of Pods in image pull back-off longer than `after`.
    #[serde(default)]
    pub image_pull_back_off: ImagePullBackOff,
    /// Report Pods restarting more than `max_restarts` times.
    #[serde(default)]
    pub restarts: Restarts,
}

/// Whether a processor runs, and where.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scope {
    /// Off unless set.
    #[serde(default)]
    pub enabled: bool,
    /// Namespaces it acts in; empty: all.
    #[serde(default)]
    pub namespaces: BTreeSet<String>,
}

impl Scope {
    /// Whether the processor acts on a Pod of `namespace`.
    pub fn applies_to(&self, namespace: &str) -> bool {
        self.enabled && (self.namespaces.is_empty() || self.namespaces.contains(namespace))
    }
}

/// `stuckTerminating`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StuckTerminating {
    /// Where it runs.
    #[serde(flatten)]
    pub scope: Scope,
    /// How long a Pod may terminate.
    #[serde(default = "ten_minutes", with = "duration")]
    pub after: Duration,
    /// Also remove the Pod's finalizers (only for Pods whose finalizer owner is gone).
    #[serde(default)]
    pub remove_finalizers: bool,
}

impl Default for StuckTerminating {
    fn default() -> Self {
        StuckTerminating {
            scope: Scope::default(),
            after: ten_minutes(),
            remove_finalizers: false,
        }
    }
}

/// `imagePullBackOff`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImagePullBackOff {
    /// Where it runs.
    #[serde(flatten)]
    pub scope: Scope,
    /// How long a Pod may fail to pull.
    #[serde(default = "five_minutes", with = "duration")]
    pub after: Duration,
}

impl Default for ImagePullBackOff {
    fn default() -> Self {
        ImagePullBackOff {
            scope: Scope::default(),
            after: five_minutes(),
        }
    }
}

/// `restarts`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Restarts {
    /// Where it runs.
    #[serde(flatten)]
    pub scope: Scope,
    /// Restarts (of any container) above which a Pod is reported.
    #[serde(default = "five")]
    pub max_restarts: i32,
    /// `http://host:port/path` to POST each report to as JSON.
    #[serde(default)]
    pub webhook: Option<String>,
}

impl Default for Restarts {
    fn default() -> Self {
        Restarts {
            scope: Scope::default(),
            max_restarts: five(),
            webhook: None,
        }
    }
}

fn ten_minutes() -> Duration {
    Duration::from_secs(600)
}

fn five_minutes() -> Duration {
    Duration::from_secs(300)
}

fn five() -> i32 {
    5
}

/// Parses `30s`, `10m`, `2h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 30s, 10m or 2h"))?;
    let seconds = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("{text:?} has no unit: write 30s, 10m or 2h")),
    };
    Ok(Duration::from_secs(seconds))
}

mod duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

/// Reads a configuration file; errors name the file and the problem.
pub fn load(path: &std::path::Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_unknown_keys() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert!(parse_duration("10").is_err());
        let c: Config = serde_yaml::from_str(
            "processors: {stuckTerminating: {enabled: true, after: 2m, namespaces: [a]}}",
        )
        .unwrap();
        assert_eq!(
            c.processors.stuck_terminating.after,
            Duration::from_secs(120)
        );
        assert!(c.processors.stuck_terminating.scope.applies_to("a"));
        assert!(!c.processors.stuck_terminating.scope.applies_to("b"));
        assert!(!c.processors.evicted.applies_to("a"));
        assert!(serde_yaml::from_str::<Config>("processors: {evicted: {enabeld: true}}").is_err());
    }
}
