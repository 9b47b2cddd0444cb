//! Issue 15, secrets and environment: URL credentials and configured secrets redacted from every
//! text that leaves the process, the upstream environment allow-list, the state file's mode, and
//! withheld tools called by the display name an agent already has.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    Gateway, call_raw, eventually, fixture_server, free_port, http_fixture, pull_the_rug, tools,
};

/// `mcplex` with extra environment variables: (exit code, stdout + stderr).
fn mcplex_with_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let output = Command::new(&tools().mcplex)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run mcplex");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

/// Writes `config` into `dir` for the one-shot CLI commands; its path.
fn config_file(dir: &Path, config: &Value) -> String {
    let path = dir.join("cli.json");
    std::fs::write(&path, config.to_string()).expect("write the config");
    path.display().to_string()
}

/// Panics naming the place when any of `secrets` appears in `text`.
#[track_caller]
fn assert_clean(place: &str, text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{place} shows the secret {secret:?}:\n{text}"
        );
    }
}

/// Everything a gateway shows about its servers: the log, `/readyz`, the management API.
fn everything_shown(gateway: &Gateway) -> Vec<(&'static str, String)> {
    let (_, readyz) = gateway.get("/readyz");
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    let (_, tools) = gateway.api("GET", "/api/v1/tools", "");
    vec![
        ("the log", gateway.log()),
        ("/readyz", readyz),
        ("/api/v1/servers", servers.to_string()),
        ("/api/v1/tools", tools.to_string()),
    ]
}

#[test]
fn url_credentials_and_secrets_an_upstream_echoes_never_leave_the_gateway() {
    let (_upstream, port) = http_fixture(&["--deny-echo"]);
    let closed = free_port();
    let servers = json!({
        // User info and a query key in the URL; a secret header. The upstream's 401 page echoes
        // the query, the header and the Basic credential the URL's user info becomes.
        "echoing": {
            "url": format!("http://admin:pw-0a1b2c3d@127.0.0.1:{port}/mcp?api_key=qk-4e5f6a7b"),
            "headers": {"X-Api-Key": "hk-8c9d0e1f"}
        },
        "bearer": {
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"Authorization": "Bearer bt-2a3b4c5d"}
        },
        // Nobody listens: the HTTP client's own error names the URL.
        "refused": {
            "url": format!("http://root:pw-6e7f8a9b@127.0.0.1:{closed}/mcp?token=qt-0c1d2e3f")
        }
    });
    let secrets = [
        "pw-0a1b2c3d",
        "qk-4e5f6a7b",
        "hk-8c9d0e1f",
        "bt-2a3b4c5d",
        "pw-6e7f8a9b",
        "qt-0c1d2e3f",
        // base64("admin:pw-0a1b2c3d"), the Authorization: Basic the echoing server sees.
        "YWRtaW46cHctMGExYjJjM2Q=",
    ];
    let gateway = Gateway::start(json!({"mcpServers": servers}));
    eventually(
        "every server to have failed at least once",
        Duration::from_secs(30),
        || {
            let (_, body) = gateway.api("GET", "/api/v1/servers", "");
            let failed = body["servers"].as_array().is_some_and(|servers| {
                servers.len() == 3
                    && servers.iter().all(|s| {
                        s["status"]
                            .as_str()
                            .is_some_and(|status| status.starts_with("unhealthy"))
                    })
            });
            failed.then_some(())
        },
    );
    // The upstream's echo did reach the gateway: only the secrets in it are gone.
    let log = gateway.log();
    assert!(
        log.contains("unauthorized:") && log.contains("[redacted]"),
        "{log}"
    );
    for (place, text) in everything_shown(&gateway) {
        assert_clean(place, &text, &secrets);
    }
    let (_, readyz) = gateway.get("/readyz");
    assert!(readyz.contains("unhealthy"), "{readyz}");

    // The one-shot CLI commands, which connect on their own.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_file(dir.path(), &json!({"mcpServers": servers}));
    let (_, listed) = mcplex_with_env(&["tools", "list", "--json", "--config", &config], &[]);
    assert!(listed.contains("unauthorized"), "{listed}");
    assert_clean("tools list --json", &listed, &secrets);
    for tool in ["echoing:anything", "refused:anything"] {
        let (code, called) = mcplex_with_env(&["call", tool, "--config", &config], &[]);
        assert_ne!(code, 0, "{called}");
        assert_clean("mcplex call", &called, &secrets);
    }
}

#[test]
fn an_env_value_an_upstream_prints_on_stdout_is_not_logged() {
    let script = concat!(
        r#"echo "plain line with $LEAK"; "#,
        r#"echo "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"json $LEAK\"}}"; "#,
        r#"exec "$0" "$@""#
    );
    let fixture = tools().fixture.display().to_string();
    let server = json!({
        "command": "sh",
        "args": ["-c", script, fixture, "--name", "printer"],
        "env": {"LEAK": "env-secret-5a6b7c"}
    });
    let gateway = Gateway::start(json!({"mcpServers": {"printer": server}}));
    gateway.wait_ready();
    eventually(
        "the stdout lines to be logged",
        Duration::from_secs(10),
        || {
            let log = gateway.log();
            (log.contains("not JSON-RPC") && log.contains("log message outside a call"))
                .then_some(())
        },
    );
    let log = gateway.log();
    assert!(log.contains("plain line with [redacted]"), "{log}");
    for (place, text) in everything_shown(&gateway) {
        assert_clean(place, &text, &["env-secret-5a6b7c"]);
    }
}

