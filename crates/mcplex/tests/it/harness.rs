//! The one place that starts things: the real `mcplex` binary, upstream servers (our fixture, npm
//! server-everything, PyPI mcp-server-time), and the official Python SDK client. Tests are data
//! on top of these helpers.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use crate::background::{Background, listening_within, try_listening_within};
use serde_json::Value;

pub use crate::http::{http_get, http_post, http_send};
pub use crate::requests::{MODES, call_raw, names, pull_the_rug, rpc, rpc_with};
pub use crate::upstream_fixtures::{fixture_server, http_fixture, marked_fixture_server};

/// Where the test tools live. Set up by `scripts/test.sh` (see README).
pub struct Tools {
    pub repo: PathBuf,
    pub mcplex: PathBuf,
    pub fixture: PathBuf,
    pub python: PathBuf,
    pub everything: PathBuf,
    pub time_server: PathBuf,
    /// `mcplex-conformance-fixture`, the server the conformance scenarios describe.
    pub conformance_fixture: PathBuf,
    /// The official conformance suite's CLI (npm `@modelcontextprotocol/conformance`).
    pub conformance: PathBuf,
}

pub fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Tools> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()
            .expect("repo root");
        let mcplex = PathBuf::from(env!("CARGO_BIN_EXE_mcplex"));
        let fixture = mcplex.with_file_name("mcplex-fixture");
        let conformance_fixture = mcplex.with_file_name("mcplex-conformance-fixture");
        let venv = std::env::var_os("MCPLEX_TEST_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo.join(".venv"));
        let tools = Tools {
            fixture,
            python: venv.join("bin/python"),
            time_server: venv.join("bin/mcp-server-time"),
            everything: repo.join(
                "tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            ),
            conformance: repo
                .join("tests/node/node_modules/@modelcontextprotocol/conformance/dist/index.js"),
            conformance_fixture,
            mcplex,
            repo,
        };
        for (what, path) in [
            (
                "the fixture server (cargo build --workspace)",
                &tools.fixture,
            ),
            (
                "the Python SDK venv (scripts/test.sh installs it)",
                &tools.python,
            ),
            (
                "mcp-server-time (scripts/test.sh installs it)",
                &tools.time_server,
            ),
            (
                "server-everything (scripts/test.sh runs npm ci in tests/node)",
                &tools.everything,
            ),
            (
                "the conformance suite (scripts/test.sh runs npm ci in tests/node)",
                &tools.conformance,
            ),
            (
                "the conformance fixture (cargo build --workspace)",
                &tools.conformance_fixture,
            ),
        ] {
            assert!(path.exists(), "missing {what}: {}", path.display());
        }
        tools
    })
}

/// A free loopback port (bound and released; good enough for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// What a gateway printed on stdout, line by line.
type StdoutLines = Arc<Mutex<Vec<String>>>;

/// `config` with `"search_model": false` unless it names one: most tests assert BM25F's
/// rankings and counts, which a model would change once the tools are embedded (in the
/// background, at a time no test controls). The hybrid tests name their model, or use
/// [`Gateway::start_as_given`].
fn bm25_unless_said(mut config: Value) -> Value {
    if let Some(settings) = config.as_object_mut() {
        settings.entry("search_model").or_insert(Value::Bool(false));
    }
    config
}

