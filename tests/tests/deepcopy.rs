//! Deepcopy as `Clone`: `clone()` copies deeply, `clone_from()` copies into the target
//! and reuses its allocations for String, Vec, Option and Box fields.

mod model {
    include!(concat!(env!("OUT_DIR"), "/deepcopy_model.rs"));
}

use model::v1::Node;
use std::collections::BTreeMap;

fn leaf(name: &str) -> Node {
    Node {
        name: name.to_owned(),
        weight: 1,
        ..Node::default()
    }
}

#[test]
fn clone_is_deep_and_equal() {
    let source = Node {
        name: "root".into(),
        children: vec![leaf("a"), leaf("b")],
        parent: Some(Box::new(leaf("p"))),
        note: Some("n".into()),
        weight: 7,
        labels: BTreeMap::from([("k".to_owned(), "v".to_owned())]),
    };
    let copy = source.clone();
    assert_eq!(copy, source);
    assert_ne!(copy.name.as_ptr(), source.name.as_ptr());
    assert_ne!(copy.children.as_ptr(), source.children.as_ptr());
}

#[test]
fn clone_from_reuses_string_vec_option_and_box_allocations() {
    let source = Node {
        name: "a name that fits".into(),
        children: vec![leaf("child one"), leaf("child two")],
        parent: Some(Box::new(leaf("parent"))),
        note: Some("a note".into()),
        weight: 3,
        labels: BTreeMap::from([("k".to_owned(), "v".to_owned())]),
    };
    let mut target = Node {
        name: String::with_capacity(64),
        children: {
            let mut v = Vec::with_capacity(8);
            v.push(Node {
                name: String::with_capacity(64),
                ..leaf("")
            });
            v
        },
        parent: Some(Box::new(Node {
            name: String::with_capacity(64),
            ..leaf("")
        })),
        note: Some(String::with_capacity(64)),
        ..Node::default()
    };
    let name = target.name.as_ptr();
    let children = target.children.as_ptr();
    let first_child_name = target.children[0].name.as_ptr();
    let parent: *const Node = &**target.parent.as_ref().unwrap();
    let parent_name = target.parent.as_ref().unwrap().name.as_ptr();
    let note = target.note.as_ref().unwrap().as_ptr();

    target.clone_from(&source);

    assert_eq!(target, source);
    assert_eq!(target.name.as_ptr(), name, "String reuses its buffer");
    assert_eq!(target.children.as_ptr(), children, "Vec reuses its buffer");
    assert_eq!(
        target.children[0].name.as_ptr(),
        first_child_name,
        "Vec elements are cloned into"
    );
    assert_eq!(
        &**target.parent.as_ref().unwrap() as *const Node,
        parent,
        "Box reuses its allocation"
    );
    assert_eq!(
        target.parent.as_ref().unwrap().name.as_ptr(),
        parent_name,
        "and clones into it"
    );
    assert_eq!(
        target.note.as_ref().unwrap().as_ptr(),
        note,
        "Option clones into its value"
    );
}

#[test]
fn generated_enum_catch_all_reuses_its_string() {
    use kubegen_tests::golden::apis::constructs::v1::EverythingSpecProtocols;
    let mut target = EverythingSpecProtocols::Other(String::with_capacity(32));
    let ptr = match &target {
        EverythingSpecProtocols::Other(s) => s.as_ptr(),
        _ => unreachable!(),
    };
    target.clone_from(&EverythingSpecProtocols::Other("SCTP".into()));
    match &target {
        EverythingSpecProtocols::Other(s) => {
            assert_eq!(s, "SCTP");
            assert_eq!(s.as_ptr(), ptr);
        }
        other => panic!("unexpected {other:?}"),
    }
    target.clone_from(&EverythingSpecProtocols::Tcp);
    assert_eq!(target, EverythingSpecProtocols::Tcp);
}

#[test]
fn golden_kinds_clone_equal() {
    use kubegen_tests::golden::apis::constructs::v1::Everything;
    let e: Everything = serde_json::from_value(serde_json::json!({
        "apiVersion": "constructs.example.com/v1", "kind": "Everything",
        "metadata": {"name": "e"},
        "spec": {"name": "n", "count": 1, "extensible": {"x": 1}, "protocols": ["TCP", "X"]},
    }))
    .unwrap();
    let mut target = Everything::default();
    target.clone_from(&e);
    assert_eq!(target, e);
    assert_eq!(e.clone(), e);
}
