//! Label selectors: apimachinery's `labels.Selector`, parsed, validated and matched
//! exactly as the API server and client-go do.
//!
//! Contract:
//! - [`Selector::parse`] accepts exactly apimachinery's grammar: comma-separated
//!   requirements `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key>n`, `key<n`,
//!   `key in (a,b)`, `key notin (a,b)`, with whitespace between tokens ignored. Keys must
//!   be qualified names (optional DNS-subdomain prefix and `/`, then a 1-63 character
//!   name) and values valid label values (empty, or 1-63 characters); `>`/`<` take one
//!   value that parses as an `i64`. A parse error names the byte position and the token
//!   where parsing failed and the rule that was broken.
//! - Requirements are kept sorted by key (stably: requirements on the same key keep their
//!   order), and value sets sorted and deduplicated, so [`Selector`]'s `Display` is
//!   apimachinery's canonical `String()` and two selectors that mean the same
//!   requirements in the same order compare equal.
//! - [`Selector::matches`] is the AND of all requirements; the empty selector
//!   ([`Selector::everything`]) matches every label set, [`Selector::nothing`] none.
//!   Matching never allocates: value sets and `>`/`<` bounds are prepared at parse time.
//! - Label *values* being matched are not validated (any string in the map is compared
//!   as is), as in apimachinery.
//!
//! One deliberate difference from Go: apimachinery's lexer treats a NUL byte as the end
//! of the input and silently ignores what follows it; here a NUL byte is an ordinary
//! character, so it ends up in a key or value and fails validation.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// A set of labels a [`Selector`] can be matched against.
///
/// Implemented for `BTreeMap<String, String>` (what [`kube::ResourceExt::labels`]
/// returns), `HashMap<String, String>`, references and `Option`s of those (`None` has no
/// labels).
///
/// ```
/// use std::collections::BTreeMap;
/// use kubegen_apimachinery::labels::Labels;
///
/// let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
/// assert_eq!(Labels::get(&labels, "app"), Some("web"));
/// assert_eq!(Labels::get(&None::<&BTreeMap<String, String>>, "app"), None);
/// ```
pub trait Labels {
    /// The value of label `key`, or `None` when the label is absent.
    fn get(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get(&self, key: &str) -> Option<&str> {
        BTreeMap::get(self, key).map(String::as_str)
    }
}

impl<S: BuildHasher> Labels for HashMap<String, String, S> {
    fn get(&self, key: &str) -> Option<&str> {
        HashMap::get(self, key).map(String::as_str)
    }
}

impl<L: Labels + ?Sized> Labels for &L {
    fn get(&self, key: &str) -> Option<&str> {
        (**self).get(key)
    }
}

impl<L: Labels> Labels for Option<L> {
    fn get(&self, key: &str) -> Option<&str> {
        self.as_ref().and_then(|labels| labels.get(key))
    }
}

/// A requirement's operator (apimachinery's `selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `key=value`: the label is present and equal to the value.
    Equals,
    /// `key==value`: same meaning as [`Operator::Equals`], kept apart so that the
    /// canonical string preserves `==`.
    DoubleEquals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key in (a,b)`: the label is present and its value is in the set.
    In,
    /// `key notin (a,b)`: the label is absent or its value is not in the set.
    NotIn,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>n`: the label is present, parses as an `i64` and is greater than `n`.
    GreaterThan,
    /// `key<n`: the label is present, parses as an `i64` and is less than `n`.
    LessThan,
}

impl Operator {
    /// apimachinery's name for the operator (`"="`, `"=="`, `"!="`, `"in"`, `"notin"`,
    /// `"exists"`, `"!"`, `"gt"`, `"lt"`).
    ///
    /// ```
    /// use kubegen_apimachinery::labels::Operator;
    /// assert_eq!(Operator::GreaterThan.as_str(), "gt");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a requirement is invalid (apimachinery's `NewRequirement` checks).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// The key is not a qualified name.
    #[error("invalid label key {key:?}: {rule}")]
    InvalidKey {
        /// The rejected key.
        key: String,
        /// The rule it broke.
        rule: &'static str,
    },
    /// A value is not a valid label value.
    #[error("invalid label value {value:?}: {rule}")]
    InvalidValue {
        /// The rejected value.
        value: String,
        /// The rule it broke.
        rule: &'static str,
    },
    /// The operator takes a different number of values.
    #[error("operator {operator:?} given {found} values: {rule}")]
    ValueCount {
        /// The operator.
        operator: Operator,
        /// How many values it was given.
        found: usize,
        /// The rule it broke.
        rule: &'static str,
    },
    /// The value of a `>`/`<` requirement is not an `i64`.
    #[error("for 'Gt', 'Lt' operators, the value must be an integer, found {value:?}")]
    NotAnInteger {
        /// The rejected value.
        value: String,
    },
}

/// One requirement of a label selector: a key, an operator and its values.
///
/// Values are held sorted and deduplicated; the bound of `>`/`<` is parsed once.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
    /// The parsed value of a `>`/`<` requirement (0 for other operators).
    bound: i64,
}

/// Above this many values, membership uses binary search instead of a linear scan.
const LINEAR_SCAN_MAX: usize = 8;