/// A running gateway process, killed on drop.
pub struct Gateway {
    child: Option<Child>,
    stdout: StdoutLines,
    pub url: String,
    pub dir: tempfile::TempDir,
    /// The extra arguments and variables it was started with, kept for a restart.
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Gateway {
    /// Starts `mcplex serve` on `config` (the JSON file content) and returns once it listens.
    pub fn start(config: Value) -> Gateway {
        Gateway::start_with(config, &[])
    }

    pub fn start_with(config: Value, extra_args: &[&str]) -> Gateway {
        Gateway::start_bound(config, "127.0.0.1", extra_args)
    }

    /// Starts the gateway listening on `host` (e.g. `0.0.0.0`); clients reach it on loopback.
    pub fn start_bound(config: Value, host: &str, extra_args: &[&str]) -> Gateway {
        Gateway::start_at(config, host, free_port(), extra_args)
    }

    /// Starts the gateway on `host:port` (a config that must name its own URL needs the port
    /// first).
    pub fn start_at(config: Value, host: &str, port: u16, extra_args: &[&str]) -> Gateway {
        Gateway::start_in(bm25_unless_said(config), host, port, extra_args, &[])
    }

    /// Starts the gateway with `env` added to its environment (a variable no flag sets).
    pub fn start_with_env(config: Value, extra_args: &[&str], env: &[(&str, &str)]) -> Gateway {
        Gateway::start_in(
            bm25_unless_said(config),
            "127.0.0.1",
            free_port(),
            extra_args,
            env,
        )
    }

    /// Starts the gateway on `config` exactly as given: without `search_model`, it searches with
    /// the built-in model, as a user's gateway does.
    #[cfg_attr(not(feature = "semantic"), allow(dead_code))]
    pub fn start_as_given(config: Value, extra_args: &[&str]) -> Gateway {
        Gateway::start_in(config, "127.0.0.1", free_port(), extra_args, &[])
    }

    fn start_in(
        config: Value,
        host: &str,
        port: u16,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> Gateway {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("config.json"),
            serde_json::to_vec_pretty(&config).expect("json"),
        )
        .expect("write config");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        let (child, stdout) = spawn(dir.path(), host, port, extra_args, &env);
        Gateway {
            child: Some(child),
            stdout,
            url: format!("http://127.0.0.1:{port}/mcp"),
            dir,
            args: extra_args.iter().map(|arg| arg.to_string()).collect(),
            env,
        }
    }

    /// Its data directory (its SQLite store): a second gateway started with `--data-dir` on it
    /// is a replica of this one.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Stops the gateway (SIGTERM) and starts it again on the same config, data directory and
    /// extra arguments, on a new port; the log continues in the same file.
    #[cfg_attr(not(feature = "semantic"), allow(dead_code))]
    pub fn restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), libc::SIGTERM);
            wait_with_timeout(&mut child, Duration::from_secs(20))
                .expect("gateway exits after SIGTERM");
        }
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let port = free_port();
        let (child, stdout) = spawn(self.dir.path(), "127.0.0.1", port, &args, &self.env);
        self.child = Some(child);
        self.stdout = stdout;
        self.url = format!("http://127.0.0.1:{port}/mcp");
    }

    /// The lines the gateway printed on stdout so far.
    pub fn stdout(&self) -> Vec<String> {
        self.stdout.lock().expect("stdout lines").clone()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("gateway.log")).unwrap_or_default()
    }

    /// The log's events, for a gateway started with `--log-format json`: each line's object, with
    /// the event's fields (message and structured values) under `fields`.
    pub fn log_events(&self) -> Vec<Value> {
        self.log()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// How many cancellations the fixture called `fixture` has logged (it writes one stderr line
    /// per `notifications/cancelled` it receives, which the gateway logs).
    pub fn cancellations_logged(&self) -> usize {
        self.log().matches("fixture fixture: request").count()
    }

    /// Waits until the fixture has logged more than `before` cancellations.
    pub fn wait_for_cancellation(&self, before: usize, what: &str) {
        eventually(what, Duration::from_secs(10), || {
            (self.cancellations_logged() > before).then_some(())
        });
    }

    /// GET `path` on the gateway: (status, body).
    pub fn get(&self, path: &str) -> (u16, String) {
        let authority = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        http_get(authority, path)
    }

    /// The raw JSON-RPC answer to a stateless 2026-07-28 `tools/list` on `path`, exactly as the
    /// wire carried it (the `data:` of its event stream).
    pub fn raw_tools_list(&self, path: &str) -> String {
        let authority = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let headers = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ];
        let (status, answer) = http_post(authority, path, &headers, body);
        assert_eq!(status, 200, "{answer}");
        answer
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .map(str::to_owned)
            .unwrap_or(answer)
    }

    /// Waits until `/readyz?all` says every server is ready.
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, body) = self.get("/readyz?all");
            if status == 200 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "gateway not ready after 60s: {body}\n--- log ---\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs a Python SDK scenario against this gateway in `mode` (`legacy` | `2026-07-28`).
    pub fn client(&self, mode: &str, scenario: &str, args: &[&str]) -> Value {
        python_client(&["--url", &self.url], mode, scenario, args)
    }

    /// The official client on `path` (e.g. `/mcp/all`), presenting `token` when given.
    pub fn client_at(
        &self,
        path: &str,
        token: Option<&str>,
        mode: &str,
        scenario: &str,
        args: &[&str],
    ) -> Value {
        let url = format!("{}{}", self.url.trim_end_matches("/mcp"), path);
        let mut target = vec!["--url", url.as_str()];
        if let Some(token) = token {
            target.extend(["--token", token]);
        }
        python_client(&target, mode, scenario, args)
    }

    pub fn authority(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    }

    /// The admin API key the gateway created in its data directory.
    pub fn api_key(&self) -> String {
        let path = self.dir.path().join("data").join("api_key");
        eventually("the API key file", Duration::from_secs(10), || {
            std::fs::read_to_string(&path)
                .ok()
                .map(|k| k.trim().to_owned())
        })
    }

    /// A management API request with the admin key: (status, JSON body).
    pub fn api(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        self.api_as(&self.api_key(), method, path, body)
    }

    /// A management API request with `key` (a replica's is its store's: the first gateway's).
    pub fn api_as(&self, key: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
        let auth = format!("Bearer {key}");
        let (status, body) = http_send(
            self.authority(),
            method,
            path,
            &[("Authorization", &auth)],
            body,
        );
        (
            status,
            serde_json::from_str(&body).unwrap_or(Value::String(body)),
        )
    }

    /// Creates an agent token through the API; the token itself.
    pub fn create_token(&self, request: Value) -> String {
        let (status, body) = self.api("POST", "/api/v1/tokens", &request.to_string());
        assert_eq!(status, 201, "{body}");
        body["token"].as_str().expect("token").to_owned()
    }

    /// Approves `server` through the API once the gateway knows it (a server added by a config
    /// edit is known once the edit is applied).
    pub fn approve_server(&self, server: &str) {
        eventually("the server approval", Duration::from_secs(20), || {
            let (status, _) = self.api("POST", &format!("/api/v1/servers/{server}/approve"), "");
            (status == 200).then_some(())
        });
    }

    /// The gateway's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("running")
    }

    /// SIGKILL: the gateway gets no chance to clean up.
    pub fn kill_hard(mut self) {
        let mut child = self.child.take().expect("running");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// SIGINT (Ctrl-C), then the exit status; the log stays readable.
    pub fn interrupt(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        signal(child.id(), libc::SIGINT);
        wait_with_timeout(&mut child, Duration::from_secs(20)).expect("gateway exits after SIGINT")
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        signal(child.id(), libc::SIGTERM);
        wait_with_timeout(&mut child, Duration::from_secs(20)).expect("gateway exits after SIGTERM")
    }
}

