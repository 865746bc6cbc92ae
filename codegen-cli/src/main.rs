//! The `kubegen` command: `generate` writes a tree, `verify` checks one is current.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};

/// Generates Rust types, clientsets, listers and informers for Kubernetes custom
/// resources from their CRDs, or clientsets, listers and informers for API types
/// written in Rust (`+genclient` markers, kube-derive's `#[derive(CustomResource)]`).
#[derive(Parser)]
#[command(name = "kubegen", version, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const EXAMPLES: &str = "Examples:
  kubegen generate -f fixtures/crds/samplecontroller.yaml -o target/generated
  kubegen generate -f crds/ -o src/generated --boilerplate hack/boilerplate.txt
  kubegen generate -f crds/ -o src/generated --group-alias gateway.networking.x-k8s.io=gatewayx
  kubegen generate -f crds/ -o src/generated --dry-run
  kubegen generate -f crds/ -o src/generated --layout single-file   # one mod.rs
  kubegen generate -f src/apis -o src/generated --types-path crate::apis   # Rust types
  kubegen verify -f crds/ -o src/generated      # exit 1 and a diff when stale";

#[derive(Subcommand)]
enum Command {
    /// Generate the tree into -o (replaced atomically; kubegen owns the directory).
    #[command(after_help = EXAMPLES)]
    Generate(Common),
    /// Check that -o matches what `generate` would write; print a unified diff if not.
    #[command(after_help = EXAMPLES)]
    Verify(Common),
    /// Write CustomResourceDefinitions for the Rust types in -f (controller-gen's `crd`):
    /// one `<group>_<plural>.yaml` per kind, every version in it.
    #[command(after_help = CRD_EXAMPLES)]
    Crd(CrdArgs),
    /// Write the controller's RBAC role from `+kubebuilder:rbac` markers in -f's Rust
    /// code (controller-gen's `rbac`): `role.yaml`, ClusterRoles (Roles with namespace=).
    #[command(after_help = RBAC_EXAMPLES)]
    Rbac(RbacArgs),
    /// Write webhook configurations from `+kubebuilder:webhook` markers in -f's Rust code
    /// (controller-gen's `webhook`): `manifests.yaml`.
    #[command(after_help = RBAC_EXAMPLES)]
    Webhook(ManifestArgs),
    /// List every marker kubegen reads (where it may stand, its value, what it does),
    /// as `controller-gen crd -www` lists controller-gen's.
    Markers,
}

const RBAC_EXAMPLES: &str = "Examples:
  kubegen rbac -f src -o config/rbac --role-name manager-role
  kubegen webhook -f src -o config/webhook
  kubegen rbac -f src -o config/rbac --verify   # exit 1 and a diff when stale";

#[derive(Args)]
struct ManifestArgs {
    /// Rust files or directories whose comments hold the markers.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    inputs: Vec<PathBuf>,
    /// Directory the manifest is written to; other files in it are left alone.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Check that -o holds exactly this manifest; print a unified diff and exit 1 if not.
    #[arg(long)]
    verify: bool,
}

#[derive(Args)]
struct RbacArgs {
    #[command(flatten)]
    common: ManifestArgs,
    /// The role's name where a marker gives no roleName= (controller-gen's roleName).
    #[arg(long, default_value = "manager-role")]
    role_name: String,
}

const CRD_EXAMPLES: &str = "Examples:
  kubegen crd -f src/apis -o config/crd
  kubegen crd -f src/apis -o config/crd --verify   # exit 1 and a diff when stale
  kubegen markers                                  # every marker kubegen reads";

#[derive(Args)]
struct CrdArgs {
    /// Rust files or directories of API types (`+genclient` / kube-derive kinds).
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    inputs: Vec<PathBuf>,
    /// Directory the CRDs are written to; other files in it are left alone.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Check that -o holds exactly these CRDs; print a unified diff and exit 1 if not.
    #[arg(long)]
    verify: bool,
}

