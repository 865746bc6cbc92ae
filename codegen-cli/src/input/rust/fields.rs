//! A user's struct -> the model's [`StructDef`]: its fields' wire names and shapes as
//! serde sees them, for the deep copy kubegen emits now and the schemas later work
//! derives.
//!
//! Honoured serde attributes: on the struct `rename_all` (one convention, or the
//! `serialize` one of a pair); on fields `rename` (likewise), `default`, `flatten`,
//! `skip` (and `skip_serializing` with `skip_deserializing`). A field is
//! [`optional`](Field::optional) when its type is `Option<T>` (the model's meaning: the
//! type is wrapped), and [`required`](Field::required) unless it is optional, has
//! `#[serde(default)]` or is skipped.
//! Types stay as written ([`Ty::External`]), except `bool`, `i32` and `i64`, and the
//! runtime's `ApiVersion<K>`/`Kind<K>` on `apiVersion`/`kind`, which the deep copy
//! copies instead of cloning.

use heck::{
    ToKebabCase, ToLowerCamelCase, ToShoutyKebabCase, ToShoutySnakeCase, ToSnakeCase,
    ToUpperCamelCase,
};
use kubegen_templates::model::{
    ExistingEnumDef, ExistingVariant, Field, StructDef, Ty, VariantFields,
};
use quote::ToTokens;

use super::source::Item;
use crate::error::Error;

/// serde's attributes on a struct or field, as far as they change the wire shape.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SerdeAttrs {
    /// `rename = "..."` (or `rename(serialize = "...")`).
    pub rename: Option<String>,
    /// `rename_all = "..."`.
    pub rename_all: Option<String>,
    /// `default` or `default = "path"`.
    pub default: bool,
    /// `flatten`.
    pub flatten: bool,
    /// `skip`, or both `skip_serializing` and `skip_deserializing`.
    pub skip: bool,
    /// An enum's `tag = "..."` (internally tagged, or adjacently with `content`).
    pub tag: Option<String>,
    /// An enum's `content = "..."` (adjacently tagged).
    pub content: Option<String>,
    /// An enum's `untagged`.
    pub untagged: bool,
}

/// The serde attributes of `attrs`; an unknown `rename_all` convention is an error.
pub fn serde_attrs(attrs: &[syn::Attribute], item: &Item) -> Result<SerdeAttrs, Error> {
    let mut out = SerdeAttrs::default();
    let (mut skip_ser, mut skip_de) = (false, false);
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "rename" | "rename_all" => {
                    let value = string_or_serialize(&meta)?;
                    if key == "rename" {
                        out.rename = value;
                    } else {
                        out.rename_all = value;
                    }
                }
                "default" => {
                    out.default = true;
                    skip_value(&meta)?;
                }
                "flatten" => out.flatten = true,
                "tag" | "content" => {
                    let s: syn::LitStr = meta.value()?.parse()?;
                    if key == "tag" {
                        out.tag = Some(s.value());
                    } else {
                        out.content = Some(s.value());
                    }
                }
                "untagged" => out.untagged = true,
                "skip" => out.skip = true,
                "skip_serializing" => skip_ser = true,
                "skip_deserializing" => skip_de = true,
                _ => skip_value(&meta)?,
            }
            Ok(())
        })
        .map_err(|e| {
            item.error_at(
                e.span(),
                format!("cannot read this #[serde(...)] attribute: {e}"),
                "write it as serde documents it",
            )
        })?;
    }
    out.skip |= skip_ser && skip_de;
    if let Some(rule) = &out.rename_all {
        if convert_case(rule, "x").is_none() {
            return Err(item.error_at(
                item.ident().span(),
                format!("unknown serde rename_all convention {rule:?}"),
                "use one of lowercase, UPPERCASE, PascalCase, camelCase, snake_case, SCREAMING_SNAKE_CASE, kebab-case, SCREAMING-KEBAB-CASE",
            ));
        }
    }
    Ok(out)
}

/// `key = "x"` -> `x`; `key(serialize = "x", deserialize = "y")` -> `x` (the wire name
/// kubegen writes).
fn string_or_serialize(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Option<String>> {
    if meta.input.peek(syn::Token![=]) {
        let s: syn::LitStr = meta.value()?.parse()?;
        return Ok(Some(s.value()));
    }
    let mut value = None;
    meta.parse_nested_meta(|inner| {
        let s: syn::LitStr = inner.value()?.parse()?;
        if inner.path.is_ident("serialize") {
            value = Some(s.value());
        }
        Ok(())
    })?;
    Ok(value)
}

/// Consumes `= expr` or `(...)` after a key kubegen does not read.
pub fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: syn::Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _: proc_macro2::Group = meta.input.parse()?;
    }
    Ok(())
}

