//! Field selectors: apimachinery's `fields.Selector`, parsed and matched exactly as the
//! API server and client-go do.
//!
//! Contract:
//! - [`Selector::parse`] accepts comma-separated terms `field=value`, `field==value` and
//!   `field!=value`; there are no sets and no existence tests. The input is split on
//!   commas not preceded by a backslash, the terms are sorted as raw strings, empty terms
//!   are skipped, and each term is split at its first operator (`!=`, `==`, `=` tried in
//!   that order at each position). Field names are taken as written: no trimming, no
//!   validation (which fields a resource supports is the API server's business). Values
//!   are unescaped with [`unescape_value`]: `\\`, `\,` and `\=` are the only escapes, and
//!   an unescaped `,` or `=` in a value is an error. A term with an empty field and an
//!   empty value (`=`, `==`, `!=`) selects everything and is dropped, as apimachinery's
//!   parser does.
//! - `=` and `==` both mean equality and print as `=`; `Display` gives apimachinery's
//!   `String()` (terms in parse order, values escaped with [`escape_value`]).
//! - [`Selector::matches`] reads each field's value, `""` when the field is absent:
//!   `f=v` holds when the value is `v`, `f!=v` when it is not. The empty selector
//!   ([`Selector::everything`]) matches everything, [`Selector::nothing`] nothing.
//!   Matching never allocates.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

/// A set of fields a [`Selector`] can be matched against (apimachinery's
/// `fields.Fields`): the API server builds one per object from the fields its kind
/// supports (`metadata.name`, `metadata.namespace`, `status.phase`, ...).
///
/// Implemented for `BTreeMap<String, String>`, `HashMap<String, String>`, references, and
/// `Option`s (`None` has no fields).
pub trait Fields {
    /// The value of `field`, or `None` when absent (matched as `""`).
    fn get(&self, field: &str) -> Option<&str>;
}

impl Fields for BTreeMap<String, String> {
    fn get(&self, field: &str) -> Option<&str> {
        BTreeMap::get(self, field).map(String::as_str)
    }
}

impl<S: BuildHasher> Fields for HashMap<String, String, S> {
    fn get(&self, field: &str) -> Option<&str> {
        HashMap::get(self, field).map(String::as_str)
    }
}

impl<F: Fields + ?Sized> Fields for &F {
    fn get(&self, field: &str) -> Option<&str> {
        (**self).get(field)
    }
}

impl<F: Fields> Fields for Option<F> {
    fn get(&self, field: &str) -> Option<&str> {
        self.as_ref().and_then(|fields| fields.get(field))
    }
}

/// The fields every object supports, read from its metadata without copying
/// (apimachinery's `ObjectMetaFieldsSet`): `metadata.name`, and `metadata.namespace` for
/// namespaced kinds. Kinds with more fields (pods' `spec.nodeName`, `status.phase`, ...)
/// are the API server's to add.
///
/// ```
/// use kubegen_apimachinery::fields::{ObjectMetaFields, Selector};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let meta = ObjectMeta { name: Some("web-0".into()), namespace: Some("prod".into()), ..Default::default() };
/// let sel = Selector::parse("metadata.namespace=prod,metadata.name=web-0")?;
/// assert!(sel.matches(&ObjectMetaFields::new(&meta, true)));
/// assert!(!sel.matches(&ObjectMetaFields::new(&meta, false)));
/// # Ok::<(), kubegen_apimachinery::fields::ParseError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ObjectMetaFields<'a> {
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    namespaced: bool,
}

impl<'a> ObjectMetaFields<'a> {
    /// The fields of `meta`; `namespaced` says whether the kind has `metadata.namespace`.
    pub fn new(
        meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        namespaced: bool,
    ) -> Self {
        ObjectMetaFields { meta, namespaced }
    }
}

