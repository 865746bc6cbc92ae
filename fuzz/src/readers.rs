//! The generator's readers: CRD YAML and hand-written Rust API types, through the whole
//! pipeline (read, model, validation, emitters) whenever the reader accepts the input.

use std::path::{Path, PathBuf};

/// Feeds `data` to the CRD reader as the text of one YAML file; when it parses, runs
/// the whole generator on it.
///
/// Properties: rejected input gets an error with a problem and a fix (no panic in the
/// reader, the model or an emitter, whatever the names, nesting or enum sizes).
pub fn crd_reader(data: &[u8]) {
    let file = Path::new("fuzz.yaml");
    let parsed = match std::str::from_utf8(data) {
        // kubegen reads files as UTF-8 and says so when one is not.
        Err(_) => return,
        Ok(text) => kubegen::input::crd::parse_file(file, text),
    };
    match parsed {
        Err(e) => check_error(&e),
        Ok(crds) => {
            assert!(!crds.is_empty(), "parse_file accepted a file without a CRD");
            let _dir = generate(data, &["crds.yaml"]);
        }
    }
}

/// Feeds `data` to the Rust reader as `example/v1/types.rs` (so the module path names a
/// version, and a `//! +groupName=` in the input names the group) and runs the whole
/// generator on it.
///
/// Properties: as [`crd_reader`]; and `kubegen crd` (CRDs from the same Rust types)
/// either fails with clear errors or writes CRDs that kubegen's own CRD reader accepts.
pub fn rust_reader(data: &[u8]) {
    if std::str::from_utf8(data).is_err() {
        return;
    }
    let dir = generate(data, &["example", "v1", "types.rs"]);
    let crds = kubegen::crds(&[dir.path().to_path_buf()]);
    forget_spans();
    match crds {
        Err(errors) => errors.iter().for_each(check_error),
        Ok(crds) => {
            for crd in crds {
                if let Err(e) =
                    kubegen::input::crd::parse_file(Path::new(&crd.file_name), &crd.yaml)
                {
                    panic!(
                        "kubegen crd wrote a CRD its own reader rejects: {e}\n{}",
                        crd.yaml
                    );
                }
            }
        }
    }
}

/// Forgets the source text proc-macro2 keeps for every span parsed on this thread.
///
/// With `span-locations` (which kubegen enables for line and column in its errors),
/// proc-macro2 appends the text of everything parsed to a thread-local map that lives as
/// long as the thread: in one fuzzing process it grew past 1.5 GB in ten minutes. A
/// kubegen run parses a bounded input once, so the library leaves the map alone (clearing
/// it would invalidate any span a caller still holds); the harness holds none after a
/// run, so it clears the map to keep memory bounded by one input.
fn forget_spans() {
    proc_macro2::extra::invalidate_current_thread_spans();
}

/// Writes `data` at `relative` in a fresh directory and generates from that directory,
/// which it returns.
fn generate(data: &[u8], relative: &[&str]) -> tempfile::TempDir {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        // Not a property of kubegen: the machine has no room for a temporary file.
        Err(e) => panic!("cannot create a temporary directory: {e}"),
    };
    let path: PathBuf = relative
        .iter()
        .fold(dir.path().to_path_buf(), |p, s| p.join(s));
    if let Some(parent) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(parent) {
            panic!("cannot create {}: {e}", parent.display());
        }
    }
    if let Err(e) = std::fs::write(&path, data) {
        panic!("cannot write {}: {e}", path.display());
    }
    let config = kubegen::Config::new(vec![dir.path().to_path_buf()]);
    let generated = kubegen::generate(&config);
    forget_spans();
    match generated {
        Ok(generated) => assert!(
            !generated.files.is_empty(),
            "generate succeeded with no file"
        ),
        Err(errors) => {
            assert!(!errors.is_empty(), "generate failed with no error");
            errors.iter().for_each(check_error);
        }
    }
    dir
}

/// A clear error: it says what is wrong and how to fix it, in a bounded message.
fn check_error(e: &kubegen::Error) {
    assert!(
        !e.problem.trim().is_empty(),
        "an error without a problem: {e:?}"
    );
    assert!(!e.fix.trim().is_empty(), "an error without a fix: {e:?}");
    let shown = e.to_string();
    assert!(
        !shown.is_empty(),
        "an error that displays as nothing: {e:?}"
    );
}
