//! Benchmark: workqueue (being built).
fn main() {}