impl Fields for ObjectMetaFields<'_> {
    fn get(&self, field: &str) -> Option<&str> {
        match field {
            "metadata.name" => Some(self.meta.name.as_deref().unwrap_or("")),
            "metadata.namespace" if self.namespaced => {
                Some(self.meta.namespace.as_deref().unwrap_or(""))
            }
            _ => None,
        }
    }
}

/// A field requirement's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `field=value` (also parsed from `field==value`).
    Equals,
    /// `field!=value`.
    NotEquals,
}

impl Operator {
    /// The operator as written in a selector string (`"="` or `"!="`).
    ///
    /// ```
    /// use kubegen_apimachinery::fields::Operator;
    /// assert_eq!(Operator::NotEquals.as_str(), "!=");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::NotEquals => "!=",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One term of a field selector. `value` is unescaped.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The field name, as written (e.g. `metadata.name`).
    pub field: String,
    /// Equality or inequality.
    pub operator: Operator,
    /// The value to compare with, unescaped.
    pub value: String,
}

impl Requirement {
    /// Whether `fields` satisfy this term (an absent field has value `""`).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::fields::{Operator, Requirement};
    ///
    /// let r = Requirement { field: "x".into(), operator: Operator::NotEquals, value: "y".into() };
    /// assert!(r.matches(&BTreeMap::new()));
    /// ```
    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        let value = fields.get(&self.field).unwrap_or("");
        match self.operator {
            Operator::Equals => value == self.value,
            Operator::NotEquals => value != self.value,
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.field,
            self.operator,
            escape_value(&self.value)
        )
    }
}

/// A field selector: the AND of its [`Requirement`]s, or "nothing".
///
/// `Display` gives apimachinery's `String()`; `FromStr` is [`Selector::parse`]. The
/// default is [`Selector::everything`].
///
/// ```
/// use std::collections::BTreeMap;
/// use kubegen_apimachinery::fields::Selector;
///
/// let sel = Selector::parse("status.phase!=Failed,metadata.name==web-0")?;
/// assert_eq!(sel.to_string(), "metadata.name=web-0,status.phase!=Failed");
/// let fields = BTreeMap::from([
///     ("metadata.name".to_string(), "web-0".to_string()),
///     ("status.phase".to_string(), "Running".to_string()),
/// ]);
/// assert!(sel.matches(&fields));
/// assert_eq!(sel.requires_exact_match("metadata.name"), Some("web-0"));
/// # Ok::<(), kubegen_apimachinery::fields::ParseError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
    /// `Nothing()`: matches no fields (requirements is then empty).
    nothing: bool,
}

impl Selector {
    /// The selector that matches everything (apimachinery's `Everything()`).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::fields::Selector;
    /// assert!(Selector::everything().matches(&BTreeMap::new()));
    /// ```
    pub fn everything() -> Selector {
        Selector::default()
    }

