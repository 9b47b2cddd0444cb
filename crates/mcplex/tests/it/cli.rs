//! The command line without a running gateway: tools list, call, config check, and the demo.

use serde_json::{Value, json};

use crate::harness::{
    Gateway, fixture_server, marked_fixture_server, mcplex, names, python_client, tools,
};

fn config_file(dir: &tempfile::TempDir, config: &Value) -> String {
    let path = dir.path().join("config.json");
    std::fs::write(&path, config.to_string()).expect("write");
    path.display().to_string()
}

#[test]
fn tools_list_and_call_work_against_a_config_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_file(
        &dir,
        &json!({"mcpServers": {"fixture": fixture_server("fixture", &[]), "time": {"command": tools().time_server}}}),
    );
    let (code, stdout, stderr) = mcplex(&["tools", "list", "--config", &config, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).expect("json");
    let ids: Vec<&str> = listed
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert!(
        ids.contains(&"fixture:echo") && ids.contains(&"time:get_current_time"),
        "{ids:?}"
    );

    let (code, stdout, _) = mcplex(&["tools", "list", "--config", &config, "--server", "time"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("time:convert_time") && !stdout.contains("fixture:"),
        "{stdout}"
    );

    // By canonical id, or by the display name a listing shows.
    let sum = |tool: &str, arguments: &str| {
        let (code, stdout, stderr) =
            mcplex(&["call", tool, "--args", arguments, "--config", &config]);
        assert_eq!(code, 0, "{stderr}");
        let result: Value = serde_json::from_str(&stdout).expect("json");
        result["structuredContent"]["sum"].clone()
    };
    assert_eq!(sum("fixture:add", r#"{"a": 20, "b": 22}"#), json!(42.0));
    assert_eq!(sum("fixture__add", r#"{"a": 1, "b": 2}"#), json!(3.0));
    let (code, _, _) = mcplex(&["call", "fixture:fail", "--config", &config]);
    assert_eq!(code, 1, "isError is a failing exit");
    let (code, _, stderr) = mcplex(&["call", "nosuchtool", "--config", &config]);
    assert_eq!(code, 2);
    assert!(stderr.contains("nosuchtool"), "{stderr}");
}

#[test]
fn config_check_names_the_key_the_file_and_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = config_file(
        &dir,
        &json!({"mcpServers": {"a": {"command": "sh"}}, "colour": "blue"}),
    );
    let (code, stdout, _) = mcplex(&["config", "check", "--config", &good]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("ok: 1 server(s)") && stdout.contains("colour: unknown key"),
        "{stdout}"
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"mcpServers": {"a": {"command": "x", "call_timeout": "soon"}}}"#,
    )
    .expect("write");
    let (code, _, stderr) = mcplex(&["config", "check", "--config", &bad.display().to_string()]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("bad.json: mcpServers.a.call_timeout: invalid duration \"soon\""),
        "{stderr}"
    );
}

/// `config check` on `config`: its exit code, stdout and stderr.
fn check(dir: &tempfile::TempDir, config: &Value) -> (i32, String, String) {
    mcplex(&["config", "check", "--config", &config_file(dir, config)])
}

#[test]
fn config_check_names_a_misspelled_key_with_the_key_it_was_meant_to_be() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Inside a server: refused (exit 2) with the near key, before "needs command or url".
    let (code, _, stderr) = check(&dir, &json!({"mcpServers": {"a": {"comand": "sh"}}}));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("mcpServers.a.comand: unknown key; did you mean \"command\"?"),
        "{stderr}"
    );
    // At the top level, and VS Code's top-level key misspelled.
    let (code, _, stderr) = check(
        &dir,
        &json!({"call_timout": "5s", "mcpServers": {"a": {"command": "sh"}}}),
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("call_timout: unknown key; did you mean \"call_timeout\"?"),
        "{stderr}"
    );
    let (code, _, stderr) = check(&dir, &json!({"mcpServer": {"a": {"command": "sh"}}}));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("mcpServer: unknown key; did you mean \"mcpServers\"?"),
        "{stderr}"
    );
}

