//! The in-memory Kubernetes API server (being built).
