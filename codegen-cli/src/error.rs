//! The generator's error: where in which input, what is wrong, and how to fix it.
//!
//! Every input problem names the file and the place inside it: the YAML path for CRDs
//! (`spec.versions[1].schema.openAPIV3Schema.properties.spec.properties.replicas`), the
//! line and column for Rust source; then the problem and a fix. Output problems name
//! the path on disk. Displayed, errors read:
//!
//! ```text
//! error: crds/foo.yaml: spec.versions[0].schema.openAPIV3Schema.properties.spec.type:
//!   unknown type "strng"
//!   fix: use one of string, integer, number, boolean, array, object
//! error: src/apis/samplecontroller/v1alpha1/types.rs:12:5:
//!   unknown marker `+genclient:noVerb`
//!   fix: use one of +genclient, +genclient:nonNamespaced, +genclient:noVerbs, ...
//! ```

use std::fmt;
use std::path::PathBuf;

/// A generator error (bad input, or an output directory kubegen must not touch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The input file or output path concerned, when there is one.
    pub file: Option<PathBuf>,
    /// The YAML path inside the file (empty when the whole file is concerned, or for
    /// Rust input).
    pub yaml_path: String,
    /// The line and column (1-based) in a Rust source file.
    pub line_col: Option<(usize, usize)>,
    /// What is wrong.
    pub problem: String,
    /// How to fix it.
    pub fix: String,
}

impl Error {
    /// An error at `yaml_path` (the file is filled in by the caller that knows it).
    pub fn at(
        yaml_path: impl Into<String>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Error {
            file: None,
            yaml_path: yaml_path.into(),
            line_col: None,
            problem: problem.into(),
            fix: fix.into(),
        }
    }

    /// An error at a line and column (1-based) of a Rust source file.
    pub fn in_source(
        file: impl Into<PathBuf>,
        line: usize,
        column: usize,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Error {
            file: Some(file.into()),
            yaml_path: String::new(),
            line_col: Some((line, column)),
            problem: problem.into(),
            fix: fix.into(),
        }
    }

    /// The same place, with another problem and fix.
    pub fn with_problem(mut self, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        self.problem = problem.into();
        self.fix = fix.into();
        self
    }

    /// Sets the file when not set yet.
    pub fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.into());
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut place = String::new();
        if let Some(file) = &self.file {
            place.push_str(&file.display().to_string());
        }
        if let Some((line, column)) = self.line_col {
            place.push_str(&format!(":{line}:{column}"));
        }
        if !self.yaml_path.is_empty() {
            if !place.is_empty() {
                place.push_str(": ");
            }
            place.push_str(&self.yaml_path);
        }
        if place.is_empty() {
            write!(f, "{}", self.problem)?;
        } else {
            write!(f, "{place}:\n  {}", self.problem)?;
        }
        if !self.fix.is_empty() {
            write!(f, "\n  fix: {}", self.fix)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
