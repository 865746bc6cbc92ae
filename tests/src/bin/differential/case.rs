//! A case: a family, a name, and the comparisons of its steps. A step agrees when both
//! servers gave the same status code, reason and causes (field path and reason), and,
//! where the step compares bodies, the same normalized body; a different message alone
//! is recorded as "message differs" and still agrees.

use serde_json::{json, Value};

use crate::harness::{causes, diff, normalize, Req, Resp};

/// How far a step compares the two answers.
#[derive(Clone, Debug)]
pub enum Cmp {
    /// Status code; for a Status, its reason and causes.
    Outcome,
    /// [`Cmp::Outcome`] and the normalized bodies.
    Body,
    /// [`Cmp::Body`], with these dotted paths counted equal when both are present (values
    /// a server allocates, e.g. a Service's clusterIP).
    BodyExcept(&'static [&'static str]),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    Agree,
    MessageDiffers,
    Differ,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub request: String,
    pub verdict: Verdict,
    pub mem: String,
    pub real: String,
    pub details: Vec<String>,
    pub messages: Option<(String, String)>,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub family: String,
    pub name: String,
    pub steps: Vec<Step>,
    /// The harness could not run the case (transport error, panic, setup failure).
    pub error: Option<String>,
    /// A remark for the report (e.g. "the real server rejected the CRD").
    pub note: Option<String>,
}

impl Case {
    pub fn new(family: &str, name: impl Into<String>) -> Case {
        Case {
            family: family.into(),
            name: name.into(),
            steps: Vec::new(),
            error: None,
            note: None,
        }
    }

    pub fn agrees(&self) -> bool {
        self.error.is_none() && self.steps.iter().all(|s| s.verdict != Verdict::Differ)
    }

    /// Compares two answers to `req` and records the step. Returns whether it agreed.
    pub fn check(&mut self, req: &Req, mem: &Resp, real: &Resp, cmp: Cmp) -> bool {
        self.check_described(req.describe(), mem, real, cmp)
    }

    pub fn check_described(&mut self, request: String, mem: &Resp, real: &Resp, cmp: Cmp) -> bool {
        let mut details = Vec::new();
        if mem.error.is_some() || real.error.is_some() {
            details.push(format!("mem: {} / real: {}", mem.summary(), real.summary()));
        } else if mem.code != real.code {
            details.push(format!(
                "status code: mem {} / real {}",
                mem.code, real.code
            ));
        }
        let (ms, rs) = (mem.body["kind"] == "Status", real.body["kind"] == "Status");
        if ms && rs {
            if mem.body["reason"] != real.body["reason"] {
                details.push(format!(
                    "reason: mem {} / real {}",
                    mem.body["reason"], real.body["reason"]
                ));
            }
            let (mc, rc) = (causes(&mem.body), causes(&real.body));
            if mc != rc {
                details.push(format!(
                    "causes: mem [{}] / real [{}]",
                    mc.join(", "),
                    rc.join(", ")
                ));
            }
            if !matches!(cmp, Cmp::Outcome) {
                for key in ["name", "kind", "group"] {
                    let (a, b) = (&mem.body["details"][key], &real.body["details"][key]);
                    if a != b {
                        details.push(format!("details.{key}: mem {a} / real {b}"));
                    }
                }
            }
        } else if !matches!(cmp, Cmp::Outcome) && mem.code == real.code && mem.error.is_none() {
            let (mut a, mut b) = (normalize(&mem.body), normalize(&real.body));
            if let Cmp::BodyExcept(paths) = &cmp {
                for p in *paths {
                    blank_if_both(&mut a, &mut b, p);
                }
            }
            details.extend(diff(&a, &b, 12));
        }
        let messages =
            (ms && rs && mem.message() != real.message()).then(|| (mem.message(), real.message()));
        let verdict = if !details.is_empty() {
            Verdict::Differ
        } else if messages.is_some() {
            Verdict::MessageDiffers
        } else {
            Verdict::Agree
        };
        self.steps.push(Step {
            request,
            verdict,
            mem: mem.summary(),
            real: real.summary(),
            details,
            messages,
        });
        verdict != Verdict::Differ
    }

    /// Records a comparison the case computed itself (e.g. watch event sequences).
    pub fn check_values(&mut self, request: String, mem: &Value, real: &Value) -> bool {
        let details = diff(mem, real, 12);
        let verdict = if details.is_empty() {
            Verdict::Agree
        } else {
            Verdict::Differ
        };
        self.steps.push(Step {
            request,
            verdict,
            mem: crate::harness::brief(mem),
            real: crate::harness::brief(real),
            details,
            messages: None,
        });
        verdict == Verdict::Agree
    }

    pub fn fail(&mut self, e: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(e.into());
        }
    }
}

/// Replaces the value at a dotted path with a placeholder in both, when both have it.
fn blank_if_both(a: &mut Value, b: &mut Value, path: &str) {
    let ptr = format!("/{}", path.replace('.', "/"));
    if let (Some(x), Some(y)) = (a.pointer_mut(&ptr), b.pointer_mut(&ptr)) {
        *x = json!("<allocated>");
        *y = json!("<allocated>");
    }
}
