//! Kinds of Rust input: `+genclient` structs and kube-derive `#[kube(...)]` specs.
//!
//! A `+genclient` struct is its own root: it must have `metadata: ObjectMeta` and no
//! generics; its client verbs follow code-generator's tags exactly (see [`client_tags`]);
//! a `status` field (without `+genclient:noStatus`) gives the status subresource and its
//! verbs; a `+genclient:method=` on the `scale` subresource gives the scale subresource
//! (paths `.spec.replicas`, `.status.replicas`, or those of
//! `+kubebuilder:subresource:scale:specpath=,statuspath=,selectorpath=`).
//!
//! A `#[derive(CustomResource)]` spec gives the root type kube-derive writes next to it
//! (named by `kind`, or `root`); kube-derive implements `kube::Resource` and `new`, so
//! kubegen adds only `RESOURCE_INFO` and GVK/GVR functions. Every verb (status verbs
//! with `status = "..."`), and the scale methods with `scale(...)`/`scale = "..."`.
//! Plurals follow each tool's rule: code-generator's for markers ([`plural`]),
//! kube-derive's for kube-derive kinds ([`kube_derive_plural`]), since the URL must be
//! the one the type's own `Resource` impl (or the server's CRD) uses.

use std::path::Path;

use kubegen_templates::model::{
    ClientTags, ExtensionMethod, Kind, KindSource, Names, Scale, Scope, TypeRef, Verb,
};

use super::fields::{self, skip_value};
use super::markers::{find, Marker};
use super::source::{Item, ItemKind, Source};
use crate::error::Error;

/// A kind found in the input, before it is placed in a group and version.
#[derive(Debug, Clone)]
pub struct FoundKind {
    /// The group (from `+groupName` of its package, or `#[kube(group)]`).
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind for the model.
    pub kind: Kind,
    /// Names of the input's structs the kind's root is made of (the root itself for
    /// markers, the spec and status for kube-derive), whose deep copies it needs.
    pub roots: Vec<String>,
    /// The package it was found in.
    pub package: Vec<String>,
    /// Where, for errors naming it (file:line:col).
    pub origin: Error,
}

