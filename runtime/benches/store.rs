//! Benchmark: store (being built).
fn main() {}
