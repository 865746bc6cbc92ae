//! Status conditions (`metav1.Condition`) with apimachinery's `meta.SetStatusCondition`
//! semantics.
//!
//! Contract:
//! - [`set_status_condition`] adds a condition of a new type, stamping
//!   `lastTransitionTime` with now when the new condition leaves it unset (the zero
//!   value: [`Timestamp::UNIX_EPOCH`], the `Default` of k8s-openapi's `Time`).
//! - For an existing type, `lastTransitionTime` moves only when `status` changes (to the
//!   new condition's time when set, else now); `reason`, `message` and
//!   `observedGeneration` are copied whenever they differ. It returns whether anything
//!   changed, so a reconcile writes status only when needed.
//! - Conditions are found by `type`; the order of the list is kept.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The condition status `True`.
pub const CONDITION_TRUE: &str = "True";
/// The condition status `False`.
pub const CONDITION_FALSE: &str = "False";
/// The condition status `Unknown`.
pub const CONDITION_UNKNOWN: &str = "Unknown";

/// A condition of `type_` with `status`, `reason`, `message` and the generation it was
/// computed from; its transition time is left unset for [`set_status_condition`] to fill.
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
/// use kubegen_runtime::controller::conditions::{condition, is_status_condition_true, set_status_condition};
///
/// let mut conditions: Vec<Condition> = Vec::new();
/// assert!(set_status_condition(&mut conditions, condition("Ready", "True", "Synced", "all children exist", Some(3))));
/// assert!(is_status_condition_true(&conditions, "Ready"));
/// // The same condition again changes nothing.
/// assert!(!set_status_condition(&mut conditions, condition("Ready", "True", "Synced", "all children exist", Some(3))));
/// ```
pub fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

/// Sets `new` in `conditions` (see the module docs); true when anything changed.
pub fn set_status_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    set_status_condition_at(conditions, new, Timestamp::now())
}

/// [`set_status_condition`] with `now` as the current time (for tests).
pub fn set_status_condition_at(
    conditions: &mut Vec<Condition>,
    mut new: Condition,
    now: Timestamp,
) -> bool {
    let unset = new.last_transition_time.0 == Timestamp::UNIX_EPOCH;
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        if unset {
            new.last_transition_time = Time(now);
        }
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = if unset {
            Time(now)
        } else {
            new.last_transition_time
        };
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// The condition of `type_`, if present.
pub fn find_status_condition<'a>(
    conditions: &'a [Condition],
    type_: &str,
) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Removes the condition of `type_`; true when one was removed.
pub fn remove_status_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// Whether the condition of `type_` is present with status `True`.
pub fn is_status_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_status_condition(conditions, type_).is_some_and(|c| c.status == CONDITION_TRUE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("a valid timestamp")
    }

    #[test]
    fn a_new_type_is_appended_with_now_unless_a_time_is_given() {
        let mut conditions = Vec::new();
        assert!(set_status_condition_at(
            &mut conditions,
            condition("Ready", CONDITION_FALSE, "Starting", "", Some(1)),
            at(100),
        ));
        let mut given = condition("Degraded", CONDITION_FALSE, "Fine", "", Some(1));
        given.last_transition_time = Time(at(7));
        assert!(set_status_condition_at(&mut conditions, given, at(100)));
        let types: Vec<(&str, Timestamp)> = conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.last_transition_time.0))
            .collect();
        assert_eq!(types, [("Ready", at(100)), ("Degraded", at(7))]);
    }

    #[test]
    fn the_transition_time_moves_only_when_the_status_changes() {
        let mut conditions = Vec::new();
        set_status_condition_at(
            &mut conditions,
            condition("Ready", CONDITION_FALSE, "Starting", "wait", Some(1)),
            at(100),
        );
        // Same status, new reason, message and generation: copied, time kept.
        assert!(set_status_condition_at(
            &mut conditions,
            condition("Ready", CONDITION_FALSE, "Scaling", "2 of 3", Some(2)),
            at(200),
        ));
        let ready = find_status_condition(&conditions, "Ready").expect("Ready is set");
        assert_eq!(
            (
                ready.reason.as_str(),
                ready.message.as_str(),
                ready.observed_generation
            ),
            ("Scaling", "2 of 3", Some(2))
        );
        assert_eq!(ready.last_transition_time.0, at(100));
        // Status flips: the time moves to now.
        assert!(set_status_condition_at(
            &mut conditions,
            condition("Ready", CONDITION_TRUE, "Scaling", "2 of 3", Some(2)),
            at(300),
        ));
        assert_eq!(conditions[0].last_transition_time.0, at(300));
        assert!(is_status_condition_true(&conditions, "Ready"));
        // Nothing differs: no change reported, nothing moves.
        assert!(!set_status_condition_at(
            &mut conditions,
            condition("Ready", CONDITION_TRUE, "Scaling", "2 of 3", Some(2)),
            at(400),
        ));
        assert_eq!(conditions[0].last_transition_time.0, at(300));
        assert!(remove_status_condition(&mut conditions, "Ready"));
        assert!(!remove_status_condition(&mut conditions, "Ready"));
        assert!(conditions.is_empty());
    }
}
