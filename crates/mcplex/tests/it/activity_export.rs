//! The audit log exported: `mcplex activity export` and `GET /api/v1/activity/export` write the
//! same rows, oldest first, as JSON Lines or CSV, filtered like the activity page.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, eventually, fixture_server, mcplex};
use crate::http::http_send;

#[test]
fn the_cli_and_the_api_export_the_same_rows_oldest_first_in_jsonl_and_csv() {
    let gateway = Gateway::start(json!({
        "audit_arguments": true,
        "mcpServers": {"fixture": fixture_server("fixture", &[])}
    }));
    gateway.wait_ready();
    let token = gateway.create_token(json!({"name": "agent-9", "permissions": "read,write"}));
    let texts = ["first", "second, with \"quotes\"", "third"];
    for text in texts {
        let args = json!({"text": text}).to_string();
        let answer = gateway.client_at(
            "/mcp",
            Some(&token),
            "legacy",
            "call",
            &["fixture__echo", &args],
        );
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    // A name a spreadsheet would run as a formula, audited as sent.
    gateway.client_at("/mcp", Some(&token), "legacy", "call", &["=1+2", "{}"]);
    let cli = gateway.dir.path().join("cli.json");
    std::fs::write(
        &cli,
        json!({"data_dir": gateway.dir.path().join("data"), "mcpServers": {}}).to_string(),
    )
    .expect("write");
    let cli = cli.display().to_string();
    let export = |extra: &[&str]| {
        let mut args = vec!["activity", "export", "--config", cli.as_str()];
        args.extend_from_slice(extra);
        let (code, out, err) = mcplex(&args);
        assert_eq!(code, 0, "{err}");
        out
    };

    // JSON Lines: one row a line, the calls in the order they were made, the token's creation
    // (an operator action) before them.
    let rows: Vec<Value> = eventually("three exported calls", Duration::from_secs(10), || {
        let rows: Vec<Value> = export(&["--token", "agent-9", "--tool", "echo"])
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON object a line"))
            .collect();
        (rows.len() == 3).then_some(rows)
    });
    let exported_texts: Vec<String> = rows
        .iter()
        .map(|row| {
            let arguments: Value =
                serde_json::from_str(row["arguments"].as_str().expect("arguments kept"))
                    .expect("arguments are JSON");
            arguments["text"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(exported_texts, texts, "oldest first");
    assert!(
        rows.windows(2)
            .all(|w| w[0]["at_ms"].as_i64() <= w[1]["at_ms"].as_i64())
    );
    let everything = export(&[]);
    assert_eq!(
        everything.lines().count(),
        5,
        "the operator's action too:\n{everything}"
    );
    assert!(
        everything
            .lines()
            .next()
            .unwrap_or_default()
            .contains("/api/v1/tokens")
    );
    assert_eq!(
        export(&["--since", "1h", "--tool", "ECHO"]).lines().count(),
        3
    );
    assert_eq!(export(&["--since", "2999-01-01"]), "", "nothing that new");
    assert_eq!(export(&["--status", "tool_error"]), "");
    assert_eq!(export(&["--status", "unknown_tool"]).lines().count(), 1);

    // CSV: a header, then RFC 4180 rows; quotes doubled, a formula defused.
    let csv = export(&["--format", "csv", "--token", "agent-9", "--tool", "echo"]);
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(
        lines[0].starts_with("at,at_ms,request_id,token,method,tool,status,"),
        "{csv}"
    );
    assert!(
        lines[1].contains(",agent-9,tools/call,fixture:echo,ok,"),
        "{csv}"
    );
    assert!(
        lines[2].contains(r#"""second, with \""quotes\"""""#),
        "{csv}"
    );
    let formula = export(&["--format", "csv", "--status", "unknown_tool"]);
    assert!(
        formula.contains(r#","'=1+2","#),
        "a formula is never a bare field: {formula}"
    );

    // The API streams the same bytes, behind the admin key.
    let api = |query: &str, auth: Option<&str>| {
        let auth = auth.map(|key| format!("Bearer {key}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        http_send(
            gateway.authority(),
            "GET",
            &format!("/api/v1/activity/export{query}"),
            &headers,
            "",
        )
    };
    let key = gateway.api_key();
    let (status, body) = api("?format=csv&token=agent-9&tool=echo", Some(&key));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, csv);
    let (status, body) = api("?token=agent-9&tool=echo&since=1h", Some(&key));
    assert_eq!((status, body.lines().count()), (200, 3), "{body}");
    assert_eq!(api("?format=xml", Some(&key)).0, 400);
    assert_eq!(api("?since=yesterday", Some(&key)).0, 400);
    assert_eq!(api("", None).0, 401, "the audit log is the operator's");
    assert_eq!(
        api("", Some(&token)).0,
        401,
        "an agent token does not read it"
    );
}

#[test]
fn each_audit_row_is_appended_to_the_sink_as_it_is_written() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let sink = scratch.path().join("audit.jsonl");
    std::fs::write(&sink, "an earlier line\n").expect("write");
    let mode_of = |path: &std::path::Path| {
        std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(path).expect("metadata").permissions(),
        ) & 0o777
    };
    let mode_before = mode_of(&sink);
    let gateway = Gateway::start(json!({
        "audit_sink": sink.display().to_string(),
        "mcpServers": {"fixture": fixture_server("fixture", &[])}
    }));
    gateway.wait_ready();
    for text in ["one", "two"] {
        let args = json!({"text": text}).to_string();
        gateway.client("legacy", "call", &["fixture__echo", &args]);
    }
    // An operator's action goes to the sink too.
    gateway.create_token(json!({"name": "shipped", "servers": ["fixture"], "permissions": "read"}));
    let lines: Vec<String> = eventually("three lines in the sink", Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&sink).ok()?;
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        (lines.len() == 4).then_some(lines)
    });
    assert_eq!(lines[0], "an earlier line", "appended, never truncated");
    let rows: Vec<Value> = lines[1..]
        .iter()
        .map(|line| serde_json::from_str(line).expect("a JSON object a line"))
        .collect();
    let calls: Vec<&Value> = rows
        .iter()
        .filter(|row| row["tool"] == "fixture:echo")
        .collect();
    assert_eq!(calls.len(), 2, "{rows:?}");
    for row in calls {
        assert_eq!(row["status"], "ok", "{row}");
        assert!(row["replica"].as_str().is_some_and(|r| r.ends_with(gateway.authority().rsplit(':').next().unwrap_or("?"))));
    }
    let action = rows
        .iter()
        .find(|row| row["method"] == "api POST")
        .unwrap_or_else(|| panic!("the token's creation in the sink: {rows:?}"));
    assert_eq!(
        (
            action["tool"].as_str(),
            action["token"].as_str(),
            action["status"].as_str()
        ),
        (Some("/api/v1/tokens"), Some("operator:api-key"), Some("ok")),
        "{action}"
    );
    assert_eq!(
        mode_of(&sink),
        mode_before,
        "an existing file keeps its mode"
    );

    // stdout carries MCP in --stdio mode: a stdout sink is refused there, before anything runs.
    let config = scratch.path().join("stdio.json");
    std::fs::write(
        &config,
        json!({"data_dir": scratch.path().join("data"), "audit_sink": "stdout", "mcpServers": {}})
            .to_string(),
    )
    .expect("write");
    let (code, out, err) = mcplex(&[
        "serve",
        "--stdio",
        "--config",
        &config.display().to_string(),
    ]);
    assert_ne!(code, 0);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("audit_sink \"stdout\" cannot be used with --stdio"),
        "{err}"
    );
}
