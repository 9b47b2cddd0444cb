//! The cluster the load-balancer tests run against (`scripts/cluster.sh`: PostgreSQL, two
//! replicas on one store, HAProxy in front) and the clients they drive it with: 2026-07-28
//! stateless requests and session-era sessions over raw HTTP, many at once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Barrier;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{alive, signal, tools};
use crate::http::{Reply, Version};

/// Concurrent clients per load.
pub(crate) const CLIENTS: usize = 200;

/// How long a write may take to be enforced by every replica (issue 14: within 1 s).
pub(crate) const FOLLOW_LIMIT: Duration = Duration::from_secs(1);

/// The two replicas' names in deploy/haproxy.cfg, in the order of `CLUSTER_REPLICA_1/2`.
pub(crate) const REPLICAS: [&str; 2] = ["r1", "r2"];

/// Why the cluster cannot run here, if it cannot.
pub(crate) fn missing_binaries() -> Option<String> {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
    };
    if !on_path("haproxy") {
        return Some("haproxy is not installed (apt-get install haproxy)".to_owned());
    }
    let pg_bin = std::env::var_os("MCPLEX_PG_BIN").map(PathBuf::from);
    let packaged = std::fs::read_dir("/usr/lib/postgresql")
        .map(|versions| {
            versions
                .flatten()
                .any(|version| version.path().join("bin/initdb").is_file())
        })
        .unwrap_or(false);
    if !(pg_bin.is_some_and(|dir| dir.join("initdb").is_file()) || packaged || on_path("initdb")) {
        return Some("PostgreSQL is not installed (apt-get install postgresql)".to_owned());
    }
    None
}

/// The topology of `scripts/cluster.sh start`, stopped (and every process it started ended) on
/// drop, whether the test passed or not.
pub(crate) struct Cluster {
    pub(crate) dir: tempfile::TempDir,
    /// HAProxy's host:port.
    pub(crate) lb: String,
    /// The replicas' host:port, r1 then r2.
    pub(crate) replicas: [String; 2],
    /// DIR/cluster.env.
    pub(crate) env: HashMap<String, String>,
}

