//! Field selectors (being built).
