//! `kubegen crd`: CustomResourceDefinitions from Rust types, as controller-gen's `crd`
//! generator writes them from Go types.
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
//!   mapping itself is `kubegen_templates::schema`, shared with the CRD reader, which is
//!   why a CRD -> Rust -> CRD round trip is exact.
//! - **Validation** from markers on fields and types (see
//!   `kubegen_templates::schema::MarkerSet`): controller-gen's `+kubebuilder:validation:*`
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

use std::collections::BTreeMap;

use kubegen_apimachinery::crd_validation;
use kubegen_templates::model::{
    CrdMetadata, EnumDef, Field, PrinterColumn, Scale, Scope, StructDef, Ty, TypeDef, Variant,
};
use kubegen_templates::schema::{self, MarkerSet, SchemaExtra, Types};
use quote::ToTokens;
use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::input::rust::fields::{convert_case, option_inner, serde_attrs};
use crate::input::rust::kinds::FoundKind;
use crate::input::rust::markers::{self, Marker};
use crate::input::rust::source::{self, Item, ItemKind, Source, SourceFile};

mod locate;
mod metadata;

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

/// One version of a kind, as read from its root type.
struct KindVersion {
    group: String,
    version: String,
    kind: String,
    list_kind: String,
    plural: String,
    singular: String,
    scope: Scope,
    short_names: Vec<String>,
    categories: Vec<String>,
    storage: bool,
    served: bool,
    deprecated: Option<Option<String>>,
    status: bool,
    scale: Option<Scale>,
    columns: Vec<PrinterColumn>,
    selectable: Vec<String>,
    /// From `+kubebuilder:metadata:annotations=` / `labels=`, with the line of each
    /// marker for errors.
    metadata: CrdMetadata,
    schema: Value,
    origin: Error,
    /// The root type and its package, to point errors at the line that caused them.
    item: Item,
    package: Vec<String>,
}