impl Requirement {
    /// Builds a validated requirement (apimachinery's `NewRequirement`).
    ///
    /// `In`/`NotIn` need at least one value; `Equals`, `DoubleEquals`, `NotEquals` exactly
    /// one; `Exists`/`DoesNotExist` none; `GreaterThan`/`LessThan` exactly one that parses
    /// as an `i64`. The key must be a qualified name and every value a valid label value.
    ///
    /// ```
    /// use kubegen_apimachinery::labels::{Operator, Requirement};
    ///
    /// let r = Requirement::new("tier", Operator::In, ["frontend", "backend"])?;
    /// assert_eq!(r.to_string(), "tier in (backend,frontend)");
    /// assert!(Requirement::new("x", Operator::Exists, ["a"]).is_err());
    /// # Ok::<(), kubegen_apimachinery::labels::RequirementError>(())
    /// ```
    pub fn new<I>(
        key: impl Into<String>,
        operator: Operator,
        values: I,
    ) -> Result<Requirement, RequirementError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let key = key.into();
        if let Err(rule) = validate_key(&key) {
            return Err(RequirementError::InvalidKey { key, rule });
        }
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        let bound = check_values(operator, &values).map_err(|(_, e)| e)?;
        Ok(Requirement::assemble(key, operator, values, bound))
    }

    /// Sorts and deduplicates checked values into a requirement.
    fn assemble(key: String, operator: Operator, mut values: Vec<String>, bound: i64) -> Self {
        values.sort_unstable();
        values.dedup();
        Requirement {
            key,
            operator,
            values,
            bound,
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted and without duplicates (empty for `Exists`/`DoesNotExist`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, value: &str) -> bool {
        if self.values.len() <= LINEAR_SCAN_MAX {
            self.values.iter().any(|v| v == value)
        } else {
            self.values
                .binary_search_by(|v| v.as_str().cmp(value))
                .is_ok()
        }
    }

    /// Whether `labels` satisfy this requirement. Never allocates.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::labels::{Operator, Requirement};
    ///
    /// let r = Requirement::new("x", Operator::GreaterThan, ["1"])?;
    /// assert!(r.matches(&BTreeMap::from([("x".to_string(), "2".to_string())])));
    /// # Ok::<(), kubegen_apimachinery::labels::RequirementError>(())
    /// ```
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|n| n > self.bound),
            Operator::LessThan => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|n| n < self.bound),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            Operator::Exists => return f.write_str(&self.key),
            Operator::DoesNotExist => return write!(f, "!{}", self.key),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::In => " in (",
            Operator::NotIn => " notin (",
        };
        f.write_str(&self.key)?;
        f.write_str(op)?;
        for (i, value) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(value)?;
        }
        if matches!(self.operator, Operator::In | Operator::NotIn) {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Checks the value count and values for `operator`; on failure returns the index of the
/// offending value (0 for count errors) with the error. On success returns the parsed
/// bound of `>`/`<` (0 otherwise).
fn check_values<S: AsRef<str>>(
    operator: Operator,
    values: &[S],
) -> Result<i64, (usize, RequirementError)> {
    let count_error = |rule| {
        Err((
            0,
            RequirementError::ValueCount {
                operator,
                found: values.len(),
                rule,
            },
        ))
    };
    let mut bound = 0;
    match operator {
        Operator::In | Operator::NotIn => {
            if values.is_empty() {
                return count_error("for 'in', 'notin' operators, values set can't be empty");
            }
        }
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
            if values.len() != 1 {
                return count_error("exact-match compatibility requires one single value");
            }
        }
        Operator::Exists | Operator::DoesNotExist => {
            if !values.is_empty() {
                return count_error("values set must be empty for exists and does not exist");
            }
        }
        Operator::GreaterThan | Operator::LessThan => {
            if values.len() != 1 {
                return count_error("for 'Gt', 'Lt' operators, exactly one value is required");
            }
            let value = values[0].as_ref();
            bound = value.parse::<i64>().map_err(|_| {
                (
                    0,
                    RequirementError::NotAnInteger {
                        value: value.to_string(),
                    },
                )
            })?;
        }
    }
    for (i, value) in values.iter().enumerate() {
        let value = value.as_ref();
        if let Err(rule) = validate_value(value) {
            return Err((
                i,
                RequirementError::InvalidValue {
                    value: value.to_string(),
                    rule,
                },
            ));
        }
    }
    Ok(bound)
}

const NAME_RULE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', \
and must start and end with an alphanumeric character (regex '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const PREFIX_RULE: &str = "prefix part must be a lowercase RFC 1123 subdomain: lower case \
alphanumeric characters, '-' or '.', each dot-separated part starting and ending with an \
alphanumeric character (regex '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric \
characters, '-', '_' or '.', and must start and end with an alphanumeric character \
(regex '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `[A-Za-z0-9]` at both ends, `[-A-Za-z0-9_.]` inside (a non-empty name or value).
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A DNS-1123 subdomain: dot-separated labels of `[a-z0-9-]`, each starting and ending
/// with `[a-z0-9]` (length checked by the caller).
fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(first), Some(last)) => {
                edge(first) && edge(last) && b.iter().all(|c| edge(c) || *c == b'-')
            }
            _ => false,
        }
    })
}

/// apimachinery's `IsQualifiedName` (label and annotation keys), reporting the first
/// rule broken in apimachinery's words.
///
/// ```
/// use kubegen_apimachinery::labels::validate_key;
///
/// assert!(validate_key("example.com/app").is_ok());
/// assert!(validate_key("bad key!").is_err());
/// ```
pub fn validate_key(key: &str) -> Result<(), &'static str> {
    let name = match key.split_once('/') {
        None => key,
        Some((_, name)) if name.contains('/') => {
            return Err(
                "a qualified name has at most one '/': an optional DNS subdomain \
                 prefix, '/', then the name (e.g. 'example.com/MyName')",
            );
        }
        Some((prefix, name)) => {
            if prefix.is_empty() {
                return Err("prefix part must be non-empty");
            }
            if prefix.len() > 253 {
                return Err("prefix part must be no more than 253 characters");
            }
            if !is_dns1123_subdomain(prefix) {
                return Err(PREFIX_RULE);
            }
            name
        }
    };
    if name.is_empty() {
        return Err("name part must be non-empty");
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters");
    }
    if !is_qualified_name_part(name) {
        return Err(NAME_RULE);
    }
    Ok(())
}

/// apimachinery's `IsValidLabelValue`, reporting the first rule broken.
///
/// ```
/// use kubegen_apimachinery::labels::validate_value;
///
/// assert!(validate_value("").is_ok());
/// assert!(validate_value("bad value!").is_err());
/// ```
pub fn validate_value(value: &str) -> Result<(), &'static str> {
    if value.len() > 63 {
        return Err("must be no more than 63 characters");
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        return Err(VALUE_RULE);
    }
    Ok(())
}

