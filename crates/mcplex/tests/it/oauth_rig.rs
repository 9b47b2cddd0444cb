//! What the OAuth tests start: the official Python SDK's authorization and resource server with
//! our small provider (`tests/py/oauth_upstream_server.py`), the official TypeScript SDK's example server
//! with its demo OAuth provider, and `mcplex auth login` run headless, its URL followed by an
//! HTTP client (the demo providers approve without a person).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::harness::{Background, Gateway, eventually, free_port, tools};
use crate::http::{Reply, Version, exchange};

/// `tests/py/oauth_upstream_server.py` on a free port, with `env`; returns once it answers.
pub fn python_oauth_server(env: &[(&str, &str)]) -> (Background, u16) {
    let port = free_port();
    let mut command = Command::new(&tools().python);
    command
        .arg(tools().repo.join("tests/py/oauth_upstream_server.py"))
        .env("PORT", port.to_string())
        .envs(env.iter().copied());
    (listening(command, port, "the Python OAuth server"), port)
}

/// The TypeScript SDK's `simpleStreamableHttp` example with `--oauth`: (process, MCP port).
/// Its resource is `http://localhost:<port>/mcp`; its authorization server is on another port.
/// Its two ports are picked free and bound a moment later, when another test may have taken
/// one: an example that exits before it listens is started again on two others.
pub fn typescript_oauth_server() -> (Background, u16) {
    let example = tools().repo.join(
        "tests/node/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
    );
    let mut exits = Vec::new();
    for _ in 0..3 {
        let (port, auth_port) = (free_port(), free_port());
        let mut command = Command::new("node");
        command
            .arg(&example)
            .arg("--oauth")
            .env("MCP_PORT", port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string());
        let what = "the TypeScript OAuth example";
        match crate::harness::try_listening_within(command, port, what, LISTEN_LIMIT) {
            Ok(server) => {
                eventually("its authorization server", Duration::from_secs(60), || {
                    TcpStream::connect(("127.0.0.1", auth_port))
                        .ok()
                        .map(|_| ())
                });
                return (server, port);
            }
            Err(exited) => exits.push(exited),
        }
    }
    panic!("the TypeScript OAuth example never listened: {exits:?}");
}

/// How long a test server may take to listen (node starts slowly on a loaded machine).
const LISTEN_LIMIT: Duration = Duration::from_secs(90);

fn listening(command: Command, port: u16, what: &str) -> Background {
    crate::harness::listening_within(command, port, what, LISTEN_LIMIT)
}

/// One GET of an absolute URL.
pub fn get_url(url: &str) -> Reply {
    let parsed = url::Url::parse(url).expect("a URL");
    let authority = format!(
        "{}:{}",
        parsed.host_str().expect("host"),
        parsed.port_or_known_default().expect("port")
    );
    let authority = authority.replace("localhost", "127.0.0.1");
    let mut path = parsed.path().to_owned();
    if let Some(query) = parsed.query() {
        path = format!("{path}?{query}");
    }
    exchange(&authority, Version::Http11, "GET", &path, &[], "")
}

/// Follows `url` through its redirects, as a browser would; the last answer.
pub fn follow(url: &str) -> Reply {
    let mut url = url.to_owned();
    for _ in 0..5 {
        let reply = get_url(&url);
        match reply.header("location") {
            Some(next) if (300..400).contains(&reply.status) => {
                url = url::Url::parse(&url)
                    .and_then(|base| base.join(next))
                    .expect("a redirect URL")
                    .to_string();
            }
            _ => return reply,
        }
    }
    panic!("too many redirects from {url}");
}

/// `mcplex <args>` on the gateway's config and data directory.
pub fn mcplex_on(gateway: &Gateway, args: &[&str]) -> Command {
    let mut command = Command::new(&tools().mcplex);
    command
        .args(args)
        .arg("--config")
        .arg(gateway.dir.path().join("config.json"))
        .env("MCPLEX_DATA_DIR", gateway.dir.path().join("data"));
    command
}

/// A headless `mcplex auth login SERVER` under way: its printed URL, and the process.
pub struct Login {
    pub url: String,
    child: Child,
}

