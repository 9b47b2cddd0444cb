//! What operators see: Prometheus metrics, the request id shared with the upstream's logs, and
//! the audit log read with `mcplex activity`.

use serde_json::{Value, json};

use crate::harness::{Gateway, eventually, fixture_server, mcplex, tools};

#[test]
fn metrics_request_ids_and_the_audit_log_describe_every_call() {
    let gateway = Gateway::start(json!({
        "mcpServers": {"fixture": fixture_server("fixture", &["--log-calls"])}
    }));
    gateway.wait_ready();
    let token = gateway.create_token(json!({"name": "agent-7", "permissions": "read,write"}));
    let call = |tool: &str, args: &str| {
        gateway.client_at("/mcp", Some(&token), "legacy", "call", &[tool, args])
    };
    assert_eq!(
        call("fixture__echo", r#"{"secret": "hunter2"}"#)["result"]["isError"],
        false
    );
    call("fixture__add", r#"{"a": "one"}"#);
    call("nope__nothing", "{}");

    let (status, metrics) = gateway.get("/metrics");
    assert_eq!(status, 200);
    for line in [
        r#"mcplex_tool_calls_total{server="fixture",tool="echo",status="ok"} 1"#,
        r#"mcplex_tool_calls_total{server="fixture",tool="add",status="invalid_arguments"} 1"#,
        r#"mcplex_tool_calls_total{server="-",tool="-",status="unknown_tool"} 1"#,
        r#"mcplex_validation_failures_total{server="fixture"} 1"#,
        r#"mcplex_upstream_up{server="fixture"} 1"#,
    ] {
        assert!(metrics.contains(line), "missing {line} in:\n{metrics}");
    }
    for family in [
        "mcplex_tool_call_seconds_bucket",
        "mcplex_snapshot_rebuilds_total",
        "mcplex_sessions",
        "mcplex_search_seconds",
        "mcplex_query_embedding_seconds",
    ] {
        assert!(metrics.contains(family), "missing {family}");
    }

    let cli = gateway.dir.path().join("cli.json");
    std::fs::write(
        &cli,
        json!({"data_dir": gateway.dir.path().join("data"), "mcpServers": {}}).to_string(),
    )
    .expect("write");
    let all: Vec<Value> = crate::harness::eventually(
        "three audit rows of calls",
        std::time::Duration::from_secs(10),
        || {
            let (code, out, _) =
                mcplex(&["activity", "--config", &cli.display().to_string(), "--json"]);
            let rows: Vec<Value> = serde_json::from_str(&out).ok()?;
            (code == 0 && calls_of(&rows).len() == 3).then_some(rows)
        },
    );
    // The token was made through the API: the operator's action is a row of its own.
    let made = all
        .iter()
        .find(|r| r["token"] == "operator:api-key")
        .expect("the token's creation in the audit log");
    assert_eq!(made["tool"], "/api/v1/tokens");
    assert_eq!(made["method"], "api POST");
    let rows = calls_of(&all);
    // Over time: the same three calls (two of them refused) in the trend, not the operator's
    // action; every bucket of the hour is there, empty ones too.
    let (status, trend) = gateway.api("GET", "/api/v1/trends?hours=1", "");
    assert_eq!(status, 200, "{trend}");
    let buckets = trend["buckets"].as_array().expect("buckets");
    assert_eq!(buckets.len(), 12, "{trend}");
    let sum = |field: &str| {
        buckets
            .iter()
            .filter_map(|b| b[field].as_u64())
            .sum::<u64>()
    };
    assert_eq!((sum("calls"), sum("errors")), (3, 2), "{trend}");
    let echo = rows
        .iter()
        .find(|r| r["tool"] == "fixture:echo")
        .expect("echo row");
    assert_eq!(echo["token"], "agent-7");
    assert_eq!(echo["status"], "ok");
    assert!(
        echo["request_bytes"].as_i64().unwrap_or(0) > 0
            && echo["response_bytes"].as_i64().unwrap_or(0) > 0
    );
    assert_eq!(
        echo["arguments"],
        Value::Null,
        "argument values are off by default"
    );
    assert!(!rows.iter().any(|r| r.to_string().contains("hunter2")));
    let statuses: Vec<&str> = rows.iter().filter_map(|r| r["status"].as_str()).collect();
    assert!(
        statuses.contains(&"invalid_arguments") && statuses.contains(&"unknown_tool"),
        "{statuses:?}"
    );
    // The upstream logged the same request id the audit log holds.
    let request_id = echo["request_id"].as_str().expect("request id");
    assert!(
        gateway
            .log()
            .contains(&format!("call echo request-id {request_id}")),
        "{}",
        gateway.log()
    );
}

/// Reads the audit log of `gateway` through the CLI, once it holds `count` rows.
fn audit_rows(gateway: &Gateway, count: usize) -> Vec<Value> {
    let cli = gateway.dir.path().join("cli.json");
    std::fs::write(
        &cli,
        json!({"data_dir": gateway.dir.path().join("data"), "mcpServers": {}}).to_string(),
    )
    .expect("write");
    eventually(
        &format!("{count} audit rows"),
        std::time::Duration::from_secs(10),
        || {
            let (code, out, _) =
                mcplex(&["activity", "--config", &cli.display().to_string(), "--json"]);
            let rows: Vec<Value> = serde_json::from_str(&out).ok()?;
            let rows = calls_of(&rows);
            (code == 0 && rows.len() == count).then_some(rows)
        },
    )
}

/// The rows of requests that reached an upstream (not the operators' own actions).
fn calls_of(rows: &[Value]) -> Vec<Value> {
    rows.iter()
        .filter(|r| {
            !r["token"]
                .as_str()
                .is_some_and(|t| t.starts_with("operator:"))
        })
        .cloned()
        .collect()
}

#[test]
fn prompts_and_resources_pass_the_same_boundary_as_tool_calls() {
    let gateway = Gateway::start(json!({
        "mcpServers": {"conf": {"command": tools().conformance_fixture}}
    }));
    gateway.wait_ready();
    let token = gateway.create_token(json!({"name": "reader", "permissions": "read"}));
    let client = |command: &str, args: &[&str]| {
        gateway.client_at("/mcp", Some(&token), "legacy", command, args)
    };
    let prompt = client(
        "prompt",
        &[
            "conf__test_prompt_with_arguments",
            r#"{"arg1": "a", "arg2": "b"}"#,
        ],
    );
    assert!(prompt["result"]["messages"].is_array(), "{prompt}");
    let read = client("read", &["mcplex://conf/test://static-text"]);
    assert!(read["result"]["contents"].is_array(), "{read}");
    // A URI carrying a credential in its query: refused upstream, audited without it.
    client(
        "read",
        &["mcplex://conf/test://static-text?token=sk-live-0123456789"],
    );

    // Counted like tool calls, by server, method and outcome.
    let (status, metrics) = gateway.get("/metrics");
    assert_eq!(status, 200);
    for line in [
        r#"mcplex_upstream_requests_total{server="conf",method="prompts/get",status="ok"} 1"#,
        r#"mcplex_upstream_requests_total{server="conf",method="resources/read",status="ok"} 1"#,
    ] {
        assert!(metrics.contains(line), "missing {line} in:\n{metrics}");
    }

    // Audited with the caller's token, the method and the target in the upstream's terms.
    let rows = audit_rows(&gateway, 3);
    let row = |method: &str| {
        rows.iter()
            .find(|r| r["method"] == method && r["status"] == "ok")
            .unwrap_or_else(|| panic!("no {method} row in {rows:?}"))
    };
    let with_query = rows
        .iter()
        .find(|r| r["tool"].as_str().is_some_and(|t| t.contains("?token=")))
        .unwrap_or_else(|| panic!("no row of the read with a query in {rows:?}"));
    assert_eq!(
        with_query["tool"], "conf:test://static-text?token=[redacted]",
        "{with_query}"
    );
    let prompt_row = row("prompts/get");
    assert_eq!(prompt_row["tool"], "conf:test_prompt_with_arguments");
    assert_eq!(prompt_row["token"], "reader");
    assert_eq!(prompt_row["status"], "ok");
    let read_row = row("resources/read");
    assert_eq!(read_row["tool"], "conf:test://static-text");
    assert_ne!(
        prompt_row["request_id"], read_row["request_id"],
        "each request has its own id"
    );
}
