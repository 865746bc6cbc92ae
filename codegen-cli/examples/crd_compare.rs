//! Compares two directories of CRDs file by file: `controller-gen crd`'s output (the
//! first) with `kubegen crd`'s (the second), for hack/controller-gen-compare.sh. Prints
//! one line per file and, for a file that differs, where (`path: controller-gen ->
//! kubegen`). Exit 1 when any file differs or exists on one side only.
//!
//! # Normalization
//!
//! Key order aside (objects compare as maps), one thing only: controller-gen's
//! `controller-gen.kubebuilder.io/version` annotation is dropped (and the `annotations`
//! map with it when nothing else is left). The `---` that opens controller-gen's files
//! is YAML's document marker and disappears when the YAML is read. Arrays compare
//! element by element, in order.
//!
//! With `--manifests` first, every object of every file is compared (controller-gen's
//! `rbac` and `webhook` output against `kubegen rbac` and `kubegen webhook`), not only
//! CRDs.
//!
//! `cargo run -p kubegen --example crd_compare -- [--manifests] <controller-gen dir> <kubegen dir>`

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

const VERSION_ANNOTATION: &str = "controller-gen.kubebuilder.io/version";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let manifests = args.first().map(String::as_str) == Some("--manifests");
    if manifests {
        args.remove(0);
    }
    let [expected, actual] = args.as_slice() else {
        eprintln!("usage: crd_compare [--manifests] <controller-gen dir> <kubegen dir>");
        return ExitCode::from(2);
    };
    let (expected, actual) = (Path::new(expected), Path::new(actual));
    let names = match (yaml_files(expected), yaml_files(actual)) {
        (Ok(a), Ok(b)) => a.union(&b).cloned().collect::<BTreeSet<String>>(),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("crd_compare: {e}");
            return ExitCode::from(2);
        }
    };
    let mut differing = 0;
    for name in &names {
        let differences = compare_file(&expected.join(name), &actual.join(name), manifests);
        if differences.is_empty() {
            println!("same    {name}");
        } else {
            differing += 1;
            println!("DIFFERS {name} (controller-gen -> kubegen):");
            for d in differences {
                println!("          {d}");
            }
        }
    }
    println!(
        "controller-gen and kubegen: {}/{} {} files identical",
        names.len() - differing,
        names.len(),
        if manifests { "manifest" } else { "CRD" }
    );
    if differing == 0 && !names.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn yaml_files(dir: &Path) -> Result<BTreeSet<String>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .collect())
}

fn compare_file(expected: &Path, actual: &Path, manifests: bool) -> Vec<String> {
    let read = |path: &Path, who: &str| -> Result<Vec<Value>, String> {
        if !path.exists() {
            return Err(format!("{who} wrote no such file"));
        }
        let objects = if manifests {
            kubegen::roundtrip::read_objects(path)
        } else {
            kubegen::roundtrip::read_crds(path)
        };
        objects
            .map(|crds| crds.into_iter().map(normalize).collect())
            .map_err(|e| e.to_string())
    };
    match (read(expected, "controller-gen"), read(actual, "kubegen")) {
        (Ok(a), Ok(b)) if a.len() != b.len() => {
            vec![format!(
                "{} objects -> {} objects in the file",
                a.len(),
                b.len()
            )]
        }
        (Ok(a), Ok(b)) => {
            let mut out = Vec::new();
            for (x, y) in a.iter().zip(&b) {
                let name = x
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("(unnamed)");
                kubegen::roundtrip::compare(name, Some(x), Some(y), &mut out);
            }
            out
        }
        (Err(e), _) | (_, Err(e)) => vec![e],
    }
}

fn normalize(mut crd: Value) -> Value {
    if let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove(VERSION_ANNOTATION);
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    crd
}