/// Reads `files` (Rust input, as `kubegen generate` takes it) and returns one CRD per
/// group and kind, sorted by file name. Every error found is returned; nothing partial.
pub fn generate(files: &[SourceFile]) -> Result<Vec<CrdFile>, Vec<Error>> {
    let source = source::read_files_with(files, true)?;
    let packages = crate::input::rust::package_markers(&source)?;
    let mut versions = Vec::new();
    let mut errors = Vec::new();
    for item in &source.items {
        let found = match crate::input::rust::find_kind(item, &source, &packages, "crate") {
            Ok(Some(k)) => k,
            Ok(None) => continue,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if item
            .markers
            .iter()
            .any(|m| m.name == "kubebuilder:skipversion")
        {
            continue;
        }
        match kind_version(item, &found, &source) {
            Ok(v) => versions.push(v),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut by_kind: BTreeMap<(String, String), Vec<KindVersion>> = BTreeMap::new();
    for v in versions {
        by_kind
            .entry((v.group.clone(), v.kind.clone()))
            .or_default()
            .push(v);
    }
    let mut out = Vec::new();
    for ((group, kind), mut vs) in by_kind {
        match assemble(&group, &kind, &mut vs, &source) {
            Ok(f) => out.push(f),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    out.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    Ok(out)
}

fn assemble(
    group: &str,
    kind: &str,
    vs: &mut [KindVersion],
    source: &Source,
) -> Result<CrdFile, Error> {
    // By name, as controller-gen orders them (the API server orders versions by
    // priority itself wherever it lists them).
    vs.sort_by(|a, b| a.version.cmp(&b.version));
    if vs.len() > 1 {
        let storage: Vec<&KindVersion> = vs.iter().filter(|v| v.storage).collect();
        if storage.len() != 1 {
            let names: Vec<&str> = vs.iter().map(|v| v.version.as_str()).collect();
            return Err(vs[0].origin.clone().with_problem(
                format!(
                    "{kind}.{group} has {} versions ({}) and {} of them marked `+kubebuilder:storageversion`",
                    vs.len(),
                    names.join(", "),
                    storage.len()
                ),
                "mark exactly one version's root type `+kubebuilder:storageversion`",
            ));
        }
    } else if let Some(v) = vs.first_mut() {
        v.storage = true;
    }
    let first = &vs[0];
    for v in vs.iter() {
        if v.plural != first.plural || v.scope != first.scope {
            return Err(v.origin.clone().with_problem(
                format!(
                    "{kind} {} names its resource `{}` ({:?}) but {} names it `{}` ({:?})",
                    v.version, v.plural, v.scope, first.version, first.plural, first.scope
                ),
                "give every version of a kind the same plural and scope",
            ));
        }
    }
    let mut names = Map::new();
    names.insert("kind".into(), json!(first.kind));
    names.insert("listKind".into(), json!(first.list_kind));
    names.insert("plural".into(), json!(first.plural));
    names.insert("singular".into(), json!(first.singular));
    if !first.short_names.is_empty() {
        names.insert("shortNames".into(), json!(first.short_names));
    }
    if !first.categories.is_empty() {
        names.insert("categories".into(), json!(first.categories));
    }
    let versions: Vec<Value> = vs.iter().map(version_json).collect();
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(format!("{}.{group}", first.plural)));
    // Every version's root type may carry them, as with controller-gen.
    let mut meta = CrdMetadata::default();
    for v in vs.iter() {
        meta.annotations.extend(v.metadata.annotations.clone());
        meta.labels.extend(v.metadata.labels.clone());
    }
    if !meta.annotations.is_empty() {
        metadata.insert("annotations".into(), json!(meta.annotations));
    }
    if !meta.labels.is_empty() {
        metadata.insert("labels".into(), json!(meta.labels));
    }
    if let Some(e) = crd_validation::api_approval(group, metadata.get("annotations")) {
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
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": group,
            "names": names,
            "scope": match first.scope { Scope::Namespaced => "Namespaced", Scope::Cluster => "Cluster" },
            "versions": versions,
        }
    });
    // kube-apiserver's rules for schemas, printer columns and CEL (shared with the
    // in-memory server), reported at the marker or field that broke them.
    if let Some(e) = crd_validation::validate(&crd).into_iter().next() {
        let version = vs
            .iter()
            .enumerate()
            .find(|(i, _)| e.field.starts_with(&format!("spec.versions[{i}]")))
            .map_or(first, |(_, v)| v);
        let problem = format!(
            "kube-apiserver would reject the CRD for {kind}.{group}: {}: {}",
            e.field,
            e.body()
        );
        let fix = crate::input::crd::validate::rule_fix(&e);
        return Err(locate::locate(
            &e,
            &crd,
            source,
            &version.package,
            &version.item,
            &problem,
            &fix,
        )
        .unwrap_or_else(|| version.origin.clone().with_problem(problem, fix)));
    }
    let yaml = to_yaml(&crd)?;
    let file_name = format!("{group}_{}.yaml", first.plural);
    // The CRD reader holds kube-apiserver's rules for a CRD (DNS-1035 names, structural
    // schemas, ...): a CRD it rejects would be rejected by the cluster too, so it is an
    // error at the Rust input rather than a file that fails at `kubectl apply`.
    if let Err(e) = crate::input::crd::parse_file(std::path::Path::new(&file_name), &yaml) {
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
        file_name,
        crd,
        yaml,
    })
}

/// One `spec.versions[]` entry.
fn version_json(v: &KindVersion) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(v.version));
    m.insert("served".into(), json!(v.served));
    m.insert("storage".into(), json!(v.storage));
    if let Some(warning) = &v.deprecated {
        m.insert("deprecated".into(), json!(true));
        if let Some(w) = warning {
            m.insert("deprecationWarning".into(), json!(w));
        }
    }
    m.insert("schema".into(), json!({"openAPIV3Schema": v.schema}));
    let mut sub = Map::new();
    if v.status {
        sub.insert("status".into(), json!({}));
    }
    if let Some(s) = &v.scale {
        let mut scale = Map::new();
        scale.insert("specReplicasPath".into(), json!(s.spec_replicas_path));
        scale.insert("statusReplicasPath".into(), json!(s.status_replicas_path));
        if let Some(l) = &s.label_selector_path {
            scale.insert("labelSelectorPath".into(), json!(l));
        }
        sub.insert("scale".into(), Value::Object(scale));
    }
    if !sub.is_empty() {
        m.insert("subresources".into(), Value::Object(sub));
    }
    if !v.columns.is_empty() {
        let cols: Vec<Value> = v
            .columns
            .iter()
            .map(|c| {
                let mut col = Map::new();
                col.insert("name".into(), json!(c.name));
                col.insert("type".into(), json!(c.type_));
                col.insert("jsonPath".into(), json!(c.json_path));
                if let Some(d) = &c.description {
                    col.insert("description".into(), json!(d));
                }
                if let Some(f) = &c.format {
                    col.insert("format".into(), json!(f));
                }
                if c.priority != 0 {
                    col.insert("priority".into(), json!(c.priority));
                }
                Value::Object(col)
            })
            .collect();
        m.insert("additionalPrinterColumns".into(), Value::Array(cols));
    }
    if !v.selectable.is_empty() {
        let fields: Vec<Value> = v
            .selectable
            .iter()
            .map(|p| json!({"jsonPath": p}))
            .collect();
        m.insert("selectableFields".into(), Value::Array(fields));
    }
    Value::Object(m)
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

