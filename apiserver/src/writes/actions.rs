//! The subresources that act instead of storing what they are sent, as kube-apiserver's:
//! `pods/eviction` (what `kubectl drain` posts), `pods/binding` (what a scheduler
//! posts) and `serviceaccounts/token` (`kubectl create token`).
//!
//! Contract:
//! - Eviction deletes the pod with the Eviction's `deleteOptions`, unless a
//!   PodDisruptionBudget in the pod's namespace selects it (policy/v1: an empty
//!   selector selects every pod) and the pod counts toward it
//!   (not Pending, Succeeded or Failed, not already deleting). Then, as kube-apiserver
//!   without a disruption controller to fill the budget's status: a budget whose
//!   `status.observedGeneration` is behind its generation, or whose
//!   `status.disruptionsAllowed` is 0, answers 429 TooManyRequests; otherwise
//!   `disruptionsAllowed` is decremented and the pod deleted. More than one budget
//!   selecting the pod answers 500, as kube-apiserver does.
//! - Binding sets `spec.nodeName` of a pod that has none (409 Conflict when it has one).
//! - A token is an unsigned JWT (`alg: none`) with kube-apiserver's claims (issuer,
//!   subject `system:serviceaccount:<ns>:<name>`, audiences, expiry, the
//!   `kubernetes.io` claim); nothing here verifies tokens, so a signature would promise
//!   what the server does not do.
//! - Each answers 201: eviction and binding with a success `Status`, token with the
//!   `TokenRequest` and its `status.token` and `status.expirationTimestamp`.

use serde_json::{json, Map, Value};

use super::{DeleteOpts, WriteOpts};
use crate::errors::StatusError;
use crate::labels::Selector;
use crate::meta::now;
use crate::server::Inner;

/// The acting subresources a built-in registration has: name, and the group, version
/// and kind of the body they take.
pub(crate) fn actions_of(
    reg: &crate::registry::Registration,
) -> &'static [(&'static str, &'static str, &'static str, &'static str)] {
    if reg.custom || !reg.group.is_empty() {
        return &[];
    }
    match reg.plural.as_str() {
        "pods" => &[
            ("eviction", "policy", "v1", "Eviction"),
            ("binding", "", "v1", "Binding"),
        ],
        "serviceaccounts" => &[("token", "authentication.k8s.io", "v1", "TokenRequest")],
        _ => &[],
    }
}

/// The issuer and default audience of tokens, as a cluster's defaults name them.
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

