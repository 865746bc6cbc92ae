//! The CRD constraint corpus: every CRD of the corpus directory is created on both
//! servers; for each served version a valid object synthesized from the schema, then
//! mutations of it that each break one constraint, are created with `dryRun=All`
//! (nothing is stored), and accept/reject, reasons and causes compared.
//!
//! A CRD either server refuses is one disagreeing (or agreeing) case and nothing more.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::case::{Case, Cmp};
use crate::families::{create_namespace, wait_established, Ctx};
use crate::harness::{Pair, Req};
use crate::synth;

const FAMILY: &str = "crd-corpus";
/// Mutations per CRD version.
const PER_VERSION: usize = 14;
/// CRDs in flight at once.
const PARALLEL: usize = 3;

pub async fn run(ctx: Ctx) -> Vec<Case> {
    let (_server, pair) = match crate::fresh_pair(&ctx.real).await {
        Ok(x) => x,
        Err(e) => {
            let mut c = Case::new(FAMILY, "setup");
            c.fail(e);
            return vec![c];
        }
    };
    let ns = format!("d-crd-{}", crate::run_id());
    if let Err(e) = create_namespace(&pair, &ns).await {
        let mut c = Case::new(FAMILY, "setup");
        c.fail(e);
        return vec![c];
    }
    let mut files: Vec<std::path::PathBuf> = match std::fs::read_dir(&ctx.crds) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect(),
        Err(e) => {
            let mut c = Case::new(FAMILY, "setup");
            c.fail(format!("{}: {e}", ctx.crds));
            return vec![c];
        }
    };
    files.sort();
    if let Some(n) = ctx.crd_limit {
        files.truncate(n);
    }
    let gate = Arc::new(Semaphore::new(PARALLEL));
    let mut tasks = Vec::new();
    for file in files {
        let (pair, ns, gate) = (pair.clone(), ns.clone(), gate.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await;
            file_cases(&pair, &ns, &file).await
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        match t.await {
            Ok(cases) => out.extend(cases),
            Err(e) => {
                let mut c = Case::new(FAMILY, "a CRD file");
                c.fail(format!("panicked: {e}"));
                out.push(c);
            }
        }
    }
    let _ = pair
        .both(&Req::delete(format!("/api/v1/namespaces/{ns}")))
        .await;
    out
}

fn read_crds(path: &std::path::Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let yaml = <serde_yaml::Value as serde::Deserialize>::deserialize(doc)
            .map_err(|e| e.to_string())?;
        let v: Value = serde_json::to_value(&yaml).map_err(|e| e.to_string())?;
        if v["kind"] == "CustomResourceDefinition" {
            out.push(v);
        }
    }
    Ok(out)
}

async fn file_cases(p: &Pair, ns: &str, path: &std::path::Path) -> Vec<Case> {
    let file = path
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or("?")
        .to_owned();
    match read_crds(path) {
        Ok(crds) => {
            let mut out = Vec::new();
            for crd in crds {
                out.extend(crd_cases(p, ns, &crd).await);
            }
            out
        }
        Err(e) => {
            let mut c = Case::new(FAMILY, file);
            c.fail(e);
            vec![c]
        }
    }
}

