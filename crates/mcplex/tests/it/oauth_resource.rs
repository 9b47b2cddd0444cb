//! mcplex as an OAuth resource server (issue #17, downstream), against a real authorization
//! server: the official Python SDK's `mcp.server.auth` routes with a provider that issues RS256
//! and ES256 JWTs (`tests/py/oauth_server.py`). The official SDK client finds the issuer from
//! the gateway's 401 alone; the JWT matrix is refused with a log line that never holds the
//! token; the rules scope what a token sees; the API key and agent tokens keep working.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{
    Background, Gateway, call_raw, eventually, fixture_server, free_port, listening, names,
    python_client, rpc, tools,
};
use crate::http::{Reply, Version, exchange};

/// The test authorization server: (process, issuer URL).
fn authorization_server() -> (Background, String) {
    let port = free_port();
    let mut command = Command::new(&tools().python);
    command
        .arg(tools().repo.join("tests/py/oauth_server.py"))
        .args(["--port", &port.to_string()]);
    let server = listening(command, port, "the OAuth authorization server");
    // The issuer as the SDK's metadata names it, root slash included.
    (server, format!("http://127.0.0.1:{port}/"))
}

/// A gateway on server `a` (the fixture) that accepts the issuer's tokens: `mcp:write` reaches
/// read and write tools, `mcp:read` only read-only ones.
fn protected_gateway(issuer: &str) -> Gateway {
    let port = free_port();
    let config = json!({
        "mcpServers": {"a": fixture_server("a", &[])},
        "auth": {
            "issuer": issuer,
            "audience": format!("http://127.0.0.1:{port}/mcp"),
            "leeway_seconds": 5,
            "rules": [
                {"scope": "mcp:write", "servers": ["*"], "permissions": ["read", "write"]},
                {"scope": "mcp:read", "servers": ["a"], "permissions": ["read"]}
            ]
        }
    });
    let gateway = Gateway::start_at(config, "127.0.0.1", port, &[]);
    gateway.wait_ready();
    gateway
}

/// Asks the authorization server for a token (`request` as `/test/mint` takes it).
fn mint(issuer: &str, request: Value) -> String {
    post(issuer, "/test/mint", &request)["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

/// POSTs `body` to the authorization server's test controls; their JSON answer.
fn post(issuer: &str, path: &str, body: &Value) -> Value {
    let authority = issuer.trim_start_matches("http://").trim_end_matches('/');
    let reply = exchange(
        authority,
        Version::Http11,
        "POST",
        path,
        &[],
        &body.to_string(),
    );
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    serde_json::from_str(&reply.body).expect("json")
}

fn jwks_fetches(issuer: &str) -> u64 {
    let reply = exchange(
        issuer.trim_start_matches("http://").trim_end_matches('/'),
        Version::Http11,
        "GET",
        "/test/stats",
        &[],
        "",
    );
    serde_json::from_str::<Value>(&reply.body).expect("stats")["jwks_fetches"]
        .as_u64()
        .expect("a count")
}

/// `tools/list` on `/mcp` presenting `token`: the whole reply, headers included.
fn list_with(gateway: &Gateway, token: Option<&str>) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth));
    }
    exchange(
        gateway.authority(),
        Version::Http11,
        "POST",
        "/mcp",
        &headers,
        &body.to_string(),
    )
}

fn audience(gateway: &Gateway) -> String {
    gateway.url.clone()
}

fn metadata_url(gateway: &Gateway) -> String {
    format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        gateway.authority()
    )
}

#[test]
fn the_sdk_client_finds_the_issuer_from_the_401_alone_and_calls_tools() {
    let (_server, issuer) = authorization_server();
    let gateway = protected_gateway(&issuer);
    let url = gateway.url.clone();
    let listing = python_client(&["--url", &url, "--oauth"], "legacy", "list", &[]);
    let listed = names(&listing);
    assert!(
        listed.contains(&"a__add".to_owned()) && listed.contains(&"a__echo".to_owned()),
        "{listing}"
    );
    let call = python_client(
        &["--url", &url, "--oauth"],
        "2026-07-28",
        "call",
        &["a__add", r#"{"a": 2, "b": 3}"#],
    );
    assert_eq!(call["result"]["structuredContent"]["sum"], 5.0, "{call}");
    assert!(
        gateway.log().contains("auth: 2 signing key(s) of issuer"),
        "{}",
        gateway.log()
    );
}

#[test]
fn protected_resource_metadata_and_the_challenge_point_at_the_issuer() {
    let (_server, issuer) = authorization_server();
    let gateway = protected_gateway(&issuer);
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, body) = gateway.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        let metadata: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(metadata["resource"], audience(&gateway));
        assert_eq!(metadata["authorization_servers"], json!([issuer]));
        assert_eq!(
            metadata["scopes_supported"],
            json!(["mcp:write", "mcp:read"])
        );
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    }
    let anonymous = list_with(&gateway, None);
    assert_eq!(anonymous.status, 401, "auth makes loopback require a token");
    assert_eq!(
        anonymous.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{}\"", metadata_url(&gateway)).as_str())
    );
    // The management API keeps its own plain challenge.
    let (status, _) = rpc(&gateway, "/api/v1/servers", None, "x", json!({}));
    assert_eq!(status, 401);
}