    /// The selector that matches nothing (apimachinery's `Nothing()`): not empty, and
    /// rendered as `""`.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::fields::Selector;
    /// assert!(!Selector::nothing().matches(&BTreeMap::new()));
    /// ```
    pub fn nothing() -> Selector {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses a field selector string (apimachinery's `fields.ParseSelector`).
    ///
    /// ```
    /// use kubegen_apimachinery::fields::Selector;
    ///
    /// let sel = Selector::parse(r"spec.nodeName=a\,b")?;
    /// assert_eq!(sel.requirements()[0].value, "a,b");
    /// let err = Selector::parse("x=a,b").unwrap_err();
    /// assert_eq!(err.position(), 4);
    /// # Ok::<(), kubegen_apimachinery::fields::ParseError>(())
    /// ```
    pub fn parse(selector: &str) -> Result<Selector, ParseError> {
        let mut terms = split_terms(selector);
        terms.sort_unstable_by(|a, b| a.1.cmp(b.1));
        let mut requirements = Vec::with_capacity(terms.len());
        for (start, term) in terms {
            if term.is_empty() {
                continue;
            }
            let Some((field, operator, value_at)) = split_term(term) else {
                return Err(ParseError::InvalidTerm {
                    selector: selector.to_string(),
                    term: term.to_string(),
                    position: start,
                });
            };
            let raw = &term[value_at..];
            let value = unescape_value(raw).map_err(|source| ParseError::InvalidValue {
                selector: selector.to_string(),
                term: term.to_string(),
                position: start + value_at + source.position(),
                source,
            })?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(Requirement {
                field: field.to_string(),
                operator,
                value,
            });
        }
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// The selector `field=value` (apimachinery's `OneTermEqualSelector`).
    ///
    /// ```
    /// use kubegen_apimachinery::fields::Selector;
    /// assert_eq!(Selector::one_term_equal("metadata.name", "a=b").to_string(), r"metadata.name=a\=b");
    /// ```
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Selector {
        Selector::from_requirements([Requirement {
            field: field.into(),
            operator: Operator::Equals,
            value: value.into(),
        }])
    }

    /// The selector `field!=value` (apimachinery's `OneTermNotEqualSelector`).
    ///
    /// ```
    /// use kubegen_apimachinery::fields::Selector;
    /// assert_eq!(Selector::one_term_not_equal("status.phase", "Failed").to_string(), "status.phase!=Failed");
    /// ```
    pub fn one_term_not_equal(field: impl Into<String>, value: impl Into<String>) -> Selector {
        Selector::from_requirements([Requirement {
            field: field.into(),
            operator: Operator::NotEquals,
            value: value.into(),
        }])
    }

    /// The AND of `requirements`, in the order given (apimachinery's `AndSelectors` of
    /// one-term selectors). Like the parser, a term with an empty field and an empty value
    /// is dropped.
    ///
    /// ```
    /// use kubegen_apimachinery::fields::{Operator, Requirement, Selector};
    ///
    /// let sel = Selector::from_requirements([
    ///     Requirement { field: "b".into(), operator: Operator::Equals, value: "1".into() },
    ///     Requirement { field: "a".into(), operator: Operator::NotEquals, value: "2".into() },
    /// ]);
    /// assert_eq!(sel.to_string(), "b=1,a!=2");
    /// ```
    pub fn from_requirements(requirements: impl IntoIterator<Item = Requirement>) -> Selector {
        Selector {
            requirements: requirements
                .into_iter()
                .filter(|r| !(r.field.is_empty() && r.value.is_empty()))
                .collect(),
            nothing: false,
        }
    }

    /// A selector of `field=value` terms, one per entry in key order (apimachinery's
    /// `SelectorFromSet`). An empty map gives [`Selector::everything`].
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::fields::Selector;
    ///
    /// let set = BTreeMap::from([("metadata.name".to_string(), "x".to_string())]);
    /// assert_eq!(Selector::from_set(&set).to_string(), "metadata.name=x");
    /// ```
    pub fn from_set(set: &BTreeMap<String, String>) -> Selector {
        Selector::from_requirements(set.iter().map(|(field, value)| Requirement {
            field: field.clone(),
            operator: Operator::Equals,
            value: value.clone(),
        }))
    }

    /// Whether this selector matches everything (`Empty()` in Go); false for
    /// [`Selector::nothing`].
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is [`Selector::nothing`].
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    /// The terms, in parse order (sorted by their raw text) or construction order.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether `fields` satisfy every term. Never allocates.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::fields::Selector;
    ///
    /// let sel: Selector = "x=".parse()?;
    /// assert!(sel.matches(&BTreeMap::new()));
    /// # Ok::<(), kubegen_apimachinery::fields::ParseError>(())
    /// ```
    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(fields))
    }

    /// The value of the first `field=value` term on `field`, if any (apimachinery's
    /// `RequiresExactMatch`). The API server uses it to serve `metadata.name=x` or
    /// `spec.nodeName=n` from an index.
    ///
    /// ```
    /// use kubegen_apimachinery::fields::Selector;
    ///
    /// let sel = Selector::parse("metadata.name!=a,metadata.name=b")?;
    /// assert_eq!(sel.requires_exact_match("metadata.name"), Some("b"));
    /// assert_eq!(sel.requires_exact_match("spec.nodeName"), None);
    /// # Ok::<(), kubegen_apimachinery::fields::ParseError>(())
    /// ```
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.operator == Operator::Equals && r.field == field)
            .map(|r| r.value.as_str())
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            fmt::Display::fmt(r, f)?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Selector, ParseError> {
        Selector::parse(s)
    }
}

