//! `confine_to_compute` in a process of its own (`mcplex-compute-probe`): every operation it
//! tries works before it confines itself, and only computing works after.

use std::net::TcpListener;
use std::process::Command;

const OPERATIONS: &[&str] = &[
    "read a file",
    "create a file",
    "remove a file",
    "make a directory",
    "connect over TCP",
    "make a socket pair",
    "run a program",
    "signal the parent",
    "learn a file's metadata",
    "read a link in /proc",
    "start a process",
    "map shared memory",
    "make a memfd",
    "use SysV IPC",
    "make a descriptor signal the parent",
    "set the parent's limits",
    "set the parent's priority",
    "enter a user namespace",
    "compute in a thread",
];

#[test]
fn a_confined_process_can_compute_and_nothing_else() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a listener");
    let port = listener.local_addr().expect("its address").port();
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("secret"), "key").expect("the secret");
    std::fs::write(dir.path().join("doomed"), "x").expect("a file to remove");
    let output = Command::new(env!("CARGO_BIN_EXE_mcplex-compute-probe"))
        .arg(dir.path())
        .arg(port.to_string())
        .output()
        .expect("the probe runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    let worked = |stage: &str, operation: &str| {
        stdout.lines().find_map(|line| {
            let mut fields = line.split('\t');
            (fields.next() == Some(stage) && fields.next() == Some(operation))
                .then(|| fields.next() == Some("true"))
        })
    };
    for operation in OPERATIONS {
        assert_eq!(
            worked("before", operation),
            Some(true),
            "before: {operation}\n{stdout}"
        );
        let computing = *operation == "compute in a thread";
        assert_eq!(
            worked("after", operation),
            Some(computing),
            "after: {operation}\n{stdout}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("secret"))
            .ok()
            .as_deref(),
        Some("key")
    );
}
