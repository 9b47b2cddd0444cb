//! Servers added from the dashboard (issue #33): `POST /api/v1/servers` reads an entry with the
//! config file's parser, keeps it sealed in the control plane, and every replica of the store
//! runs it, quarantined, until an operator approves it; the config file keeps its names; a
//! restart reads the set again; `DELETE` removes it everywhere. And the same from the page in
//! Chromium.

use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::{browse_with, chromium};
use crate::harness::{Gateway, eventually, fixture_server, names};

const SECRET: &str = "sk-extra-secret-0123";

fn extra_entry() -> Value {
    let mut entry = fixture_server("extra", &[]);
    entry["env"] = json!({"EXTRA_TOKEN": SECRET});
    entry
}

fn server(gateway: &Gateway, key: &str, name: &str) -> Option<Value> {
    let (_, answer) = gateway.api_as(key, "GET", "/api/v1/servers", "");
    answer["servers"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
}

fn add(gateway: &Gateway, name: &str, entry: &Value, check_only: bool) -> (u16, Value) {
    let body = json!({"name": name, "entry": entry, "check_only": check_only});
    gateway.api("POST", "/api/v1/servers", &body.to_string())
}

/// Whether `text` is in any file of `gateway`'s data directory.
fn on_disk(gateway: &Gateway, text: &str) -> bool {
    std::fs::read_dir(gateway.data_dir())
        .expect("data dir")
        .flatten()
        .any(|file| {
            let bytes = std::fs::read(file.path()).unwrap_or_default();
            bytes.windows(text.len()).any(|w| w == text.as_bytes())
        })
}

fn two_replicas() -> (Gateway, Gateway) {
    let config = json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}});
    let first = Gateway::start(config.clone());
    let data_dir = first.data_dir().display().to_string();
    let replica = Gateway::start_with(config, &["--data-dir", &data_dir]);
    first.wait_ready();
    replica.wait_ready();
    (first, replica)
}