async fn crd_cases(p: &Pair, ns: &str, crd: &Value) -> Vec<Case> {
    let name = crd["metadata"]["name"].as_str().unwrap_or("?").to_owned();
    eprintln!("differential: crd-corpus: {name}");
    let mut reg = Case::new(FAMILY, format!("{name}: create the CRD"));
    reg.tag = Some("create the CRD".into());
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let create = Req::post(crds, crd);
    let (a, b) = p.both(&create).await;
    let mut described = create.clone();
    described.body = None;
    reg.check(&described, &a, &b, Cmp::Outcome);
    if !a.ok() || !b.ok() {
        reg.note = Some(match (a.ok(), b.ok()) {
            (true, false) => format!("the real server refuses this CRD: {}", b.message()),
            (false, true) => format!("the in-memory server refuses this CRD: {}", a.message()),
            _ => "both servers refuse this CRD".into(),
        });
        let _ = p.both(&Req::delete(format!("{crds}/{name}"))).await;
        return vec![reg];
    }
    if let Err(e) = wait_established(p, crd).await {
        reg.fail(e);
        let _ = p.both(&Req::delete(format!("{crds}/{name}"))).await;
        return vec![reg];
    }
    let mut out = vec![reg];
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
    let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
    let namespaced = crd["spec"]["scope"] == "Namespaced";
    for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
        if v["served"] != true {
            continue;
        }
        let version = v["name"].as_str().unwrap_or_default();
        let schema = &v["schema"]["openAPIV3Schema"];
        let coll = if namespaced {
            format!("/apis/{group}/{version}/namespaces/{ns}/{plural}?dryRun=All")
        } else {
            format!("/apis/{group}/{version}/{plural}?dryRun=All")
        };
        let mut base = synth::valid(schema, 0);
        if !base.is_object() {
            base = json!({});
        }
        base["apiVersion"] = json!(format!("{group}/{version}"));
        base["kind"] = json!(kind);
        base["metadata"] = json!({"name": "corpus-obj"});
        let mut c = Case::new(FAMILY, format!("{name} {version}: a valid object"));
        c.tag = Some("valid object".into());
        let req = Req::post(&coll, &base);
        let (a, b) = p.both(&req).await;
        c.check(&req, &a, &b, Cmp::Body);
        let base_ok = a.ok() && b.ok();
        if !a.ok() && !b.ok() {
            c.note = Some(
                "both servers reject the synthesized object (a pattern or rule it does not meet)"
                    .into(),
            );
        }
        out.push(c);
        if base_ok {
            out.push(apply_then_extract(p, &coll, &base, v, &format!("{name} {version}")).await);
        }
        for m in synth::pick(synth::mutations(schema), PER_VERSION) {
            let mut c = Case::new(FAMILY, format!("{name} {version}: {} at {}", m.kind, m.at));
            c.tag = Some(m.kind.into());
            let req = Req::post(&coll, &m.apply(&base));
            let (a, b) = p.both(&req).await;
            c.check(&req, &a, &b, Cmp::Outcome);
            if !base_ok {
                c.note = Some("the valid object was not accepted by both".into());
            }
            out.push(c);
        }
        let mut unknown = base.clone();
        unknown["zzUndeclared"] = json!(1);
        let mut c = Case::new(
            FAMILY,
            format!("{name} {version}: an undeclared field, fieldValidation=Strict"),
        );
        let req = Req::post(format!("{coll}&fieldValidation=Strict"), &unknown);
        let (a, b) = p.both(&req).await;
        c.check(&req, &a, &b, Cmp::Outcome);
        out.push(c);
    }
    let _ = p.both(&Req::delete(format!("{crds}/{name}"))).await;
    out
}

/// The field manager of the apply-then-extract cases.
const EXTRACT_MANAGER: &str = "corpus-extract";

/// Server-side apply of the valid object (dry run) on both servers, then
/// `kubegen_runtime::apply::extract` of the answer for the applying manager: on each
/// server that accepts the apply, it must give back exactly what was applied (less
/// `status`, which an apply of the main resource does not set when the version has a
/// status subresource). Typed apply configurations' `extract_<kind>` is `extract_with`
/// (with the kind's atomic objects, from its schema) and a serde conversion.
async fn apply_then_extract(
    p: &Pair,
    coll: &str,
    base: &Value,
    version: &Value,
    label: &str,
) -> Case {
    let name = base["metadata"]["name"].as_str().unwrap_or("corpus-obj");
    let item = match coll.split_once('?') {
        Some((path, query)) => format!("{path}/{name}?{query}&fieldManager={EXTRACT_MANAGER}"),
        None => format!("{coll}/{name}?fieldManager={EXTRACT_MANAGER}"),
    };
    let body = serde_json::to_string(base).unwrap_or_default();
    let req = Req::patch(&item, "application/apply-patch+yaml", &body);
    let mut c = Case::new(FAMILY, format!("{label}: server-side apply, then extract"));
    c.tag = Some("apply, then extract".into());
    let (a, b) = p.both(&req).await;
    c.check(&req, &a, &b, Cmp::Outcome);
    let mut want = base.clone();
    if version.pointer("/subresources/status").is_some() {
        if let Some(m) = want.as_object_mut() {
            m.remove("status");
        }
    }
    // The namespace the server put the object in (from whichever side accepted it).
    let namespace = [&a, &b]
        .into_iter()
        .find(|r| r.ok())
        .map(|r| r.body["metadata"]["namespace"].clone())
        .unwrap_or_default();
    if !namespace.is_null() {
        want["metadata"]["namespace"] = namespace;
    }
    let atomic = kubegen_runtime::apply::atomic_object_paths(&version["schema"]["openAPIV3Schema"]);
    let atomic: Vec<&str> = atomic.iter().map(String::as_str).collect();
    let mut failed: Vec<String> = Vec::new();
    for (side, resp) in [("in-memory", &a), ("kube-apiserver", &b)] {
        if !resp.ok() {
            continue;
        }
        let got = kubegen_runtime::apply::extract_with(&resp.body, EXTRACT_MANAGER, "", &atomic);
        if got != want {
            let d = crate::harness::diff(&got, &want, 6).join("; ");
            failed.push(format!(
                "{side}: extract differs from what was applied: {d}"
            ));
        }
    }
    if !failed.is_empty() {
        c.fail(failed.join("; "));
    }
    c
}
