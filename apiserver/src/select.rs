//! The selectors a list or watch filters by: labels and fields, parsed once per request
//! with [`crate::labels`] and [`crate::fields`].
//!
//! Contract: parse errors, and field selectors on fields the resource does not support,
//! are the API server's 400 BadRequest; matching reads only the parsed metadata kept next
//! to each stored object, never its JSON.

use std::collections::BTreeMap;

use crate::errors::StatusError;
use crate::{fields, labels};

use super::registry::Registration;

/// A label and a field selector; an empty string for either matches everything.
#[derive(Debug)]
pub(crate) struct Filter {
    labels: labels::Selector,
    fields: fields::Selector,
}

impl Filter {
    /// Parses both selectors; field selectors may only use the registration's fields.
    pub(crate) fn parse(
        reg: &Registration,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Filter, StatusError> {
        let labels = labels::Selector::parse(label_selector.unwrap_or_default())
            .map_err(|e| StatusError::bad_request(e.to_string()))?;
        let fields = fields::Selector::parse(field_selector.unwrap_or_default())
            .map_err(|e| StatusError::bad_request(e.to_string()))?;
        for r in fields.requirements() {
            if !reg.is_selectable(&r.field) {
                return Err(StatusError::bad_request(format!(
                    "field label not supported: {}",
                    r.field
                )));
            }
        }
        Ok(Filter { labels, fields })
    }

    /// Whether neither selector filters anything.
    pub(crate) fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether an object with these labels and fields is selected.
    pub(crate) fn matches(
        &self,
        labels: &BTreeMap<String, String>,
        fields: &BTreeMap<String, String>,
    ) -> bool {
        self.labels.matches(labels) && self.fields.matches(fields)
    }
}
