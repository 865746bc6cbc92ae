//! Benchmark: selectors (being built).
fn main() {}
