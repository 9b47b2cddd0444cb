//! A server the kernel gives no namespaces (a container whose seccomp profile refuses them): it
//! runs in the gateway's PID namespace and sees its processes. The real helper, with the plan a
//! gateway makes there, must keep the server from setting another process's resource limits or
//! priority (a process of the same user may, without any capability, and Landlock does not
//! check it); the same attempts without the helper show they would work.

use std::process::Command;

/// Sets the parent's core limit and nice value to what they are, and its own; prints each.
const ATTEMPTS: &str = r#"
import os, resource
parent = os.getppid()
def attempt(name, act):
    try:
        act()
        print(name, "worked")
    except OSError as e:
        print(name, "refused", e.errno)
core = resource.prlimit(parent, resource.RLIMIT_CORE)
attempt("set the parent's limit", lambda: resource.prlimit(parent, resource.RLIMIT_CORE, core))
attempt("read the parent's limit", lambda: resource.prlimit(parent, resource.RLIMIT_CORE))
nice = os.getpriority(os.PRIO_PROCESS, parent)
attempt("set the parent's priority", lambda: os.setpriority(os.PRIO_PROCESS, parent, nice))
attempt("set the user's priority", lambda: os.setpriority(os.PRIO_USER, os.getuid(), os.getpriority(os.PRIO_USER, os.getuid())))
own = resource.getrlimit(resource.RLIMIT_NOFILE)
attempt("set its own limit", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, own))
attempt("set its own priority", lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)))
"#;

fn outcomes(output: &std::process::Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_server_without_a_pid_namespace_cannot_set_the_gateways_limits_or_priority() {
    let plan = serde_json::json!({
        "namespaces": false,
        "network": true,
        "landlock_abi": 0,
        "read": [],
        "write": [],
        "private": [],
        "private_tmpfs_bytes": null,
        "devices": [],
        "hidden": [],
        "closed_ports": [],
        "create": [],
        "limits": {"memory_bytes": 0, "processes": 0, "open_files": 0}
    });
    let confined = Command::new(env!("CARGO_BIN_EXE_mcplex"))
        .args([
            "__sandbox",
            &plan.to_string(),
            "--",
            "python3",
            "-c",
            ATTEMPTS,
        ])
        .output()
        .expect("the helper runs");
    let confined = outcomes(&confined);
    let unconfined = outcomes(
        &Command::new("python3")
            .args(["-c", ATTEMPTS])
            .output()
            .expect("python runs"),
    );
    for (attempt, alone, in_the_sandbox) in [
        ("set the parent's limit", "worked", "refused 1"),
        ("read the parent's limit", "worked", "worked"),
        ("set the parent's priority", "worked", "refused 1"),
        ("set the user's priority", "worked", "refused 1"),
        ("set its own limit", "worked", "worked"),
        ("set its own priority", "worked", "worked"),
    ] {
        assert!(
            unconfined.contains(&format!("{attempt} {alone}")),
            "{attempt} unconfined:\n{unconfined}"
        );
        assert!(
            confined.contains(&format!("{attempt} {in_the_sandbox}")),
            "{attempt} in the sandbox:\n{confined}"
        );
    }
}
