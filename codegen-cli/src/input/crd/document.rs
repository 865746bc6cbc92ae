//! One CustomResourceDefinition document, read from YAML into typed fields.
//!
//! Accepts `apiextensions.k8s.io/v1` only: a `v1beta1` CRD is an error that says so (its
//! schema lives elsewhere and its defaults differ). Reads group, names, scope, and per
//! version: served/storage/deprecation, the schema, subresources and printer columns.
//! `spec.conversion.strategy` decides whether conversions between versions are generated
//! (`Webhook`); keys this generator has no use for (the webhook's client config,
//! `preserveUnknownFields`, `status`) are ignored, since they do not shape the Rust types.

use std::path::{Path, PathBuf};

use serde_yaml::Value as Yaml;

use super::schema::{boolean, describe, string, strings, Schema};
use crate::error::Error;

/// A parsed CRD.
#[derive(Debug, Clone, PartialEq)]
pub struct Crd {
    /// The file it came from.
    pub file: PathBuf,
    /// Index of the YAML document in the file (0-based).
    pub document: usize,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.annotations` and `metadata.labels`.
    pub metadata: kubegen_templates::model::CrdMetadata,
    /// `spec.group`.
    pub group: String,
    /// `spec.names`.
    pub names: kubegen_templates::model::Names,
    /// `spec.scope`.
    pub scope: kubegen_templates::model::Scope,
    /// `spec.versions`, in order.
    pub versions: Vec<CrdVersion>,
    /// `spec.conversion.strategy` is `Webhook` (`None`, the default, rewrites only
    /// `apiVersion`).
    pub conversion_webhook: bool,
}

/// One entry of `spec.versions`.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdVersion {
    /// `name`.
    pub name: String,
    /// `served`.
    pub served: bool,
    /// `storage`.
    pub storage: bool,
    /// `deprecated`.
    pub deprecated: bool,
    /// `deprecationWarning`.
    pub deprecation_warning: Option<String>,
    /// `schema.openAPIV3Schema`.
    pub schema: Schema,
    /// `schema.openAPIV3Schema` as JSON text, as the API server would store it.
    pub schema_json: Option<String>,
    /// `subresources.status` present.
    pub status_subresource: bool,
    /// `subresources.scale`.
    pub scale: Option<kubegen_templates::model::Scale>,
    /// `additionalPrinterColumns`.
    pub printer_columns: Vec<kubegen_templates::model::PrinterColumn>,
    /// `selectableFields[].jsonPath`.
    pub selectable_fields: Vec<String>,
}

/// Parses every document of a multi-document YAML file. Empty documents are skipped;
/// every other document must be an apiextensions.k8s.io/v1 CRD (or a `List` of them)
/// that kube-apiserver would accept ([`validate`](super::validate)). A file without any
/// CRD is an error. Every error inside a document names the document's index (0-based).
pub fn parse_file(file: &Path, text: &str) -> Result<Vec<Crd>, Error> {
    let mut crds = Vec::new();
    let mut lists = 0;
    for (index, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value: Yaml = serde::Deserialize::deserialize(doc).map_err(|e| {
            let place = e
                .location()
                .map(|l| format!(" at line {}, column {}", l.line(), l.column()))
                .unwrap_or_default();
            Error::at(
                format!("document {index}"),
                format!("not valid YAML{place}: {e}"),
                "fix the YAML syntax",
            )
            .in_file(file)
        })?;
        if value.is_null() {
            continue;
        }
        let in_document = |e: Error| in_document(e, index).in_file(file);
        if value.get("kind").and_then(Yaml::as_str) == Some("List") {
            lists += 1;
            let items = match get(&value, "items") {
                None => &[][..],
                Some(items) => items.as_sequence().map(Vec::as_slice).ok_or_else(|| {
                    in_document(Error::at(
                        "items",
                        format!("expected a list, found {}", describe(items)),
                        "write the List's `items` as a list of CustomResourceDefinitions",
                    ))
                })?,
            };
            for (i, item) in items.iter().enumerate() {
                crds.push(
                    parse_crd(item, file, index, &format!("items[{i}].")).map_err(in_document)?,
                );
            }
            continue;
        }
        crds.push(parse_crd(&value, file, index, "").map_err(in_document)?);
    }
    if crds.is_empty() {
        let problem = if lists == 0 {
            "the file is empty: no YAML document in it holds a CustomResourceDefinition"
        } else {
            "the file holds only empty Lists: no CustomResourceDefinition"
        };
        return Err(Error::at(
            "",
            problem,
            "remove the file from the inputs, or put a CustomResourceDefinition in it",
        )
        .in_file(file));
    }
    Ok(crds)
}

/// Puts `document N: ` before an error's YAML path.
pub fn in_document(mut e: Error, index: usize) -> Error {
    e.yaml_path = if e.yaml_path.is_empty() {
        format!("document {index}")
    } else {
        format!("document {index}: {}", e.yaml_path)
    };
    e
}

fn get<'a>(v: &'a Yaml, key: &str) -> Option<&'a Yaml> {
    v.get(key).filter(|v| !v.is_null())
}

fn required<'a>(v: &'a Yaml, key: &str, path: &str, fix: &str) -> Result<&'a Yaml, Error> {
    get(v, key).ok_or_else(|| Error::at(format!("{path}{key}"), format!("`{key}` is missing"), fix))
}

fn parse_crd(v: &Yaml, file: &Path, document: usize, prefix: &str) -> Result<Crd, Error> {
    if !v.is_mapping() {
        return Err(Error::at(
            prefix.trim_end_matches('.'),
            format!("expected a CustomResourceDefinition, found {}", describe(v)),
            "give kubegen CustomResourceDefinition documents",
        ));
    }
    let api_version = string(
        required(
            v,
            "apiVersion",
            prefix,
            "set `apiVersion: apiextensions.k8s.io/v1`",
        )?,
        &format!("{prefix}apiVersion"),
    )?;
    let kind = string(
        required(v, "kind", prefix, "set `kind: CustomResourceDefinition`")?,
        &format!("{prefix}kind"),
    )?;
    if kind != "CustomResourceDefinition" {
        return Err(Error::at(
            format!("{prefix}kind"),
            format!("expected kind CustomResourceDefinition, found {kind:?}"),
            "pass only CRD files (or directories of them) to -f",
        ));
    }
    if api_version == "apiextensions.k8s.io/v1beta1" {
        return Err(Error::at(format!("{prefix}apiVersion"), "apiextensions.k8s.io/v1beta1 CRDs are not supported (removed in Kubernetes 1.22)", "convert the CRD to apiextensions.k8s.io/v1 (controller-gen `crd:crdVersions=v1`, or move `spec.validation` into each `spec.versions[].schema`)"));
    }
    if api_version != "apiextensions.k8s.io/v1" {
        return Err(Error::at(
            format!("{prefix}apiVersion"),
            format!("unsupported apiVersion {api_version:?}"),
            "use apiextensions.k8s.io/v1",
        ));
    }
    let name = get(v, "metadata")
        .and_then(|m| get(m, "name"))
        .and_then(Yaml::as_str)
        .unwrap_or_default()
        .to_owned();
    let metadata = crd_metadata(v, prefix)?;
    let spec_path = format!("{prefix}spec");
    let spec = required(v, "spec", prefix, "add the CRD's `spec`")?;
    let sp = format!("{spec_path}.");
    let group = string(
        required(
            spec,
            "group",
            &sp,
            "set `spec.group`, e.g. `samplecontroller.k8s.io`",
        )?,
        &format!("{sp}group"),
    )?;
    let names_v = required(
        spec,
        "names",
        &sp,
        "add `spec.names` with at least `kind` and `plural`",
    )?;
    let np = format!("{sp}names.");
    let kind_name = string(
        required(names_v, "kind", &np, "set `spec.names.kind`, e.g. `Foo`")?,
        &format!("{np}kind"),
    )?;
    let plural = string(
        required(
            names_v,
            "plural",
            &np,
            "set `spec.names.plural`, e.g. `foos`",
        )?,
        &format!("{np}plural"),
    )?;
    let singular = match get(names_v, "singular") {
        Some(s) => string(s, &format!("{np}singular"))?,
        None => kind_name.to_lowercase(),
    };
    let list_kind = match get(names_v, "listKind") {
        Some(s) => string(s, &format!("{np}listKind"))?,
        None => format!("{kind_name}List"),
    };
    let short_names = get(names_v, "shortNames")
        .map(|s| strings(s, &format!("{np}shortNames")))
        .transpose()?
        .unwrap_or_default();
    let categories = get(names_v, "categories")
        .map(|s| strings(s, &format!("{np}categories")))
        .transpose()?
        .unwrap_or_default();
    let scope = match get(spec, "scope")
        .map(|s| string(s, &format!("{sp}scope")))
        .transpose()?
        .as_deref()
    {
        Some("Namespaced") => kubegen_templates::model::Scope::Namespaced,
        Some("Cluster") => kubegen_templates::model::Scope::Cluster,
        Some(other) => {
            return Err(Error::at(
                format!("{sp}scope"),
                format!("unknown scope {other:?}"),
                "use `Namespaced` or `Cluster`",
            ))
        }
        None => {
            return Err(Error::at(
                format!("{sp}scope"),
                "`scope` is missing",
                "set `spec.scope: Namespaced` or `Cluster`",
            ))
        }
    };
    if get(spec, "validation").is_some() {
        return Err(Error::at(
            format!("{sp}validation"),
            "`spec.validation` is a v1beta1 field",
            "move the schema into each `spec.versions[].schema.openAPIV3Schema`",
        ));
    }
    let versions_v = required(
        spec,
        "versions",
        &sp,
        "list the served versions under `spec.versions`",
    )?;
    let seq = versions_v.as_sequence().ok_or_else(|| {
        Error::at(
            format!("{sp}versions"),
            format!("expected a list, found {}", describe(versions_v)),
            "write `spec.versions` as a list",
        )
    })?;
    let mut versions = Vec::new();
    for (i, ver) in seq.iter().enumerate() {
        versions.push(parse_version(ver, &format!("{sp}versions[{i}]"))?);
    }
    let conversion_webhook = match get(spec, "conversion").and_then(|c| get(c, "strategy")) {
        None => false,
        Some(strategy) => match string(strategy, &format!("{sp}conversion.strategy"))?.as_str() {
            "None" => false,
            "Webhook" => true,
            other => {
                return Err(Error::at(
                    format!("{sp}conversion.strategy"),
                    format!("unknown conversion strategy {other:?}"),
                    "use `None` or `Webhook`",
                ))
            }
        },
    };
    let crd = Crd {
        file: file.to_owned(),
        document,
        name,
        metadata,
        group,
        names: kubegen_templates::model::Names {
            kind: kind_name,
            plural,
            singular,
            list_kind,
            short_names,
            categories,
        },
        scope,
        versions,
        conversion_webhook,
    };
    super::validate::validate(&crd, prefix)?;
    super::validate::validate_rules(v, prefix)?;
    Ok(crd)
}

/// `metadata.annotations` and `metadata.labels`: maps of strings.
fn crd_metadata(v: &Yaml, prefix: &str) -> Result<kubegen_templates::model::CrdMetadata, Error> {
    let mut out = kubegen_templates::model::CrdMetadata::default();
    let Some(meta) = get(v, "metadata") else {
        return Ok(out);
    };
    for (key, into) in [
        ("annotations", &mut out.annotations),
        ("labels", &mut out.labels),
    ] {
        let path = format!("{prefix}metadata.{key}");
        let Some(map) = get(meta, key) else { continue };
        if map.is_null() {
            continue;
        }
        let map = map.as_mapping().ok_or_else(|| {
            Error::at(
                &path,
                format!("expected a map of strings, found {}", describe(map)),
                format!("write `metadata.{key}` as `key: value` lines"),
            )
        })?;
        for (k, val) in map {
            let k = string(k, &path)?;
            let val = string(val, &format!("{path}.{k}"))?;
            into.insert(k, val);
        }
    }
    Ok(out)
}

fn parse_version(v: &Yaml, path: &str) -> Result<CrdVersion, Error> {
    let p = format!("{path}.");
    let name = string(
        required(v, "name", &p, "set the version's `name`, e.g. `v1alpha1`")?,
        &format!("{p}name"),
    )?;
    let flag = |key: &str| {
        get(v, key)
            .map(|b| boolean(b, &format!("{p}{key}")))
            .transpose()
            .map(|b| b.unwrap_or(false))
    };
    let served = flag("served")?;
    let storage = flag("storage")?;
    let deprecated = flag("deprecated")?;
    let deprecation_warning = get(v, "deprecationWarning")
        .map(|s| string(s, &format!("{p}deprecationWarning")))
        .transpose()?;
    let schema_v = get(v, "schema").and_then(|s| get(s, "openAPIV3Schema"));
    let schema_json = schema_v
        .map(|s| {
            serde_json::to_string(s).map_err(|e| {
                Error::at(
                    format!("{p}schema.openAPIV3Schema"),
                    format!("the schema cannot be written as JSON: {e}"),
                    "use only string keys and JSON values in the schema",
                )
            })
        })
        .transpose()?;
    let schema = match schema_v {
        Some(s) => Schema::parse_root(s, &format!("{p}schema.openAPIV3Schema"))?,
        None if served => {
            return Err(Error::at(
                format!("{p}schema.openAPIV3Schema"),
                "a served version has no schema",
                "add `schema.openAPIV3Schema` (apiextensions.k8s.io/v1 requires one)",
            ));
        }
        None => Schema::default(),
    };
    let sub = get(v, "subresources");
    let status_subresource = sub
        .and_then(|s| get(s, "status").or_else(|| s.get("status")))
        .is_some();
    let scale = match sub.and_then(|s| get(s, "scale")) {
        Some(scale) => {
            let sp = format!("{p}subresources.scale.");
            Some(kubegen_templates::model::Scale {
                spec_replicas_path: string(
                    required(
                        scale,
                        "specReplicasPath",
                        &sp,
                        "set `specReplicasPath`, e.g. `.spec.replicas`",
                    )?,
                    &format!("{sp}specReplicasPath"),
                )?,
                status_replicas_path: string(
                    required(
                        scale,
                        "statusReplicasPath",
                        &sp,
                        "set `statusReplicasPath`, e.g. `.status.replicas`",
                    )?,
                    &format!("{sp}statusReplicasPath"),
                )?,
                label_selector_path: get(scale, "labelSelectorPath")
                    .map(|s| string(s, &format!("{sp}labelSelectorPath")))
                    .transpose()?,
            })
        }
        None => None,
    };
    let mut printer_columns = Vec::new();
    if let Some(cols) = get(v, "additionalPrinterColumns") {
        let cp = format!("{p}additionalPrinterColumns");
        let seq = cols.as_sequence().ok_or_else(|| {
            Error::at(
                &cp,
                format!("expected a list, found {}", describe(cols)),
                "write the columns as a list",
            )
        })?;
        for (i, c) in seq.iter().enumerate() {
            let cp = format!("{cp}[{i}].");
            let opt = |key: &str| {
                get(c, key)
                    .map(|s| string(s, &format!("{cp}{key}")))
                    .transpose()
            };
            let priority = match get(c, "priority") {
                Some(n) => n
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| {
                        Error::at(
                            format!("{cp}priority"),
                            format!("expected an integer, found {}", describe(n)),
                            "write a small integer (0 shows the column by default)",
                        )
                    })?,
                None => 0,
            };
            printer_columns.push(kubegen_templates::model::PrinterColumn {
                name: string(
                    required(c, "name", &cp, "name the column")?,
                    &format!("{cp}name"),
                )?,
                type_: string(
                    required(
                        c,
                        "type",
                        &cp,
                        "set the column `type` (string, integer, number, boolean, date)",
                    )?,
                    &format!("{cp}type"),
                )?,
                format: opt("format")?,
                description: opt("description")?,
                priority,
                json_path: string(
                    required(
                        c,
                        "jsonPath",
                        &cp,
                        "set the column `jsonPath`, e.g. `.spec.replicas`",
                    )?,
                    &format!("{cp}jsonPath"),
                )?,
            });
        }
    }
    let mut selectable_fields = Vec::new();
    if let Some(fields) = get(v, "selectableFields") {
        let fp = format!("{p}selectableFields");
        let seq = fields.as_sequence().ok_or_else(|| {
            Error::at(
                &fp,
                format!("expected a list, found {}", describe(fields)),
                "write `selectableFields` as a list of `{jsonPath: .spec.x}` entries",
            )
        })?;
        for (i, f) in seq.iter().enumerate() {
            let here = format!("{fp}[{i}].");
            selectable_fields.push(string(
                required(f, "jsonPath", &here, "set `jsonPath`, e.g. `.spec.color`")?,
                &format!("{here}jsonPath"),
            )?);
        }
    }
    Ok(CrdVersion {
        name,
        served,
        storage,
        deprecated,
        deprecation_warning,
        schema,
        schema_json,
        status_subresource,
        scale,
        printer_columns,
        selectable_fields,
    })
}
