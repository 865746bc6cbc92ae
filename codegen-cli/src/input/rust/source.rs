//! Rust files -> the items the reader needs, each with its file and module path.
//!
//! A file's module path comes from its path under the `-f` root, as rustc's module
//! tree lays files out: `samplecontroller/v1alpha1/types.rs` is
//! `samplecontroller::v1alpha1::types`, and a `mod.rs` (or `lib.rs`, `main.rs`) is its
//! directory's module. Inline `mod x { ... }` blocks extend the path; `mod x;`
//! declarations are not followed (every file under the root is read anyway).
//!
//! Files kubegen generated (they start with its header) are skipped. What is kept:
//! structs and enums (with their markers and docs), the inner (`//!`)
//! markers of every module, and which traits (`Clone`, `Resource`) and inherent `new`
//! functions are implemented for which type names, wherever in the files they are.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::Span;

use super::markers::{self, Marker};
use crate::error::Error;

/// A `.rs` input file and the `-f` root its module path is taken from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The file.
    pub path: PathBuf,
    /// The directory its module path is relative to (the `-f` directory, or the file's
    /// own directory when the file was given alone).
    pub root: PathBuf,
}

/// A struct or enum of the input.
#[derive(Debug, Clone)]
pub struct Item {
    /// The file it is in.
    pub file: PathBuf,
    /// Its module path under the root (`["samplecontroller", "v1alpha1", "types"]`).
    pub module: Vec<String>,
    /// The module path of the package it belongs to (see [`package_of`]).
    pub package: Vec<String>,
    /// Its markers.
    pub markers: Vec<Marker>,
    /// Its docs without markers.
    pub doc: Option<String>,
    /// The item.
    pub kind: ItemKind,
}

/// A struct or an enum.
#[derive(Debug, Clone)]
pub enum ItemKind {
    /// A struct.
    Struct(syn::ItemStruct),
    /// An enum.
    Enum(syn::ItemEnum),
}

impl Item {
    /// The type's name.
    pub fn name(&self) -> String {
        self.ident().to_string()
    }

    /// The type's identifier.
    pub fn ident(&self) -> &syn::Ident {
        match &self.kind {
            ItemKind::Struct(s) => &s.ident,
            ItemKind::Enum(e) => &e.ident,
        }
    }

    /// The attributes.
    pub fn attrs(&self) -> &[syn::Attribute] {
        match &self.kind {
            ItemKind::Struct(s) => &s.attrs,
            ItemKind::Enum(e) => &e.attrs,
        }
    }

    /// An error at `span` in this item's file.
    pub fn error_at(
        &self,
        span: Span,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Error {
        error_at(&self.file, span, problem, fix)
    }

    /// Whether `#[derive(...)]` lists a trait whose last path segment is `name`.
    pub fn derives(&self, name: &str) -> bool {
        derives(self.attrs(), name)
    }
}

/// Whether `#[derive(...)]` in `attrs` lists a trait whose last path segment is `name`.
pub fn derives(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            let mut found = false;
            let _ = a.parse_nested_meta(|m| {
                if m.path.segments.last().is_some_and(|s| s.ident == name) {
                    found = true;
                }
                Ok(())
            });
            found
        })
}

/// An error at `span` in `file`.
pub fn error_at(
    file: &Path,
    span: Span,
    problem: impl Into<String>,
    fix: impl Into<String>,
) -> Error {
    let start = span.start();
    Error::in_source(file, start.line, start.column + 1, problem, fix)
}

/// A module's inner (`//!`) markers.
#[derive(Debug, Clone)]
pub struct ModuleMarkers {
    /// The file they are in.
    pub file: PathBuf,
    /// The package the module belongs to.
    pub package: Vec<String>,
    /// The markers.
    pub markers: Vec<Marker>,
}

/// An `impl Trait for Type` seen in the input, by names only.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TraitImpl {
    /// The trait path as written (`k8s_openapi::Resource`), or as imported when written
    /// bare (`Resource` with `use k8s_openapi::Resource;` gives `k8s_openapi::Resource`).
    pub trait_path: String,
    /// The last segment of the type's path (`Foo`).
    pub type_name: String,
}

/// Everything read from the input files.
#[derive(Debug, Default)]
pub struct Source {
    /// Structs and enums, in file order.
    pub items: Vec<Item>,
    /// Inner markers of modules.
    pub modules: Vec<ModuleMarkers>,
    /// Trait impls.
    pub impls: BTreeSet<TraitImpl>,
    /// Type names with an inherent `fn new`.
    pub new_fns: BTreeSet<String>,
}

