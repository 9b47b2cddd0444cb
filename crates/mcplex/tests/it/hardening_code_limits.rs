//! The code surface's bounds: what a run exchanges with the gateway is bounded before it is
//! parsed (the gateway's memory stays small whatever a script returns or sends), the operator's
//! timeout is a ceiling a caller cannot raise, and a worker is detached from the gateway (its own
//! session, `no_new_privs`, a bound on its data).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::hardening_code::{answer, limit_of, run, send_run, workers};
use crate::harness::{Gateway, eventually, fixture_server};

fn gateway_with(extra: Value) -> Gateway {
    let mut config = json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}});
    if let (Some(config), Some(extra)) = (config.as_object_mut(), extra.as_object()) {
        config.extend(extra.clone());
    }
    let gateway = Gateway::start(config);
    gateway.wait_ready();
    gateway
}

/// A line of `/proc/<pid>/status`, as a number (`VmHWM:  1234 kB` → 1234).
pub(crate) fn status_number(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

const MIB: u64 = 1024;

#[test]
fn a_result_too_large_is_refused_before_the_gateway_parses_it() {
    let gateway = gateway_with(json!({}));
    let before = status_number(gateway.pid(), "VmHWM").unwrap_or(0);
    let started = Instant::now();
    // 50 MB of JSON (the shared row is written 25,000 times), in a 64 MiB heap.
    let result = run(
        &gateway,
        None,
        json!({"code": "const row = new Array(1000).fill(0); return new Array(25000).fill(row);"}),
    );
    let took = started.elapsed();
    assert_eq!(
        limit_of(&result),
        "code_execution_max_message_bytes",
        "{result}"
    );
    assert!(took < Duration::from_secs(30), "answered after {took:?}");
    let grew = status_number(gateway.pid(), "VmHWM").unwrap_or(0) - before;
    assert!(grew < 300 * MIB, "the gateway grew by {grew} kB");
    // Just under the bound is a result like any other.
    let fine = run(
        &gateway,
        None,
        json!({"code": "return 'x'.repeat(4 * 1024 * 1024 - 100);"}),
    );
    assert_eq!(
        fine["structuredContent"]["result"].as_str().map(str::len),
        Some(4 * 1024 * 1024 - 100),
        "{}",
        fine["structuredContent"]["error"]
    );
}

#[test]
fn arguments_too_large_fail_that_call_and_the_run_goes_on() {
    let gateway = gateway_with(json!({}));
    let before = status_number(gateway.pid(), "VmHWM").unwrap_or(0);
    // 10 MB of JSON arguments (the shared row is written 5,000 times), in a batch.
    let code = "const row = new Array(1000).fill(0); const big = new Array(5000).fill(row);\n\
        return call_tools([{name: 'fixture__echo', args: {big}}, {name: 'fixture__echo', args: {n: 1}}]);";
    let result = run(&gateway, None, json!({"code": code}));
    // call_tools throws on the refused call: the run ends with it, carrying the same body.
    let error = &result["structuredContent"];
    assert_eq!(error["error_type"], "script_error", "{result}");
    assert_eq!(error["body"]["error_type"], "limit_exceeded", "{result}");
    assert_eq!(
        error["body"]["limit"], "code_execution_max_message_bytes",
        "{result}"
    );
    let grew = status_number(gateway.pid(), "VmHWM").unwrap_or(0) - before;
    assert!(grew < 300 * MIB, "the gateway grew by {grew} kB");
    // Caught, each refusal is the call's error and the script goes on.
    let code = "const big = 'x'.repeat(5 * 1024 * 1024); let refused = 0, body = null;\n\
        for (let i = 0; i < 3; i++) { try { call_tool('fixture__echo', {big}); } catch (e) { refused++; body = e.body; } }\n\
        return {refused, body, after: call_tool('fixture__add', {a: 1, b: 2})};";
    let result = run(&gateway, None, json!({"code": code}));
    let value = &result["structuredContent"]["result"];
    assert_eq!(value["refused"], 3, "{result}");
    assert_eq!(value["body"]["error_type"], "limit_exceeded", "{result}");
    assert_ne!(value["after"], Value::Null, "{result}");
}

#[test]
fn a_caller_cannot_raise_the_operators_timeout() {
    let gateway = gateway_with(json!({"code_execution_timeout": "2s"}));
    let started = Instant::now();
    let stream = send_run(
        &gateway,
        None,
        json!({"code": "for (;;) {}", "timeout_ms": 60000}),
    );
    let result = answer(stream, Duration::from_secs(90));
    let took = started.elapsed();
    assert_eq!(limit_of(&result), "timeout_ms", "{result}");
    assert!(
        result["structuredContent"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("2000"),
        "{result}"
    );
    assert!(took < Duration::from_secs(20), "ran for {took:?}");
    // Lower is the caller's to ask.
    let started = Instant::now();
    let result = answer(
        send_run(
            &gateway,
            None,
            json!({"code": "for (;;) {}", "timeout_ms": 300}),
        ),
        Duration::from_secs(30),
    );
    assert_eq!(limit_of(&result), "timeout_ms", "{result}");
    assert!(started.elapsed() < Duration::from_secs(2), "{result}");
}

#[test]
fn a_worker_is_detached_from_the_gateway_and_bounded() {
    let gateway = gateway_with(json!({}));
    let idle = eventually("warm workers", Duration::from_secs(20), || {
        let idle = workers(&gateway);
        (!idle.is_empty()).then_some(idle)
    });
    let field = |pid: u32, at: usize| -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        rest.split_whitespace().nth(at).map(str::to_owned)
    };
    for pid in idle {
        assert_eq!(status_number(pid, "NoNewPrivs"), Some(1), "worker {pid}");
        // Fields after the name: state, ppid, pgrp, session, tty_nr.
        assert_eq!(field(pid, 2), Some(pid.to_string()), "worker {pid}'s group");
        assert_eq!(
            field(pid, 3),
            Some(pid.to_string()),
            "worker {pid}'s session"
        );
        assert_eq!(
            field(pid, 4).as_deref(),
            Some("0"),
            "worker {pid}'s terminal"
        );
    }
    // A running worker's data is bounded from its run's memory limit.
    let stream = send_run(
        &gateway,
        None,
        json!({"code": "for (;;) {}", "timeout_ms": 5000}),
    );
    let limited = eventually("a bounded worker", Duration::from_secs(10), || {
        workers(&gateway).into_iter().find_map(|pid| {
            let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
            let line = limits.lines().find(|l| l.starts_with("Max data size"))?;
            let soft = line.split_whitespace().nth(3)?;
            (soft != "unlimited").then(|| soft.parse::<u64>().unwrap_or(u64::MAX))
        })
    });
    // What the worker maps when its run arrives (the allocator's reserved arena), plus a
    // bound from the run's 64 MiB heap.
    assert!(limited <= 4 * 1024 * 1024 * 1024, "{limited}");
    let _ = answer(stream, Duration::from_secs(30));
}
