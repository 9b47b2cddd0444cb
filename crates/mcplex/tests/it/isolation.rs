//! The sandbox of stdio servers (`docs/isolation.md`): a hostile server tries what a malicious
//! package would (read the API key, the token key, the store and the config; read the gateway's
//! environment and memory; write into the data directory; signal the gateway; approve itself)
//! and fails at each, started approved and added while the gateway runs; the same attempts
//! succeed against a server with `"sandbox": false`, so the checks can fail. A server with no
//! network cannot reach the gateway's port, nor can a quarantined one; approving it restarts it
//! with its network, but for a gateway port that asks for no credential.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, eventually, tools};
use crate::upstream_fixtures::fixture_server;

/// A variable in the gateway's environment that no server may see.
const CANARY: (&str, &str) = ("MCPLEX_TEST_CANARY", "canary-7f3a9d1e");

fn hostile(extra: &[&str]) -> Value {
    let mut args = vec!["--hostile"];
    args.extend_from_slice(extra);
    fixture_server("hostile", &args)
}

/// Every attempt on the gateway `gateway` (pid, data directory, config) a probe makes.
fn attempts_on(gateway: &Gateway) -> Value {
    let data = gateway.data_dir();
    let pid = gateway.pid();
    let path = |p: std::path::PathBuf| p.display().to_string();
    json!({
        "read": [
            path(data.join("api_key")),
            path(data.join("token_key")),
            path(data.join("state.db")),
            path(gateway.dir.path().join("config.json")),
            format!("/proc/{pid}/environ"),
            format!("/proc/{pid}/cmdline"),
            format!("/proc/{pid}/mem"),
        ],
        "write": [path(data.clone()), path(data.join("state.db")), path(gateway.dir.path().to_path_buf())],
        "signal": [pid],
        "connect": [gateway.authority()],
        "scan_environ": CANARY.1,
        "approve": {"address": gateway.authority(), "server": "hostile", "key_file": path(data.join("api_key"))},
    })
}

fn probe(gateway: &Gateway, attempts: &Value) -> Value {
    let (status, answer) = gateway.api(
        "POST",
        "/api/v1/call",
        &json!({"name": "hostile__probe", "arguments": attempts}).to_string(),
    );
    assert_eq!(status, 200, "{answer}");
    answer["structuredContent"].clone()
}