impl Cluster {
    /// Starts the cluster, or says why it cannot run here and gives `None` (the test passes,
    /// but in CI, where a missing part fails it).
    pub(crate) fn start(test: &str) -> Option<Cluster> {
        if let Some(reason) = missing_binaries() {
            crate::harness::unavailable(test, &reason);
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cluster = Cluster {
            dir,
            lb: String::new(),
            replicas: [String::new(), String::new()],
            env: HashMap::new(),
        };
        let (code, out, err) = cluster.script("start");
        assert_eq!(
            code,
            0,
            "cluster.sh start failed\nstdout: {out}\nstderr: {err}\n{}",
            cluster.logs()
        );
        let text = std::fs::read_to_string(cluster.dir.path().join("cluster.env")).expect("env");
        cluster.env = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.trim_matches('\'').to_owned()))
            .collect();
        cluster.lb = cluster.env["CLUSTER_URL"]
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        cluster.replicas = [
            cluster.env["CLUSTER_REPLICA_1"].clone(),
            cluster.env["CLUSTER_REPLICA_2"].clone(),
        ];
        assert!(
            out.contains(&cluster.env["CLUSTER_URL"]),
            "start prints the URL: {out}"
        );
        eprintln!(
            "{test}: cluster up (store: {}) in {}",
            cluster.env["CLUSTER_STORE_KIND"],
            cluster.dir.path().display()
        );
        Some(cluster)
    }

    /// `scripts/cluster.sh COMMAND DIR`: (exit code, stdout, stderr).
    pub(crate) fn script(&self, command: &str) -> (i32, String, String) {
        let output = Command::new("bash")
            .arg(tools().repo.join("scripts/cluster.sh"))
            .arg(command)
            .arg(self.dir.path())
            .env("MCPLEX_BIN", &tools().mcplex)
            .env_remove("MCPLEX_CLUSTER_CONFIG")
            .env_remove("MCPLEX_CLUSTER_PORT")
            .env_remove("MCPLEX_CONFIG")
            .env_remove("MCPLEX_DATA_DIR")
            .env_remove("MCPLEX_STORE")
            .env_remove("MCPLEX_LISTEN")
            .output()
            .expect("run scripts/cluster.sh");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Every log of the cluster, for a failure's message.
    pub(crate) fn logs(&self) -> String {
        let mut all = String::new();
        let logs = self.dir.path().join("logs");
        for name in [
            "replica-1.log",
            "replica-2.log",
            "haproxy.log",
            "initdb.log",
            "pg_ctl.log",
        ] {
            let text = std::fs::read_to_string(logs.join(name)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            all.push_str(&format!("--- {name} (last lines) ---\n"));
            for line in tail.into_iter().rev() {
                all.push_str(line);
                all.push('\n');
            }
        }
        all
    }

    /// What HAProxy logged about the replicas' health (a replica marked down, up again).
    pub(crate) fn health_changes(&self) -> String {
        let log =
            std::fs::read_to_string(self.dir.path().join("logs/haproxy.log")).unwrap_or_default();
        let changes: Vec<&str> = log
            .lines()
            .filter(|line| line.contains(" is DOWN") || line.contains(" is UP"))
            .collect();
        if changes.is_empty() {
            "none".to_owned()
        } else {
            changes.join("\n")
        }
    }

    /// The pid of replica `index` (0 or 1), as the script recorded it.
    pub(crate) fn replica_pid(&self, index: usize) -> u32 {
        let path = self
            .dir
            .path()
            .join(format!("run/replica-{}.pid", index + 1));
        let pid: u32 = std::fs::read_to_string(&path)
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            String::from_utf8_lossy(&cmdline).contains(&self.replicas[index]),
            "pid {pid} is replica {}",
            self.replicas[index]
        );
        pid
    }

    /// The API key the replica that created the store printed once.
    pub(crate) fn printed_key(&self) -> Option<String> {
        (1..=2).find_map(|replica| {
            let log = std::fs::read_to_string(
                self.dir.path().join(format!("logs/replica-{replica}.log")),
            )
            .ok()?;
            log.split_whitespace()
                .find(|word| word.starts_with("mcplex_admin_"))
                .map(str::to_owned)
        })
    }

    /// The mcplex CLI on the cluster's store (the environment cluster.env gives a person).
    pub(crate) fn cli(&self, via: &str, args: &[&str]) -> (i32, String, String) {
        let mut command = Command::new(&tools().mcplex);
        command
            .args(args)
            .env("MCPLEX_VIA", via)
            .env_remove("MCPLEX_STORE");
        for key in ["MCPLEX_CONFIG", "MCPLEX_DATA_DIR", "MCPLEX_STORE"] {
            if let Some(value) = self.env.get(key) {
                command.env(key, value);
            }
        }
        // The store keeps only the API key's hash: the replica that created it printed the key.
        if let Some(key) = self.printed_key() {
            command.env("MCPLEX_API_KEY", key);
        }
        let output = command.output().expect("run mcplex");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Successful `demo:echo` calls a replica has counted (its own /metrics).
    pub(crate) fn echo_calls(&self, index: usize) -> u64 {
        let answer = send(&self.replicas[index], "GET", "/metrics", &[], "");
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer
            .body
            .lines()
            .filter(|line| line.starts_with("mcplex_tool_calls_total{"))
            .filter(|line| line.contains(r#"tool="echo""#) && line.contains(r#"status="ok""#))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .map(|value| value as u64)
            .sum()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let (code, _, err) = self.script("stop");
        if code != 0 {
            eprintln!("cluster.sh stop failed: {err}");
        }
        // Whatever the script could not stop (it failed half way): end it by its recorded pid,
        // only if that pid still runs what the script started.
        let run = self.dir.path().join("run");
        for name in ["haproxy.pid", "replica-1.pid", "replica-2.pid"] {
            let Ok(pid) = std::fs::read_to_string(run.join(name)) else {
                continue;
            };
            let Ok(pid) = pid.trim().parse::<u32>() else {
                continue;
            };
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(&*self.dir.path().to_string_lossy())
                || self
                    .replicas
                    .iter()
                    .any(|r| !r.is_empty() && String::from_utf8_lossy(&cmdline).contains(r))
            {
                signal(pid, libc::SIGKILL);
            }
        }
        let pgdata = self.dir.path().join("pg/data/postmaster.pid");
        if let Some(pid) = std::fs::read_to_string(pgdata)
            .ok()
            .and_then(|text| text.lines().next()?.trim().parse::<u32>().ok())
            && alive(u64::from(pid))
        {
            signal(pid, libc::SIGQUIT);
        }
    }
}

/// An answer through HAProxy (or from a replica directly).
pub(crate) type Answer = Reply;

impl Reply {
    /// The replica HAProxy sent the request to.
    pub(crate) fn replica(&self) -> &str {
        self.header("x-mcplex-replica").unwrap_or("-")
    }
}

/// One request over HTTP/1.0 (never chunked; the connection closes after the answer).
pub(crate) fn send(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    crate::http::exchange(authority, Version::Http10, method, path, headers, body)
}

pub(crate) fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A 2026-07-28 request: every POST carries its version, method and `_meta`.
pub(crate) fn stateless(
    authority: &str,
    token: Option<&str>,
    method: &str,
    mut params: Value,
) -> Answer {
    params["_meta"] = stateless_meta();
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if method == "tools/call" {
        headers.push(("Mcp-Name", &name));
    }
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth));
    }
    send(authority, "POST", "/mcp", &headers, &body)
}

