//! Limits per caller (the third hardening round's last part): an agent token or an OAuth subject
//! is held to calls per minute and calls at once, with tighter limits on write and destructive
//! tools; a refusal is a JSON-RPC error the official Python SDK reads, with the time to retry;
//! the operator is never limited; refusals are counted in `/metrics` and each caller's use is
//! shown by the API the dashboard's token page reads; and gateways sharing a PostgreSQL store
//! hold a caller to one limit between them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::control_plane::{cli, followed, list_at};
use crate::harness::{Gateway, fixture_server, python_client};
use crate::store_postgres::postgres_database;

/// The code of a refusal by a limit.
const RATE_LIMITED: i64 = -32029;

/// Calls per minute are counted in wall-clock minute windows (the previous one weighted by how
/// much of it is left), so a test that counts to a limit runs within one window: this waits
/// when less than `needed` of the current minute is left.
fn within_one_minute(needed: Duration) {
    let into = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis()
        % 60_000;
    let left = Duration::from_millis(u64::try_from(60_000 - into).expect("small"));
    if left < needed {
        std::thread::sleep(left + Duration::from_millis(200));
    }
}

/// The outcomes of calling each (tool, arguments) in turn as `token`, with the Python SDK.
fn calls(gateway: &Gateway, token: &str, calls: &[(&str, &str)]) -> Vec<Value> {
    let mut args = Vec::new();
    for (tool, arguments) in calls {
        args.extend([*tool, *arguments]);
    }
    let out = python_client(
        &["--url", &gateway.url, "--token", token],
        "legacy",
        "calls",
        &args,
    );
    out["outcomes"].as_array().expect("outcomes").clone()
}

fn succeeded(outcome: &Value) -> bool {
    outcome["result"].is_object() && outcome["result"]["isError"] != json!(true)
}

/// The refusal's error, checked to be one.
fn refusal(outcome: &Value) -> &Value {
    let error = &outcome["error"];
    assert_eq!(error["code"], json!(RATE_LIMITED), "{outcome}");
    error
}