impl From<&BTreeMap<String, String>> for Selector {
    fn from(set: &BTreeMap<String, String>) -> Selector {
        Selector::from_set(set)
    }
}

/// Splits a selector on commas that are not escaped by a backslash, with each term's
/// byte offset (apimachinery's `splitTerms`). `""` gives no terms; a trailing comma gives
/// a trailing empty term.
fn split_terms(selector: &str) -> Vec<(usize, &str)> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::with_capacity(1);
    let mut start = 0;
    let mut escaped = false;
    // Bytes are enough: ',' and '\' are ASCII and never part of a multi-byte character.
    for (i, &c) in selector.as_bytes().iter().enumerate() {
        if escaped {
            escaped = false;
        } else if c == b'\\' {
            escaped = true;
        } else if c == b',' {
            terms.push((start, &selector[start..i]));
            start = i + 1;
        }
    }
    terms.push((start, &selector[start..]));
    terms
}

/// Splits a term at the first position where `!=`, `==` or `=` starts (tried in that
/// order), returning the field, the operator and the byte offset of the value.
fn split_term(term: &str) -> Option<(&str, Operator, usize)> {
    let bytes = term.as_bytes();
    for i in 0..bytes.len() {
        let (operator, len) = match (bytes[i], bytes.get(i + 1)) {
            (b'!', Some(b'=')) => (Operator::NotEquals, 2),
            (b'=', Some(b'=')) => (Operator::Equals, 2),
            (b'=', _) => (Operator::Equals, 1),
            _ => continue,
        };
        return Some((&term[..i], operator, i + len));
    }
    None
}

/// Escapes `\`, `,` and `=` with a backslash so that any string can be a field selector
/// value (apimachinery's `EscapeValue`).
///
/// ```
/// use kubegen_apimachinery::fields::escape_value;
/// assert_eq!(escape_value(r"a=b,c\d"), r"a\=b\,c\\d");
/// ```
pub fn escape_value(value: &str) -> std::borrow::Cow<'_, str> {
    if !value.contains(['\\', ',', '=']) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() + 4);
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

/// Reverses [`escape_value`] (apimachinery's `UnescapeValue`): `\\`, `\,` and `\=` are
/// the only escapes; any other backslash sequence, a trailing backslash, or an unescaped
/// `,` or `=` is an error.
///
/// ```
/// use kubegen_apimachinery::fields::unescape_value;
/// assert_eq!(unescape_value(r"a\=b\,c\\d").unwrap(), r"a=b,c\d");
/// assert!(unescape_value(r"\a").is_err());
/// ```
pub fn unescape_value(value: &str) -> Result<String, UnescapeError> {
    if !value.contains(['\\', ',', '=']) {
        return Ok(value.to_string());
    }
    let mut out = String::with_capacity(value.len());
    let mut escape_at = None;
    for (i, c) in value.char_indices() {
        if let Some(at) = escape_at.take() {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(UnescapeError::InvalidEscapeSequence {
                    sequence: format!("\\{c}"),
                    position: at,
                });
            }
            out.push(c);
            continue;
        }
        match c {
            '\\' => escape_at = Some(i),
            ',' | '=' => {
                return Err(UnescapeError::UnescapedCharacter {
                    character: c,
                    position: i,
                });
            }
            _ => out.push(c),
        }
    }
    if let Some(at) = escape_at {
        return Err(UnescapeError::InvalidEscapeSequence {
            sequence: "\\".to_string(),
            position: at,
        });
    }
    Ok(out)
}