/// The `+genclient` kind of `item`, or `None` when it has no `+genclient`. `group` and
/// `version` are its package's.
pub fn marker_kind(
    item: &Item,
    source: &Source,
    types_path: &str,
    group: &str,
    version: &str,
) -> Result<Option<FoundKind>, Error> {
    let genclient: Vec<&Marker> = item
        .markers
        .iter()
        .filter(|m| m.name.starts_with("genclient"))
        .collect();
    let Some(first) = genclient.first() else {
        return Ok(None);
    };
    let file = &item.file;
    let ItemKind::Struct(s) = &item.kind else {
        return Err(first.error(
            file,
            format!(
                "+genclient on enum {}; only a struct can be a kind",
                item.name()
            ),
            "put +genclient on the struct with `metadata: ObjectMeta`",
        ));
    };
    if find(&item.markers, "genclient").is_none() {
        return Err(first.error(
            file,
            format!("`{}` without `+genclient` on {}", first.text(), s.ident),
            "add `/// +genclient` above it, or remove the marker",
        ));
    }
    if !s.generics.params.is_empty() {
        return Err(item.error_at(
            s.generics.lt_token.map_or(s.ident.span(), |t| t.span),
            format!("kind {} has generic parameters", s.ident),
            "remove the generics: a kind's Rust type names one resource (wrap a generic struct in a concrete one)",
        ));
    }
    let fields: Vec<&syn::Field> = match &s.fields {
        syn::Fields::Named(n) => n.named.iter().collect(),
        _ => Vec::new(),
    };
    let field = |name: &str| {
        fields
            .iter()
            .find(|f| f.ident.as_ref().is_some_and(|i| i == name))
    };
    // Exactly `ObjectMeta` (not `Option<ObjectMeta>`): the generated `Metadata` impl
    // returns `&self.metadata`.
    let has_meta = field("metadata").is_some_and(|f| {
        fields::option_inner(&f.ty).is_none()
            && fields::type_name(&f.ty).as_deref() == Some("ObjectMeta")
    });
    if !has_meta {
        return Err(item.error_at(
            s.ident.span(),
            format!(
                "{} has +genclient but no `metadata: ObjectMeta` field",
                s.ident
            ),
            "add `pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta` (with #[serde(default)]), or remove +genclient",
        ));
    }
    let no_status = find(&item.markers, "genclient:noStatus").is_some();
    let status = field("status").is_some() && !no_status;
    let client = client_tags(&item.markers, status, source, types_path, item)?;
    let rust_path = super::rust_path(types_path, &item.module, &item.name());
    let kind_name = s.ident.to_string();
    let singular = kind_name.to_lowercase();
    let plural = match find(&item.markers, "resourceName") {
        Some(m) => m.value.clone().unwrap_or_default(),
        None => plural(&singular),
    };
    let scale = client
        .methods
        .iter()
        .any(|m| m.subresource.as_deref() == Some("scale"))
        .then(|| scale_paths(&item.markers));
    let scope = if find(&item.markers, "genclient:nonNamespaced").is_some() {
        Scope::Cluster
    } else {
        Scope::Namespaced
    };
    let has = kubegen_templates::model::ExistingImpls {
        kube_resource: source.implements(&kind_name, "Resource", "kube"),
        k8s_openapi_resource: source.implements(&kind_name, "Resource", "k8s_openapi"),
        new_fn: source.new_fns.contains(&kind_name),
    };
    Ok(Some(FoundKind {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: Kind {
            names: Names {
                list_kind: format!("{kind_name}List"),
                kind: kind_name.clone(),
                plural,
                singular,
                short_names: Vec::new(),
                categories: Vec::new(),
            },
            scope,
            status_subresource: status,
            scale,
            client,
            schema_json: None,
            printer_columns: Vec::new(),
            served: true,
            storage: true,
            deprecated: false,
            conversion_webhook: false,
            deprecation_warning: None,
            source: KindSource::User { rust_path, has },
            list_type_name: format!("{kind_name}List"),
            selectable_fields: Vec::new(),
            crd_metadata: Default::default(),
            openapi: None,
        },
        roots: vec![kind_name],
        package: item.package.clone(),
        origin: item.error_at(s.ident.span(), "", ""),
    }))
}

/// The verbs and methods of `+genclient` markers, as client-gen decides them:
/// `noVerbs` leaves none, `readonly` get/list/watch, `onlyVerbs=` exactly those,
/// `skipVerbs=` all but those; the status verbs only for a kind with status.
pub fn client_tags(
    markers: &[Marker],
    status: bool,
    source: &Source,
    types_path: &str,
    item: &Item,
) -> Result<ClientTags, Error> {
    let file = &item.file;
    let only = find(markers, "genclient:onlyVerbs");
    let skip = find(markers, "genclient:skipVerbs");
    let no_verbs = find(markers, "genclient:noVerbs");
    let readonly = find(markers, "genclient:readonly");
    let exclusive = [no_verbs, readonly, only].into_iter().flatten().count();
    if exclusive > 1 || (skip.is_some() && (no_verbs.is_some() || only.is_some())) {
        let second = [readonly, only, skip].into_iter().flatten().last();
        if let Some(m) = second {
            return Err(m.error(
                file,
                format!(
                    "`{}` contradicts another verb marker of {}",
                    m.text(),
                    item.name()
                ),
                "keep one of +genclient:noVerbs, +genclient:readonly, +genclient:onlyVerbs= (skipVerbs= only alone or with readonly)",
            ));
        }
    }
    let mut verbs: std::collections::BTreeSet<Verb> = if no_verbs.is_some() {
        Default::default()
    } else if readonly.is_some() {
        Verb::READ_ONLY.into_iter().collect()
    } else if let Some(m) = only {
        verb_list(m, file)?
    } else {
        Verb::ALL.into_iter().collect()
    };
    if let Some(m) = skip {
        for v in verb_list(m, file)? {
            verbs.remove(&v);
        }
    }
    if !status {
        if let (Some(m), true) = (only, verbs.iter().any(|v| v.is_status())) {
            return Err(m.error(
                file,
                format!(
                    "`{}` names a status verb, but {} has no status (no `status` field, or +genclient:noStatus)",
                    m.text(),
                    item.name()
                ),
                "add a `status` field, or leave updateStatus and applyStatus out",
            ));
        }
        verbs.retain(|v| !v.is_status());
    }
    let mut methods = Vec::new();
    for m in markers.iter().filter(|m| m.name == "genclient:method") {
        methods.push(method(m, source, types_path, item)?);
    }
    Ok(ClientTags { verbs, methods })
}

