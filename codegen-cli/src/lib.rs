//! kubegen: generates Rust types, typed clientsets (and fake clientsets), listers and
//! shared informer factories from CustomResourceDefinitions, the way Kubernetes'
//! code-generator does for Go; or, from API types written in Rust (`+genclient` markers,
//! kube-derive's `#[derive(CustomResource)]`), everything but the types
//! ([`input::rust`]).
//!
//! The pipeline is one-way: [`input`] reads CRD YAML and Rust source into the model
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
pub mod crdgen;
pub mod error;
pub mod input;
pub mod manifests;
pub mod output;
pub mod roundtrip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use builder::Builder;
pub use error::Error;
pub use kubegen_templates::emit::{GeneratedFile, HEADER};

/// What to generate from.
#[derive(Debug, Clone)]
pub struct Config {
    /// CRD files and Rust files, or directories searched recursively for `*.yaml`,
    /// `*.yml` and `*.rs`. A Rust file's module path is its path under the directory
    /// given (see [`input::rust`]).
    pub inputs: Vec<PathBuf>,
    /// The Rust path of the inputs' root module in the crate that mounts the generated
    /// tree (`crate::apis`, the default): generated code names user-written types by it.
    pub types_path: String,
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
    /// Every module inline in one `mod.rs`
    /// ([`generate_single_file`](kubegen_templates::emit::generate_single_file)), for
    /// `include!` (what [`Builder`] writes).
    SingleFile,
}

/// The default [`Config::types_path`].
pub const DEFAULT_TYPES_PATH: &str = "crate::apis";

impl Default for Config {
    fn default() -> Self {
        Config {
            inputs: Vec::new(),
            types_path: DEFAULT_TYPES_PATH.to_owned(),
            boilerplate: None,
            group_aliases: BTreeMap::new(),
            layout: Layout::default(),
        }
    }
}

impl Config {
    /// A configuration reading `inputs`, with no boilerplate and no aliases, naming
    /// Rust input under [`DEFAULT_TYPES_PATH`].
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
    /// Kinds read from Rust files.
    pub rust_kinds: usize,
    /// Kinds read from built-in API descriptions.
    pub builtin_kinds: usize,
    /// What the inputs lack that the output works without (a Rust kind with no schema).
    pub warnings: Vec<Error>,
}

/// `kubegen crd`: the CRDs of the Rust types among `inputs` (files or directories), one
/// per group and kind (see [`crdgen`]).
pub fn crds(inputs: &[PathBuf]) -> Result<Vec<crdgen::CrdFile>, Vec<Error>> {
    let files: Vec<_> = discover(inputs)
        .map_err(|e| vec![e])?
        .into_iter()
        .filter(|f| is_rust(&f.path))
        .collect();
    if files.is_empty() {
        return Err(vec![Error::at(
            "",
            "no Rust files among the inputs",
            "pass the directory of your API types (e.g. -f src/apis)",
        )]);
    }
    crdgen::generate(&files)
}

/// Writes `crds` into `dir` (created if missing), each file replaced atomically; other
/// files in `dir` are left alone. Returns how many files changed.
pub fn write_crds(dir: &Path, crds: &[crdgen::CrdFile]) -> Result<usize, Error> {
    write_files(
        dir,
        crds.iter().map(|c| (c.file_name.as_str(), c.yaml.as_str())),
    )
}

