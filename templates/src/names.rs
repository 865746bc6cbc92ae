//! Rust identifiers from wire names: fields, types, enum variants, modules.
//!
//! Every function returns a valid, non-raw identifier and is deterministic. Keywords get
//! a trailing underscore (`type` -> `type_`, as k8s-openapi does), names that would start
//! with a digit get a prefix, and [`Namer`] resolves collisions by suffix in the order
//! names are requested, so the same input always yields the same names.

use std::collections::BTreeSet;

use heck::{ToSnakeCase, ToUpperCamelCase};

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv",
    "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// Whether `name` is a Rust keyword (strict, reserved or edition-2018+).
pub fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

/// A snake_case field name for a JSON key (`deploymentName` -> `deployment_name`,
/// `type` -> `type_`, `$ref` -> `ref_`, `1st` -> `f_1st`, `` -> `empty`).
pub fn field_name(json: &str) -> String {
    let cleaned: String = json
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut name = cleaned.to_snake_case();
    if name.is_empty() {
        name = "empty".to_owned();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name = format!("f_{name}");
    }
    if is_keyword(&name) {
        name.push('_');
    }
    name
}

/// The accessor of a kind's client, lister and informer: its plural resource name with the
/// kind's word boundaries, as client-go's `ConfigMaps()` (`ConfigMap`, `configmaps` ->
/// `config_maps`; `NetworkPolicy`, `networkpolicies` -> `network_policies`). Where the
/// plural does not spell the kind (a CRD may choose any plural), boundaries are kept only
/// as far as the two agree, so the accessor always reads as the plural.
///
/// ```
/// use kubegen_templates::names::accessor_name;
/// assert_eq!(accessor_name("ConfigMap", "configmaps"), "config_maps");
/// assert_eq!(accessor_name("NetworkPolicy", "networkpolicies"), "network_policies");
/// assert_eq!(accessor_name("Foo", "foos"), "foos");
/// assert_eq!(accessor_name("postgresql", "postgresqls"), "postgresqls");
/// assert_eq!(accessor_name("Endpoints", "endpoints"), "endpoints");
/// assert_eq!(accessor_name("CSIDriver", "csidrivers"), "csi_drivers");
/// assert_eq!(accessor_name("Widget", "gadgets"), "gadgets");
/// ```
pub fn accessor_name(kind: &str, plural: &str) -> String {
    let snake = kind.to_snake_case();
    let mut boundaries = std::collections::BTreeSet::new();
    let mut at = 0;
    for c in snake.chars() {
        if c == '_' {
            boundaries.insert(at);
        } else {
            at += 1;
        }
    }
    let kind_lower: Vec<char> = kind.to_lowercase().chars().collect();
    let mut out = String::with_capacity(plural.len() + boundaries.len());
    for (i, c) in plural.chars().enumerate() {
        let agrees = i < kind_lower.len()
            && kind_lower[..=i]
                .iter()
                .copied()
                .eq(plural.chars().take(i + 1));
        if i > 0 && agrees && boundaries.contains(&i) {
            out.push('_');
        }
        out.push(c);
    }
    field_name(&out)
}

/// An UpperCamelCase type-name part for a JSON key (`deploymentName` -> `DeploymentName`).
pub fn type_part(json: &str) -> String {
    let cleaned: String = json
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut name = cleaned.to_upper_camel_case();
    if name.is_empty() {
        name = "Empty".to_owned();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name = format!("T{name}");
    }
    name
}

/// A type name for a name that is usually one already (a kind: `Foo`, `DNSRecord`):
/// kept as is when it is an UpperCamelCase identifier rustc accepts without a
/// `non_camel_case_types` warning, else made one with [`type_part`] (`postgresql` ->
/// `Postgresql`, `Foo-Bar` -> `FooBar`, `foo_bar` -> `FooBar`). `Self`, the one
/// UpperCamelCase keyword, becomes `SelfKind`.
pub fn type_name(candidate: &str) -> String {
    let name = if is_upper_camel(candidate) {
        candidate.to_owned()
    } else {
        type_part(candidate)
    };
    if name == "Self" {
        "SelfKind".to_owned()
    } else {
        name
    }
}

/// Whether rustc's `non_camel_case_types` lint accepts `name` as it is: it starts with
/// an uppercase ASCII letter and holds only ASCII letters and digits (acronyms such as
/// `DNSRecord` are fine).
fn is_upper_camel(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

/// A module name for a DNS label or version (`cert-manager` -> `cert_manager`).
pub fn module_name(label: &str) -> String {
    let mut name: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        name = "core".to_owned();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name = format!("m_{name}");
    }
    if is_keyword(&name) {
        name.push('_');
    }
    name
}

/// A variant name for an enum value that says what the value is: `TCP` -> `Tcp`,
/// `""` -> `Empty`, `!=` -> `NotEquals`, `=~` -> `EqualsTilde`, `1.0` -> `V1Dot0`,
/// `-` -> `Dash`.
pub fn variant_name(value: &str) -> String {
    if value.is_empty() {
        return "Empty".to_owned();
    }
    let name = variant_words(value, false);
    let name = if name.is_empty() {
        variant_words(value, true)
    } else {
        name
    };
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("V{name}")
    } else if name == "Self" {
        "SelfValue".to_owned()
    } else {
        name
    }
}

