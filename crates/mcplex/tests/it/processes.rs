//! No process outlives the gateway: children and their children after SIGTERM, direct children
//! after SIGKILL (parent-death signal). No two processes of one server overlap: a server's new
//! process starts once the one it replaces has ended. A process that exits during the
//! handshake is reported with its exit status.

use std::time::Duration;

use serde_json::json;

use crate::harness::{Gateway, alive, eventually, fixture_server};
use crate::process_ids::host_pid;

#[test]
fn sigterm_leaves_no_upstream_process_or_grandchild() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let child = gateway.client("legacy", "call", &["fixture__pid", "{}"])["result"]["structuredContent"]["pid"].as_u64().expect("pid");
    let grandchild = gateway.client("legacy", "call", &["fixture__spawn_grandchild", "{}"])["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("grandchild pid");
    let (child, grandchild) = (
        host_pid(gateway.pid(), "fixture", child),
        host_pid(gateway.pid(), "fixture", grandchild),
    );
    assert!(alive(child) && alive(grandchild));
    let status = gateway.terminate();
    assert!(
        status.success(),
        "gateway exit status after SIGTERM: {status}"
    );
    eventually(
        "the upstream and its child to be gone",
        Duration::from_secs(10),
        || (!alive(child) && !alive(grandchild)).then_some(()),
    );
}

#[test]
fn ctrl_c_stops_every_server_without_reporting_them_as_failed() {
    let mut gateway = Gateway::start(json!({"mcpServers": {
        "a": fixture_server("a", &[]),
        "b": fixture_server("b", &[])
    }}));
    gateway.wait_ready();
    let status = gateway.interrupt();
    assert!(status.success(), "exit status after SIGINT: {status}");
    let log = gateway.log();
    assert!(log.contains("shutting down"), "{log}");
    // Servers the gateway stops are not failures: no warning, no lost connection.
    let warnings: Vec<&str> = log
        .lines()
        .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
        .collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
}

#[test]
fn sigkill_of_the_gateway_takes_its_children_down() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "a": fixture_server("a", &[]),
        "b": fixture_server("b", &[])
    }}));
    gateway.wait_ready();
    let pid = |server: &str| {
        gateway.client("legacy", "call", &[&format!("{server}__pid"), "{}"])["result"]["structuredContent"]["pid"]
            .as_u64()
            .expect("pid")
    };
    let children = [
        host_pid(gateway.pid(), "a", pid("a")),
        host_pid(gateway.pid(), "b", pid("b")),
    ];
    assert!(children.iter().all(|&p| alive(p)));
    gateway.kill_hard();
    eventually(
        "the children to exit with their parent",
        Duration::from_secs(10),
        || children.iter().all(|&p| !alive(p)).then_some(()),
    );
}

/// A server whose config changes gets a new process only once the old one has ended: the old one
/// here keeps an exclusive lock for a second after its stdin closes (SIGTERM ignored), and a new
/// one that found the lock held would exit at once, which its history would show.
#[test]
fn a_changed_server_starts_once_its_old_process_has_let_go() {
    let lock = tempfile::NamedTempFile::new().expect("a lock file");
    let path = lock.path().display().to_string();
    let holder = |generation: &str| {
        let mut server = fixture_server("holder", &["--exclusive", &path, "--linger-ms", "1000"]);
        server["env"] = json!({"HOLDER_GENERATION": generation});
        server["sandbox"] = json!(false);
        server
    };
    let gateway = Gateway::start(json!({"mcpServers": {"holder": holder("1")}}));
    gateway.wait_ready();
    let pid = || {
        let answer = gateway.client("legacy", "call", &["holder__pid", "{}"]);
        answer["result"]["structuredContent"]["pid"].as_u64()
    };
    let first = pid().expect("the first process's pid");

    std::fs::write(
        gateway.dir.path().join("config.json"),
        json!({"mcpServers": {"holder": holder("2")}}).to_string(),
    )
    .expect("edit the config");
    let second = eventually("the new process", Duration::from_secs(30), || {
        pid().filter(|&p| p != first)
    });
    assert!(!alive(first), "the old process {first} has ended");
    started_at_first_try(&gateway, second);

    // Removed, then configured again while the removed process still shuts down: the same wait.
    let config = gateway.dir.path().join("config.json");
    std::fs::write(&config, json!({"mcpServers": {}}).to_string()).expect("remove it");
    eventually("the server removed", Duration::from_secs(10), || {
        let (status, _) = gateway.api("GET", "/api/v1/servers/holder", "");
        (status == 404).then_some(())
    });
    std::fs::write(
        &config,
        json!({"mcpServers": {"holder": holder("3")}}).to_string(),
    )
    .expect("configure it again");
    let third = eventually("the third process", Duration::from_secs(30), || {
        pid().filter(|&p| p != second)
    });
    started_at_first_try(&gateway, third);
}

/// Asserts that the `holder` server's current slot connected once and was ready: its process
/// `pid` found the lock free.
fn started_at_first_try(gateway: &Gateway, pid: u64) {
    let (_, page) = gateway.api("GET", "/api/v1/servers/holder", "");
    let kinds: Vec<&str> = page["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|event| event["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["connecting", "ready"],
        "process {pid} started at its first try: {page}"
    );
}

/// A server whose process exits during the handshake is reported with its exit status, not as a
/// connection that closed: here it finds its lock held (by this test) and exits with 4 at once.
#[test]
fn a_server_that_exits_during_the_handshake_is_reported_with_its_exit_status() {
    let lock = tempfile::NamedTempFile::new().expect("a lock file");
    lock.as_file().try_lock().expect("the test holds the lock");
    let path = lock.path().display().to_string();
    let mut server = fixture_server("holder", &["--exclusive", &path]);
    server["sandbox"] = json!(false);
    let gateway = Gateway::start(json!({"mcpServers": {"holder": server}}));
    let failure = eventually("a failed start", Duration::from_secs(30), || {
        let (_, page) = gateway.api("GET", "/api/v1/servers/holder", "");
        page["history"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|event| event["kind"] == "failed")
            .cloned()
    });
    let text = failure.to_string();
    assert!(text.contains("exit status: 4"), "{failure}");
    assert!(!text.contains("before the answer arrived"), "{failure}");
}

/// A gateway that is process 1 (a container started without an init) inherits orphans it never
/// reaps, and says so: here it is the first process of a new PID namespace.
#[test]
fn a_gateway_that_is_process_1_says_it_reaps_no_orphans() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().expect("a directory");
    let config = dir.path().join("config.json");
    std::fs::write(&config, json!({"mcpServers": {}}).to_string()).expect("config");
    let spawned = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--pid",
            "--fork",
            "--kill-child",
        ])
        .arg(&crate::harness::tools().mcplex)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env("MCPLEX_DATA_DIR", dir.path().join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            return crate::harness::unavailable(
                "a_gateway_that_is_process_1_says_it_reaps_no_orphans",
                &format!("cannot run unshare: {e}"),
            );
        }
    };
    let mut serving = String::new();
    let stdout = child.stdout.take().expect("stdout");
    let _ = BufReader::new(stdout).read_line(&mut serving);
    let _ = child.kill();
    let mut log = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut log);
    let _ = child.wait();
    if !serving.contains("serving") {
        return crate::harness::unavailable(
            "a_gateway_that_is_process_1_says_it_reaps_no_orphans",
            &format!("no gateway in a new PID namespace (user namespaces refused?): {log}"),
        );
    }
    assert!(
        log.contains("running as process 1") && log.contains("will not be reaped"),
        "{log}"
    );
}
