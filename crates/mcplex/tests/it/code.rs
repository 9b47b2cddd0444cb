//! The code_execution surface end to end: scripts calling real upstreams (our fixture and PyPI
//! mcp-server-time) through the gateway, with the official Python client.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Gateway, MODES, fixture_server, tools};

fn fleet(extra: Value) -> Value {
    let mut config = json!({"mcpServers": {
        "fixture": fixture_server("fixture", &[]),
        "time": {"command": tools().time_server, "args": ["--local-timezone", "UTC"]}
    }});
    if let (Value::Object(config), Value::Object(extra)) = (&mut config, extra) {
        config.extend(extra);
    }
    config
}

/// Runs `code` on `/mcp/code` with the official client; the tool result.
fn run(gateway: &Gateway, mode: &str, token: Option<&str>, arguments: Value) -> Value {
    let answer = gateway.client_at(
        "/mcp/code",
        token,
        mode,
        "call",
        &["code_execution", &arguments.to_string()],
    );
    answer["result"].clone()
}

#[test]
fn one_script_chains_calls_across_real_upstreams() {
    let gateway = Gateway::start(fleet(json!({})));
    gateway.wait_ready();
    let listing = gateway.client_at("/mcp/code", None, "legacy", "list", &[]);
    assert_eq!(
        crate::harness::names(&listing),
        ["code_execution", "retrieve_tools", "describe_tool"]
    );
    let code = "const now = call_tool('time__get_current_time', {timezone: 'UTC'});\n\
                let total = input.start;\n\
                for (const n of [1, 2, 3]) { total = (await call_tool('fixture__add', {a: total, b: n})).sum; }\n\
                const echoed = call_tools([{name: 'fixture:echo', args: {i: 1}}, {name: 'fixture__echo', args: {i: 2}}]);\n\
                return {timezone: now.timezone, total, echoed};";
    for mode in MODES {
        let result = run(
            &gateway,
            mode,
            None,
            json!({"code": code, "input": {"start": 10}}),
        );
        assert_eq!(result["isError"], false, "{mode}: {result}");
        let value = &result["structuredContent"]["result"];
        assert_eq!(value["timezone"], "UTC", "{mode}: {result}");
        assert_eq!(value["total"], 16);
        assert_eq!(value["echoed"], json!([{"i": 1}, {"i": 2}]));
        assert_eq!(result["structuredContent"]["tool_calls"], 6);
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or_default())
                .expect("text is JSON");
        assert_eq!(&text, value);
    }
}

