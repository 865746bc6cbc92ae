//! Every Rust snippet of the README, compiled: `build.rs` writes each ```` ```rust ````
//! block into `OUT_DIR/readme/` (items as a file, statements as the body of an async
//! function) and this test mounts them, so a README example that stops compiling fails
//! the build. The test below checks that they are all here.

#[allow(clippy::duplicate_mod)]
mod readme {
    include!(concat!(env!("OUT_DIR"), "/readme/mod.rs"));
}

#[test]
fn every_rust_snippet_of_the_readme_is_compiled() {
    let readme = include_str!("../../README.md");
    let blocks = readme.lines().filter(|l| l.trim_end() == "```rust").count();
    let mounted = include_str!(concat!(env!("OUT_DIR"), "/readme/mod.rs"))
        .lines()
        .filter(|l| l.starts_with("mod line_"))
        .count();
    assert!(blocks >= 9, "{blocks}");
    assert_eq!(blocks, mounted);
}
