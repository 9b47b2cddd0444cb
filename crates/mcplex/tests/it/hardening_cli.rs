//! The CLI sends the API key only to the gateway it means (the third adversarial review's fifth
//! defect): a gateway killed with SIGKILL stays registered in the store for a while, and a
//! program that takes its port receives nothing from the next `mcplex token create`, which
//! goes to the store instead.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::harness::{Gateway, fixture_server, mcplex};

#[test]
fn the_cli_proves_who_answers_before_it_sends_the_api_key() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let data = scratch.path().join("data");
    let data = data.to_str().expect("utf-8 path").to_owned();
    let gateway = Gateway::start_with(
        json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}),
        &["--data-dir", &data],
    );
    gateway.wait_ready();
    let key = std::fs::read_to_string(scratch.path().join("data/api_key"))
        .expect("the API key file")
        .trim()
        .to_owned();
    // The gateway's directory goes with it: the CLI reads a copy of its config.
    let config = scratch.path().join("config.json");
    std::fs::copy(gateway.dir.path().join("config.json"), &config).expect("copy the config");
    let config = config.to_str().expect("utf-8 path").to_owned();
    let address = gateway.authority().to_owned();

    // While the gateway lives, the CLI goes through it (it proves it holds the key).
    let (code, _, stderr) = mcplex(&[
        "token",
        "create",
        "--name",
        "through-the-gateway",
        "--permissions",
        "read",
        "--config",
        &config,
        "--data-dir",
        &data,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("through the gateway"), "{stderr}");

    // SIGKILL: no deregistration. Another program takes the port and answers 200 to anything.
    gateway.kill_hard();
    let impostor = TcpListener::bind(&address).expect("the dead gateway's port");
    let received = Arc::new(Mutex::new(Vec::<u8>::new()));
    {
        let received = received.clone();
        std::thread::spawn(move || {
            for stream in impostor.incoming().flatten() {
                let mut stream = stream;
                let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                let mut buffer = [0u8; 8192];
                let read = stream.read(&mut buffer).unwrap_or(0);
                received
                    .lock()
                    .expect("not poisoned")
                    .extend_from_slice(&buffer[..read]);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 34\r\nConnection: close\r\n\r\n{\"servers\":[],\"proof\":\"00000000\"}",
                );
            }
        });
    }
    let (code, stdout, stderr) = mcplex(&[
        "token",
        "create",
        "--name",
        "after-the-kill",
        "--permissions",
        "read",
        "--config",
        &config,
        "--data-dir",
        &data,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("mcplex_"), "the token is printed: {stdout}");
    assert!(
        stderr.contains("not sending the API key"),
        "the CLI says why it did not use the registered address: {stderr}"
    );
    let received = String::from_utf8_lossy(&received.lock().expect("not poisoned")).into_owned();
    assert!(
        received.contains("/api/v1/identity"),
        "the impostor was asked for its proof: {received}"
    );
    assert!(
        !received.contains(&key) && !received.contains("mcplex_admin_"),
        "the impostor received the API key: {received}"
    );
}

/// `apikey rotate`: the new key is printed once and works on the running gateway within the
/// control plane's second; the old one stops working.
#[test]
fn a_rotated_api_key_replaces_the_old_one_on_the_running_gateway() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let old = gateway.api_key();
    let data = gateway.data_dir().display().to_string();
    let config = gateway.dir.path().join("config.json").display().to_string();
    let (code, stdout, stderr) =
        mcplex(&["apikey", "rotate", "--config", &config, "--data-dir", &data]);
    assert_eq!(code, 0, "{stderr}");
    let new = stdout.trim().to_owned();
    assert!(new.starts_with("mcplex_admin_") && new != old, "{stdout}");
    assert!(stderr.contains("shown once"), "{stderr}");
    let servers = |key: &str| {
        crate::harness::http_send(
            gateway.authority(),
            "GET",
            "/api/v1/servers",
            &[("Authorization", &format!("Bearer {key}"))],
            "",
        )
        .0
    };
    crate::harness::eventually("the new key to work", Duration::from_secs(2), || {
        (servers(&new) == 200).then_some(())
    });
    assert_eq!(servers(&old), 401, "the old key stops working");
}
