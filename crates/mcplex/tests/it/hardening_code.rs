//! Issue 15, the code surface: runaway native calls stopped at their deadline, nothing of a run
//! outliving it, fair slots per caller, tool error bodies carried into script errors.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Gateway, eventually, fixture_server};

fn gateway() -> Gateway {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    gateway
}

/// Runs `arguments` as `code_execution` on `/mcp/code` with the official client; the result.
pub(super) fn run(gateway: &Gateway, token: Option<&str>, arguments: Value) -> Value {
    let answer = gateway.client_at(
        "/mcp/code",
        token,
        "legacy",
        "call",
        &["code_execution", &arguments.to_string()],
    );
    answer["result"].clone()
}

/// A 2026-07-28 `code_execution` call over a raw connection, so that many can be in flight
/// without a client process each: the stream, the request already sent.
pub(super) fn send_run(gateway: &Gateway, token: Option<&str>, arguments: Value) -> TcpStream {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "code_execution", "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }})
    .to_string();
    let authority = gateway.authority();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp/code HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: code_execution\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(authority).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    stream
}

/// The tool result a [`send_run`] stream answers, waiting at most `limit`.
pub(super) fn answer(mut stream: TcpStream, limit: Duration) -> Value {
    stream.set_read_timeout(Some(limit)).expect("timeout");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let data = response
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .or_else(|| response.split_once("\r\n\r\n").map(|(_, body)| body))
        .unwrap_or_default();
    let message: Value = serde_json::from_str(data)
        .unwrap_or_else(|e| panic!("no JSON-RPC answer ({e}): {response:?}"));
    message["result"].clone()
}

/// CPU time (user + system) a process has used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    #[allow(unsafe_code)]
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// The gateway's code_execution worker processes (children started with `__code-worker`).
pub(super) fn workers(gateway: &Gateway) -> Vec<u32> {
    let parent = gateway.pid().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(str::to_owned));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid.as_deref() == Some(parent.as_str())
                && String::from_utf8_lossy(&cmdline).contains("__code-worker")
        })
        .collect()
}

pub(super) fn limit_of(result: &Value) -> &str {
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["error_type"], "limit_exceeded",
        "{result}"
    );
    result["structuredContent"]["limit"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_runaway_native_call_is_stopped_at_its_deadline_and_its_worker_is_gone() {
    let gateway = gateway();
    let cpu_before = cpu_time(gateway.pid());
    let started = Instant::now();
    // One native call of minutes: QuickJS's interrupt handler never runs inside it.
    let result = run(
        &gateway,
        None,
        json!({"code": "const s = 'a'.repeat(2**22); return s.indexOf('a'.repeat(2**12) + 'b');", "timeout_ms": 1000}),
    );
    let took = started.elapsed();
    assert_eq!(limit_of(&result), "timeout_ms", "{result}");
    assert!(took < Duration::from_secs(30), "answered after {took:?}");
    // The script ran in a worker, not in the gateway; and that worker is gone: what is left
    // are idle warm workers, which have used next to no CPU.
    assert!(
        cpu_time(gateway.pid()) - cpu_before < Duration::from_secs(3),
        "the gateway itself ran the script"
    );
    eventually(
        "only idle workers to be left",
        Duration::from_secs(10),
        || {
            workers(&gateway)
                .iter()
                .all(|&pid| cpu_time(pid) < Duration::from_millis(500))
                .then_some(())
        },
    );
    let fine = run(&gateway, None, json!({"code": "return 6 * 7;"}));
    assert_eq!(fine["structuredContent"]["result"], 42, "{fine}");
}

#[test]
fn workers_get_no_environment_and_no_other_descriptors() {
    let gateway = gateway();
    let idle = eventually("warm workers", Duration::from_secs(20), || {
        let idle = workers(&gateway);
        (!idle.is_empty()).then_some(idle)
    });
    let target = |pid: &str, fd: &str| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok();
    for pid in idle {
        let pid = pid.to_string();
        // Nothing of the gateway's: only the allocator's one setting, without which it would
        // reserve a gibibyte that the worker's data bound would have to allow.
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&environ),
            "MIMALLOC_ARENA_RESERVE=0\0"
        );
        let data_kib = pid
            .parse()
            .ok()
            .and_then(|pid| crate::hardening_code_limits::status_number(pid, "VmData"))
            .unwrap_or(u64::MAX);
        assert!(data_kib < 64 * 1024, "a warm worker maps {data_kib} KiB");
        let stderr = target(&pid, "2").unwrap_or_default();
        assert_eq!(stderr, std::path::Path::new("/dev/null"));
        // Besides stdin, stdout, stderr and its own status (opened before it confines itself,
        // read once its run says how much memory it has), only what this test process (the
        // gateway's parent) passed down without close-on-exec: nothing of the gateway's own
        // (sockets, the database, upstream pipes, other workers).
        let own_status = std::path::PathBuf::from(format!("/proc/{pid}/status"));
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).expect("fds");
        for fd in fds.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
            if ["0", "1", "2"].contains(&fd.as_str()) {
                continue;
            }
            let theirs = target(&pid, &fd);
            if theirs.as_ref() == Some(&own_status) {
                continue;
            }
            assert!(
                theirs.is_some() && theirs == target("self", &fd),
                "worker {pid} holds fd {fd}: {theirs:?}"
            );
        }
    }
}