/// An echo call through `authority`: the replica that answered, or what went wrong.
pub(crate) fn echo_stateless(authority: &str, marker: &Value) -> Result<String, String> {
    let answer = stateless(
        authority,
        None,
        "tools/call",
        json!({"name": "demo__echo", "arguments": {"marker": marker}}),
    );
    check_echo(&answer, marker)
}

pub(crate) fn check_echo(answer: &Answer, marker: &Value) -> Result<String, String> {
    let message = answer.message();
    let echoed = message
        .as_ref()
        .and_then(|m| m.pointer("/result/structuredContent/marker"));
    if answer.status == 200 && echoed == Some(marker) {
        Ok(answer.replica().to_owned())
    } else {
        Err(format!(
            "status {} replica {}: {}",
            answer.status,
            answer.replica(),
            answer.body.chars().take(300).collect::<String>()
        ))
    }
}

/// The tool names a stateless `tools/list` on `authority` gives, or the HTTP status.
pub(crate) fn listed(authority: &str, token: Option<&str>) -> Result<Vec<String>, u16> {
    let answer = stateless(authority, token, "tools/list", json!({}));
    if answer.status != 200 {
        return Err(answer.status);
    }
    let message = answer.message().ok_or(0u16)?;
    Ok(message["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

/// Runs `client(i)` on `CLIENTS` threads released together; their results in order.
pub(crate) fn concurrently<T: Send>(client: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(CLIENTS);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let barrier = &barrier;
                let client = &client;
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, move || {
                        barrier.wait();
                        client(i)
                    })
                    .expect("spawn a client thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    })
}

/// How many of `served` each replica answered, r1 then r2.
pub(crate) fn per_replica<'a>(served: impl IntoIterator<Item = &'a String>) -> [usize; 2] {
    let mut counts = [0; 2];
    for replica in served {
        if let Some(index) = REPLICAS.iter().position(|r| r == replica) {
            counts[index] += 1;
        }
    }
    counts
}

/// A session-era request carrying `session`.
pub(crate) fn in_session(authority: &str, session: &str, method: &str, body: &str) -> Answer {
    send(
        authority,
        method,
        "/mcp",
        &[
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        body,
    )
}

/// `initialize` of a session-era client: (session id, the replica that created it).
pub(crate) fn initialize(authority: &str, client: usize) -> Result<(String, String), String> {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": format!("cluster-test-{client}"), "version": "1"}}})
    .to_string();
    let answer = send(authority, "POST", "/mcp", &[], &body);
    let session = answer.header("mcp-session-id").map(str::to_owned);
    match (answer.status, session, answer.message()) {
        (200, Some(session), Some(message)) if message["result"]["protocolVersion"].is_string() => {
            Ok((session, answer.replica().to_owned()))
        }
        _ => Err(format!(
            "initialize: status {} {}",
            answer.status,
            answer.body.chars().take(300).collect::<String>()
        )),
    }
}

/// One session-era client: initialize, initialized, tools/call, DELETE, each through `lb`; the
/// replica that served them all, or what went wrong.
pub(crate) fn session_client(lb: &str, client: usize) -> Result<String, String> {
    let (session, replica) = initialize(lb, client)?;
    let stuck = |step: &str, answer: &Answer, status: u16| {
        if answer.status != status {
            return Err(format!(
                "{step}: status {} (wanted {status}) from {}: {}",
                answer.status,
                answer.replica(),
                answer.body.chars().take(300).collect::<String>()
            ));
        }
        if answer.replica() != replica {
            return Err(format!(
                "{step}: served by {} but the session is on {replica}",
                answer.replica()
            ));
        }
        Ok(())
    };
    let answer = in_session(
        lb,
        &session,
        "POST",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    stuck("notifications/initialized", &answer, 202)?;
    let marker = json!({"client": client, "session": session});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "demo__echo", "arguments": {"marker": marker}}})
    .to_string();
    let answer = in_session(lb, &session, "POST", &body);
    stuck("tools/call", &answer, 200)?;
    check_echo(&answer, &marker)?;
    let answer = in_session(lb, &session, "DELETE", "");
    stuck("DELETE", &answer, 200)?;
    Ok(replica)
}
