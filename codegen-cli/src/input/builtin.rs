//! Built-in input: a description of Kubernetes' built-in API (a `BuiltinAPI` YAML
//! document) -> the model, with every kind a [`KindSource::External`] type of k8s-openapi.
//!
//! The description is data, checked in beside the crate it generates
//! (`kubernetes/api/builtin.yaml`), so `kubegen verify` can hold the generated built-in
//! clientset to it in CI. [`describe`] derives it from two sources:
//!
//! - k8s-openapi's own code: every `impl Resource for T` (group, version, kind, plural,
//!   scope), whether `T` also implements `ListableResource`, and whether `T` has a
//!   `status` field;
//! - a checked-in table of what k8s-openapi cannot say (`kubernetes/api/table.yaml`):
//!   verbs that differ from the default, scale subresources, extension methods (Pod
//!   eviction and binding), short names and categories.
//!
//! Defaults, as the API server serves built-in resources: a listable kind has every verb,
//! with `updateStatus`/`applyStatus` and the status subresource when its type has a
//! `status` field; a kind without a list type (the review kinds) has `create` only.
//! Subresource types (`Scale`, `Eviction`, `TokenRequest`) and meta/v1 types are not
//! kinds of their own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kubegen_templates::model::{
    ClientTags, ExtensionMethod, Kind, KindSource, Names, OpenApiDefinitions, OpenApiKind,
    ProtobufField, Scale, Scope, TypeRef, Verb, Version,
};
use kubegen_templates::names;
use serde::{Deserialize, Serialize};

use super::VersionPart;
use crate::error::Error;

/// The `kind` of a built-in API description document.
pub const DESCRIPTION_KIND: &str = "BuiltinAPI";
/// The `apiVersion` of a built-in API description document.
pub const DESCRIPTION_API_VERSION: &str = "kubegen.dev/v1alpha1";

/// A description of the built-in API: what [`read`] turns into the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Description {
    /// [`DESCRIPTION_API_VERSION`].
    pub api_version: String,
    /// [`DESCRIPTION_KIND`].
    pub kind: String,
    /// The k8s-openapi Kubernetes version module it was derived from (`v1_37`).
    pub kubernetes: String,
    /// The Rust path of k8s-openapi as the generated code names it.
    pub crate_path: String,
    /// Apply configurations: generated from Kubernetes' OpenAPI document when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_configurations: Option<ApplyConfigurationsDescription>,
    /// One entry per resource.
    pub resources: Vec<Resource>,
}

/// Where the built-in kinds' schemas come from, for their apply configurations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyConfigurationsDescription {
    /// Kubernetes' OpenAPI definitions as JSON, relative to the description file: an
    /// object of schemas by definition name, an OpenAPI v3 document
    /// (`components.schemas`) or a Swagger 2.0 one (`definitions`).
    pub openapi: String,
    /// Structural merge facts to lay over those schemas, relative to the description
    /// file (`hack/update-builtin-extensions.sh` writes them from a real kube-apiserver):
    /// `{"definitions": {name: {x-kubernetes-...: ..., "properties": {field: {...}}}}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<String>,
    /// The cargo feature of the mounting crate that turns them on; absent: always on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<String>,
}

/// One built-in resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resource {
    /// API group (`""` for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The type's path under the crate path (`api::apps::v1::Deployment`).
    pub path: String,
    /// The client verbs, in code-generator's names.
    pub verbs: Vec<String>,
    /// Whether the status subresource is served.
    #[serde(default)]
    pub status: bool,
    /// The scale subresource's paths, when served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<ScaleDescription>,
    /// Extension methods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<MethodDescription>,
    /// Short names (`po`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories (`all`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

/// The JSON paths of a scale subresource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScaleDescription {
    /// `.spec.replicas`.
    pub spec_replicas_path: String,
    /// `.status.replicas`.
    pub status_replicas_path: String,
    /// `.status.selector` or the label selector's path, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector_path: Option<String>,
}

/// An extension method (`+genclient:method=...`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MethodDescription {
    /// `CreateEviction`.
    pub name: String,
    /// `create`.
    pub verb: String,
    /// `eviction`.
    pub subresource: String,
    /// The input type's path under the crate path; absent: the kind itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The result type: a path under the crate path, `Scale`, or `Status` (the runtime's
    /// API status); absent: the kind itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// The checked-in table of facts k8s-openapi does not carry, keyed by