/// A label selector: the AND of its [`Requirement`]s, or "nothing".
///
/// `Display` gives apimachinery's canonical `String()`; `FromStr` is [`Selector::parse`].
/// The default is [`Selector::everything`].
///
/// ```
/// use std::collections::BTreeMap;
/// use kubegen_apimachinery::labels::Selector;
///
/// let sel = Selector::parse("tier in (frontend,backend),app=web,!canary")?;
/// // Sorted by key: "!canary" sorts as "canary".
/// assert_eq!(sel.to_string(), "app=web,!canary,tier in (backend,frontend)");
/// let labels = BTreeMap::from([
///     ("app".to_string(), "web".to_string()),
///     ("tier".to_string(), "frontend".to_string()),
/// ]);
/// assert!(sel.matches(&labels));
/// # Ok::<(), kubegen_apimachinery::labels::ParseError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
    /// `Nothing()`: matches no labels (requirements is then empty).
    nothing: bool,
}

impl Selector {
    /// The selector that matches every label set (apimachinery's `Everything()`).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::labels::Selector;
    /// assert!(Selector::everything().matches(&BTreeMap::new()));
    /// assert!(Selector::everything().is_empty());
    /// ```
    pub fn everything() -> Selector {
        Selector::default()
    }

    /// The selector that matches nothing (apimachinery's `Nothing()`): not empty, and
    /// rendered as `""`.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::labels::Selector;
    /// assert!(!Selector::nothing().matches(&BTreeMap::new()));
    /// assert!(!Selector::nothing().is_empty());
    /// ```
    pub fn nothing() -> Selector {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses a selector string (apimachinery's `labels.Parse`).
    ///
    /// ```
    /// use kubegen_apimachinery::labels::Selector;
    ///
    /// assert_eq!(Selector::parse("x notin (b,a), y")?.to_string(), "x notin (a,b),y");
    /// let err = Selector::parse("x=a b").unwrap_err();
    /// assert_eq!(err.position(), 4);
    /// assert_eq!(err.token(), "b");
    /// # Ok::<(), kubegen_apimachinery::labels::ParseError>(())
    /// ```
    pub fn parse(selector: &str) -> Result<Selector, ParseError> {
        let mut requirements = Parser::new(selector).parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// A selector of `key=value` requirements, one per entry (apimachinery's
    /// `SelectorFromSet`). Like Go's, it does not validate keys or values: use
    /// [`Selector::validated_from_set`] for input you do not trust. An empty map gives
    /// [`Selector::everything`].
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::labels::Selector;
    ///
    /// let set = BTreeMap::from([("b".to_string(), "2".to_string()), ("a".to_string(), "1".to_string())]);
    /// assert_eq!(Selector::from_set(&set).to_string(), "a=1,b=2");
    /// ```
    pub fn from_set(set: &BTreeMap<String, String>) -> Selector {
        Selector {
            requirements: set
                .iter()
                .map(|(k, v)| {
                    Requirement::assemble(k.clone(), Operator::Equals, vec![v.clone()], 0)
                })
                .collect(),
            nothing: false,
        }
    }

    /// Like [`Selector::from_set`], but every key and value is validated
    /// (apimachinery's `ValidatedSelectorFromSet`).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::labels::Selector;
    ///
    /// let bad = BTreeMap::from([("a".to_string(), "not valid".to_string())]);
    /// assert!(Selector::validated_from_set(&bad).is_err());
    /// ```
    pub fn validated_from_set(
        set: &BTreeMap<String, String>,
    ) -> Result<Selector, RequirementError> {
        let requirements = set
            .iter()
            .map(|(k, v)| Requirement::new(k.as_str(), Operator::Equals, [v.as_str()]))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// Converts a meta/v1 `LabelSelector` (apimachinery's `LabelSelectorAsSelector`):
    /// no `matchLabels` and no `matchExpressions` gives [`Selector::everything`];
    /// `matchLabels` become `=` requirements; `matchExpressions` may use only `In`,
    /// `NotIn`, `Exists` and `DoesNotExist`.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    /// use kubegen_apimachinery::labels::Selector;
    ///
    /// let ls = LabelSelector {
    ///     match_labels: Some(BTreeMap::from([("a".to_string(), "b".to_string())])),
    ///     match_expressions: Some(vec![LabelSelectorRequirement {
    ///         key: "k".into(),
    ///         operator: "In".into(),
    ///         values: Some(vec!["v2".into(), "v1".into()]),
    ///     }]),
    /// };
    /// assert_eq!(Selector::from_label_selector(&ls)?.to_string(), "a=b,k in (v1,v2)");
    /// # Ok::<(), kubegen_apimachinery::labels::LabelSelectorError>(())
    /// ```
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Selector, LabelSelectorError> {
        let mut requirements = Vec::new();
        for (k, v) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(
                k.as_str(),
                Operator::Equals,
                [v.as_str()],
            )?);
        }
        for expr in selector.match_expressions.iter().flatten() {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(LabelSelectorError::InvalidOperator(other.to_string())),
            };
            let values = expr.values.iter().flatten().map(String::as_str);
            requirements.push(Requirement::new(expr.key.as_str(), operator, values)?);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// [`Selector::from_label_selector`] for an optional field: `None` gives
    /// [`Selector::nothing`], as apimachinery's `LabelSelectorAsSelector(nil)` does.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::labels::Selector;
    ///
    /// let sel = Selector::from_optional_label_selector(None)?;
    /// assert!(!sel.matches(&BTreeMap::new()));
    /// # Ok::<(), kubegen_apimachinery::labels::LabelSelectorError>(())
    /// ```
    pub fn from_optional_label_selector(
        selector: Option<&LabelSelector>,
    ) -> Result<Selector, LabelSelectorError> {
        match selector {
            None => Ok(Selector::nothing()),
            Some(selector) => Selector::from_label_selector(selector),
        }
    }

    /// Adds a requirement (apimachinery's `Add`), keeping requirements sorted by key.
    /// Adding to [`Selector::nothing`] leaves it matching nothing.
    ///
    /// ```
    /// use kubegen_apimachinery::labels::{Operator, Requirement, Selector};
    ///
    /// let sel = Selector::parse("b=1")?.add_requirement(Requirement::new("a", Operator::Exists, [""; 0])?);
    /// assert_eq!(sel.to_string(), "a,b=1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_requirement(mut self, requirement: Requirement) -> Selector {
        if self.nothing {
            return self;
        }
        let at = self
            .requirements
            .partition_point(|r| r.key <= requirement.key);
        self.requirements.insert(at, requirement);
        self
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

    /// The requirements, sorted by key (empty for both everything and nothing).
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether `labels` satisfy every requirement. Never allocates.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use kubegen_apimachinery::labels::Selector;
    ///
    /// let sel: Selector = "x in (a),x notin (b)".parse()?;
    /// assert!(sel.matches(&BTreeMap::from([("x".to_string(), "a".to_string())])));
    /// assert!(!sel.matches(&BTreeMap::from([("x".to_string(), "b".to_string())])));
    /// # Ok::<(), kubegen_apimachinery::labels::ParseError>(())
    /// ```
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// If the first requirement on `key` pins one value (`=`, `==`, or `in` with one
    /// value), that value (apimachinery's `RequiresExactMatch`). Servers use it to pick
    /// an index.
    ///
    /// ```
    /// use kubegen_apimachinery::labels::Selector;
    ///
    /// let sel = Selector::parse("app=web,tier in (a,b)")?;
    /// assert_eq!(sel.requires_exact_match("app"), Some("web"));
    /// assert_eq!(sel.requires_exact_match("tier"), None);
    /// # Ok::<(), kubegen_apimachinery::labels::ParseError>(())
    /// ```
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == key)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => Some(value),
            _ => None,
        }
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

impl TryFrom<&LabelSelector> for Selector {
    type Error = LabelSelectorError;

    fn try_from(selector: &LabelSelector) -> Result<Selector, LabelSelectorError> {
        Selector::from_label_selector(selector)
    }
}

/// Why a meta/v1 `LabelSelector` could not be converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LabelSelectorError {
    /// A `matchExpressions` operator other than `In`, `NotIn`, `Exists`, `DoesNotExist`.
    #[error("{0:?} is not a valid label selector operator")]
    InvalidOperator(String),
    /// A key, value or value count is invalid.
    #[error(transparent)]
    Requirement(#[from] RequirementError),
}

/// Where and why [`Selector::parse`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse label selector {input:?}: at byte {position}, found {}: {reason}", found(.token))]
pub struct ParseError {
    input: String,
    position: usize,
    token: String,
    reason: ParseErrorReason,
}

fn found(token: &str) -> String {
    if token.is_empty() {
        "end of string".to_string()
    } else {
        format!("'{token}'")
    }
}

/// The reason part of a [`ParseError`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorReason {
    /// The token does not fit the grammar here; the text says what was expected.
    #[error("expected {0}")]
    Expected(&'static str),
    /// The requirement is well-formed but invalid (bad key, value, or `>`/`<` bound).
    #[error(transparent)]
    Requirement(RequirementError),
}

impl ParseError {
    /// The byte offset in the input where the offending token starts (the input's length
    /// when parsing failed at the end of the string).
    pub fn position(&self) -> usize {
        self.position
    }

    /// The offending token (`""` at the end of the string, or for an empty value).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Why parsing failed.
    pub fn reason(&self) -> &ParseErrorReason {
        &self.reason
    }

    /// The selector string that failed to parse.
    pub fn input(&self) -> &str {
        &self.input
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Identifier,
    In,
    NotIn,
    End,
    OpenPar,
    ClosedPar,
    Comma,
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
}

#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    tok: Tok,
    text: &'a str,
    pos: usize,
}

impl AsRef<str> for Token<'_> {
    fn as_ref(&self) -> &str {
        self.text
    }
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// apimachinery's selector lexer: whitespace separates tokens, special symbols are
/// matched longest first, any other run of bytes is an identifier or keyword.
struct Lexer<'a> {
    input: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn next_token(&mut self) -> Token<'a> {
        let bytes = self.input.as_bytes();
        while self.pos < bytes.len() && is_whitespace(bytes[self.pos]) {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&c) = bytes.get(start) else {
            return Token {
                tok: Tok::End,
                text: "",
                pos: start,
            };
        };
        let (tok, len) = if is_special(c) {
            let double = bytes.get(start + 1) == Some(&b'=');
            match c {
                b'=' if double => (Tok::DoubleEquals, 2),
                b'!' if double => (Tok::NotEquals, 2),
                b'=' => (Tok::Equals, 1),
                b'!' => (Tok::Bang, 1),
                b'(' => (Tok::OpenPar, 1),
                b')' => (Tok::ClosedPar, 1),
                b',' => (Tok::Comma, 1),
                b'>' => (Tok::GreaterThan, 1),
                _ => (Tok::LessThan, 1),
            }
        } else {
            let len = bytes[start..]
                .iter()
                .position(|&c| is_whitespace(c) || is_special(c))
                .unwrap_or(bytes.len() - start);
            let tok = match &self.input[start..start + len] {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Identifier,
            };
            (tok, len)
        };
        self.pos = start + len;
        Token {
            tok,
            text: &self.input[start..start + len],
            pos: start,
        }
    }
}

