//! The crate's modules import each other without a circle (issue 30, item 4; STYLE.md:
//! "No import circles between files: shared vocabulary gets its own small module").
//!
//! The graph is read from the source: a top-level module (`writes`, `writes/*.rs`
//! included) depends on another when its code names it through `crate::` or, from a
//! top-level file, `super::` (an item the crate root re-exports, such as
//! `crate::Registration`, counts as its defining module). Unit tests (`#[cfg(test)]`
//! and `tests.rs` files) may use anything and are left out, as are comments.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, with its path relative to `src`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("module_graph: cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("module_graph: {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and unit tests.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names a path prefix (`crate::` or `super::`) reaches: `crate::a::b` gives `a`,
/// `crate::{a, b::c}` gives `a` and `b`.
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(prefix) {
        let at = from + i;
        from = at + prefix.len();
        let before = code[..at].chars().last();
        // `super::super::x` or `foo::crate::` are not what this reads.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let first = item.trim().split("::").next().unwrap_or_default();
                out.push(first.trim().to_owned());
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.push(rest[..end].to_owned());
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

/// The crate's module graph, read from `src`.
fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let rel = |p: &Path| p.strip_prefix(src).unwrap_or(p).to_path_buf();
    let top_of = |r: &Path| -> String {
        let first = r
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        first.unwrap_or_default().trim_end_matches(".rs").to_owned()
    };
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| top_of(&rel(p)))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    // `pub use module::{A, B};` in lib.rs: `crate::A` is module's.
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("module_graph: src/lib.rs");
    let mut reexports = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = rest.trim_end_matches(';').split_once("::") else {
            continue;
        };
        if modules.contains(module) {
            for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
                reexports.insert(item.trim().to_owned(), module.to_owned());
            }
        }
    }
    let mut graph = Graph::new();
    for path in &files {
        let r = rel(path);
        let top = top_of(&r);
        let nested = r.components().count() > 1 && !r.ends_with("mod.rs");
        if top == "lib" || top == "main" || r.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("module_graph: cannot read {}: {e}", path.display()));
        let code = code_of(&text);
        let mut names = names_after(&code, "crate::");
        if !nested {
            names.extend(names_after(&code, "super::"));
        }
        let deps = graph.entry(top.clone()).or_default();
        for name in names {
            let target = if modules.contains(&name) {
                Some(name)
            } else {
                reexports.get(&name).cloned()
            };
            if let Some(t) = target.filter(|t| *t != top) {
                deps.insert(t);
            }
        }
    }
    graph
}

/// A circle of the graph, as the modules along it (the first repeated at the end).
fn find_circle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|n| n == node).unwrap_or(0);
                let mut circle = path[start..].to_vec();
                circle.push(node.to_owned());
                return Some(circle);
            }
            None => {}
        }
        marks.insert(node.to_owned(), Mark::Open);
        path.push(node.to_owned());
        for dep in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(dep, graph, marks, path) {
                return Some(c);
            }
        }
        path.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if let Some(c) = visit(node, graph, &mut marks, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn the_apiserver_modules_import_each_other_without_a_circle() {
    let graph = module_graph(&src_dir());
    // The reader sees the crate: the writes depend on the registry and the server.
    let writes = graph
        .get("writes")
        .expect("module_graph: no `writes` module read");
    assert!(
        writes.contains("registry"),
        "writes -> registry not read: {graph:?}"
    );
    assert!(
        writes.contains("server"),
        "writes -> server not read: {graph:?}"
    );
    if let Some(circle) = find_circle(&graph) {
        panic!(
            "apiserver/src has an import circle: {}. Move what both sides need into a \
             module of its own (as meta.rs holds the object helpers), or let the lower \
             module return work for the higher one (as strategies return Wake items).",
            circle.join(" -> ")
        );
    }
}

#[test]
fn a_circle_is_found_and_shown() {
    let mut g = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(
        find_circle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    g.get_mut("c").map(|deps| deps.remove("a"));
    assert_eq!(find_circle(&g), None);
}

#[test]
fn paths_are_read_from_use_lines_and_expressions() {
    let code = code_of(
        "use crate::{meta, registry::Registration};\nuse super::store::State;\n\
         fn f() { crate::writes::x(); super::super::nope(); } // crate::comment\n\
         #[cfg(test)]\nmod tests { use crate::testonly; }",
    );
    assert_eq!(
        names_after(&code, "crate::"),
        ["meta", "registry", "writes"]
    );
    assert_eq!(names_after(&code, "super::"), ["store", "super"]);
}