/// `mcplex serve` on `dir`'s `config.json` and data directory; returns once it listens.
fn spawn(
    dir: &Path,
    host: &str,
    port: u16,
    extra_args: &[&str],
    env: &[(String, String)],
) -> (Child, StdoutLines) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("gateway.log"))
        .expect("log file");
    let listen = format!("{host}:{port}");
    let mut child = Command::new(&tools().mcplex)
        .args(["serve", "--config"])
        .arg(dir.join("config.json"))
        .args(["--listen", &listen])
        .args(extra_args)
        .env("MCPLEX_LOG", "info,mcplex=debug")
        .env("MCPLEX_DATA_DIR", dir.join("data"))
        // Listings answer at once (the startup wait has tests of its own).
        .env("MCPLEX_STARTUP_WAIT", "0")
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn mcplex");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    let mut reader = BufReader::new(stdout);
    reader
        .read_line(&mut line)
        .expect("read the listening line");
    assert!(line.contains("serving"), "unexpected first line: {line:?}");
    // The lines after it (the dashboard's login link) are kept for the tests that read them.
    let lines = Arc::new(Mutex::new(vec![line]));
    let kept = lines.clone();
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            kept.lock().expect("stdout lines").push(line);
        }
    });
    (child, lines)
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), libc::SIGTERM);
            if wait_with_timeout(&mut child, Duration::from_secs(10)).is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

#[allow(unsafe_code)]
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// A test's part (PostgreSQL, HAProxy, Chromium) is missing on this machine: in CI (`CI` set
/// to `true` or `1`) that fails the test, since a suite that passes without its part tests
/// nothing; elsewhere the test says why it did nothing and returns.
pub fn unavailable(test: &str, why: &str) {
    let in_ci = std::env::var("CI").is_ok_and(|ci| ci == "true" || ci == "1");
    assert!(!in_ci, "{test}: CI=true and {why}");
    eprintln!("SKIPPED {test}: {why}");
}

/// Whether `pid` is alive (a zombie counts as dead: it has exited and only awaits reaping).
pub fn alive(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

pub fn wait_with_timeout(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Polls `check` every 100 ms until it returns `Some`, or panics with `what` after `limit`.
pub fn eventually<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `tests/py/mcp_client.py` and parses its JSON answer.
pub fn python_client(target: &[&str], mode: &str, scenario: &str, args: &[&str]) -> Value {
    let tools = tools();
    let output = Command::new(&tools.python)
        .arg(tools.repo.join("tests/py/mcp_client.py"))
        .args(target)
        .args(["--mode", mode, scenario])
        .args(args)
        .output()
        .expect("run the python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| {
        panic!("python client ({mode} {scenario} {args:?}) gave no JSON ({e}); status {}\nstdout: {stdout}\nstderr: {stderr}", output.status)
    })
}

/// Runs the `mcplex` binary with `args`: (exit code, stdout, stderr).
pub fn mcplex(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(&tools().mcplex)
        .args(args)
        .output()
        .expect("run mcplex");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Starts server-everything over HTTP (`streamableHttp` or `sse`) and waits for its port.
pub fn everything_http(transport: &str) -> (Background, u16) {
    let port = free_port();
    let mut command = Command::new("node");
    command
        .arg(&tools().everything)
        .arg(transport)
        .env("PORT", port.to_string());
    (listening(command, port, "server-everything"), port)
}

/// Starts the conformance fixture on streamable HTTP (`http://127.0.0.1:<port>/mcp`).
pub fn conformance_fixture_http() -> (Background, u16) {
    let port = free_port();
    let mut command = Command::new(&tools().conformance_fixture);
    command.args(["--http", &format!("127.0.0.1:{port}")]);
    (listening(command, port, "the conformance fixture"), port)
}

/// Spawns `command` (output discarded) and waits until it accepts connections on `port`.
pub fn listening(command: Command, port: u16, what: &str) -> Background {
    listening_within(command, port, what, Duration::from_secs(20))
}
