//! +groupName=example.com
//! Package markers, as Go's doc.go holds them.
//!
//! +groupName=widgets.example.com
//! +k8s:deepcopy-gen=package
