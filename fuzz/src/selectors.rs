//! Label and field selector parsing (`kubegen_runtime::labels`, `kubegen_runtime::fields`).

use std::collections::BTreeMap;

use kubegen_runtime::{fields, labels};

/// The first byte picks the parser (even: labels, odd: fields); the rest is the
/// selector text.
///
/// Properties: parsing never panics; a parsed selector prints as text that parses back
/// to the same requirements (in any order: like apimachinery, parsing sorts the terms as
/// written, and printing normalises `==` to `=`, which can reorder them); matching a selector against label or field sets built from
/// its own terms never panics; a rejected selector's error names a position inside
/// the input.
pub fn selectors(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if which % 2 == 0 {
        label_selector(text);
    } else {
        field_selector(text);
    }
}

fn label_selector(text: &str) {
    match labels::Selector::parse(text) {
        Err(e) => {
            assert!(
                e.position() <= text.len(),
                "error position {} past the input's {} bytes: {e}",
                e.position(),
                text.len()
            );
            assert!(!e.to_string().is_empty());
        }
        Ok(sel) => {
            let printed = sel.to_string();
            let again = labels::Selector::parse(&printed).unwrap_or_else(|e| {
                panic!("{text:?} parsed, printed as {printed:?}, which does not parse: {e}")
            });
            assert_eq!(
                sorted(again.requirements()),
                sorted(sel.requirements()),
                "{text:?} printed as {printed:?} parses differently"
            );
            let mut set = BTreeMap::new();
            for r in sel.requirements() {
                let value = r.values().first().cloned().unwrap_or_default();
                set.insert(r.key().to_owned(), value);
            }
            let _ = sel.matches(&set);
            let _ = sel.matches(&BTreeMap::<String, String>::new());
        }
    }
}

fn field_selector(text: &str) {
    match fields::Selector::parse(text) {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(sel) => {
            let printed = sel.to_string();
            let again = fields::Selector::parse(&printed).unwrap_or_else(|e| {
                panic!("{text:?} parsed, printed as {printed:?}, which does not parse: {e}")
            });
            assert_eq!(
                sorted(again.requirements()),
                sorted(sel.requirements()),
                "{text:?} printed as {printed:?} parses differently"
            );
            let mut set = BTreeMap::new();
            for r in sel.requirements() {
                set.insert(r.field.clone(), r.value.clone());
            }
            let _ = sel.matches(&set);
            let _ = sel.matches(&BTreeMap::<String, String>::new());
        }
    }
}

/// Requirements in a canonical order (by their printed form), for comparing selectors
/// as the conjunctions they are.
fn sorted<R: ToString + Clone>(requirements: &[R]) -> Vec<String> {
    let mut out: Vec<String> = requirements.iter().map(ToString::to_string).collect();
    out.sort();
    out
}
