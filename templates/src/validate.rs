//! The model's own checks, run before anything is emitted: what [`crate::model`]
//! promises emitters, proven on the model an input built.
//!
//! Inputs check their own rules first and report them with file and place (a YAML path,
//! a line and column); this pass catches what only the assembled model shows (two
//! kinds of one version whose clients would share a name) and anything an input missed,
//! so emitters never fall back to a substitute type or name. Each problem names the
//! group, version and kind, and says how to fix the input.

use std::collections::{BTreeMap, BTreeSet};

use heck::ToSnakeCase;

use crate::model::{Api, ExtensionMethod, KindSource, Ty, TypeDef, TypeRef, Verb, Version};

/// One problem the model has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    /// Where: `group/version`, and the kind or type (`samplecontroller.k8s.io/v1alpha1 Foo`).
    pub place: String,
    /// What is wrong.
    pub problem: String,
    /// How to fix the input.
    pub fix: String,
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.place, self.problem)?;
        if !self.fix.is_empty() {
            write!(f, "\n  fix: {}", self.fix)?;
        }
        Ok(())
    }
}

impl std::error::Error for ModelError {}

/// Whether `name` can be written as a Rust identifier (keywords excluded).
pub fn is_ident(name: &str) -> bool {
    syn::parse_str::<syn::Ident>(name).is_ok()
}

/// Whether `path` parses as a Rust type.
pub fn is_type_path(path: &str) -> bool {
    syn::parse_str::<syn::Type>(path).is_ok()
}

/// Every problem of `api`; empty when emitters may run.
///
/// ```
/// use kubegen_templates::model::Api;
/// assert!(kubegen_templates::validate::validate(&Api::default()).is_empty());
/// ```
pub fn validate(api: &Api) -> Vec<ModelError> {
    let mut errors = Vec::new();
    let mut modules = BTreeMap::new();
    for group in &api.groups {
        if !is_ident(&group.module) {
            errors.push(ModelError {
                place: format!("group {}", group.name),
                problem: format!("module name `{}` is not a Rust identifier", group.module),
                fix: "give the group a module name with --group-alias GROUP=MODULE".to_owned(),
            });
        }
        if let Some(other) = modules.insert(&group.module, &group.name) {
            errors.push(ModelError {
                place: format!("group {}", group.name),
                problem: format!("group {other} has the same module name `{}`", group.module),
                fix: format!(
                    "name one of them with --group-alias {}=<module>",
                    group.name
                ),
            });
        }
        for version in &group.versions {
            let place = if group.name.is_empty() {
                version.name.clone()
            } else {
                format!("{}/{}", group.name, version.name)
            };
            if !is_ident(&version.module) {
                errors.push(ModelError {
                    place: place.clone(),
                    problem: format!("module name `{}` is not a Rust identifier", version.module),
                    fix: "name versions like v1, v1alpha1, v2beta3".to_owned(),
                });
            }
            validate_version(&place, version, &mut errors);
        }
    }
    errors
}