fn verb_list(m: &Marker, file: &Path) -> Result<std::collections::BTreeSet<Verb>, Error> {
    let mut out = std::collections::BTreeSet::new();
    for name in m.value.as_deref().unwrap_or("").split(',').map(str::trim) {
        match Verb::parse(name) {
            Some(v) => {
                out.insert(v);
            }
            None => {
                return Err(m.error(
                    file,
                    format!("`{}`: {name:?} is not a client verb", m.text()),
                    format!("use verbs among {}", Verb::ALL.map(Verb::name).join(", ")),
                ))
            }
        }
    }
    Ok(out)
}

/// `+genclient:method=Name,verb=update,subresource=scale,input=...,result=...`.
fn method(
    m: &Marker,
    source: &Source,
    types_path: &str,
    item: &Item,
) -> Result<ExtensionMethod, Error> {
    let file = &item.file;
    let value = m.value.as_deref().unwrap_or("");
    let mut parts = value.split(',').map(str::trim);
    let name = parts.next().unwrap_or("").to_owned();
    let bad = |problem: String| {
        m.error(
            file,
            problem,
            "write +genclient:method=Name,verb=VERB[,subresource=NAME][,input=TYPE][,result=TYPE]",
        )
    };
    if name.is_empty() || name.contains('=') {
        return Err(bad(format!(
            "`{}` does not start with the method's name",
            m.text()
        )));
    }
    let (mut verb, mut subresource, mut input, mut result) = (None, None, None, None);
    for part in parts {
        let Some((key, v)) = part.split_once('=') else {
            return Err(bad(format!("`{part}` in `{}` is not key=value", m.text())));
        };
        match key {
            "verb" => {
                verb = Some(Verb::parse(v).ok_or_else(|| {
                    m.error(
                        file,
                        format!("`{}`: {v:?} is not a client verb", m.text()),
                        format!("use one of {}", Verb::ALL.map(Verb::name).join(", ")),
                    )
                })?)
            }
            "subresource" => subresource = Some(v.to_owned()),
            "input" => input = Some(type_ref(v, m, source, types_path, item)?),
            "result" => result = Some(type_ref(v, m, source, types_path, item)?),
            _ => return Err(bad(format!("unknown key `{key}` in `{}`", m.text()))),
        }
    }
    let verb = verb.ok_or_else(|| bad(format!("`{}` has no verb=", m.text())))?;
    Ok(ExtensionMethod {
        name,
        verb,
        subresource,
        input,
        result,
    })
}

/// A method's `input=`/`result=` type: Go paths of `k8s.io/api` and apimachinery's
/// meta/v1 become k8s-openapi paths (`autoscaling/v1.Scale` is [`TypeRef::Scale`]); a
/// bare name is a type of the kind's own module; anything with `::` is a Rust path.
fn type_ref(
    v: &str,
    m: &Marker,
    source: &Source,
    types_path: &str,
    item: &Item,
) -> Result<TypeRef, Error> {
    let file = &item.file;
    let openapi = "::kubegen_runtime::k8s_openapi";
    if let Some((pkg, ty)) = v.rsplit_once('.').filter(|_| v.contains('/')) {
        if pkg == "k8s.io/api/autoscaling/v1" && ty == "Scale" {
            return Ok(TypeRef::Scale);
        }
        if let Some(gv) = pkg.strip_prefix("k8s.io/api/") {
            if let Some((g, ver)) = gv.split_once('/') {
                return Ok(TypeRef::Path(format!("{openapi}::api::{g}::{ver}::{ty}")));
            }
        }
        if pkg == "k8s.io/apimachinery/pkg/apis/meta/v1" {
            return Ok(TypeRef::Path(format!(
                "{openapi}::apimachinery::pkg::apis::meta::v1::{ty}"
            )));
        }
        return Err(m.error(
            file,
            format!("`{v}` in `{}` is a Go type kubegen cannot map to Rust", m.text()),
            "name k8s.io/api/<group>/<version>.<Type>, k8s.io/apimachinery/pkg/apis/meta/v1.<Type>, or a Rust path (crate::apis::...::Type)",
        ));
    }
    if v.contains("::") {
        return Ok(TypeRef::Path(v.to_owned()));
    }
    let local = source
        .items
        .iter()
        .find(|i| i.package == item.package && i.name() == v);
    match local {
        Some(i) => Ok(TypeRef::Path(super::rust_path(
            types_path,
            &i.module,
            &i.name(),
        ))),
        None => Err(m.error(
            file,
            format!("`{v}` in `{}` is no type of this package", m.text()),
            "name a type of the kind's package, or write a full Rust or Go path",
        )),
    }
}

