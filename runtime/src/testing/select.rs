//! The selectors a list or watch filters by: labels and fields, parsed once per request.
//!
//! Contract: parse errors are the API server's 400 BadRequest messages; matching reads
//! only the parsed metadata kept next to each stored object, never its JSON.

use std::collections::BTreeMap;

use crate::errors::StatusError;

use super::registry::Registration;

/// A label and a field selector; an empty string for either matches everything.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    labels: Option<Terms>,
    fields: Option<Terms>,
}

/// An equality-based selector: `k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated.
#[derive(Debug)]
struct Terms(Vec<(String, Op, String)>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    NotEq,
    Exists,
    NotExists,
}

impl Terms {
    fn parse(s: &str) -> Result<Terms, String> {
        let mut out = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (k, op, v) = if let Some((k, v)) = term.split_once("!=") {
                (k, Op::NotEq, v)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, Op::Eq, v)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, Op::Eq, v)
            } else if let Some(k) = term.strip_prefix('!') {
                (k, Op::NotExists, "")
            } else {
                (term, Op::Exists, "")
            };
            let k = k.trim();
            if k.is_empty() {
                return Err(format!("unable to parse requirement: {term:?}"));
            }
            out.push((k.to_owned(), op, v.trim().to_owned()));
        }
        Ok(Terms(out))
    }

    fn matches(&self, map: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|(k, op, v)| match op {
            Op::Eq => map.get(k) == Some(v),
            Op::NotEq => map.get(k) != Some(v),
            Op::Exists => map.contains_key(k),
            Op::NotExists => !map.contains_key(k),
        })
    }
}

impl Filter {
    /// Parses both selectors; field selectors may only use the registration's fields.
    pub(crate) fn parse(
        reg: &Registration,
        labels: Option<&str>,
        fields: Option<&str>,
    ) -> Result<Filter, StatusError> {
        let labels = match labels.filter(|s| !s.trim().is_empty()) {
            Some(s) => Some(Terms::parse(s).map_err(StatusError::bad_request)?),
            None => None,
        };
        let fields = match fields.filter(|s| !s.trim().is_empty()) {
            Some(s) => {
                let t = Terms::parse(s).map_err(|e| {
                    StatusError::bad_request(format!("invalid field selector: {e}"))
                })?;
                for (f, op, _) in &t.0 {
                    if matches!(op, Op::Exists | Op::NotExists) {
                        return Err(StatusError::bad_request(format!(
                            "invalid selector: '{s}'; can't understand '{f}'"
                        )));
                    }
                    if !reg.is_selectable(f) {
                        return Err(StatusError::bad_request(format!(
                            "field label not supported: {f}"
                        )));
                    }
                }
                Some(t)
            }
            None => None,
        };
        Ok(Filter { labels, fields })
    }

    /// Whether neither selector filters anything.
    pub(crate) fn is_everything(&self) -> bool {
        self.labels.as_ref().is_none_or(|t| t.0.is_empty())
            && self.fields.as_ref().is_none_or(|t| t.0.is_empty())
    }

    /// Whether an object with these labels and fields is selected.
    pub(crate) fn matches(
        &self,
        labels: &BTreeMap<String, String>,
        fields: &BTreeMap<String, String>,
    ) -> bool {
        self.labels.as_ref().is_none_or(|t| t.matches(labels))
            && self.fields.as_ref().is_none_or(|t| t.matches(fields))
    }
}