fn kind_version(item: &Item, found: &FoundKind, source: &Source) -> Result<KindVersion, Error> {
    let origin = found.origin.clone();
    let mut b = SchemaBuilder {
        source,
        package: &found.package,
        types: BTreeMap::new(),
        stack: Vec::new(),
    };
    let root = match &item.kind {
        ItemKind::Struct(s)
            if found.roots.first().map(String::as_str) == Some(&*s.ident.to_string())
                && item.markers.iter().any(|m| m.name.starts_with("genclient")) =>
        {
            b.build_struct(item, s, true)?
        }
        _ => b.kube_derive_root(found)?,
    };
    let mut root = root;
    add_type_meta(&mut root);
    let types = Types::new(b.types.values());
    let schema = schema::root_schema(&root, &types);
    let kind = &found.kind;
    let mut v = KindVersion {
        group: found.group.clone(),
        version: found.version.clone(),
        kind: kind.names.kind.clone(),
        list_kind: kind.names.list_kind.clone(),
        plural: kind.names.plural.clone(),
        singular: kind.names.singular.clone(),
        scope: kind.scope,
        short_names: kind.names.short_names.clone(),
        categories: kind.names.categories.clone(),
        storage: false,
        served: true,
        deprecated: None,
        status: kind.status_subresource,
        scale: kind.scale.clone(),
        columns: kind.printer_columns.clone(),
        selectable: kind.selectable_fields.clone(),
        metadata: CrdMetadata::default(),
        schema,
        origin,
        item: item.clone(),
        package: found.package.clone(),
    };
    if item.derives("CustomResource") {
        // kube-derive's attributes say it (storage defaults to true there, as in kube-derive).
        v.served = kind.served;
        v.storage = kind.storage;
        if kind.deprecated {
            v.deprecated = Some(kind.deprecation_warning.clone());
        }
    }
    if v.singular.is_empty() {
        v.singular = v.kind.to_lowercase();
    }
    if v.list_kind.is_empty() {
        v.list_kind = format!("{}List", v.kind);
    }
    let list_kind = item
        .markers
        .iter()
        .any(|m| m.name == "kubegen:resource:listKind");
    for m in &item.markers {
        resource_marker(m, item, &mut v)?;
    }
    if !list_kind && !item.derives("CustomResource") {
        // controller-gen's rule, after `+kubegen:resource:kind=` named the kind.
        v.list_kind = format!("{}List", v.kind);
    }
    Ok(v)
}

/// Applies one root-type marker to `v`; other markers are left alone.
fn resource_marker(m: &Marker, item: &Item, v: &mut KindVersion) -> Result<(), Error> {
    let bad = |problem: String, fix: &str| m.error(&item.file, problem, fix.to_owned());
    // `+family:key=v,key=v`: the marker reader split the text at its first `=`, so the
    // arguments are read from the whole marker after the family's prefix.
    let args = |family: &str| {
        let text = m.text();
        let rest = text
            .strip_prefix(&format!("+{family}:"))
            .unwrap_or_default();
        schema::resource_args(rest).map_err(|e| m.error(&item.file, e.problem, e.fix))
    };
    match m.name.as_str() {
        "kubebuilder:storageversion" => v.storage = true,
        "kubebuilder:unservedversion" => v.served = false,
        "kubebuilder:deprecatedversion" => v.deprecated = Some(None),
        "kubebuilder:subresource:status" => v.status = true,
        "kubegen:resource:listKind" => v.list_kind = m.value.clone().unwrap_or_default(),
        "kubegen:resource:kind" => v.kind = m.value.clone().unwrap_or_default(),
        name if name.starts_with("kubebuilder:resource:") => {
            for (k, val) in args("kubebuilder:resource")? {
                resource_arg(&k, &val, v).map_err(|(p, f)| bad(p, f))?;
            }
        }
        name if name.starts_with("kubebuilder:deprecatedversion:") => {
            let mut warning = None;
            for (k, val) in args("kubebuilder:deprecatedversion")? {
                if k != "warning" {
                    return Err(bad(
                        format!("`+kubebuilder:deprecatedversion` has no argument `{k}`"),
                        "write `+kubebuilder:deprecatedversion:warning=\"...\"`",
                    ));
                }
                warning = Some(val);
            }
            v.deprecated = Some(warning);
        }
        name if name.starts_with("kubebuilder:subresource:scale:") => {
            let mut scale = Scale {
                spec_replicas_path: String::new(),
                status_replicas_path: String::new(),
                label_selector_path: None,
            };
            for (k, val) in args("kubebuilder:subresource:scale")? {
                match k.as_str() {
                    "specpath" => scale.spec_replicas_path = val,
                    "statuspath" => scale.status_replicas_path = val,
                    "selectorpath" => scale.label_selector_path = Some(val),
                    other => {
                        return Err(bad(
                            format!("the scale marker has no argument `{other}`"),
                            "use specpath=, statuspath= and selectorpath=",
                        ))
                    }
                }
            }
            if scale.spec_replicas_path.is_empty() || scale.status_replicas_path.is_empty() {
                return Err(bad("the scale marker needs specpath and statuspath".into(), "write `+kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas`"));
            }
            v.scale = Some(scale);
        }
        name if name.starts_with("kubebuilder:printcolumn:") => {
            let mut c = PrinterColumn {
                name: String::new(),
                type_: String::new(),
                format: None,
                description: None,
                priority: 0,
                json_path: String::new(),
            };
            for (k, val) in args("kubebuilder:printcolumn")? {
                match k.as_str() {
                    "name" => c.name = val,
                    "type" => c.type_ = val,
                    "JSONPath" => c.json_path = val,
                    "description" => c.description = Some(val),
                    "format" => c.format = Some(val),
                    "priority" => {
                        c.priority = val.parse().map_err(|_| {
                            bad(
                                format!("priority={val} is not an integer"),
                                "write priority=1",
                            )
                        })?
                    }
                    other => {
                        return Err(bad(
                            format!("printcolumn has no argument `{other}`"),
                            "use name=, type=, JSONPath=, description=, format=, priority=",
                        ))
                    }
                }
            }
            if c.name.is_empty() || c.type_.is_empty() || c.json_path.is_empty() {
                return Err(bad("a printcolumn needs name, type and JSONPath".into(), "write `+kubebuilder:printcolumn:name=\"Ready\",type=\"string\",JSONPath=\".status.ready\"`"));
            }
            v.columns.push(c);
        }
        name if name.starts_with("kubebuilder:metadata:") => {
            let text = m.text();
            let rest = text
                .strip_prefix("+kubebuilder:metadata:")
                .unwrap_or_default();
            let args = metadata::metadata_args(rest).map_err(|(p, f)| bad(p, &f))?;
            for (key, entries) in args {
                let into = match key.as_str() {
                    "annotations" => &mut v.metadata.annotations,
                    "labels" => &mut v.metadata.labels,
                    other => {
                        return Err(bad(
                            format!("`+kubebuilder:metadata` has no argument `{other}`"),
                            "write `+kubebuilder:metadata:annotations=\"key=value\"` or `+kubebuilder:metadata:labels=\"key=value\"`",
                        ))
                    }
                };
                for entry in entries {
                    let Some((k, val)) = entry.split_once('=') else {
                        return Err(bad(
                            format!(
                                "{} {entry:?} is not in 'xxx=xxx' format",
                                &key[..key.len() - 1]
                            ),
                            "write the entry as \"key=value\"",
                        ));
                    };
                    into.insert(k.to_owned(), val.to_owned());
                }
            }
        }
        name if name.starts_with("kubebuilder:selectablefield:") => {
            for (k, val) in args("kubebuilder:selectablefield")? {
                if k != "JSONPath" {
                    return Err(bad(
                        format!("selectablefield has no argument `{k}`"),
                        "write `+kubebuilder:selectablefield:JSONPath=\".spec.color\"`",
                    ));
                }
                v.selectable.push(val);
            }
        }
        name if name.starts_with("kubebuilder:subresource")
            || name.starts_with("kubegen:resource") =>
        {
            return Err(bad(format!("unknown marker `{}`", m.text()), "use +kubebuilder:subresource:status or +kubebuilder:subresource:scale:specpath=,statuspath=,selectorpath="));
        }
        _ => {}
    }
    Ok(())
}