impl Inner {
    /// `pods/<name>/eviction`: deletes the pod unless a disruption budget forbids it.
    pub(crate) fn evict(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<(), StatusError> {
        let pod = self.current(idx, ns, name)?;
        let phase = pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Pending");
        let deleting = pod.pointer("/metadata/deletionTimestamp").is_some();
        let counts = !deleting && !matches!(phase, "Pending" | "Succeeded" | "Failed");
        if counts {
            self.take_disruption(ns, &pod, opts.dry_run)?;
        }
        self.delete(idx, ns, name, opts).map(|_| ())
    }

    /// Checks the one budget that selects the pod and takes a disruption from it.
    fn take_disruption(&self, ns: &str, pod: &Value, dry_run: bool) -> Result<(), StatusError> {
        let Ok(pdb_idx) = self.resolve("poddisruptionbudgets.policy") else {
            return Ok(());
        };
        let labels = pod
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect::<std::collections::BTreeMap<_, _>>()
            })
            .unwrap_or_default();
        let budgets: Vec<Value> = {
            let st = self.state.read();
            st.collections[pdb_idx]
                .objects
                .values()
                .filter_map(|o| o.to_value().ok())
                .map(Value::Object)
                .filter(|b| b.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns))
                .filter(|b| {
                    let sel = b
                        .pointer("/spec/selector")
                        .cloned()
                        .and_then(|s| serde_json::from_value(s).ok())
                        .and_then(|s| Selector::from_label_selector(&s).ok());
                    // policy/v1: an empty selector selects every pod of the namespace.
                    sel.is_some_and(|s| s.matches(&labels))
                })
                .collect()
        };
        let budget = match budgets.as_slice() {
            [] => return Ok(()),
            [b] => b,
            _ => {
                return Err(StatusError::new(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ))
            }
        };
        let int = |p: &str| budget.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let too_many = |msg: String| StatusError::new(429, "TooManyRequests", msg);
        let pdb_name = budget
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if int("/status/observedGeneration") < int("/metadata/generation") {
            return Err(too_many(format!(
                "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget {pdb_name} is still being processed by the server."
            )));
        }
        let allowed = int("/status/disruptionsAllowed");
        if allowed <= 0 {
            return Err(too_many(format!(
                "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
                int("/status/desiredHealthy"),
                int("/status/currentHealthy")
            )));
        }
        if dry_run {
            return Ok(());
        }
        self.modify(
            pdb_idx,
            ns,
            &pdb_name,
            &WriteOpts::default(),
            true,
            |_, body| {
                if let Some(Value::Object(status)) = body.get_mut("status") {
                    status.insert("disruptionsAllowed".into(), Value::from(allowed - 1));
                }
                Ok(())
            },
        )?;
        Ok(())
    }

    /// `pods/<name>/binding`: assigns the pod to the Binding's target node.
    pub(crate) fn bind(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        binding: &Map<String, Value>,
        opts: &WriteOpts,
    ) -> Result<(), StatusError> {
        let node = binding
            .get("target")
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                StatusError::invalid(
                    "",
                    "Binding",
                    name,
                    vec![crate::errors::StatusCause {
                        reason: crate::errors::cause::FIELD_VALUE_REQUIRED.into(),
                        message: "Required value".into(),
                        field: "target.name".into(),
                    }],
                )
            })?;
        self.modify(idx, ns, name, opts, false, |_, body| {
            let spec = body
                .entry("spec")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(n) = spec
                .get("nodeName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            {
                return Err(StatusError::new(
                    409,
                    "Conflict",
                    format!("Operation cannot be fulfilled on pods/binding \"{name}\": pod {name} is already assigned to node \"{n}\""),
                ));
            }
            if let Value::Object(spec) = spec {
                spec.insert("nodeName".into(), Value::String(node.to_owned()));
            }
            Ok(())
        })?;
        Ok(())
    }

    /// `serviceaccounts/<name>/token`: a TokenRequest answered with a token.
    pub(crate) fn token(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        request: &Map<String, Value>,
    ) -> Result<Value, StatusError> {
        let sa = self.current(idx, ns, name)?;
        let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
        let audiences = spec
            .get("audiences")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .cloned()
            .unwrap_or_else(|| vec![json!(ISSUER)]);
        let seconds = spec
            .get("expirationSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(3600);
        if seconds < 600 {
            return Err(StatusError::invalid(
                "authentication.k8s.io",
                "TokenRequest",
                name,
                vec![crate::errors::StatusCause {
                    reason: crate::errors::cause::FIELD_VALUE_INVALID.into(),
                    message: "may not specify a duration less than 10 minutes".into(),
                    field: "spec.expirationSeconds".into(),
                }],
            ));
        }
        let iat = k8s_openapi::jiff::Timestamp::now().as_second();
        let exp = iat + seconds;
        let expires = k8s_openapi::jiff::Timestamp::from_second(exp)
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_else(|_| now());
        let uid = sa.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);
        let claims = json!({
            "aud": audiences, "exp": exp, "iat": iat, "nbf": iat, "iss": ISSUER,
            "sub": format!("system:serviceaccount:{ns}:{name}"),
            "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name, "uid": uid}},
        });
        let part = |v: &Value| base64url(v.to_string().as_bytes());
        let token = format!(
            "{}.{}.",
            part(&json!({"alg": "none", "typ": "JWT"})),
            part(&claims)
        );
        let mut spec = spec;
        spec["audiences"] = Value::Array(audiences);
        spec["expirationSeconds"] = Value::from(seconds);
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": now()},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": expires},
        }))
    }

    /// The stored object as JSON (404 when there is none).
    fn current(&self, idx: usize, ns: &str, name: &str) -> Result<Value, StatusError> {
        Ok(Value::Object(self.stored(idx, ns, name)?.to_value()?))
    }
}

/// Unpadded URL-safe base64, as JWTs encode their parts.
fn base64url(b: &[u8]) -> String {
    crate::protobuf::base64(b)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64url_has_no_padding_and_url_safe_characters() {
        assert_eq!(super::base64url(b"\xfb\xff"), "-_8");
        assert_eq!(super::base64url(b"a"), "YQ");
    }
}
