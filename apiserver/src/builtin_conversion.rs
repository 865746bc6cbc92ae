//! Conversions between the versions of built-in kinds that the server serves at more
//! than one version from one storage: HorizontalPodAutoscaler `autoscaling/v1` (what
//! `kubectl autoscale` writes) and `autoscaling/v2` (the storage version).
//!
//! Contract (kube-apiserver's `autoscaling/v1` conversion):
//! - v1 `spec.targetCPUUtilizationPercentage` is the v2 CPU `Resource` metric with a
//!   `Utilization` target; unset, it defaults to 80 (v1's default), so a v1 object always
//!   has a CPU metric in v2. v1 `status.currentCPUUtilizationPercentage` is the v2 CPU
//!   current metric.
//! - What v1 cannot hold rides in annotations, as kube-apiserver keeps it: the other
//!   metrics (`autoscaling.alpha.kubernetes.io/metrics`), `behavior`
//!   (`autoscaling.alpha.kubernetes.io/behavior`), status conditions
//!   (`autoscaling.alpha.kubernetes.io/conditions`) and the other current metrics
//!   (`autoscaling.alpha.kubernetes.io/current-metrics`), as JSON in their v2 form; so
//!   v2 -> v1 -> v2 loses nothing.
//! - `scaleTargetRef`, `minReplicas`, `maxReplicas` and the other status fields are the
//!   same in both.

use serde_json::{json, Map, Value};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const CURRENT: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

/// A built-in kind served at several versions, converted here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinConversion {
    /// `autoscaling/v1` <-> `autoscaling/v2` HorizontalPodAutoscaler.
    HorizontalPodAutoscaler,
}

impl BuiltinConversion {
    /// Converts `obj` in place to `desired` (an apiVersion).
    pub(crate) fn convert(self, obj: &mut Map<String, Value>, desired: &str) -> Result<(), String> {
        match (self, desired) {
            (Self::HorizontalPodAutoscaler, "autoscaling/v2") => hpa_to_v2(obj),
            (Self::HorizontalPodAutoscaler, "autoscaling/v1") => hpa_to_v1(obj),
            (_, other) => return Err(format!("no conversion to {other}")),
        }
        obj.insert("apiVersion".into(), Value::String(desired.to_owned()));
        Ok(())
    }
}

fn is_cpu_utilization(m: &Value, key: &str) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && m.pointer(&format!("/resource/{key}/averageUtilization"))
            .is_some()
        && (key != "target"
            || m.pointer("/resource/target/type").and_then(Value::as_str) == Some("Utilization"))
}

fn annotations(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let Value::Object(meta) = meta else {
        unreachable!("made an object above")
    };
    let a = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !a.is_object() {
        *a = Value::Object(Map::new());
    }
    match a {
        Value::Object(m) => m,
        _ => unreachable!("made an object above"),
    }
}

/// Moves a JSON value into an annotation (as text), unless it is empty.
fn stash(obj: &mut Map<String, Value>, key: &str, v: Value) {
    let empty = v.is_null() || v.as_array().is_some_and(Vec::is_empty);
    if !empty {
        annotations(obj).insert(key.into(), Value::String(v.to_string()));
    }
}

/// Takes an annotation stashed by [`stash`] back as JSON.
fn unstash(obj: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let a = annotations(obj);
    let v = a
        .remove(key)
        .and_then(|s| s.as_str().and_then(|s| serde_json::from_str(s).ok()));
    if a.is_empty() {
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.remove("annotations");
        }
    }
    v
}

