//! A typed `JSONSchemaProps` (apiextensions.k8s.io/v1) that knows where each node is.
//!
//! Why not the `openapiv3` crate: it models OpenAPI 3.0 documents, not Kubernetes'
//! structural schemas. It does not type the `x-kubernetes-*` keys (they land in an
//! untyped extensions map, so a typo like `x-kubernetes-preserve-unknown-field` would go
//! unnoticed), and it deserializes with serde, which loses the position of every node: an
//! error could not name `spec.versions[1].schema.openAPIV3Schema.properties.spec...`.
//! So the CRD is parsed with serde_yaml into a `serde_yaml::Value` and walked here by
//! hand into [`Schema`], which types every key Kubernetes accepts and carries each node's
//! YAML path.
//!
//! Contract: [`Schema::parse`] accepts exactly the keys of `JSONSchemaProps`; an unknown
//! key, a value of the wrong shape, or `$ref` (not allowed in CRDs) is an [`Error`] at its
//! path. Validation-only keywords (`pattern`, `minimum`, `x-kubernetes-validations`, ...)
//! are kept as JSON so nothing the author wrote is silently dropped.

use serde_yaml::Value as Yaml;

use crate::error::Error;

/// `additionalProperties`: a schema for map values, or a boolean.
#[derive(Debug, Clone, PartialEq)]
pub enum AdditionalProperties {
    /// `true` (any value) or `false` (none).
    Bool(bool),
    /// The schema of every value.
    Schema(Box<Schema>),
}

/// One node of an `openAPIV3Schema`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// The node's YAML path (`spec.versions[0].schema.openAPIV3Schema.properties.spec`).
    pub path: String,
    /// `type`.
    pub type_: Option<String>,
    /// `format`.
    pub format: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `properties`, in declaration order.
    pub properties: Vec<(String, Schema)>,
    /// `required`.
    pub required: Vec<String>,
    /// `items`.
    pub items: Option<Box<Schema>>,
    /// `additionalProperties`.
    pub additional_properties: Option<AdditionalProperties>,
    /// `enum`, as JSON values.
    pub enum_values: Option<Vec<serde_json::Value>>,
    /// `nullable`.
    pub nullable: bool,
    /// `default`, as JSON.
    pub default: Option<serde_json::Value>,
    /// `oneOf`.
    pub one_of: Vec<Schema>,
    /// `anyOf`.
    pub any_of: Vec<Schema>,
    /// `allOf`.
    pub all_of: Vec<Schema>,
    /// `not`.
    pub not: Option<Box<Schema>>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown_fields: Option<bool>,
    /// `x-kubernetes-embedded-resource`.
    pub embedded_resource: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-list-type` (`atomic`, `set`, `map`).
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type` (`atomic`, `granular`).
    pub map_type: Option<String>,
    /// `x-kubernetes-validations` (CEL rules), as JSON.
    pub validations: Vec<serde_json::Value>,
    /// Other validation keywords (`pattern`, `minimum`, `maxItems`, ...), as JSON.
    pub constraints: Vec<(String, serde_json::Value)>,
    /// The root schema as JSON, exactly as written (shared by every node of the tree)
    /// and this node's JSON pointer into it: see [`Schema::raw`].
    pub raw_root: std::sync::Arc<serde_json::Value>,
    /// This node's JSON pointer into [`Schema::raw_root`].
    pub pointer: String,
}

const CONSTRAINT_KEYS: &[&str] = &[
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "maxProperties",
    "minProperties",
    "title",
    "example",
    "externalDocs",
    "id",
    "$schema",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
];

