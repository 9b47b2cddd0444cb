//! Issue 14, behind a load balancer: `scripts/cluster.sh` starts PostgreSQL, two replicas on one
//! store and HAProxy (`deploy/haproxy.cfg`) in front; these tests drive that topology through
//! HAProxy with raw HTTP from many threads. 2026-07-28 requests are spread round-robin and none is
//! lost; session-era clients stay on the replica that created their session; a write on one
//! replica (a token, an approval, a dashboard logout) is enforced by the other within a second; a replica killed mid-load costs only the
//! calls in flight on it.
//!
//! Without `haproxy` or PostgreSQL's binaries installed, each test says so and passes (CI installs
//! them: scripts/test.sh).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster_rig::{
    Answer, CLIENTS, Cluster, FOLLOW_LIMIT, REPLICAS, concurrently, echo_stateless, in_session,
    initialize, listed, per_replica, send, session_client, stateless,
};
use crate::harness::{alive, eventually, signal};

#[test]
fn through_haproxy_stateless_requests_go_round_robin_and_sessions_stay_on_their_replica() {
    let Some(cluster) = Cluster::start("cluster round robin and stickiness") else {
        return;
    };
    let lb = cluster.lb.as_str();

    // 2026-07-28: 200 clients at once, 5 calls each; every call answered with its own marker.
    let before = [cluster.echo_calls(0), cluster.echo_calls(1)];
    let started = Instant::now();
    let results = concurrently(|client| {
        (0..5)
            .map(|n| echo_stateless(lb, &json!({"client": client, "n": n})))
            .collect::<Vec<_>>()
    });
    let elapsed = started.elapsed();
    let results: Vec<Result<String, String>> = results.into_iter().flatten().collect();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} stateless calls failed, e.g. {:?}\n{}",
        failures.len(),
        results.len(),
        failures.first(),
        cluster.logs()
    );
    let served = per_replica(results.iter().flatten());
    eprintln!(
        "stateless: {} calls from {CLIENTS} clients in {elapsed:?}, r1 {} r2 {}",
        results.len(),
        served[0],
        served[1]
    );
    assert_eq!(
        served[0] + served[1],
        results.len(),
        "every answer names r1 or r2"
    );
    for (index, count) in served.iter().enumerate() {
        assert!(
            *count >= results.len() / 4,
            "round-robin: {} served only {count} of {}",
            REPLICAS[index],
            results.len()
        );
    }
    // What HAProxy says is what the replicas counted.
    eprintln!("health checks: {}", cluster.health_changes());
    let after = [cluster.echo_calls(0), cluster.echo_calls(1)];
    for index in 0..2 {
        assert_eq!(
            (after[index] - before[index]) as usize,
            served[index],
            "{}'s /metrics counts the calls HAProxy sent it",
            REPLICAS[index]
        );
    }

    // Session-era: 200 clients at once, each initialize → initialized → tools/call → DELETE,
    // every step on the replica that created the session.
    let started = Instant::now();
    let results = concurrently(|client| session_client(lb, client));
    let elapsed = started.elapsed();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {CLIENTS} session clients failed, e.g. {:?}\n{}",
        failures.len(),
        failures.first(),
        cluster.logs()
    );
    let sessions = per_replica(results.iter().flatten());
    eprintln!(
        "sessions: {CLIENTS} clients in {elapsed:?}, created on r1 {} r2 {}",
        sessions[0], sessions[1]
    );
    for (index, count) in sessions.iter().enumerate() {
        assert!(
            *count >= CLIENTS / 4,
            "initialize is balanced: {} created only {count} of {CLIENTS} sessions",
            REPLICAS[index]
        );
    }

    // A session is known only where it was created: sent directly to the other replica it gets
    // 404 (the client starts a new one), never someone else's session.
    let (session, replica) = initialize(lb, 0).expect("initialize");
    let home = REPLICAS
        .iter()
        .position(|r| *r == replica)
        .expect("r1 or r2");
    let list = r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = in_session(lb, &session, "POST", initialized);
    assert_eq!(answer.status, 202, "{}", answer.body);
    let answer = in_session(&cluster.replicas[1 - home], &session, "POST", list);
    assert_eq!(
        answer.status, 404,
        "the other replica does not know the session: {}",
        answer.body
    );
    let answer = in_session(&cluster.replicas[home], &session, "POST", list);
    assert_eq!(answer.status, 200, "its own replica does: {}", answer.body);
    for _ in 0..6 {
        let answer = in_session(lb, &session, "POST", list);
        assert_eq!(
            (answer.status, answer.replica()),
            (200, replica.as_str()),
            "{}",
            answer.body
        );
    }
    let answer = in_session(lb, &session, "DELETE", "");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = in_session(lb, &session, "POST", list);
    assert_eq!(answer.status, 404, "an ended session: {}", answer.body);
}

