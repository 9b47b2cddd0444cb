//! Issue 14, the store as a shared control plane: gateways on one PostgreSQL database, a store
//! that cannot be reached at start, and a store lost and found again while a gateway runs.
//! PostgreSQL tests run against the server `MCPLEX_TEST_POSTGRES` names (`scripts/test.sh`
//! starts a throwaway one) and say why they do nothing without it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::control_plane::{cli, followed, list_at, token_create};
use crate::harness::{
    Gateway, eventually, fixture_server, free_port, marked_fixture_server, tools,
};

/// A fresh database on the PostgreSQL server `MCPLEX_TEST_POSTGRES` names
/// (`postgres://user@host:port`), or `None` (and the test says why it does nothing) when unset.
/// `scripts/test.sh` starts a throwaway server and sets it.
pub fn postgres_database(name: &str) -> Option<String> {
    let Ok(server) = std::env::var("MCPLEX_TEST_POSTGRES") else {
        crate::harness::unavailable(
            name,
            "MCPLEX_TEST_POSTGRES is not set: no PostgreSQL to test against",
        );
        return None;
    };
    let server = server.trim_end_matches('/').to_owned();
    let mut admin = postgres::Client::connect(&format!("{server}/postgres"), postgres::NoTls)
        .expect("MCPLEX_TEST_POSTGRES names a server that answers");
    for statement in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.batch_execute(&statement).expect("a fresh database");
    }
    Some(format!("{server}/{name}"))
}

