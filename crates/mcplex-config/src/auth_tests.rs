//! The `auth` block: what it accepts, its defaults, and each refusal naming its key.

use std::time::Duration;

use crate::tests::{ok, refused};
use crate::{RuleMatch, SIGNATURE_ALGORITHMS, reload};

const SERVERS: &str = r#""mcpServers": {"fs": {"command": "fs"}, "git": {"command": "git"}}"#;

fn with_auth(auth: &str) -> String {
    format!(
        r#"{{{SERVERS}, "profiles": [{{"name": "code", "servers": ["git"]}}], "auth": {auth}}}"#
    )
}

const MINIMAL: &str = r#"{"issuer": "https://id.example.com", "audience": "https://mcp.example.com/mcp",
    "rules": [{"scope": "mcp:read", "permissions": ["read"]}]}"#;

#[test]
fn a_minimal_block_takes_the_defaults() {
    let config = ok(&with_auth(MINIMAL));
    let auth = config.auth.expect("auth is set");
    assert_eq!(auth.issuer, "https://id.example.com");
    assert_eq!(auth.audience, "https://mcp.example.com/mcp");
    assert_eq!(auth.resource, None);
    assert_eq!(auth.algorithms, SIGNATURE_ALGORITHMS);
    assert_eq!(auth.leeway, Duration::from_secs(60));
    assert_eq!(auth.rules.len(), 1);
    assert_eq!(auth.rules[0].when, RuleMatch::Scope("mcp:read".into()));
    assert_eq!(auth.rules[0].servers, None);
    assert_eq!(auth.scopes(), ["mcp:read"]);
    assert!(ok("{}").auth.is_none());
}

#[test]
fn rules_match_scopes_or_claims_and_grant_servers_permissions_and_a_profile() {
    let config = ok(&with_auth(
        r#"{"issuer": "http://127.0.0.1:9000", "audience": "a", "resource": "https://gw.example.com/mcp",
            "algorithms": ["ES256"], "leeway_seconds": 5, "rules": [
            {"claim": "groups", "value": "ops", "servers": ["*"], "permissions": ["read", "write", "destructive"]},
            {"scope": "mcp:write", "servers": ["fs", "git"], "permissions": ["read", "write"], "profile": "code"},
            {"scope": "mcp:write", "servers": ["fs"], "permissions": ["read"]}]}"#,
    ));
    let auth = config.auth.expect("auth is set");
    assert_eq!(auth.algorithms, ["ES256"]);
    assert_eq!(auth.leeway, Duration::from_secs(5));
    assert_eq!(auth.resource.as_deref(), Some("https://gw.example.com/mcp"));
    assert_eq!(
        auth.rules[0].when,
        RuleMatch::Claim {
            name: "groups".into(),
            value: "ops".into()
        }
    );
    assert_eq!(auth.rules[0].servers, None);
    assert_eq!(auth.rules[0].permissions.len(), 3);
    let servers: Vec<&str> = auth.rules[1]
        .servers
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    assert_eq!(servers, ["fs", "git"]);
    assert_eq!(auth.rules[1].profile.as_deref(), Some("code"));
    assert_eq!(auth.scopes(), ["mcp:write"], "each scope once");
}

#[test]
fn refusals_name_the_key() {
    let cases = [
        (r#"{"audience": "a", "rules": []}"#, "auth.issuer: required"),
        (
            r#"{"issuer": "http://id.example.com", "audience": "a", "rules": [{"scope": "s", "permissions": ["read"]}]}"#,
            "auth.issuer: \"http://id.example.com\" must be an https:// URL",
        ),
        (
            r#"{"issuer": "https://id", "rules": [{"scope": "s", "permissions": ["read"]}]}"#,
            "auth.audience: required",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "rules": []}"#,
            "auth.rules: required: at least one rule",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "algorithms": ["HS256"], "rules": [{"scope": "s", "permissions": ["read"]}]}"#,
            "auth.algorithms[0]: \"HS256\" is never accepted",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "algorithms": ["none"], "rules": [{"scope": "s", "permissions": ["read"]}]}"#,
            "auth.algorithms[0]: \"none\" is never accepted",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "leeway_seconds": 9999, "rules": [{"scope": "s", "permissions": ["read"]}]}"#,
            "auth.leeway_seconds: must be a whole number of seconds from 0 to 300",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "rules": [{"scope": "s", "claim": "g", "value": "v", "permissions": ["read"]}]}"#,
            "auth.rules[0]: must match on either",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "rules": [{"claim": "g", "permissions": ["read"]}]}"#,
            "auth.rules[0]: must match on either",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "rules": [{"scope": "s"}]}"#,
            "auth.rules[0].permissions: required",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "rules": [{"scope": "s", "permissions": ["admin"]}]}"#,
            "auth.rules[0].permissions[0]: unknown permission \"admin\"",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "rules": [{"scope": "s", "servers": ["nope"], "permissions": ["read"]}]}"#,
            "auth.rules[0].servers[0]: no server named \"nope\"",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "rules": [{"scope": "s", "permissions": ["read"], "profile": "nope"}]}"#,
            "auth.rules[0].profile: no profile named \"nope\"",
        ),
        (
            r#"{"issuer": "https://id", "audience": "a", "rules": [{"scope": "s", "permisions": ["read"]}]}"#,
            "auth.rules[0].permisions: unknown key; did you mean \"permissions\"?",
        ),
        (
            r#"{"isuer": "https://id", "audience": "a", "rules": []}"#,
            "auth.isuer: unknown key; did you mean \"issuer\"?",
        ),
    ];
    for (auth, expected) in cases {
        let message = refused(&with_auth(auth));
        assert!(message.contains(expected), "{auth}\n→ {message}");
    }
    let message = refused(r#"{"authh": {}}"#);
    assert!(message.contains("did you mean \"auth\"?"), "{message}");
}