fn resource_arg(k: &str, val: &str, v: &mut KindVersion) -> Result<(), (String, &'static str)> {
    let list = |s: &str| {
        s.split(';')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    };
    match k {
        "path" => v.plural = val.to_owned(),
        "singular" => v.singular = val.to_owned(),
        "shortName" => v.short_names = list(val),
        "categories" => v.categories = list(val),
        "scope" => {
            v.scope = match val {
                "Namespaced" => Scope::Namespaced,
                "Cluster" => Scope::Cluster,
                other => {
                    return Err((
                        format!("scope={other} is not a scope"),
                        "write scope=Namespaced or scope=Cluster",
                    ))
                }
            }
        }
        other => {
            return Err((
                format!("`+kubebuilder:resource` has no argument `{other}`"),
                "use path=, singular=, scope=, shortName=, categories=",
            ))
        }
    }
    Ok(())
}

/// Builds the model types of one kind version from the package's Rust items.
struct SchemaBuilder<'a> {
    source: &'a Source,
    package: &'a [String],
    types: BTreeMap<String, TypeDef>,
    stack: Vec<String>,
}

impl SchemaBuilder<'_> {
    fn find(&self, name: &str) -> Option<&Item> {
        self.source
            .items
            .iter()
            .find(|i| i.package == self.package && i.name() == name)
    }

    /// kube-derive's root: apiVersion, kind, metadata, spec (the derive's struct) and
    /// status (its `status = "..."` type), as kube-derive serializes it.
    fn kube_derive_root(&mut self, found: &FoundKind) -> Result<StructDef, Error> {
        let mut fields = vec![plain_field("metadata", Ty::ObjectMeta)];
        for (i, name) in found.roots.iter().enumerate() {
            let Some(item) = self.find(name) else {
                continue;
            };
            let ItemKind::Struct(s) = &item.kind else {
                continue;
            };
            let item = item.clone();
            let s = s.clone();
            let def = self.build_struct(&item, &s, false)?;
            let ty_name = def.name.clone();
            self.types.insert(ty_name.clone(), TypeDef::Struct(def));
            let mut f = plain_field(if i == 0 { "spec" } else { "status" }, Ty::Named(ty_name));
            f.required = i == 0;
            f.optional = i != 0;
            fields.push(f);
        }
        Ok(StructDef {
            name: found.kind.names.kind.clone(),
            existing: None,
            doc: None,
            origin: String::new(),
            fields,
            unknown_fields: None,
            schema: SchemaExtra::default(),
        })
    }

    fn build_struct(
        &mut self,
        item: &Item,
        s: &syn::ItemStruct,
        root: bool,
    ) -> Result<StructDef, Error> {
        let name = s.ident.to_string();
        self.stack.push(name.clone());
        let result = self.struct_fields(item, s, root);
        self.stack.pop();
        let (fields, unknown_fields) = result?;
        let mut type_markers = MarkerSet::default();
        for (i, m) in item.markers.iter().enumerate() {
            if root && is_resource_marker(&m.name) {
                continue;
            }
            apply_marker(&mut type_markers, m, i, item)?;
        }
        Ok(StructDef {
            name,
            existing: None,
            doc: item.doc.as_ref().map(|d| description(d)),
            origin: String::new(),
            fields,
            unknown_fields,
            schema: type_markers.extra,
        })
    }

    /// A newtype (`struct Width(i64)`, serialized as its field, like Go's
    /// `type Width int64`): the field's schema with the type's markers applied. The model
    /// has no alias type, so it is a struct without fields whose extras turn the object
    /// schema into the field's.
    fn build_newtype(&mut self, item: &Item, s: &syn::ItemStruct) -> Result<StructDef, Error> {
        let name = s.ident.to_string();
        let Some(field) = newtype_field(s) else {
            return self.build_struct(item, s, false);
        };
        self.stack.push(name.clone());
        let inner = self.map_type(&field.ty, item, field.ty.span_start(), false);
        self.stack.pop();
        let types = Types::new(self.types.values());
        let mut schema = schema::type_schema(&inner?, &types);
        let mut set = MarkerSet::default();
        for (i, m) in item.markers.iter().enumerate() {
            apply_marker(&mut set, m, i, item)?;
        }
        schema::apply(&mut schema, &set.extra);
        Ok(StructDef {
            name,
            existing: None,
            doc: item.doc.as_ref().map(|d| description(d)),
            origin: String::new(),
            fields: Vec::new(),
            unknown_fields: None,
            schema: schema::diff(&schema, &json!({"type": "object"}), &Ty::Json),
        })
    }

    #[allow(clippy::type_complexity)]
    fn struct_fields(
        &mut self,
        item: &Item,
        s: &syn::ItemStruct,
        root: bool,
    ) -> Result<(Vec<Field>, Option<String>), Error> {
        let container = serde_attrs(&s.attrs, item)?;
        let syn::Fields::Named(named) = &s.fields else {
            return Err(item.error_at(
                s.ident.span(),
                format!(
                    "{} has no named fields, so it has no object schema",
                    s.ident
                ),
                "give the struct named fields (kubegen crd maps each to a property)",
            ));
        };
        let mut fields = Vec::new();
        let mut unknown = None;
        for f in &named.named {
            let Some(ident) = &f.ident else { continue };
            let attrs = serde_attrs(&f.attrs, item)?;
            let (field_markers, doc) = markers::read(&f.attrs, &item.file)?;
            let rust_name = ident.to_string();
            let bare = rust_name
                .strip_prefix("r#")
                .unwrap_or(&rust_name)
                .to_owned();
            let json_name = match (&attrs.rename, &container.rename_all) {
                (Some(r), _) => r.clone(),
                (None, Some(rule)) => convert_case(rule, &bare).unwrap_or(bare),
                (None, None) => bare,
            };
            let mut set = MarkerSet::default();
            for (i, m) in field_markers.iter().enumerate() {
                apply_marker(&mut set, m, i, item)?;
            }
            let (inner, optional, nullable) = top_level(&f.ty);
            if attrs.flatten {
                if let Some(Ty::Map(v)) = self.try_map_type(inner) {
                    if matches!(*v, Ty::Json) {
                        unknown = Some(rust_name.clone());
                        continue;
                    }
                }
            }
            if attrs.skip {
                continue;
            }
            let span = f.ty.span_start();
            let ty = self.map_type(inner, item, span, root && json_name == "metadata")?;
            let ty = match (&ty, json_name.as_str(), root) {
                (Ty::External(p), "apiVersion", true) if p.contains("ApiVersion") => Ty::ApiVersion,
                (Ty::External(p), "kind", true) if p.contains("Kind") => Ty::KindField,
                _ => ty,
            };
            if let Ty::External(p) = &ty {
                if schema::external_schema(p).is_none() {
                    return Err(Error::in_source(
                        &item.file,
                        span.line,
                        span.column + 1,
                        format!("kubegen crd knows no schema for `{p}` (field `{json_name}`)"),
                        "use a type of this package, a standard one (String, integers, f64, bool, Vec, BTreeMap<String, _>, IntOrString, Quantity, Time, serde_json::Value), or serde_json::Value with +kubebuilder:validation:Schemaless",
                    ));
                }
            }
            let required = set
                .required
                .unwrap_or(!optional && !attrs.default && set.default.is_none());
            let mut field = Field {
                json_name: json_name.clone(),
                rust_name,
                ty,
                doc: doc.as_deref().map(description),
                optional,
                required,
                nullable: nullable || set.nullable,
                default: set.default.clone(),
                flatten: attrs.flatten,
                skip: false,
                schema: set.extra.clone(),
            };
            if set.schemaless {
                // An empty schema, plus what the field's other markers say (controller-gen
                // applies them, `+kubebuilder:pruning:PreserveUnknownFields` included,
                // to the empty schema).
                field.ty = Ty::Json;
                field
                    .schema
                    .set
                    .entry("x-kubernetes-preserve-unknown-fields".into())
                    .or_insert(Value::Null);
            }
            if matches!(field.ty, Ty::Vec(_)) && field.default == Some(json!({})) {
                // controller-gen's literal `{}` is an empty map; on a list it means `[]`.
                field.default = Some(json!([]));
            }
            check_marker_types(&field, &set, &field_markers, item, &self.types)?;
            fields.push(field);
        }
        Ok((fields, unknown))
    }

    fn try_map_type(&self, ty: &syn::Type) -> Option<Ty> {
        let (name, args) = last_segment(ty)?;
        if matches!(name.as_str(), "BTreeMap" | "HashMap" | "IndexMap") && args.len() == 2 {
            let v = last_segment(args[1])?.0;
            if v == "Value" {
                return Some(Ty::Map(Box::new(Ty::Json)));
            }
        }
        None
    }

    fn map_type(
        &mut self,
        ty: &syn::Type,
        item: &Item,
        span: proc_macro2::LineColumn,
        metadata: bool,
    ) -> Result<Ty, Error> {
        let err = |problem: String, fix: &str| {
            Error::in_source(
                &item.file,
                span.line,
                span.column + 1,
                problem,
                fix.to_owned(),
            )
        };
        if let syn::Type::Reference(r) = ty {
            return self.map_type(&r.elem, item, span, metadata);
        }
        let Some((name, args)) = last_segment(ty) else {
            return Err(err(
                format!("`{}` has no schema", ty.to_token_stream()),
                "use a named type",
            ));
        };
        let arg = |i: usize| args.get(i).copied();
        Ok(match name.as_str() {
            "String" | "str" => Ty::String,
            "bool" => Ty::Bool,
            "i32" => Ty::I32,
            "i64" => Ty::I64,
            "Number" => Ty::Number,
            "Value" => Ty::Json,
            "DateTime" | "Time" | "MicroTime" => Ty::DateTime,
            "IntOrString" => Ty::IntOrString,
            "Condition" => Ty::Condition,
            "ObjectMeta" if metadata => Ty::ObjectMeta,
            "ObjectMeta" => {
                return Err(err(
                    "ObjectMeta is only allowed as the root's `metadata`".into(),
                    "use a struct of your own for nested metadata, or serde_json::Value",
                ))
            }
            "ApiVersion" | "Kind" if !args.is_empty() => Ty::External(name.clone()),
            "Option" => match arg(0) {
                Some(inner) => Ty::Option(Box::new(self.map_type(inner, item, span, false)?)),
                None => return Err(err("Option without a type".into(), "write Option<T>")),
            },
            "Box" | "Arc" | "Rc" => match arg(0) {
                Some(inner) => self.map_type(inner, item, span, metadata)?,
                None => return Err(err(format!("{name} without a type"), "write Box<T>")),
            },
            "Vec" => match arg(0) {
                Some(inner) => Ty::Vec(Box::new(self.map_type(inner, item, span, false)?)),
                None => return Err(err("Vec without a type".into(), "write Vec<T>")),
            },
            "BTreeMap" | "HashMap" | "IndexMap" => {
                let key = arg(0).and_then(last_segment).map(|(n, _)| n);
                if key.as_deref() != Some("String") {
                    return Err(err(
                        format!("map keys of `{}` are not strings", ty.to_token_stream()),
                        "use String keys: JSON object keys are strings",
                    ));
                }
                match arg(1) {
                    Some(v) => Ty::Map(Box::new(self.map_type(v, item, span, false)?)),
                    None => {
                        return Err(err(
                            "a map without a value type".into(),
                            "write BTreeMap<String, T>",
                        ))
                    }
                }
            }
            other => {
                if let Some(found) = self.find(other).cloned() {
                    if self.stack.iter().any(|s| s == other) {
                        return Err(err(
                            format!(
                                "`{other}` contains itself ({} -> {other}); CRD schemas cannot recurse",
                                self.stack.join(" -> ")
                            ),
                            "break the cycle (e.g. serde_json::Value with +kubebuilder:validation:Schemaless at the recursive field)",
                        ));
                    }
                    if let ItemKind::Enum(e) = &found.kind {
                        let has_data = e
                            .variants
                            .iter()
                            .any(|v| !matches!(v.fields, syn::Fields::Unit));
                        let has_enum_marker = found.markers.iter().any(|m| {
                            m.name == "kubebuilder:validation:Enum"
                                || m.name == "kubegen:schema:enum"
                        });
                        if has_data && !has_enum_marker {
                            // serde's externally tagged shape mixes strings and objects,
                            // which no structural schema can type: keep any JSON.
                            return Ok(Ty::Json);
                        }
                    }
                    if !self.types.contains_key(other) {
                        let def = match &found.kind {
                            ItemKind::Struct(s) if newtype_field(s).is_some() => {
                                TypeDef::Struct(self.build_newtype(&found, s)?)
                            }
                            ItemKind::Struct(s) => {
                                TypeDef::Struct(self.build_struct(&found, s, false)?)
                            }
                            ItemKind::Enum(e) => TypeDef::Enum(enum_def(&found, e)?),
                        };
                        self.types.insert(other.to_owned(), def);
                    }
                    Ty::Named(other.to_owned())
                } else {
                    Ty::External(ty.to_token_stream().to_string().replace(' ', ""))
                }
            }
        })
    }
}