impl Schema {
    /// Parses the schema node `value` found at `path`.
    pub fn parse(value: &Yaml, path: &str) -> Result<Schema, Error> {
        let map = value.as_mapping().ok_or_else(|| {
            Error::at(
                path,
                format!("expected a schema (a mapping), found {}", describe(value)),
                "write the schema as a YAML mapping with `type:` and its keywords",
            )
        })?;
        let mut s = Schema {
            path: path.to_owned(),
            ..Schema::default()
        };
        for (key, v) in map {
            let key = key_string(key, path)?;
            let here = format!("{path}.{key}");
            match key.as_str() {
                "type" => s.type_ = Some(string(v, &here)?),
                "format" => s.format = Some(string(v, &here)?),
                "description" => s.description = Some(string(v, &here)?),
                "nullable" => s.nullable = boolean(v, &here)?,
                "required" => s.required = strings(v, &here)?,
                "enum" => s.enum_values = Some(json_list(v, &here)?),
                "default" => s.default = Some(json(v, &here)?),
                "properties" => {
                    let props = v.as_mapping().ok_or_else(|| {
                        Error::at(
                            &here,
                            format!(
                                "expected a mapping of property names to schemas, found {}",
                                describe(v)
                            ),
                            "write `properties:` as `name: {type: ...}` entries",
                        )
                    })?;
                    for (name, prop) in props {
                        let name = key_string(name, &here)?;
                        let prop_path = format!("{path}.{}", path_segment(&name));
                        s.properties.push((name, Schema::parse(prop, &prop_path)?));
                    }
                }
                "items" => {
                    if v.is_sequence() {
                        return Err(Error::at(&here, "`items` is a list of schemas (tuple validation), which Kubernetes does not accept", "give `items` one schema that every element follows"));
                    }
                    s.items = Some(Box::new(Schema::parse(v, &here)?));
                }
                "additionalProperties" => {
                    s.additional_properties = Some(match v {
                        Yaml::Bool(b) => AdditionalProperties::Bool(*b),
                        _ => AdditionalProperties::Schema(Box::new(Schema::parse(v, &here)?)),
                    })
                }
                "oneOf" => s.one_of = schema_list(v, &here)?,
                "anyOf" => s.any_of = schema_list(v, &here)?,
                "allOf" => s.all_of = schema_list(v, &here)?,
                "not" => s.not = Some(Box::new(Schema::parse(v, &here)?)),
                "x-kubernetes-preserve-unknown-fields" => {
                    s.preserve_unknown_fields = Some(boolean(v, &here)?)
                }
                "x-kubernetes-embedded-resource" => s.embedded_resource = boolean(v, &here)?,
                "x-kubernetes-int-or-string" => s.int_or_string = boolean(v, &here)?,
                "x-kubernetes-list-type" => s.list_type = Some(string(v, &here)?),
                "x-kubernetes-list-map-keys" => s.list_map_keys = strings(v, &here)?,
                "x-kubernetes-map-type" => s.map_type = Some(string(v, &here)?),
                "x-kubernetes-validations" => s.validations = json_list(v, &here)?,
                "$ref" => {
                    return Err(Error::at(&here, "`$ref` is not allowed in a CustomResourceDefinition schema", "inline the referenced schema (controller-gen and kubebuilder do this for you)"));
                }
                k if CONSTRAINT_KEYS.contains(&k) => {
                    s.constraints.push((key.clone(), json(v, &here)?))
                }
                _ => {
                    return Err(Error::at(&here, format!("unknown schema keyword `{key}`"), "remove it or fix its spelling; the API server rejects keys JSONSchemaProps does not define"));
                }
            }
        }
        Ok(s)
    }
}

impl Schema {
    /// Parses a root schema and gives every node its exact JSON ([`Schema::raw`]),
    /// converting the YAML once.
    pub fn parse_root(value: &Yaml, path: &str) -> Result<Schema, Error> {
        let mut s = Schema::parse(value, path)?;
        s.attach(&std::sync::Arc::new(json(value, path)?), String::new());
        Ok(s)
    }

    fn attach(&mut self, root: &std::sync::Arc<serde_json::Value>, pointer: String) {
        let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
        for (name, p) in &mut self.properties {
            p.attach(root, format!("{pointer}/properties/{}", escape(name)));
        }
        if let Some(i) = &mut self.items {
            i.attach(root, format!("{pointer}/items"));
        }
        if let Some(AdditionalProperties::Schema(a)) = &mut self.additional_properties {
            a.attach(root, format!("{pointer}/additionalProperties"));
        }
        if let Some(n) = &mut self.not {
            n.attach(root, format!("{pointer}/not"));
        }
        for (key, list) in [
            ("oneOf", &mut self.one_of),
            ("anyOf", &mut self.any_of),
            ("allOf", &mut self.all_of),
        ] {
            for (i, x) in list.iter_mut().enumerate() {
                x.attach(root, format!("{pointer}/{key}/{i}"));
            }
        }
        self.raw_root = root.clone();
        self.pointer = pointer;
    }

    /// The node as JSON, exactly as written: what the generated types' markers must
    /// reproduce (`null` for a schema not read through [`Schema::parse_root`]).
    pub fn raw(&self) -> &serde_json::Value {
        static NULL: serde_json::Value = serde_json::Value::Null;
        self.raw_root.pointer(&self.pointer).unwrap_or(&NULL)
    }
}

/// A property name as a YAML path segment (`spec`, or `["a.b"]` when it needs quoting).
pub fn path_segment(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$' || c == '@')
    {
        format!("properties.{name}")
    } else {
        format!("properties[{name:?}]")
    }
}

/// A short description of a YAML value's shape, for error messages.
pub fn describe(v: &Yaml) -> String {
    match v {
        Yaml::Null => "null".to_owned(),
        Yaml::Bool(b) => format!("the boolean {b}"),
        Yaml::Number(n) => format!("the number {n}"),
        Yaml::String(s) => format!("the string {s:?}"),
        Yaml::Sequence(_) => "a list".to_owned(),
        Yaml::Mapping(_) => "a mapping".to_owned(),
        Yaml::Tagged(t) => format!("a value tagged {}", t.tag),
    }
}