#[test]
fn gateways_on_one_postgres_store_share_tokens_approvals_and_the_audit_log() {
    let Some(store) = postgres_database("mcplex_it_shared") else {
        return;
    };
    let servers = json!({"a": fixture_server("a", &[])});
    let first = Gateway::start_with(json!({"mcpServers": servers}), &["--store", &store]);
    let second = Gateway::start_with(json!({"mcpServers": servers}), &["--store", &store]);
    first.wait_ready();
    second.wait_ready();
    let config = first.dir.path().join("cli.json");
    std::fs::write(
        &config,
        json!({"mcpServers": servers, "store": store}).to_string(),
    )
    .expect("cli config");
    let config = config.display().to_string();

    // A token made through one gateway's API (the CLI finds it in the store; the API key, which
    // the store keeps only as a hash, is given to it as the gateway that created the store
    // printed it) is accepted by the other.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let key = loop {
        if let Some(key) = printed_key(&first).or_else(|| printed_key(&second)) {
            break key;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no key printed:\n{:?}\n{:?}\n{}\n{}",
            first.stdout(),
            second.stdout(),
            first.log(),
            second.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let token = crate::control_plane::token_create_with_key(
        "api",
        Path::new(&config),
        "shared",
        Some(&key),
    );
    for gateway in [&first, &second] {
        followed("both gateways accept the token", || {
            list_at(gateway.authority(), Some(&token)).is_ok()
        });
    }
    // Both serve calls; the audit log is one log.
    for gateway in [&first, &second] {
        let answer = crate::harness::call_raw(
            gateway,
            "/mcp/all",
            Some(&token),
            "a__echo",
            json!({"text": "hi"}),
        );
        assert!(answer.contains("hi"), "{answer}");
    }
    // The audit writer batches off the request path (a batch lingers up to 100 ms), so the
    // rows arrive shortly after the answers.
    let rows: Value = crate::harness::eventually(
        "both calls in the one audit log",
        std::time::Duration::from_secs(10),
        || {
            let (code, out, err) = cli("store", &["activity", "--config", &config, "--json"]);
            assert_eq!(code, 0, "{err}");
            let rows: Value = serde_json::from_str(&out).expect("json");
            let calls = rows
                .as_array()
                .map(|rows| rows.iter().filter(|r| r["token"] == "shared").count())
                .unwrap_or_default();
            (calls == 2).then_some(rows)
        },
    );
    // The export reads the same shared log, oldest first, in pages by (time, row id).
    let (code, out, err) = cli(
        "store",
        &[
            "activity", "export", "--config", &config, "--token", "shared", "--format", "csv",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let exported: Vec<&str> = out.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(exported.len(), 3, "a header and both calls: {out}");
    assert!(
        exported[1..]
            .iter()
            .all(|row| row.contains(",shared,tools/call,a:echo,ok,")),
        "{out}"
    );
    let replicas: std::collections::BTreeSet<String> = rows
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["token"] == "shared")
        .filter_map(|r| r["replica"].as_str().map(str::to_owned))
        .collect();
    let ports = [first.authority(), second.authority()]
        .map(|a| a.rsplit(':').next().unwrap_or_default().to_owned());
    assert!(
        replicas.len() == 2
            && ports
                .iter()
                .all(|p| replicas.iter().any(|r| r.ends_with(p.as_str()))),
        "each row names the replica that served it: {replicas:?}"
    );

    // A quarantine written on the store is served by both.
    let (code, _, err) = cli(
        "store",
        &["servers", "quarantine", "--config", &config, "a"],
    );
    assert_eq!(code, 0, "{err}");
    for gateway in [&first, &second] {
        followed("the quarantine is served", || {
            list_at(gateway.authority(), None)
                .is_ok_and(|names| !names.contains(&"a__echo".to_owned()))
        });
    }
    let (code, _, err) = cli("auto", &["servers", "approve", "--config", &config, "a"]);
    assert_eq!(code, 0, "{err}");
    // A revocation through the second is refused by the first.
    let (code, _, err) = cli("auto", &["token", "revoke", "--config", &config, "shared"]);
    assert_eq!(code, 0, "{err}");
    for gateway in [&first, &second] {
        followed("the revoked token is refused", || {
            list_at(gateway.authority(), Some(&token)) == Err(401)
        });
    }
}

#[test]
fn a_store_that_cannot_be_reached_stops_the_start_with_its_name_and_no_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("c.json");
    let marker = dir.path().join("started");
    std::fs::write(
        &config,
        json!({"mcpServers": {"a": marked_fixture_server("a", &marker)}}).to_string(),
    )
    .expect("config");
    let port = free_port();
    let store = format!("postgres://mcplex:hunter2@127.0.0.1:{port}/mcplex");
    let started = Instant::now();
    let output = Command::new(&tools().mcplex)
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--data-dir"])
        .arg(dir.path().join("data"))
        .env("MCPLEX_STORE", &store)
        .output()
        .expect("run mcplex");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout} {stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "fails promptly, not after retrying forever"
    );
    assert!(
        stderr.contains("cannot open the store") && stderr.contains(&format!("127.0.0.1:{port}")),
        "names the store: {stderr}"
    );
    assert!(!stderr.contains("hunter2"), "never its password: {stderr}");
    assert_eq!(output.status.code(), Some(2), "a failed command: {stderr}");
    assert!(!marker.exists(), "no upstream was started: {stderr}");
    assert!(stdout.is_empty(), "no serving line: {stdout}");
}

/// The admin API key of a PostgreSQL store, as the gateway that created it printed it once
/// (the store keeps only its hash).
fn store_api_key(gateway: &Gateway) -> String {
    crate::harness::eventually(
        "the key, printed once by the gateway that created the store",
        std::time::Duration::from_secs(10),
        || printed_key(gateway),
    )
}

/// The API key `gateway` printed, if it created its store.
fn printed_key(gateway: &Gateway) -> Option<String> {
    gateway.stdout().iter().find_map(|line| {
        line.split_whitespace()
            .find(|word| word.starts_with("mcplex_admin_"))
            .map(str::to_owned)
    })
}