/// Waits until `check` holds on both replicas, within [`FOLLOW_LIMIT`]; how long it took. `check`
/// answers what the replica showed when the write is not in force there yet, for the failure.
fn both_follow(
    cluster: &Cluster,
    what: &str,
    check: impl Fn(&str) -> Result<(), String>,
) -> Duration {
    let started = Instant::now();
    loop {
        let shown: Vec<Result<(), String>> = cluster.replicas.iter().map(|r| check(r)).collect();
        if shown.iter().all(Result::is_ok) {
            let elapsed = started.elapsed();
            eprintln!("{what}: both replicas within {elapsed:?}");
            return elapsed;
        }
        assert!(
            started.elapsed() < FOLLOW_LIMIT,
            "{what}: not on both replicas within {FOLLOW_LIMIT:?} (r1: {:?}, r2: {:?})",
            shown[0],
            shown[1]
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `Ok` when `value` passes `in_force`, else what it was, for [`both_follow`].
fn shows<T: std::fmt::Debug>(value: T, in_force: impl FnOnce(&T) -> bool) -> Result<(), String> {
    if in_force(&value) {
        Ok(())
    } else {
        Err(format!("{value:?}"))
    }
}

#[test]
fn a_write_through_one_replica_is_enforced_by_the_other_within_a_second() {
    let Some(cluster) = Cluster::start("cluster writes follow") else {
        return;
    };
    let echo = "demo__echo".to_owned();
    let run = |args: &[&str]| {
        let (code, out, err) = cluster.cli("api", args);
        assert_eq!(code, 0, "mcplex {args:?}: {out}{err}\n{}", cluster.logs());
        out
    };

    // A token created through one replica's API is accepted by both (one HMAC secret, in the
    // store), directly and through HAProxy.
    let token = run(&[
        "token",
        "create",
        "--name",
        "agent",
        "--permissions",
        "read,write",
    ])
    .trim()
    .to_owned();
    both_follow(&cluster, "the new token", |r| {
        shows(listed(r, Some(&token)), Result::is_ok)
    });
    for _ in 0..4 {
        assert!(listed(&cluster.lb, Some(&token)).is_ok_and(|names| names.contains(&echo)));
    }

    // A quarantine and an approval.
    run(&["servers", "quarantine", "demo"]);
    both_follow(&cluster, "the quarantine", |r| {
        shows(listed(r, Some(&token)), |listed| {
            listed.as_ref().is_ok_and(|names| !names.contains(&echo))
        })
    });
    run(&["servers", "approve", "demo"]);
    both_follow(&cluster, "the approval", |r| {
        shows(listed(r, Some(&token)), |listed| {
            listed.as_ref().is_ok_and(|names| names.contains(&echo))
        })
    });

    // A revocation: refused everywhere, whichever replica HAProxy picks.
    run(&["token", "revoke", "agent"]);
    both_follow(&cluster, "the revocation", |r| {
        shows(listed(r, Some(&token)), |listed| *listed == Err(401))
    });
    for _ in 0..4 {
        assert_eq!(listed(&cluster.lb, Some(&token)), Err(401));
    }

    // A dashboard logout on r1: r2 refuses the session too.
    let (cookie, csrf) = dashboard_session(&cluster);
    let servers = |replica: &str| {
        send(
            replica,
            "GET",
            "/api/v1/servers",
            &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
            "",
        )
        .status
    };
    assert_eq!(
        servers(&cluster.replicas[1]),
        200,
        "a session works on every replica"
    );
    let origin = format!("http://{}", cluster.replicas[0]);
    let logout = send(
        &cluster.replicas[0],
        "POST",
        "/ui/logout",
        &[
            ("Cookie", &cookie),
            ("Origin", &origin),
            ("X-CSRF-Token", &csrf),
        ],
        "",
    );
    assert_eq!(logout.status, 204, "{}", logout.body);
    both_follow(&cluster, "the dashboard logout", |r| {
        shows(servers(r), |status| *status == 401)
    });
}

/// The cookie and CSRF token of a dashboard session opened on r1 with the one-time login link
/// it printed (the token comes in the redirect's fragment, for the page to keep).
fn dashboard_session(cluster: &Cluster) -> (String, String) {
    let log =
        std::fs::read_to_string(cluster.dir.path().join("logs/replica-1.log")).unwrap_or_default();
    let link = log
        .lines()
        .find_map(|line| {
            Some(&line[line.rfind("http://")?..]).filter(|url| url.contains("/ui/login/"))
        })
        .unwrap_or_else(|| panic!("r1 printed no login link:\n{log}"));
    let path = &link[link.find("/ui/login/").unwrap_or(0)..];
    let opened = send(&cluster.replicas[0], "GET", path.trim(), &[], "");
    let cookie = opened
        .header("set-cookie")
        .and_then(|value| value.split(';').next())
        .unwrap_or_default()
        .to_owned();
    assert!(
        cookie.starts_with("mcplex_ui="),
        "status {}: {:?}",
        opened.status,
        opened.header("set-cookie")
    );
    let csrf = opened
        .header("location")
        .and_then(|location| location.split_once("#login="))
        .map(|(_, csrf)| csrf.to_owned())
        .unwrap_or_else(|| panic!("no token in the redirect: {:?}", opened.header("location")));
    (cookie, csrf)
}

/// Whether a TCP connect to `address` is refused (nothing listens there any more).
fn refuses_connections(address: &str) -> bool {
    match std::net::TcpStream::connect(address) {
        Ok(_) => false,
        Err(error) => error.kind() == std::io::ErrorKind::ConnectionRefused,
    }
}

/// One call of the kill test: when it started and ended, and who answered or what failed.
struct Timed {
    start: Instant,
    end: Instant,
    outcome: Result<String, String>,
}

#[test]
fn a_replica_killed_mid_load_costs_only_the_calls_in_flight_on_it() {
    let Some(cluster) = Cluster::start("cluster replica killed") else {
        return;
    };
    let lb = cluster.lb.as_str();
    let victim = cluster.replica_pid(0);
    let stop = Arc::new(AtomicBool::new(false));
    let killed: std::sync::OnceLock<(Instant, Instant)> = std::sync::OnceLock::new();

    let calls: Vec<Timed> = std::thread::scope(|scope| {
        let load = scope.spawn(|| {
            concurrently(|client| {
                let mut calls = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    let answer = stateless(
                        lb,
                        None,
                        "tools/call",
                        json!({"name": "demo__slow", "arguments": {"ms": 100 + (client % 5) * 20}}),
                    );
                    let outcome = if answer.status == 200 && is_result(&answer) {
                        Ok(answer.replica().to_owned())
                    } else {
                        Err(format!(
                            "status {} from {}: {}",
                            answer.status,
                            answer.replica(),
                            answer.body.chars().take(200).collect::<String>()
                        ))
                    };
                    calls.push(Timed {
                        start,
                        end: Instant::now(),
                        outcome,
                    });
                }
                calls
            })
        });
        // Load on both replicas for a while, then SIGKILL r1 and go on.
        std::thread::sleep(Duration::from_secs(3));
        let kill = Instant::now();
        signal(victim, libc::SIGKILL);
        // Gone means its port refuses connections: the kernel closed its listening socket. That
        // is later than /proc showing the process a zombie (the thread group's leader turns
        // zombie while its other threads still exit, and the sockets close with the last one).
        let refused = loop {
            if refuses_connections(&cluster.replicas[0]) {
                break Instant::now();
            }
            assert!(
                kill.elapsed() < Duration::from_secs(10),
                "the killed replica's port still accepts connections"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        killed.set((kill, refused)).expect("once");
        std::thread::sleep(Duration::from_secs(4));
        stop.store(true, Ordering::Relaxed);
        load.join().expect("load").into_iter().flatten().collect()
    });
    let (kill, refused) = *killed.get().expect("killed");

    let before: Vec<&Timed> = calls.iter().filter(|c| c.end < kill).collect();
    let after: Vec<&Timed> = calls.iter().filter(|c| c.start > refused).collect();
    let failed: Vec<&Timed> = calls.iter().filter(|c| c.outcome.is_err()).collect();
    eprintln!(
        "replica killed: {} calls, {} before the kill, {} started after its port refused ({:?} after the kill), {} failed",
        calls.len(),
        before.len(),
        after.len(),
        refused.duration_since(kill),
        failed.len()
    );
    // Before: both replicas served, nothing failed.
    let served_before = per_replica(before.iter().filter_map(|c| c.outcome.as_ref().ok()));
    assert!(
        served_before[0] > 0 && served_before[1] > 0,
        "both replicas served before the kill: {served_before:?}"
    );
    // What failed was in flight on the dying replica: sent before its port refused, and still
    // unanswered at the kill. (HAProxy may have connected a call to r1 after the kill and
    // before the socket closed, so a client can lose two calls: the one in flight at the kill
    // and one sent in that window.)
    for call in &failed {
        assert!(
            call.start < refused && call.end >= kill,
            "a call failed that was not in flight on the dying replica: {:?}, started {:?} after its port refused\n{}",
            call.outcome,
            call.start.saturating_duration_since(refused),
            cluster.logs()
        );
    }
    // Every call that started after r1 was gone succeeded, on r2.
    let lost: Vec<&&Timed> = after.iter().filter(|c| c.outcome.is_err()).collect();
    assert!(
        lost.is_empty(),
        "{} calls after the kill failed, e.g. {:?}",
        lost.len(),
        lost.first().map(|c| &c.outcome)
    );
    let served_after = per_replica(after.iter().filter_map(|c| c.outcome.as_ref().ok()));
    assert_eq!(served_after[0], 0, "nothing is served by the dead replica");
    assert!(
        served_after[1] >= CLIENTS,
        "the load went on through r2: {served_after:?}"
    );

    // The script sees it too; stop still cleans up (Drop).
    eventually(
        "the killed replica is gone",
        Duration::from_secs(10),
        || (!alive(u64::from(victim))).then_some(()),
    );
    let (code, out, _) = cluster.script("status");
    assert!(
        code != 0 && out.contains("replica r1  stopped") && out.contains("replica r2  running"),
        "status: {out}"
    );
}

/// Whether the answer is a tool's result (not a JSON-RPC error, not an `isError` result).
fn is_result(answer: &Answer) -> bool {
    answer.message().is_some_and(|m| {
        m.pointer("/result/content").is_some()
            && m.pointer("/result/isError") != Some(&Value::Bool(true))
    })
}
