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
        .into_iter()
        .map(|e| e.internal(crd).to_string())
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

/// Structural-schema violations of every kind, as kube-apiserver 1.36.3 listed them for
/// this CRD (`kubectl create --dry-run=server`): the structural ones first, sorted by
/// their text as it sorts them, then the schema's own rules (kube-apiserver lists those
/// in Go's map order, which varies between runs; ours are by property name).
#[test]
fn non_structural_schemas_get_kube_apiserver_messages() {
    let mut c = crd(
        "s.example.com",
        json!({"spec": {"type": "object", "properties": {
            "untyped": {},
            "list": {"type": "array"},
            "intOrList": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]},
            "choice": {"type": "string", "oneOf": [
                {"description": "hi", "nullable": true},
                {"x-kubernetes-map-type": "atomic", "properties": {"metadata": {"maxLength": 1}}},
            ]},
            "embedded": {"type": "string", "x-kubernetes-embedded-resource": true},
            "ios": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true},
            "fine": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "both": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
            "open": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true},
            "unique": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        }}}),
    );
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["anyOf"] =
        json!([{"properties": {"ghost": {"minLength": 1}}}]);
    let at = "spec.validation.openAPIV3Schema";
    let spec = format!("{at}.properties[spec].properties");
    let mut want = vec![
        format!("{at}.properties[ghost]: Required value: because it is defined in {at}.anyOf[0].properties[ghost]"),
        format!("{spec}[choice].oneOf[0].description: Forbidden: must be empty to be structural"),
        format!("{spec}[choice].oneOf[0].nullable: Forbidden: must be false to be structural"),
        format!("{spec}[choice].oneOf[1].properties[metadata]: Forbidden: must not be specified in a nested context"),
        format!("{spec}[choice].oneOf[1].x-kubernetes-map-type: Forbidden: must be undefined to be structural"),
        format!("{spec}[embedded].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"),
        format!("{spec}[embedded].type: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true"),
        format!("{spec}[intOrList].anyOf[0].type: Forbidden: must be empty to be structural"),
        format!("{spec}[intOrList].anyOf[1].items.type: Forbidden: must be empty to be structural"),
        format!("{spec}[intOrList].anyOf[1].type: Forbidden: must be empty to be structural"),
        format!("{spec}[intOrList].type: Required value: must not be empty for specified object fields"),
        format!("{spec}[ios].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"),
        format!("{spec}[list].items: Required value: must be specified"),
        format!("{spec}[untyped].type: Required value: must not be empty for specified object fields"),
        // Then the schema's own rules.
        format!("{spec}[both].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"),
        format!("{spec}[choice].oneOf[1].type: Required value: must be object if x-kubernetes-map-type is specified"),
        format!("{spec}[unique].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
    ];
    let got: Vec<String> = validate(&c)
        .into_iter()
        .map(|e| e.internal(&c).to_string())
        .collect();
    assert_eq!(got, want);
    // A schema error the structural conversion stops at hides the structural ones
    // (`messages` sorts).
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["closed"] = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false});
    want = vec![
        format!("{spec}[both].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"),
        format!("{spec}[choice].oneOf[1].type: Required value: must be object if x-kubernetes-map-type is specified"),
        format!("{spec}[closed].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"),
        format!("{spec}[unique].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
    ];
    assert_eq!(messages(&c), want);
}

#[test]
fn optional_old_self_needs_a_transition_rule() {
    let rules = |rule: &str| {
        crd(
            "example.com",
            json!({"spec": {"type": "object", "x-kubernetes-validations": [
                {"rule": rule, "optionalOldSelf": true}
            ]}}),
        )
    };
    // kube-apiserver 1.36.3: "...x-kubernetes-validations[0].optionalOldSelf: Invalid
    // value: true: may not be set if oldSelf is not used in rule".
    assert_eq!(
        messages(&rules("self.mode != 'oldSelf'")),
        vec!["spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"]
    );
    assert_eq!(
        messages(&rules("!oldSelf.hasValue() || self.mode != 'x'")),
        Vec::<String>::new()
    );
}