/// Writes each `(name, text)` into `dir` (created if missing), replacing a file
/// atomically only when its text changed; other files in `dir` are left alone. Returns
/// how many files changed.
pub fn write_files<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<usize, Error> {
    let io = |path: &Path, e: std::io::Error| Error {
        file: Some(path.to_path_buf()),
        yaml_path: String::new(),
        line_col: None,
        problem: format!("cannot write: {e}"),
        fix: "check the output directory's permissions".to_owned(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut changed = 0;
    for (name, text) in files {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text) {
            continue;
        }
        let tmp = dir.join(format!(".{name}.kubegen-tmp"));
        std::fs::write(&tmp, text).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
        changed += 1;
    }
    Ok(changed)
}

/// Compares each `(name, text)` with the file of that name in `dir`: `None` when every
/// file is current, else a unified diff of each stale or missing one.
pub fn verify_files<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<String> {
    let mut out = String::new();
    for (name, text) in files {
        let path = dir.join(name);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != text {
            let shown = path.display().to_string();
            out.push_str(
                &similar::TextDiff::from_lines(current.as_str(), text)
                    .unified_diff()
                    .context_radius(3)
                    .header(&format!("a/{shown}"), &format!("b/{shown}"))
                    .to_string(),
            );
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Compares `crds` with the files in `dir`: `None` when every file is current, else a
/// unified diff of each stale or missing one.
pub fn verify_crds(dir: &Path, crds: &[crdgen::CrdFile]) -> Option<String> {
    verify_files(
        dir,
        crds.iter().map(|c| (c.file_name.as_str(), c.yaml.as_str())),
    )
}

/// Expands directories into their YAML and Rust files (sorted), keeping files as given.
pub fn input_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    Ok(discover(inputs)?.into_iter().map(|f| f.path).collect())
}

fn is_rust(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some("rs")
}

/// Every input file with the root its module path is relative to (the directory given,
/// or the file's own directory).
fn discover(inputs: &[PathBuf]) -> Result<Vec<input::rust::SourceFile>, Error> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut found: Vec<PathBuf> = walkdir::WalkDir::new(input)
                .sort_by_file_name()
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_file())
                .map(|e| e.into_path())
                .filter(|p| {
                    matches!(
                        p.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml" | "rs")
                    )
                })
                .collect();
            found.sort();
            files.extend(found.into_iter().map(|path| input::rust::SourceFile {
                path,
                root: input.clone(),
            }));
        } else if input.is_file() {
            files.push(input::rust::SourceFile {
                path: input.clone(),
                root: input.parent().map(Path::to_path_buf).unwrap_or_default(),
            });
        } else {
            return Err(Error {
                file: Some(input.clone()),
                yaml_path: String::new(),
                line_col: None,
                problem: "no such file or directory".to_owned(),
                fix: "pass CRD files, Rust files, or directories of them with -f".to_owned(),
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
        line_col: None,
        problem: format!("cannot read: {e}"),
        fix: "check the path and that the file is UTF-8 YAML".to_owned(),
    })?;
    input::crd::parse_file(file, &text)
}

/// Reads the inputs into the model: CRD files, assembled with the group aliases, then
/// checked by the model's own validation (no emitter runs on a model that fails it).
/// An input set that defines no kind is an error: an empty tree helps nobody.
pub fn build_model(config: &Config) -> Result<(kubegen_templates::model::Api, Inputs), Vec<Error>> {
    let found = discover(&config.inputs).map_err(|e| vec![e])?;
    if found.is_empty() {
        return Err(vec![Error::at(
            "",
            "no CRD or Rust files found in the inputs",
            "pass *.yaml CRD files, *.rs API types, or directories holding them with -f",
        )]);
    }
    let (rust_files, yaml_files): (Vec<_>, Vec<_>) =
        found.iter().cloned().partition(|f| is_rust(&f.path));
    let (builtin, crd_files): (Vec<PathBuf>, Vec<PathBuf>) = yaml_files
        .into_iter()
        .map(|f| f.path)
        .partition(|f| is_builtin_description(f));
    let crds = load_crds(&crd_files)?;
    let mut parts = input::crd::build_versions(&crds).map_err(|e| vec![e])?;
    let mut builtin_kinds = 0;
    for file in &builtin {
        let text = std::fs::read_to_string(file).map_err(|e| {
            vec![Error::at("", format!("cannot read: {e}"), "check the path").in_file(file)]
        })?;
        let builtin_parts = input::builtin::read(file, &text).map_err(|e| vec![e])?;
        builtin_kinds += builtin_parts
            .iter()
            .map(|p| p.version.kinds.len())
            .sum::<usize>();
        parts.extend(builtin_parts);
    }
    let mut rust_kinds = 0;
    let mut warnings = Vec::new();
    if !rust_files.is_empty() {
        if !kubegen_templates::validate::is_type_path(&config.types_path) {
            return Err(vec![Error::at(
                "",
                format!("--types-path {:?} is not a Rust path", config.types_path),
                "pass the path of the inputs' root module, such as --types-path crate::apis",
            )]);
        }
        let model = input::rust::read_model(&rust_files, &config.types_path, false)?;
        rust_kinds = model.parts.iter().map(|p| p.version.kinds.len()).sum();
        warnings = model.warnings;
        parts.extend(model.parts);
    }
    let api = input::assemble(parts, &config.group_aliases).map_err(|e| vec![e])?;
    let kinds: usize = api
        .groups
        .iter()
        .flat_map(|g| &g.versions)
        .map(|v| v.kinds.len())
        .sum();
    if kinds == 0 {
        return Err(vec![Error::at(
            "",
            format!(
                "the inputs define no kind ({} files, {} CRDs with no version, no Rust type with +genclient or #[derive(CustomResource)])",
                found.len(),
                crds.len()
            ),
            "pass CustomResourceDefinitions with at least one version, or Rust types marked as kinds",
        )]);
    }
    let problems = kubegen_templates::validate::validate(&api);
    if !problems.is_empty() {
        return Err(problems
            .into_iter()
            .map(|p| Error::at("", format!("{}: {}", p.place, p.problem), p.fix))
            .collect());
    }
    Ok((
        api,
        Inputs {
            files: found.len(),
            crds: crds.len(),
            rust_kinds,
            builtin_kinds,
            warnings,
        },
    ))
}

/// Whether a YAML file is a built-in API description (`kind: BuiltinAPI` at the top
/// level) rather than CRDs.
fn is_builtin_description(file: &Path) -> bool {
    std::fs::read_to_string(file).is_ok_and(|text| {
        text.lines()
            .any(|l| l.trim_end() == format!("kind: {}", input::builtin::DESCRIPTION_KIND))
    })
}

/// What [`build_model`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    /// Input files read.
    pub files: usize,
    /// CRDs read.
    pub crds: usize,
    /// Kinds read from Rust files.
    pub rust_kinds: usize,
    /// Kinds read from built-in API descriptions.
    pub builtin_kinds: usize,
    /// What the inputs lack that the output works without (a Rust kind with no schema).
    pub warnings: Vec<Error>,
}

/// Reads the inputs and emits the tree in memory.
pub fn generate(config: &Config) -> Result<Generated, Vec<Error>> {
    let (api, inputs) = build_model(config)?;
    let options = kubegen_templates::emit::Options {
        boilerplate: config.boilerplate.clone(),
    };
    let internal = |e: kubegen_templates::emit::EmitError| {
        vec![Error::at(
            "",
            format!("internal error: {e}"),
            "this is a kubegen bug (the model passed validation): please report it with the input",
        )]
    };
    let files = match config.layout {
        Layout::Tree => kubegen_templates::emit::generate(&api, &options).map_err(internal)?,
        Layout::SingleFile => {
            vec![
                kubegen_templates::emit::generate_single_file(&api, &options, "mod.rs")
                    .map_err(internal)?,
            ]
        }
    };
    Ok(Generated {
        files,
        input_files: inputs.files,
        crds: inputs.crds,
        rust_kinds: inputs.rust_kinds,
        builtin_kinds: inputs.builtin_kinds,
        warnings: inputs.warnings,
    })
}