/// The scale subresource's paths: code-generator's defaults, or kubebuilder's marker.
fn scale_paths(markers: &[Marker]) -> Scale {
    let mut scale = Scale {
        spec_replicas_path: ".spec.replicas".to_owned(),
        status_replicas_path: ".status.replicas".to_owned(),
        label_selector_path: None,
    };
    if let Some(m) = markers
        .iter()
        .find(|m| m.name.starts_with("kubebuilder:subresource:scale:"))
    {
        let first_key = m.name.rsplit(':').next().unwrap_or("");
        let text = format!("{first_key}={}", m.value.as_deref().unwrap_or(""));
        for pair in text.split(',') {
            match pair.split_once('=') {
                Some(("specpath", p)) => scale.spec_replicas_path = p.to_owned(),
                Some(("statuspath", p)) => scale.status_replicas_path = p.to_owned(),
                Some(("selectorpath", p)) => scale.label_selector_path = Some(p.to_owned()),
                _ => {}
            }
        }
    }
    scale
}

/// code-generator's English plural of a lowercase kind (`foos`, `policies`, `boxes`,
/// `leaves`; `endpoints` stays as it is).
pub fn plural(singular: &str) -> String {
    if singular == "endpoints" || singular.len() < 2 {
        return singular.to_owned();
    }
    let chars: Vec<char> = singular.chars().collect();
    let (last, before) = (chars[chars.len() - 1], chars[chars.len() - 2]);
    let consonant = |c: char| c.is_ascii_alphabetic() && !"aeiou".contains(c);
    let stem: String = chars[..chars.len() - 1].iter().collect();
    match last {
        's' | 'x' | 'z' => format!("{singular}es"),
        'y' if consonant(before) => format!("{stem}ies"),
        'h' if before == 'c' || before == 's' => format!("{singular}es"),
        'e' if before == 'f' => {
            let stem: String = chars[..chars.len() - 2].iter().collect();
            format!("{stem}ves")
        }
        'f' => format!("{stem}ves"),
        _ => format!("{singular}s"),
    }
}

/// kube-derive's plural of a lowercase kind, as its `Resource` impl computes it.
pub fn kube_derive_plural(singular: &str) -> String {
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|s| singular.ends_with(s))
    {
        return format!("{singular}es");
    }
    let mut chars = singular.chars();
    if chars.next_back() == Some('y')
        && chars
            .clone()
            .next_back()
            .is_some_and(|c| !"aeiou".contains(c))
    {
        return format!("{}ies", chars.as_str());
    }
    format!("{singular}s")
}

/// What `#[kube(...)]` says, as far as kubegen needs it.
#[derive(Debug, Default)]
struct KubeAttrs {
    group: Option<String>,
    version: Option<String>,
    kind: Option<String>,
    root: Option<String>,
    plural: Option<String>,
    singular: Option<String>,
    namespaced: bool,
    status: Option<String>,
    scale: Option<Scale>,
    short_names: Vec<String>,
    categories: Vec<String>,
    served: Option<bool>,
    storage: Option<bool>,
    deprecated: Option<Option<String>>,
    printer_columns: Vec<kubegen_templates::model::PrinterColumn>,
    selectable: Vec<String>,
}