#[derive(Args)]
struct Common {
    /// CRD YAML files, Rust files, or directories (searched recursively for *.yaml,
    /// *.yml, *.rs). A Rust file's module path is its path under the directory given.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    inputs: Vec<PathBuf>,
    /// Rust path of the -f directory's module in the crate that mounts the generated
    /// tree; generated code names the Rust input's types through it.
    #[arg(long = "types-path", default_value = kubegen::DEFAULT_TYPES_PATH)]
    types_path: String,
    /// Output directory; kubegen owns it and refuses to touch files it did not generate.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// File whose text goes after the generated-code header of every file (a license).
    #[arg(long)]
    boilerplate: Option<PathBuf>,
    /// Print the files that would be written instead of writing them.
    #[arg(long)]
    dry_run: bool,
    /// Module name for an API group, as GROUP=MODULE (repeatable).
    #[arg(long = "group-alias", value_name = "GROUP=MODULE")]
    group_alias: Vec<String>,
    /// `tree`: one file per module; `single-file`: every module inline in -o/mod.rs
    /// (for `include!`).
    #[arg(long, value_enum, default_value = "tree")]
    layout: LayoutArg,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LayoutArg {
    Tree,
    SingleFile,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (verify, common) = match cli.command {
        Command::Generate(c) => (false, c),
        Command::Verify(c) => (true, c),
        Command::Rbac(args) => {
            return finish(run_manifest(&args.common, "rbac", |files| {
                kubegen::manifests::rbac(files, &args.role_name)
            }))
        }
        Command::Webhook(args) => {
            return finish(run_manifest(&args, "webhook", |files| {
                kubegen::manifests::webhooks(files)
            }))
        }
        Command::Markers => {
            print!("{}", kubegen_templates::markers::help());
            return ExitCode::SUCCESS;
        }
        Command::Crd(args) => {
            return match run_crd(&args) {
                Ok(code) => code,
                Err(errors) => {
                    for e in errors {
                        eprintln!("error: {e}");
                    }
                    ExitCode::FAILURE
                }
            }
        }
    };
    match run(verify, &common) {
        Ok(code) => code,
        Err(errors) => {
            for e in errors {
                eprintln!("error: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

fn run(verify: bool, common: &Common) -> Result<ExitCode, Vec<kubegen::Error>> {
    let start = Instant::now();
    let mut config = kubegen::Config::new(common.inputs.clone());
    config.types_path = common.types_path.clone();
    if let Some(path) = &common.boilerplate {
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![kubegen::Error {
                file: Some(path.clone()),
                yaml_path: String::new(),
                line_col: None,
                problem: format!("cannot read the boilerplate file: {e}"),
                fix: "pass a readable text file to --boilerplate".to_owned(),
            }]
        })?;
        config.boilerplate = Some(text);
    }
    config.group_aliases = parse_aliases(&common.group_alias)?;
    config.layout = match common.layout {
        LayoutArg::Tree => kubegen::Layout::Tree,
        LayoutArg::SingleFile => kubegen::Layout::SingleFile,
    };
    let generated = kubegen::generate(&config)?;
    for w in &generated.warnings {
        eprintln!("warning: {w}");
    }
    let elapsed = || format!("{:.0?}", start.elapsed());
    if verify {
        return match kubegen::output::verify_tree(&common.output, &generated.files)
            .map_err(|e| vec![e])?
        {
            None => {
                eprintln!(
                    "kubegen: {} is up to date ({} files from {}, {})",
                    common.output.display(),
                    generated.files.len(),
                    sources(&generated),
                    elapsed()
                );
                Ok(ExitCode::SUCCESS)
            }
            Some(diff) => {
                print!("{diff}");
                eprintln!(
                    "kubegen: {} is stale; run `kubegen generate` with the same arguments",
                    common.output.display()
                );
                Ok(ExitCode::FAILURE)
            }
        };
    }
    if common.dry_run {
        for f in &generated.files {
            println!(
                "{} ({} bytes)",
                common.output.join(&f.path).display(),
                f.contents.len()
            );
        }
        eprintln!(
            "kubegen: dry run: would write {} files from {} in {} input files ({})",
            generated.files.len(),
            sources(&generated),
            generated.input_files,
            elapsed()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let summary =
        kubegen::output::write_tree(&common.output, &generated.files).map_err(|e| vec![e])?;
    if summary.recovered {
        eprintln!(
            "kubegen: recovered {} from an interrupted run",
            common.output.display()
        );
    }
    eprintln!(
        "kubegen: wrote {} files ({} stale removed) to {} from {} in {} input files ({})",
        summary.written,
        summary.removed,
        common.output.display(),
        sources(&generated),
        generated.input_files,
        elapsed()
    );
    Ok(ExitCode::SUCCESS)
}

fn run_crd(args: &CrdArgs) -> Result<ExitCode, Vec<kubegen::Error>> {
    let start = Instant::now();
    let crds = kubegen::crds(&args.inputs)?;
    if args.verify {
        return Ok(match kubegen::verify_crds(&args.output, &crds) {
            None => {
                eprintln!(
                    "kubegen: {} CRDs in {} are up to date ({:.0?})",
                    crds.len(),
                    args.output.display(),
                    start.elapsed()
                );
                ExitCode::SUCCESS
            }
            Some(diff) => {
                print!("{diff}");
                eprintln!(
                    "kubegen: CRDs in {} are stale; run `kubegen crd` with the same arguments",
                    args.output.display()
                );
                ExitCode::FAILURE
            }
        });
    }
    let changed = kubegen::write_crds(&args.output, &crds).map_err(|e| vec![e])?;
    eprintln!(
        "kubegen: wrote {} CRDs ({changed} changed) to {} ({:.0?})",
        crds.len(),
        args.output.display(),
        start.elapsed()
    );
    Ok(ExitCode::SUCCESS)
}

fn finish(result: Result<ExitCode, Vec<kubegen::Error>>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(errors) => {
            for e in errors {
                eprintln!("error: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

/// `kubegen rbac` / `kubegen webhook`: build the manifest, then write or verify it.
fn run_manifest(
    args: &ManifestArgs,
    what: &str,
    build: impl FnOnce(
        &[PathBuf],
    ) -> Result<Option<kubegen::manifests::ManifestFile>, Vec<kubegen::Error>>,
) -> Result<ExitCode, Vec<kubegen::Error>> {
    let start = Instant::now();
    let files = kubegen::manifests::rust_files(&args.inputs).map_err(|e| vec![e])?;
    let Some(manifest) = build(&files)? else {
        return Err(vec![kubegen::Error::at(
            "",
            format!(
                "no +kubebuilder:{what} marker in the {} Rust files of -f",
                files.len()
            ),
            format!("write `// +kubebuilder:{what}:...` markers in a comment of your controller's code (`kubegen markers` shows their arguments)"),
        )]);
    };
    let pair = [(manifest.file_name.as_str(), manifest.yaml.as_str())];
    if args.verify {
        return Ok(match kubegen::verify_files(&args.output, pair) {
            None => {
                eprintln!(
                    "kubegen: {} in {} is up to date ({:.0?})",
                    manifest.file_name,
                    args.output.display(),
                    start.elapsed()
                );
                ExitCode::SUCCESS
            }
            Some(diff) => {
                print!("{diff}");
                eprintln!(
                    "kubegen: {} in {} is stale; run `kubegen {what}` with the same arguments",
                    manifest.file_name,
                    args.output.display()
                );
                ExitCode::FAILURE
            }
        });
    }
    let changed = kubegen::write_files(&args.output, pair).map_err(|e| vec![e])?;
    eprintln!(
        "kubegen: wrote {} ({} objects, {}) to {} ({:.0?})",
        manifest.file_name,
        manifest.objects.len(),
        if changed > 0 { "changed" } else { "unchanged" },
        args.output.display(),
        start.elapsed()
    );
    Ok(ExitCode::SUCCESS)
}

/// `3 CRDs`, `4 Rust kinds`, `100 built-in kinds`, or the ones present joined.
fn sources(generated: &kubegen::Generated) -> String {
    let parts: Vec<String> = [
        (generated.crds, "CRDs"),
        (generated.rust_kinds, "Rust kinds"),
        (generated.builtin_kinds, "built-in kinds"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if parts.is_empty() {
        "0 CRDs".to_owned()
    } else {
        parts.join(" and ")
    }
}

fn parse_aliases(values: &[String]) -> Result<BTreeMap<String, String>, Vec<kubegen::Error>> {
    values
        .iter()
        .map(|v| match v.split_once('=') {
            Some((g, m)) if !g.is_empty() && !m.is_empty() => Ok((g.to_owned(), m.to_owned())),
            _ => Err(vec![kubegen::Error::at(
                "",
                format!("--group-alias {v:?} is not GROUP=MODULE"),
                "write e.g. --group-alias gateway.networking.x-k8s.io=gatewayx",
            )]),
        })
        .collect()
}
