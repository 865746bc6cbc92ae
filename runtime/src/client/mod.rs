//! The typed client over kube::Client (being built).