/// The kube-derive kind of `item` (a `#[derive(CustomResource)]` struct), if it is one.
/// `module_path` is the path of the module holding the spec (and the root type).
pub fn kube_derive_kind(item: &Item, module_path: &str) -> Result<Option<FoundKind>, Error> {
    let ItemKind::Struct(s) = &item.kind else {
        return Ok(None);
    };
    if !item.derives("CustomResource") {
        return Ok(None);
    }
    if let Some(m) = item
        .markers
        .iter()
        .find(|m| m.name.starts_with("genclient"))
    {
        return Err(m.error(
            &item.file,
            format!("`{}` on a #[derive(CustomResource)] spec", m.text()),
            "use #[kube(...)] for kube-derive kinds, or +genclient on a hand-written root struct, not both",
        ));
    }
    if !s.generics.params.is_empty() {
        return Err(item.error_at(
            s.generics.lt_token.map_or(s.ident.span(), |t| t.span),
            format!("kind spec {} has generic parameters", s.ident),
            "remove the generics: a kind's Rust type names one resource",
        ));
    }
    let mut a = KubeAttrs::default();
    for attr in s.attrs.iter().filter(|a| a.path().is_ident("kube")) {
        attr.parse_nested_meta(|meta| read_kube_key(&meta, &mut a))
            .map_err(|e| {
                item.error_at(
                    e.span(),
                    format!("cannot read this #[kube(...)] attribute: {e}"),
                    "write it as kube-derive documents it",
                )
            })?;
    }
    let missing = |key: &str| {
        item.error_at(
            s.ident.span(),
            format!(
                "#[derive(CustomResource)] on {} without #[kube({key} = \"...\")]",
                s.ident
            ),
            format!("add {key} = \"...\" to #[kube(...)]"),
        )
    };
    let group = a.group.clone().ok_or_else(|| missing("group"))?;
    let version = a.version.clone().ok_or_else(|| missing("version"))?;
    let kind_name = a.kind.clone().ok_or_else(|| missing("kind"))?;
    let root = a.root.clone().unwrap_or_else(|| kind_name.clone());
    let singular = a
        .singular
        .clone()
        .unwrap_or_else(|| kind_name.to_ascii_lowercase());
    let plural = a
        .plural
        .clone()
        .unwrap_or_else(|| kube_derive_plural(&singular));
    let status = a.status.is_some();
    let mut client = ClientTags::all(status);
    if a.scale.is_some() {
        client.methods = ExtensionMethod::scale_methods();
    }
    let mut roots = vec![s.ident.to_string()];
    roots.extend(a.status.clone());
    Ok(Some(FoundKind {
        group,
        version,
        kind: Kind {
            names: Names {
                kind: kind_name.clone(),
                plural,
                singular,
                list_kind: format!("{kind_name}List"),
                short_names: a.short_names,
                categories: a.categories,
            },
            scope: if a.namespaced {
                Scope::Namespaced
            } else {
                Scope::Cluster
            },
            status_subresource: status,
            scale: a.scale,
            client,
            schema_json: None,
            printer_columns: a.printer_columns,
            served: a.served.unwrap_or(true),
            storage: a.storage.unwrap_or(true),
            deprecated: a.deprecated.is_some(),
            conversion_webhook: false,
            deprecation_warning: a.deprecated.flatten(),
            source: KindSource::User {
                rust_path: format!("{module_path}::{root}"),
                has: kubegen_templates::model::ExistingImpls {
                    kube_resource: true,
                    k8s_openapi_resource: false,
                    new_fn: true,
                },
            },
            list_type_name: format!("{root}List"),
            selectable_fields: a.selectable,
            crd_metadata: Default::default(),
            openapi: None,
        },
        roots,
        package: item.package.clone(),
        origin: item.error_at(s.ident.span(), "", ""),
    }))
}

/// kube-derive's `printcolumn = r#"{"name": .., "type": .., "jsonPath": .., ...}"#`.
fn printer_column(json: &str) -> Result<kubegen_templates::model::PrinterColumn, String> {
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| format!("printcolumn is not JSON ({e}); write it as kube-derive does: r#\"{{\"name\":\"Ready\",\"type\":\"string\",\"jsonPath\":\".status.ready\"}}\"#"))?;
    let text = |key: &str| {
        v.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let need = |key: &str| text(key).ok_or_else(|| format!("printcolumn needs a string `{key}`"));
    Ok(kubegen_templates::model::PrinterColumn {
        name: need("name")?,
        type_: need("type")?,
        json_path: need("jsonPath")?,
        description: text("description"),
        format: text("format"),
        priority: v
            .get("priority")
            .and_then(serde_json::Value::as_i64)
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(0),
    })
}