fn hpa_to_v1(obj: &mut Map<String, Value>) {
    let metrics: Vec<Value> = obj
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .and_then(|s| s.remove("metrics"))
        .and_then(|m| m.as_array().cloned())
        .unwrap_or_default();
    let behavior = obj
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .and_then(|s| s.remove("behavior"));
    let (cpu, others): (Vec<Value>, Vec<Value>) = metrics
        .into_iter()
        .partition(|m| is_cpu_utilization(m, "target"));
    if let (Some(c), Some(Value::Object(spec))) = (cpu.first(), obj.get_mut("spec")) {
        let pct = c.pointer("/resource/target/averageUtilization").cloned();
        spec.insert(
            "targetCPUUtilizationPercentage".into(),
            pct.unwrap_or(Value::Null),
        );
    }
    stash(obj, METRICS, Value::Array(others));
    stash(obj, BEHAVIOR, behavior.unwrap_or(Value::Null));
    let status = obj.get_mut("status").and_then(Value::as_object_mut);
    let (current, conditions) = match status {
        Some(st) => (
            st.remove("currentMetrics")
                .and_then(|m| m.as_array().cloned())
                .unwrap_or_default(),
            st.remove("conditions"),
        ),
        None => (Vec::new(), None),
    };
    let (cpu_now, other_now): (Vec<Value>, Vec<Value>) = current
        .into_iter()
        .partition(|m| is_cpu_utilization(m, "current"));
    if let (Some(c), Some(Value::Object(st))) = (cpu_now.first(), obj.get_mut("status")) {
        if let Some(p) = c.pointer("/resource/current/averageUtilization") {
            st.insert("currentCPUUtilizationPercentage".into(), p.clone());
        }
    }
    stash(obj, CURRENT, Value::Array(other_now));
    stash(obj, CONDITIONS, conditions.unwrap_or(Value::Null));
}

fn hpa_to_v2(obj: &mut Map<String, Value>) {
    let others = unstash(obj, METRICS);
    let behavior = unstash(obj, BEHAVIOR);
    let current = unstash(obj, CURRENT);
    let conditions = unstash(obj, CONDITIONS);
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        let pct = spec
            .remove("targetCPUUtilizationPercentage")
            .filter(|p| !p.is_null())
            .unwrap_or(Value::from(80));
        let mut metrics = vec![json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": pct}}})];
        if let Some(Value::Array(o)) = others {
            metrics.extend(o);
        }
        spec.insert("metrics".into(), Value::Array(metrics));
        if let Some(b) = behavior {
            spec.insert("behavior".into(), b);
        }
    }
    if let Some(Value::Object(st)) = obj.get_mut("status") {
        let mut now = Vec::new();
        if let Some(p) = st.remove("currentCPUUtilizationPercentage") {
            now.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": p}}}));
        }
        if let Some(Value::Array(o)) = current {
            now.extend(o);
        }
        if !now.is_empty() {
            st.insert("currentMetrics".into(), Value::Array(now));
        }
        if let Some(c) = conditions {
            st.insert("conditions".into(), c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(v: Value, to: &str) -> Value {
        let Value::Object(mut m) = v else { panic!() };
        BuiltinConversion::HorizontalPodAutoscaler
            .convert(&mut m, to)
            .unwrap();
        Value::Object(m)
    }

    #[test]
    fn hpa_v1_to_v2_and_back() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
            "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 20}});
        let v2 = conv(v1.clone(), "autoscaling/v2");
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            50
        );
        assert_eq!(
            v2["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
            20
        );
        assert!(v2["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert_eq!(conv(v2, "autoscaling/v1"), v1);
        // Unset, the target is v1's default.
        let bare = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "b"}, "spec": {"maxReplicas": 2}});
        let v2 = conv(bare, "autoscaling/v2");
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
    }

    #[test]
    fn what_v1_cannot_hold_survives_v2_to_v1_to_v2() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {"keep": "me"}},
            "spec": {"maxReplicas": 5, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}}},
            "status": {"currentReplicas": 2, "desiredReplicas": 2,
                "conditions": [{"type": "AbleToScale", "status": "True"}]}});
        let v1 = conv(v2.clone(), "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert!(v1["metadata"]["annotations"][METRICS]
            .as_str()
            .unwrap()
            .contains("qps"));
        assert!(v1["status"].get("conditions").is_none());
        assert_eq!(conv(v1, "autoscaling/v2"), v2);
    }
}
