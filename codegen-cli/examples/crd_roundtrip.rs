//! CRD -> `kubegen generate` -> `kubegen crd` -> compare, for every CRD file given (or
//! every `*.yaml` in the directories given); one line per file, the differences of each
//! version that is not identical, and a total. Exit 1 when any version differs.
//!
//! `cargo run -p kubegen --example crd_roundtrip -- ../shared/crds`

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let start = Instant::now();
    let mut files: Vec<PathBuf> = Vec::new();
    for arg in std::env::args().skip(1) {
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
        eprintln!("usage: crd_roundtrip <CRD files or directories>...");
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
        match kubegen::roundtrip::round_trip(file, &work.path().join("out")) {
            Ok(results) => {
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