#[test]
fn config_check_fails_on_no_servers_a_foreign_server_key_and_a_missing_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, stdout, _) = check(&dir, &json!({"listen": "127.0.0.1:9"}));
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.starts_with("failed: 0 server(s)") && stdout.contains("no servers"),
        "{stdout}"
    );
    // Another client's key in a server: a gateway runs without it, `config check` fails.
    let (code, stdout, _) = check(
        &dir,
        &json!({"mcpServers": {"a": {"command": "sh", "autoApprove": []}}}),
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("mcpServers.a.autoApprove: unknown key")
            && stdout.contains("unknown key(s) inside a server"),
        "{stdout}"
    );
    let (code, stdout, _) = check(
        &dir,
        &json!({"mcpServers": {"gone": {"command": "mcplex-no-such-command"}, "path": {"command": "./nope.sh"}, "ok": {"command": "sh"}}}),
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains(
            "server \"gone\": command \"mcplex-no-such-command\" is not found on the PATH"
        ) && stdout.contains("server \"path\": command \"./nope.sh\" is not found")
            && !stdout.contains("server \"ok\""),
        "{stdout}"
    );
}

/// A `search_model` directory that does not load fails the check (a gateway would run with BM25F
/// alone); one that loads passes.
#[cfg(feature = "semantic")]
#[test]
fn config_check_fails_on_a_search_model_that_does_not_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corrupt = tempfile::tempdir().expect("tempdir");
    std::fs::write(corrupt.path().join("config.json"), "{\"hidden_size\": 384").expect("write");
    for (model, reason) in [
        (dir.path().join("no-model"), "no-model/config.json"),
        (corrupt.path().to_path_buf(), "is not a BERT config"),
    ] {
        let (code, stdout, _) = check(
            &dir,
            &json!({"search_model": model, "mcpServers": {"a": {"command": "sh"}}}),
        );
        assert_eq!(code, 1, "{stdout}");
        assert!(
            stdout.contains("search_model: cannot load the model in")
                && stdout.contains(reason)
                && stdout.contains("(a gateway would search with BM25F alone)"),
            "{stdout}"
        );
    }
    let installed = mcplex_fixtures::installed_sentence_model()
        .expect("no sentence model: run scripts/test.sh (it installs one into .venv)");
    let (code, stdout, _) = check(
        &dir,
        &json!({"search_model": installed, "mcpServers": {"a": {"command": "sh"}}}),
    );
    assert_eq!(code, 0, "a model that loads passes: {stdout}");
}

/// `MCPLEX_EMBED_ISA` naming no instruction set fails the check, saying what it reads; one it
/// names passes, and without a model the variable is not read. A `search_model` directory is
/// checked whatever the cap says.
#[cfg(feature = "semantic")]
#[test]
fn config_check_fails_on_an_instruction_cap_it_cannot_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let servers = json!({"a": {"command": "sh"}});
    let run = |cap: &str, config: &Value| {
        let output = std::process::Command::new(&tools().mcplex)
            .args(["config", "check", "--config", &config_file(&dir, config)])
            .env("MCPLEX_EMBED_ISA", cap)
            .output()
            .expect("run mcplex");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        (output.status.code().unwrap_or(-1), stdout)
    };
    let (code, stdout) = run("sse9", &json!({"mcpServers": servers}));
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("MCPLEX_EMBED_ISA=\"sse9\" names no instruction set (portable, avx2, avx512, avx512-vnni) (a gateway would search with BM25F alone)"),
        "{stdout}"
    );
    let (code, stdout) = run("avx2", &json!({"mcpServers": servers}));
    assert_eq!(code, 0, "{stdout}");
    let (code, stdout) = run(
        "sse9",
        &json!({"search_model": false, "mcpServers": servers}),
    );
    assert_eq!(code, 0, "{stdout}");
    // A directory that does not load is reported too, not hidden behind the cap.
    let missing = dir.path().join("no-model");
    let (code, stdout) = run(
        "sse9",
        &json!({"search_model": missing, "mcpServers": servers}),
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("MCPLEX_EMBED_ISA=\"sse9\" names no instruction set")
            && stdout.contains("search_model: cannot load the model in")
            && stdout.contains("no-model/config.json"),
        "both failures: {stdout}"
    );
    // A directory that loads: the cap is the one failure, said once.
    let installed = mcplex_fixtures::installed_sentence_model()
        .expect("no sentence model: run scripts/test.sh (it installs one into .venv)");
    let (code, stdout) = run(
        "sse9",
        &json!({"search_model": installed, "mcpServers": servers}),
    );
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        stdout.matches("names no instruction set").count(),
        1,
        "the cap, once: {stdout}"
    );
    assert!(!stdout.contains("cannot load the model in"), "{stdout}");
}

