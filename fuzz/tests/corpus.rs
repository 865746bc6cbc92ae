//! Replays the named inputs of every fuzz target's corpus (`fuzz/corpus/<target>/`:
//! the hand-written seeds and the inputs that once failed, each named for what it holds),
//! so `cargo test` keeps every past finding fixed without the instrumented build.
//!
//! The inputs libFuzzer's merges kept (named by their SHA-1) are replayed too with
//! `FUZZ_REPLAY_ALL=1`; hack/fuzz.sh runs them all anyway when it starts a target, in an
//! optimised build, which is where the thousands of them belong.

use std::path::Path;

/// Runs every file of `fuzz/corpus/<name>/` through `target`; returns how many.
fn replay(name: &str, target: kubegen_fuzz::Target) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus directory {} is missing: {e}", dir.display()));
    let all = std::env::var_os("FUZZ_REPLAY_ALL").is_some();
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| all || !is_merged(p))
        .collect();
    files.sort();
    for file in &files {
        let data =
            std::fs::read(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        // The panic message alone would not say which input failed.
        eprintln!("{name}: {}", file.display());
        target(&data);
    }
    files.len()
}

/// Whether a corpus file was added by a libFuzzer merge (its name is a SHA-1).
fn is_merged(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.len() == 40 && n.bytes().all(|b| b.is_ascii_hexdigit()))
}

macro_rules! corpus_tests {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            let n = replay(stringify!($name), kubegen_fuzz::$name);
            assert!(n > 0, "target {} has an empty corpus", stringify!($name));
        }
    )*};
}

corpus_tests!(crd_reader, rust_reader, selectors, watch_decoder, apiserver);

#[test]
fn every_target_has_a_corpus_test() {
    let tested = [
        "crd_reader",
        "rust_reader",
        "selectors",
        "watch_decoder",
        "apiserver",
    ];
    let targets: Vec<&str> = kubegen_fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(targets, tested);
}
