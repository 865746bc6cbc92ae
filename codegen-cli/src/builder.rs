//! [`Builder`]: kubegen from a `build.rs`, writing one file into `OUT_DIR`.
//!
//! A build script cannot add modules to the crate's source tree, so the builder writes the
//! whole tree as a single file of nested inline modules
//! ([`generate_single_file`](kubegen_templates::emit::generate_single_file)), which the
//! crate mounts with `include!`. It prints `cargo:rerun-if-changed` for every file it
//! reads, so cargo regenerates only when an input changes (except files inside the
//! build script's own `OUT_DIR`, which the script wrote during the run: watching them
//! would rerun the script on every build).
//!
//! In `build.rs`: `kubegen::Builder::new().crd("crds/foo.yaml").run()` (CRDs), or
//! `kubegen::Builder::rust("src/apis").run()` (API types written in Rust, named from the
//! generated code as `crate::apis::...`; [`Builder::types_path`] changes that), then in
//! the crate: `include!(concat!(env!("OUT_DIR"), "/kubegen.rs"));`. [`Builder::run`]
//! reports problems the way cargo shows build-script errors (`cargo::error=` lines that
//! name the `Builder` call to change, not the CLI's flags) and exits 1;
//! [`Builder::generate`] returns them instead. Build scripts depend on kubegen without
//! its command line: `kubegen = { version = "...", default-features = false }`.
//!
//! Outside a build script, give it a directory:
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
    crd_dir: Option<PathBuf>,
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

    /// A builder reading the Rust API types under `dir` (see [`crate::input::rust`]):
    /// `Builder::rust("src/apis")` for a crate whose `src/lib.rs` has `pub mod apis;`.
    pub fn rust(dir: impl Into<PathBuf>) -> Self {
        Builder::new().rust_input(dir)
    }

    /// Adds a directory (or file) of Rust API types to read.
    pub fn rust_input(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.inputs.push(path.into());
        self
    }

    /// The Rust path of the Rust input's root module in this crate (default
    /// `crate::apis`); generated code names the user's types through it.
    pub fn types_path(mut self, path: impl Into<String>) -> Self {
        self.config.types_path = path.into();
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

    /// Also writes the CRDs of the Rust input's kinds (`kubegen crd`) into `dir`
    /// (relative paths are under the output directory): one `<group>_<plural>.yaml`
    /// per kind, for tests that load the CRD at build time, e.g.
    /// `include_str!(concat!(env!("OUT_DIR"), "/crds/samplecontroller.k8s.io_foos.yaml"))`.
    pub fn crds(mut self, dir: impl Into<PathBuf>) -> Self {
        self.crd_dir = Some(dir.into());
        self
    }

    /// Generates and writes the single file, or, from a build script, prints every
    /// problem as a `cargo::error=` line in build-script words (which `Builder` call to
    /// change) and exits with status 1.
    pub fn run(self) -> PathBuf {
        match self.generate_all() {
            Ok(path) => path,
            Err(errors) => {
                // One line per problem: cargo shows each `cargo::error=` as one error.
                for e in errors {
                    let text = build_script_message(&e);
                    let line: Vec<&str> = text.lines().map(str::trim).collect();
                    println!("cargo::error={}", line.join(" "));
                }
                std::process::exit(1);
            }
        }
    }

    /// Generates, writes the single file and returns its path; on failure the first
    /// problem (see [`Builder::generate_all`] for all of them).
    pub fn generate(self) -> Result<PathBuf, Error> {
        self.generate_all().map_err(|errors| {
            errors
                .into_iter()
                .next()
                .unwrap_or_else(|| Error::at("", "generation failed", ""))
        })
    }

    /// Generates, writes the single file and returns its path, or every problem found.
    pub fn generate_all(self) -> Result<PathBuf, Vec<Error>> {
        let dir = match self.out_dir {
            Some(dir) => dir,
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or_else(|| {
                    vec![Error::at(
                        "",
                        "OUT_DIR is not set",
                        "call Builder::run from a build script, or set Builder::out_dir",
                    )]
                })?,
        };
        let build_out = std::env::var_os("OUT_DIR").map(PathBuf::from);
        let inputs = crate::input_files(&self.config.inputs).map_err(|e| vec![e])?;
        for input in inputs.iter().chain(&self.config.inputs) {
            if watched(input, build_out.as_deref()) {
                println!("cargo:rerun-if-changed={}", input.display());
            }
        }
        let mut config = self.config;
        // A build script always gets one file.
        config.layout = crate::Layout::SingleFile;
        let generated = crate::generate(&config)?;
        for w in &generated.warnings {
            // Cargo shows these lines of a build script as warnings.
            println!(
                "cargo:warning={}",
                build_script_message(w).replace('\n', " ")
            );
        }
        let path = dir.join(self.file_name.as_deref().unwrap_or("kubegen.rs"));
        let text = generated
            .files
            .first()
            .map(|f| f.contents.as_str())
            .unwrap_or_default();
        write_if_changed(&path, text).map_err(|e| vec![e])?;
        if let Some(crd_dir) = &self.crd_dir {
            let crds = crate::crds(&config.inputs)?;
            crate::write_crds(&dir.join(crd_dir), &crds).map_err(|e| vec![e])?;
        }
        Ok(path)
    }
}