/// A mapping key as a string (numbers and booleans spelled as YAML wrote them).
pub fn key_string(key: &Yaml, path: &str) -> Result<String, Error> {
    match key {
        Yaml::String(s) => Ok(s.clone()),
        Yaml::Number(n) => Ok(n.to_string()),
        Yaml::Bool(b) => Ok(b.to_string()),
        _ => Err(Error::at(
            path,
            format!("a mapping key is {}, not a string", describe(key)),
            "quote the key",
        )),
    }
}

/// A string value.
pub fn string(v: &Yaml, path: &str) -> Result<String, Error> {
    v.as_str().map(str::to_owned).ok_or_else(|| {
        Error::at(
            path,
            format!("expected a string, found {}", describe(v)),
            "write a string (quote it if YAML reads it as something else)",
        )
    })
}

/// A boolean value.
pub fn boolean(v: &Yaml, path: &str) -> Result<bool, Error> {
    v.as_bool().ok_or_else(|| {
        Error::at(
            path,
            format!("expected true or false, found {}", describe(v)),
            "write `true` or `false` unquoted",
        )
    })
}

/// A list of strings.
pub fn strings(v: &Yaml, path: &str) -> Result<Vec<String>, Error> {
    let seq = v.as_sequence().ok_or_else(|| {
        Error::at(
            path,
            format!("expected a list of strings, found {}", describe(v)),
            "write a YAML list: `[a, b]`",
        )
    })?;
    seq.iter()
        .enumerate()
        .map(|(i, item)| string(item, &format!("{path}[{i}]")))
        .collect()
}

fn schema_list(v: &Yaml, path: &str) -> Result<Vec<Schema>, Error> {
    let seq = v.as_sequence().ok_or_else(|| {
        Error::at(
            path,
            format!("expected a list of schemas, found {}", describe(v)),
            "write a YAML list of schemas",
        )
    })?;
    seq.iter()
        .enumerate()
        .map(|(i, item)| Schema::parse(item, &format!("{path}[{i}]")))
        .collect()
}

/// Any YAML value as JSON.
pub fn json(v: &Yaml, path: &str) -> Result<serde_json::Value, Error> {
    serde_json::to_value(v).map_err(|e| {
        Error::at(
            path,
            format!("this value has no JSON form: {e}"),
            "use only JSON-compatible YAML here (string keys, no tags)",
        )
    })
}

fn json_list(v: &Yaml, path: &str) -> Result<Vec<serde_json::Value>, Error> {
    let seq = v.as_sequence().ok_or_else(|| {
        Error::at(
            path,
            format!("expected a list, found {}", describe(v)),
            "write a YAML list",
        )
    })?;
    seq.iter()
        .enumerate()
        .map(|(i, item)| json(item, &format!("{path}[{i}]")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Schema, Error> {
        let v: Yaml = serde_yaml::from_str(text).unwrap();
        Schema::parse(&v, "root")
    }

    #[test]
    fn types_every_kubernetes_extension() {
        let s = parse(
            "type: object\nx-kubernetes-preserve-unknown-fields: true\nx-kubernetes-embedded-resource: true\n\
             x-kubernetes-map-type: atomic\nproperties:\n  a:\n    x-kubernetes-int-or-string: true\n  \
             l:\n    type: array\n    x-kubernetes-list-type: map\n    x-kubernetes-list-map-keys: [name]\n    \
             items: {type: object}\nx-kubernetes-validations:\n- rule: self.a > 0\n",
        )
        .unwrap();
        assert_eq!(s.preserve_unknown_fields, Some(true));
        assert!(s.embedded_resource);
        assert_eq!(s.map_type.as_deref(), Some("atomic"));
        assert!(s.properties[0].1.int_or_string);
        assert_eq!(s.properties[1].1.list_map_keys, ["name"]);
        assert_eq!(
            s.properties[1].1.items.as_ref().unwrap().path,
            "root.properties.l.items"
        );
        assert_eq!(s.validations.len(), 1);
    }

    #[test]
    fn unknown_keys_and_refs_are_errors_at_their_path() {
        let e = parse(
            "type: object\nproperties:\n  a:\n    x-kubernetes-preserve-unknown-field: true\n",
        )
        .unwrap_err();
        assert_eq!(
            e.yaml_path,
            "root.properties.a.x-kubernetes-preserve-unknown-field"
        );
        assert!(e.problem.contains("unknown schema keyword"));
        let e = parse("properties:\n  a:\n    $ref: '#/x'\n").unwrap_err();
        assert_eq!(e.yaml_path, "root.properties.a.$ref");
    }
}