impl Login {
    pub fn start(gateway: &Gateway, server: &str) -> Login {
        let mut child = mcplex_on(
            gateway,
            &["auth", "login", server, "--no-browser", "--timeout", "60s"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcplex auth login");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the login URL");
        if !line.starts_with("http") {
            let output = child.wait_with_output().expect("login output");
            panic!(
                "no login URL: {line:?}; stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Login {
            url: line.trim().to_owned(),
            child,
        }
    }

    /// The `redirect_uri` the URL names (the login's loopback listener).
    pub fn redirect_uri(&self) -> String {
        url::Url::parse(&self.url)
            .expect("URL")
            .query_pairs()
            .find(|(k, _)| k == "redirect_uri")
            .map(|(_, v)| v.into_owned())
            .expect("redirect_uri")
    }

    /// Follows the URL like a browser and waits for the command: (exit code, stderr).
    pub fn complete(self) -> (i32, String) {
        let reply = follow(&self.url);
        assert_eq!(reply.status, 200, "the callback's answer: {}", reply.body);
        self.wait()
    }

    pub fn wait(self) -> (i32, String) {
        let output = self.child.wait_with_output().expect("login output");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

/// Logs `gateway`'s server in, headless; panics if the login fails.
pub fn log_in(gateway: &Gateway, server: &str) {
    let (code, stderr) = Login::start(gateway, server).complete();
    assert_eq!(code, 0, "login failed: {stderr}");
}

/// The operator's login of `server`, from the gateway waiting for it to the server ready.
pub fn operator_logs_in(gateway: &Gateway, server: &str) {
    wait_status(gateway, server, "needs_login");
    log_in(gateway, server);
    wait_status(gateway, server, "ready");
}

/// The result of calling `py__whoami` as `token` with the Python SDK.
pub fn whoami(gateway: &Gateway, token: &str) -> Value {
    let out = crate::harness::python_client(
        &["--url", &gateway.url, "--token", token],
        "legacy",
        "calls",
        &["py__whoami", "{}"],
    );
    out["outcomes"][0]["result"].clone()
}

/// `mcplex auth login SERVER` expected to fail at once: its stderr.
pub fn failed_login(gateway: &Gateway, server: &str) -> String {
    let output = mcplex_on(
        gateway,
        &["auth", "login", server, "--no-browser", "--timeout", "20s"],
    )
    .output()
    .expect("run mcplex auth login");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The status text of `server` in `/api/v1/servers`.
pub fn api_status(gateway: &Gateway, server: &str) -> String {
    let (_, body) = gateway.api("GET", "/api/v1/servers", "");
    body["servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["name"] == server))
        .and_then(|s| s["status"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Waits until `server`'s status starts with `prefix`.
pub fn wait_status(gateway: &Gateway, server: &str, prefix: &str) -> String {
    eventually(
        &format!("{server} to be {prefix}"),
        Duration::from_secs(60),
        || Some(api_status(gateway, server)).filter(|s| s.starts_with(prefix)),
    )
}

/// The Python server's counters and the bearer headers /mcp was shown.
pub fn stats(port: u16) -> Value {
    let reply = exchange(
        &format!("127.0.0.1:{port}"),
        Version::Http11,
        "GET",
        "/test/stats",
        &[],
        "",
    );
    serde_json::from_str(&reply.body).expect("stats JSON")
}

/// POSTs to one of the Python server's `/test/` controls.
pub fn control(port: u16, path: &str) {
    let reply = exchange(
        &format!("127.0.0.1:{port}"),
        Version::Http11,
        "POST",
        path,
        &[],
        "",
    );
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
}

/// The access tokens the Python server saw on /mcp (each `Bearer <token>`).
pub fn tokens_seen(port: u16) -> Vec<String> {
    stats(port)["bearers"]
        .as_array()
        .expect("bearers")
        .iter()
        .filter_map(Value::as_str)
        .map(|b| b.trim_start_matches("Bearer ").to_owned())
        .collect()
}

/// `mcplex auth status --json`'s rows for callers of `server`.
pub fn connected(gateway: &Gateway, server: &str) -> Vec<String> {
    let output = mcplex_on(gateway, &["auth", "status", "--json"])
        .output()
        .expect("auth status");
    let rows: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    rows.as_array()
        .expect("rows")
        .iter()
        .filter(|row| row["server"] == server && row["status"] == "logged_in")
        .filter_map(|row| row["caller"].as_str().map(str::to_owned))
        .collect()
}
