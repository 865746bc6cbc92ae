//! kubegen: generates Rust types, typed clientsets (and fake clientsets), listers and
//! shared informer factories from CustomResourceDefinitions, the way Kubernetes'
//! code-generator does for Go.
//!
//! The pipeline is one-way: [`input`] reads CRD YAML into the model
//! (`kubegen_templates::model`), the emitters turn the model into files, and [`output`]
//! owns the output directory (atomic replacement, ownership checks, `verify` diffs).
//! [`generate`] runs input and emitters; it does no output IO. [`Builder`] does the same
//! from a `build.rs`, writing one `include!`-able file into `OUT_DIR`.
//!
//! What each schema construct becomes is tabled in [`input::crd::convert`]; why the CRD
//! reader walks YAML itself instead of using `openapiv3` is in [`input::crd::schema`].
//! Errors name the file, the YAML path and the fix ([`Error`]).
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let crd = dir.path().join("foo.yaml");
//! std::fs::write(&crd, r#"
//! apiVersion: apiextensions.k8s.io/v1
//! kind: CustomResourceDefinition
//! metadata: {name: foos.example.com}
//! spec:
//!   group: example.com
//!   scope: Namespaced
//!   names: {kind: Foo, plural: foos}
//!   versions:
//!   - name: v1
//!     served: true
//!     storage: true
//!     schema:
//!       openAPIV3Schema:
//!         type: object
//!         properties:
//!           spec: {type: object, properties: {replicas: {type: integer, format: int32}}}
//! "#).unwrap();
//! let generated = kubegen::generate(&kubegen::Config::new(vec![crd])).unwrap();
//! let types = generated.files.iter().find(|f| f.path == "apis/example/v1/types.rs").unwrap();
//! assert!(types.contents.contains("pub struct FooSpec"));
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod builder;
pub mod error;
pub mod input;
pub mod output;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use builder::Builder;
pub use error::Error;
pub use kubegen_templates::emit::{GeneratedFile, HEADER};

/// What to generate from.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// CRD files, or directories searched recursively for `*.yaml` / `*.yml`.
    pub inputs: Vec<PathBuf>,
    /// Text placed after the header of every file (a license comment).
    pub boilerplate: Option<String>,
    /// Group name -> module name overrides.
    pub group_aliases: BTreeMap<String, String>,
    /// One file per module, or the whole tree in one `mod.rs`.
    pub layout: Layout,
}

/// How the generated tree is laid out in files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// One file per module (`apis/<group>/<version>/types.rs`, ...), as checked in.
    #[default]
    Tree,
    /// Every module inline in one `mod.rs` ([`builder::single_file`]), for `include!`
    /// (what [`Builder`] writes).
    SingleFile,
}

impl Config {
    /// A configuration reading `inputs`, with no boilerplate and no aliases.
    pub fn new(inputs: Vec<PathBuf>) -> Self {
        Config {
            inputs,
            ..Config::default()
        }
    }
}

/// The result of [`generate`].
#[derive(Debug, Clone)]
pub struct Generated {
    /// The files of the tree, sorted by path.
    pub files: Vec<GeneratedFile>,
    /// Input files read.
    pub input_files: usize,
    /// CRDs read.
    pub crds: usize,
}

/// Expands directories into their YAML files (sorted), keeping files as given.
pub fn input_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut found: Vec<PathBuf> = walkdir::WalkDir::new(input)
                .sort_by_file_name()
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_file())
                .map(|e| e.into_path())
                .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
                .collect();
            found.sort();
            files.extend(found);
        } else if input.is_file() {
            files.push(input.clone());
        } else {
            return Err(Error {
                file: Some(input.clone()),
                yaml_path: String::new(),
                problem: "no such file or directory".to_owned(),
                fix: "pass CRD files or directories with -f".to_owned(),
            });
        }
    }
    Ok(files)
}

/// Reads and parses CRD files in parallel; returns every file's first error on failure.
pub fn load_crds(files: &[PathBuf]) -> Result<Vec<input::crd::Crd>, Vec<Error>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(files.len().max(1));
    let chunk = files.len().div_ceil(threads).max(1);
    let results: Vec<Result<Vec<input::crd::Crd>, Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(|f| load_file(f)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![Err(Error::at(
                        "",
                        "internal error: a parser thread panicked",
                        "please report this as a kubegen bug",
                    ))]
                })
            })
            .collect()
    });
    let mut crds = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(c) => crds.extend(c),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(crds)
    } else {
        Err(errors)
    }
}

fn load_file(file: &Path) -> Result<Vec<input::crd::Crd>, Error> {
    let text = std::fs::read_to_string(file).map_err(|e| Error {
        file: Some(file.to_owned()),
        yaml_path: String::new(),
        problem: format!("cannot read: {e}"),
        fix: "check the path and that the file is UTF-8 YAML".to_owned(),
    })?;
    input::crd::parse_file(file, &text)
}

/// Reads the inputs and emits the tree in memory.
pub fn generate(config: &Config) -> Result<Generated, Vec<Error>> {
    let files = input_files(&config.inputs).map_err(|e| vec![e])?;
    if files.is_empty() {
        return Err(vec![Error::at(
            "",
            "no CRD files found in the inputs",
            "pass *.yaml CRD files or directories holding them with -f",
        )]);
    }
    let crds = load_crds(&files)?;
    let api = input::crd::build_api(&crds, &config.group_aliases).map_err(|e| vec![e])?;
    let options = kubegen_templates::emit::Options {
        boilerplate: config.boilerplate.clone(),
    };
    let mut out = kubegen_templates::emit::generate(&api, &options)
        .map_err(|e| vec![Error::at("", e.to_string(), "")])?;
    if config.layout == Layout::SingleFile {
        out = vec![GeneratedFile {
            path: "mod.rs".to_owned(),
            contents: builder::single_file(&out),
        }];
    }
    Ok(Generated {
        files: out,
        input_files: files.len(),
        crds: crds.len(),
    })
}
