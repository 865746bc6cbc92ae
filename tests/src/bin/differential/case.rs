//! A case: a family, a name, and the comparisons of its steps. A step agrees when both
//! servers gave the same status code, reason and causes (field path and reason), and,
//! where the step compares bodies, the same normalized body; a different message alone
//! is recorded as "message differs" and still agrees.

use serde_json::Value;

use crate::harness::{causes, diff, normalize, scrub_generated, Req, Resp};

/// Differences that would otherwise fail nearly every step, and so hide everything
/// else: a step records them under [`Step::set_aside`] (the report counts them and
/// shows one example each) and agrees if nothing else differs. Cases with [`Cmp::Full`]
/// show each of them once as a difference.
pub const SET_ASIDE: &[&str] = &[
    "metadata.managedFields differs (kube-apiserver tracks Update and Create writes too, with manager \"unknown\" when no fieldManager is given)",
    "metadata.generation present on one side only (the in-memory server sets it on kinds without a spec)",
    "metadata.resourceVersion present on one side only (kube-apiserver leaves it out of dry-run creates)",
    "Status details.group \"\" against absent for the core group",
    "cause `<nil>: FieldValueInvalid` on one side only (kube-apiserver: \"some validation rules were not checked because the object was invalid\")",
];

/// Which [`SET_ASIDE`] entry a difference line is, if any.
fn set_aside_kind(detail: &str) -> Option<usize> {
    let path = detail.split(": ").next().unwrap_or("");
    if path.contains(".metadata.managedFields") {
        return Some(0);
    }
    if detail.contains("absent") {
        if path.ends_with(".metadata.generation") {
            return Some(1);
        }
        if path.ends_with(".metadata.resourceVersion") {
            return Some(2);
        }
    }
    None
}

/// How far a step compares the two answers.
#[derive(Clone, Debug)]
pub enum Cmp {
    /// Status code; for a Status, its reason and causes.
    Outcome,
    /// [`Cmp::Outcome`] and the normalized bodies, with the pervasive differences
    /// ([`SET_ASIDE`]) recorded apart instead of failing the step.
    Body,
    /// [`Cmp::Body`] with nothing set aside.
    Full,
    /// [`Cmp::Outcome`] and a part of the normalized bodies (to see one behaviour, e.g.
    /// a patch's list merge, apart from differences in defaulting).
    Project(fn(&Value) -> Value),
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
    /// Indices into [`SET_ASIDE`] of the pervasive differences this step had.
    pub set_aside: Vec<usize>,
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
    /// A sub-grouping the report counts separately (the constraint kind a CRD corpus
    /// mutation breaks).
    pub tag: Option<String>,
}

impl Case {
    pub fn new(family: &str, name: impl Into<String>) -> Case {
        Case {
            family: family.into(),
            name: name.into(),
            steps: Vec::new(),
            error: None,
            note: None,
            tag: None,
        }
    }

    pub fn agrees(&self) -> bool {
        self.error.is_none() && self.steps.iter().all(|s| s.verdict != Verdict::Differ)
    }

    /// Compares two answers to `req` and records the step. Returns whether it agreed.
    pub fn check(&mut self, req: &Req, mem: &Resp, real: &Resp, cmp: Cmp) -> bool {
        let generate_name = req
            .body
            .as_deref()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .and_then(|v| v["metadata"]["generateName"].as_str().map(str::to_owned));
        match generate_name {
            Some(g) => {
                let (m, r) = (scrub_generated(mem, &g), scrub_generated(real, &g));
                self.check_described(req.describe(), &m, &r, cmp)
            }
            None => self.check_described(req.describe(), mem, real, cmp),
        }
    }

    pub fn check_described(&mut self, request: String, mem: &Resp, real: &Resp, cmp: Cmp) -> bool {
        let mut details = Vec::new();
        let mut set_aside = Vec::new();
        let full = matches!(cmp, Cmp::Full);
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
            let (mut mc, mut rc) = (causes(&mem.body), causes(&real.body));
            let unchecked = "<nil>: FieldValueInvalid".to_owned();
            if !full && mc.contains(&unchecked) != rc.contains(&unchecked) {
                mc.retain(|c| *c != unchecked);
                rc.retain(|c| *c != unchecked);
                set_aside.push(4);
            }
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
                    let blank = |v: &Value| v.is_null() || *v == "";
                    if !full && key == "group" && a != b && blank(a) && blank(b) {
                        set_aside.push(3);
                        continue;
                    }
                    if a != b {
                        details.push(format!("details.{key}: mem {a} / real {b}"));
                    }
                }
            }
        } else if !matches!(cmp, Cmp::Outcome) && mem.code == real.code && mem.error.is_none() {
            let (mut a, mut b) = (normalize(&mem.body), normalize(&real.body));
            if let Cmp::Project(f) = &cmp {
                (a, b) = (f(&a), f(&b));
            }
            for d in diff(&a, &b, 200) {
                match set_aside_kind(&d).filter(|_| !full) {
                    Some(k) => set_aside.push(k),
                    None if details.len() < 12 => details.push(d),
                    None => {}
                }
            }
        }
        set_aside.sort_unstable();
        set_aside.dedup();
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
            set_aside,
        });
        verdict != Verdict::Differ
    }

    /// Records a comparison the case computed itself (e.g. watch event sequences);
    /// the pervasive differences are set aside as in [`Cmp::Body`].
    pub fn check_values(&mut self, request: String, mem: &Value, real: &Value) -> bool {
        let mut details = Vec::new();
        let mut set_aside = Vec::new();
        for d in diff(mem, real, 200) {
            match set_aside_kind(&d) {
                Some(k) => set_aside.push(k),
                None if details.len() < 12 => details.push(d),
                None => {}
            }
        }
        set_aside.sort_unstable();
        set_aside.dedup();
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
            set_aside,
        });
        verdict == Verdict::Agree
    }

    pub fn fail(&mut self, e: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(e.into());
        }
    }
}
