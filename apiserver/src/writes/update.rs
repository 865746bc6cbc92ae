//! Update (PUT) of an object or of its status subresource.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Preconditions, WriteOpts};
use crate::errors::{cause, StatusCause, StatusError};
use crate::meta::meta_str;
use crate::server::Inner;
use crate::store::Stored;

impl Inner {
    /// Replaces an object (`status_only`: only its status, for the status subresource).
    pub(crate) fn update(
        &self,
        idx: usize,
        ns: &str,
        name: &str,
        obj: Map<String, Value>,
        status_only: bool,
        opts: &WriteOpts,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = self.registration(idx);
        let body_name = meta_str(&obj, "name").to_owned();
        if !body_name.is_empty() && body_name != name {
            return Err(StatusError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let want_rv = meta_str(&obj, "resourceVersion").to_owned();
        self.modify(idx, ns, name, opts, status_only, |old, body| {
            // The apiextensions server requires a resourceVersion on PUT (CRDs and
            // custom resources), checked once the object was found (a missing one is
            // 404); built-in kinds allow an unconditional update.
            if want_rv.is_empty() && reg.strategy.update_requires_resource_version(&reg) {
                let kind = if reg.custom { &reg.plural } else { &reg.kind };
                return Err(StatusError::invalid(
                    &reg.group,
                    kind,
                    name,
                    vec![StatusCause {
                        reason: cause::FIELD_VALUE_INVALID.into(),
                        message: "Invalid value: 0: must be specified for an update".into(),
                        field: "metadata.resourceVersion".into(),
                    }],
                ));
            }
            Preconditions::body(&want_rv).check(&reg, name, old, body)?;
            *body = obj;
            Ok(())
        })
    }
}
