//! The limiter on its own: classes, in-flight places freed on drop, the operator unlimited, a
//! token's own limits over the default, and two replicas' counts added through report/absorb.
//! Every test runs at a fixed moment, mid-minute: none depends on where the wall clock is.

use std::sync::Arc;

use mcplex_catalog::Permission;
use mcplex_config::CallLimits;
use serde_json::json;

use crate::limits_window::Moment;
use crate::{CallLimiter, LimitClass, LimitKind};

/// Twenty seconds into a minute window.
const NOW: Moment = Moment(1_000 * 60_000 + 20_000);

fn limits(value: serde_json::Value) -> CallLimits {
    CallLimits::from_json(&value, "test").expect("valid limits")
}

fn limiter(defaults: serde_json::Value) -> Arc<CallLimiter> {
    let limiter = CallLimiter::default();
    limiter.set_defaults(limits(defaults));
    Arc::new(limiter)
}

#[test]
fn each_class_is_held_to_its_own_limit_and_every_call_counts_in_all() {
    let limiter = limiter(json!({"calls_per_minute": 3, "destructive": {"calls_per_minute": 1}}));
    let caller: Arc<str> = "agent".into();
    let admit = |permission| limiter.admit_at(Some(&caller), permission, NOW);
    drop(admit(Permission::Destructive).expect("first destructive call"));
    let refused = admit(Permission::Destructive)
        .err()
        .expect("second refused");
    assert_eq!(
        (refused.kind, refused.class, refused.allowed),
        (LimitKind::CallsPerMinute, LimitClass::Destructive, 1)
    );
    drop(admit(Permission::Read).expect("a read"));
    drop(admit(Permission::Write).expect("a write"));
    let refused = admit(Permission::Read)
        .err()
        .expect("the fourth call in all");
    assert_eq!(refused.class, LimitClass::All);
    assert!(refused.retry_after.as_secs() >= 1);
    // The operator is never counted or refused.
    for _ in 0..10 {
        drop(
            limiter
                .admit_at(None, Permission::Destructive, NOW)
                .expect("operator"),
        );
    }
}

#[test]
fn a_place_in_flight_is_freed_when_the_call_ends() {
    let limiter = limiter(json!({"concurrent_calls": 1}));
    let caller: Arc<str> = "agent".into();
    let first = limiter
        .admit_at(Some(&caller), Permission::Read, NOW)
        .expect("first");
    let busy = limiter
        .admit_at(Some(&caller), Permission::Read, NOW)
        .err()
        .expect("busy");
    assert_eq!(busy.kind, LimitKind::ConcurrentCalls);
    // Another caller has places of its own.
    drop(
        limiter
            .admit_at(Some(&"other".into()), Permission::Read, NOW)
            .expect("other"),
    );
    drop(first);
    drop(
        limiter
            .admit_at(Some(&caller), Permission::Read, NOW)
            .expect("freed"),
    );
}

#[test]
fn a_tokens_own_limits_apply_over_the_default_and_unlimited_callers_are_not_counted() {
    let limiter = limiter(json!({}));
    let (limited, free): (Arc<str>, Arc<str>) = ("limited".into(), "free".into());
    limiter.set_own([("limited".to_owned(), limits(json!({"calls_per_minute": 1})))].into());
    drop(
        limiter
            .admit_at(Some(&limited), Permission::Read, NOW)
            .expect("first"),
    );
    assert!(
        limiter
            .admit_at(Some(&limited), Permission::Read, NOW)
            .is_err()
    );
    for _ in 0..5 {
        drop(
            limiter
                .admit_at(Some(&free), Permission::Read, NOW)
                .expect("no limit"),
        );
    }
    let callers: Vec<String> = limiter
        .usage_at(NOW)
        .into_iter()
        .map(|u| u.caller)
        .collect();
    assert_eq!(callers, ["limited"]);
}

#[test]
fn replicas_hold_a_caller_to_one_limit_through_their_reports() {
    let defaults = json!({"calls_per_minute": 4, "concurrent_calls": 3});
    let (one, two) = (limiter(defaults.clone()), limiter(defaults));
    let caller: Arc<str> = "agent".into();
    let held = one
        .admit_at(Some(&caller), Permission::Read, NOW)
        .expect("one");
    drop(
        one.admit_at(Some(&caller), Permission::Read, NOW)
            .expect("one"),
    );
    drop(
        two.admit_at(Some(&caller), Permission::Read, NOW)
            .expect("two"),
    );
    two.absorb_at(one.report_at(NOW), NOW);
    one.absorb_at(two.report_at(NOW), NOW);
    // Three made, one in flight on `one`: `two` admits the fourth, then nobody does.
    drop(
        two.admit_at(Some(&caller), Permission::Read, NOW)
            .expect("the fourth"),
    );
    one.absorb_at(two.report_at(NOW), NOW);
    assert!(one.admit_at(Some(&caller), Permission::Read, NOW).is_err());
    let usage = one.usage_at(NOW);
    assert_eq!((usage[0].calls_last_minute, usage[0].in_flight), (4, 1));
    drop(held);
}