#[test]
fn config_check_reads_the_vs_code_form_and_refuses_its_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, stdout, stderr) = check(
        &dir,
        &json!({"servers": {"a": {"type": "stdio", "command": "sh"}, "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("ok: 2 server(s), 2 enabled, 0 warning(s)"),
        "{stdout}"
    );
    let (code, stdout, _) = check(
        &dir,
        &json!({"inputs": [{"id": "key", "type": "promptString"}], "servers": {"a": {"command": "sh"}}}),
    );
    assert_eq!(code, 0);
    assert!(
        stdout.contains("inputs: unsupported: mcplex does not prompt for VS Code inputs"),
        "{stdout}"
    );
    let (code, _, stderr) = check(
        &dir,
        &json!({"inputs": [{"id": "key"}], "servers": {"a": {"command": "sh", "env": {"KEY": "${input:key}"}}}}),
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("servers.a.env.KEY: \"${input:key}\" refers to a VS Code input"),
        "{stderr}"
    );
}

#[test]
fn output_to_a_closed_pipe_ends_quietly() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_file(
        &dir,
        &json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}),
    );
    let mut child = std::process::Command::new(&tools().mcplex)
        .args(["tools", "list", "--json", "--config", &config])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // The reader goes away before the listing is written, as `| head -0` would.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn token_expiry_needs_a_unit_and_token_list_shows_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data").display().to_string();
    // No gateway listens on the discard port: the commands use the store.
    let config = config_file(
        &dir,
        &json!({"data_dir": data, "listen": "127.0.0.1:9", "mcpServers": {}}),
    );
    let create = |name: &str, expires: Option<&str>| {
        let mut args = vec![
            "token",
            "create",
            "--config",
            &config,
            "--name",
            name,
            "--permissions",
            "read",
        ];
        args.extend(expires.map(|e| ["--expires", e]).into_iter().flatten());
        mcplex(&args)
    };
    let (code, _, stderr) = create("bare", Some("30"));
    assert_ne!(code, 0);
    assert!(
        stderr.contains("expires \"30\": needs a unit: write e.g. \"30d\", \"12h\" or \"90m\""),
        "{stderr}"
    );
    let (code, _, stderr) = create("month", Some("30d"));
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = create("forever", None);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = mcplex(&["token", "list", "--config", &config]);
    assert_eq!(code, 0, "{stderr}");
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        stdout
            .lines()
            .next()
            .unwrap_or_default()
            .contains("EXPIRES"),
        "{stdout}"
    );
    assert!(
        line("month").contains("T") && line("month").contains("Z "),
        "{stdout}"
    );
    assert!(line("forever").contains(" never "), "{stdout}");
    assert!(
        line("bare").is_empty(),
        "a refused token is not stored: {stdout}"
    );
}