impl Source {
    /// Whether some input implements a trait whose path ends in `last` (and contains
    /// `contains`) for `type_name`.
    pub fn implements(&self, type_name: &str, last: &str, contains: &str) -> bool {
        self.impls.iter().any(|i| {
            i.type_name == type_name
                && i.trait_path.rsplit("::").next() == Some(last)
                && i.trait_path.contains(contains)
        })
    }
}

/// Whether a module name is a Kubernetes version (`v1`, `v1alpha1`, `v2beta3`).
pub fn is_version(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let rest = &rest[digits..];
    if rest.is_empty() {
        return true;
    }
    ["alpha", "beta"].iter().any(|stage| {
        rest.strip_prefix(stage).is_some_and(|n| {
            !n.is_empty() && !n.starts_with('0') && n.chars().all(|c| c.is_ascii_digit())
        })
    })
}

/// The package of a module, as Go's package is a directory: the module path up to its
/// first version segment (`samplecontroller::v1alpha1` for
/// `samplecontroller::v1alpha1::types`), or, without one, the module of the file's
/// directory.
pub fn package_of(module: &[String], dir_module: &[String]) -> Vec<String> {
    match module.iter().position(|m| is_version(m)) {
        Some(i) => module[..=i].to_vec(),
        None => dir_module.to_vec(),
    }
}

/// Reads and parses every file; collects every file's first error.
pub fn read_files(files: &[SourceFile]) -> Result<Source, Vec<Error>> {
    read_files_with(files, false)
}

