//! Replays the checked-in corpus of every fuzz target (`fuzz/corpus/<target>/`: the
//! hand-written seeds, what libFuzzer's merges kept, and the inputs that once failed), so
//! `cargo test` keeps every past finding fixed without the instrumented build.

use std::path::Path;

/// Runs every file of `fuzz/corpus/<name>/` through `target`; returns how many.
fn replay(name: &str, target: kubegen_fuzz::Target) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus directory {} is missing: {e}", dir.display()));
    let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
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
