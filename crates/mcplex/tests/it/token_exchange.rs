//! `"per_user": "token_exchange"` (#31, RFC 8693): each agent calls with its own JWT from a real
//! OpenID Connect provider (npm `oidc-provider`, client credentials: its subject is its client
//! id), and the gateway exchanges that token at the upstream's authorization server (the
//! official Python SDK's, with our provider's token-exchange grant, which verifies the JWT
//! against the provider's published keys) for a token for the upstream, with the client of the
//! gateway's own login. Each agent's calls go out with the token exchanged for its own JWT,
//! never another's; a token still fresh is not exchanged again; a caller with no access token
//! of the issuer is told why.

use serde_json::{Value, json};

use std::process::Command;

use crate::harness::{Gateway, free_port, python_client, tools};
use crate::oauth_rig::{log_in, python_oauth_server, stats, tokens_seen, wait_status};
use crate::sign_in::oidc_provider;

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

/// The outcome of calling `py__whoami` with `token` through the Python SDK.
fn whoami(gateway: &Gateway, token: &str) -> Value {
    let out = python_client(
        &["--url", &gateway.url, "--token", token],
        "legacy",
        "calls",
        &["py__whoami", "{}"],
    );
    out["outcomes"][0].clone()
}

/// The subjects whose exchanged tokens reached the upstream's /mcp, in order, each run of
/// requests (a connection's handshake and call) once.
fn subjects_seen(port: u16) -> Vec<String> {
    let exchanged = stats(port)["exchanged"].clone();
    let mut subjects: Vec<String> = tokens_seen(port)
        .iter()
        .filter_map(|token| exchanged[token].as_str().map(str::to_owned))
        .collect();
    subjects.dedup();
    subjects
}

#[test]
fn each_agent_s_own_token_is_exchanged_and_only_its_own_goes_upstream() {
    let provider_port = free_port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let _provider = oidc_provider(provider_port, "http://127.0.0.1:1/unused", None);
    let (_upstream, port) = python_oauth_server(&[("TRUSTED_ISSUER", &issuer)]);
    let gateway_port = free_port();
    let gateway = Gateway::start_at(
        json!({
            "auth": {
                "issuer": issuer,
                "audience": "mcplex",
                "rules": [
                    {"claim": "sub", "value": "agent-one", "servers": ["py"], "permissions": ["read", "write", "destructive"]},
                    {"claim": "sub", "value": "agent-two", "servers": ["py"], "permissions": ["read", "write", "destructive"]}
                ]
            },
            "mcpServers": {
                "py": {"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": {"per_user": "token_exchange"}}
            }
        }),
        "127.0.0.1",
        gateway_port,
        &[],
    );
    // The operator's login lists the tools and registers the client the exchanges use.
    wait_status(&gateway, "py", "needs_login");
    log_in(&gateway, "py");
    wait_status(&gateway, "py", "ready");
    let resource = format!("http://127.0.0.1:{gateway_port}/mcp");
    let (one, two) = (
        agent_jwt(provider_port, "agent-one", &resource),
        agent_jwt(provider_port, "agent-two", &resource),
    );

    let first = whoami(&gateway, &one);
    assert_eq!(
        first["result"]["content"][0]["text"], "authorized",
        "{first}"
    );
    assert_eq!(subjects_seen(port), ["agent-one"]);
    let second = whoami(&gateway, &two);
    assert_eq!(
        second["result"]["content"][0]["text"], "authorized",
        "{second}"
    );
    assert_eq!(subjects_seen(port), ["agent-one", "agent-two"]);
    // Still fresh: agent one's exchanged token is used again, not exchanged anew.
    let again = whoami(&gateway, &one);
    assert_eq!(
        again["result"]["content"][0]["text"], "authorized",
        "{again}"
    );
    assert_eq!(subjects_seen(port), ["agent-one", "agent-two", "agent-one"]);
    assert_eq!(
        stats(port)["exchanged"].as_object().map_or(0, |m| m.len()),
        2,
        "one exchange per agent: {}",
        stats(port)
    );
    // Neither agent's own JWT, nor the operator's token, went upstream for them.
    for token in tokens_seen(port) {
        assert!(token != one && token != two);
    }

    // An agent token is no OAuth access token: nothing to exchange, and the caller is told.
    let agent =
        gateway.create_token(json!({"name": "plain", "permissions": "read,write,destructive"}));
    let refused = whoami(&gateway, &agent);
    let text = refused.to_string();
    assert!(
        text.contains("token exchange") && text.contains("presented none"),
        "{refused}"
    );
}