#[test]
fn an_edit_of_auth_waits_for_a_restart() {
    let running = ok(&with_auth(MINIMAL));
    let edited = ok(&with_auth(&MINIMAL.replace("mcp:read", "mcp:all")));
    let reloaded = reload(&running, edited);
    assert_eq!(reloaded.needs_restart, ["auth"]);
    assert_eq!(reloaded.config.auth, running.auth);
}

#[test]
fn dashboard_sign_in_reads_its_client_scopes_and_operators() {
    let config = ok(&with_auth(
        r#"{"issuer": "https://id.example.com", "audience": "a",
            "rules": [{"scope": "mcp:read", "permissions": ["read"]}],
            "dashboard": {"client_id": "dash", "client_secret": {"env": "DASH_SECRET"},
                          "scopes": ["profile", "groups"],
                          "operators": [{"claim": "groups", "value": "mcp-admins"},
                                        {"claim": "realm.roles", "value": "admin"}]}}"#,
    ));
    let sign_in = config.auth.and_then(|a| a.dashboard).expect("dashboard");
    assert_eq!(sign_in.client_id, "dash");
    assert_eq!(
        sign_in.client_secret,
        Some(crate::ClientSecret::Env("DASH_SECRET".into()))
    );
    // `openid` is always asked for.
    assert_eq!(sign_in.scopes, ["openid", "profile", "groups"]);
    let claims = |value: serde_json::Value| value.as_object().cloned().expect("object");
    let [groups, nested] = [&sign_in.operators[0], &sign_in.operators[1]];
    assert!(groups.holds(&claims(
        serde_json::json!({"groups": ["staff", "mcp-admins"]})
    )));
    assert!(groups.holds(&claims(serde_json::json!({"groups": "mcp-admins"}))));
    assert!(!groups.holds(&claims(serde_json::json!({"groups": ["staff"]}))));
    assert!(!groups.holds(&claims(serde_json::json!({}))));
    assert!(nested.holds(&claims(serde_json::json!({"realm": {"roles": ["admin"]}}))));
    // Without scopes: the usual three.
    let plain = ok(&with_auth(
        r#"{"issuer": "https://id.example.com", "audience": "a",
            "rules": [{"scope": "mcp:read", "permissions": ["read"]}],
            "dashboard": {"client_id": "dash", "operators": [{"claim": "sub", "value": "alice"}]}}"#,
    ));
    let plain = plain.auth.and_then(|a| a.dashboard).expect("dashboard");
    assert_eq!(plain.scopes, crate::DEFAULT_SIGN_IN_SCOPES);
    assert_eq!(plain.client_secret, None);
}

#[test]
fn dashboard_sign_in_refusals_name_their_key() {
    let rules = r#""rules": [{"scope": "mcp:read", "permissions": ["read"]}]"#;
    let no_client = refused(&with_auth(&format!(
        r#"{{"issuer": "https://id.example.com", "audience": "a", {rules},
            "dashboard": {{"operators": [{{"claim": "sub", "value": "alice"}}]}}}}"#
    )));
    assert!(
        no_client.contains("auth.dashboard.client_id"),
        "{no_client}"
    );
    let no_operators = refused(&with_auth(&format!(
        r#"{{"issuer": "https://id.example.com", "audience": "a", {rules},
            "dashboard": {{"client_id": "dash", "operators": []}}}}"#
    )));
    assert!(
        no_operators.contains("auth.dashboard.operators"),
        "{no_operators}"
    );
    let empty_value = refused(&with_auth(&format!(
        r#"{{"issuer": "https://id.example.com", "audience": "a", {rules},
            "dashboard": {{"client_id": "dash", "operators": [{{"claim": "groups", "value": " "}}]}}}}"#
    )));
    assert!(
        empty_value.contains("auth.dashboard.operators[0].value"),
        "{empty_value}"
    );
}