/// The wire name serde gives a field or variant named `rust_name` (`r#type` is `type`):
/// its own `rename`, else the container's `rename_all`, else the name.
pub fn wire_name(rust_name: &str, attrs: &SerdeAttrs, container: &SerdeAttrs) -> String {
    let bare = rust_name.strip_prefix("r#").unwrap_or(rust_name);
    match (&attrs.rename, &container.rename_all) {
        (Some(r), _) => r.clone(),
        (None, Some(rule)) => convert_case(rule, bare).unwrap_or_else(|| bare.to_owned()),
        (None, None) => bare.to_owned(),
    }
}

/// `name` in serde's `rename_all` convention `rule` (`None` for an unknown rule).
pub fn convert_case(rule: &str, name: &str) -> Option<String> {
    Some(match rule {
        "lowercase" => name.to_lowercase(),
        "UPPERCASE" => name.to_uppercase(),
        "PascalCase" => name.to_upper_camel_case(),
        "camelCase" => name.to_lower_camel_case(),
        "snake_case" => name.to_snake_case(),
        "SCREAMING_SNAKE_CASE" => name.to_shouty_snake_case(),
        "kebab-case" => name.to_kebab_case(),
        "SCREAMING-KEBAB-CASE" => name.to_shouty_kebab_case(),
        _ => return None,
    })
}

/// Why a struct cannot get a generated deep copy, and the fix.
const CLONE_FIX: &str = "derive Clone on it, or make every field visible to the crate (pub or pub(crate)) so kubegen's Clone impl can name it, or mark it +k8s:deepcopy-gen=false";

/// The model's struct for a user-written struct at `path`: fields with wire names.
/// Every field must be visible to the generated code (`pub`, `pub(crate)`), and the
/// struct must have named fields, so the generated `Clone` can name them.
pub fn struct_def(item: &Item, s: &syn::ItemStruct, path: String) -> Result<StructDef, Error> {
    let container = serde_attrs(&s.attrs, item)?;
    let syn::Fields::Named(named) = &s.fields else {
        if matches!(s.fields, syn::Fields::Unit) {
            return Ok(StructDef {
                name: s.ident.to_string(),
                existing: Some(path),
                doc: item.doc.clone(),
                origin: origin(item),
                fields: Vec::new(),
                unknown_fields: None,
                schema: Default::default(),
            });
        }
        return Err(item.error_at(
            s.ident.span(),
            format!(
                "{} is a tuple struct without Clone; kubegen generates Clone only for structs with named fields",
                s.ident
            ),
            "add #[derive(Clone)] to it, or mark it +k8s:deepcopy-gen=false and implement Clone yourself",
        ));
    };
    let mut fields = Vec::new();
    for f in &named.named {
        let Some(ident) = &f.ident else { continue };
        if !visible_to_crate(&f.vis) {
            return Err(item.error_at(
                ident.span(),
                format!(
                    "field `{ident}` of {} is private; kubegen's generated Clone impl lives in another module",
                    s.ident
                ),
                CLONE_FIX,
            ));
        }
        let attrs = serde_attrs(&f.attrs, item)?;
        let (_, doc) = super::markers::read(&f.attrs, &item.file)?;
        let rust_name = ident.to_string();
        let json_name = wire_name(&rust_name, &attrs, &container);
        let (mut ty, option) = field_ty(&f.ty);
        // The runtime's zero-sized type meta fields are Copy: the deep copy assigns them.
        let last = type_name(&f.ty);
        if !option && json_name == "apiVersion" && last.as_deref() == Some("ApiVersion") {
            ty = Ty::ApiVersion;
        } else if !option && json_name == "kind" && last.as_deref() == Some("Kind") {
            ty = Ty::KindField;
        }
        fields.push(Field {
            json_name,
            rust_name,
            ty,
            doc,
            optional: option,
            required: !option && !attrs.default && !attrs.skip,
            nullable: false,
            default: None,
            flatten: attrs.flatten,
            skip: attrs.skip,
            schema: Default::default(),
        });
    }
    Ok(StructDef {
        name: s.ident.to_string(),
        existing: Some(path),
        doc: item.doc.clone(),
        origin: origin(item),
        fields,
        unknown_fields: None,
        schema: Default::default(),
    })
}

/// The model's enum for a user-written enum at `path` (its variants' shapes; enum
/// fields are always visible where the enum is).
pub fn enum_def(e: &syn::ItemEnum, path: String) -> ExistingEnumDef {
    ExistingEnumDef {
        name: e.ident.to_string(),
        path,
        variants: e
            .variants
            .iter()
            .map(|v| ExistingVariant {
                name: v.ident.to_string(),
                fields: match &v.fields {
                    syn::Fields::Unit => VariantFields::Unit,
                    syn::Fields::Unnamed(u) => VariantFields::Tuple(u.unnamed.len()),
                    syn::Fields::Named(n) => VariantFields::Named(
                        n.named
                            .iter()
                            .filter_map(|f| f.ident.as_ref().map(ToString::to_string))
                            .collect(),
                    ),
                },
            })
            .collect(),
    }
}