/// The outcomes of one kind of attempt: target → `ok: …` or `denied: …`.
fn outcomes<'a>(answer: &'a Value, kind: &str) -> Vec<(&'a String, &'a str)> {
    answer[kind]
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(target, outcome)| (target, outcome.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

fn assert_all_denied(answer: &Value, kind: &str) {
    let outcomes = outcomes(answer, kind);
    assert!(!outcomes.is_empty(), "no {kind} attempt in {answer}");
    for (target, outcome) in outcomes {
        assert!(
            outcome.starts_with("denied"),
            "{kind} {target}: {outcome}\n{answer:#}"
        );
    }
}

fn assert_contained(answer: &Value) {
    for kind in ["read", "write", "signal"] {
        assert_all_denied(answer, kind);
    }
    assert_eq!(answer["scan_environ"], json!([]), "{answer:#}");
    assert!(
        answer["approve"]
            .as_str()
            .is_some_and(|a| a.starts_with("denied: reading the key")),
        "{answer:#}"
    );
    assert_eq!(answer["capabilities"], "0000000000000000", "{answer:#}");
}

fn start(servers: Value) -> Gateway {
    let gateway = Gateway::start_with_env(json!({"mcpServers": servers}), &[], &[CANARY]);
    gateway.wait_ready();
    gateway
}

#[test]
fn a_hostile_server_reaches_none_of_the_gateways_secrets() {
    let gateway = start(json!({"hostile": hostile(&[])}));
    let answer = probe(&gateway, &attempts_on(&gateway));
    assert_contained(&answer);
    // The network stays on by default, but for the gateway's own port, which asks this
    // loopback caller for no credential (see below).
    assert_all_denied(&answer, "connect");
    // In its own PID namespace its own pid is small; the gateway is not in view.
    assert!(
        answer["pid"].as_u64().is_some_and(|pid| pid < 10),
        "{answer:#}"
    );
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    let isolation = &servers["servers"][0]["isolation"];
    assert_eq!(isolation["level"], "full", "{servers:#}");
    assert_eq!(isolation["quarantine"], false, "{servers:#}");
    assert_eq!(isolation["network"], true, "{servers:#}");
}

/// The control: the same attempts against an unconfined server succeed, so the assertions above
/// would fail if the sandbox were missing.
#[test]
fn the_same_server_unconfined_reads_the_key_and_approves_itself() {
    let mut server = hostile(&[]);
    server["sandbox"] = json!(false);
    let gateway = start(json!({"hostile": server}));
    let answer = probe(&gateway, &attempts_on(&gateway));
    let key = gateway.api_key();
    let read = outcomes(&answer, "read");
    assert!(
        read.iter()
            .any(|(target, outcome)| target.ends_with("api_key")
                && outcome.trim_end() == format!("ok: {key}")),
        "{answer:#}"
    );
    assert_ne!(answer["scan_environ"], json!([]), "{answer:#}");
    assert!(
        answer["approve"]
            .as_str()
            .is_some_and(|a| a.contains("200")),
        "{answer:#}"
    );
    // Multipath TCP reaches the gateway's port from outside a sandbox: the refusal the
    // sandboxed test sees is the sandbox's, not this kernel's.
    let mptcp = probe(&gateway, &json!({"connect_mptcp": [gateway.authority()]}));
    assert!(
        outcomes(&mptcp, "connect_mptcp")
            .iter()
            .all(|(_, outcome)| outcome.starts_with("ok")),
        "{mptcp:#}"
    );
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    assert_eq!(
        servers["servers"][0]["isolation"]["level"], "off",
        "{servers:#}"
    );
}

/// What the hostile server wrote at start (`--attack-at-start`), as the gateway kept its stderr.
fn attack_at_start(gateway: &Gateway, server: &str, after: usize) -> Value {
    eventually(
        "the hostile server's attack at start",
        Duration::from_secs(30),
        || {
            let (status, tail) =
                gateway.api("GET", &format!("/api/v1/servers/{server}/stderr"), "");
            (status == 200).then_some(())?;
            tail["lines"]
                .as_array()?
                .iter()
                .filter_map(|line| {
                    line.as_str()?
                        .strip_prefix(mcplex_fixtures::ATTACK_LINE)
                        .and_then(|json| serde_json::from_str::<Value>(json).ok())
                })
                .nth(after)
        },
    )
}

/// Adds `server` as "hostile" beside the fixture by editing the running gateway's config file.
fn add_while_running(gateway: &Gateway, server: Value) {
    let config =
        json!({"mcpServers": {"fixture": fixture_server("fixture", &[]), "hostile": server}});
    std::fs::write(
        gateway.dir.path().join("config.json"),
        serde_json::to_vec_pretty(&config).expect("json"),
    )
    .expect("edit the config");
}

#[test]
fn a_server_added_while_running_is_quarantined_without_network_until_approved() {
    let gateway = start(json!({"fixture": fixture_server("fixture", &[])}));
    let attempts = attempts_on(&gateway);
    let mut attempts_with_cache = attempts.clone();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
    attempts_with_cache["write"]
        .as_array_mut()
        .expect("list")
        .push(json!(format!("{home}/.npm")));
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let elsewhere = elsewhere.local_addr().expect("address").to_string();
    attempts_with_cache["connect"]
        .as_array_mut()
        .expect("list")
        .push(json!(elsewhere));
    add_while_running(
        &gateway,
        hostile(&["--attack-at-start", &attempts_with_cache.to_string()]),
    );

    let first = attack_at_start(&gateway, "hostile", 0);
    assert_contained(&first);
    // Quarantined: no network at all (not even the gateway's port), no writes to the caches.
    assert_all_denied(&first, "connect");
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    let row = servers["servers"]
        .as_array()
        .and_then(|rows| rows.iter().find(|s| s["name"] == "hostile"))
        .cloned()
        .expect("the hostile server's row");
    assert_eq!(row["state"], "quarantined", "{row:#}");
    assert_eq!(row["isolation"]["quarantine"], true, "{row:#}");
    assert_eq!(row["isolation"]["network"], false, "{row:#}");

    // Approved by the operator: restarted under its own policy, with its network and caches;
    // but not the gateway's port, where a caller without a credential is the operator.
    gateway.approve_server("hostile");
    let second = attack_at_start(&gateway, "hostile", 1);
    for (target, outcome) in outcomes(&second, "connect") {
        let closed = *target == gateway.authority();
        assert_eq!(
            outcome.starts_with("denied"),
            closed,
            "{target}: {second:#}"
        );
    }
    assert!(
        outcomes(&second, "write")
            .iter()
            .any(|(target, outcome)| target.ends_with(".npm") && outcome.starts_with("ok")),
        "{second:#}"
    );
    // Still none of the gateway's secrets.
    for kind in ["read", "signal"] {
        assert_all_denied(&second, kind);
    }
}

/// `"sandbox": false` opts an approved server out; it does not let a server added while the
/// gateway runs out of quarantine's confinement.
#[test]
fn an_opted_out_server_is_still_confined_while_quarantined() {
    let gateway = start(json!({"fixture": fixture_server("fixture", &[])}));
    let attempts = attempts_on(&gateway);
    let mut server = hostile(&["--attack-at-start", &attempts.to_string()]);
    server["sandbox"] = json!(false);
    add_while_running(&gateway, server);
    let first = attack_at_start(&gateway, "hostile", 0);
    assert_contained(&first);
    assert_all_denied(&first, "connect");
}

/// On loopback without `require_auth` the gateway takes a caller without a credential for the
/// operator: a sandboxed server with network would call every other server's tools through it
/// (`sandbox: false` ones included). Its port is closed to the servers; with `require_auth` it
/// is open (a server has no credential to present), and so is every other port.
#[test]
fn a_server_with_network_cannot_reach_a_gateway_port_that_asks_for_no_credential() {
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let elsewhere = elsewhere.local_addr().expect("address").to_string();
    for require_auth in [false, true] {
        let gateway = Gateway::start_with_env(
            json!({"mcpServers": {"hostile": hostile(&[])}, "require_auth": require_auth}),
            &[],
            &[CANARY],
        );
        gateway.wait_ready();
        let (status, answer) = gateway.api(
            "POST",
            "/api/v1/call",
            &json!({"name": "hostile__probe", "arguments": {
                "connect": [gateway.authority(), elsewhere],
                "connect_mptcp": [gateway.authority(), elsewhere]
            }})
            .to_string(),
        );
        assert_eq!(status, 200, "{answer}");
        let answer = &answer["structuredContent"];
        let at = |target: &str| {
            answer["connect"][target]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(
            at(gateway.authority()).starts_with("denied"),
            !require_auth,
            "require_auth {require_auth}: {answer:#}"
        );
        assert!(at(&elsewhere).starts_with("ok"), "{answer:#}");
        // Multipath TCP falls back to TCP, and Landlock's rules check TCP sockets alone: no
        // sandboxed server may open one.
        assert_all_denied(answer, "connect_mptcp");
        let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
        let mechanisms = servers["servers"][0]["isolation"]["mechanisms"].to_string();
        assert_eq!(
            mechanisms.contains("the gateway's port without a credential"),
            !require_auth,
            "{mechanisms}"
        );
    }
}

#[test]
fn a_server_without_network_cannot_reach_the_gateways_port() {
    let mut server = hostile(&[]);
    server["sandbox"] = json!({"network": false});
    let gateway = start(json!({"hostile": server}));
    let answer = probe(
        &gateway,
        &json!({"connect": [gateway.authority(), "127.0.0.1:22"]}),
    );
    assert_all_denied(&answer, "connect");
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    assert_eq!(
        servers["servers"][0]["isolation"]["network"], false,
        "{servers:#}"
    );
}

/// `mcplex call` run as an unprivileged user (uid 65534) on `config`, with the data directory
/// and the home directory owned by that user: the tool's result.
fn call_as_nobody(dir: &std::path::Path, config: &Value, attempts: &Value) -> Value {
    use std::os::unix::process::CommandExt;
    const NOBODY: u32 = 65534;
    let config_file = dir.join("config.json");
    std::fs::write(&config_file, config.to_string()).expect("config");
    for path in [
        dir.to_path_buf(),
        dir.join("data"),
        dir.join("home"),
        config_file.clone(),
    ] {
        std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).expect("chown");
    }
    let output = std::process::Command::new(&tools().mcplex)
        .args(["call", "--config"])
        .arg(&config_file)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["hostile:probe", "--args", &attempts.to_string()])
        .env_clear()
        .env("HOME", dir.join("home"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env(CANARY.0, CANARY.1)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .expect("run mcplex call");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_str(&stdout).expect("a JSON result");
    answer["structuredContent"].clone()
}

#[test]
fn a_gateway_run_by_an_unprivileged_user_confines_its_servers_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    for sub in ["data", "home"] {
        std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
    }
    let key = dir.path().join("data/api_key");
    std::fs::write(&key, "mcplex_admin_unprivileged").expect("key");
    std::os::unix::fs::chown(&key, Some(65534), Some(65534)).expect("chown");
    let path = |p: std::path::PathBuf| p.display().to_string();
    let attempts = json!({
        "read": [path(key.clone()), path(dir.path().join("config.json"))],
        "write": [path(dir.path().join("data")), path(dir.path().to_path_buf())],
        "scan_environ": CANARY.1,
    });
    let confined = call_as_nobody(
        dir.path(),
        &json!({"mcpServers": {"hostile": hostile(&[])}}),
        &attempts,
    );
    for kind in ["read", "write"] {
        assert_all_denied(&confined, kind);
    }
    assert_eq!(confined["scan_environ"], json!([]), "{confined:#}");
    assert!(
        confined["pid"].as_u64().is_some_and(|pid| pid < 10),
        "{confined:#}"
    );

    let mut unconfined = hostile(&[]);
    unconfined["sandbox"] = json!(false);
    let open = call_as_nobody(
        dir.path(),
        &json!({"mcpServers": {"hostile": unconfined}}),
        &attempts,
    );
    assert!(
        outcomes(&open, "read")
            .iter()
            .any(|(target, outcome)| target.ends_with("api_key")
                && *outcome == "ok: mcplex_admin_unprivileged"),
        "{open:#}"
    );
}

#[test]
fn limits_apply_and_a_refusal_reaches_the_operator_with_its_fix() {
    let mut server = hostile(&[]);
    server["sandbox"] = json!({"memory_mb": 1024, "processes": 64, "open_files": 256});
    let gateway = start(json!({"hostile": server}));
    let answer = probe(&gateway, &json!({"write": ["/etc"]}));
    assert_all_denied(&answer, "write");
    let limits = &answer["limits"];
    assert_eq!(limits["Max open files"], "256", "{answer:#}");
    assert_eq!(
        limits["Max data size"],
        (1024u64 << 20).to_string(),
        "{answer:#}"
    );
    assert_eq!(limits["Max processes"], "64", "{answer:#}");
    // The server logged the refusal: the operator sees it beside the server, with the fix.
    let denied = eventually(
        "the refusal in the server's isolation",
        Duration::from_secs(10),
        || {
            let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
            servers["servers"][0]["isolation"]["denied"]
                .as_str()
                .map(str::to_owned)
        },
    );
    assert!(denied.contains("/etc"), "{denied}");
    let (_, tail) = gateway.api("GET", "/api/v1/servers/hostile/stderr", "");
    assert!(
        tail["lines"]
            .as_array()
            .is_some_and(|lines| lines.iter().any(|l| l
                .as_str()
                .is_some_and(|l| l.contains("\"sandbox\": {\"write\"")))),
        "{tail:#}"
    );
}

/// `mcplex serve --stdio` (one gateway per client, spawned by it) confines its servers the
/// same way: the hostile server, reached through the official Python SDK over stdio, reads and
/// writes none of the gateway's files, sees only its own PID namespace and holds no capability.
#[test]
fn a_gateway_serving_one_client_over_stdio_confines_its_servers_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"hostile": hostile(&[])}}).to_string(),
    )
    .expect("config");
    let argv = json!([
        tools().mcplex,
        "serve",
        "--stdio",
        "--config",
        config,
        "--data-dir",
        data
    ])
    .to_string();
    let path = |p: std::path::PathBuf| p.display().to_string();
    let attempts = json!({
        "read": [path(data.join("state.db")), path(data.join("token_key")), path(config.clone())],
        "write": [path(data.clone()), path(dir.path().to_path_buf())],
    });
    let out = crate::harness::python_client(
        &["--stdio", &argv],
        "legacy",
        "call",
        &["hostile__probe", &attempts.to_string()],
    );
    let answer = &out["result"]["structuredContent"];
    for kind in ["read", "write"] {
        assert_all_denied(answer, kind);
    }
    assert!(
        answer["pid"].as_u64().is_some_and(|pid| pid < 10),
        "{answer:#}"
    );
    assert_eq!(answer["capabilities"], "0000000000000000", "{answer:#}");
}

