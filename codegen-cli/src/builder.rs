//! [`Builder`]: kubegen from a `build.rs`, writing one file into `OUT_DIR`.
//!
//! A build script cannot add modules to the crate's source tree, so the builder writes the
//! whole tree as a single file of nested inline modules ([`single_file`]), which the crate
//! mounts with `include!`. It prints `cargo:rerun-if-changed` for every input, so cargo
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

use crate::{Config, Error, GeneratedFile};

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
        let generated = crate::generate(&self.config).map_err(|errors| {
            errors
                .into_iter()
                .next()
                .unwrap_or_else(|| Error::at("", "generation failed", ""))
        })?;
        let text = single_file(&generated.files);
        // `Config::layout` is ignored here: a build script always gets one file.
        let path = dir.join(self.file_name.as_deref().unwrap_or("kubegen.rs"));
        write_if_changed(&path, &text)?;
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
        problem: format!("cannot write: {e}"),
        fix: "check that the output directory is writable".to_owned(),
    })
}

/// The tree as one file: each `mod x;` line replaced by `mod x { <x.rs or x/mod.rs> }`,
/// starting from the root `mod.rs`, so `include!` can mount it anywhere.
pub fn single_file(files: &[GeneratedFile]) -> String {
    fn expand(files: &[GeneratedFile], path: &str, dir: &str, depth: usize) -> String {
        let Some(file) = files.iter().find(|f| f.path == path) else {
            return String::new();
        };
        let mut out = String::new();
        for line in file.contents.lines() {
            let indent = &line[..line.len() - line.trim_start().len()];
            let line = line.trim_start();
            let decl = line
                .strip_prefix("pub mod ")
                .map(|r| ("pub mod ", r))
                .or_else(|| line.strip_prefix("mod ").map(|r| ("mod ", r)));
            match decl.and_then(|(vis, rest)| rest.strip_suffix(';').map(|name| (vis, name))) {
                Some((vis, name)) if depth < 16 => {
                    let child_dir = if dir.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{dir}/{name}")
                    };
                    let as_file = format!("{child_dir}.rs");
                    let child = if files.iter().any(|f| f.path == as_file) {
                        expand(files, &as_file, &child_dir, depth + 1)
                    } else {
                        expand(files, &format!("{child_dir}/mod.rs"), &child_dir, depth + 1)
                    };
                    // The child's own `//!` docs describe it inside the block; an outer
                    // `///` doc as well would mix attribute styles.
                    while out.ends_with('\n')
                        && out
                            .trim_end_matches('\n')
                            .lines()
                            .next_back()
                            .is_some_and(|l| l.trim_start().starts_with("///"))
                    {
                        let keep = out.trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
                        out.truncate(keep);
                    }
                    out.push_str(indent);
                    out.push_str(vis);
                    out.push_str(name);
                    out.push_str(" {\n");
                    out.push_str(&child);
                    out.push_str(indent);
                    out.push_str("}\n");
                }
                _ => {
                    out.push_str(indent);
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        out
    }
    let out = expand(files, "mod.rs", "", 0);
    // At the top of an included file, inner attributes and inner docs are not allowed:
    // the root's become comments (its children keep theirs, inside their blocks).
    let mut fixed = String::with_capacity(out.len());
    let mut at_top = true;
    for line in out.lines() {
        if at_top && (line.starts_with("//!") || line.starts_with("#![")) {
            fixed.push_str("// ");
            fixed.push_str(line.trim_start_matches("//!").trim_start_matches("#!"));
            fixed.push('\n');
            continue;
        }
        if line.starts_with("pub mod ") || line.starts_with("mod ") {
            at_top = false;
        }
        fixed.push_str(line);
        fixed.push('\n');
    }
    fixed
}
