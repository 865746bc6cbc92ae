//! Replays the checked-in corpus of every fuzz target (`fuzz/corpus/<target>/`, seeds
//! and the inputs that once crashed), so `cargo test` keeps every past finding fixed
//! without building the instrumented binaries.

use std::path::Path;

#[test]
fn every_corpus_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut replayed = 0;
    for (name, target) in kubegen_fuzz::TARGETS {
        let dir = root.join(name);
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus directory {} is missing: {e}", dir.display()));
        let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        assert!(
            !files.is_empty(),
            "target {name} has no corpus in {}",
            dir.display()
        );
        for file in files {
            let data = std::fs::read(&file)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            eprintln!("{name}: {}", file.display());
            target(&data);
            replayed += 1;
        }
    }
    assert!(replayed >= kubegen_fuzz::TARGETS.len());
}
