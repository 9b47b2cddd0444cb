//! Issue 14, the control plane: the store is the truth, and every running gateway follows it.
//! The CLI finds a running gateway through the store (whatever set its address), and a write
//! made by any process (the CLI through the API or on the store, another gateway) is in force on
//! every gateway of that store within a second, without a restart.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{
    Gateway, eventually, fixture_server, free_port, names, rpc, signal, tools, wait_with_timeout,
};

/// How long a write may take to be in force everywhere. The gateway polls its store every
/// 100 ms; the margin is for a loaded test machine (`mcplex bench` measures the real figure).
pub(crate) const FOLLOW_LIMIT: Duration = Duration::from_secs(3);

/// How the listen address reaches `mcplex serve`.
#[derive(Debug, Clone, Copy)]
enum ListenSetBy {
    ConfigFile,
    Flag,
    Env,
}

/// A gateway started by this module, so that its address can come from anywhere.
struct Served {
    child: Child,
    authority: String,
    dir: tempfile::TempDir,
}

impl Served {
    fn start(servers: &Value, how: ListenSetBy) -> Served {
        let dir = tempfile::tempdir().expect("tempdir");
        let authority = format!("127.0.0.1:{}", free_port());
        let mut config = json!({"mcpServers": servers, "data_dir": dir.path().join("data")});
        let mut command = Command::new(&tools().mcplex);
        command
            .args(["serve", "--config"])
            .arg(dir.path().join("config.json"));
        match how {
            ListenSetBy::ConfigFile => config["listen"] = json!(authority),
            ListenSetBy::Flag => {
                command.args(["--listen", &authority]);
            }
            ListenSetBy::Env => {
                command.env("MCPLEX_LISTEN", &authority);
            }
        }
        std::fs::write(dir.path().join("config.json"), config.to_string()).expect("config");
        let log = std::fs::File::create(dir.path().join("gateway.log")).expect("log");
        let mut child = command
            .env_remove("MCPLEX_DATA_DIR")
            .env("MCPLEX_LOG", "info,mcplex=debug")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("spawn mcplex");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the listening line");
        assert!(line.contains(&authority), "{how:?}: {line}");
        Served {
            child,
            authority,
            dir,
        }
    }

    /// A CLI config on the same store, with no `listen` (or a wrong one): the CLI must find the
    /// gateway through the store, not through the config.
    fn cli_config(&self, servers: &Value) -> PathBuf {
        let path = self.dir.path().join("cli.json");
        let config = json!({
            "listen": "127.0.0.1:1",
            "data_dir": self.dir.path().join("data"),
            "mcpServers": servers,
        });
        std::fs::write(&path, config.to_string()).expect("cli config");
        path
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("gateway.log")).unwrap_or_default()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        signal(self.child.id(), libc::SIGTERM);
        if wait_with_timeout(&mut self.child, Duration::from_secs(10)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `mcplex` with `MCPLEX_VIA` set: (exit code, stdout, stderr).
pub(crate) fn cli(via: &str, args: &[&str]) -> (i32, String, String) {
    cli_with_key(via, args, None)
}

/// [`cli`], given the API key (a PostgreSQL store keeps only its hash) in `MCPLEX_API_KEY`.
pub(crate) fn cli_with_key(via: &str, args: &[&str], key: Option<&str>) -> (i32, String, String) {
    let mut command = Command::new(&tools().mcplex);
    command
        .args(args)
        .env("MCPLEX_VIA", via)
        .env_remove("MCPLEX_DATA_DIR")
        .env_remove("MCPLEX_API_KEY");
    if let Some(key) = key {
        command.env("MCPLEX_API_KEY", key);
    }
    let output = command.output().expect("run mcplex");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A stateless `tools/list` on `authority`: the listed names, or the HTTP status when refused.
pub(crate) fn list_at(authority: &str, token: Option<&str>) -> Result<Vec<String>, u16> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }}})
    .to_string();
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth));
    }
    let (status, answer) = crate::harness::http_send(authority, "POST", "/mcp", &headers, &body);
    if status != 200 {
        return Err(status);
    }
    let data = answer
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or(&answer);
    let answer: Value = serde_json::from_str(data).expect("json");
    Ok(names(&answer["result"]))
}

/// Waits until `check` holds, within [`FOLLOW_LIMIT`] of now.
pub(crate) fn followed(what: &str, mut check: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    eventually(what, FOLLOW_LIMIT, || check().then_some(()));
    started.elapsed()
}

pub(crate) fn token_create(via: &str, config: &Path, name: &str) -> String {
    token_create_with_key(via, config, name, None)
}

/// [`token_create`] with the API key given to the CLI.
pub(crate) fn token_create_with_key(
    via: &str,
    config: &Path,
    name: &str,
    key: Option<&str>,
) -> String {
    let config = config.display().to_string();
    let (code, token, err) = cli_with_key(
        via,
        &[
            "token",
            "create",
            "--config",
            &config,
            "--name",
            name,
            "--permissions",
            "read,write",
        ],
        key,
    );
    assert_eq!(code, 0, "{err}");
    token.trim().to_owned()
}