#[test]
fn flags_beat_env_beat_file() {
    let check = |flag: Option<&str>| {
        let mut command = std::process::Command::new(&tools().mcplex);
        command
            .args(["call", "demo:echo", "--demo", "--args", r#"{"text": "hi"}"#])
            .env("MCPLEX_CALL_TIMEOUT", "bad");
        if let Some(flag) = flag {
            command.args(["--call-timeout", flag]);
        }
        let output = command.output().expect("run");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    // The environment is read: its bad value is what gets validated.
    let (code, stderr) = check(None);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--call-timeout / MCPLEX_CALL_TIMEOUT: invalid duration \"bad\""),
        "{stderr}"
    );
    // The flag beats the environment.
    let (code, stderr) = check(Some("5s"));
    assert_eq!(code, Some(0), "{stderr}");
    // The environment beats the file: the file's valid value is not what gets validated.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_file(
        &dir,
        &json!({"call_timeout": "1s", "mcpServers": {"a": {"command": "sh"}}}),
    );
    let output = std::process::Command::new(&tools().mcplex)
        .args(["call", "a:x", "--config", &config])
        .env("MCPLEX_CALL_TIMEOUT", "bad")
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr.contains("MCPLEX_CALL_TIMEOUT: invalid duration"),
        "{stderr}"
    );
}

#[test]
fn demo_runs_on_built_in_servers() {
    let gateway = Gateway::start_with(json!({}), &["--demo"]);
    gateway.wait_ready();
    let listing = gateway.client("legacy", "list", &[]);
    let names = names(&listing);
    assert_eq!(
        names.len(),
        1 + 9 + 45,
        "describe_tool, the kit, ref45: {names:?}"
    );
    assert!(
        names.contains(&"filesystem__read_file".to_owned())
            && names.contains(&"demo__echo".to_owned())
    );
    let invalid = gateway.client(
        "2026-07-28",
        "call",
        &["filesystem__read_file", r#"{"path": 7}"#],
    );
    assert_eq!(invalid["result"]["isError"], true, "{invalid}");
    let valid = gateway.client(
        "2026-07-28",
        "call",
        &["filesystem:read_file", r#"{"path": "/etc/hosts"}"#],
    );
    assert_eq!(
        valid["result"]["structuredContent"]["arguments"],
        json!({"path": "/etc/hosts"})
    );
}

#[test]
fn stdio_surface_serves_a_spawning_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_file(
        &dir,
        &json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}),
    );
    let data = dir.path().join("data");
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
    let listing = python_client(&["--stdio", &argv], "legacy", "list", &[]);
    assert!(
        names(&listing).contains(&"fixture__echo".to_owned()),
        "{listing}"
    );
    let call = python_client(
        &["--stdio", &argv],
        "legacy",
        "call",
        &["fixture__add", r#"{"a": 1, "b": 1}"#],
    );
    assert_eq!(call["result"]["structuredContent"], json!({"sum": 2.0}));
}

#[test]
fn a_port_in_use_is_reported_with_the_fix_before_anything_starts() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port to take");
    let address = taken.local_addr().expect("address").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("c.json");
    let data = dir.path().join("data");
    let started = dir.path().join("started");
    std::fs::write(
        &config,
        json!({"mcpServers": {"a": marked_fixture_server("a", &started)}}).to_string(),
    )
    .expect("config");
    let output = std::process::Command::new(&tools().mcplex)
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", &address, "--data-dir"])
        .arg(&data)
        .output()
        .expect("run mcplex");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "a failed command: {stderr}");
    // The message is the user's contract: it names the address and the fix.
    assert!(
        stderr.contains(&format!("cannot listen on {address}"))
            && stderr.contains("--listen host:port"),
        "names the address and the fix: {stderr}"
    );
    assert!(!data.exists(), "nothing was written before: {stderr}");
    assert!(
        !started.exists(),
        "no upstream was started before: {stderr}"
    );
    assert!(output.stdout.is_empty(), "no serving line: {stderr}");
}
