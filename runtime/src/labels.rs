//! Label selectors (being built).
