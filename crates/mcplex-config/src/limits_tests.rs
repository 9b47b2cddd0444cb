//! `limits`: nothing limited by default, the file's defaults overridden by a token's own key by
//! key, one reader for the file, the API and the command line, and refusals that name the key.

use serde_json::json;

use crate::tests::{ok, refused};
use crate::{CallLimits, Rate};

#[test]
fn nothing_is_limited_without_configuration() {
    let config = ok(r#"{"mcpServers": {}}"#);
    assert!(config.limits.is_empty());
}

#[test]
fn the_file_sets_every_callers_default_per_class() {
    let config = ok(
        r#"{"limits": {"calls_per_minute": 600, "concurrent_calls": 8,
        "write": {"calls_per_minute": 60}, "destructive": {"concurrent_calls": 1}}}"#,
    );
    assert_eq!(
        config.limits,
        CallLimits {
            all: Rate {
                calls_per_minute: Some(600),
                concurrent_calls: Some(8)
            },
            write: Rate {
                calls_per_minute: Some(60),
                concurrent_calls: None
            },
            destructive: Rate {
                calls_per_minute: None,
                concurrent_calls: Some(1)
            },
        }
    );
    // Written back in the same shape, only what is set.
    assert_eq!(
        config.limits.to_json(),
        json!({"calls_per_minute": 600, "concurrent_calls": 8,
            "write": {"calls_per_minute": 60}, "destructive": {"concurrent_calls": 1}})
    );
}

#[test]
fn a_tokens_own_limits_override_the_default_key_by_key() {
    let default = CallLimits::from_json(
        &json!({"calls_per_minute": 600, "write": {"calls_per_minute": 60}}),
        "test",
    )
    .expect("valid");
    let own = CallLimits::from_assignments(&[
        "calls_per_minute=10".to_owned(),
        "destructive.concurrent_calls=1".to_owned(),
    ])
    .expect("valid");
    let merged = own.over(&default);
    assert_eq!(merged.all.calls_per_minute, Some(10));
    assert_eq!(merged.write.calls_per_minute, Some(60));
    assert_eq!(merged.destructive.concurrent_calls, Some(1));
    assert_eq!(merged.all.concurrent_calls, None);
}

#[test]
fn bad_limits_are_refused_with_their_key() {
    let zero = refused(r#"{"limits": {"calls_per_minute": 0}}"#);
    assert!(
        zero.contains("limits.calls_per_minute") && zero.contains("from 1"),
        "{zero}"
    );
    let class = refused(r#"{"limits": {"write": 5}}"#);
    assert!(
        class.contains("limits.write") && class.contains("object"),
        "{class}"
    );
    let typo = refused(r#"{"limits": {"write": {"calls_per_minut": 5}}}"#);
    assert!(
        typo.contains("limits.write.calls_per_minut") && typo.contains("did you mean"),
        "{typo}"
    );
    let text = refused(r#"{"limits": {"concurrent_calls": "4"}}"#);
    assert!(text.contains("limits.concurrent_calls"), "{text}");
    // Elsewhere than the file an unknown key is an error, not a warning.
    let unknown = CallLimits::from_json(&json!({"per_hour": 5}), "the request")
        .expect_err("unknown key refused");
    assert!(unknown.to_string().contains("limits.per_hour"), "{unknown}");
    let assignment = CallLimits::from_assignments(&["calls_per_minute".to_owned()])
        .expect_err("no value refused");
    assert!(assignment.to_string().contains("key=value"), "{assignment}");
    let negative = CallLimits::from_assignments(&["write.calls_per_minute=-1".to_owned()])
        .expect_err("not a number");
    assert!(negative.to_string().contains("whole number"), "{negative}");
}
