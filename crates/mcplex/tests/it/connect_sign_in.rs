//! A caller's own upstream login proven at the issuer (#31): an OAuth subject's connect link is
//! followed only by that subject. With a real OpenID Connect provider (npm `oidc-provider`),
//! the distribution's Chromium, and the official Python SDK's auth server as the `per_user`
//! upstream (`tests/py/connect_sign_in.py` drives the browser): alice's agent gets a JWT on her
//! behalf and its call is refused with a link; mallory follows it and is refused at the
//! gateway after signing in as herself; alice follows it, signs in as alice, is back on the
//! link's page and continues from its form, logs in at the upstream, and her agent's call
//! answers with her own token.

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{Background, Gateway, free_port, tools};
use crate::oauth_rig::{operator_logs_in, python_oauth_server, tokens_seen};
use crate::sign_in::{CLIENT_SECRET, oidc_provider};

/// A gateway whose `py` server is a `per_user` upstream (the official Python SDK's auth
/// server), with a real OpenID Connect provider for the dashboard's sign-in and for alice's
/// agent, and alice the subject `py` may be reached by: where a subject's connect link is
/// proven. The operator has logged in to `py`.
pub struct SubjectRig {
    pub gateway: Gateway,
    pub upstream_port: u16,
    pub issuer: String,
    pub agent_redirect: String,
    _upstream: Background,
    _provider: Background,
}

pub fn subject_rig() -> SubjectRig {
    let (_upstream, upstream_port) = python_oauth_server(&[]);
    let (gateway_port, provider_port) = (free_port(), free_port());
    let agent_redirect = format!("http://127.0.0.1:{}/agent/callback", free_port());
    let _provider = oidc_provider(
        provider_port,
        &format!("http://127.0.0.1:{gateway_port}/ui/oidc/callback"),
        Some(&agent_redirect),
    );
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let gateway = Gateway::start_at(
        json!({
            "auth": {
                "issuer": issuer,
                "audience": "mcplex",
                "rules": [
                    {"claim": "sub", "value": "alice", "servers": ["py"], "permissions": ["read", "write", "destructive"]}
                ],
                "dashboard": {
                    "client_id": "dashboard",
                    "client_secret": CLIENT_SECRET,
                    "scopes": ["openid", "profile", "groups"],
                    "operators": [{"claim": "groups", "value": "mcp-admins"}]
                }
            },
            "mcpServers": {
                "py": {"url": format!("http://127.0.0.1:{upstream_port}/mcp"), "oauth": {"per_user": true}}
            }
        }),
        "127.0.0.1",
        gateway_port,
        &[],
    );
    // The operator's login lists the tools.
    operator_logs_in(&gateway, "py");
    SubjectRig {
        gateway,
        upstream_port,
        issuer,
        agent_redirect,
        _upstream,
        _provider,
    }
}

#[test]
fn only_the_subject_a_link_is_for_can_connect_its_account() {
    let Some(browser) = crate::browser::chromium() else {
        return;
    };
    let rig = subject_rig();
    let SubjectRig {
        gateway,
        upstream_port,
        issuer,
        agent_redirect,
        ..
    } = &rig;
    let operator_tokens = tokens_seen(*upstream_port);
    let output = Command::new(&tools().python)
        .arg(tools().repo.join("tests/py/connect_sign_in.py"))
        .args(["--base", &format!("http://{}", gateway.authority())])
        .args(["--issuer", issuer])
        .args(["--agent-redirect", agent_redirect])
        .args(["--tool", "py__whoami"])
        .arg("--shots")
        .arg(crate::browser::screenshots())
        .arg("--chromium")
        .arg(&browser)
        .output()
        .expect("run tests/py/connect_sign_in.py");
    assert!(
        output.status.success(),
        "the connect scenario failed:\n{}\n--- gateway log ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        gateway.log()
    );
    let seen: Value = serde_json::from_slice(&output.stdout).expect("the scenario's JSON");
    // alice's agent, before she connected: the link, for her subject.
    assert_eq!(seen["refused_status"], 200, "{seen}");
    let refused = &seen["refused"]["structuredContent"];
    assert_eq!(refused["error_type"], "not_connected", "{seen}");
    assert_eq!(refused["caller"], "oauth:alice", "{seen}");
    // The page says what the link does and whom it is for; nothing begins without its form.
    let page = seen["page"].as_str().unwrap_or_default();
    assert!(
        page.contains("oauth:alice") && page.contains("Sign in as alice"),
        "{page}"
    );
    assert_eq!(seen["no_proof_status"], 403, "{seen}");
    // mallory is refused with both names.
    let mallory = seen["mallory"].as_str().unwrap_or_default();
    assert!(
        mallory.contains("signed in at the issuer as mallory")
            && mallory.contains("only alice can follow it"),
        "{mallory}"
    );
    assert!(
        gateway
            .log()
            .contains("to follow a link for alice; refused")
    );
    // alice, proven, is back on the link's page: only its form goes on.
    let proven = seen["proven_page"].as_str().unwrap_or_default();
    assert!(
        proven.contains("The issuer says you are alice") && proven.contains("Log in to py"),
        "{proven}"
    );
    // alice connects, and her agent's call now answers with her own token.
    let alice = seen["alice"].as_str().unwrap_or_default();
    assert!(alice.contains("Connected: oauth:alice"), "{alice}");
    assert_eq!(seen["after_status"], 200, "{seen}");
    assert_eq!(seen["after"]["content"][0]["text"], "authorized", "{seen}");
    let hers: Vec<String> = tokens_seen(*upstream_port)
        .into_iter()
        .filter(|t| !operator_tokens.contains(t))
        .collect();
    assert!(!hers.is_empty(), "alice's own token went upstream");
}