fn read_kube_key(meta: &syn::meta::ParseNestedMeta, a: &mut KubeAttrs) -> syn::Result<()> {
    let key = meta
        .path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default();
    let string = |meta: &syn::meta::ParseNestedMeta| -> syn::Result<String> {
        let s: syn::LitStr = meta.value()?.parse()?;
        Ok(s.value())
    };
    match key.as_str() {
        "group" => a.group = Some(string(meta)?),
        "version" => a.version = Some(string(meta)?),
        "kind" => a.kind = Some(string(meta)?),
        "root" => a.root = Some(string(meta)?),
        "plural" => a.plural = Some(string(meta)?),
        "singular" => a.singular = Some(string(meta)?),
        "namespaced" => a.namespaced = true,
        "status" => {
            let path = string(meta)?;
            a.status = Some(path.rsplit("::").next().unwrap_or(&path).to_owned());
        }
        "shortname" => a.short_names.push(string(meta)?),
        "category" => a.categories.push(string(meta)?),
        "served" | "storage" => {
            let b: syn::LitBool = meta.value()?.parse()?;
            if key == "served" {
                a.served = Some(b.value);
            } else {
                a.storage = Some(b.value);
            }
        }
        "deprecated" => {
            a.deprecated = Some(if meta.input.peek(syn::Token![=]) {
                Some(string(meta)?)
            } else {
                None
            });
        }
        "scale" => a.scale = Some(read_scale(meta)?),
        "printcolumn" => {
            let text = string(meta)?;
            a.printer_columns
                .push(printer_column(&text).map_err(|e| meta.error(e))?);
        }
        "selectable" => a.selectable.push(string(meta)?),
        _ => skip_value(meta)?,
    }
    Ok(())
}

/// `scale(spec_replicas_path = "...", ...)`, or the older `scale = r#"{"specReplicasPath": ...}"#`.
fn read_scale(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Scale> {
    let mut scale = Scale {
        spec_replicas_path: String::new(),
        status_replicas_path: String::new(),
        label_selector_path: None,
    };
    if meta.input.peek(syn::Token![=]) {
        let s: syn::LitStr = meta.value()?.parse()?;
        let json: serde_json::Value = serde_json::from_str(&s.value())
            .map_err(|e| syn::Error::new(s.span(), format!("scale is not JSON: {e}")))?;
        let get = |k: &str| json.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        scale.spec_replicas_path = get("specReplicasPath").unwrap_or_default();
        scale.status_replicas_path = get("statusReplicasPath").unwrap_or_default();
        scale.label_selector_path = get("labelSelectorPath");
    } else {
        meta.parse_nested_meta(|inner| {
            let s: syn::LitStr = inner.value()?.parse()?;
            if inner.path.is_ident("spec_replicas_path") {
                scale.spec_replicas_path = s.value();
            } else if inner.path.is_ident("status_replicas_path") {
                scale.status_replicas_path = s.value();
            } else if inner.path.is_ident("label_selector_path") {
                scale.label_selector_path = Some(s.value());
            }
            Ok(())
        })?;
    }
    if scale.spec_replicas_path.is_empty() || scale.status_replicas_path.is_empty() {
        return Err(meta.error("scale needs spec_replicas_path and status_replicas_path"));
    }
    Ok(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_generator_plurals() {
        for (s, p) in [
            ("foo", "foos"),
            ("policy", "policies"),
            ("day", "days"),
            ("box", "boxes"),
            ("match", "matches"),
            ("bash", "bashes"),
            ("leaf", "leaves"),
            ("knife", "knives"),
            ("endpoints", "endpoints"),
            ("status", "statuses"),
        ] {
            assert_eq!(plural(s), p, "{s}");
        }
        assert_eq!(kube_derive_plural("policy"), "policies");
        assert_eq!(kube_derive_plural("leaf"), "leafs");
        assert_eq!(kube_derive_plural("document"), "documents");
    }
}