/// [`read_files`], optionally reading kubegen's own output too (`kubegen crd` reads the
/// types kubegen generated from CRDs: that is the round trip).
pub fn read_files_with(files: &[SourceFile], generated: bool) -> Result<Source, Vec<Error>> {
    let mut source = Source::default();
    let mut errors = Vec::new();
    for f in files {
        if let Err(e) = read_file(f, &mut source, generated) {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(source)
    } else {
        Err(errors)
    }
}

fn read_file(f: &SourceFile, source: &mut Source, generated: bool) -> Result<(), Error> {
    let file = &f.path;
    let text = std::fs::read_to_string(file).map_err(|e| Error {
        file: Some(file.clone()),
        yaml_path: String::new(),
        line_col: None,
        problem: format!("cannot read: {e}"),
        fix: "check the path and that the file is UTF-8 Rust source".to_owned(),
    })?;
    // kubegen's own output under -f (`-f src -o src/generated`) is not input: its Clone
    // impls would make the next run think the user's types have them.
    if text.starts_with(kubegen_templates::emit::HEADER) && !generated {
        return Ok(());
    }
    let parsed = syn::parse_file(&text).map_err(|e| {
        error_at(
            file,
            e.span(),
            format!("this is not Rust that syn can parse: {e}"),
            "fix the syntax (cargo check shows the same place)",
        )
    })?;
    let (module, dir_module) = module_path(f)?;
    let package = package_of(&module, &dir_module);
    let uses = imports(&parsed.items);
    let (inner, _) = markers::read(&parsed.attrs, file)?;
    source.modules.push(ModuleMarkers {
        file: file.clone(),
        package: package.clone(),
        markers: inner,
    });
    collect(&parsed.items, file, &module, &dir_module, &uses, source)
}

/// The module path of a file and of its directory, under its root.
fn module_path(f: &SourceFile) -> Result<(Vec<String>, Vec<String>), Error> {
    let rel = f.path.strip_prefix(&f.root).unwrap_or(&f.path);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let file_name = parts.pop().unwrap_or_default();
    let stem = file_name
        .strip_suffix(".rs")
        .unwrap_or(&file_name)
        .to_owned();
    let dir = parts.clone();
    if !matches!(stem.as_str(), "mod" | "lib" | "main") {
        parts.push(stem);
    }
    for p in &parts {
        if syn::parse_str::<syn::Ident>(p).is_err() {
            return Err(Error::in_source(
                &f.path,
                1,
                1,
                format!(
                    "`{p}` in this file's path under {} is not a Rust module name",
                    f.root.display()
                ),
                "name directories and files as the modules they are (snake_case, no keywords)",
            ));
        }
    }
    Ok((parts, dir))
}

/// `use` imports of a file: last name -> full path text (`Resource` -> `k8s_openapi::Resource`).
fn imports(items: &[syn::Item]) -> BTreeMap<String, String> {
    fn walk(tree: &syn::UseTree, prefix: &str, out: &mut BTreeMap<String, String>) {
        let join = |name: &str| {
            if prefix.is_empty() {
                name.to_owned()
            } else {
                format!("{prefix}::{name}")
            }
        };
        match tree {
            syn::UseTree::Path(p) => walk(&p.tree, &join(&p.ident.to_string()), out),
            syn::UseTree::Name(n) => {
                out.insert(n.ident.to_string(), join(&n.ident.to_string()));
            }
            syn::UseTree::Rename(r) => {
                out.insert(r.rename.to_string(), join(&r.ident.to_string()));
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, prefix, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    let mut out = BTreeMap::new();
    for item in items {
        if let syn::Item::Use(u) = item {
            walk(&u.tree, "", &mut out);
        }
    }
    out
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn collect(
    items: &[syn::Item],
    file: &Path,
    module: &[String],
    dir_module: &[String],
    uses: &BTreeMap<String, String>,
    source: &mut Source,
) -> Result<(), Error> {
    let package = package_of(module, dir_module);
    for item in items {
        match item {
            syn::Item::Struct(s) => {
                let (markers, doc) = markers::read(&s.attrs, file)?;
                check_field_markers(s, file)?;
                source.items.push(Item {
                    file: file.to_owned(),
                    module: module.to_vec(),
                    package: package.clone(),
                    markers,
                    doc,
                    kind: ItemKind::Struct(s.clone()),
                });
            }
            syn::Item::Enum(e) => {
                let (markers, doc) = markers::read(&e.attrs, file)?;
                source.items.push(Item {
                    file: file.to_owned(),
                    module: module.to_vec(),
                    package: package.clone(),
                    markers,
                    doc,
                    kind: ItemKind::Enum(e.clone()),
                });
            }
            syn::Item::Impl(i) => {
                let syn::Type::Path(ty) = &*i.self_ty else {
                    continue;
                };
                let Some(type_name) = ty.path.segments.last().map(|s| s.ident.to_string()) else {
                    continue;
                };
                match &i.trait_ {
                    Some((_, path, _)) => {
                        let mut trait_path = path_text(path);
                        if path.segments.len() == 1 {
                            if let Some(full) = uses.get(&trait_path) {
                                trait_path = full.clone();
                            }
                        }
                        source.impls.insert(TraitImpl {
                            trait_path,
                            type_name,
                        });
                    }
                    None => {
                        let has_new = i
                            .items
                            .iter()
                            .any(|it| matches!(it, syn::ImplItem::Fn(f) if f.sig.ident == "new"));
                        if has_new {
                            source.new_fns.insert(type_name);
                        }
                    }
                }
            }
            syn::Item::Mod(m) => {
                let Some((_, inner)) = &m.content else {
                    continue;
                };
                let mut sub = module.to_vec();
                sub.push(m.ident.to_string());
                let (inner_markers, _) = markers::read(&m.attrs, file)?;
                source.modules.push(ModuleMarkers {
                    file: file.to_owned(),
                    package: package_of(&sub, dir_module),
                    markers: inner_markers,
                });
                let inner_uses = imports(inner);
                collect(inner, file, &sub, dir_module, &inner_uses, source)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Type and package markers mean nothing on a field: one there was meant for the type
/// (the registry says where each marker may stand).
fn check_field_markers(s: &syn::ItemStruct, file: &Path) -> Result<(), Error> {
    for f in &s.fields {
        let (field_markers, _) = markers::read(&f.attrs, file)?;
        let misplaced = |m: &&markers::Marker| {
            kubegen_templates::markers::resolve(&m.name, m.value.as_deref(), 0)
                .is_some_and(|(def, _)| !def.allows(kubegen_templates::markers::Target::Field))
        };
        if let Some(m) = field_markers.iter().find(misplaced) {
            return Err(m.error(
                file,
                format!(
                    "`{}` on a field of {}; kubegen reads it on types",
                    m.text(),
                    s.ident
                ),
                "move it to the /// docs of the struct (or the module's //! docs for +groupName)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_kubernetes_versions() {
        for v in ["v1", "v2", "v1alpha1", "v2beta3", "v10"] {
            assert!(is_version(v), "{v}");
        }
        for v in ["v0", "v", "version", "v1alpha", "v1gamma1", "v01", "types"] {
            assert!(!is_version(v), "{v}");
        }
    }

    #[test]
    fn module_paths_follow_rustc_file_layout() {
        let f = |p: &str| SourceFile {
            path: PathBuf::from("/r").join(p),
            root: PathBuf::from("/r"),
        };
        let (m, d) = module_path(&f("g/v1alpha1/types.rs")).unwrap();
        assert_eq!(m, ["g", "v1alpha1", "types"]);
        assert_eq!(d, ["g", "v1alpha1"]);
        let (m, _) = module_path(&f("g/v1/mod.rs")).unwrap();
        assert_eq!(m, ["g", "v1"]);
        assert_eq!(
            package_of(&["g".into(), "v1".into(), "types".into()], &[]),
            ["g", "v1"]
        );
        assert!(module_path(&f("my-group/v1.rs")).is_err());
    }
}