#[test]
fn call_errors_are_thrown_with_the_gateway_body_and_script_errors_name_the_line() {
    let gateway = Gateway::start(fleet(json!({})));
    gateway.wait_ready();
    let code = "try { call_tool('fixture__add', {a: 'one'}); } catch (e) { return {message: e.message, body: e.body}; }";
    let result = run(&gateway, "legacy", None, json!({"code": code}));
    let body = &result["structuredContent"]["result"]["body"];
    assert_eq!(body["error_type"], "invalid_params", "{result}");
    assert!(
        body["input_schema"]["required"].is_array(),
        "the self-healing answer carries the schema: {result}"
    );
    let code = "try { call_tool('fixture__protocol_error'); } catch (e) { return e.body; }";
    let result = run(&gateway, "legacy", None, json!({"code": code}));
    assert!(
        result["structuredContent"]["result"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("fixture refuses"),
        "{result}"
    );
    let code = "const x = 1;\ncall_tool('nope__nothing', {});\nreturn x;";
    let result = run(&gateway, "legacy", None, json!({"code": code}));
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["structuredContent"]["error_type"], "script_error",
        "{result}"
    );
    assert_eq!(result["structuredContent"]["line"], 2, "{result}");
    assert!(
        result["structuredContent"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown tool: nope__nothing")
    );
}

#[test]
fn every_limit_is_named_and_the_gateway_keeps_serving() {
    let gateway = Gateway::start(fleet(json!({
        "code_execution_memory_limit": "8MiB",
        "code_execution_max_tool_calls": 3
    })));
    gateway.wait_ready();
    let limit = |arguments: Value| {
        let result = run(&gateway, "legacy", None, arguments);
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(
            result["structuredContent"]["error_type"], "limit_exceeded",
            "{result}"
        );
        result["structuredContent"]["limit"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // What one run costs here besides the script (a Python client starting, on a loaded machine
    // several seconds), so that the deadline is judged by what it adds.
    let started = Instant::now();
    let trivial = run(&gateway, "legacy", None, json!({"code": "return 1"}));
    assert_eq!(trivial["structuredContent"]["result"], 1, "{trivial}");
    let overhead = started.elapsed();
    let started = Instant::now();
    assert_eq!(
        limit(json!({"code": "while (true) {}", "timeout_ms": 300})),
        "timeout_ms"
    );
    let runaway = started.elapsed();
    assert!(
        runaway < overhead + Duration::from_secs(5),
        "a runaway script with timeout_ms 300 took {runaway:?} (a trivial run took {overhead:?})"
    );
    // A slow upstream call is cut at the deadline, and cancelled upstream.
    assert_eq!(
        limit(json!({"code": "call_tool('fixture__slow', {ms: 10000});", "timeout_ms": 500})),
        "timeout_ms"
    );
    gateway.wait_for_cancellation(0, "the upstream to see the cancellation");
    assert_eq!(
        limit(json!({"code": "const a = []; while (true) a.push('x'.repeat(65536));"})),
        "code_execution_memory_limit"
    );
    assert_eq!(
        limit(json!({"code": "for (let i = 0; i < 4; i++) call_tool('fixture__echo', {i});"})),
        "code_execution_max_tool_calls"
    );
    let refused = run(
        &gateway,
        "legacy",
        None,
        json!({"code": "return 1;", "timeout_ms": 0}),
    );
    assert_eq!(
        refused["structuredContent"]["error_type"], "invalid_params",
        "{refused}"
    );
    // More than the operator's timeout is lowered to it, not refused.
    let lowered = run(
        &gateway,
        "legacy",
        None,
        json!({"code": "return 1;", "timeout_ms": 700000}),
    );
    assert_eq!(lowered["structuredContent"]["result"], 1, "{lowered}");
    let fine = run(
        &gateway,
        "legacy",
        None,
        json!({"code": "return call_tool('fixture__add', {a: 1, b: 2}).sum;"}),
    );
    assert_eq!(fine["structuredContent"]["result"], 3, "{fine}");
}

#[test]
fn scripts_from_many_sessions_run_at_once() {
    let gateway = Gateway::start(fleet(json!({})));
    gateway.wait_ready();
    // Each script times its own upstream calls with the worker's clock.
    let code = "const start = Date.now();\n\
                const r = call_tools([{name: 'fixture__slow', args: {ms: 1500}}, {name: 'fixture__add', args: {a: input, b: input}}]);\n\
                return {sum: r[1].sum, start, end: Date.now()};";
    let results: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let gateway = &gateway;
                scope.spawn(move || {
                    run(
                        gateway,
                        MODES[i % 2],
                        None,
                        json!({"code": code, "input": i}),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let mut intervals = Vec::new();
    for (i, result) in results.iter().enumerate() {
        let value = &result["structuredContent"]["result"];
        assert_eq!(value["sum"], json!(2 * i), "{i}: {result}");
        let (Some(start), Some(end)) = (value["start"].as_u64(), value["end"].as_u64()) else {
            panic!("{i}: no times in {result}");
        };
        intervals.push((start, end));
    }
    // Run one after the other, no two of these intervals would overlap.
    let most = most_at_once(&intervals);
    assert!(
        most >= 2,
        "at most {most} script(s) were calling at once: {intervals:?}"
    );
}

/// The largest number of `[start, end)` intervals that share one instant.
fn most_at_once(intervals: &[(u64, u64)]) -> usize {
    intervals
        .iter()
        .map(|&(at, _)| {
            intervals
                .iter()
                .filter(|&&(start, end)| start <= at && at < end)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_script_cannot_reach_outside_its_token_scope() {
    let gateway = Gateway::start(fleet(json!({})));
    gateway.wait_ready();
    let token = gateway
        .create_token(json!({"name": "reader", "servers": ["fixture"], "permissions": "read"}));
    let catch = |name: &str| {
        let code = format!(
            "try {{ return call_tool('{name}', {{a: 1, b: 2}}); }} catch (e) {{ return e.body; }}"
        );
        let result = run(&gateway, "legacy", Some(&token), json!({"code": code}));
        result["structuredContent"]["result"]
            .to_string()
            .replace(name, "NAME")
    };
    // add is not read-only; time is another server: both answer like a tool that never existed.
    let ghost = catch("fixture__ghost");
    assert!(ghost.contains("not_found"), "{ghost}");
    assert_eq!(catch("fixture__add"), ghost);
    assert_eq!(catch("time__get_current_time"), ghost);
    let allowed = run(
        &gateway,
        "legacy",
        Some(&token),
        json!({"code": "return call_tool('fixture__echo', {ok: true});"}),
    );
    assert_eq!(
        allowed["structuredContent"]["result"],
        json!({"ok": true}),
        "{allowed}"
    );
}