#[test]
fn the_jwt_matrix_is_refused_with_a_reason_and_never_the_token() {
    let (_server, issuer) = authorization_server();
    let gateway = protected_gateway(&issuer);
    let aud = audience(&gateway);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for (kid, alg) in [("rsa-1", "RS256"), ("ec-1", "ES256")] {
        let token = mint(&issuer, json!({"aud": aud, "kid": kid}));
        let reply = list_with(&gateway, Some(&token));
        assert_eq!(reply.status, 200, "{alg}: {}", reply.body);
        assert!(reply.body.contains("a__echo"), "{alg}: {}", reply.body);
    }
    let listed = mint(&issuer, json!({"aud": ["https://other.example.com", aud]}));
    assert_eq!(
        list_with(&gateway, Some(&listed)).status,
        200,
        "aud as an array"
    );
    let cases = [
        (
            json!({"aud": "http://elsewhere.example.com/mcp"}),
            "audience (aud)",
        ),
        (
            json!({"aud": aud, "claims": {"iss": "https://evil.example.com"}}),
            "issuer (iss)",
        ),
        (json!({"aud": aud, "forge": "none"}), "none"),
        (json!({"aud": aud, "forge": "hs256-public"}), "HS256"),
        (
            json!({"aud": aud, "claims": {"exp": now - 3600}}),
            "expired",
        ),
        (
            json!({"aud": aud, "claims": {"nbf": now + 3600}}),
            "not valid yet",
        ),
        (json!({"aud": aud, "forge": "unpublished"}), "unknown key"),
        (json!({"aud": aud, "drop": ["exp"]}), "no exp claim"),
        (json!({"aud": aud, "drop": ["sub"]}), "no sub claim"),
    ];
    let mut tokens = Vec::new();
    for (request, reason) in cases {
        let token = mint(&issuer, request.clone());
        check_refused(&gateway, &token, reason, &request.to_string());
        tokens.push(token);
    }
    check_refused(&gateway, "bm9wZQ.bm9wZQ.c2ln", "not a JWT", "malformed");
    let log = gateway.log();
    for token in &tokens {
        let signature = token.rsplit('.').next().unwrap_or(token);
        assert!(!log.contains(token.as_str()), "a token in the log");
        assert!(
            signature.len() < 8 || !log.contains(signature),
            "a signature in the log"
        );
    }
}

#[track_caller]
fn check_refused(gateway: &Gateway, token: &str, reason: &str, what: &str) {
    let before = gateway
        .log()
        .matches("refused an OAuth access token")
        .count();
    let reply = list_with(gateway, Some(token));
    assert_eq!(reply.status, 401, "{what}: {}", reply.body);
    let challenge = reply.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains(&format!("resource_metadata=\"{}\"", metadata_url(gateway)))
            && challenge.contains("error=\"invalid_token\""),
        "{what}: {challenge}"
    );
    let line = eventually("the refusal's log line", Duration::from_secs(5), || {
        let log = gateway.log();
        let refusals: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("refused an OAuth access token"))
            .collect();
        (refusals.len() > before).then(|| refusals[before].to_owned())
    });
    assert!(line.contains(reason), "{what}: {line}");
}

#[test]
fn a_rotated_key_is_picked_up_and_unknown_kids_cannot_hammer_the_issuer() {
    let (_server, issuer) = authorization_server();
    let gateway = protected_gateway(&issuer);
    eventually("the keys fetched at start", Duration::from_secs(10), || {
        (jwks_fetches(&issuer) == 1).then_some(())
    });
    let aud = audience(&gateway);
    let fetched = Instant::now();
    let rotated = post(&issuer, "/test/rotate", &json!({}))["kid"]
        .as_str()
        .expect("a kid")
        .to_owned();
    // Past the refresh cooldown since the fetch at start, the new key is fetched on first sight.
    std::thread::sleep(Duration::from_secs(6).saturating_sub(fetched.elapsed()));
    let token = mint(&issuer, json!({"aud": aud, "kid": rotated}));
    assert_eq!(list_with(&gateway, Some(&token)).status, 200);
    assert_eq!(jwks_fetches(&issuer), 2);
    // Made-up kids right after: refused, and the issuer is not asked again.
    for _ in 0..20 {
        let ghost = mint(&issuer, json!({"aud": aud, "forge": "unpublished"}));
        assert_eq!(list_with(&gateway, Some(&ghost)).status, 401);
    }
    assert_eq!(jwks_fetches(&issuer), 2, "one fetch per cooldown at most");
    assert_eq!(
        list_with(&gateway, Some(&token)).status,
        200,
        "known keys still work"
    );
}

