//! Create: server-set metadata (uid, creationTimestamp, generation, generateName),
//! name validation, namespace admission, and what kube-apiserver's create strategies do
//! to a client's object.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{gr, to_map, Ctx, Gc, WriteOpts};
use crate::apply::{self, Part};
use crate::errors::{cause, GroupResource, StatusCause, StatusError};
use crate::meta::{meta_mut, meta_str, now, random_suffix, uid};
use crate::registry::Registration;
use crate::server::Inner;
use crate::store::{storage_key, EventType, State, Stored};

const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// Whether `s` is a DNS-1123 subdomain (object names).
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

/// A string field of a `metadata` map (`""` when absent).
fn meta_str_of<'a>(meta: &'a Map<String, Value>, k: &str) -> &'a str {
    meta.get(k).and_then(Value::as_str).unwrap_or_default()
}

impl Inner {
    /// Fills the server-set metadata of a new object and validates it.
    pub(super) fn prepare_new(
        &self,
        reg: &Registration,
        ns: &str,
        obj: &mut Map<String, Value>,
        opts: &WriteOpts,
    ) -> Result<bool, StatusError> {
        obj.insert("kind".into(), Value::String(reg.kind.clone()));
        obj.insert("apiVersion".into(), Value::String(reg.api_version()));
        let meta = meta_mut(obj)?;
        if reg.namespaced {
            let own = meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if !ns.is_empty() && !own.is_empty() && own != ns {
                return Err(StatusError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            let ns = if ns.is_empty() { own } else { ns.to_owned() };
            if ns.is_empty() {
                return Err(StatusError::bad_request(
                    "the server could not find the requested resource: a namespace is required",
                ));
            }
            meta.insert("namespace".into(), Value::String(ns));
        } else {
            meta.remove("namespace");
        }
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut generated = false;
        if name.is_empty() {
            let generate = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if generate.is_empty() {
                return Err(StatusError::invalid(
                    &reg.group,
                    &reg.kind,
                    "",
                    vec![StatusCause {
                        reason: cause::FIELD_VALUE_REQUIRED.into(),
                        message: "Required value: name or generateName is required".into(),
                        field: "metadata.name".into(),
                    }],
                ));
            }
            let prefix: String = generate.chars().take(58).collect();
            meta.insert(
                "name".into(),
                Value::String(format!("{prefix}{}", random_suffix())),
            );
            generated = true;
        }
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut causes = Vec::new();
        if generated {
            // kube-apiserver checks the prefix too, a trailing '-' allowed.
            let prefix = meta_str_of(meta, "generateName");
            if !is_dns1123_subdomain(prefix.strip_suffix('-').unwrap_or(prefix)) {
                causes.push(StatusCause {
                    reason: cause::FIELD_VALUE_INVALID.into(),
                    message: format!("Invalid value: {prefix:?}: {DNS1123_SUBDOMAIN}"),
                    field: "metadata.generateName".into(),
                });
            }
        }
        if !is_dns1123_subdomain(&name) {
            causes.push(StatusCause {
                reason: cause::FIELD_VALUE_INVALID.into(),
                message: format!("Invalid value: {name:?}: {DNS1123_SUBDOMAIN}"),
                field: "metadata.name".into(),
            });
        }
        if !causes.is_empty() {
            // kube-apiserver validates the object as a whole: the kind's own causes
            // (a CRD's names, say) come with the name's.
            if let Err(e) = reg.strategy.validate(reg, obj, None) {
                for c in e.details().map(|d| d.causes.clone()).unwrap_or_default() {
                    if !causes.contains(&c) {
                        causes.push(c);
                    }
                }
            }
            return Err(StatusError::invalid(&reg.group, &reg.kind, &name, causes));
        }
        meta.insert("uid".into(), Value::String(uid()));
        meta.insert("creationTimestamp".into(), Value::String(now()));
        if crate::builtin_defaults::has_generation(reg) {
            meta.insert("generation".into(), Value::from(1));
        } else {
            meta.remove("generation");
        }
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("resourceVersion");
        reg.strategy.prepare_for_create(obj)?;
        self.admit(reg, obj, None, opts)?;
        Ok(generated)
    }

    /// Namespace admission for creates: 403 into a Terminating namespace; in strict mode
    /// 404 into a missing one.
    fn check_namespace(
        &self,
        st: &State,
        reg: &Registration,
        obj: &Map<String, Value>,
        generated: bool,
    ) -> Result<(), StatusError> {
        let ns = meta_str(obj, "namespace");
        if !reg.namespaced || ns.is_empty() {
            return Ok(());
        }
        let Some(i) = st.lookup("v1", "namespaces") else {
            return Ok(());
        };
        match st.collections[i].objects.get(ns) {
            Some(n) => {
                let v = n.to_value()?;
                if meta_str(&v, "deletionTimestamp").is_empty() {
                    return Ok(());
                }
                // Admission runs before a name is generated.
                let name = if generated { "" } else { meta_str(obj, "name") };
                let name = [name, meta_str(obj, "generateName")]
                    .into_iter()
                    .find(|n| !n.is_empty())
                    .unwrap_or("Unknown");
                Err(crate::namespaces::terminating(reg, ns, name))
            }
            None if !self.strict_namespaces => Ok(()),
            None => Err(StatusError::not_found(
                GroupResource {
                    group: "",
                    resource: "namespaces",
                },
                ns,
            )),
        }
    }

    pub(super) fn insert_locked(
        &self,
        st: &mut State,
        ctx: &Ctx<'_>,
        mut obj: Map<String, Value>,
        generated: bool,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = ctx.reg;
        self.check_namespace(st, reg, &obj, generated)?;
        let mut tries = 0;
        loop {
            let key = storage_key(meta_str(&obj, "namespace"), meta_str(&obj, "name"));
            if !st.collections[ctx.idx].objects.contains_key(&key) {
                break;
            }
            tries += 1;
            if !generated || tries > 8 {
                return Err(StatusError::already_exists(gr(reg), meta_str(&obj, "name")));
            }
            let generate = meta_str(&obj, "generateName")
                .chars()
                .take(58)
                .collect::<String>();
            meta_mut(&mut obj)?.insert(
                "name".into(),
                Value::String(format!("{generate}{}", random_suffix())),
            );
        }
        if self.crd_terminating(st, reg) {
            return Err(crate::crd_lifecycle::terminating(
                reg,
                meta_str(&obj, "name"),
            ));
        }
        reg.strategy.before_insert(&mut obj)?;
        self.store(st, ctx.idx, reg, &obj, EventType::Added, ctx.opts.dry_run)
    }

    /// Creates an object in namespace `ns` (`""`: the object's own namespace).
    pub(crate) fn create(
        &self,
        idx: usize,
        ns: &str,
        mut obj: Map<String, Value>,
        opts: &WriteOpts,
    ) -> Result<Arc<Stored>, StatusError> {
        let reg = self.registration(idx);
        let generated = self.prepare_new(&reg, ns, &mut obj, opts)?;
        let mut v = Value::Object(obj);
        if let Some(m) = opts.field_manager.as_deref() {
            let (time, av) = (now(), reg.api_version());
            let mgr = apply::Manager {
                schema: crate::openapi::merge_schema(&reg),
                ..self.manager(m, Part::All, &time, &av)
            };
            apply::record_update(None, &mut v, Some(&mgr));
        }
        let obj = to_map(v)?;
        let out = {
            let mut st = self.state.write();
            let ctx = Ctx {
                idx,
                reg: &reg,
                opts,
            };
            self.insert_locked(&mut st, &ctx, obj, generated)?
        };
        self.after_create(&reg, &out, opts)?;
        Ok(out)
    }

    /// The controllers a new object's strategy wakes.
    pub(super) fn after_create(
        &self,
        reg: &Registration,
        out: &Stored,
        opts: &WriteOpts,
    ) -> Result<(), StatusError> {
        if !opts.dry_run {
            let obj = out.to_value()?;
            let wakes = reg.strategy.after_write(&obj, false);
            self.collect_garbage(wakes.into_iter().map(Gc::Wake).collect());
        }
        Ok(())
    }
}

/// What kube-apiserver's create strategies do to a client's new object: the
/// registration's strategy resets the status (see `Strategy::reset_status`).
/// Objects seeded through [`crate::ApiServer`]'s own methods keep the status they are
/// given, as test fixtures need.
pub(crate) fn on_client_create(reg: &Registration, obj: &mut Map<String, Value>) {
    reg.strategy.reset_status(reg, obj);
}