/// Runs `mcplex tools list` on one stdio server that reports three variables on stderr, with
/// `inherit_env` as given and extra variables in the gateway's environment; the report line.
fn environment_seen(inherit_env: Option<Value>) -> String {
    let script = concat!(
        r#"echo "seen aws=[$AWS_SECRET_ACCESS_KEY] marker=[$IT_MARKER] key=[$MCPLEX_API_KEY] "#,
        r#"path=[${PATH:+set}] home=[${HOME:+set}] own=[$OWN]" >&2; "#,
        r#"exec "$0" "$@""#
    );
    let mut server = json!({
        "command": "sh",
        "args": ["-c", script, tools().fixture.display().to_string(), "--name", "env"],
        "env": {"OWN": "own-value"}
    });
    if let Some(inherit_env) = inherit_env {
        server["inherit_env"] = inherit_env;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_file(dir.path(), &json!({"mcpServers": {"env": server}}));
    let (code, output) = mcplex_with_env(
        &["tools", "list", "--config", &config],
        &[
            ("MCPLEX_LOG", "info"),
            ("AWS_SECRET_ACCESS_KEY", "aws-from-gateway"),
            ("IT_MARKER", "marker-from-gateway"),
            (
                "MCPLEX_API_KEY",
                "mcplex_admin_given_by_the_operator_0123456789",
            ),
        ],
    );
    assert_eq!(code, 0, "{output}");
    output
        .lines()
        .find_map(|line| line.split_once("seen ").map(|(_, seen)| seen.to_owned()))
        .unwrap_or_else(|| panic!("no report line in:\n{output}"))
}

#[track_caller]
fn assert_seen(seen: &str, expected: &[&str]) {
    for part in expected {
        assert!(seen.contains(part), "{part} in {seen}");
    }
}

#[test]
fn upstreams_get_the_allow_listed_environment_plus_what_inherit_env_adds() {
    // The server's own env is set (and, being configured, redacted from its stderr); the
    // gateway's own variables (its admin key here) are never passed, whatever inherit_env says.
    let always = ["path=[set]", "home=[set]", "own=[[redacted]]", "key=[]"];
    let seen = environment_seen(None);
    assert_seen(&seen, &always);
    assert_seen(&seen, &["aws=[]", "marker=[]"]);
    // What an inherit_env list names is passed, and hidden like the server's own env wherever
    // the server prints it; of the whole environment, what is named like a credential is.
    let seen = environment_seen(Some(json!(["IT_*", "MCPLEX_*"])));
    assert_seen(&seen, &always);
    assert_seen(&seen, &["aws=[]", "marker=[[redacted]]"]);
    let seen = environment_seen(Some(json!(true)));
    assert_seen(&seen, &always);
    assert_seen(&seen, &["aws=[[redacted]]", "marker=[marker-from-gateway]"]);
}

#[test]
fn the_state_database_is_private_and_an_open_data_directory_is_reported() {
    let gateway = Gateway::start(json!({"mcpServers": {"a": fixture_server("a", &[])}}));
    gateway.wait_ready();
    gateway.create_token(json!({"name": "t", "permissions": "read"}));
    let data = gateway.dir.path().join("data");
    for file in ["state.db", "state.db-wal", "state.db-shm"] {
        let path = data.join(file);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    drop(gateway);

    // A data directory others may read: the CLI (which opens the database) says so.
    let dir = tempfile::tempdir().expect("tempdir");
    let open = dir.path().join("open");
    std::fs::create_dir(&open).expect("mkdir");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = config_file(
        dir.path(),
        &json!({"listen": format!("127.0.0.1:{}", free_port()), "data_dir": open, "mcpServers": {}}),
    );
    let (code, output) = mcplex_with_env(&["token", "list", "--config", &config], &[]);
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("accessible by other users"), "{output}");
    let mode = std::fs::metadata(open.join("state.db"))
        .expect("state.db")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_withheld_tool_called_by_its_display_name_gives_its_reason_within_scope_only() {
    let mut quarantined = fixture_server("q", &[]);
    quarantined["quarantined"] = json!(true);
    let gateway = Gateway::start(json!({
        "mcpServers": {
            "fixture": fixture_server("fixture", &["--rug-pull"]),
            "q": quarantined,
            "b": fixture_server("b", &[])
        }
    }));
    gateway.wait_ready();
    pull_the_rug(&gateway);
    // By the name the agent already has, as by canonical id: the reason.
    let by_name = call_raw(
        &gateway,
        "/mcp",
        None,
        "fixture__weather",
        json!({"city": "Paris"}),
    );
    assert!(by_name.contains("tool_changed"), "{by_name}");
    let quarantined = call_raw(&gateway, "/mcp", None, "q__echo", json!({}));
    assert!(quarantined.contains("server_quarantined"), "{quarantined}");
    let via_call_tool = call_raw(
        &gateway,
        "/mcp/call",
        None,
        "call_tool",
        json!({"name": "fixture__weather", "arguments": {}}),
    );
    assert!(via_call_tool.contains("tool_changed"), "{via_call_tool}");

    // Outside the caller's scope: byte for byte what a name that never existed gets.
    let token = gateway
        .create_token(json!({"name": "b-only", "servers": ["b"], "permissions": "read,write"}));
    for (hidden, ghost) in [
        ("fixture__weather", "zz__weather"),
        ("q__echo", "zz__echo"),
        ("fixture:weather", "zz:weather"),
    ] {
        let hidden_answer = call_raw(&gateway, "/mcp", Some(&token), hidden, json!({}));
        let ghost_answer = call_raw(&gateway, "/mcp", Some(&token), ghost, json!({}));
        assert_eq!(
            hidden_answer.replace(hidden, "NAME"),
            ghost_answer.replace(ghost, "NAME"),
            "{hidden}"
        );
    }
}
