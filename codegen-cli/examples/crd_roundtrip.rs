//! CRD -> `kubegen generate` -> `kubegen crd` -> compare, for every CRD file given (or
//! every `*.yaml` in the directories given); one line per file, the differences of each
//! version that is not identical, and a total. Exit 1 when any version differs.
//!
//! With `--write-crds DIR` first, every CRD written back is also saved in DIR as
//! `<source file stem>.rt.<CRD file name>` (hack/real-crds.sh creates them on a real
//! kube-apiserver with `dryRun=All`).
//!
//! `cargo run -p kubegen --example crd_roundtrip -- ../shared/crds`

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let start = Instant::now();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let write_to = match args.first().map(String::as_str) {
        Some("--write-crds") if args.len() > 1 => {
            let dir = PathBuf::from(args[1].clone());
            args.drain(..2);
            if let Err(e) = std::fs::create_dir_all(&dir) {
                eprintln!("cannot create {}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
            Some(dir)
        }
        _ => None,
    };
    for arg in args {
        let path = PathBuf::from(&arg);
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(&path)
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            found
                .retain(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")));
            found.sort();
            files.extend(found);
        } else {
            files.push(path);
        }
    }
    if files.is_empty() {
        eprintln!("usage: crd_roundtrip [--write-crds DIR] <CRD files or directories>...");
        return ExitCode::FAILURE;
    }
    let (mut identical, mut total, mut failed_files) = (0, 0, 0);
    for file in &files {
        let work = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => {
                eprintln!("cannot create a temporary directory: {e}");
                return ExitCode::FAILURE;
            }
        };
        let out = work.path().join("out");
        match kubegen::roundtrip::round_trip(file, &out) {
            Ok(results) => {
                if let Some(dir) = &write_to {
                    if let Err(e) = write_crds(file, &out, dir) {
                        eprintln!("{}: cannot write the CRDs back: {e}", file.display());
                        return ExitCode::FAILURE;
                    }
                }
                let same = results.iter().filter(|r| r.differences.is_empty()).count();
                identical += same;
                total += results.len();
                let name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                println!("{:>3}/{:<3} {name}", same, results.len());
                for r in results.iter().filter(|r| !r.differences.is_empty()) {
                    println!("        {} {}:", r.crd, r.version);
                    for d in &r.differences {
                        println!("          {d}");
                    }
                }
            }
            Err(errors) => {
                failed_files += 1;
                println!("  ERROR {}", file.display());
                for e in errors {
                    println!("        {e}");
                }
            }
        }
    }
    println!(
        "round trip: {identical}/{total} versions identical in {} files ({failed_files} files failed) in {:.1?}",
        files.len(),
        start.elapsed()
    );
    if identical == total && failed_files == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Saves the CRDs `kubegen crd` writes from the tree generated for `source` (in `out`).
fn write_crds(
    source: &std::path::Path,
    out: &std::path::Path,
    dir: &std::path::Path,
) -> Result<(), String> {
    let crds = kubegen::crds(&[out.join("apis")]).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    for crd in crds {
        let path = dir.join(format!("{stem}.rt.{}", crd.file_name));
        std::fs::write(&path, &crd.yaml).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