#[test]
fn a_token_over_its_limit_gets_an_error_with_the_time_to_retry_and_the_operator_never_does() {
    let gateway = Gateway::start(json!({
        "limits": {"calls_per_minute": 100, "write": {"calls_per_minute": 2}},
        "mcpServers": {"fixture": fixture_server("fixture", &[])}
    }));
    gateway.wait_ready();
    let agent = gateway.create_token(json!({"name": "agent", "permissions": "read,write",
        "limits": {"calls_per_minute": 3}}));
    let add = ("fixture__add", r#"{"a": 1, "b": 2}"#);
    let echo = ("fixture__echo", r#"{"text": "hi"}"#);
    within_one_minute(Duration::from_secs(30));

    // `add` is a write tool (no readOnlyHint): two a minute; `echo` reads: three calls in all.
    let outcomes = calls(&gateway, &agent, &[add, add, add, echo, echo]);
    assert!(
        succeeded(&outcomes[0]) && succeeded(&outcomes[1]),
        "{outcomes:?}"
    );
    let write = refusal(&outcomes[2]);
    assert_eq!(write["data"]["limit"], "calls_per_minute");
    assert_eq!(write["data"]["class"], "write");
    assert_eq!(write["data"]["allowed"], 2);
    assert_eq!(write["data"]["caller"], "agent");
    let retry = write["data"]["retry_after_seconds"]
        .as_u64()
        .expect("seconds");
    assert!((1..=120).contains(&retry), "{write}");
    let message = write["message"].as_str().expect("message");
    assert!(
        message.contains("agent may make 2 calls to write tools per minute")
            && message.contains(&format!("retry in {retry} s")),
        "{message}"
    );
    // The refused call was not counted: the read call is the third.
    assert!(succeeded(&outcomes[3]), "{outcomes:?}");
    let all = refusal(&outcomes[4]);
    assert_eq!(all["data"]["class"], "all");
    assert_eq!(
        all["data"]["allowed"], 3,
        "the token's own limit over the default"
    );

    // The operator (the API key) is never limited.
    let operator: Vec<Value> = calls(&gateway, &gateway.api_key(), &[add, add, add, add]);
    assert!(operator.iter().all(succeeded), "{operator:?}");

    // Counted in /metrics, shown with the token, and listed among the limited callers.
    let (_, metrics) = gateway.get("/metrics");
    for series in [
        r#"mcplex_limited_calls_total{limit="calls_per_minute",class="write"} 1"#,
        r#"mcplex_limited_calls_total{limit="calls_per_minute",class="all"} 1"#,
        r#"status="rate_limited"} "#,
    ] {
        assert!(metrics.contains(series), "{series} in\n{metrics}");
    }
    let (status, tokens) = gateway.api("GET", "/api/v1/tokens", "");
    assert_eq!(status, 200, "{tokens}");
    let token = &tokens["tokens"][0];
    assert_eq!(token["limits"], json!({"calls_per_minute": 3}));
    assert_eq!(token["usage"]["calls_last_minute"], 3, "{token}");
    assert_eq!(token["usage"]["refused_last_minute"], 2, "{token}");
    assert_eq!(
        token["usage"]["limits"],
        json!({"calls_per_minute": 3, "write": {"calls_per_minute": 2}})
    );
    let (_, limits) = gateway.api("GET", "/api/v1/limits", "");
    assert_eq!(limits["defaults"]["calls_per_minute"], 100, "{limits}");

    // Its own limits lifted (through the API the CLI's `token limit` uses), the default is in
    // force at once: reads go through again, writes stay at two a minute.
    let (status, done) = gateway.api(
        "PUT",
        "/api/v1/tokens/agent/limits",
        &json!({"limits": {}}).to_string(),
    );
    assert_eq!(status, 200, "{done}");
    // The change is in the audit log, under the API key that made it.
    let logged = crate::harness::eventually(
        "the limit change in the audit log",
        Duration::from_secs(10),
        || {
            let (_, answer) = gateway.api("GET", "/api/v1/activity?token=operator:api-key", "");
            answer["entries"].as_array().and_then(|rows| {
                rows.iter()
                    .find(|r| r["tool"] == "/api/v1/tokens/agent/limits")
                    .cloned()
            })
        },
    );
    assert_eq!(logged["method"], "api PUT", "{logged}");
    assert_eq!(logged["status"], "ok", "{logged}");
    let after = calls(&gateway, &agent, &[echo, add]);
    assert!(succeeded(&after[0]), "{after:?}");
    assert_eq!(refusal(&after[1])["data"]["class"], "write");
    // A limit that is not one is refused with its key.
    let (status, refused) = gateway.api(
        "PUT",
        "/api/v1/tokens/agent/limits",
        &json!({"limits": {"calls_per_minute": 0}}).to_string(),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .expect("error")
            .contains("limits.calls_per_minute")
    );
}

#[test]
fn calls_at_once_are_limited_and_an_answer_frees_the_place() {
    let gateway = Gateway::start(json!({
        "limits": {"concurrent_calls": 1},
        "mcpServers": {"fixture": fixture_server("fixture", &[])}
    }));
    gateway.wait_ready();
    let agent = gateway.create_token(json!({"name": "agent", "permissions": "read,write"}));
    let out = python_client(
        &["--url", &gateway.url, "--token", &agent],
        "legacy",
        "overlap",
        &[
            "fixture__slow",
            r#"{"ms": 2500}"#,
            "fixture__echo",
            r#"{"text": "meanwhile"}"#,
        ],
    );
    assert!(succeeded(&out["first"]), "{out}");
    let busy = refusal(&out["second"]);
    assert_eq!(busy["data"]["limit"], "concurrent_calls");
    assert_eq!(busy["data"]["retry_after_seconds"], 1);
    assert!(
        busy["message"]
            .as_str()
            .expect("message")
            .contains("1 calls at once"),
        "{busy}"
    );
    // The slow call answered: its place is free again.
    let later = calls(
        &gateway,
        &agent,
        &[("fixture__echo", r#"{"text": "after"}"#)],
    );
    assert!(succeeded(&later[0]), "{later:?}");
}

#[test]
fn gateways_on_one_store_hold_a_caller_to_one_limit_between_them() {
    let Some(store) = postgres_database("mcplex_it_limits") else {
        return;
    };
    let servers = json!({"fixture": fixture_server("fixture", &[])});
    let config = json!({"mcpServers": servers});
    let first = Gateway::start_with(config.clone(), &["--store", &store]);
    let second = Gateway::start_with(config, &["--store", &store]);
    first.wait_ready();
    second.wait_ready();
    // The token is made in the store by the CLI, with its own limit; both gateways follow.
    let cli_config = first.dir.path().join("cli.json");
    std::fs::write(
        &cli_config,
        json!({"mcpServers": servers, "store": store}).to_string(),
    )
    .expect("cli config");
    let cli_config = cli_config.display().to_string();
    let (code, agent, err) = cli(
        "store",
        &[
            "token",
            "create",
            "--config",
            &cli_config,
            "--name",
            "agent",
            "--permissions",
            "read",
            "--limit",
            "calls_per_minute=4",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let agent = agent.trim().to_owned();
    let echo = ("fixture__echo", r#"{"text": "hi"}"#);
    for gateway in [&first, &second] {
        followed("both gateways accept the token", || {
            list_at(gateway.authority(), Some(&agent)).is_ok()
        });
    }
    let (code, listed, err) = cli("store", &["token", "list", "--config", &cli_config]);
    assert_eq!(code, 0, "{err}");
    assert!(listed.contains(r#"{"calls_per_minute":4}"#), "{listed}");
    within_one_minute(Duration::from_secs(30));

    // Two calls on each: four in all, each gateway alone would allow two more.
    for gateway in [&first, &second] {
        let outcomes = calls(gateway, &agent, &[echo, echo]);
        assert!(outcomes.iter().all(succeeded), "{outcomes:?}");
    }
    // Within the control plane's second, each counts the other's calls.
    std::thread::sleep(Duration::from_millis(2500));
    for gateway in [&first, &second] {
        let outcomes = calls(gateway, &agent, &[echo]);
        let refused = refusal(&outcomes[0]);
        assert_eq!(refused["data"]["allowed"], 4, "{refused}");
    }
    let (code, usage, err) = cli(
        "store",
        &[
            "token",
            "limit",
            "agent",
            "--config",
            &cli_config,
            "--limit",
            "calls_per_minute=6",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(usage.contains("calls_per_minute"), "{usage}");
    // Raised on both within the control plane's second: two more calls in all.
    std::thread::sleep(Duration::from_millis(2500));
    for gateway in [&first, &second] {
        let outcomes = calls(gateway, &agent, &[echo]);
        assert!(succeeded(&outcomes[0]), "{outcomes:?}");
    }
    std::thread::sleep(Duration::from_millis(2500));
    let limits = usage_of(&first);
    let agent_usage = limits["callers"]
        .as_array()
        .expect("callers")
        .iter()
        .find(|c| c["caller"] == "agent")
        .cloned()
        .unwrap_or_else(|| panic!("agent among {limits}"));
    assert_eq!(agent_usage["calls_last_minute"], 6, "{agent_usage}");
    assert_eq!(agent_usage["limits"], json!({"calls_per_minute": 6}));
}

/// `GET /api/v1/limits` of a gateway on a PostgreSQL store (which keeps only the API key's hash:
/// the key is the one the store's first gateway printed).
fn usage_of(gateway: &Gateway) -> Value {
    let key = crate::harness::eventually("the printed API key", Duration::from_secs(10), || {
        gateway.stdout().iter().find_map(|line| {
            line.split_whitespace()
                .find(|word| word.starts_with("mcplex_admin_"))
                .map(str::to_owned)
        })
    });
    let auth = format!("Bearer {key}");
    let (status, body) = crate::http::http_send(
        gateway.authority(),
        "GET",
        "/api/v1/limits",
        &[("Authorization", &auth)],
        "",
    );
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("json")
}

/// What reaches an upstream besides tool calls (a resource read, a prompt, a completion, a
/// subscription) counts against the caller's limits as a read: a caller held to calls per
/// minute cannot read resources without end instead.
#[test]
fn resource_reads_and_prompts_count_against_the_callers_limits() {
    let gateway = Gateway::start(json!({
        "mcpServers": {"conf": {"command": crate::harness::tools().conformance_fixture}}
    }));
    gateway.wait_ready();
    let token = gateway.create_token(json!({"name": "reader", "permissions": "read",
        "limits": {"calls_per_minute": 2}}));
    within_one_minute(Duration::from_secs(20));
    let read = || {
        gateway.client_at(
            "/mcp",
            Some(&token),
            "legacy",
            "read",
            &["mcplex://conf/test://static-text"],
        )
    };
    for _ in 0..2 {
        let answer = read();
        assert!(answer["result"]["contents"].is_array(), "{answer}");
    }
    let refused = read();
    assert_eq!(refused["error"]["code"], json!(RATE_LIMITED), "{refused}");
    let prompt = gateway.client_at(
        "/mcp",
        Some(&token),
        "legacy",
        "prompt",
        &["conf__test_simple_prompt", "{}"],
    );
    assert_eq!(prompt["error"]["code"], json!(RATE_LIMITED), "{prompt}");
}