/// Why [`unescape_value`] rejected a value. Positions are byte offsets in the value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnescapeError {
    /// A backslash not followed by `\`, `,` or `=` (or at the end).
    #[error("invalid escape sequence {sequence:?} at byte {position} of the value (only \\\\, \\, and \\= are escapes)")]
    InvalidEscapeSequence {
        /// The backslash and the character after it (just `\` at the end).
        sequence: String,
        /// Where the backslash is.
        position: usize,
    },
    /// A `,` or `=` without a backslash before it.
    #[error(
        "unescaped character {character:?} at byte {position} of the value (write \\{character})"
    )]
    UnescapedCharacter {
        /// The character.
        character: char,
        /// Where it is.
        position: usize,
    },
}

impl UnescapeError {
    /// The byte offset in the value where the error is.
    pub fn position(&self) -> usize {
        match self {
            UnescapeError::InvalidEscapeSequence { position, .. }
            | UnescapeError::UnescapedCharacter { position, .. } => *position,
        }
    }
}

/// Where and why [`Selector::parse`] failed. Positions are byte offsets in the selector.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A term has no `=`, `==` or `!=`.
    #[error("invalid field selector {selector:?}: can't understand term {term:?} at byte {position}: expected field=value, field==value or field!=value")]
    InvalidTerm {
        /// The whole selector.
        selector: String,
        /// The term.
        term: String,
        /// Where the term starts.
        position: usize,
    },
    /// A term's value is not correctly escaped.
    #[error("invalid field selector {selector:?}: in term {term:?} at byte {position}: {source}")]
    InvalidValue {
        /// The whole selector.
        selector: String,
        /// The term.
        term: String,
        /// Where the offending character is.
        position: usize,
        /// What is wrong with the value.
        source: UnescapeError,
    },
}

impl ParseError {
    /// The byte offset in the selector where parsing failed.
    pub fn position(&self) -> usize {
        match self {
            ParseError::InvalidTerm { position, .. }
            | ParseError::InvalidValue { position, .. } => *position,
        }
    }

