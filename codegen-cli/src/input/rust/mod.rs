//! Rust input: API types a user wrote by hand -> the model, for everything kubegen emits
//! around them (register items the types lack, deep copies, typed clients, listers,
//! informers, the fake clientset). kubegen never rewrites the user's types.
//!
//! # Where group, version and kinds come from
//!
//! Files are read with syn (`full`), never compiled or expanded. A file's module path
//! is its path under the `-f` root ([`source`]); the generated code names a type as
//! the types path (`--types-path`, default `crate::apis`) followed by that module path:
//! `-f src/apis` with `samplecontroller/v1alpha1/types.rs` gives
//! `crate::apis::samplecontroller::v1alpha1::types::Foo`.
//!
//! A *package* is what Go's package is: the module path up to the first segment that is
//! a Kubernetes version (`samplecontroller::v1alpha1`), or the file's directory when no
//! segment is one. The version is that segment, or a `+versionName=` marker; the group
//! is a `+groupName=` marker. Both are written in the inner docs (`//!`) of any file of
//! the package (usually its `mod.rs`, or a `doc.rs`, as Go's `doc.go`).
//!
//! Two ways to mark a kind ([`kinds`]):
//!
//! - code-generator's markers on a struct with `metadata: ObjectMeta`:
//!   `+genclient`, `+genclient:nonNamespaced`, `+genclient:noVerbs`,
//!   `+genclient:noStatus`, `+genclient:readonly`, `+genclient:onlyVerbs=a,b`,
//!   `+genclient:skipVerbs=a,b`, `+genclient:method=Name,verb=..,subresource=..,input=..,result=..`,
//!   and `+resourceName=` (the plural; otherwise code-generator's English rules);
//! - kube-derive's `#[derive(CustomResource)]` with `#[kube(group, version, kind, ...)]`
//!   on a spec struct: the kind is the root type kube-derive writes beside it.
//!
//! # Deep copies
//!
//! Rust's deep copy is `Clone`. kubegen generates `Clone` (with a field-wise
//! `clone_from`) for the structs a kind is made of, found by following field types from
//! each kind's root (its struct, or the kube-derive spec and status) through the
//! package's own structs, and for structs marked `+k8s:deepcopy-gen=true` (every struct
//! of a package with `//! +k8s:deepcopy-gen=package`), and for the enums reached so.
//! Types that derive or implement `Clone` already, and those marked
//! `+k8s:deepcopy-gen=false`, are left alone. A generated `Clone` lives in the generated
//! tree, so a struct's fields must be visible to the crate (`pub` or `pub(crate)`) and
//! named, and the type must not be generic. Otherwise the error says so, with the fix.
//!
//! # What the model gets from serde
//!
//! `rename`, `rename_all`, `default`, `flatten` and `skip` decide each field's wire name,
//! optionality and shape ([`fields`]); later work derives schemas from them.
//!
//! # Errors
//!
//! Every problem names the file, line and column and says how to fix it; nothing is
//! written. See `codegen-cli/tests/rust_errors.rs` for each message.

pub mod fields;
pub mod kinds;
pub mod markers;
pub mod resource;
pub mod schema;
pub mod source;

use std::collections::{BTreeMap, BTreeSet};

use kubegen_templates::markers::{self as registry, Target};
use kubegen_templates::model::{TypeDef, Version};
use kubegen_templates::names;

pub use source::SourceFile;

use self::kinds::FoundKind;
use self::markers::Marker;
use self::source::{Item, ItemKind, Source};
use super::VersionPart;
use crate::error::Error;

/// Reads `files` into one [`VersionPart`] per group and version; `types_path` is the
/// Rust path the files' root module has in the crate that mounts the generated tree
/// (`crate::apis`). Returns every error found (at least one per bad file).
pub fn read(files: &[SourceFile], types_path: &str) -> Result<Vec<VersionPart>, Vec<Error>> {
    read_model(files, types_path, false).map(|m| m.parts)
}