trait SpanStart {
    fn span_start(&self) -> proc_macro2::LineColumn;
}

impl<T: syn::spanned::Spanned> SpanStart for T {
    fn span_start(&self) -> proc_macro2::LineColumn {
        self.span().start()
    }
}

/// What controller-gen writes for an embedded `TypeMeta`: `apiVersion` and `kind` with
/// their standard descriptions, added when the root type does not declare them (k8s-openapi
/// style types write them from constants, not fields).
fn add_type_meta(root: &mut StructDef) {
    const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object.\nServers should convert recognized schemas to the latest internal value, and\nmay reject unrecognized values.\nMore info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
    const KIND: &str = "Kind is a string value representing the REST resource this object represents.\nServers may infer this from the endpoint the client submits requests to.\nCannot be updated.\nIn CamelCase.\nMore info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
    for (i, (json, ty, doc)) in [
        ("apiVersion", Ty::ApiVersion, API_VERSION),
        ("kind", Ty::KindField, KIND),
    ]
    .into_iter()
    .enumerate()
    {
        if !root.fields.iter().any(|f| f.json_name == json) {
            let mut f = plain_field(json, ty);
            f.doc = Some(doc.to_owned());
            root.fields.insert(i.min(root.fields.len()), f);
        }
    }
}

fn plain_field(json: &str, ty: Ty) -> Field {
    Field {
        json_name: json.to_owned(),
        rust_name: json.to_owned(),
        ty,
        doc: None,
        optional: false,
        required: false,
        nullable: false,
        default: None,
        flatten: false,
        skip: false,
        schema: SchemaExtra::default(),
    }
}

