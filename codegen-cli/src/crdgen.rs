//! `kubegen crd`: CustomResourceDefinitions from Rust types, as controller-gen's `crd`
//! generator writes them from Go types.
//!
//! This is the output layer only. The Rust reader (`input::rust`, the same one
//! `kubegen generate` uses) fills the model with every kind's schema and resource
//! facts; `kubegen_templates::emit::crd` turns the model into CRD objects; here they
//! are checked against kube-apiserver's rules, errors are pointed back at the Rust
//! line that caused them, and the CRDs become YAML.
//!
//! # Where each part of the CRD comes from
//!
//! - **Kinds** are what `kubegen generate` finds in Rust input (`+genclient` structs,
//!   kube-derive `#[kube(...)]` specs); group and version from the package's
//!   `+groupName` / `+versionName` (or the version module's name). Every version of a
//!   group's kind goes into one CRD, named `<plural>.<group>` and written to
//!   `<group>_<plural>.yaml`. With several versions exactly one must carry
//!   `+kubebuilder:storageversion`.
//! - **Resource facts** from markers on the root type, controller-gen's spelling:
//!   `+kubebuilder:resource:path=,singular=,scope=,shortName=,categories=`,
//!   `+kubebuilder:subresource:status`, `+kubebuilder:subresource:scale:specpath=,statuspath=,selectorpath=`,
//!   `+kubebuilder:printcolumn:name=,type=,JSONPath=,description=,format=,priority=`,
//!   `+kubebuilder:selectablefield:JSONPath=`, `+kubebuilder:storageversion`,
//!   `+kubebuilder:unservedversion`, `+kubebuilder:deprecatedversion:warning=`,
//!   `+kubebuilder:skipversion`, `+kubebuilder:metadata:annotations=,labels=` (the CRD's
//!   own `metadata`, merged over every version's root type); kubegen's
//!   `+kubegen:resource:listKind=` and
//!   `+kubegen:resource:kind=` where the names are not the conventional ones.
//! - **The schema** from the types and their serde attributes: `Option<T>` is optional,
//!   other fields required unless `#[serde(default)]`, `+optional` or a default marker;
//!   `Vec`, `BTreeMap`/`HashMap<String, T>`, nested structs, enums (unit variants with
//!   serde's renames, or an `Enum` marker), `IntOrString`, `Quantity`, `Time`,
//!   `MicroTime`, the runtime's `DateTime`, `serde_json::Value`
//!   (`x-kubernetes-preserve-unknown-fields`), `ObjectMeta` at the root, flattened
//!   structs merged, `rename`/`rename_all`. Doc comments become descriptions. The
//!   mapping is `input::rust::schema` over `kubegen_templates::schema`, shared with the
//!   CRD reader, which is why a CRD -> Rust -> CRD round trip is exact.
//! - **Validation** from markers on fields and types (every marker is one entry of
//!   `kubegen_templates::markers::REGISTRY`; `kubegen markers` lists them): controller-gen's `+kubebuilder:validation:*`
//!   (with `items:`), `+kubebuilder:default=`, `+nullable`, `+listType`, `+listMapKey`,
//!   `+mapType`, `+structType`, `+kubebuilder:pruning:PreserveUnknownFields`, and
//!   kubegen's `+kubegen:schema:<key>=<JSON>` for any schema key controller-gen has no
//!   marker for.
//!
//! Errors name file:line:col and the fix: an unknown marker, a malformed value, a
//! marker on a field of the wrong type (`Pattern` on an integer), a recursive type (CRD
//! schemas cannot recurse), a type with no schema kubegen knows, and a CRD kube-apiserver
//! would reject (`kubegen_apimachinery::crd_validation`: CEL syntax, list-map keys,
//! printer column types, default types, API approval of protected groups), at the
//! marker or field that caused it (`locate`).

use kubegen_apimachinery::crd_validation;
use serde_json::Value;

use crate::error::Error;
use crate::input::rust::source::SourceFile;

mod locate;

/// One CRD `kubegen crd` writes.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdFile {
    /// `<group>_<plural>.yaml`.
    pub file_name: String,
    /// The CRD object.
    pub crd: Value,
    /// The CRD as YAML (keys sorted, deterministic).
    pub yaml: String,
}

