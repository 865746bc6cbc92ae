//! Registrations from the one description of a resource that generated code carries
//! (`RESOURCE_INFO`, a [`ResourceInfo`]), so a generated fake clientset serves exactly
//! what the generated types declare, with the CRD schema where the input had one.

use crate::errors::StatusError;
use crate::types::ResourceInfo;

use super::Registration;

impl Registration {
    /// The registration of a custom resource described by `info`: names, scope, short
    /// names, status and scale subresources (with their paths); list items carry
    /// `apiVersion` and `kind`, and strategic merge patches are refused, as for CRDs.
    ///
    /// ```
    /// use kubegen_apiserver::Registration;
    /// use kubegen_apiserver::types::ResourceInfo;
    ///
    /// const INFO: ResourceInfo = ResourceInfo {
    ///     group: "example.com", version: "v1", kind: "Foo", list_kind: "FooList",
    ///     plural: "foos", singular: "foo", short_names: &["fo"], categories: &[],
    ///     namespaced: true, status_subresource: true, scale_subresource: None,
    ///     printer_columns: &[], served: true, storage: true, deprecated: false,
    ///     deprecation_warning: None,
    /// };
    /// let reg = Registration::from_resource_info(&INFO);
    /// assert_eq!(reg.api_version(), "example.com/v1");
    /// assert!(reg.status && !reg.scale && reg.custom);
    /// assert_eq!(reg.short_names, ["fo"]);
    /// ```
    pub fn from_resource_info(info: &ResourceInfo) -> Registration {
        let mut reg = Registration::new(info.group, info.version, info.plural, info.kind)
            .list_kind(info.list_kind)
            .singular(info.singular)
            .short_names(info.short_names)
            .list_items_type_meta(true)
            .custom(true);
        if !info.namespaced {
            reg = reg.cluster_scoped();
        }
        if info.status_subresource {
            reg = reg.status_subresource();
        }
        if let Some(scale) = &info.scale_subresource {
            reg = reg.scale_subresource();
            reg.scale_paths.spec_replicas = scale.spec_replicas_path.to_owned();
            reg.scale_paths.status_replicas = scale.status_replicas_path.to_owned();
            reg.scale_paths.label_selector =
                scale.label_selector_path.unwrap_or_default().to_owned();
        }
        if info.deprecated {
            reg.deprecation_warning = Some(match info.deprecation_warning {
                Some(w) => w.to_owned(),
                None => format!(
                    "{}/{} {} is deprecated",
                    info.group, info.version, info.kind
                ),
            });
        }
        reg
    }

    /// Adds the structural schema (`openAPIV3Schema`) given as JSON text; the server
    /// then prunes, defaults and validates objects with it. Text that is not a JSON
    /// object is a 500 InternalError naming the resource (generated code never sends
    /// such text).
    pub fn with_schema_json(self, schema: &str) -> Result<Registration, StatusError> {
        match serde_json::from_str::<serde_json::Value>(schema) {
            Ok(value) if value.is_object() => Ok(self.schema(value)),
            Ok(_) | Err(_) => Err(StatusError::new(
                500,
                "InternalError",
                format!(
                    "the schema of {}.{} is not a JSON object",
                    self.plural, self.group
                ),
            )),
        }
    }
}