/// Which lexical context a token is read in: in value position (and key position)
/// `in`/`notin` are plain identifiers; in operator position they are keywords.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Values,
    Operator,
}

/// apimachinery's recursive-descent parser with one token of lookahead.
struct Parser<'a> {
    lexer: Lexer<'a>,
    next: Token<'a>,
}

impl<'a> Parser<'a> {
    fn new(input: &'a str) -> Self {
        let mut lexer = Lexer { input, pos: 0 };
        let next = lexer.next_token();
        Parser { lexer, next }
    }

    fn peek(&self, context: Context) -> Token<'a> {
        let mut t = self.next;
        if context == Context::Values && matches!(t.tok, Tok::In | Tok::NotIn) {
            t.tok = Tok::Identifier;
        }
        t
    }

    fn consume(&mut self, context: Context) -> Token<'a> {
        let t = self.peek(context);
        if t.tok != Tok::End {
            self.next = self.lexer.next_token();
        }
        t
    }

    fn error(&self, at: Token<'_>, reason: ParseErrorReason) -> ParseError {
        ParseError {
            input: self.lexer.input.to_string(),
            position: at.pos,
            token: at.text.to_string(),
            reason,
        }
    }

    fn expected(&self, at: Token<'_>, what: &'static str) -> ParseError {
        self.error(at, ParseErrorReason::Expected(what))
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, ParseError> {
        let mut requirements = Vec::new();
        loop {
            let t = self.peek(Context::Values);
            match t.tok {
                Tok::End => return Ok(requirements),
                Tok::Identifier | Tok::Bang => {
                    requirements.push(self.parse_requirement()?);
                    let t = self.consume(Context::Values);
                    match t.tok {
                        Tok::End => return Ok(requirements),
                        Tok::Comma => {
                            let t = self.peek(Context::Values);
                            if !matches!(t.tok, Tok::Identifier | Tok::Bang) {
                                return Err(self.expected(t, "an identifier or '!' after ','"));
                            }
                        }
                        _ => return Err(self.expected(t, "',' or end of string")),
                    }
                }
                _ => return Err(self.expected(t, "'!', an identifier, or end of string")),
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, ParseError> {
        let mut t = self.consume(Context::Values);
        let negated = t.tok == Tok::Bang;
        if negated {
            t = self.consume(Context::Values);
        }
        if t.tok != Tok::Identifier {
            return Err(self.expected(t, "an identifier (a label key)"));
        }
        if let Err(rule) = validate_key(t.text) {
            let e = RequirementError::InvalidKey {
                key: t.text.to_string(),
                rule,
            };
            return Err(self.error(t, ParseErrorReason::Requirement(e)));
        }
        let key = t.text.to_string();
        let next = self.peek(Context::Values).tok;
        if negated {
            // "!key" followed by an operator is rejected by the caller, which finds the
            // operator where it expects ',' or the end.
            return Ok(Requirement::assemble(
                key,
                Operator::DoesNotExist,
                Vec::new(),
                0,
            ));
        }
        if matches!(next, Tok::End | Tok::Comma) {
            return Ok(Requirement::assemble(key, Operator::Exists, Vec::new(), 0));
        }
        let t = self.consume(Context::Operator);
        let operator = match t.tok {
            Tok::Equals => Operator::Equals,
            Tok::DoubleEquals => Operator::DoubleEquals,
            Tok::NotEquals => Operator::NotEquals,
            Tok::GreaterThan => Operator::GreaterThan,
            Tok::LessThan => Operator::LessThan,
            Tok::In => Operator::In,
            Tok::NotIn => Operator::NotIn,
            _ => {
                return Err(self.expected(t, "an operator: =, ==, !=, >, <, in, notin"));
            }
        };
        let values = if matches!(operator, Operator::In | Operator::NotIn) {
            self.parse_set()?
        } else {
            vec![self.parse_exact_value()?]
        };
        match check_values(operator, &values) {
            Ok(bound) => Ok(Requirement::assemble(
                key,
                operator,
                values.iter().map(|v| v.text.to_string()).collect(),
                bound,
            )),
            Err((i, e)) => Err(self.error(values[i], ParseErrorReason::Requirement(e))),
        }
    }

    /// The value after `=`, `==`, `!=`, `>`, `<`: one identifier, or "" before ',' or
    /// the end.
    fn parse_exact_value(&mut self) -> Result<Token<'a>, ParseError> {
        let t = self.peek(Context::Values);
        if matches!(t.tok, Tok::End | Tok::Comma) {
            return Ok(Token { text: "", ..t });
        }
        let t = self.consume(Context::Values);
        if t.tok == Tok::Identifier {
            Ok(t)
        } else {
            Err(self.expected(t, "an identifier (a value)"))
        }
    }

    /// `( [value] (, [value])* )`; empty entries stand for "".
    fn parse_set(&mut self) -> Result<Vec<Token<'a>>, ParseError> {
        let t = self.consume(Context::Values);
        if t.tok != Tok::OpenPar {
            return Err(self.expected(t, "'('"));
        }
        let t = self.peek(Context::Values);
        let empty = |at: Token<'a>| Token { text: "", ..at };
        match t.tok {
            Tok::ClosedPar => {
                self.consume(Context::Values);
                return Ok(vec![empty(t)]);
            }
            Tok::Identifier | Tok::Comma => {}
            _ => return Err(self.expected(t, "',', ')' or an identifier")),
        }
        let mut values = Vec::new();
        loop {
            let t = self.consume(Context::Values);
            match t.tok {
                Tok::Identifier => {
                    values.push(t);
                    let next = self.peek(Context::Values);
                    match next.tok {
                        Tok::Comma => {}
                        Tok::ClosedPar => break,
                        _ => return Err(self.expected(next, "',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if values.is_empty() {
                        values.push(empty(t));
                    }
                    let next = self.peek(Context::Values);
                    match next.tok {
                        Tok::ClosedPar => {
                            values.push(empty(next));
                            break;
                        }
                        // ",," stands for an empty value; the second comma is handled
                        // by the next turn, so ",,)" also ends the list.
                        Tok::Comma => values.push(empty(next)),
                        _ => {}
                    }
                }
                _ => return Err(self.expected(t, "',' or an identifier")),
            }
        }
        let t = self.consume(Context::Values);
        if t.tok != Tok::ClosedPar {
            return Err(self.expected(t, "')'"));
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
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

    fn parse_err(input: &str) -> ParseError {
        match Selector::parse(input) {
            Ok(sel) => panic!("{input:?} should fail, parsed as {sel:?}"),
            Err(e) => e,
        }
    }

    fn sel_matches(selector: &str, pairs: &[(&str, &str)]) -> bool {
        Selector::parse(selector).unwrap().matches(&labels(pairs))
    }

    #[test]
    fn canonical_strings() {
        // SEMANTICS 8.1
        assert_eq!(canonical("x=a,y=b,z=c"), "x=a,y=b,z=c");
        // SEMANTICS 8.2
        let empty = Selector::parse("").unwrap();
        assert_eq!(empty.to_string(), "");
        assert!(empty.is_empty());
        assert!(empty.matches(&labels(&[("x", "y")])));
        assert_eq!(empty, Selector::everything());
        // SEMANTICS 8.3
        assert_eq!(canonical("x!=a,y=b"), "x!=a,y=b");
        // SEMANTICS 8.4
        assert_eq!(canonical("x="), "x=");
        assert_eq!(canonical("x= "), "x=");
        assert_eq!(canonical("x=,z= "), "x=,z=");
        assert_eq!(canonical("x= ,z= "), "x=,z=");
        // SEMANTICS 8.5
        assert_eq!(canonical("!x"), "!x");
        // SEMANTICS 8.6
        assert_eq!(canonical("x>1"), "x>1");
        assert_eq!(canonical("x>1,z<5"), "x>1,z<5");
        // SEMANTICS 8.11
        assert_eq!(canonical("x=a,a=x"), "a=x,x=a");
        assert_eq!(canonical("a=x,x=a"), "a=x,x=a");
        assert_eq!(
            Selector::parse("x=a,a=x").unwrap(),
            Selector::parse("a=x,x=a").unwrap()
        );
        // SEMANTICS 8.12
        assert_eq!(canonical("x in (abc,def)"), "x in (abc,def)");
        assert_eq!(canonical("x notin (def,abc)"), "x notin (abc,def)");
        // SEMANTICS 8.13
        assert_eq!(
            canonical("x notin (abc,,def),bar,z in (),w"),
            "bar,w,x notin (,abc,def),z in ()"
        );
        // SEMANTICS 8.14
        assert_eq!(canonical("x in (a,,a,,a,,a,,)"), "x in (,a)");
        assert_eq!(canonical("x in (abc,abc)"), "x in (abc)");
        assert_eq!(canonical("x notin ( )"), "x notin ()");
        // SEMANTICS 8.15
        assert_eq!(canonical("a in (x,y,notin, z,in)"), "a in (in,notin,x,y,z)");
        // SEMANTICS 8.16
        assert_eq!(canonical("\rx"), "x");
        assert_eq!(canonical("foo  in\t (abc)"), "foo in (abc)");
        assert_eq!(canonical("x notin\n (abc)"), "x notin (abc)");
        assert_eq!(canonical("a "), "a");
        // SEMANTICS 8.18
        assert_eq!(
            canonical("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)"),
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"
        );
        // SEMANTICS 8.20
        assert_eq!(
            canonical("example.com/MyKey=Val_1.2"),
            "example.com/MyKey=Val_1.2"
        );
        // SEMANTICS 8.21
        assert_eq!(canonical("x==y"), "x==y");
        assert!(sel_matches("x==y", &[("x", "y")]));
    }

    #[test]
    fn exists_on_a_prefixed_key() {
        // SEMANTICS 8.17
        let sel = Selector::parse("this-is-a-dns.domain.com/key-with-dash").unwrap();
        assert_eq!(sel.requirements().len(), 1);
        let r = &sel.requirements()[0];
        assert_eq!(r.key(), "this-is-a-dns.domain.com/key-with-dash");
        assert_eq!(r.operator(), Operator::Exists);
        assert!(r.values().is_empty());
    }

    #[test]
    fn keywords_are_identifiers_in_value_position() {
        // SEMANTICS 8.25
        assert_eq!(canonical("notin=in"), "notin=in");
        assert!(sel_matches("notin=in", &[("notin", "in")]));
        assert_eq!(canonical("in in (in,notin)"), "in in (in,notin)");
        assert_eq!(canonical("a,in"), "a,in");
    }

    #[test]
    fn syntax_errors() {
        // SEMANTICS 8.7
        let e = parse_err("x=a||y=b");
        assert_eq!((e.position(), e.token()), (2, "a||y"));
        assert!(matches!(
            e.reason(),
            ParseErrorReason::Requirement(RequirementError::InvalidValue { value, .. }) if value == "a||y"
        ));
        // SEMANTICS 8.8
        let e = parse_err("x==a==b");
        assert_eq!((e.position(), e.token()), (4, "=="));
        assert_eq!(
            e.reason(),
            &ParseErrorReason::Expected("',' or end of string")
        );
        // SEMANTICS 8.9
        let e = parse_err("!x=a");
        assert_eq!((e.position(), e.token()), (2, "="));
        // SEMANTICS 8.10
        let e = parse_err("x<a");
        assert_eq!((e.position(), e.token()), (2, "a"));
        assert!(matches!(
            e.reason(),
            ParseErrorReason::Requirement(RequirementError::NotAnInteger { .. })
        ));
        // SEMANTICS 8.19
        let cases: &[(&str, usize, &str)] = &[
            ("x,,y", 2, ","),
            (",x,y", 0, ","),
            ("x nott in (y)", 2, "nott"),
            ("a in (xyz),", 11, ""),
            ("a in (xyz)b notin ()", 10, "b"),
            ("a in (xyz abc)", 10, "abc"),
            ("a notin(", 8, ""),
            ("a (", 2, "("),
            ("(", 0, "("),
            ("x=a b", 4, "b"),
            ("x=-a", 2, "-a"),
            ("-x", 0, "-x"),
            ("Example.com/x", 0, "Example.com/x"),
            ("a/b/c", 0, "a/b/c"),
            ("x>-1", 2, "-1"),
        ];
        for &(input, position, token) in cases {
            let e = parse_err(input);
            assert_eq!(
                (e.position(), e.token()),
                (position, token),
                "{input:?}: {e}"
            );
        }
        let long = "a".repeat(64);
        let e = parse_err(&long);
        assert!(matches!(
            e.reason(),
            ParseErrorReason::Requirement(RequirementError::InvalidKey { .. })
        ));
        let e = parse_err(&format!("x={long}"));
        assert_eq!(e.position(), 2);
        assert!(matches!(
            e.reason(),
            ParseErrorReason::Requirement(RequirementError::InvalidValue { .. })
        ));
        // The limits themselves are accepted.
        let max = "a".repeat(63);
        assert_eq!(canonical(&format!("{max}={max}")), format!("{max}={max}"));
    }

    #[test]
    fn error_messages_name_position_token_and_rule() {
        let msg = parse_err("x=a b").to_string();
        assert!(msg.contains("at byte 4"), "{msg}");
        assert!(msg.contains("'b'"), "{msg}");
        assert!(msg.contains("',' or end of string"), "{msg}");
        let msg = parse_err("a notin(").to_string();
        assert!(msg.contains("end of string"), "{msg}");
        let msg = parse_err("Example.com/x").to_string();
        assert!(msg.contains("prefix part"), "{msg}");
        assert!(msg.contains("RFC 1123"), "{msg}");
    }

    #[test]
    fn key_validation_rules() {
        assert!(validate_key("a.b-c/X_y.Z").is_ok());
        assert!(validate_key("/x").is_err());
        assert!(validate_key("a/").is_err());
        assert!(validate_key("a..b/x").is_err());
        assert!(validate_key("-a/x").is_err());
        assert!(validate_key(&format!("{}/x", "a".repeat(253))).is_ok());
        assert!(validate_key(&format!("{}/x", "a".repeat(254))).is_err());
        assert!(validate_key("x_").is_err());
        assert!(validate_value("").is_ok());
        assert!(validate_value("a b").is_err());
        assert!(validate_value("a\0").is_err());
    }

    #[test]
    fn matching() {
        // SEMANTICS 8.22
        assert!(sel_matches("x=y", &[("x", "y")]));
        assert!(!sel_matches("x=y", &[("x", "z")]));
        assert!(!sel_matches("x=z", &[]));
        // SEMANTICS 8.23
        assert!(sel_matches("x=y,z=w", &[("x", "y"), ("z", "w")]));
        assert!(!sel_matches("x=y,z=w", &[("x", "w"), ("z", "w")]));
        // SEMANTICS 8.24
        assert!(sel_matches("x!=y,z!=w", &[("x", "z"), ("z", "a")]));
        assert!(!sel_matches("x!=y,z!=w", &[("x", "z"), ("z", "w")]));
        assert!(sel_matches("x!=y", &[]));
        // SEMANTICS 8.26
        assert!(sel_matches("x", &[("x", "z")]));
        assert!(!sel_matches("x", &[("y", "z")]));
        // SEMANTICS 8.27
        assert!(sel_matches("!x", &[("y", "z")]));
        assert!(!sel_matches("!x", &[("x", "z")]));
        // SEMANTICS 8.28
        assert!(sel_matches("x>1", &[("x", "2")]));
        assert!(!sel_matches("x>1", &[("x", "0")]));
        assert!(!sel_matches("x>1", &[("x", "v2")]));
        assert!(!sel_matches("x>1", &[]));
        // SEMANTICS 8.29
        assert!(sel_matches("x<1", &[("x", "0")]));
        assert!(!sel_matches("x<1", &[("x", "2")]));
        assert!(sel_matches("x<1", &[("x", "-5")]));
        // SEMANTICS 8.30
        assert!(sel_matches(
            "x in (foo),y notin (alpha)",
            &[("x", "foo"), ("y", "baz")]
        ));
        assert!(!sel_matches(
            "x in (foo),y in (alpha)",
            &[("x", "foo"), ("y", "baz")]
        ));
        // SEMANTICS 8.31
        assert!(sel_matches("x notin (),y", &[("y", "")]));
        assert!(sel_matches("!x,y", &[("y", "")]));
        assert!(!sel_matches("x notin (),!y", &[("y", "")]));
        // SEMANTICS 8.32
        assert!(!sel_matches("x in ()", &[("y", "baz")]));
        assert!(sel_matches("x in ()", &[("x", "")]));
        // SEMANTICS 8.33
        let set = [("foo", "bar"), ("baz", "blah")];
        assert!(sel_matches("foo=bar,baz=blah", &set));
        assert!(!sel_matches("foo=bar,foobar=bar,baz=blah", &set));
        // SEMANTICS 8.34
        assert!(sel_matches("x notin (a)", &[]));
        assert!(!sel_matches("x in (a)", &[]));
        // SEMANTICS 8.35
        assert!(sel_matches("x in (a),x notin (b)", &[("x", "a")]));
        assert!(!sel_matches("x in (a),x notin (b)", &[("x", "b")]));
        // SEMANTICS 8.36
        assert!(!Selector::nothing().matches(&labels(&[])));
        assert!(!Selector::nothing().is_empty());
        assert_eq!(Selector::nothing().to_string(), "");
        assert!(Selector::everything().matches(&labels(&[("x", "y")])));
    }

    #[test]
    fn large_sets_use_the_same_membership() {
        let values: Vec<String> = (0..20).map(|i| format!("v{i}")).collect();
        let r = Requirement::new("x", Operator::In, values.iter().map(String::as_str)).unwrap();
        for v in &values {
            assert!(r.matches(&labels(&[("x", v)])));
        }
        assert!(!r.matches(&labels(&[("x", "v20")])));
    }

    #[test]
    fn label_set_implementations() {
        let sel = Selector::parse("app=web").unwrap();
        let hash: HashMap<String, String> = [("app".to_string(), "web".to_string())].into();
        assert!(sel.matches(&hash));
        let btree = labels(&[("app", "web")]);
        assert!(sel.matches(&Some(&btree)));
        assert!(!sel.matches(&None::<&BTreeMap<String, String>>));
    }

    #[test]
    fn matches_resource_labels() {
        use k8s_openapi::api::core::v1::Pod;
        use kube::ResourceExt;
        let mut pod = Pod::default();
        let sel = Selector::parse("app=web,!canary").unwrap();
        assert!(!sel.matches(pod.labels()));
        pod.labels_mut().insert("app".into(), "web".into());
        assert!(sel.matches(pod.labels()));
        assert!(sel.matches(&pod.metadata.labels));
    }

    #[test]
    fn from_label_selector() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
        // SEMANTICS 8.37
        let ls = LabelSelector {
            match_labels: Some(labels(&[("a", "b")])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "k".into(),
                operator: "In".into(),
                values: Some(vec!["v1".into(), "v2".into()]),
            }]),
        };
        let sel = Selector::from_label_selector(&ls).unwrap();
        assert_eq!(sel.to_string(), "a=b,k in (v1,v2)");
        let nil = Selector::from_optional_label_selector(None).unwrap();
        assert!(!nil.matches(&labels(&[])));
        assert!(!nil.matches(&labels(&[("a", "b")])));
        let all = Selector::from_label_selector(&LabelSelector::default()).unwrap();
        assert!(all.is_empty());
        assert!(all.matches(&labels(&[("a", "b")])));
        let gt = LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "k".into(),
                operator: "Gt".into(),
                values: Some(vec!["1".into()]),
            }]),
        };
        let err = Selector::from_label_selector(&gt).unwrap_err();
        assert_eq!(err, LabelSelectorError::InvalidOperator("Gt".into()));
        assert_eq!(
            err.to_string(),
            "\"Gt\" is not a valid label selector operator"
        );
        // Exists with values is rejected by the requirement checks.
        let exists = LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "k".into(),
                operator: "Exists".into(),
                values: Some(vec!["1".into()]),
            }]),
        };
        assert!(matches!(
            Selector::from_label_selector(&exists),
            Err(LabelSelectorError::Requirement(
                RequirementError::ValueCount { .. }
            ))
        ));
    }

    #[test]
    fn requirement_constructor_checks() {
        let none: [&str; 0] = [];
        assert!(Requirement::new("x", Operator::In, none).is_err());
        assert!(Requirement::new("x", Operator::Equals, ["a", "b"]).is_err());
        assert!(Requirement::new("x", Operator::Equals, ["a", "a"]).is_err());
        assert!(Requirement::new("x", Operator::Exists, ["a"]).is_err());
        assert!(Requirement::new("x", Operator::GreaterThan, ["1", "2"]).is_err());
        assert!(Requirement::new("x", Operator::LessThan, ["99999999999999999999"]).is_err());
        assert!(Requirement::new("x y", Operator::Exists, none).is_err());
        assert!(Requirement::new("x", Operator::DoesNotExist, none).is_ok());
    }

    #[test]
    fn sets_selectors_and_exact_matches() {
        let set = labels(&[("b", "2"), ("a", "1")]);
        let sel = Selector::from(&set);
        assert_eq!(sel.to_string(), "a=1,b=2");
        assert!(sel.matches(&set));
        assert!(Selector::from_set(&BTreeMap::new()).is_empty());
        assert!(Selector::validated_from_set(&labels(&[("a", "-")])).is_err());
        let sel = Selector::parse("a in (x),b=y,c!=z").unwrap();
        assert_eq!(sel.requires_exact_match("a"), Some("x"));
        assert_eq!(sel.requires_exact_match("b"), Some("y"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(sel.requires_exact_match("d"), None);
        let sel = Selector::nothing()
            .add_requirement(Requirement::new("a", Operator::Exists, [""; 0]).unwrap());
        assert!(sel.is_nothing());
    }

    fn key_strategy() -> impl Strategy<Value = String> {
        let name = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?";
        prop_oneof![
            4 => name.prop_map(String::from),
            1 => Just("in".to_string()),
            1 => Just("notin".to_string()),
            2 => ("[a-z0-9]([-a-z0-9]{0,4}[a-z0-9])?(\\.[a-z0-9]{1,3}){0,2}", name)
                .prop_map(|(prefix, name)| format!("{prefix}/{name}")),
        ]
    }

    fn value_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            1 => Just(String::new()),
            1 => Just("in".to_string()),
            4 => "[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?".prop_map(String::from),
        ]
    }

    fn requirement_strategy() -> impl Strategy<Value = Requirement> {
        let none: Vec<String> = Vec::new();
        prop_oneof![
            (
                key_strategy(),
                value_strategy(),
                prop_oneof![
                    Just(Operator::Equals),
                    Just(Operator::DoubleEquals),
                    Just(Operator::NotEquals)
                ]
            )
                .prop_map(|(k, v, op)| Requirement::new(k, op, [v]).unwrap()),
            (
                key_strategy(),
                prop::collection::vec(value_strategy(), 1..5),
                prop_oneof![Just(Operator::In), Just(Operator::NotIn)]
            )
                .prop_map(|(k, vs, op)| Requirement::new(k, op, vs).unwrap()),
            (
                key_strategy(),
                prop_oneof![Just(Operator::Exists), Just(Operator::DoesNotExist)]
            )
                .prop_map(move |(k, op)| Requirement::new(k, op, none.clone()).unwrap()),
            (
                key_strategy(),
                0..i64::MAX,
                prop_oneof![Just(Operator::GreaterThan), Just(Operator::LessThan)]
            )
                .prop_map(|(k, n, op)| Requirement::new(k, op, [n.to_string()]).unwrap()),
        ]
    }

    proptest! {
        #[test]
        fn canonical_string_round_trips(reqs in prop::collection::vec(requirement_strategy(), 0..6)) {
            let sel = reqs.into_iter().fold(Selector::everything(), Selector::add_requirement);
            let text = sel.to_string();
            let reparsed = Selector::parse(&text);
            prop_assert_eq!(reparsed.as_ref(), Ok(&sel), "{}", text);
        }

        #[test]
        fn parse_never_panics(input in "[ -~\\t\\n\\r]{0,40}|[a-z=!(),<> ]{0,30}") {
            if let Ok(sel) = Selector::parse(&input) {
                // Whatever parses, its canonical form parses to the same selector.
                prop_assert_eq!(Selector::parse(&sel.to_string()), Ok(sel));
            }
        }

        #[test]
        fn parse_never_panics_on_any_string(input in any::<String>()) {
            let _ = Selector::parse(&input);
        }
    }
}