/// The one field of a newtype struct (`struct Width(i64)`), which serde writes as the
/// field's value.
fn newtype_field(s: &syn::ItemStruct) -> Option<&syn::Field> {
    match &s.fields {
        syn::Fields::Unnamed(f) if f.unnamed.len() == 1 => f.unnamed.first(),
        _ => None,
    }
}

/// The type inside a field's `Option`/`Nullable`, and whether it was one.
fn top_level(ty: &syn::Type) -> (&syn::Type, bool, bool) {
    if let Some(inner) = option_inner(ty) {
        return (inner, true, false);
    }
    if let Some((name, args)) = last_segment(ty) {
        if name == "Nullable" && args.len() == 1 {
            return (args[0], true, true);
        }
    }
    (ty, false, false)
}

/// The last path segment's name and its type arguments.
fn last_segment(ty: &syn::Type) -> Option<(String, Vec<&syn::Type>)> {
    let syn::Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    let args = match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((seg.ident.to_string(), args))
}

/// A doc comment's text (markers already removed) -> the description.
fn description(doc: &str) -> String {
    let lines: Vec<&str> = doc.split('\n').collect();
    kubegen_templates::docs::unescape_lines(&lines)
}

/// Root-type markers that describe the resource, not the schema.
fn is_resource_marker(name: &str) -> bool {
    name.starts_with("genclient")
        || name.starts_with("kubebuilder:resource")
        || name.starts_with("kubebuilder:subresource")
        || name.starts_with("kubebuilder:printcolumn")
        || name.starts_with("kubebuilder:selectablefield")
        || name.starts_with("kubebuilder:metadata")
        || name.starts_with("kubebuilder:storageversion")
        || name.starts_with("kubebuilder:unservedversion")
        || name.starts_with("kubebuilder:deprecatedversion")
        || name.starts_with("kubebuilder:skipversion")
        || name.starts_with("kubebuilder:object")
        || name.starts_with("kubegen:resource")
        || name == "resourceName"
        || name.starts_with("k8s:")
}

