//! The hot/cold declaration: what an edit applies, what it reports as needing a restart, and the
//! config it leaves running.

use crate::{Config, DirectToolResponseMode, Overrides, parse_config, reload};

#[track_caller]
fn config(text: &str) -> Config {
    match parse_config(text, "cfg.json", &Overrides::default()) {
        Ok(config) => config,
        Err(e) => panic!("expected a valid config, got: {e}"),
    }
}

const FIXTURE: &str = r#""fixture": {"command": "fixture"}"#;

#[test]
fn an_edit_that_changes_nothing_applies_and_reports_nothing() {
    let running = config(&format!(
        r#"{{"listen": "127.0.0.1:9", "mcpServers": {{{FIXTURE}}}}}"#
    ));
    let reloaded = reload(&running, running.clone());
    assert!(reloaded.applied.is_empty(), "{:?}", reloaded.applied);
    assert!(reloaded.needs_restart.is_empty());
    assert!(!reloaded.deferral_waits);
    assert_eq!(reloaded.config, running);
}

#[test]
fn a_hot_edit_is_applied_and_named() {
    let running = config(&format!(r#"{{"mcpServers": {{{FIXTURE}}}}}"#));
    let edited = config(&format!(
        r#"{{"direct_tool_response_mode": "deferred", "tool_response_mode": "compact", "mcpServers": {{{FIXTURE}, "second": {{"command": "two"}}}}}}"#
    ));
    let reloaded = reload(&running, edited.clone());
    assert_eq!(
        reloaded.applied,
        [
            "direct_tool_response_mode",
            "tool_response_mode",
            "mcpServers"
        ]
    );
    assert!(reloaded.needs_restart.is_empty());
    assert!(reloaded.servers_changed());
    assert_eq!(reloaded.config, edited);
}

#[test]
fn a_cold_edit_names_only_what_changed_and_keeps_the_running_value() {
    let running = config(r#"{"listen": "127.0.0.1:9", "code_execution_timeout": "10s"}"#);
    let edited = config(
        r#"{"listen": "127.0.0.1:10", "code_execution_timeout": "20s", "direct_tool_response_mode": "deferred"}"#,
    );
    let reloaded = reload(&running, edited);
    assert_eq!(reloaded.needs_restart, ["listen", "code_execution_timeout"]);
    assert_eq!(reloaded.applied, ["direct_tool_response_mode"]);
    assert!(!reloaded.servers_changed());
    assert_eq!(reloaded.config.listen, "127.0.0.1:9");
    assert_eq!(reloaded.config.code, running.code);
    assert_eq!(
        reloaded.config.direct_tool_response_mode,
        DirectToolResponseMode::Deferred
    );
}

#[test]
fn every_cold_setting_is_named_by_its_key_in_the_file() {
    let running = config("{}");
    let edited = config(
        r#"{"listen": "127.0.0.1:1", "call_timeout": "1s", "routing_mode": "retrieve_tools",
            "instructions": "hi", "tool_search": {"max_matches": 9}, "search_model": "/m",
            "data_dir": "/d", "store": "postgres://x/y", "trusted_hosts": ["a.example"],
            "require_auth": true, "max_body_bytes": 4096, "profiles": [{"name": "p", "servers": []}],
            "http_header_read_timeout": "1s", "http_body_read_timeout": "1s",
            "http_idle_timeout": "1s", "max_connections": 2, "session_idle_timeout": "1s",
            "max_sessions": 2, "code_execution_timeout": "1s", "code_execution_memory_limit": "1MB",
            "code_execution_max_tool_calls": 1, "code_execution_max_concurrent_per_caller": 1,
            "audit_retention_days": 1, "audit_retention_rows": 5000, "audit_arguments": true,
            "audit_sink": "stdout"}"#,
    );
    let reloaded = reload(&running, edited);
    let mut named = reloaded.needs_restart.clone();
    named.sort_unstable();
    let mut expected = vec![
        "listen",
        "call_timeout",
        "routing_mode",
        "instructions",
        "tool_search.max_matches",
        "search_model",
        "data_dir",
        "store",
        "trusted_hosts",
        "require_auth",
        "max_body_bytes",
        "profiles",
        "http_header_read_timeout",
        "http_body_read_timeout",
        "http_idle_timeout",
        "max_connections",
        "session_idle_timeout",
        "max_sessions",
        "code_execution_timeout",
        "code_execution_memory_limit",
        "code_execution_max_tool_calls",
        "code_execution_max_concurrent_per_caller",
        "audit_retention_days",
        "audit_retention_rows",
        "audit_arguments",
        "audit_sink",
    ];
    expected.sort_unstable();
    assert_eq!(named, expected);
    assert!(reloaded.applied.is_empty(), "{:?}", reloaded.applied);
    // Every cold setting runs as it was.
    assert_eq!(
        Config {
            warnings: Vec::new(),
            ..reloaded.config
        },
        running
    );
}

#[test]
fn changing_only_defer_on_a_deferring_gateway_needs_no_restart() {
    let running = config(&format!(
        r#"{{"defer_tools": true, "mcpServers": {{{FIXTURE}}}}}"#
    ));
    let edited = config(
        r#"{"defer_tools": true, "mcpServers": {"fixture": {"command": "fixture", "defer": false}}}"#,
    );
    let reloaded = reload(&running, edited.clone());
    assert_eq!(reloaded.applied, ["mcpServers"]);
    assert!(
        reloaded.needs_restart.is_empty(),
        "{:?}",
        reloaded.needs_restart
    );
    assert!(!reloaded.deferral_waits);
    assert_eq!(reloaded.config, edited);
}

#[test]
fn deferral_switched_on_while_running_waits_for_a_restart() {
    let running = config(&format!(r#"{{"mcpServers": {{{FIXTURE}}}}}"#));
    let edited = config(
        r#"{"mcpServers": {"fixture": {"command": "fixture", "defer": true, "tools": {"defer": ["x*"]}}}}"#,
    );
    let reloaded = reload(&running, edited);
    assert!(reloaded.deferral_waits);
    assert!(reloaded.applied.is_empty(), "{:?}", reloaded.applied);
    assert!(reloaded.needs_restart.is_empty());
    assert!(!reloaded.config.defers_anything());
    assert_eq!(reloaded.config.servers, running.servers);
}

#[test]
fn deferral_switched_off_while_running_says_the_search_tools_stay() {
    let running = config(&format!(
        r#"{{"defer_tools": true, "mcpServers": {{{FIXTURE}}}}}"#
    ));
    let edited = config(&format!(r#"{{"mcpServers": {{{FIXTURE}}}}}"#));
    let reloaded = reload(&running, edited.clone());
    assert!(reloaded.search_tools_stay);
    assert_eq!(reloaded.applied, ["defer_tools"]);
    assert_eq!(reloaded.config, edited);
    let again = reload(&reloaded.config, edited);
    assert!(
        !again.search_tools_stay,
        "said once, for the edit that did it"
    );
}

#[test]
fn deferral_switched_off_then_on_again_applies_while_the_search_tools_are_listed() {
    let started = config(&format!(
        r#"{{"defer_tools": true, "mcpServers": {{{FIXTURE}}}}}"#
    ));
    let off = reload(
        &started,
        config(&format!(r#"{{"mcpServers": {{{FIXTURE}}}}}"#)),
    )
    .config;
    let reloaded = crate::reload_listing(&off, started.clone(), true);
    assert!(
        !reloaded.deferral_waits,
        "the gateway still lists tool_search"
    );
    assert_eq!(reloaded.applied, ["defer_tools"]);
    assert!(reloaded.config.defers_anything());
}