/// The model parts of Rust input, with what `kubegen crd` needs to point its errors at
/// the input.
pub struct RustModel {
    /// One part per group and version.
    pub parts: Vec<VersionPart>,
    /// The parsed input.
    pub source: Source,
    /// Where each kind version came from.
    pub origins: Vec<KindOrigin>,
    /// Kinds `kubegen generate` emits without a schema (their types use one kubegen has
    /// no schema for): the fake clientset does not validate, prune or default them.
    /// (`kubegen crd` makes these errors.)
    pub warnings: Vec<Error>,
}

/// Where one version of a kind came from.
#[derive(Debug, Clone)]
pub struct KindOrigin {
    /// The API group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind (wire name).
    pub kind: String,
    /// Its package.
    pub package: Vec<String>,
    /// Its root type (the `+genclient` struct, or kube-derive's spec struct).
    pub item: Item,
    /// file:line:col of the root type.
    pub origin: Error,
}

/// [`read`], for `kubegen crd` when `for_crd`: kubegen's own generated files are input
/// too (the CRD -> Rust -> CRD round trip), and versions marked
/// `+kubebuilder:skipversion` are left out.
pub fn read_model(
    files: &[SourceFile],
    types_path: &str,
    for_crd: bool,
) -> Result<RustModel, Vec<Error>> {
    let source = source::read_files_with(files, for_crd)?;
    let packages = package_markers(&source)?;
    let mut found = Vec::new();
    let mut origins = Vec::new();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for item in &source.items {
        let kind = match find_kind(item, &source, &packages, types_path) {
            Ok(k) => k,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if let Err(e) = check_type_markers(item) {
            errors.push(e);
            continue;
        }
        if let Err(e) = check_markers(item, kind.is_some()) {
            errors.push(e);
            continue;
        }
        let Some(mut k) = kind else { continue };
        let facts = match resource::apply(item, &mut k) {
            Ok(f) => f,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if for_crd && facts.skip {
            continue;
        }
        match schema::kind_schema(item, &k, &source) {
            Ok(s) => k.kind.schema_json = Some(s.to_string()),
            Err(e) if for_crd => {
                errors.push(e);
                continue;
            }
            Err(e) => {
                let problem = format!(
                    "kind {} has no schema ({}), so the fake clientset will not validate, prune or default it",
                    k.kind.names.kind, e.problem
                );
                warnings.push(e.with_problem(
                    problem,
                    "`kubegen crd` shows what to change; the generated code is complete without it",
                ));
            }
        }
        origins.push(KindOrigin {
            group: k.group.clone(),
            version: k.version.clone(),
            kind: k.kind.names.kind.clone(),
            package: k.package.clone(),
            item: item.clone(),
            origin: k.origin.clone(),
        });
        found.push(k);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    check_plurals(&found).map_err(|e| vec![e])?;
    check_versions(&mut found).map_err(|e| vec![e])?;
    let mut by_version: BTreeMap<(String, String), Vec<FoundKind>> = BTreeMap::new();
    for k in found {
        by_version
            .entry((k.group.clone(), k.version.clone()))
            .or_default()
            .push(k);
    }
    let mut parts = Vec::new();
    for ((group, version), mut kinds) in by_version {
        kinds.sort_by(|a, b| a.kind.names.kind.cmp(&b.kind.names.kind));
        // `kubegen crd` emits no Clone impls: it does not need the deep copies.
        let copies = if for_crd {
            Ok(Vec::new())
        } else {
            deep_copies(&kinds, &source, &packages, types_path)
        };
        let types = match copies {
            Ok(t) => t,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let origin = kinds[0].origin.clone();
        parts.push(VersionPart {
            group,
            version: Version {
                module: names::module_name(&version),
                name: version,
                kinds: kinds.into_iter().map(|k| k.kind).collect(),
                types,
            },
            origin,
        });
    }
    if errors.is_empty() {
        Ok(RustModel {
            parts,
            source,
            origins,
            warnings,
        })
    } else {
        Err(errors)
    }
}

/// Every version of a kind names the resource alike (plural, scope); a kind served at
/// one version stores it, and one served at several marks exactly one
/// `+kubebuilder:storageversion`.
fn check_versions(found: &mut [FoundKind]) -> Result<(), Error> {
    let mut by_kind: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, k) in found.iter().enumerate() {
        by_kind
            .entry((k.group.clone(), k.kind.names.kind.clone()))
            .or_default()
            .push(i);
    }
    for ((group, kind), mut at) in by_kind {
        at.sort_by(|a, b| found[*a].version.cmp(&found[*b].version));
        if at.len() == 1 {
            found[at[0]].kind.storage = true;
            continue;
        }
        let first = &found[at[0]];
        for &i in &at[1..] {
            let v = &found[i];
            if v.kind.names.plural != first.kind.names.plural || v.kind.scope != first.kind.scope {
                return Err(v.origin.clone().with_problem(
                    format!(
                        "{kind} {} names its resource `{}` ({:?}) but {} names it `{}` ({:?})",
                        v.version,
                        v.kind.names.plural,
                        v.kind.scope,
                        first.version,
                        first.kind.names.plural,
                        first.kind.scope
                    ),
                    "give every version of a kind the same plural and scope",
                ));
            }
        }
        let storage = at.iter().filter(|i| found[**i].kind.storage).count();
        if storage != 1 {
            let names: Vec<&str> = at.iter().map(|i| found[*i].version.as_str()).collect();
            return Err(first.origin.clone().with_problem(
                format!(
                    "{kind}.{group} has {} versions ({}) and {storage} of them marked `+kubebuilder:storageversion`",
                    at.len(),
                    names.join(", "),
                ),
                "mark exactly one version's root type `+kubebuilder:storageversion`",
            ));
        }
    }
    Ok(())
}

/// Every marker of `item` and of its fields is known and in its place: an unknown
/// marker of a family kubegen reads (or one a typo away from a known one) is an error
/// naming the nearest known marker; a kind-only marker on a type that is not a kind, a
/// field marker on a type, a package marker on a field are errors.
fn check_markers(item: &Item, is_kind: bool) -> Result<(), Error> {
    for m in &item.markers {
        check_marker(m, &item.file, Target::Type, is_kind)?;
    }
    if let ItemKind::Struct(s) = &item.kind {
        for f in s.fields.iter() {
            let (field_markers, _) = markers::read(&f.attrs, &item.file)?;
            for m in &field_markers {
                check_marker(m, &item.file, Target::Field, false)?;
            }
        }
    }
    Ok(())
}

fn check_marker(
    m: &Marker,
    file: &std::path::Path,
    target: Target,
    is_kind: bool,
) -> Result<(), Error> {
    match registry::resolve(&m.name, m.value.as_deref(), 0) {
        Some((def, _)) => registry::check_target(def, target, is_kind)
            .map_err(|e| m.error(file, e.problem, e.fix)),
        None => {
            let near = registry::suggest(&m.name);
            if !registry::is_owned(&m.name) && near.is_none() {
                // Another tool's marker (`+patchStrategy`, `+protobuf`): kept, unread.
                return Ok(());
            }
            Err(m.error(
                file,
                format!("unknown marker `{}`", m.text()),
                match near {
                    Some(n) => format!(
                        "did you mean `+{n}`? (`kubegen markers` lists every marker kubegen reads)"
                    ),
                    None => "`kubegen markers` lists every marker kubegen reads".to_owned(),
                },
            ))
        }
    }
}

/// The path generated code names a type by: `types_path::module::Name`.
pub fn rust_path(types_path: &str, module: &[String], name: &str) -> String {
    let mut parts = vec![types_path.to_owned()];
    parts.extend(module.iter().cloned());
    parts.push(name.to_owned());
    parts.join("::")
}

/// What a package's inner docs say.
#[derive(Debug, Default, Clone)]
pub struct PackageMarkers {
    /// `+groupName=`, with the marker (for errors).
    pub group: Option<(String, Marker, std::path::PathBuf)>,
    /// `+versionName=`.
    pub version: Option<String>,
    /// `+k8s:deepcopy-gen=package`.
    pub deepcopy_all: bool,
}

const PACKAGE_ONLY: &[&str] = &["groupName", "versionName"];

pub(crate) fn package_markers(
    source: &Source,
) -> Result<BTreeMap<Vec<String>, PackageMarkers>, Vec<Error>> {
    let mut out: BTreeMap<Vec<String>, PackageMarkers> = BTreeMap::new();
    let mut errors = Vec::new();
    for module in &source.modules {
        let p = out.entry(module.package.clone()).or_default();
        for m in &module.markers {
            let file = &module.file;
            match m.name.as_str() {
                "groupName" => {
                    let value = m.value.clone().unwrap_or_default();
                    if let Some(problem) = group_problem(&value) {
                        errors.push(m.error(
                            file,
                            format!("`{}`: {problem}", m.text()),
                            "write the API group as a DNS subdomain (samplecontroller.k8s.io)",
                        ));
                    } else if let Some((other, om, of)) = &p.group {
                        if *other != value {
                            errors.push(m.error(
                                file,
                                format!(
                                    "`{}`, but {}:{}:{} says `{}` for the same package",
                                    m.text(),
                                    of.display(),
                                    om.line,
                                    om.column,
                                    om.text()
                                ),
                                "write +groupName once per package",
                            ));
                        }
                    } else {
                        p.group = Some((value, m.clone(), file.clone()));
                    }
                }
                "versionName" => p.version = m.value.clone(),
                "k8s:deepcopy-gen" => match m.value.as_deref() {
                    Some("package") => p.deepcopy_all = true,
                    Some("false") => p.deepcopy_all = false,
                    _ => errors.push(m.error(
                        file,
                        format!("`{}` in module docs", m.text()),
                        "write //! +k8s:deepcopy-gen=package (or =false) for a package; =true goes on a type",
                    )),
                },
                name if name.starts_with("genclient") || name == "resourceName" => {
                    errors.push(m.error(
                        file,
                        format!("`{}` in module docs; it belongs on a type", m.text()),
                        "move it to the /// docs of the kind's struct",
                    ))
                }
                _ => {}
            }
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Why `group` is not a valid API group name (a DNS subdomain), if it is not.
fn group_problem(group: &str) -> Option<String> {
    if group.is_empty() {
        return Some("the group is empty".to_owned());
    }
    if group.len() > 253 {
        return Some("the group is longer than 253 characters".to_owned());
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    (!group.split('.').all(label_ok)).then(|| {
        format!("{group:?} is not a DNS subdomain (lowercase letters, digits, '-' and '.')")
    })
}

/// Markers that belong to a package, written on a type: errors.
fn check_type_markers(item: &Item) -> Result<(), Error> {
    if let Some(m) = item
        .markers
        .iter()
        .find(|m| PACKAGE_ONLY.contains(&m.name.as_str()))
    {
        return Err(m.error(
            &item.file,
            format!(
                "`{}` on {}; it belongs to the package",
                m.text(),
                item.name()
            ),
            "write it in the module's //! docs (its mod.rs, or a doc.rs, as Go's doc.go)",
        ));
    }
    if let Some(m) = item.markers.iter().find(|m| {
        m.name == "k8s:deepcopy-gen" && !matches!(m.value.as_deref(), Some("true" | "false"))
    }) {
        return Err(m.error(
            &item.file,
            format!("`{}` on {}", m.text(), item.name()),
            "write +k8s:deepcopy-gen=true or =false on a type (=package goes in the module's //! docs)",
        ));
    }
    Ok(())
}

pub(crate) fn find_kind(
    item: &Item,
    source: &Source,
    packages: &BTreeMap<Vec<String>, PackageMarkers>,
    types_path: &str,
) -> Result<Option<FoundKind>, Error> {
    let module_path = {
        let mut parts = vec![types_path.to_owned()];
        parts.extend(item.module.iter().cloned());
        parts.join("::")
    };
    if let Some(k) = kinds::kube_derive_kind(item, &module_path)? {
        let span = item.ident().span();
        if let Some(problem) = group_problem(&k.group) {
            return Err(item.error_at(
                span,
                format!("#[kube(group = {:?})]: {problem}", k.group),
                "write the API group as a DNS subdomain (samplecontroller.k8s.io)",
            ));
        }
        if !source::is_version(&k.version) {
            return Err(item.error_at(
                span,
                format!(
                    "#[kube(version = {:?})] is not a Kubernetes version",
                    k.version
                ),
                "name versions like v1, v1alpha1, v2beta3",
            ));
        }
        return Ok(Some(k));
    }
    if !item.markers.iter().any(|m| m.name.starts_with("genclient")) {
        return Ok(None);
    }
    let package = packages.get(&item.package).cloned().unwrap_or_default();
    let span = item.ident().span();
    let Some((group, _, _)) = package.group else {
        return Err(item.error_at(
            span,
            format!(
                "kind {} is in package `{}`, whose docs have no +groupName",
                item.name(),
                display_package(&item.package)
            ),
            "add `//! +groupName=example.com` to the package's mod.rs (or a doc.rs), as Go's doc.go",
        ));
    };
    let version = match package.version {
        Some(v) => v,
        None => match item.package.last().filter(|v| source::is_version(v)) {
            Some(v) => v.clone(),
            None => {
                return Err(item.error_at(
                    span,
                    format!(
                        "cannot tell the version of kind {}: no segment of `{}` is a version",
                        item.name(),
                        display_package(&item.package)
                    ),
                    "put it under a version module (samplecontroller/v1alpha1/), or add `//! +versionName=v1` to the package's docs",
                ))
            }
        },
    };
    // A CRD version may be any DNS-1035 label (`v0`, `stable`); only the module-name
    // rule above needs Kubernetes' version pattern.
    if !source::is_version(&version) && !crate::input::crd::validate::is_dns1035_label(&version) {
        return Err(item.error_at(
            span,
            format!(
                "version {version:?} of kind {} is neither a Kubernetes version nor a DNS-1035 label",
                item.name()
            ),
            "name versions like v1, v1alpha1, v2beta3",
        ));
    }
    kinds::marker_kind(item, source, types_path, &group, &version)
}

fn display_package(package: &[String]) -> String {
    if package.is_empty() {
        "(the root)".to_owned()
    } else {
        package.join("::")
    }
}

/// Two kinds of one group may not share a plural (their URLs, accessors and fake
/// registrations would be one), unless they are the same kind in two versions.
fn check_plurals(found: &[FoundKind]) -> Result<(), Error> {
    let mut seen: BTreeMap<(&str, &str), &FoundKind> = BTreeMap::new();
    for k in found {
        let key = (k.group.as_str(), k.kind.names.plural.as_str());
        if let Some(first) = seen.get(&key) {
            let same_version = first.version == k.version;
            if same_version || first.kind.names.kind != k.kind.names.kind {
                let at = &first.origin;
                return Err(Error {
                    problem: format!(
                        "kind {} of {}/{} has the plural {:?}, as kind {} at {}{}",
                        k.kind.names.kind,
                        k.group,
                        k.version,
                        k.kind.names.plural,
                        first.kind.names.kind,
                        at.file.as_ref().map_or(String::new(), |f| f.display().to_string()),
                        at.line_col.map_or(String::new(), |(l, c)| format!(":{l}:{c}")),
                    ),
                    fix: "give one of them another plural with /// +resourceName=<plural> (or #[kube(plural = \"...\")])".to_owned(),
                    ..k.origin.clone()
                });
            }
        } else {
            seen.insert(key, k);
        }
    }
    Ok(())
}

/// The structs of one version that need a generated `Clone` (see the module docs).
fn deep_copies(
    kinds: &[FoundKind],
    source: &Source,
    packages: &BTreeMap<Vec<String>, PackageMarkers>,
    types_path: &str,
) -> Result<Vec<TypeDef>, Error> {
    let mut queue: Vec<(Vec<String>, String)> = Vec::new();
    for k in kinds {
        for root in &k.roots {
            queue.push((k.package.clone(), root.clone()));
        }
    }
    let version_packages: BTreeSet<&Vec<String>> = kinds.iter().map(|k| &k.package).collect();
    for item in &source.items {
        let forced = item
            .markers
            .iter()
            .any(|m| m.name == "k8s:deepcopy-gen" && m.value.as_deref() == Some("true"));
        let package_wide = packages.get(&item.package).is_some_and(|p| p.deepcopy_all);
        if version_packages.contains(&item.package) && (forced || package_wide) {
            queue.push((item.package.clone(), item.name()));
        }
    }
    let mut seen = BTreeSet::new();
    let mut defs = BTreeMap::new();
    while let Some((package, name)) = queue.pop() {
        if !seen.insert((package.clone(), name.clone())) {
            continue;
        }
        let Some(item) = source
            .items
            .iter()
            .find(|i| i.package == package && i.name() == name)
        else {
            continue;
        };
        let opted_out = item
            .markers
            .iter()
            .any(|m| m.name == "k8s:deepcopy-gen" && m.value.as_deref() == Some("false"));
        if opted_out {
            continue;
        }
        let has_clone = item.derives("Clone") || source.implements(&name, "Clone", "");
        match &item.kind {
            ItemKind::Enum(e) => {
                for v in &e.variants {
                    for f in &v.fields {
                        let mut idents = Vec::new();
                        fields::idents_in(&f.ty, &mut idents);
                        queue.extend(idents.into_iter().map(|i| (package.clone(), i)));
                    }
                }
                if has_clone {
                    continue;
                }
                if !e.generics.params.is_empty() {
                    return Err(item.error_at(
                        e.ident.span(),
                        format!(
                            "generic enum {name} has no Clone; kubegen cannot generate one for it"
                        ),
                        "add #[derive(Clone)] to the enum",
                    ));
                }
                let path = rust_path(types_path, &item.module, &name);
                check_unique(&defs, &name, item, &path)?;
                defs.insert(
                    name.clone(),
                    TypeDef::ExistingEnum(fields::enum_def(e, path)),
                );
            }
            ItemKind::Struct(s) => {
                for f in s.fields.iter() {
                    let mut idents = Vec::new();
                    fields::idents_in(&f.ty, &mut idents);
                    queue.extend(idents.into_iter().map(|i| (package.clone(), i)));
                }
                if has_clone {
                    continue;
                }
                if !s.generics.params.is_empty() {
                    return Err(item.error_at(
                        s.ident.span(),
                        format!("generic struct {name} has no Clone; kubegen cannot generate one for it"),
                        "add #[derive(Clone)] to the struct",
                    ));
                }
                let path = rust_path(types_path, &item.module, &name);
                check_unique(&defs, &name, item, &path)?;
                defs.insert(
                    name.clone(),
                    TypeDef::Struct(fields::struct_def(item, s, path)?),
                );
            }
        }
    }
    Ok(defs.into_values().collect())
}

/// Two types of one version needing a generated `Clone` must have different names (the
/// model's rule); the error names both places.
fn check_unique(
    defs: &BTreeMap<String, TypeDef>,
    name: &str,
    item: &Item,
    path: &str,
) -> Result<(), Error> {
    let other = match defs.get(name) {
        Some(TypeDef::Struct(s)) => format!(
            "{} ({})",
            s.existing.as_deref().unwrap_or_default(),
            s.origin
        ),
        Some(TypeDef::ExistingEnum(e)) => e.path.clone(),
        _ => return Ok(()),
    };
    Err(item.error_at(
        item.ident().span(),
        format!("{name} needs a generated Clone, and so does {other} of the same group and version; {path} cannot share the name"),
        "derive Clone on one of them, or rename one",
    ))
}