/// Markers of other tools that kubegen crd leaves alone.
fn is_foreign_marker(name: &str) -> bool {
    name.starts_with("kubebuilder:rbac")
        || name.starts_with("kubebuilder:webhook")
        || name.starts_with("kubebuilder:object")
        || name.starts_with("kubebuilder:ac:")
        || name.starts_with("k8s:")
        || name.starts_with("genclient")
        || name.starts_with("operator-sdk")
        || name.starts_with("groupName")
        || name.starts_with("versionName")
        || name == "resourceName"
        || name == "kubebuilder:validation:Schemaless"
}

fn apply_marker(set: &mut MarkerSet, m: &Marker, index: usize, item: &Item) -> Result<(), Error> {
    match set.apply(&m.name, m.value.as_deref(), index) {
        Ok(true) => Ok(()),
        Ok(false) => {
            let known_family = m.name.starts_with("kubebuilder:") || m.name.starts_with("kubegen:");
            if known_family && !is_foreign_marker(&m.name) && !is_resource_marker(&m.name) {
                Err(m.error(
                    &item.file,
                    format!("unknown marker `{}`", m.text()),
                    "check the spelling against controller-gen's markers (kubebuilder:validation:*, kubebuilder:default, kubebuilder:pruning:PreserveUnknownFields) or kubegen's (+kubegen:schema:<key>=<JSON>)",
                ))
            } else {
                Ok(())
            }
        }
        Err(e) => Err(m.error(&item.file, e.problem, e.fix)),
    }
}