#[test]
fn a_runs_leftovers_do_not_run_inside_later_runs() {
    let gateway = gateway();
    let scope = json!({"servers": ["fixture"], "permissions": "read"});
    let mut leaver = scope.clone();
    leaver["name"] = json!("leaver");
    let mut victim = scope;
    victim["name"] = json!("victim");
    let (leaver, victim) = (gateway.create_token(leaver), gateway.create_token(victim));
    // Returns while an async loop is still pending: it spins after its first awaits.
    let leave =
        json!({"code": "(async () => { await null; await null; for (;;) {} })(); return 'left';"});
    for round in 0..3 {
        let left = run(&gateway, Some(&leaver), leave.clone());
        assert_eq!(left["structuredContent"]["result"], "left", "{left}");
        let started = Instant::now();
        let result = run(
            &gateway,
            Some(&victim),
            json!({"code": "return typeof leak === 'undefined' ? 2 : 0;", "timeout_ms": 20000}),
        );
        assert_eq!(
            result["structuredContent"]["result"], 2,
            "round {round}: {result}"
        );
        // The python client alone takes a second or two; a leftover spin would take all 20 s.
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "round {round}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn one_caller_cannot_starve_the_code_surface() {
    let gateway = gateway();
    let hog = gateway
        .create_token(json!({"name": "hog", "servers": ["fixture"], "permissions": "read,write"}));
    // 16 runs of one token, each holding its slot for up to 15 s.
    let flood: Vec<TcpStream> = (0..16)
        .map(|_| {
            send_run(
                &gateway,
                Some(&hog),
                json!({"code": "for (;;) { try { call_tool('fixture__slow', {ms: 15000}); } catch (e) {} }", "timeout_ms": 15000}),
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let other = answer(
        send_run(&gateway, None, json!({"code": "return 1;"})),
        Duration::from_secs(30),
    );
    let took = started.elapsed();
    assert_eq!(other["structuredContent"]["result"], 1, "{other}");
    assert!(
        took < Duration::from_secs(8),
        "another caller waited {took:?}"
    );
    for stream in flood {
        let _ = stream.shutdown(Shutdown::Both);
    }
}

#[test]
fn an_uncaught_tool_error_keeps_its_self_healing_body_and_line() {
    let gateway = gateway();
    let result = run(
        &gateway,
        None,
        json!({"code": "const x = 1;\ncall_tool('fixture__add', {a: 'one'});\nreturn x;"}),
    );
    assert_eq!(result["isError"], true, "{result}");
    let error = &result["structuredContent"];
    assert_eq!(error["error_type"], "script_error", "{result}");
    assert_eq!(error["line"], 2, "{result}");
    assert!(
        error["error"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid arguments for fixture__add"),
        "{result}"
    );
    assert_eq!(error["body"]["error_type"], "invalid_params", "{result}");
    assert!(
        error["body"]["input_schema"]["required"].is_array(),
        "{result}"
    );
    assert!(error["body"]["hint"].is_string(), "{result}");
}
