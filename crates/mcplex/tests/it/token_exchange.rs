//! `"per_user": "token_exchange"` (#31, RFC 8693), all real parts: npm `oidc-provider` is the
//! issuer of everyone's tokens (agents get their own JWTs for the gateway with client
//! credentials: their subject is their client id; its token-exchange grant is registered in
//! `tests/node/oidc_provider.mjs`); the upstream is a second mcplex, a resource server of the same
//! issuer in front of the fixture server, which names each caller in its audit log. The gateway
//! lists the upstream with its own client-credentials login and exchanges each agent's JWT for a
//! token for the upstream with the agent's subject: the upstream sees each agent as itself, never
//! as the gateway nor as the other agent; a token still fresh is not exchanged again; a caller
//! with nothing to exchange is told why; an upstream whose authorization server is not the
//! gateway's issuer never receives a caller's token.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Background, Gateway, eventually, free_port, python_client, tools};
use crate::oauth_rig::{python_oauth_server, tokens_seen, wait_status};
use crate::upstream_fixtures::fixture_server;

/// The provider on `port`, exchanging tokens for `upstream` (its resource URL).
fn provider(port: u16, upstream: &str) -> Background {
    let mut command = Command::new("node");
    command
        .arg(tools().repo.join("tests/node/oidc_provider.mjs"))
        .args([
            &port.to_string(),
            "dashboard",
            "unused",
            "http://127.0.0.1:1/unused",
        ])
        .env("UPSTREAM_RESOURCE", upstream);
    crate::harness::listening_within(
        command,
        port,
        "the OpenID Connect provider",
        Duration::from_secs(60),
    )
}

/// A JWT for the gateway (`resource`) that agent `name` gets with its client credentials (a
/// form POST, which the tests' own HTTP helper does not send: Python's standard library does).
fn agent_jwt(provider_port: u16, name: &str, resource: &str) -> String {
    const TOKEN_REQUEST: &str = r#"
import base64, json, sys, urllib.error, urllib.parse, urllib.request
port, name, resource = sys.argv[1:]
form = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": "mcp", "resource": resource}).encode()
basic = base64.b64encode(f"{name}:{name}-secret".encode()).decode()
request = urllib.request.Request(f"http://127.0.0.1:{port}/token", data=form, method="POST",
    headers={"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"})
try:
    print(json.load(urllib.request.urlopen(request, timeout=30))["access_token"])
except urllib.error.HTTPError as refused:
    sys.exit(f"HTTP {refused.code}: {refused.read().decode()}")
"#;
    let output = Command::new(&tools().python)
        .args([
            "-c",
            TOKEN_REQUEST,
            &provider_port.to_string(),
            name,
            resource,
        ])
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let token = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    token
}

/// The outcome of calling `tool` with `token` through the Python SDK.
fn call(gateway: &Gateway, token: &str, tool: &str, arguments: &str) -> Value {
    let out = python_client(
        &["--url", &gateway.url, "--token", token],
        "legacy",
        "calls",
        &[tool, arguments],
    );
    out["outcomes"][0].clone()
}

/// The callers the upstream's audit log names for calls of the fixture's echo.
fn callers_upstream_saw(upstream: &Gateway) -> Vec<String> {
    let (_, answer) = upstream.api("GET", "/api/v1/activity?limit=100", "");
    let mut callers: Vec<String> = answer["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|row| row["tool"].as_str().is_some_and(|t| t.ends_with("echo")))
        .filter_map(|row| row["token"].as_str().map(str::to_owned))
        .collect();
    callers.reverse();
    callers
}

#[test]
fn each_agent_reaches_the_upstream_as_itself_through_a_token_exchange() {
    let (provider_port, upstream_port, gateway_port) = (free_port(), free_port(), free_port());
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let upstream_url = format!("http://127.0.0.1:{upstream_port}/mcp");
    let _provider = provider(provider_port, &upstream_url);
    let everything = json!(["read", "write", "destructive"]);
    let upstream = Gateway::start_at(
        json!({
            "auth": {
                "issuer": issuer, "audience": "upstream", "resource": upstream_url,
                "rules": [
                    {"claim": "sub", "value": "agent-one", "permissions": everything},
                    {"claim": "sub", "value": "agent-two", "permissions": everything},
                    {"claim": "sub", "value": "gateway", "permissions": everything}
                ]
            },
            "mcpServers": {"fixture": fixture_server("fixture", &[])}
        }),
        "127.0.0.1",
        upstream_port,
        &[],
    );
    upstream.wait_ready();
    // A second upstream whose authorization server is another issuer: no caller's token may go
    // there.
    let (_elsewhere, elsewhere_port) = python_oauth_server(&[
        ("CC_CLIENT_ID", "machine"),
        ("CC_CLIENT_SECRET", "machine-secret"),
    ]);
    let gateway = Gateway::start_at(
        json!({
            "auth": {
                "issuer": issuer, "audience": "mcplex",
                "rules": [
                    {"claim": "sub", "value": "agent-one", "permissions": everything},
                    {"claim": "sub", "value": "agent-two", "permissions": everything}
                ]
            },
            "mcpServers": {
                "up": {"url": upstream_url, "oauth": {
                    "per_user": "token_exchange", "grant": "client_credentials",
                    "client_id": "gateway", "client_secret": "gateway-secret"
                }},
                "py": {"url": format!("http://127.0.0.1:{elsewhere_port}/mcp"), "oauth": {
                    "per_user": "token_exchange", "grant": "client_credentials",
                    "client_id": "machine", "client_secret": "machine-secret"
                }}
            }
        }),
        "127.0.0.1",
        gateway_port,
        &[],
    );
    // The gateway's own login (client credentials) lists the upstream's tools.
    wait_status(&gateway, "up", "ready");
    let resource = format!("http://127.0.0.1:{gateway_port}/mcp");
    let (one, two) = (
        agent_jwt(provider_port, "agent-one", &resource),
        agent_jwt(provider_port, "agent-two", &resource),
    );
    let echo = |token: &str, text: &str| {
        let outcome = call(
            &gateway,
            token,
            "up:fixture__echo",
            &json!({"text": text}).to_string(),
        );
        assert!(outcome.to_string().contains(text), "{outcome}");
    };
    echo(&one, "from one");
    echo(&two, "from two");
    echo(&one, "one again");
    let seen = eventually("the upstream's audit rows", Duration::from_secs(10), || {
        let seen = callers_upstream_saw(&upstream);
        (seen.len() >= 3).then_some(seen)
    });
    assert_eq!(
        seen,
        ["oauth:agent-one", "oauth:agent-two", "oauth:agent-one"]
    );

    // An agent token is no OAuth access token: nothing to exchange, and the caller is told.
    let plain =
        gateway.create_token(json!({"name": "plain", "permissions": "read,write,destructive"}));
    let refused = call(&gateway, &plain, "up:fixture__echo", r#"{"text": "x"}"#).to_string();
    assert!(
        refused.contains("token exchange") && refused.contains("presented none"),
        "{refused}"
    );

    // The other upstream's authorization server is not the issuer: agent one's token never
    // reaches it.
    wait_status(&gateway, "py", "ready");
    let refused = call(&gateway, &one, "py:whoami", "{}").to_string();
    assert!(
        refused.contains("is not the issuer of the callers' tokens"),
        "{refused}"
    );
    assert!(!tokens_seen(elsewhere_port).contains(&one));
}