/// A marker on a field whose type it cannot apply to (`Pattern` on an integer).
fn check_marker_types(
    field: &Field,
    set: &MarkerSet,
    field_markers: &[Marker],
    item: &Item,
    types: &BTreeMap<String, TypeDef>,
) -> Result<(), Error> {
    let types = Types::new(types.values());
    let schema = schema::field_schema(field, &types);
    let ty = schema.get("type").and_then(Value::as_str);
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    for (key, index) in &set.sources {
        let allowed: &[&str] = match key.as_str() {
            "pattern" | "minLength" | "maxLength" => &["string"],
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                &["integer", "number"]
            }
            "minItems"
            | "maxItems"
            | "uniqueItems"
            | "x-kubernetes-list-type"
            | "x-kubernetes-list-map-keys" => &["array"],
            "minProperties" | "maxProperties" => &["object"],
            _ => continue,
        };
        let ok = match ty {
            Some(t) => allowed.contains(&t),
            None => int_or_string && allowed.iter().any(|a| matches!(*a, "string" | "integer")),
        };
        if !ok {
            if let Some(m) = field_markers.get(*index) {
                return Err(m.error(
                    &item.file,
                    format!(
                        "`{}` applies to {} values, but field `{}` is {}",
                        m.text(),
                        allowed.join(" or "),
                        field.json_name,
                        ty.map(|t| format!("of type {t}")).unwrap_or_else(|| "untyped".into())
                    ),
                    "move the marker to a field of a fitting type, or use the items: form for list elements",
                ));
            }
        }
    }
    Ok(())
}

/// An enum -> a string enum schema: its `Enum` marker's values, or its unit variants'
/// wire names (serde's `rename`/`rename_all`).
fn enum_def(item: &Item, e: &syn::ItemEnum) -> Result<EnumDef, Error> {
    let mut set = MarkerSet::default();
    for (i, m) in item.markers.iter().enumerate() {
        apply_marker(&mut set, m, i, item)?;
    }
    let doc = item.doc.as_ref().map(|d| description(d));
    if let Some(Value::Array(values)) = set.extra.set.get("enum") {
        let variants = values
            .iter()
            .map(|v| Variant {
                name: String::new(),
                value: v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string()),
            })
            .collect();
        return Ok(EnumDef {
            name: e.ident.to_string(),
            doc,
            variants,
            other_variant: String::new(),
        });
    }
    let container = serde_attrs(&e.attrs, item)?;
    let mut variants = Vec::new();
    for v in &e.variants {
        if !matches!(v.fields, syn::Fields::Unit) {
            return Err(item.error_at(
                v.ident.span(),
                format!("variant {} of {} holds data; kubegen crd maps enums of unit variants to string enums", v.ident, e.ident),
                "use unit variants, or give the enum a `+kubebuilder:validation:Enum=a;b` marker",
            ));
        }
        let attrs = serde_attrs(&v.attrs, item)?;
        let name = v.ident.to_string();
        let value = match (&attrs.rename, &container.rename_all) {
            (Some(r), _) => r.clone(),
            (None, Some(rule)) => convert_case(rule, &name).unwrap_or(name.clone()),
            (None, None) => name.clone(),
        };
        if !attrs.skip {
            variants.push(Variant { name, value });
        }
    }
    Ok(EnumDef {
        name: e.ident.to_string(),
        doc,
        variants,
        other_variant: String::new(),
    })
}