/// Whether cargo should rerun the build script when `input` changes: not for an input
/// inside the build script's own `OUT_DIR`. The script wrote it during the run, so it
/// is always newer than the run's start, and cargo would run the script again (and
/// rebuild the crate) on every build; the script's other inputs already say when.
fn watched(input: &Path, out_dir: Option<&Path>) -> bool {
    let Some(out_dir) = out_dir else {
        return true;
    };
    match (input.canonicalize(), out_dir.canonicalize()) {
        (Ok(input), Ok(out_dir)) => !input.starts_with(out_dir),
        _ => !input.starts_with(out_dir),
    }
}

/// An error's text with the CLI's flags said as the `Builder` calls that set the same
/// thing (`-f` -> `Builder::crd`/`Builder::rust`, `--types-path x` ->
/// `Builder::types_path("x")`, `--group-alias g=m` -> `Builder::group_alias("g", "m")`).
pub fn build_script_message(error: &Error) -> String {
    let mut words: Vec<String> = Vec::new();
    let text = error.to_string();
    let mut tokens = text.split(' ').peekable();
    while let Some(token) = tokens.next() {
        match token {
            "-f" => words.push("Builder::crd(..) or Builder::rust(..)".to_owned()),
            "--types-path" | "--group-alias" => {
                let arg =
                    tokens.next_if(|t| t.contains("::") || t.contains('=') || t.starts_with('"'));
                let Some(arg) = arg else {
                    let call = if token == "--types-path" {
                        "Builder::types_path(..)"
                    } else {
                        "Builder::group_alias(..)"
                    };
                    words.push(call.to_owned());
                    continue;
                };
                let end = arg.trim_end_matches([',', '.', ';', ')']);
                let rest = &arg[end.len()..];
                let quoted = |v: &str| format!("{:?}", v.trim_matches('"'));
                let call = if token == "--types-path" {
                    format!("Builder::types_path({})", quoted(end))
                } else {
                    let (g, m) = end.split_once('=').unwrap_or((end, "<module>"));
                    format!("Builder::group_alias({}, {})", quoted(g), quoted(m))
                };
                words.push(format!("{call}{rest}"));
            }
            _ => words.push(token.to_owned()),
        }
    }
    words.join(" ")
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

#[cfg(test)]
mod tests {
    use super::watched;
    use std::path::Path;

    #[test]
    fn inputs_the_build_script_wrote_into_out_dir_are_not_watched() {
        let out = tempfile::tempdir().expect("a temporary directory");
        let copy = out.path().join("copy.yaml");
        std::fs::write(&copy, "kind: CustomResourceDefinition\n").expect("writable");
        assert!(!watched(&copy, Some(out.path())));
        // Named through `..`, as a build script may: the same file.
        let roundabout = out.path().join("sub/../copy.yaml");
        std::fs::create_dir_all(out.path().join("sub")).expect("writable");
        assert!(!watched(&roundabout, Some(out.path())));
        // Everything else is watched, and everything is outside a build script.
        assert!(watched(Path::new("Cargo.toml"), Some(out.path())));
        assert!(watched(&copy, None));
    }
}
