//! The apiextensions controllers that act on CustomResourceDefinitions after a write:
//! the names controller (accepts names, serves the resource) and the cleanup of a
//! deleted CRD's custom resources.
//!
//! Contract: see the `crd_lifecycle` module, whose strategy decides what a write of a
//! CRD stores and schedules these controllers through the write's follow-up work.

use serde_json::{Map, Value};

use crate::crd_lifecycle::{
    accept_names, condition_true, conflict, group_crds, reject_names, set_condition,
    CLEANUP_FINALIZER,
};
use crate::errors::StatusError;
use crate::meta::{meta_mut, meta_str};
use crate::registry::Registration;
use crate::registry::Wake;
use crate::server::Inner;
use crate::store::State;
use crate::writes::{DeleteOpts, Gc, Propagation};

/// How long the cleanup waits between passes while custom resources remain.
const PASS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

impl Inner {
    /// Whether the CRD serving `reg` is being deleted.
    pub(crate) fn crd_terminating(&self, st: &super::store::State, reg: &Registration) -> bool {
        if !reg.custom {
            return false;
        }
        let Some(i) = st.lookup("apiextensions.k8s.io/v1", "customresourcedefinitions") else {
            return false;
        };
        let key = format!("{}.{}", reg.plural, reg.group);
        st.collections[i]
            .objects
            .get(&key)
            .and_then(|s| s.to_value().ok())
            .is_some_and(|o| !meta_str(&o, "deletionTimestamp").is_empty())
    }

    /// Runs the names controller on a CRD (after a write): accepts its names and serves
    /// it, or reports the conflict and leaves it unserved.
    pub(crate) fn crd_names_pass(&self, name: &str) {
        let Some(idx) = self
            .state
            .read()
            .lookup("apiextensions.k8s.io/v1", "customresourcedefinitions")
        else {
            return;
        };
        let reg = self.registration(idx);
        let opts = Default::default();
        let ctx = super::writes::Ctx {
            idx,
            reg: &reg,
            opts: &opts,
        };
        let gc = {
            let mut st = self.state.write();
            let Some(old) = st.collections[idx].objects.get(name).cloned() else {
                return;
            };
            let Ok(prev) = old.to_value() else {
                return;
            };
            if !meta_str(&prev, "deletionTimestamp").is_empty() {
                return;
            }
            let mut new = prev.clone();
            // Names once accepted stay accepted.
            let conflict = if condition_true(&prev, "NamesAccepted") {
                None
            } else {
                conflict(&st, idx, &prev)
            };
            match conflict {
                None => {
                    accept_names(&mut new);
                    if let Ok(regs) = Registration::from_crd_value(&Value::Object(new.clone())) {
                        for r in regs {
                            st.register(r);
                        }
                    }
                }
                Some((reason, message)) => reject_names(&mut new, reason, &message),
            }
            match self.replace_locked(&mut st, &ctx, &old, &prev, new) {
                Ok((_, gc)) => gc,
                Err(_) => Vec::new(),
            }
        };
        self.collect_garbage(gc);
    }

    /// Starts the cleanup of a deleted CRD: on a task in a tokio runtime, else now.
    pub(crate) fn schedule_crd_cleanup(&self, name: String) {
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                // The task holds the server weakly: a server dropped without shutdown
                // ends it.
                let weak = self.me.clone();
                h.spawn(async move {
                    loop {
                        tokio::time::sleep(PASS_INTERVAL).await;
                        let Some(me) = weak.upgrade() else {
                            return;
                        };
                        if me.shutdown.is_cancelled() || me.crd_cleanup(&name) {
                            return;
                        }
                    }
                });
            }
            Err(_) => {
                self.crd_cleanup(&name);
            }
        }
    }

    /// Deletes every custom resource of a terminating CRD and, once none is left,
    /// releases the CRD; true when done.
    fn crd_cleanup(&self, name: &str) -> bool {
        let Some(idx) = self
            .state
            .read()
            .lookup("apiextensions.k8s.io/v1", "customresourcedefinitions")
        else {
            return true;
        };
        let _ = self.edit_object(idx, name, |o| {
            set_condition(
                o,
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            );
        });
        let targets: Vec<usize> = {
            let st = self.state.read();
            let (plural, group) = name.split_once('.').unwrap_or((name, ""));
            (0..st.collections.len())
                .filter(|i| {
                    let r = &st.collections[*i].reg;
                    r.custom && r.plural == plural && r.group == group
                })
                .collect()
        };
        let opts = DeleteOpts {
            propagation: Some(Propagation::Background),
            ..Default::default()
        };
        for i in &targets {
            let _ = self.delete_collection(*i, None, |_| true, &opts);
        }
        let remaining: usize = {
            let st = self.state.read();
            targets
                .iter()
                .map(|i| st.collections[*i].objects.len())
                .sum()
        };
        if remaining > 0 {
            // Custom resources with finalizers: poll until they are gone.
            return false;
        }
        let _ = self.edit_object(idx, name, |o| {
            set_condition(
                o,
                "Terminating",
                "False",
                "InstanceDeletionCompleted",
                "removed all instances",
            );
            if let Ok(meta) = meta_mut(o) {
                if let Some(Value::Array(a)) = meta.get_mut("finalizers") {
                    a.retain(|f| f != CLEANUP_FINALIZER);
                }
            }
        });
        true
    }

    /// Applies `f` to a stored cluster-scoped object and writes it.
    pub(crate) fn edit_object(
        &self,
        idx: usize,
        name: &str,
        f: impl FnOnce(&mut Map<String, Value>),
    ) -> Result<(), StatusError> {
        let reg = self.registration(idx);
        let opts = Default::default();
        let ctx = super::writes::Ctx {
            idx,
            reg: &reg,
            opts: &opts,
        };
        let gc = {
            let mut st = self.state.write();
            let Some(old) = st.collections[idx].objects.get(name).cloned() else {
                return Ok(());
            };
            let prev = old.to_value()?;
            let mut new = prev.clone();
            f(&mut new);
            self.replace_locked(&mut st, &ctx, &old, &prev, new)?.1
        };
        self.collect_garbage(gc);
        Ok(())
    }
}

impl Inner {
    /// A CRD is gone (called under the storage lock): its versions stop being served,
    /// and the CRDs of its group whose names it held are looked at again.
    pub(crate) fn crd_removed(
        &self,
        st: &mut State,
        idx: usize,
        crd: &Map<String, Value>,
    ) -> Result<Vec<Gc>, StatusError> {
        for r in Registration::from_crd_value(&Value::Object(crd.clone()))? {
            st.unserve(&r);
        }
        Ok(group_crds(st, idx, crd)
            .into_iter()
            .map(|name| Gc::Wake(Wake::CrdNames(name)))
            .collect())
    }
}