fn validate_version(place: &str, version: &Version, errors: &mut Vec<ModelError>) {
    let mut push = |what: &str, problem: String, fix: &str| {
        errors.push(ModelError {
            place: format!("{place} {what}"),
            problem,
            fix: fix.to_owned(),
        });
    };
    let mut type_names = BTreeSet::new();
    for t in &version.types {
        if !is_ident(t.name()) {
            push(
                t.name(),
                "the type name is not a Rust identifier".to_owned(),
                "rename the type",
            );
        }
        if !type_names.insert(t.name()) {
            push(
                t.name(),
                "two types of this version have this name".to_owned(),
                "rename one of them",
            );
        }
        if let TypeDef::Struct(s) = t {
            if let Some(path) = &s.existing {
                if !is_type_path(path) {
                    push(
                        &s.name,
                        format!("`{path}` is not a Rust type path"),
                        "pass a path such as crate::apis with --types-path",
                    );
                }
            }
        }
    }
    for t in &version.types {
        let TypeDef::Struct(s) = t else { continue };
        for f in &s.fields {
            let mut bad = Vec::new();
            check_ty(&f.ty, &type_names, &mut bad);
            for problem in bad {
                push(
                    &format!("{}.{}", s.name, f.json_name),
                    problem,
                    "this is a kubegen bug if the input is valid; please report it",
                );
            }
        }
    }
    let mut stems = BTreeMap::new();
    let mut accessors = BTreeMap::new();
    for kind in &version.kinds {
        let k = kind.names.kind.as_str();
        let (stem, path) = match &kind.source {
            KindSource::Generated { type_name } => {
                if !type_names.contains(type_name.as_str()) {
                    push(
                        k,
                        format!("its root type {type_name} is not among the version's types"),
                        "this is a kubegen bug; please report it",
                    );
                }
                (type_name.clone(), None)
            }
            KindSource::User { rust_path, .. } | KindSource::External { rust_path } => (
                rust_path.rsplit("::").next().unwrap_or_default().to_owned(),
                Some(rust_path),
            ),
        };
        if let Some(path) = path {
            if !is_type_path(path) {
                push(
                    k,
                    format!("`{path}` is not a Rust type path"),
                    "pass a path such as crate::apis with --types-path",
                );
            }
        }
        if !is_ident(&stem) {
            push(
                k,
                format!("`{stem}` cannot name its client, lister and informer types"),
                "give the kind an UpperCamelCase Rust name",
            );
        }
        if let Some(other) = stems.insert(stem.clone(), k) {
            push(
                k,
                format!("kind {other} has the same Rust name `{stem}`"),
                "give every kind of a version a distinct name",
            );
        }
        let accessor = crate::names::accessor_name(&kind.names.kind, &kind.names.plural);
        if let Some(other) = accessors.insert(accessor.clone(), k) {
            push(
                k,
                format!(
                    "kind {other} has a plural that makes the same accessor `{accessor}` (`{}`)",
                    kind.names.plural
                ),
                "give every kind of a group a distinct plural",
            );
        }
        validate_methods(&kind.client.methods, &mut |problem, fix| {
            push(k, problem, fix)
        });
    }
}

fn validate_methods(methods: &[ExtensionMethod], push: &mut dyn FnMut(String, &str)) {
    let verb_methods: BTreeSet<String> = Verb::ALL
        .iter()
        .map(|v| v.name().to_snake_case())
        .chain(
            [
                "patch_status",
                "new",
                "namespaced",
                "resource_client",
                "clone",
                "fmt",
            ]
            .map(str::to_owned),
        )
        .collect();
    let mut seen = BTreeSet::new();
    for m in methods {
        let snake = m.name.to_snake_case();
        if !is_ident(&m.name) || m.name.starts_with(|c: char| !c.is_ascii_uppercase()) {
            push(
                format!(
                    "extension method name {:?} is not an UpperCamelCase name",
                    m.name
                ),
                "name methods like Go's: +genclient:method=UpdateScale,...",
            );
        }
        if verb_methods.contains(&snake) {
            push(
                format!(
                    "extension method {} would be the method `{snake}`, which the client has already",
                    m.name
                ),
                "choose another method name",
            );
        }
        if !seen.insert(snake.clone()) {
            push(
                format!("two extension methods are named {}", m.name),
                "name each method once",
            );
        }
        if !matches!(
            m.verb,
            Verb::Get | Verb::Create | Verb::Update | Verb::Patch | Verb::Apply
        ) {
            push(
                format!(
                    "extension method {} has verb {}; methods support get, create, update, patch and apply",
                    m.name,
                    m.verb.name()
                ),
                "use one of those verbs",
            );
        }
        for t in [&m.input, &m.result].into_iter().flatten() {
            if let TypeRef::Path(p) = t {
                if !is_type_path(p) {
                    push(
                        format!("`{p}` is not a Rust type path"),
                        "write input= and result= as Rust paths or Go package paths of k8s.io/api types",
                    );
                }
            }
        }
    }
}

fn check_ty(ty: &Ty, names: &BTreeSet<&str>, bad: &mut Vec<String>) {
    match ty {
        Ty::Named(n) if !names.contains(n.as_str()) => {
            bad.push(format!("type {n} is not defined in this version"))
        }
        Ty::External(p) if !is_type_path(p) => bad.push(format!("`{p}` is not a Rust type path")),
        Ty::Vec(t) | Ty::Map(t) | Ty::Option(t) | Ty::Box(t) => check_ty(t, names, bad),
        _ => {}
    }
}