    /// The term that failed.
    pub fn term(&self) -> &str {
        match self {
            ParseError::InvalidTerm { term, .. } | ParseError::InvalidValue { term, .. } => term,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn canonical(input: &str) -> String {
        match Selector::parse(input) {
            Ok(sel) => sel.to_string(),
            Err(e) => panic!("{input:?} should parse: {e}"),
        }
    }

    fn sel_matches(selector: &str, pairs: &[(&str, &str)]) -> bool {
        Selector::parse(selector).unwrap().matches(&fields(pairs))
    }

    #[test]
    fn canonical_strings() {
        // SEMANTICS 8.38
        assert_eq!(canonical("x=a,y=b,z=c"), "x=a,y=b,z=c");
        assert_eq!(canonical("x!=a,y=b"), "x!=a,y=b");
        let empty = Selector::parse("").unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty, Selector::everything());
        assert!(empty.matches(&fields(&[("x", "y")])));
        assert!(empty.matches(&fields(&[])));
        // SEMANTICS 8.41
        assert_eq!(canonical("x==y"), "x=y");
        assert_eq!(
            Selector::parse("x==y").unwrap().requirements()[0].operator,
            Operator::Equals
        );
        assert_eq!(canonical("x=a,a=x"), "a=x,x=a");
        assert_eq!(canonical("a=x,x=a"), "a=x,x=a");
    }

    #[test]
    fn escaped_values() {
        // SEMANTICS 8.39
        let sel = Selector::parse(r"x=a||y\=b").unwrap();
        assert_eq!(sel.requirements()[0].value, "a||y=b");
        assert_eq!(sel.to_string(), r"x=a||y\=b");
        let sel = Selector::parse(r"x=a\=\=b").unwrap();
        assert_eq!(sel.requirements()[0].value, "a==b");
    }

    #[test]
    fn errors() {
        // SEMANTICS 8.40
        let cases: &[(&str, usize)] = &[
            ("x=a||y=b", 6),
            ("x==a==b", 4),
            ("x=a,b", 4),
            ("x in (a)", 0),
            // Terms are sorted first, so "b" is the first one found wanting.
            ("x in (a,b,c)", 8),
            ("x", 0),
            (r"k=\a", 2),
            (r"k=\", 2),
        ];
        for &(input, position) in cases {
            match Selector::parse(input) {
                Ok(sel) => panic!("{input:?} should fail, parsed as {sel:?}"),
                Err(e) => assert_eq!(e.position(), position, "{input:?}: {e}"),
            }
        }
        assert!(matches!(
            Selector::parse("x=a||y=b"),
            Err(ParseError::InvalidValue {
                source: UnescapeError::UnescapedCharacter { character: '=', .. },
                ..
            })
        ));
        assert!(matches!(
            Selector::parse(r"k=\a"),
            Err(ParseError::InvalidValue {
                source: UnescapeError::InvalidEscapeSequence { .. },
                ..
            })
        ));
        let msg = Selector::parse("x=a,b").unwrap_err().to_string();
        assert!(msg.contains("\"b\""), "{msg}");
        assert!(msg.contains("byte 4"), "{msg}");
        // Sorting happens before parsing: the position still points into the input.
        let e = Selector::parse(r"z=ok,a=\q").unwrap_err();
        assert_eq!(e.position(), 7);
        assert_eq!(e.term(), r"a=\q");
    }

    #[test]
    fn matching() {
        // SEMANTICS 8.42
        assert!(sel_matches("x!=y", &[]));
        assert!(sel_matches("x=", &[]));
        assert!(!sel_matches("x=y", &[("x", "z")]));
        assert!(sel_matches("notin=in", &[("notin", "in")]));
        // SEMANTICS 8.43
        assert!(sel_matches(
            r"foo=bar,baz=blah,complex=\=value\\\,\\",
            &[("foo", "bar"), ("baz", "blah"), ("complex", r"=value\,\")]
        ));
        assert!(!Selector::nothing().matches(&fields(&[])));
        assert!(!Selector::nothing().is_empty());
        let hash: HashMap<String, String> = [("a".to_string(), "b".to_string())].into();
        assert!(Selector::one_term_equal("a", "b").matches(&hash));
        assert!(Selector::one_term_not_equal("a", "c").matches(&Some(&hash)));
    }

    #[test]
    fn escape_and_unescape() {
        // SEMANTICS 8.44
        let cases = [
            ("", ""),
            ("a", "a"),
            ("=", r"\="),
            (",", r"\,"),
            (r"\", r"\\"),
            (r"\=\,\", r"\\\=\\\,\\"),
        ];
        for (raw, escaped) in cases {
            assert_eq!(escape_value(raw), escaped);
            assert_eq!(unescape_value(escaped).unwrap(), raw);
        }
        assert_eq!(
            unescape_value(r"a\"),
            Err(UnescapeError::InvalidEscapeSequence {
                sequence: r"\".into(),
                position: 1
            })
        );
        assert_eq!(
            unescape_value("ab,"),
            Err(UnescapeError::UnescapedCharacter {
                character: ',',
                position: 2
            })
        );
    }

    #[test]
    fn split_terms_like_apimachinery() {
        // SEMANTICS 8.45
        let terms = |s| -> Vec<&str> { split_terms(s).into_iter().map(|t| t.1).collect() };
        assert_eq!(terms(r"k=\,,k2=v2"), vec![r"k=\,", "k2=v2"]);
        assert_eq!(terms("a=a,"), vec!["a=a", ""]);
        assert_eq!(terms("함=수,목=록"), vec!["함=수", "목=록"]);
        assert!(terms("").is_empty());
        assert_eq!(canonical("a=a,"), "a=a");
        assert_eq!(canonical("함=수,목=록"), "목=록,함=수");
    }

    #[test]
    fn apimachinery_quirks() {
        // Terms with an empty field and value select everything and are dropped.
        assert!(Selector::parse("=").unwrap().is_empty());
        assert!(Selector::parse("!=").unwrap().is_empty());
        assert_eq!(canonical("==,a=b"), "a=b");
        // An empty field with a value is kept; whitespace is part of the field.
        assert_eq!(canonical("=a"), "=a");
        assert_eq!(
            Selector::parse("x =a").unwrap().requirements()[0].field,
            "x "
        );
        // The first operator wins: "x=!y" is equality with value "!y".
        let sel = Selector::parse("x=!y").unwrap();
        assert_eq!(sel.requirements()[0].operator, Operator::Equals);
        assert_eq!(sel.requirements()[0].value, "!y");
    }

    #[test]
    fn exact_match() {
        let sel = Selector::parse("a!=x,a=y,b==z").unwrap();
        assert_eq!(sel.requires_exact_match("a"), Some("y"));
        assert_eq!(sel.requires_exact_match("b"), Some("z"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(Selector::nothing().requires_exact_match("a"), None);
        let set = fields(&[("b", "2"), ("a", "1")]);
        assert_eq!(Selector::from(&set).to_string(), "a=1,b=2");
    }

    fn requirement_strategy() -> impl Strategy<Value = Requirement> {
        (
            "[a-z][a-z.]{0,10}",
            prop_oneof![Just(Operator::Equals), Just(Operator::NotEquals)],
            r"[a-z0-9=,\\ 함]{0,8}",
        )
            .prop_map(|(field, operator, value)| Requirement {
                field,
                operator,
                value,
            })
    }

    /// Found by fuzzing (fuzz/corpus/selectors/fields-reordered-by-printing): printing
    /// normalises `==` to `=`, and parsing orders terms by their raw text (as
    /// apimachinery's `ParseSelector` does), so a selector that used `==` can parse back
    /// from its printed form with its terms in another order; the terms are the same and
    /// so is what it matches.
    #[test]
    fn printing_double_equals_may_reorder_terms_but_not_change_them() {
        let sel = Selector::parse("a==d!,a=d").unwrap();
        let printed = sel.to_string();
        assert_eq!(printed, "a=d!,a=d");
        let again = Selector::parse(&printed).unwrap();
        assert_eq!(again.to_string(), "a=d,a=d!");
        let mut terms: Vec<Requirement> = sel.requirements().to_vec();
        let mut terms_again: Vec<Requirement> = again.requirements().to_vec();
        terms.sort_by_key(|r| r.to_string());
        terms_again.sort_by_key(|r| r.to_string());
        assert_eq!(terms, terms_again);
        for value in ["d", "d!", ""] {
            let f = fields(&[("a", value)]);
            assert_eq!(sel.matches(&f), again.matches(&f), "a={value}");
        }
    }

    proptest! {
        #[test]
        fn canonical_string_round_trips(reqs in prop::collection::vec(requirement_strategy(), 0..6)) {
            // The parser orders terms by their raw text, so build in that order.
            let mut reqs = reqs;
            reqs.sort_by_key(|r| r.to_string());
            let sel = Selector::from_requirements(reqs);
            let text = sel.to_string();
            prop_assert_eq!(Selector::parse(&text), Ok(sel), "{}", text);
        }

        #[test]
        fn escape_round_trips(value in any::<String>()) {
            prop_assert_eq!(unescape_value(&escape_value(&value)), Ok(value));
        }

        #[test]
        fn parse_never_panics(input in any::<String>()) {
            let _ = Selector::parse(&input);
        }

        #[test]
        fn parse_never_panics_on_selector_like_input(input in r"[a-z=!,\\ ]{0,30}") {
            let _ = Selector::parse(&input);
        }
    }
}
