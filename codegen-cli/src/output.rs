//! The output directory: kubegen owns it, replaces it atomically, and can diff it.
//!
//! Contract of [`write_tree`]:
//!
//! - Ownership: every file already under the output directory must start with
//!   [`HEADER`]; otherwise nothing is written and the error names the file (kubegen never
//!   overwrites or deletes a file it did not generate).
//! - Atomic replacement: the new tree is written aside into `.<dir>.kubegen-new` next to
//!   the output directory, the old tree is renamed to `.<dir>.kubegen-old`, the new one
//!   renamed into place, and the old one removed. Stale generated files disappear with
//!   the old tree. Readers see the old tree or the new one, never a mix.
//! - Recovery: a run interrupted between the renames leaves `.<dir>.kubegen-old` (and no
//!   output directory): the next run first puts it back; leftover `-new`/`-old`
//!   directories are removed.
//!
//! - Only regular files: a symbolic link (or any other non-file) inside the output
//!   directory is an error naming it; replacing the tree would delete it silently.
//!
//! [`verify_tree`] compares without writing and returns a unified diff of what differs,
//! headed by one line per file kubegen would not keep, saying why.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use kubegen_templates::emit::{GeneratedFile, HEADER};

use crate::error::Error;

fn io_error(path: &Path, action: &str, e: std::io::Error) -> Error {
    Error {
        file: Some(path.to_owned()),
        yaml_path: String::new(),
        line_col: None,
        problem: format!("cannot {action}: {e}"),
        fix: "check the path and its permissions".to_owned(),
    }
}

fn sibling(out: &Path, suffix: &str) -> Result<PathBuf, Error> {
    let name = out.file_name().ok_or_else(|| Error {
        file: Some(out.to_owned()),
        yaml_path: String::new(),
        line_col: None,
        problem: "the output path has no directory name".to_owned(),
        fix: "pass a directory such as `-o src/generated`".to_owned(),
    })?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok(parent.join(format!(".{}.kubegen-{suffix}", name.to_string_lossy())))
}

/// Reads every file under `dir` (relative `/` paths -> text). A missing `dir` is empty.
///
/// The tree may hold only directories and regular files: kubegen writes nothing else,
/// and replacing the tree would delete anything else silently, so a symbolic link (or
/// a socket, a FIFO, ...) is an error that names it.
pub fn read_tree(dir: &Path) -> Result<BTreeMap<String, String>, Error> {
    let mut files = BTreeMap::new();
    if !dir.exists() {
        return Ok(files);
    }
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| io_error(dir, "read the output directory", e.into()))?;
        let kind = entry.file_type();
        if entry.depth() == 0 || kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            return Err(not_a_file(entry.path(), kind.is_symlink()));
        }
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        let rel = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let bytes = fs::read(entry.path()).map_err(|e| io_error(entry.path(), "read", e))?;
        files.insert(rel, String::from_utf8_lossy(&bytes).into_owned());
    }
    Ok(files)
}

fn not_a_file(path: &Path, symlink: bool) -> Error {
    let what = if symlink {
        match fs::read_link(path) {
            Ok(target) => format!("a symbolic link (to {})", target.display()),
            Err(_) => "a symbolic link".to_owned(),
        }
    } else {
        "neither a file nor a directory".to_owned()
    };
    Error {
        file: Some(path.to_owned()),
        yaml_path: String::new(),
        line_col: None,
        problem: format!(
            "this is {what} inside the output directory; kubegen replaces the whole directory and would delete it"
        ),
        fix: "move it out of the output directory, or choose another -o (kubegen writes only regular files there)".to_owned(),
    }
}

/// What [`write_tree`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriteSummary {
    /// Files written.
    pub written: usize,
    /// Files in the old tree that were not regenerated (removed).
    pub removed: usize,
    /// Whether an interrupted earlier run was recovered first.
    pub recovered: bool,
}

