//! `parse_config` on a server's `"oauth"` block: its fields, its refusals, typo suggestions,
//! and its secret kept out of `Debug` and redacted from text.

use crate::tests::{ok, refused};
use crate::{ClientSecret, OAuthConfig, OAuthGrant, Redactor};

fn oauth_of(block: &str) -> OAuthConfig {
    let config = ok(&format!(
        r#"{{"mcpServers": {{"s": {{"url": "https://mcp.example.com/mcp", "oauth": {block}}}}}}}"#
    ));
    config.servers[0].oauth.clone().expect("an oauth block")
}

#[test]
fn an_empty_block_is_a_person_s_login_with_registration() {
    assert_eq!(oauth_of("{}"), OAuthConfig::default());
    assert_eq!(OAuthConfig::default().grant, OAuthGrant::AuthorizationCode);
}

#[test]
fn every_field_is_read() {
    let oauth = oauth_of(
        r#"{"client_id": "id", "client_secret": {"env": "S"}, "scopes": ["a", "b"], "grant": "client_credentials"}"#,
    );
    assert_eq!(oauth.client_id.as_deref(), Some("id"));
    assert_eq!(oauth.client_secret, Some(ClientSecret::Env("S".into())));
    assert_eq!(oauth.scopes, ["a", "b"]);
    assert_eq!(oauth.grant, OAuthGrant::ClientCredentials);
}

#[test]
fn bad_blocks_are_refused_with_their_key() {
    let server = |block: &str| {
        refused(&format!(
            r#"{{"mcpServers": {{"s": {{"url": "https://m.example/mcp", "oauth": {block}}}}}}}"#
        ))
    };
    assert_eq!(
        server(r#"{"grant": "password"}"#),
        r#"cfg.json: mcpServers.s.oauth.grant: unknown grant "password"; expected "authorization_code" (a person logs in) or "client_credentials" (no person)"#
    );
    assert_eq!(
        server(r#"{"grant": "client_credentials", "client_id": "x"}"#),
        r#"cfg.json: mcpServers.s.oauth: "grant": "client_credentials" needs "client_id" and "client_secret""#
    );
    assert_eq!(
        server(r#"{"client_secrt": "x"}"#),
        r#"cfg.json: mcpServers.s.oauth.client_secrt: unknown key; did you mean "client_secret"?"#
    );
    assert_eq!(
        server(r#"{"scopes": "a b"}"#),
        "cfg.json: mcpServers.s.oauth.scopes: must be an array of strings, found a string"
    );
    assert_eq!(
        server(r#"{"client_secret": {"variable": "S"}}"#),
        r#"cfg.json: mcpServers.s.oauth.client_secret: must be a string or {"env": "VARIABLE"}"#
    );
    assert_eq!(
        refused(r#"{"mcpServers": {"s": {"command": "x", "oauth": {}}}}"#),
        r#"cfg.json: mcpServers.s.oauth: only a URL server ("url") logs in with OAuth"#
    );
}

#[test]
fn a_written_client_secret_never_shows() {
    let config = ok(
        r#"{"mcpServers": {"s": {"url": "https://m.example/mcp", "oauth": {"client_id": "id", "client_secret": "s3cret-value"}}}}"#,
    );
    assert!(!format!("{config:?}").contains("s3cret-value"));
    let redactor = Redactor::for_server(&config.servers[0]);
    assert_eq!(redactor.redact("echo s3cret-value"), "echo [redacted]");
}

#[test]
fn an_edited_block_is_applied_hot_and_reconnects_its_server() {
    let text = |oauth: &str| {
        format!(
            r#"{{"mcpServers": {{"s": {{"url": "https://m.example/mcp", "oauth": {oauth}}}}}}}"#
        )
    };
    let running = ok(&text("{}"));
    let edited = ok(&text(r#"{"scopes": ["read"]}"#));
    let reloaded = crate::reload(&running, edited.clone());
    assert_eq!(reloaded.applied, ["mcpServers"]);
    assert!(reloaded.needs_restart.is_empty());
    assert_eq!(reloaded.config, edited);
    // The running connection does not carry on with the old block.
    assert!(!running.servers[0].same_connection(&edited.servers[0]));
}

#[test]
fn a_secret_read_from_the_environment_can_be_hidden_too() {
    let config = ok(
        r#"{"mcpServers": {"s": {"url": "https://m.example/mcp", "oauth": {"client_id": "id", "client_secret": {"env": "S"}}}}}"#,
    );
    let redactor = Redactor::for_server(&config.servers[0]).with(["from-the-env-value".to_owned()]);
    assert_eq!(redactor.redact("x from-the-env-value y"), "x [redacted] y");
}

#[test]
fn per_user_is_each_caller_s_own_login_or_a_token_exchange() {
    use crate::PerUser;
    assert_eq!(oauth_of("{}").per_user, None);
    assert_eq!(oauth_of(r#"{"per_user": false}"#).per_user, None);
    assert_eq!(
        oauth_of(r#"{"per_user": true}"#).per_user,
        Some(PerUser::OwnLogin)
    );
    assert!(oauth_of(r#"{"per_user": true}"#).own_logins());
    let exchange = oauth_of(r#"{"per_user": "token_exchange"}"#);
    assert_eq!(exchange.per_user, Some(PerUser::TokenExchange));
    assert!(!exchange.own_logins());
    // The gateway's own login of a token-exchange server may be its client's credentials.
    let machine = oauth_of(
        r#"{"per_user": "token_exchange", "grant": "client_credentials", "client_id": "i", "client_secret": "s"}"#,
    );
    assert_eq!(machine.per_user, Some(PerUser::TokenExchange));
    let server = |block: &str| {
        refused(&format!(
            r#"{{"mcpServers": {{"s": {{"url": "https://m.example/mcp", "oauth": {block}}}}}}}"#
        ))
    };
    assert!(
        server(r#"{"per_user": "yes"}"#)
            .contains("oauth.per_user: must be true, false or \"token_exchange\"")
    );
    assert!(
        server(r#"{"per_user": true, "grant": "client_credentials", "client_id": "i", "client_secret": "s"}"#)
            .contains("needs \"authorization_code\"")
    );
}