#[test]
fn a_server_added_on_one_replica_runs_quarantined_on_every_one_until_removed() {
    let (first, mut replica) = two_replicas();
    let key = first.api_key();
    // Checked only: read and shown, secrets replaced; nothing stored or started.
    let (status, checked) = add(&first, "extra", &extra_entry(), true);
    assert_eq!(status, 200, "{checked}");
    assert_eq!(
        checked["config"]["transport"]["env"],
        json!({"EXTRA_TOKEN": "[redacted]"})
    );
    assert_eq!(checked["config"]["origin"], "added", "{checked}");
    // The sandbox shown is what applies once approved; the message says what applies before.
    let terms = checked["message"].as_str().unwrap_or_default();
    assert!(
        terms.contains("withheld from agents") && terms.contains("no network"),
        "{checked}"
    );
    assert!(server(&first, &key, "extra").is_none());
    // Refused, each with the reason.
    let refusals = [
        ("extra", json!({"commnd": "x"}), 400, "commnd"),
        ("fixture", extra_entry(), 409, "in the config file"),
        ("a/b", extra_entry(), 400, "not a name"),
        ("extra", json!("npx"), 400, "JSON object"),
        (
            "extra",
            json!({"command": "x", "sandbox": false}),
            400,
            "only in the config file",
        ),
        (
            "extra",
            json!({"command": "x", "inherit_env": true}),
            400,
            "only in the config file",
        ),
    ];
    for (name, entry, want, says) in refusals {
        let (status, answer) = add(&first, name, &entry, false);
        assert_eq!(status, want, "{name}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{name}: {answer}");
    }

    let (status, added) = add(&first, "extra", &extra_entry(), false);
    assert_eq!(status, 201, "{added}");
    assert!(
        added["message"]
            .as_str()
            .unwrap_or_default()
            .contains("quarantined"),
        "{added}"
    );
    let (status, again) = add(&first, "extra", &extra_entry(), false);
    assert_eq!(status, 409, "{again}");
    // The other replica runs it too, quarantined: its tools are withheld from agents.
    let on_replica = eventually("the replica to run extra", Duration::from_secs(20), || {
        server(&replica, &key, "extra").filter(|s| s["status"] == "ready")
    });
    assert_eq!(on_replica["state"], "quarantined", "{on_replica}");
    let listed = replica.client("legacy", "list", &[]);
    assert!(!listed.to_string().contains("extra__"), "{listed}");
    // Sealed at rest; shown without its secret.
    assert!(
        !on_disk(&first, SECRET),
        "the secret is in the data directory in clear"
    );
    let (_, page) = replica.api_as(&key, "GET", "/api/v1/servers/extra", "");
    assert_eq!(page["added"], true, "{page}");
    assert!(!page.to_string().contains(SECRET), "{page}");

    // Approved on the replica, served on the first.
    let (status, done) = replica.api_as(&key, "POST", "/api/v1/servers/extra/approve", "");
    assert_eq!(status, 200, "{done}");
    let answer = eventually(
        "extra served on the first replica",
        Duration::from_secs(10),
        || {
            let answer = first.client("legacy", "call", &["extra__echo", r#"{"x": 7}"#]);
            (answer["result"]["structuredContent"] == json!({"x": 7})).then_some(answer)
        },
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    // A restart reads the set again from the store.
    replica.restart();
    replica.wait_ready();
    assert!(
        server(&replica, &key, "extra").is_some(),
        "extra after the replica's restart"
    );

    // The file's servers are not removed here; an added one is, everywhere.
    let (status, refused) = first.api("DELETE", "/api/v1/servers/fixture", "");
    assert_eq!(status, 409, "{refused}");
    let (status, removed) = first.api("DELETE", "/api/v1/servers/extra", "");
    assert_eq!(status, 200, "{removed}");
    assert!(
        server(&first, &key, "extra").is_none(),
        "gone here when the answer came"
    );
    eventually("the replica to stop extra", Duration::from_secs(10), || {
        server(&replica, &key, "extra").is_none().then_some(())
    });
    let (status, _) = first.api("DELETE", "/api/v1/servers/extra", "");
    assert_eq!(status, 404);

    // Approved once, removed, added again: quarantined again, under the quarantine sandbox,
    // not under the approval the name had.
    let (status, again) = add(&first, "extra", &extra_entry(), false);
    assert_eq!(status, 201, "{again}");
    let back = eventually("extra again", Duration::from_secs(20), || {
        server(&first, &key, "extra")
            .filter(|s| s["status"] == "ready" && s["isolation"].is_object())
    });
    assert_eq!(back["state"], "quarantined", "{back}");
    assert_eq!(back["isolation"]["quarantine"], true, "{back}");
}

#[test]
fn an_operator_adds_a_server_from_the_page_and_a_second_replica_runs_it() {
    let Some(browser) = chromium() else { return };
    let (first, replica) = two_replicas();
    let key = first.api_key();
    let entry = fixture_server("extra", &[]).to_string();
    let seen = browse_with(&first, &browser, "add", "", &["--entry", &entry]);
    assert_eq!(seen["errors"], json!([]), "{seen}");
    assert!(
        seen["refused"]
            .as_str()
            .unwrap_or_default()
            .contains("argz"),
        "{seen}"
    );
    assert!(
        seen["checked"]
            .as_str()
            .unwrap_or_default()
            .contains("extra is valid"),
        "{seen}"
    );
    assert!(
        seen["understood"]
            .as_str()
            .unwrap_or_default()
            .contains("\"origin\": \"added\""),
        "{seen}"
    );
    assert_eq!(seen["url"], "#/servers/extra", "{seen}");
    let tools = seen["tools_table"].as_str().unwrap_or_default();
    assert!(
        tools.contains("extra:echo") && tools.contains("server quarantined"),
        "{seen}"
    );
    assert!(
        seen["origin"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Added from the dashboard"),
        "{seen}"
    );
    assert_eq!(seen["remove_button"], 1, "{seen}");
    assert_eq!(
        seen["approve_label"], "Approve extra and its 9 tools",
        "{seen}"
    );
    // Approved on the page: the second replica runs it and serves it.
    let on_replica = eventually(
        "the replica to run extra approved",
        Duration::from_secs(20),
        || {
            server(&replica, &key, "extra")
                .filter(|s| s["status"] == "ready" && s["state"] == "approved")
        },
    );
    assert_eq!(on_replica["tools"], 9, "{on_replica}");
}

/// A server added from the dashboard that defers its tools is part of the config the gateway
/// starts with: after a restart its listing has `tool_search` and `call_tool`, which find that
/// server's tools. While running, the listing stays as it started (clients keep what they listed).
#[test]
fn a_deferred_server_added_from_the_dashboard_is_searchable_after_a_restart() {
    let mut gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let mut entry = fixture_server("later", &[]);
    entry["defer"] = json!(true);
    let (status, added) = add(&gateway, "later", &entry, false);
    assert_eq!(status, 201, "{added}");
    gateway.approve_server("later");
    let listed = names(&gateway.client("legacy", "list", &[]));
    assert!(
        !listed.iter().any(|n| n == "tool_search"),
        "decided at start: {listed:?}"
    );

    gateway.restart();
    gateway.wait_ready();
    let listed = names(&gateway.client("legacy", "list", &[]));
    assert!(
        listed.iter().any(|n| n == "tool_search") && listed.iter().any(|n| n == "call_tool"),
        "{listed:?}"
    );
    assert!(
        !listed.iter().any(|n| n.starts_with("later__")),
        "deferred, not listed: {listed:?}"
    );
    eventually(
        "later's tools through tool_search",
        Duration::from_secs(20),
        || {
            let search = gateway.client(
                "legacy",
                "call",
                &["tool_search", r#"{"query": "add two numbers"}"#],
            );
            search["result"]["structuredContent"]["tools"]
                .as_array()?
                .iter()
                .any(|t| t["name"] == "later__add")
                .then_some(())
        },
    );
}
