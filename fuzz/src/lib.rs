//! Fuzz targets: each public function takes the fuzzer's bytes and panics only when a
//! property fails.
//!
//! Contract, for every target: no panic, no hang (libFuzzer's `-timeout`), memory
//! bounded by the input (libFuzzer's `-rss_limit_mb`), and a clear error for input that
//! is rejected (a non-empty problem and fix, a `Status` with the response's code). Each
//! target adds its own properties (round trips, chunking invariance, lists that keep
//! working after any write); see its docs.
//!
//! The same functions run three ways: under libFuzzer with coverage instrumentation
//! (`fuzz_targets/`, built by `hack/fuzz.sh` on the stable toolchain), over the
//! checked-in corpus in `cargo test` (`tests/corpus.rs`), and from the regression
//! tests that sit next to the code a crash was found in.

#![forbid(unsafe_code)]

mod apiserver;
mod readers;
mod selectors;
mod watch;

pub use apiserver::apiserver;
pub use readers::{crd_reader, rust_reader};
pub use selectors::selectors;
pub use watch::watch_decoder;

/// A fuzz target: the fuzzer's bytes in, a panic when a property fails.
pub type Target = fn(&[u8]);

/// Every fuzz target by name (the corpus directory's name), for the corpus replay.
pub const TARGETS: &[(&str, Target)] = &[
    ("crd_reader", crd_reader),
    ("rust_reader", rust_reader),
    ("selectors", selectors),
    ("watch_decoder", watch_decoder),
    ("apiserver", apiserver),
];