/// The API key file a gateway is given (`--api-key-file`, the chart's Secret) is hidden as its
/// config is: a hostile server cannot read it, an unconfined one can (so the check can fail).
/// A key exported for the CLI (`MCPLEX_API_KEY`) is only ever presented: the store's key is the
/// file's, and the exported one opens nothing.
#[test]
fn the_api_key_file_is_hidden_from_servers_and_a_key_exported_for_the_cli_replaces_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key_file = dir.path().join("api-key");
    let given = "mcplex_given_0123456789abcdef0123456789abcdef";
    std::fs::write(&key_file, format!("{given}\n")).expect("key file");
    let exported = "mcplex_exported_for_the_cli_0123456789abcdef";
    let read_the_file = |sandbox: bool| {
        let mut server = hostile(&[]);
        server["sandbox"] = json!(sandbox);
        let gateway = Gateway::start_with_env(
            json!({"mcpServers": {"hostile": server}}),
            &["--api-key-file", &key_file.display().to_string()],
            &[CANARY, ("MCPLEX_API_KEY", exported)],
        );
        gateway.wait_ready();
        assert_eq!(gateway.api_key(), given, "the store took the file's key");
        let (status, _) = gateway.api_as(exported, "GET", "/api/v1/tokens", "");
        assert_eq!(status, 401, "the exported key opens nothing");
        let answer = probe(&gateway, &json!({"read": [key_file.display().to_string()]}));
        outcomes(&answer, "read")
            .first()
            .map(|(_, outcome)| outcome.to_string())
            .unwrap_or_default()
    };
    let confined = read_the_file(true);
    assert!(confined.starts_with("denied"), "{confined}");
    let unconfined = read_the_file(false);
    assert_eq!(unconfined.trim_end(), format!("ok: {given}"));
}