fn variant_words(value: &str, separators_are_words: bool) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            out.push_str(&word.to_upper_camel_case());
            word.clear();
        }
    };
    let only_digits_and_dots = value.chars().all(|c| c.is_ascii_digit() || c == '.');
    for c in value.chars() {
        if c.is_ascii_alphanumeric() {
            // Keep digits glued to the previous word's end so `v1` stays `V1`.
            word.push(c);
            continue;
        }
        flush(&mut word, &mut out);
        let symbol = match c {
            '.' if only_digits_and_dots => Some("Dot"),
            '-' | '_' | ' ' | '.' | '/' | ':' if !separators_are_words => None,
            '-' => Some("Dash"),
            '_' => Some("Underscore"),
            ' ' => Some("Space"),
            '.' => Some("Dot"),
            '/' => Some("Slash"),
            ':' => Some("Colon"),
            '!' => Some("Not"),
            '=' => Some("Equals"),
            '~' => Some("Tilde"),
            '<' => Some("LessThan"),
            '>' => Some("GreaterThan"),
            '*' => Some("Star"),
            '+' => Some("Plus"),
            '%' => Some("Percent"),
            '&' => Some("And"),
            '|' => Some("Or"),
            '@' => Some("At"),
            '#' => Some("Hash"),
            '$' => Some("Dollar"),
            '^' => Some("Caret"),
            '?' => Some("Question"),
            ',' => Some("Comma"),
            ';' => Some("Semicolon"),
            '(' | ')' => Some("Paren"),
            '[' | ']' => Some("Bracket"),
            '{' | '}' => Some("Brace"),
            '"' | '\'' => Some("Quote"),
            '\\' => Some("Backslash"),
            _ => {
                out.push_str(&format!("U{:X}", c as u32));
                None
            }
        };
        if let Some(symbol) = symbol {
            out.push_str(symbol);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Hands out unique names in request order: the first request for a name gets it, later
/// ones get a suffix (`2`, `3`, ... or `_2` for snake_case names).
#[derive(Clone, Debug, Default)]
pub struct Namer {
    taken: BTreeSet<String>,
}

impl Namer {
    /// A namer with `reserved` names already taken.
    pub fn with_reserved<I: IntoIterator<Item = String>>(reserved: I) -> Self {
        Namer {
            taken: reserved.into_iter().collect(),
        }
    }

    /// Whether `name` is taken.
    pub fn is_taken(&self, name: &str) -> bool {
        self.taken.contains(name)
    }

    /// Takes `candidate`, or the first free suffixed form of it.
    pub fn unique(&mut self, candidate: &str) -> String {
        let snake = candidate.chars().any(|c| c == '_')
            || candidate.chars().all(|c| !c.is_ascii_uppercase());
        let mut name = candidate.to_owned();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = if snake {
                format!("{candidate}_{n}")
            } else {
                format!("{candidate}{n}")
            };
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// Takes a variant name for `value`: case-only twins get `Lower`/`Upper` suffixes
    /// before numeric ones (`Foo`, `foo` -> `Foo`, `FooLower`).
    pub fn unique_variant(&mut self, value: &str) -> String {
        let candidate = variant_name(value);
        if !self.taken.contains(&candidate) {
            self.taken.insert(candidate.clone());
            return candidate;
        }
        let has_letters = value.chars().any(|c| c.is_ascii_alphabetic());
        let suffix = if has_letters && value == value.to_ascii_lowercase() {
            Some("Lower")
        } else if has_letters && value == value.to_ascii_uppercase() {
            Some("Upper")
        } else {
            None
        };
        match suffix {
            Some(s) => self.unique(&format!("{candidate}{s}")),
            None => self.unique(&candidate),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        assert_eq!(field_name("deploymentName"), "deployment_name");
        assert_eq!(field_name("type"), "type_");
        assert_eq!(field_name("$ref"), "ref_");
        assert_eq!(field_name("1st"), "f_1st");
        assert_eq!(field_name(""), "empty");
        assert_eq!(field_name("x-kubernetes-foo"), "x_kubernetes_foo");
    }

    #[test]
    fn kinds_stay_as_written_when_valid() {
        assert_eq!(type_name("DNSRecord"), "DNSRecord");
        assert_eq!(type_name("Foo-Bar"), "FooBar");
        assert_eq!(type_name("Self"), "SelfKind");
        assert_eq!(type_name("self"), "SelfKind");
        assert_eq!(type_name("postgresql"), "Postgresql");
        assert_eq!(type_name("fooSpec"), "FooSpec");
        assert_eq!(type_name("Foo_Bar"), "FooBar");
        assert_eq!(type_name("V1"), "V1");
    }

    #[test]
    fn variants() {
        assert_eq!(variant_name("TCP"), "Tcp");
        assert_eq!(variant_name(""), "Empty");
        assert_eq!(variant_name("!="), "NotEquals");
        assert_eq!(variant_name("=~"), "EqualsTilde");
        assert_eq!(variant_name("1.0"), "V1Dot0");
        assert_eq!(variant_name("-"), "Dash");
        assert_eq!(variant_name("In"), "In");
        assert_eq!(variant_name("NotIn"), "NotIn");
        assert_eq!(variant_name("Self"), "SelfValue");
        assert_eq!(variant_name("self"), "SelfValue");
    }

    #[test]
    fn case_twins_are_named_by_case() {
        let mut namer = Namer::default();
        assert_eq!(namer.unique_variant("Foo"), "Foo");
        assert_eq!(namer.unique_variant("foo"), "FooLower");
        assert_eq!(namer.unique_variant("FOO"), "FooUpper");
    }

    #[test]
    fn collisions_get_suffixes() {
        let mut namer = Namer::with_reserved(["FooList".to_owned()]);
        assert_eq!(namer.unique("FooList"), "FooList2");
        assert_eq!(namer.unique("foo_bar"), "foo_bar");
        assert_eq!(namer.unique("foo_bar"), "foo_bar_2");
    }
}
