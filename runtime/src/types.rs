//! Wire types for generated code (being built).
