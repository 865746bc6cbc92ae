//! Each rule against the message kube-apiserver 1.36.3 gives for the same CRD
//! (`kubectl create --dry-run=server`; the messages are copied from its answers).

use serde_json::{json, Value};

use super::*;

/// A one-version CRD of `group` whose root schema has `properties`.
fn crd(group: &str, properties: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("foos.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": properties}}
            }]
        }
    })
}

/// The errors as kube-apiserver prints them (its paths), sorted.
fn messages(crd: &Value) -> Vec<String> {
    let mut out: Vec<String> = validate(crd)
        .iter()
        .map(|e| format!("{}: {}", internal_path(crd, &e.field), e.body()))
        .collect();
    out.sort();
    out
}

#[test]
fn a_valid_crd_has_no_errors() {
    let c = crd(
        "example.com",
        json!({
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.all(x, x.size() > 0) && has(self.b) && self.?c.orValue(1) == 1"}],
                "properties": {"items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "port"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"},
                        "port": {"type": "integer", "default": 80},
                    }},
                }},
            },
        }),
    );
    assert_eq!(validate(&c), vec![]);
}

#[test]
fn root_metadata_takes_nothing_but_its_type() {
    let c = crd(
        "example.com",
        json!({"metadata": {"type": "object", "description": "meta"}}),
    );
    assert_eq!(messages(&c), ["spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"]);
    let names = crd(
        "example.com",
        json!({"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}),
    );
    assert_eq!(validate(&names), vec![]);
}

#[test]
fn protected_groups_need_approval() {
    let mut c = crd("samplecontroller.k8s.io", json!({}));
    assert_eq!(messages(&c), ["metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"]);
    c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "nope"});
    assert_eq!(messages(&c), ["metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"nope\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"]);
    for ok in [
        "unapproved, experimental-only",
        "https://github.com/kubernetes/kubernetes/pull/1",
    ] {
        c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": ok});
        assert_eq!(validate(&c), vec![], "{ok}");
    }
    assert!(!is_protected_group("cluster.x-k8s.io"));
    assert!(is_protected_group("k8s.io") && is_protected_group("a.kubernetes.io"));
}

#[test]
fn cel_syntax_errors_are_reported_as_cel_go_prints_them() {
    let c = crd(
        "example.com",
        json!({"spec": {"type": "object", "x-kubernetes-validations": [{"rule": "self.a =="}]}}),
    );
    assert_eq!(messages(&c), ["spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.a ==\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.a ==\n | .........^"]);
}

#[test]
fn cel_rules_kube_apiserver_accepts_parse() {
    for rule in [
        "self.all(x, x.size() > 0)",
        "has(self.spec) ? self.spec.x == 'a' : true",
        "self.?a.orValue('') != '' || [?self.?b].size() == 0",
        "self.exists_one(x, x == 1) && self.map(x, x * 2).filter(y, y > 2).size() >= 0",
        "oldSelf == self",
        "self.matches('^[a-z]+$') && self.startsWith(\"a\")",
        "!has(self.x) || (self.x in ['a', 'b'])",
        "cel.bind(n, self.name, n.size() < 10)",
        "self.`dashed-name` == 1",
        "size(self) <= 3 && int(self.n) < 10u + 1",
        "duration(self.d) > duration('1s') && timestamp(self.t) < now()",
    ] {
        assert_eq!(cel_syntax(rule), Ok(()), "{rule}");
    }
    // cel-go (and so kube-apiserver) allows 250 levels of nesting; the cel crate's
    // default is 96.
    // What kube-apiserver 1.36.3 accepts and refuses for depth (its answers).
    let parens = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
    assert_eq!(cel_syntax(&parens(200)), Ok(()));
    assert_eq!(
        cel_syntax(&parens(260)),
        Err("ERROR: <input>:-1:0: expression recursion limit exceeded: 250".into())
    );
    assert_eq!(cel_syntax(&format!("1{} > 0", " + 1".repeat(100))), Ok(()));
    assert_eq!(cel_syntax(&vec!["true"; 300].join(" || ")), Ok(()));
    assert_eq!(cel_syntax(&format!("{}true", "!".repeat(300))), Ok(()));
    assert_eq!(
        cel_syntax(&format!("has(self{})", ".a".repeat(200))),
        Ok(())
    );
    for refused in [
        format!("1{} > 0", " + 1".repeat(300)),
        format!("has(self{})", ".a".repeat(300)),
    ] {
        assert_eq!(
            cel_syntax(&refused),
            Err("ERROR: <input>:-1:0: max recursion depth exceeded".into())
        );
    }
    // Nothing a fuzzer writes takes the process down.
    assert!(cel_syntax(&"(".repeat(100_000)).is_err());
    assert!(cel_syntax(&"-".repeat(99_000)).is_err());
    assert!(cel_syntax(&"'".repeat(7)).is_err());
}

#[test]
fn map_lists_need_keys() {
    let c = crd(
        "example.com",
        json!({"items": {"type": "array", "x-kubernetes-list-type": "map",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}),
    );
    assert_eq!(messages(&c), ["spec.validation.openAPIV3Schema.properties[items].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"]);
}

#[test]
fn map_list_keys_are_item_properties() {
    let c = crd(
        "example.com",
        json!({"items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["nme"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}),
    );
    assert_eq!(messages(&c), ["spec.validation.openAPIV3Schema.properties[items].x-kubernetes-list-map-keys: Invalid value: [\"nme\"]: entries must all be names of item properties"]);
}

#[test]
fn map_list_keys_are_required_or_defaulted() {
    let c = crd(
        "example.com",
        json!({"items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}),
    );
    assert_eq!(messages(&c), ["spec.validation.openAPIV3Schema.properties[items].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"]);
}

#[test]
fn map_lists_hold_objects() {
    let c = crd(
        "example.com",
        json!({"items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "string"}}}),
    );
    assert_eq!(messages(&c), ["spec.validation.openAPIV3Schema.properties[items].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map"]);
}

#[test]
fn printer_column_types_are_kube_apiservers() {
    let mut c = crd("example.com", json!({}));
    c["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "Size", "type": "int", "jsonPath": ".spec.size"}]);
    assert_eq!(messages(&c), ["spec.additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string"]);
    // Two versions with different columns: reported per version.
    let mut v2 = c["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["additionalPrinterColumns"] = json!([]);
    c["spec"]["versions"].as_array_mut().unwrap().push(v2);
    assert_eq!(messages(&c), ["spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string"]);
}

#[test]
fn defaults_have_their_schemas_type() {
    let c = crd(
        "example.com",
        json!({"spec": {"type": "object", "properties": {
            "size": {"type": "integer", "default": "big"},
            "name": {"type": "string", "default": 3},
            "tags": {"type": "array", "items": {"type": "string"}, "default": [1]},
            "ratio": {"type": "number", "default": 1},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "default": "http"},
            "maybe": {"type": "string", "nullable": true, "default": null},
        }}}),
    );
    assert_eq!(
        messages(&c),
        [
            "spec.validation.openAPIV3Schema.properties[spec].properties[name].default: Invalid value: \"integer\":  in body must be of type string: \"integer\"",
            "spec.validation.openAPIV3Schema.properties[spec].properties[size].default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
            "spec.validation.openAPIV3Schema.properties[spec].properties[tags].default.[0]: Invalid value: \"integer\": [0] in body must be of type string: \"integer\"",
        ]
    );
}