/// Reads `files` (Rust input, as `kubegen generate` takes it) and returns one CRD per
/// group and kind, sorted by file name. Every error found is returned; nothing partial.
pub fn generate(files: &[SourceFile]) -> Result<Vec<CrdFile>, Vec<Error>> {
    let model = crate::input::rust::read_model(files, "crate", true)?;
    let api =
        crate::input::assemble(model.parts.clone(), &Default::default()).map_err(|e| vec![e])?;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for crd in kubegen_templates::emit::crd::crds(&api) {
        match check(&crd, &model) {
            Ok(f) => out.push(f),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// kube-apiserver's rules for `crd` (API approval of protected groups, schemas,
/// printer columns, CEL), reported at the marker or field that broke them; then YAML.
fn check(
    crd: &kubegen_templates::emit::crd::Crd,
    model: &crate::input::rust::RustModel,
) -> Result<CrdFile, Error> {
    let (group, kind) = (crd.group.as_str(), crd.kind.as_str());
    let origin_of = |version: &str| {
        model
            .origins
            .iter()
            .find(|o| o.group == group && o.kind == kind && o.version == version)
    };
    let first = crd
        .versions
        .first()
        .and_then(|v| origin_of(v))
        .ok_or_else(|| {
            Error::at(
                "",
                format!("no input for the CRD of {kind}.{group}"),
                "report this as a kubegen bug",
            )
        })?;
    let annotations = crd.object.pointer("/metadata/annotations");
    if let Some(e) = crd_validation::api_approval(group, annotations) {
        let problem = format!(
            "{kind}.{group} is in a protected group (*.k8s.io, *.kubernetes.io): kube-apiserver rejects its CRD: {e}"
        );
        return Err(first.origin.clone().with_problem(
            problem,
            format!(
                "add the line `/// +kubebuilder:metadata:annotations=\"api-approved.kubernetes.io=https://github.com/kubernetes/kubernetes/pull/<number>\"` (the PR that approved the API) to {kind}'s doc comment, or `/// +kubebuilder:metadata:annotations=\"api-approved.kubernetes.io=unapproved, <reason>\"` for an API outside kubernetes/kubernetes; or use a group outside k8s.io and kubernetes.io"
            ),
        ));
    }
    if let Some(e) = crd_validation::validate(&crd.object).into_iter().next() {
        let version = crd
            .versions
            .iter()
            .enumerate()
            .find(|(i, _)| e.field.starts_with(&format!("spec.versions[{i}]")))
            .and_then(|(_, v)| origin_of(v))
            .unwrap_or(first);
        let problem = format!(
            "kube-apiserver would reject the CRD for {kind}.{group}: {}: {}",
            e.field,
            e.body()
        );
        let fix = crate::input::crd::validate::rule_fix(&e);
        return Err(locate::locate(
            &e,
            &crd.object,
            &model.source,
            &version.package,
            &version.item,
            &problem,
            &fix,
        )
        .unwrap_or_else(|| version.origin.clone().with_problem(problem, fix)));
    }
    let yaml = to_yaml(&crd.object)?;
    // The CRD reader holds kube-apiserver's rules for a CRD (DNS-1035 names, structural
    // schemas, ...): a CRD it rejects would be rejected by the cluster too, so it is an
    // error at the Rust input rather than a file that fails at `kubectl apply`.
    if let Err(e) = crate::input::crd::parse_file(std::path::Path::new(&crd.file_name), &yaml) {
        let at = e
            .yaml_path
            .strip_prefix("document 0: ")
            .unwrap_or(&e.yaml_path);
        return Err(first.origin.clone().with_problem(
            format!(
                "the CRD for {kind}.{group} would be invalid at {at}: {}",
                e.problem
            ),
            e.fix,
        ));
    }
    Ok(CrdFile {
        file_name: crd.file_name.clone(),
        crd: crd.object.clone(),
        yaml,
    })
}

/// YAML with every mapping's keys sorted, readable by YAML 1.1 readers too: kubectl
/// (sigs.k8s.io/yaml, go-yaml v2) reads an unquoted `on`, `off`, `y`, `n`, `yes`, `no`
/// as a boolean (and `1_000`, `0b101` as integers), which serde_yaml (YAML 1.2) writes
/// unquoted; such strings ([`yaml11_needs_quotes`]), as values and as mapping keys, are
/// written single-quoted. Block scalars are never touched.
pub fn to_yaml(v: &Value) -> Result<String, Error> {
    let bug = |problem: String| Error::at("", problem, "report this as a kubegen bug");
    // serde_yaml has no way to ask for a quoted scalar: such strings go through it
    // behind a private-use character (plain, since libyaml prints it), which is then
    // replaced with the quotes. The character is one no string of `v` contains.
    let marker = ('\u{E000}'..='\u{F8FF}')
        .find(|c| !contains_char(v, *c))
        .ok_or_else(|| bug("every private-use character occurs in the CRD".into()))?;
    let text = serde_yaml::to_string(&sorted(v, marker))
        .map_err(|e| bug(format!("cannot write YAML: {e}")))?;
    if !text.contains(marker) {
        return Ok(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(marker) {
        out.push_str(&rest[..at]);
        rest = &rest[at + marker.len_utf8()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-')))
            .unwrap_or(rest.len());
        out.push('\'');
        out.push_str(&rest[..end]);
        out.push('\'');
        rest = &rest[end..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether go-yaml v2 (YAML 1.1) reads the plain scalar `s` as a boolean. Its table
/// has three spellings of each word (`on`, `On`, `ON`); any case is quoted here, which
/// costs nothing and holds for readers less strict about case.
pub fn is_yaml11_bool(s: &str) -> bool {
    const WORDS: [&str; 8] = ["y", "n", "yes", "no", "on", "off", "true", "false"];
    WORDS.iter().any(|w| s.eq_ignore_ascii_case(w))
}

/// Whether go-yaml v2 reads the plain scalar `s` as something other than the string:
/// a YAML 1.1 boolean, or an integer YAML 1.2 does not have (`1_000`, `0b101`, `0o17`,
/// `+12`: go-yaml v2 drops `_` and parses with Go's `ParseInt(s, 0, 64)`).
pub fn yaml11_needs_quotes(s: &str) -> bool {
    if is_yaml11_bool(s) {
        return true;
    }
    let plain = s.replace('_', "");
    let digits = plain.strip_prefix(['+', '-']).unwrap_or(&plain);
    let radix = |p: &str, ok: fn(char) -> bool| {
        digits
            .strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.chars().all(ok))
    };
    !digits.is_empty()
        && (digits.chars().all(|c| c.is_ascii_digit())
            || radix("0x", |c| c.is_ascii_hexdigit())
            || radix("0X", |c| c.is_ascii_hexdigit())
            || radix("0o", |c| c.is_digit(8))
            || radix("0O", |c| c.is_digit(8))
            || radix("0b", |c| c.is_digit(2))
            || radix("0B", |c| c.is_digit(2)))
}

fn contains_char(v: &Value, c: char) -> bool {
    match v {
        Value::String(s) => s.contains(c),
        Value::Array(a) => a.iter().any(|x| contains_char(x, c)),
        Value::Object(m) => m.iter().any(|(k, x)| k.contains(c) || contains_char(x, c)),
        _ => false,
    }
}

fn yaml_string(s: &str, marker: char) -> serde_yaml::Value {
    if yaml11_needs_quotes(s) {
        serde_yaml::Value::String(format!("{marker}{s}"))
    } else {
        serde_yaml::Value::String(s.to_owned())
    }
}

fn sorted(v: &Value, marker: char) -> serde_yaml::Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = serde_yaml::Mapping::new();
            for k in keys {
                out.insert(yaml_string(k, marker), sorted(&m[k], marker));
            }
            serde_yaml::Value::Mapping(out)
        }
        Value::Array(a) => {
            serde_yaml::Value::Sequence(a.iter().map(|x| sorted(x, marker)).collect())
        }
        Value::String(s) => yaml_string(s, marker),
        Value::Bool(b) => serde_yaml::Value::Bool(*b),
        Value::Null => serde_yaml::Value::Null,
        Value::Number(n) => serde_yaml::to_value(n).unwrap_or(serde_yaml::Value::Null),
    }
}