/// `<group>/<plural>` (`/pods` for the core group).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Table {
    /// Verbs of resources whose verbs differ from the default.
    #[serde(default)]
    pub verbs: BTreeMap<String, Vec<String>>,
    /// Resources with a scale subresource, and its paths.
    #[serde(default)]
    pub scale: BTreeMap<String, ScaleDescription>,
    /// Extension methods per resource.
    #[serde(default)]
    pub methods: BTreeMap<String, Vec<MethodDescription>>,
    /// Short names per resource.
    #[serde(default)]
    pub short_names: BTreeMap<String, Vec<String>>,
    /// Categories per resource.
    #[serde(default)]
    pub categories: BTreeMap<String, Vec<String>>,
    /// Resources left out, with the reason.
    #[serde(default)]
    pub skip: BTreeMap<String, String>,
}

/// Whether a parsed YAML document is a built-in API description.
pub fn is_description(doc: &serde_yaml::Value) -> bool {
    doc.get("kind").and_then(serde_yaml::Value::as_str) == Some(DESCRIPTION_KIND)
}

/// Reads a description file into version parts.
pub fn read(file: &Path, text: &str) -> Result<Vec<VersionPart>, Error> {
    let description: Description = serde_yaml::from_str(text).map_err(|e| {
        let place = e
            .location()
            .map(|l| format!(" at line {}, column {}", l.line(), l.column()))
            .unwrap_or_default();
        Error::at(
            "",
            format!("not a valid {DESCRIPTION_KIND} description{place}: {e}"),
            "regenerate it with hack/update-builtin-api.sh",
        )
        .in_file(file)
    })?;
    if description.api_version != DESCRIPTION_API_VERSION {
        return Err(Error::at(
            "apiVersion",
            format!("unsupported apiVersion {:?}", description.api_version),
            format!("use {DESCRIPTION_API_VERSION}"),
        )
        .in_file(file));
    }
    let openapi = match &description.apply_configurations {
        Some(ac) => Some(read_openapi(file, ac)?),
        None => None,
    };
    let mut by_gv: BTreeMap<(String, String), Vec<Kind>> = BTreeMap::new();
    for (i, r) in description.resources.iter().enumerate() {
        let place = format!("resources[{i}]");
        let mut kind = resource_kind(&description.crate_path, r)
            .map_err(|(what, problem)| {
                Error::at(format!("{place}.{what}"), problem, "fix the description")
            })
            .map_err(|e| e.in_file(file))?;
        if let Some((definitions, by_gvk)) = &openapi {
            kind.openapi = by_gvk
                .get(&(r.group.clone(), r.version.clone(), r.kind.clone()))
                .map(|name| OpenApiKind {
                    name: name.clone(),
                    definitions: definitions.clone(),
                });
        }
        by_gv
            .entry((r.group.clone(), r.version.clone()))
            .or_default()
            .push(kind);
    }
    Ok(by_gv
        .into_iter()
        .map(|((group, version), mut kinds)| {
            kinds.sort_by(|a, b| a.names.kind.cmp(&b.names.kind));
            VersionPart {
                group: group.clone(),
                version: Version {
                    module: names::module_name(&version),
                    name: version,
                    kinds,
                    types: Vec::new(),
                },
                origin: Error::at(format!("resources ({group})"), "", "").in_file(file),
            }
        })
        .collect())
}

/// Definitions by group, version and kind (`x-kubernetes-group-version-kind`).
type ByGvk = BTreeMap<(String, String, String), String>;