fn origin(item: &Item) -> String {
    let start = item.ident().span().start();
    format!(
        "{}:{}:{}",
        item.file.display(),
        start.line,
        start.column + 1
    )
}

/// `pub`, `pub(crate)` and `pub(in crate...)` reach the generated tree in the same crate.
fn visible_to_crate(vis: &syn::Visibility) -> bool {
    match vis {
        syn::Visibility::Public(_) => true,
        syn::Visibility::Restricted(r) => r.path.is_ident("crate"),
        syn::Visibility::Inherited => false,
    }
}

/// The model type of a field type, and whether it was `Option<T>` (then `T`'s type).
fn field_ty(ty: &syn::Type) -> (Ty, bool) {
    if let Some(inner) = option_inner(ty) {
        return (plain_ty(inner), true);
    }
    (plain_ty(ty), false)
}

fn plain_ty(ty: &syn::Type) -> Ty {
    if let syn::Type::Path(p) = ty {
        if p.qself.is_none() && p.path.segments.len() == 1 {
            match p.path.segments[0].ident.to_string().as_str() {
                "bool" => return Ty::Bool,
                "i32" => return Ty::I32,
                "i64" => return Ty::I64,
                _ => {}
            }
        }
    }
    Ty::External(ty.to_token_stream().to_string())
}

/// `T` of `Option<T>` (also `std::option::Option<T>`).
pub fn option_inner(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// The last path segment's name of a type (`ObjectMeta` for
/// `k8s_openapi::...::ObjectMeta`), looking through `Option`.
pub fn type_name(ty: &syn::Type) -> Option<String> {
    let ty = option_inner(ty).unwrap_or(ty);
    let syn::Type::Path(p) = ty else { return None };
    p.path.segments.last().map(|s| s.ident.to_string())
}

/// Every identifier in a type (path segments and generic arguments), for finding the
/// input's own types a field uses.
pub fn idents_in(ty: &syn::Type, out: &mut Vec<String>) {
    for token in ty.to_token_stream() {
        collect_idents(token, out);
    }
}

fn collect_idents(token: proc_macro2::TokenTree, out: &mut Vec<String>) {
    match token {
        proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
        proc_macro2::TokenTree::Group(g) => {
            for t in g.stream() {
                collect_idents(t, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn item(src: &str) -> (Item, syn::ItemStruct) {
        let s: syn::ItemStruct = syn::parse_str(src).unwrap();
        let item = Item {
            file: PathBuf::from("t.rs"),
            module: vec![],
            package: vec![],
            markers: vec![],
            doc: None,
            kind: super::super::source::ItemKind::Struct(s.clone()),
        };
        (item, s)
    }

    #[test]
    fn serde_attributes_decide_wire_names_and_optionality() {
        let (i, s) = item(
            r#"#[serde(rename_all = "camelCase")]
            struct S {
                pub deployment_name: Option<String>,
                #[serde(rename = "x-y")] pub xy: i32,
                #[serde(default)] pub count: i64,
                #[serde(flatten)] pub rest: Other,
                #[serde(skip)] pub cache: Vec<u8>,
                pub(crate) ready: bool,
            }"#,
        );
        let d = struct_def(&i, &s, "crate::S".into()).unwrap();
        let f: Vec<_> = d
            .fields
            .iter()
            .map(|f| (f.json_name.as_str(), f.optional, f.flatten, f.skip))
            .collect();
        assert_eq!(
            f,
            [
                ("deploymentName", true, false, false),
                ("x-y", false, false, false),
                ("count", false, false, false),
                ("rest", false, true, false),
                ("cache", false, false, true),
                ("ready", false, false, false),
            ]
        );
        assert_eq!(d.fields[1].ty, Ty::I32);
        assert!(!d.fields[2].required && d.fields[1].required);
        assert_eq!(d.fields[5].ty, Ty::Bool);
    }

    #[test]
    fn private_fields_and_tuple_structs_are_errors_with_the_fix() {
        let (i, s) = item("struct S { pub a: i32, b: String }");
        let e = struct_def(&i, &s, "crate::S".into()).unwrap_err();
        assert!(e.problem.contains("field `b` of S is private"), "{e}");
        assert!(e.fix.contains("derive Clone"), "{e}");
        let (i, s) = item("struct T(pub i32);");
        assert!(struct_def(&i, &s, "crate::T".into()).is_err());
        let (i, s) = item("#[serde(rename_all = \"camelcase\")] struct U { pub a: i32 }");
        assert!(struct_def(&i, &s, "crate::U".into()).is_err());
    }
}
