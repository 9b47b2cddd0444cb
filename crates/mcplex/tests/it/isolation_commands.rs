//! Servers started by the one-shot commands an operator types (`mcplex call`, `tools list`):
//! run from a real terminal (a pseudo-terminal made by `script`, with a descriptor the shell
//! opened without close-on-exec), a server can neither open that terminal, which would let it
//! type commands into the operator's shell, nor read the inherited descriptor, even with
//! `"sandbox": false` once approved (only its own session and the descriptors' flags stop it
//! there); and a server the store has not approved runs under the quarantine policy, whatever
//! its config says, until it is approved (then the same attempts succeed, so the checks can
//! fail).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::harness::tools;
use crate::upstream_fixtures::fixture_server;

/// A scratch directory with a config naming the hostile fixture, quarantined when first
/// recorded (`"sandbox": false` too when `unconfined`), its data directory, and a file standing
/// for a secret the operator's shell opened.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(unconfined: bool) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut server = fixture_server("hostile", &["--hostile"]);
        server["quarantined"] = json!(true);
        if unconfined {
            server["sandbox"] = json!(false);
        }
        let config = json!({"mcpServers": {"hostile": server}});
        std::fs::write(dir.path().join("config.json"), config.to_string()).expect("config");
        std::fs::create_dir(dir.path().join("data")).expect("data dir");
        std::fs::create_dir(dir.path().join("home")).expect("home");
        std::fs::write(dir.path().join("secret"), "the operator's secret").expect("secret");
        Setup { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn mcplex(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&tools().mcplex);
        command
            .args(args)
            .arg("--config")
            .arg(self.path("config.json"))
            .arg("--data-dir")
            .arg(self.path("data"))
            .env_clear()
            .env("HOME", self.path("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        command
    }

    fn approve(&self) {
        let output = self
            .mcplex(&["servers", "approve", "hostile"])
            .output()
            .expect("run mcplex servers approve");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// `mcplex call hostile:probe` with `attempts`, run by a shell on a pseudo-terminal that
    /// is its controlling terminal, with descriptor 7 open on the secret: the tool's result.
    fn probe_from_a_terminal(&self, attempts: &Value) -> Value {
        let call = self.mcplex(&["call"]);
        let mut line = format!("exec 7<{}; exec", quoted(&self.path("secret")));
        line.push(' ');
        line.push_str(&quoted(Path::new(call.get_program())));
        for arg in call.get_args() {
            line.push(' ');
            line.push_str(&quoted(Path::new(arg)));
        }
        line.push_str(&format!(
            " hostile:probe --args {} >{} 2>{}",
            quoted(Path::new(&attempts.to_string())),
            quoted(&self.path("out.json")),
            quoted(&self.path("err.txt")),
        ));
        let status = Command::new("script")
            .args(["-q", "-e", "-c", &line, "/dev/null"])
            .env_clear()
            .env("HOME", self.path("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .status()
            .expect("run script");
        let out = std::fs::read_to_string(self.path("out.json")).unwrap_or_default();
        let err = std::fs::read_to_string(self.path("err.txt")).unwrap_or_default();
        assert!(status.success(), "{out}\n{err}");
        let answer: Value = serde_json::from_str(&out).expect("a JSON result");
        answer["structuredContent"].clone()
    }

    /// `mcplex call hostile:probe` with `attempts`, no terminal: the tool's result.
    fn probe(&self, attempts: &Value) -> Value {
        let output = self
            .mcplex(&["call", "hostile:probe", "--args", &attempts.to_string()])
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
}

/// `path` in single quotes for `sh -c`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

fn assert_no_terminal_and_no_secret(answer: &Value, setup: &Setup) {
    let terminal = answer["terminal"].as_str().unwrap_or_default();
    assert!(terminal.starts_with("denied"), "terminal: {answer:#}");
    let secret = setup
        .path("secret")
        .canonicalize()
        .expect("canonical")
        .display()
        .to_string();
    let descriptors = answer["descriptors"].as_array().expect("descriptors");
    assert!(
        descriptors.iter().all(|d| d.as_str() != Some(&secret)),
        "the inherited descriptor reached the server: {answer:#}"
    );
}

#[test]
fn a_server_started_from_the_operators_terminal_cannot_reach_it_nor_inherited_descriptors() {
    let attempts = json!({"terminal": true, "descriptors": true});
    // Sandboxed (and quarantined: the store has not approved it).
    let setup = Setup::new(false);
    let answer = setup.probe_from_a_terminal(&attempts);
    assert_no_terminal_and_no_secret(&answer, &setup);
    // Approved with "sandbox": false: no Landlock rule stands in the way, only the session
    // and the descriptors' flags.
    let unconfined = Setup::new(true);
    unconfined.approve();
    let answer = unconfined.probe_from_a_terminal(&attempts);
    assert_no_terminal_and_no_secret(&answer, &unconfined);
    assert!(
        answer["descriptors"].as_array().is_some(),
        "the probe ran: {answer:#}"
    );
}

#[test]
fn a_one_shot_command_keeps_an_unapproved_server_under_the_quarantine_policy() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let address = listener.local_addr().expect("address").to_string();
    let setup = Setup::new(true);
    // The store the command opened: hidden from a sandboxed server.
    let store = setup.path("data").join("state.db").display().to_string();
    let attempts = json!({"read": [store], "connect": [address]});
    let answer = setup.probe(&attempts);
    for kind in ["read", "connect"] {
        let outcome = answer[kind]
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(
            outcome.starts_with("denied"),
            "{kind} by an unapproved server: {answer:#}"
        );
    }
    // Approved, "sandbox": false applies: the same attempts succeed.
    setup.approve();
    let answer = setup.probe(&attempts);
    assert!(
        answer["read"][&store]
            .as_str()
            .is_some_and(|o| o.starts_with("ok: SQLite format 3")),
        "{answer:#}"
    );
    assert!(
        answer["connect"][&address]
            .as_str()
            .is_some_and(|o| o.starts_with("ok")),
        "{answer:#}"
    );
}
