//! Single sign-on to the dashboard (#31) with a real OpenID Connect provider (npm
//! `oidc-provider`, OpenID certified; `tests/node/oidc_provider.mjs`) and the distribution's
//! Chromium: alice, an operator by group, signs in on the provider's own page and approves a
//! quarantined server; mallory (staff) gets a read-only view of the one server the rules let her
//! read, and every change is refused; a guest the rules grant nothing is refused; the API key
//! still logs in. The log and the audit log name each person; the config view never shows the
//! client secret.

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{Background, Gateway, fixture_server, free_port, tools};

pub const CLIENT_SECRET: &str = "dashboard-client-secret-for-tests";

/// The provider on `port`, its dashboard client sent back to `redirect_uri`, and with
/// `agent_redirect` an agent's application (`agent-app`) that gets JWTs for the gateway.
pub fn oidc_provider(port: u16, redirect_uri: &str, agent_redirect: Option<&str>) -> Background {
    let mut command = Command::new("node");
    command
        .arg(tools().repo.join("tests/node/oidc_provider.mjs"))
        .args([&port.to_string(), "dashboard", CLIENT_SECRET, redirect_uri])
        .args(agent_redirect);
    crate::harness::listening_within(
        command,
        port,
        "the OpenID Connect provider",
        std::time::Duration::from_secs(60),
    )
}