/// Replaces the tree at `out` with `files` (see the module docs for the guarantees).
pub fn write_tree(out: &Path, files: &[GeneratedFile]) -> Result<WriteSummary, Error> {
    let new_dir = sibling(out, "new")?;
    let old_dir = sibling(out, "old")?;
    let mut summary = WriteSummary::default();
    if old_dir.exists() {
        if out.exists() {
            fs::remove_dir_all(&old_dir).map_err(|e| io_error(&old_dir, "remove", e))?;
        } else {
            fs::rename(&old_dir, out).map_err(|e| io_error(&old_dir, "restore", e))?;
            summary.recovered = true;
        }
    }
    if new_dir.exists() {
        fs::remove_dir_all(&new_dir).map_err(|e| io_error(&new_dir, "remove", e))?;
    }
    if out.exists() && !out.is_dir() {
        return Err(Error {
            file: Some(out.to_owned()),
            yaml_path: String::new(),
            line_col: None,
            problem: "the output path is a file, not a directory".to_owned(),
            fix: "pass a directory kubegen owns".to_owned(),
        });
    }
    let existing = read_tree(out)?;
    for (path, text) in &existing {
        if !text.starts_with(HEADER) {
            return Err(Error {
                file: Some(out.join(path)),
                yaml_path: String::new(),
        line_col: None,
                problem: format!("this file was not generated by kubegen (it does not start with `{HEADER}`); kubegen replaces the whole output directory"),
                fix: "move the file out of the output directory, or choose another -o".to_owned(),
            });
        }
    }
    let result = (|| {
        for file in files {
            let path = new_dir.join(&file.path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| io_error(parent, "create", e))?;
            }
            fs::write(&path, &file.contents).map_err(|e| io_error(&path, "write", e))?;
        }
        fs::create_dir_all(&new_dir).map_err(|e| io_error(&new_dir, "create", e))?;
        if out.exists() {
            fs::rename(out, &old_dir).map_err(|e| io_error(out, "move aside", e))?;
        }
        fs::rename(&new_dir, out).map_err(|e| io_error(out, "move into place", e))?;
        if old_dir.exists() {
            fs::remove_dir_all(&old_dir).map_err(|e| io_error(&old_dir, "remove", e))?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_dir_all(&new_dir);
        return Err(e);
    }
    summary.written = files.len();
    let generated: std::collections::BTreeSet<&str> =
        files.iter().map(|f| f.path.as_str()).collect();
    summary.removed = existing
        .keys()
        .filter(|p| !generated.contains(p.as_str()))
        .count();
    Ok(summary)
}

/// A unified diff of `out` against `files`; `None` when they are identical.
///
/// Before the diff, one line per file under `out` that is not in `files` says why it
/// differs: a file kubegen did not generate (no [`HEADER`]) is not kubegen's, and
/// `generate` refuses to run until it is moved; a generated file the inputs no longer
/// produce would be removed by `generate`.
pub fn verify_tree(out: &Path, files: &[GeneratedFile]) -> Result<Option<String>, Error> {
    let existing = read_tree(out)?;
    let mut notes = String::new();
    let mut diff = String::new();
    let wanted: BTreeMap<&str, &str> = files
        .iter()
        .map(|f| (f.path.as_str(), f.contents.as_str()))
        .collect();
    for (path, text) in &existing {
        if !text.starts_with(HEADER) {
            notes.push_str(&format!(
                "{}: not generated by kubegen (it does not start with `{HEADER}`): it is not kubegen's, and `kubegen generate` refuses to run until it is moved out of the output directory\n",
                out.join(path).display()
            ));
        } else if !wanted.contains_key(path.as_str()) {
            notes.push_str(&format!(
                "{}: generated by kubegen, but these inputs no longer produce it: `kubegen generate` would remove it\n",
                out.join(path).display()
            ));
        }
    }
    let mut paths: Vec<&str> = wanted.keys().copied().collect();
    paths.extend(
        existing
            .keys()
            .map(String::as_str)
            .filter(|p| !wanted.contains_key(p)),
    );
    paths.sort_unstable();
    for path in paths {
        let old = existing.get(path).map(String::as_str);
        let new = wanted.get(path).copied();
        if old == new {
            continue;
        }
        let text = similar::TextDiff::from_lines(old.unwrap_or(""), new.unwrap_or(""));
        let a = if old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_owned()
        };
        let b = if new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".to_owned()
        };
        diff.push_str(
            &text
                .unified_diff()
                .context_radius(3)
                .header(&a, &b)
                .to_string(),
        );
    }
    Ok((!diff.is_empty()).then(|| notes + &diff))
}
