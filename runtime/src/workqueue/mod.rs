//! The rate-limited workqueue (being built).