/// Reads the OpenAPI definitions an `applyConfigurations` stanza names.
fn read_openapi(
    file: &Path,
    ac: &ApplyConfigurationsDescription,
) -> Result<(Arc<OpenApiDefinitions>, ByGvk), Error> {
    let path = file
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(&ac.openapi);
    let fail = |problem: String| {
        Error::at(
            "applyConfigurations.openapi",
            problem,
            "point it, relative to this file, at Kubernetes' OpenAPI definitions as JSON",
        )
        .in_file(file)
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| fail(format!("{} is not JSON: {e}", path.display())))?;
    let schemas = doc
        .pointer("/components/schemas")
        .or_else(|| doc.get("definitions"))
        .unwrap_or(&doc)
        .as_object()
        .ok_or_else(|| fail(format!("{} holds no object of schemas", path.display())))?;
    let mut by_gvk = ByGvk::new();
    for (name, schema) in schemas {
        let gvks = schema
            .get("x-kubernetes-group-version-kind")
            .and_then(serde_json::Value::as_array);
        for g in gvks.into_iter().flatten() {
            let f = |k: &str| {
                g.get(k)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            by_gvk.insert((f("group"), f("version"), f("kind")), name.clone());
        }
    }
    let mut schemas: BTreeMap<String, serde_json::Value> = schemas
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(extensions) = &ac.extensions {
        let path = file
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(extensions);
        let fail = |problem: String| {
            Error::at(
                "applyConfigurations.extensions",
                problem,
                "regenerate it with hack/update-builtin-extensions.sh",
            )
            .in_file(file)
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
        let overlay: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| fail(format!("{} is not JSON: {e}", path.display())))?;
        let defs = overlay
            .get("definitions")
            .and_then(serde_json::Value::as_object)
            .ok_or_else(|| fail(format!("{} has no \"definitions\" object", path.display())))?;
        for (name, facts) in defs {
            if let Some(schema) = schemas.get_mut(name) {
                lay_over(schema, facts);
            }
        }
    }
    let definitions = OpenApiDefinitions {
        schemas,
        feature: ac.feature.clone(),
        protobuf: protobuf_messages(),
    };
    Ok((Arc::new(definitions), by_gvk))
}

/// The protobuf messages of the built-in kinds, from the table kubegen's runtime decodes
/// them by: the compact mirrors get generated decoders from it.
fn protobuf_messages() -> BTreeMap<String, Vec<ProtobufField>> {
    let table: serde_json::Value = match serde_json::from_str(kubegen_apimachinery::protobuf::TABLE)
    {
        Ok(t) => t,
        // The table is compiled in and checked by apimachinery's tests.
        Err(_) => return BTreeMap::new(),
    };
    let Some(messages) = table.get("messages").and_then(serde_json::Value::as_object) else {
        return BTreeMap::new();
    };
    messages
        .iter()
        .filter_map(|(name, fields)| {
            let fields = fields
                .as_array()?
                .iter()
                .map(|f| {
                    Some(ProtobufField {
                        number: f.get(0)?.as_u64()?,
                        json: f.get(1)?.as_str()?.to_owned(),
                        ty: f.get(2)?.as_str()?.to_owned(),
                        flags: f.get(3)?.as_str()?.to_owned(),
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            Some((name.clone(), fields))
        })
        .collect()
}

/// Adds `facts` (extension keys of a definition and of its properties) to `schema`.
fn lay_over(schema: &mut serde_json::Value, facts: &serde_json::Value) {
    let Some(facts) = facts.as_object() else {
        return;
    };
    for (key, value) in facts {
        if key == "properties" {
            let props = value.as_object().into_iter().flatten();
            for (prop, prop_facts) in props {
                if let Some(target) = schema.pointer_mut(&format!("/properties/{prop}")) {
                    lay_over(target, prop_facts);
                }
            }
        } else if let Some(m) = schema.as_object_mut() {
            m.insert(key.clone(), value.clone());
        }
    }
}

fn type_ref(crate_path: &str, text: &str) -> TypeRef {
    match text {
        "Scale" => TypeRef::Scale,
        "Status" => TypeRef::Path("::kubegen_runtime::errors::Status".to_owned()),
        path => TypeRef::Path(format!("{crate_path}::{path}")),
    }
}

fn resource_kind(crate_path: &str, r: &Resource) -> Result<Kind, (&'static str, String)> {
    let mut verbs = std::collections::BTreeSet::new();
    for v in &r.verbs {
        verbs.insert(Verb::parse(v).ok_or(("verbs", format!("unknown verb {v:?}")))?);
    }
    let mut methods = if r.scale.is_some() {
        ExtensionMethod::scale_methods()
    } else {
        Vec::new()
    };
    for m in &r.methods {
        methods.push(ExtensionMethod {
            name: m.name.clone(),
            verb: Verb::parse(&m.verb).ok_or(("methods", format!("unknown verb {:?}", m.verb)))?,
            subresource: Some(m.subresource.clone()),
            input: m.input.as_deref().map(|t| type_ref(crate_path, t)),
            result: m.result.as_deref().map(|t| type_ref(crate_path, t)),
        });
    }
    Ok(Kind {
        names: Names {
            kind: r.kind.clone(),
            plural: r.plural.clone(),
            singular: r.kind.to_lowercase(),
            list_kind: format!("{}List", r.kind),
            short_names: r.short_names.clone(),
            categories: r.categories.clone(),
        },
        scope: if r.namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        },
        status_subresource: r.status,
        scale: r.scale.as_ref().map(|s| Scale {
            spec_replicas_path: s.spec_replicas_path.clone(),
            status_replicas_path: s.status_replicas_path.clone(),
            label_selector_path: s.label_selector_path.clone(),
        }),
        client: ClientTags { verbs, methods },
        schema_json: None,
        printer_columns: Vec::new(),
        served: true,
        storage: true,
        deprecated: false,
        conversion_webhook: false,
        deprecation_warning: None,
        source: KindSource::External {
            rust_path: format!("{crate_path}::{}", r.path),
        },
        list_type_name: format!("{}List", r.kind),
        selectable_fields: Vec::new(),
        crd_metadata: Default::default(),
        openapi: None,
    })
}

/// Derives the description from k8s-openapi's source (`dir` is its Kubernetes version
/// module, e.g. `.../k8s-openapi-0.29.0/src/v1_37`) and the checked-in `table`.
/// Resources come out sorted by group, version and kind, so the text is stable.
pub fn describe(
    dir: &Path,
    kubernetes: &str,
    table: &Table,
    apply_configurations: Option<ApplyConfigurationsDescription>,
) -> Result<Description, String> {
    let mut files = Vec::new();
    for sub in ["api", "apiextensions_apiserver", "kube_aggregator"] {
        for entry in walkdir::WalkDir::new(dir.join(sub)).sort_by_file_name() {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            if entry.file_type().is_file() && entry.path().extension().is_some_and(|e| e == "rs") {
                files.push(entry.into_path());
            }
        }
    }
    let mut resources = Vec::new();
    for file in files {
        if let Some(r) = describe_file(dir, &file, table)? {
            let key = format!("{}/{}", r.group, r.plural);
            if !table.skip.contains_key(&key) {
                resources.push(r);
            }
        }
    }
    resources.sort_by(|a, b| (&a.group, &a.version, &a.kind).cmp(&(&b.group, &b.version, &b.kind)));
    Ok(Description {
        api_version: DESCRIPTION_API_VERSION.to_owned(),
        kind: DESCRIPTION_KIND.to_owned(),
        kubernetes: kubernetes.to_owned(),
        crate_path: "::kubegen_runtime::k8s_openapi".to_owned(),
        apply_configurations,
        resources,
    })
}

fn describe_file(root: &Path, file: &PathBuf, table: &Table) -> Result<Option<Resource>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let ast = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut consts: BTreeMap<String, String> = BTreeMap::new();
    let mut scope = None;
    let mut type_name = None;
    let mut listable = false;
    let mut has_status = false;
    for item in &ast.items {
        match item {
            syn::Item::Impl(imp) => {
                let Some((_, trait_path, _)) = &imp.trait_ else {
                    continue;
                };
                let trait_name = trait_path.segments.last().map(|s| s.ident.to_string());
                match trait_name.as_deref() {
                    Some("Resource") => {
                        if let syn::Type::Path(p) = &*imp.self_ty {
                            type_name = p.path.segments.last().map(|s| s.ident.to_string());
                        }
                        for i in &imp.items {
                            match i {
                                syn::ImplItem::Const(c) => {
                                    if let syn::Expr::Lit(syn::ExprLit {
                                        lit: syn::Lit::Str(s),
                                        ..
                                    }) = &c.expr
                                    {
                                        consts.insert(c.ident.to_string(), s.value());
                                    }
                                }
                                syn::ImplItem::Type(t) if t.ident == "Scope" => {
                                    if let syn::Type::Path(p) = &t.ty {
                                        scope = p.path.segments.last().map(|s| s.ident.to_string());
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    Some("ListableResource") => listable = true,
                    _ => {}
                }
            }
            syn::Item::Struct(s) => {
                if let syn::Fields::Named(named) = &s.fields {
                    if named
                        .named
                        .iter()
                        .any(|f| f.ident.as_ref().is_some_and(|i| i == "status"))
                    {
                        has_status = true;
                    }
                }
            }
            _ => {}
        }
    }
    let (Some(type_name), Some(scope)) = (type_name, scope) else {
        return Ok(None);
    };
    let namespaced = match scope.as_str() {
        "NamespaceResourceScope" => true,
        "ClusterResourceScope" => false,
        _ => return Ok(None),
    };
    let get = |k: &str| consts.get(k).cloned().unwrap_or_default();
    let (group, version, kind, plural) = (
        get("GROUP"),
        get("VERSION"),
        get("KIND"),
        get("URL_PATH_SEGMENT"),
    );
    if kind.is_empty() || plural.is_empty() || version.is_empty() {
        return Ok(None);
    }
    let rel = file
        .strip_prefix(root)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let mut path: Vec<String> = rel
        .parent()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    path.push(type_name);
    let key = format!("{group}/{plural}");
    let status = listable && has_status;
    let verbs = match table.verbs.get(&key) {
        Some(v) => v.clone(),
        None if listable => Verb::ALL
            .iter()
            .filter(|v| status || !v.is_status())
            .map(|v| v.name().to_owned())
            .collect(),
        None => vec![Verb::Create.name().to_owned()],
    };
    Ok(Some(Resource {
        group,
        version,
        kind,
        plural,
        namespaced,
        path: path.join("::"),
        verbs,
        status,
        scale: table.scale.get(&key).cloned(),
        methods: table.methods.get(&key).cloned().unwrap_or_default(),
        short_names: table.short_names.get(&key).cloned().unwrap_or_default(),
        categories: table.categories.get(&key).cloned().unwrap_or_default(),
    }))
}