#[test]
fn rules_scope_a_token_and_what_it_may_not_see_is_not_found() {
    let (_server, issuer) = authorization_server();
    let gateway = protected_gateway(&issuer);
    let aud = audience(&gateway);
    let reader = mint(&issuer, json!({"aud": aud, "scope": "mcp:read"}));
    let listing: Value = serde_json::from_str(
        rpc(&gateway, "/mcp", Some(&reader), "tools/list", json!({}))
            .1
            .as_str(),
    )
    .expect("json");
    assert_eq!(names(&listing["result"]), ["describe_tool", "a__echo"]);
    let hidden = call_raw(
        &gateway,
        "/mcp",
        Some(&reader),
        "a__add",
        json!({"a": 1, "b": 2}),
    );
    let ghost = call_raw(
        &gateway,
        "/mcp",
        Some(&reader),
        "z__add",
        json!({"a": 1, "b": 2}),
    );
    assert_eq!(
        hidden.replace("a__add", "ID"),
        ghost.replace("z__add", "ID")
    );
    // A valid token that no rule grants anything: 403 insufficient_scope, never everything.
    let stranger = mint(&issuer, json!({"aud": aud, "scope": "openid"}));
    let reply = list_with(&gateway, Some(&stranger));
    assert_eq!(reply.status, 403, "{}", reply.body);
    assert!(
        reply.header("www-authenticate").is_some_and(
            |c| c.contains("error=\"insufficient_scope\", scope=\"mcp:write mcp:read\"")
        ),
        "{:?}",
        reply.head
    );
    assert!(
        gateway
            .log()
            .contains("refused the OAuth access token of tester: it matches none of auth.rules")
    );
}

#[test]
fn the_api_key_and_agent_tokens_keep_working_beside_oauth() {
    let (_server, issuer) = authorization_server();
    let gateway = protected_gateway(&issuer);
    let key = gateway.api_key();
    let everything = list_with(&gateway, Some(&key));
    assert_eq!(everything.status, 200);
    assert!(everything.body.contains("a__add"), "{}", everything.body);
    let agent = gateway.create_token(json!({"name": "agent", "permissions": "read"}));
    let scoped = list_with(&gateway, Some(&agent));
    assert_eq!(scoped.status, 200);
    assert!(scoped.body.contains("a__echo") && !scoped.body.contains("a__add"));
    let wrong = list_with(&gateway, Some("mcplex_0123456789abcdef"));
    assert_eq!(wrong.status, 401);
    assert!(
        wrong
            .header("www-authenticate")
            .is_some_and(|c| c.contains("error=\"invalid_token\"")),
        "{}",
        wrong.head
    );
}

#[test]
fn an_issuer_that_is_down_refuses_its_tokens_and_nothing_else() {
    let (server, issuer) = authorization_server();
    let port = free_port();
    let token = mint(
        &issuer,
        json!({"aud": format!("http://127.0.0.1:{port}/mcp")}),
    );
    drop(server);
    let config = json!({
        "mcpServers": {"a": fixture_server("a", &[])},
        "auth": {"issuer": issuer, "audience": format!("http://127.0.0.1:{port}/mcp"),
                 "rules": [{"scope": "mcp:read", "permissions": ["read"]}]}
    });
    let gateway = Gateway::start_at(config, "127.0.0.1", port, &[]);
    gateway.wait_ready();
    let refused = list_with(&gateway, Some(&token));
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused
            .header("www-authenticate")
            .is_some_and(|c| c.contains("error=\"invalid_token\"")),
        "{}",
        refused.head
    );
    let log = eventually("the fetch failure logged", Duration::from_secs(10), || {
        let log = gateway.log();
        log.contains("cannot fetch the signing keys of issuer")
            .then_some(log)
    });
    assert!(log.contains("signing keys are not loaded yet"), "{log}");
    assert!(!log.contains(&token), "a token in the log");
    assert_eq!(list_with(&gateway, Some(&gateway.api_key())).status, 200);
}