#[test]
fn a_lost_store_keeps_serving_refuses_writes_and_is_caught_up_with_when_it_returns() {
    let Some(store) = postgres_database("mcplex_it_lost") else {
        return;
    };
    let database = "mcplex_it_lost";
    let admin_url = format!(
        "{}/postgres",
        std::env::var("MCPLEX_TEST_POSTGRES")
            .unwrap_or_default()
            .trim_end_matches('/')
    );
    let servers = json!({"a": fixture_server("a", &[])});
    let gateway = Gateway::start_with(json!({"mcpServers": servers}), &["--store", &store]);
    gateway.wait_ready();
    let config = gateway.dir.path().join("cli.json");
    std::fs::write(
        &config,
        json!({"mcpServers": servers, "store": store}).to_string(),
    )
    .expect("cli config");
    let config = config.display().to_string();
    let token = token_create("store", Path::new(&config), "kept");
    followed("the token is accepted", || {
        list_at(gateway.authority(), Some(&token)).is_ok()
    });
    let key = format!("Bearer {}", store_api_key(&gateway));

    // The store goes away: no connection to its database is possible, the open ones are cut.
    let mut admin = postgres::Client::connect(&admin_url, postgres::NoTls).expect("admin");
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {database} ALLOW_CONNECTIONS false;
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}';"
        ))
        .expect("cut the store");
    eventually(
        "/readyz says the store is unreachable",
        Duration::from_secs(10),
        || {
            let (status, body) = gateway.get("/readyz");
            (status == 503 && body.contains(r#""store":"unreachable""#)).then_some(())
        },
    );
    // Serving goes on from the last state read.
    assert!(
        list_at(gateway.authority(), Some(&token))
            .is_ok_and(|names| names.contains(&"a__echo".to_owned()))
    );
    // A write is refused clearly, not dropped.
    let (status, body) = crate::harness::http_send(
        gateway.authority(),
        "POST",
        "/api/v1/servers/a/quarantine",
        &[("Authorization", &key)],
        "",
    );
    assert!(
        status == 503 && body.contains("not saved"),
        "{status} {body}"
    );
    let (status, body) = crate::harness::http_send(
        gateway.authority(),
        "POST",
        "/api/v1/tokens",
        &[("Authorization", &key)],
        r#"{"name": "during", "permissions": "read"}"#,
    );
    assert!(
        status == 503 && body.contains("not saved"),
        "{status} {body}"
    );
    assert!(
        list_at(gateway.authority(), None).is_ok_and(|names| names.contains(&"a__echo".to_owned())),
        "nothing changed"
    );
    // The dashboard's queue reads it from the config answer.
    let store_reachable = || {
        let (_, body) = crate::harness::http_send(
            gateway.authority(),
            "GET",
            "/api/v1/config",
            &[("Authorization", &key)],
            "",
        );
        serde_json::from_str::<serde_json::Value>(&body)
            .map(|answer| answer["store_reachable"].clone())
    };
    assert_eq!(store_reachable().ok(), Some(json!(false)));

    // The store returns; a revocation made while the gateway was away from it is caught up with.
    admin
        .batch_execute(&format!("ALTER DATABASE {database} ALLOW_CONNECTIONS true"))
        .expect("restore the store");
    let (code, _, err) = cli("store", &["token", "revoke", "--config", &config, "kept"]);
    assert_eq!(code, 0, "{err}");
    eventually("the gateway catches up", Duration::from_secs(10), || {
        (list_at(gateway.authority(), Some(&token)) == Err(401)).then_some(())
    });
    eventually("/readyz is ready again", Duration::from_secs(10), || {
        (gateway.get("/readyz").0 == 200).then_some(())
    });
    assert_eq!(store_reachable().ok(), Some(json!(true)));
    assert!(
        gateway.log().contains("the store cannot be read"),
        "said loudly"
    );
}

/// A server added from the dashboard on a PostgreSQL store: sealed under the token key every
/// replica is given, run quarantined by the replica that did not take the request, removed
/// through either.
#[test]
fn a_server_added_through_one_replica_on_postgresql_runs_on_the_other() {
    let Some(store) = postgres_database("mcplex_it_added") else {
        return;
    };
    let config = json!({"mcpServers": {"a": fixture_server("a", &[])}});
    let token_key = "6a".repeat(32);
    let env = [("MCPLEX_TOKEN_KEY", token_key.as_str())];
    let first = Gateway::start_with_env(config.clone(), &["--store", &store], &env);
    first.wait_ready();
    // Started after the first created the store: the first printed the key.
    let key = store_api_key(&first);
    let second = Gateway::start_with_env(config, &["--store", &store], &env);
    second.wait_ready();
    let extra = |gateway: &Gateway| {
        let (_, answer) = gateway.api_as(&key, "GET", "/api/v1/servers", "");
        answer["servers"]
            .as_array()
            .and_then(|servers| servers.iter().find(|s| s["name"] == "extra").cloned())
    };
    let body = json!({"name": "extra", "entry": fixture_server("extra", &[])});
    let (status, added) = first.api_as(&key, "POST", "/api/v1/servers", &body.to_string());
    assert_eq!(status, 201, "{added}");
    let running = eventually(
        "the second replica to run extra",
        Duration::from_secs(20),
        || extra(&second).filter(|s| s["status"] == "ready"),
    );
    assert_eq!(running["state"], "quarantined", "{running}");
    let (status, removed) = second.api_as(&key, "DELETE", "/api/v1/servers/extra", "");
    assert_eq!(status, 200, "{removed}");
    eventually(
        "the first replica to stop extra",
        Duration::from_secs(10),
        || extra(&first).is_none().then_some(()),
    );
}

/// An operator gives the store's admin key in a file (`--api-key-file`; the chart mounts it
/// from a Secret): nothing prints a key, every replica takes it, a replica given another key
/// replaces it on every gateway of the store, no output ever holds either key, and a key too
/// short stops the start before any upstream starts, without being shown.
#[test]
fn an_admin_key_given_in_a_file_is_the_stores_on_every_replica() {
    let Some(store) = postgres_database("mcplex_it_given_key") else {
        return;
    };
    let keys = tempfile::tempdir().expect("tempdir");
    let key_file = |name: &str, key: &str| {
        let file = keys.path().join(name);
        std::fs::write(&file, format!("{key}\n")).expect("key file");
        file.display().to_string()
    };
    let config = json!({"mcpServers": {"a": fixture_server("a", &[])}});
    let start = |file: &str| {
        let gateway =
            Gateway::start_with(config.clone(), &["--store", &store, "--api-key-file", file]);
        gateway.wait_ready();
        gateway
    };
    let given = "mcplex_given_0123456789abcdef0123456789abcdef";
    let given_file = key_file("given", given);
    let first = start(&given_file);
    let second = start(&given_file);
    for gateway in [&first, &second] {
        assert_eq!(printed_key(gateway), None, "{:?}", gateway.stdout());
        let (status, answer) = gateway.api_as(given, "GET", "/api/v1/tokens", "");
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            gateway
                .api_as("mcplex_admin_guess", "GET", "/api/v1/tokens", "")
                .0,
            401
        );
    }

    // A replica given another key: the store takes it, and the running gateways follow.
    let other = "mcplex_other_fedcba9876543210fedcba9876543210";
    let third = start(&key_file("other", other));
    eventually(
        "the first gateway takes the key the third was given",
        Duration::from_secs(10),
        || (first.api_as(other, "GET", "/api/v1/tokens", "").0 == 200).then_some(()),
    );
    assert_eq!(first.api_as(given, "GET", "/api/v1/tokens", "").0, 401);
    assert!(
        third.log().contains("the store held another admin API key"),
        "{}",
        third.log()
    );
    for gateway in [&first, &second, &third] {
        let said = format!("{}{}", gateway.log(), gateway.stdout().join("\n"));
        assert!(
            !said.contains(given) && !said.contains(other),
            "a key in the output: {said}"
        );
    }

    // Too short: the start stops, before any upstream, and says so without the value.
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("started");
    let servers = json!({"mcpServers": {"a": marked_fixture_server("a", &marker)}});
    let file = dir.path().join("config.json");
    std::fs::write(&file, servers.to_string()).expect("config");
    let short = key_file("short", "short-key-4f2a");
    let output = Command::new(&tools().mcplex)
        .args([
            "serve",
            "--config",
            &file.display().to_string(),
            "--store",
            &store,
        ])
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("MCPLEX_API_KEY_FILE", &short)
        .output()
        .expect("run mcplex");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "a failed command: {stderr}");
    assert!(
        stderr.contains(&format!(
            "the API key in {short} is 14 characters long: an admin key needs at least 32"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("short-key-4f2a"), "{stderr}");
    assert!(!marker.exists(), "no upstream was started: {stderr}");
}