#[test]
fn the_cli_reaches_a_running_gateway_however_its_address_was_set_through_api_or_store() {
    let servers = json!({"a": fixture_server("a", &[])});
    for how in [ListenSetBy::ConfigFile, ListenSetBy::Flag, ListenSetBy::Env] {
        let gateway = Served::start(&servers, how);
        let config = gateway.cli_config(&servers);
        let config_arg = config.display().to_string();
        let authority = gateway.authority.clone();
        eventually("the gateway is ready", Duration::from_secs(30), || {
            list_at(&authority, None)
                .ok()
                .filter(|names| names.contains(&"a__echo".to_owned()))
        });

        // servers list shows the live status, not "not running".
        let (code, out, err) = cli(
            "auto",
            &["servers", "list", "--config", &config_arg, "--json"],
        );
        assert_eq!(code, 0, "{how:?}: {err}");
        assert!(
            out.contains(r#""status": "ready""#) && err.contains(&authority),
            "{how:?}: live status through the gateway at {authority}: {out} {err}"
        );

        for via in ["api", "store"] {
            let context = format!("{how:?}, via {via}");
            let token = token_create(via, &config, &format!("t-{via}"));
            followed(&format!("{context}: the new token is accepted"), || {
                list_at(&authority, Some(&token)).is_ok()
            });

            let (code, out, err) = cli(
                via,
                &["servers", "quarantine", "--config", &config_arg, "a"],
            );
            assert_eq!(code, 0, "{context}: {err}");
            assert!(
                !out.contains("no gateway running"),
                "{context}: the CLI must not claim no gateway runs: {out}"
            );
            followed(&format!("{context}: the quarantine is served"), || {
                list_at(&authority, Some(&token))
                    .is_ok_and(|names| !names.contains(&"a__echo".to_owned()))
            });
            let (code, _, err) = cli(via, &["servers", "approve", "--config", &config_arg, "a"]);
            assert_eq!(code, 0, "{context}: {err}");
            followed(&format!("{context}: the approval is served"), || {
                list_at(&authority, Some(&token))
                    .is_ok_and(|names| names.contains(&"a__echo".to_owned()))
            });

            let (code, _, err) = cli(via, &["tools", "block", "--config", &config_arg, "a:echo"]);
            assert_eq!(code, 0, "{context}: {err}");
            followed(&format!("{context}: the block is served"), || {
                list_at(&authority, Some(&token))
                    .is_ok_and(|names| !names.contains(&"a__echo".to_owned()))
            });
            let (code, _, err) = cli(
                via,
                &["tools", "approve", "--config", &config_arg, "a:echo"],
            );
            assert_eq!(code, 0, "{context}: {err}");
            followed(&format!("{context}: the tool approval is served"), || {
                list_at(&authority, Some(&token))
                    .is_ok_and(|names| names.contains(&"a__echo".to_owned()))
            });

            let (code, out, err) = cli(
                via,
                &[
                    "token",
                    "revoke",
                    "--config",
                    &config_arg,
                    &format!("t-{via}"),
                ],
            );
            assert_eq!(code, 0, "{context}: {err}");
            if via == "store" {
                assert!(
                    out.contains("applies it within 1 s"),
                    "{context}: says what it did: {out}"
                );
            }
            followed(&format!("{context}: the revoked token is refused"), || {
                list_at(&authority, Some(&token)) == Err(401)
            });
        }
        drop(gateway);
    }
}

#[test]
fn two_gateways_on_one_store_follow_each_other() {
    let servers = json!({"a": fixture_server("a", &[])});
    let first = Gateway::start(json!({"mcpServers": servers}));
    let data = first.dir.path().join("data").display().to_string();
    let second = Gateway::start_with(json!({"mcpServers": servers}), &["--data-dir", &data]);
    first.wait_ready();
    second.wait_ready();
    // One store, one API key: the second gateway's key is the first's.
    let key = format!("Bearer {}", first.api_key());
    let api = |gateway: &Gateway, method: &str, path: &str| {
        crate::harness::http_send(
            gateway.authority(),
            method,
            path,
            &[("Authorization", &key)],
            "",
        )
    };

    // A token made on one is accepted by the other; revoked on one, refused by the other.
    let token = first.create_token(json!({"name": "shared", "permissions": "read,write"}));
    followed("the other gateway accepts the token", || {
        list_at(second.authority(), Some(&token)).is_ok()
    });
    let (status, body) = api(&second, "DELETE", "/api/v1/tokens/shared");
    assert_eq!(status, 200, "{body}");
    followed("the first gateway refuses the revoked token", || {
        list_at(first.authority(), Some(&token)) == Err(401)
    });

    // A quarantine decided on the second is served by the first.
    let (status, body) = api(&second, "POST", "/api/v1/servers/a/quarantine");
    assert_eq!(status, 200, "{body}");
    followed("the first gateway withholds the quarantined server", || {
        list_at(first.authority(), None).is_ok_and(|names| !names.contains(&"a__echo".to_owned()))
    });
    let (status, body) = api(&first, "POST", "/api/v1/servers/a/approve");
    assert_eq!(status, 200, "{body}");
    followed("the second gateway serves the approved server", || {
        list_at(second.authority(), None).is_ok_and(|names| names.contains(&"a__echo".to_owned()))
    });
    let (status, answer) = rpc(&second, "/mcp", None, "tools/list", json!({}));
    assert_eq!(status, 200, "{answer}");
}

#[test]
fn a_stopped_gateway_leaves_the_registry_and_the_cli_says_so() {
    let servers = json!({"a": fixture_server("a", &[])});
    let gateway = Served::start(&servers, ListenSetBy::Flag);
    let config = gateway.cli_config(&servers).display().to_string();
    let log_dir = gateway.dir.path().to_owned();
    let mut gateway = gateway;
    signal(gateway.child.id(), libc::SIGTERM);
    wait_with_timeout(&mut gateway.child, Duration::from_secs(20)).expect("exits");
    assert!(log_dir.exists(), "{}", gateway.log());
    let (code, out, err) = cli("auto", &["servers", "quarantine", "--config", &config, "a"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("no gateway running; saved for its next start"),
        "the gateway deregistered when it stopped: {out}"
    );
    let (code, _, err) = cli("api", &["servers", "approve", "--config", &config, "a"]);
    assert!(
        code != 0 && err.contains("no running gateway"),
        "MCPLEX_VIA=api refuses without a gateway: {err}"
    );
}

/// `tools show` as JSON: (pinned hash, observed hash, state).
fn show(config: &str) -> (Option<String>, Option<String>, String) {
    let (code, out, err) = cli(
        "auto",
        &[
            "tools",
            "show",
            "--config",
            config,
            "fixture:weather",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let review: Value = serde_json::from_str(&out).expect("json");
    let hash = |which: &str| review[which]["hash"].as_str().map(str::to_owned);
    (
        hash("pinned"),
        hash("observed"),
        review["state"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn approval_pins_what_the_operator_saw_and_refuses_a_definition_that_changed_again() {
    let servers = json!({"fixture": fixture_server("fixture", &["--rug-pull"])});
    let gateway = Served::start(&servers, ListenSetBy::Flag);
    let config = gateway.cli_config(&servers).display().to_string();
    let authority = gateway.authority.clone();
    eventually("weather is served", Duration::from_secs(30), || {
        list_at(&authority, None)
            .ok()
            .filter(|names| names.contains(&"fixture__weather".to_owned()))
    });
    // What the operator reviews: approved, the observed definition is the pinned one.
    let (pinned, observed, state) = eventually("the definition is recorded", FOLLOW_LIMIT, || {
        let review = show(&config);
        review.1.is_some().then_some(review)
    });
    assert_eq!(state, "approved");
    assert_eq!(pinned, observed);
    let seen = observed.expect("observed");

    // The rug is pulled: the gateway withholds the tool and records the new definition.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "fixture__weather", "arguments": {"city": "Oslo"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let (status, answer) = crate::harness::http_send(
        &authority,
        "POST",
        "/mcp",
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "fixture__weather"),
        ],
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    let changed = eventually("the change is recorded", Duration::from_secs(10), || {
        let (_, observed, state) = show(&config);
        observed.filter(|o| *o != seen && state.starts_with("changed"))
    });
    let (code, out, err) = cli(
        "auto",
        &["tools", "show", "--config", &config, "fixture:weather"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&seen) && out.contains(&changed) && out.contains("<IMPORTANT>"),
        "show prints both definitions and their hashes: {out}"
    );

    // An approval of what was shown before the change is refused, through the API and the store.
    for via in ["api", "store"] {
        let (code, _, err) = cli(
            via,
            &[
                "tools",
                "approve",
                "--config",
                &config,
                "fixture:weather",
                "--hash",
                &seen,
            ],
        );
        assert!(
            code != 0 && err.contains("changed since it was shown"),
            "via {via}: {err}"
        );
    }
    assert!(
        list_at(&authority, None)
            .is_ok_and(|names| !names.contains(&"fixture__weather".to_owned())),
        "still withheld"
    );
    // Approving the definition shown now pins exactly it.
    let (code, out, err) = cli(
        "store",
        &[
            "tools",
            "approve",
            "--config",
            &config,
            "fixture:weather",
            "--hash",
            &changed,
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&changed[..12]), "{out}");
    followed("the approved definition is served", || {
        list_at(&authority, None).is_ok_and(|names| names.contains(&"fixture__weather".to_owned()))
    });
    let (pinned, _, state) = show(&config);
    assert_eq!(
        (pinned.as_deref(), state.as_str()),
        (Some(changed.as_str()), "approved")
    );
}