#[test]
fn an_operator_signs_in_and_acts_a_viewer_reads_within_the_rules_a_stranger_is_refused() {
    let Some(browser) = crate::browser::chromium() else {
        return;
    };
    let (gateway_port, provider_port) = (free_port(), free_port());
    let _provider = oidc_provider(
        provider_port,
        &format!("http://127.0.0.1:{gateway_port}/ui/oidc/callback"),
        None,
    );
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let gateway = Gateway::start_at(
        json!({
            "auth": {
                "issuer": issuer,
                "audience": "mcplex",
                "rules": [
                    {"claim": "groups", "value": "mcp-admins", "permissions": ["read"]},
                    {"claim": "groups", "value": "staff", "servers": ["fixture"], "permissions": ["read"]}
                ],
                "dashboard": {
                    "client_id": "dashboard",
                    "client_secret": CLIENT_SECRET,
                    "scopes": ["openid", "profile", "groups"],
                    "operators": [{"claim": "groups", "value": "mcp-admins"}]
                }
            },
            "mcpServers": {
                "fixture": fixture_server("fixture", &[]),
                "newcomer": quarantined("newcomer")
            }
        }),
        "127.0.0.1",
        gateway_port,
        &[],
    );
    gateway.wait_ready();
    let output = Command::new(&tools().python)
        .arg(tools().repo.join("tests/py/dashboard_sign_in.py"))
        .args(["--base", &format!("http://{}", gateway.authority())])
        .args(["--key", &gateway.api_key()])
        .args(["--server", "newcomer"])
        .arg("--shots")
        .arg(crate::browser::screenshots())
        .arg("--chromium")
        .arg(&browser)
        .output()
        .expect("run tests/py/dashboard_sign_in.py");
    assert!(
        output.status.success(),
        "the sign-in scenario failed:\n{}\n--- gateway log ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        gateway.log()
    );
    let seen: Value = serde_json::from_slice(&output.stdout).expect("the scenario's JSON");
    assert_eq!(seen["offer"], format!("Sign in with {issuer}"), "{seen}");
    assert_eq!(seen["who"], "Signed in as alice", "{seen}");
    assert!(
        seen["approved"]
            .as_str()
            .unwrap_or_default()
            .contains("newcomer"),
        "{seen}"
    );
    // mallory reads the one server the rules let her, and changes nothing.
    assert_eq!(
        seen["mallory_who"], "Signed in as mallory (read-only)",
        "{seen}"
    );
    assert_eq!(
        seen["mallory_nav"],
        json!(["Overview", "Servers", "Tools", "Search"]),
        "{seen}"
    );
    assert_eq!(seen["mallory_servers"], json!(["fixture"]), "{seen}");
    assert_eq!(seen["mallory_buttons"], json!([]), "{seen}");
    // Her pages leave out what is an operator's, rather than ask for it and be refused: no
    // config or trends read, no "Needs you", no actions column, no link to a server's page.
    assert_eq!(seen["mallory_refused_reads"], json!([]), "{seen}");
    assert_eq!(
        seen["mallory_cards"],
        json!(["Readiness", "Tools served", "Calls, last hour"]),
        "{seen}"
    );
    assert_eq!(
        seen["mallory_columns"],
        json!(["Server", "State", "Tools served", "Withheld", "Isolation"]),
        "{seen}"
    );
    assert_eq!(seen["mallory_server_links"], 0, "{seen}");
    let attempts = &seen["mallory_attempts"];
    assert_eq!(attempts["approve"]["status"], 403, "{attempts}");
    assert!(
        attempts["approve"]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("mallory is signed in as a viewer"),
        "{attempts}"
    );
    assert_eq!(attempts["tokens"]["status"], 403, "{attempts}");
    assert_eq!(attempts["review_read"]["status"], 200, "{attempts}");
    assert_eq!(attempts["review_beyond"]["status"], 404, "{attempts}");
    assert_eq!(attempts["servers"]["status"], 200, "{attempts}");
    assert!(
        !attempts["servers"]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("newcomer"),
        "{attempts}"
    );
    let guest = seen["guest"].as_str().unwrap_or_default();
    assert!(
        guest.contains("signed in at the issuer as guest-1, who is not an operator"),
        "{guest}"
    );
    assert_eq!(seen["guest_nav_hidden"], true, "{seen}");
    assert_eq!(seen["key_who"], "Logged in with the API key", "{seen}");
    // alice's approval is in force; the log names both people.
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    let newcomer = servers["servers"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["name"] == "newcomer"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(newcomer["state"], "approved", "{newcomer}");
    let log = gateway.log();
    assert!(log.contains("dashboard: alice signed in"), "{log}");
    assert!(log.contains("dashboard: mallory signed in"), "{log}");
    assert!(log.contains("guest-1 is not an operator"), "{log}");
    // The audit log names the person behind the approval (and the API key behind its actions).
    let rows = crate::harness::eventually(
        "alice's approval in the audit log",
        std::time::Duration::from_secs(10),
        || {
            let (_, answer) = gateway.api("GET", "/api/v1/activity?token=operator:alice", "");
            answer["entries"]
                .as_array()
                .filter(|rows| !rows.is_empty())
                .cloned()
        },
    );
    assert_eq!(
        rows[0]["tool"], "/api/v1/servers/newcomer/approve",
        "{rows:?}"
    );
    assert_eq!(rows[0]["status"], "ok", "{rows:?}");
    assert_eq!(rows[0]["method"], "api POST", "{rows:?}");
    // And the person behind a change a viewer was refused: the guard answers before the
    // audited routes, and writes the refusal itself. Reads, refused or not, are no actions.
    let refused = crate::harness::eventually(
        "mallory's refused approval in the audit log",
        std::time::Duration::from_secs(10),
        || {
            let (_, answer) = gateway.api("GET", "/api/v1/activity?token=operator:mallory", "");
            answer["entries"]
                .as_array()
                .filter(|rows| !rows.is_empty())
                .cloned()
        },
    );
    let seen: Vec<(&str, &str, &str)> = refused
        .iter()
        .map(|row| {
            let text = |key: &str| row[key].as_str().unwrap_or_default();
            (text("method"), text("tool"), text("status"))
        })
        .collect();
    assert_eq!(
        seen,
        [(
            "api POST",
            "/api/v1/servers/newcomer/approve",
            "refused (403)"
        )],
        "{refused:?}"
    );
    // The client secret never shows.
    let (_, config) = gateway.api("GET", "/api/v1/config", "");
    assert_eq!(
        config["config"]["auth"]["dashboard"]["client_secret"], "[redacted]",
        "{config}"
    );
    assert!(!config.to_string().contains(CLIENT_SECRET));
    assert!(!log.contains(CLIENT_SECRET));
}

/// The fixture's server entry, quarantined from the start.
fn quarantined(name: &str) -> Value {
    let mut entry = fixture_server(name, &[]);
    entry["quarantined"] = json!(true);
    entry
}
