//! Markers in doc comments (`/// +genclient`, `//! +groupName=...`), as Go's gengo
//! reads `// +` comment lines: each doc line whose text starts with `+` is a marker, and
//! is left out of the docs kubegen keeps.
//!
//! Every marker kubegen reads is defined once, in the registry
//! (`kubegen_templates::markers::REGISTRY`; `kubegen markers` prints it). A marker of a
//! family kubegen reads (`+genclient*`, `+k8s:*`, `+kubebuilder:validation:*`, ...) that
//! the registry does not know is an error, and so is any marker a typo away from a
//! known one (`+genclinet`): a misspelled `+genclient` would otherwise silently drop the
//! kind. Other tools' markers (`+patchStrategy`, `+protobuf`) are kept, unread.

use std::path::Path;

use proc_macro2::Span;
use syn::spanned::Spanned;

use kubegen_templates::markers as registry;

use crate::error::Error;

/// One marker line: its name (`genclient:onlyVerbs`), its value (`get,list`) and where
/// it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The text between `+` and the first `=` (`genclient:onlyVerbs`).
    pub name: String,
    /// The text after the first `=`, if any.
    pub value: Option<String>,
    /// 1-based line of the `+`.
    pub line: usize,
    /// 1-based column of the `+`.
    pub column: usize,
}

impl Marker {
    /// An error pointing at this marker.
    pub fn error(&self, file: &Path, problem: impl Into<String>, fix: impl Into<String>) -> Error {
        Error::in_source(file, self.line, self.column, problem, fix)
    }

    /// The marker as written (`+genclient:onlyVerbs=get,list`).
    pub fn text(&self) -> String {
        match &self.value {
            Some(v) => format!("+{}={v}", self.name),
            None => format!("+{}", self.name),
        }
    }
}

/// The doc lines and markers of `attrs`: markers apart, the remaining lines joined as
/// the docs (`None` when no line remains). Unknown markers of kubegen's families are
/// errors.
pub fn read(attrs: &[syn::Attribute], file: &Path) -> Result<(Vec<Marker>, Option<String>), Error> {
    let mut markers = Vec::new();
    let mut lines = Vec::new();
    let mut in_fence = false;
    for attr in attrs {
        let Some((text, span, sugared)) = doc_text(attr) else {
            continue;
        };
        // `"".lines()` is empty, but a blank doc line is a paragraph break.
        let text_lines: Vec<&str> = if text.is_empty() {
            vec![""]
        } else {
            text.split('\n').collect()
        };
        for (i, line) in text_lines.into_iter().enumerate() {
            let trimmed = line.trim_start();
            // Inside a fenced code block every line is text (a diff's `+added` is not
            // a marker).
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                in_fence = !in_fence;
            }
            let is_marker = !in_fence
                && trimmed
                    .strip_prefix('+')
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic()));
            if !is_marker {
                lines.push(line.strip_prefix(' ').unwrap_or(line).to_owned());
                continue;
            }
            let body = trimmed[1..].trim_end();
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
                None => (body.to_owned(), None),
            };
            let start = span.start();
            // A `///` comment's text starts 3 columns after the comment; an explicit
            // `#[doc = "..."]` points at its literal.
            let indent = line.len() - trimmed.len();
            let column = if sugared && i == 0 {
                start.column + 1 + 3 + indent
            } else {
                start.column + 1
            };
            let marker = Marker {
                name,
                value,
                line: start.line + i,
                column,
            };
            check(&marker, file)?;
            markers.push(marker);
        }
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    while lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines.remove(0);
    }
    let doc = (!lines.is_empty()).then(|| lines.join("\n"));
    Ok((markers, doc))
}

/// A marker kubegen knows (by the registry) must be written as its grammar says; an
/// unknown one of a family kubegen reads, or one a typo away from a known marker, is an
/// error naming the nearest known one. Other tools' markers pass.
fn check(marker: &Marker, file: &Path) -> Result<(), Error> {
    match registry::resolve(&marker.name, marker.value.as_deref(), 0) {
        Some((def, u)) => {
            registry::check_value(def, &u).map_err(|e| marker.error(file, e.problem, e.fix))
        }
        None => {
            let near = registry::suggest(&marker.name);
            if !registry::is_owned(&marker.name) && near.is_none() {
                return Ok(());
            }
            Err(marker.error(
                file,
                format!("unknown marker `{}`", marker.text()),
                match near {
                    Some(n) => format!(
                        "did you mean `+{n}`? (`kubegen markers` lists every marker kubegen reads)"
                    ),
                    None => "`kubegen markers` lists every marker kubegen reads".to_owned(),
                },
            ))
        }
    }
}

/// The text of a doc attribute, the span to report at, and whether it was written as a
/// `///`/`//!` comment.
fn doc_text(attr: &syn::Attribute) -> Option<(String, Span, bool)> {
    if !attr.path().is_ident("doc") {
        return None;
    }
    let syn::Meta::NameValue(nv) = &attr.meta else {
        return None;
    };
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(s),
        ..
    }) = &nv.value
    else {
        return None;
    };
    let sugared = s.span().start() == attr.pound_token.span().start();
    let span = if sugared { attr.span() } else { s.span() };
    Some((s.value(), span, sugared))
}

/// The first marker named `name`.
pub fn find<'a>(markers: &'a [Marker], name: &str) -> Option<&'a Marker> {
    markers.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn markers(src: &str) -> Result<(Vec<Marker>, Option<String>), Error> {
        let item: syn::ItemStruct = syn::parse_str(src).unwrap();
        read(&item.attrs, Path::new("t.rs"))
    }

    #[test]
    fn markers_are_read_and_left_out_of_the_docs() {
        let (m, doc) =
            markers("/// Foo is a thing.\n///\n/// +genclient\n/// +genclient:onlyVerbs=get,list\nstruct Foo;")
                .unwrap();
        assert_eq!(doc.as_deref(), Some("Foo is a thing."));
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].name, "genclient:onlyVerbs");
        assert_eq!(m[1].value.as_deref(), Some("get,list"));
        assert_eq!((m[0].line, m[0].column), (3, 5));
    }

    #[test]
    fn other_tools_markers_are_kept_unread_and_unknown_owned_ones_fail() {
        let (m, _) =
            markers("/// +kubebuilder:object:root=true\n/// +listType=map\nstruct Foo;").unwrap();
        assert_eq!(m.len(), 2);
        let e = markers("/// +genclient:noVerb\nstruct Foo;").unwrap_err();
        assert!(
            e.problem.contains("unknown marker `+genclient:noVerb`"),
            "{e}"
        );
        assert!(markers("/// +groupname=x\nstruct Foo;").is_err());
        assert!(markers("/// +k8s:openapi-gen=true\nstruct Foo;").is_err());
        assert!(markers("/// +genclient=true\nstruct Foo;").is_err());
    }

    #[test]
    fn lines_in_code_fences_are_never_markers() {
        let attrs: Vec<syn::Attribute> = syn::parse_quote! {
            /// A diff:
            /// ```text
            /// +added line
            /// ```
            /// +kubebuilder:validation:Minimum=1
        };
        let (markers, doc) = super::read(&attrs, std::path::Path::new("x.rs")).unwrap();
        assert_eq!(markers.len(), 1, "{markers:?}");
        assert_eq!(markers[0].name, "kubebuilder:validation:Minimum");
        assert!(doc.unwrap().contains("+added line"));
    }
}
