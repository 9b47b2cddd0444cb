//! Our fixture as the upstream of a test: its `command` entry on stdio (plain, or marking that
//! it was started), or the process serving HTTP on a free port.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Background, eventually, free_port, tools};

/// `command` entry for our fixture on stdio.
pub fn fixture_server(name: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--name".to_owned(), name.to_owned()];
    args.extend(extra.iter().map(|s| s.to_string()));
    json!({"command": tools().fixture, "args": args})
}

/// Our fixture serving HTTP on a free loopback port with `extra` arguments (e.g. a fault such as
/// `--deny-echo`), once it listens; the process ends with the returned guard.
pub fn http_fixture(extra: &[&str]) -> (Background, u16) {
    let port = free_port();
    let child = Command::new(&tools().fixture)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the HTTP fixture");
    let background = Background(child);
    eventually(
        "the HTTP fixture to listen",
        Duration::from_secs(20),
        || TcpStream::connect(("127.0.0.1", port)).ok().map(|_| ()),
    );
    (background, port)
}

/// `command` entry for our fixture on stdio that creates `marker` when it is started, so that a
/// test can tell whether the gateway ever started it.
pub fn marked_fixture_server(name: &str, marker: &Path) -> Value {
    let script = format!("touch '{}' && exec \"$0\" --name {name}", marker.display());
    json!({"command": "sh", "args": ["-c", script, tools().fixture]})
}
