//! [`Builder`]: kubegen from a `build.rs`, writing one file into `OUT_DIR`.
//!
//! A build script cannot add modules to the crate's source tree, so the builder writes the
//! whole tree as a single file of nested inline modules
//! ([`generate_single_file`](kubegen_templates::emit::generate_single_file)), which the
//! crate mounts with `include!`. It prints `cargo:rerun-if-changed` for every input, so cargo
//! regenerates only when a CRD changes. Errors come back as [`Error`]s (a build script
//! usually panics with their text, which cargo shows).
//!
//! In `build.rs`: `kubegen::Builder::new().crd("crds/foo.yaml").generate()`, then in the
//! crate: `include!(concat!(env!("OUT_DIR"), "/kubegen.rs"));`. Outside a build script,
//! give it a directory:
//!
//! ```
//! let out = tempfile::tempdir().unwrap();
//! let crds = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/crds/samplecontroller.yaml");
//! let file = kubegen::Builder::new()
//!     .crd(crds)
//!     .out_dir(out.path())
//!     .generate()
//!     .unwrap_or_else(|e| panic!("{e}"));
//! let text = std::fs::read_to_string(file).unwrap();
//! assert!(text.contains("pub mod samplecontroller {"));
//! ```

use std::path::{Path, PathBuf};

use crate::{Config, Error};

/// Generates code from a build script (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Builder {
    config: Config,
    out_dir: Option<PathBuf>,
    file_name: Option<String>,
}

impl Builder {
    /// A builder with no inputs, writing `$OUT_DIR/kubegen.rs`.
    pub fn new() -> Self {
        Builder::default()
    }

    /// Adds a CRD file or a directory of them.
    pub fn crd(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.inputs.push(path.into());
        self
    }

    /// Text placed after the generated-code header (a license comment).
    pub fn boilerplate(mut self, text: impl Into<String>) -> Self {
        self.config.boilerplate = Some(text.into());
        self
    }

    /// Names the module of an API group (as `--group-alias GROUP=MODULE`).
    pub fn group_alias(mut self, group: impl Into<String>, module: impl Into<String>) -> Self {
        self.config
            .group_aliases
            .insert(group.into(), module.into());
        self
    }

    /// Writes into `dir` instead of `$OUT_DIR`.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Names the written file (default `kubegen.rs`).
    pub fn file_name(mut self, name: impl Into<String>) -> Self {
        self.file_name = Some(name.into());
        self
    }

    /// Generates, writes the single file and returns its path.
    pub fn generate(self) -> Result<PathBuf, Error> {
        let dir = match self.out_dir {
            Some(dir) => dir,
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| {
                    Error::at(
                        "",
                        "OUT_DIR is not set",
                        "call Builder::generate from a build script, or set Builder::out_dir",
                    )
                })?,
        };
        for input in crate::input_files(&self.config.inputs)? {
            println!("cargo:rerun-if-changed={}", input.display());
        }
        for input in &self.config.inputs {
            println!("cargo:rerun-if-changed={}", input.display());
        }
        let mut config = self.config;
        // A build script always gets one file.
        config.layout = crate::Layout::SingleFile;
        let generated = crate::generate(&config).map_err(|errors| {
            errors
                .into_iter()
                .next()
                .unwrap_or_else(|| Error::at("", "generation failed", ""))
        })?;
        let path = dir.join(self.file_name.as_deref().unwrap_or("kubegen.rs"));
        let text = generated
            .files
            .first()
            .map(|f| f.contents.as_str())
            .unwrap_or_default();
        write_if_changed(&path, text)?;
        Ok(path)
    }
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), Error> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| Error {
        file: Some(path.to_owned()),
        yaml_path: String::new(),
        line_col: None,
        problem: format!("cannot write: {e}"),
        fix: "check that the output directory is writable".to_owned(),
    })
}
