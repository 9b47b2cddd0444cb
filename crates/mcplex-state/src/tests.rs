//! The store on SQLite (and PostgreSQL when `MCPLEX_TEST_POSTGRES` names one): migrations,
//! approvals and pins, tokens as keyed hashes, the API key, the audit log, embeddings, the write
//! generation and the registry of running gateways.

use std::os::unix::fs::PermissionsExt;

use mcplex_trust::{Approvals, Permissions, ServerState};

use crate::*;

/// Where a test's store is: SQLite in a temporary directory, and, when `MCPLEX_TEST_POSTGRES`
/// names a PostgreSQL server (`postgres://user@host:port`), a fresh database on it named after
/// the test. Tests of behaviour both backends share run on every place.
pub(crate) struct Place {
    pub(crate) location: Location,
    _dir: Option<tempfile::TempDir>,
}

impl Place {
    pub(crate) fn open(&self) -> (Store, Opened) {
        Store::open_at(&self.location).unwrap_or_else(|e| panic!("open {}: {e}", self.location))
    }
}

pub(crate) fn places(test: &str) -> Vec<Place> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut places = vec![Place {
        location: Location::Directory(dir.path().to_owned()),
        _dir: Some(dir),
    }];
    if let Some(url) = postgres_database(&format!("mcplex_{test}")) {
        places.push(Place {
            location: Location::Postgres(url),
            _dir: None,
        });
    }
    places
}

/// A fresh database `name` on the test server `MCPLEX_TEST_POSTGRES` names, or `None` (said)
/// without one. In CI there must be one: a store test that drops PostgreSQL tests half the store.
pub(crate) fn postgres_database(name: &str) -> Option<String> {
    let in_ci = std::env::var("CI").is_ok_and(|ci| ci == "true" || ci == "1");
    let Ok(server) = std::env::var("MCPLEX_TEST_POSTGRES") else {
        assert!(
            !in_ci,
            "{name}: CI=true and MCPLEX_TEST_POSTGRES is not set (scripts/test.sh starts a server)"
        );
        eprintln!("{name}: MCPLEX_TEST_POSTGRES is not set: the PostgreSQL store is not tested");
        return None;
    };
    let server = server.trim_end_matches('/');
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

pub(crate) fn spec(name: &str) -> TokenSpec {
    TokenSpec {
        name: name.into(),
        servers: Some(["a".to_string()].into()),
        permissions: Permissions::parse("read").expect("valid"),
        profile: None,
        expires_at: None,
        limits: Default::default(),
    }
}

#[test]
fn first_open_creates_and_reopening_keeps_approvals_and_the_secret() {
    for place in places("first_open") {
        let (store, opened) = place.open();
        assert!(opened.created, "{}", place.location);
        let mut approvals = Approvals::default();
        let mut changes = approvals.register("a", ServerState::Approved);
        changes.extend(approvals.observe("a", &[("t".into(), "h".into())], false));
        store.apply(&changes).expect("apply");
        let mac = store.token_mac("x");
        let key = store.admin_key().expect("api key");
        drop(store);
        let (store, opened) = place.open();
        assert!(!opened.created);
        assert_eq!(store.load_approvals().expect("load"), approvals);
        assert_eq!(
            store.token_mac("x"),
            mac,
            "the installation secret survives restarts"
        );
        let again = store.admin_key().expect("api key");
        assert_eq!(again.verifier, key.verifier, "one key per store");
        assert_eq!(again.created, None, "shown once, when it is created");
    }
}

#[test]
fn tokens_are_stored_only_as_keyed_hashes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::open(dir.path()).expect("open");
    let new = store.create_token(spec("ci")).expect("create");
    assert!(new.token.starts_with("mcplex_"));
    let bytes = std::fs::read(dir.path().join(DATABASE_FILE)).expect("read db");
    let wal = std::fs::read(dir.path().join(format!("{DATABASE_FILE}-wal"))).unwrap_or_default();
    let needle = new.token.as_bytes();
    for file in [&bytes, &wal] {
        assert!(
            !file.windows(needle.len()).any(|w| w == needle),
            "token stored in clear"
        );
    }
    let found = store
        .token_by_mac(&store.token_mac(&new.token))
        .expect("lookup");
    assert_eq!(found.map(|t| t.spec), Some(new.record.spec.clone()));
    assert!(matches!(
        store.create_token(spec("ci")),
        Err(StateError::TokenExists(_))
    ));
    // An OAuth caller's name is reserved: audit rows and limits could not tell them apart.
    assert!(matches!(
        store.create_token(spec("oauth:alice")),
        Err(StateError::Invalid(_))
    ));
}

#[test]
fn revoked_and_expired_tokens_are_inactive() {
    for place in places("revoked") {
        let (store, _) = place.open();
        let now = now_unix();
        let expiring = store
            .create_token(TokenSpec {
                expires_at: Some(now + 60),
                ..spec("soon")
            })
            .expect("create");
        assert!(expiring.record.is_active(now));
        assert!(!expiring.record.is_active(now + 60));
        assert_eq!(expiring.record.status(now + 61), "expired");
        store.create_token(spec("gone")).expect("create");
        assert!(store.revoke_token("gone").expect("revoke"));
        assert!(!store.revoke_token("gone").expect("revoke twice"));
        assert!(!store.revoke_token("never").expect("revoke unknown"));
        let gone = store
            .tokens()
            .expect("list")
            .into_iter()
            .find(|t| t.spec.name == "gone");
        assert_eq!(gone.map(|t| t.status(now)), Some("revoked"));
    }
}

#[test]
fn the_api_key_is_created_once_and_private() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = api_key(dir.path()).expect("create");
    assert_eq!(api_key(dir.path()).expect("read"), key);
    let mode = std::fs::metadata(dir.path().join(API_KEY_FILE))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let (store, _) = Store::open(dir.path()).expect("open");
    assert!(store.secrets_match(&key, &key));
    assert!(!store.secrets_match("mcplex_admin_guess", &key));
}

#[test]
fn a_database_from_a_newer_build_is_refused_not_damaged() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(Store::open(dir.path()).expect("open"));
    let conn = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).expect("raw open");
    conn.pragma_update(None, "user_version", 99).expect("bump");
    drop(conn);
    assert!(matches!(
        Store::open(dir.path()),
        Err(StateError::NewerSchema { found: 99, .. })
    ));
}

#[test]
fn the_audit_log_keeps_rows_newest_first_within_retention() {
    for place in places("audit") {
        let (store, _) = place.open();
        let row = |at_ms: i64, token: Option<&str>, tool: &str| Activity {
            at_ms,
            request_id: format!("r{at_ms}"),
            token: token.map(str::to_owned),
            tool: tool.to_owned(),
            status: "ok".to_owned(),
            duration_us: 1500,
            request_bytes: 10,
            response_bytes: 20,
            arguments: None,
            replica: Some("r1:8080".to_owned()),
            method: "tools/call".to_owned(),
        };
        store
            .record_activity(
                &[
                    row(1, None, "a:x"),
                    row(2, Some("ci"), "a:y"),
                    row(3, Some("ci"), "a:x"),
                ],
                0,
            )
            .expect("record");
        let all = store
            .activity(&ActivityQuery {
                limit: 10,
                ..Default::default()
            })
            .expect("read");
        assert_eq!(all.iter().map(|a| a.at_ms).collect::<Vec<_>>(), [3, 2, 1]);
        let ci = store
            .activity(&ActivityQuery {
                limit: 10,
                token: Some("ci".into()),
                tool: Some("a:x".into()),
                ..Default::default()
            })
            .expect("read");
        assert_eq!(ci, [row(3, Some("ci"), "a:x")]);
        // The tool filter takes part of the name in any case; `%` and `_` match only themselves.
        store
            .record_activity(&[row(4, None, "Fix_Ture:Weather")], 0)
            .expect("record");
        let by_part = |part: &str| {
            store
                .activity(&ActivityQuery {
                    limit: 10,
                    tool: Some(part.into()),
                    ..Default::default()
                })
                .expect("read")
                .iter()
                .map(|a| a.at_ms)
                .collect::<Vec<_>>()
        };
        assert_eq!(by_part("weather"), [4]);
        assert_eq!(by_part("x_t"), [4]);
        assert_eq!(by_part("a:"), [3, 2, 1]);
        assert_eq!(by_part("%"), Vec::<i64>::new());
        assert_eq!(by_part("a_x"), Vec::<i64>::new(), "_ is not a wildcard");
        store.record_activity(&[], 3).expect("prune");
        assert_eq!(
            store
                .activity(&ActivityQuery {
                    limit: 10,
                    ..Default::default()
                })
                .expect("read")
                .len(),
            2
        );
    }
}

/// A batch larger than one INSERT statement takes is stored whole, every row with its own values.
#[test]
fn a_large_audit_batch_is_stored_row_for_row() {
    for place in places("audit_batch") {
        let (store, _) = place.open();
        let rows: Vec<Activity> = (0..150)
            .map(|i| Activity {
                at_ms: 1000 + i,
                request_id: format!("r{i}"),
                token: (i % 2 == 0).then(|| format!("t{i}")),
                tool: format!("s:tool{i}"),
                status: "ok".to_owned(),
                duration_us: i,
                request_bytes: 2 * i,
                response_bytes: 3 * i,
                arguments: (i % 3 == 0).then(|| format!("{{\"i\":{i}}}")),
                replica: None,
                method: if i % 2 == 0 {
                    "tools/call"
                } else {
                    "prompts/get"
                }
                .to_owned(),
            })
            .collect();
        store.record_activity(&rows, 0).expect("record");
        let mut stored = store
            .activity(&ActivityQuery {
                limit: 1000,
                ..Default::default()
            })
            .expect("read");
        stored.reverse();
        assert_eq!(stored, rows);
    }
}

#[test]
fn the_audit_log_filters_by_outcome_and_caller_pages_and_counts() {
    for place in places("audit_pages") {
        let (store, _) = place.open();
        let row = |at_ms: i64, token: Option<&str>, status: &str| Activity {
            at_ms,
            request_id: format!("r{at_ms}"),
            token: token.map(str::to_owned),
            tool: if at_ms % 2 == 0 { "a:x" } else { "b:y" }.to_owned(),
            status: status.to_owned(),
            duration_us: 1,
            request_bytes: 1,
            response_bytes: 1,
            arguments: None,
            replica: None,
            method: "tools/call".to_owned(),
        };
        let rows: Vec<Activity> = (1..=6)
            .map(|n| {
                row(
                    n,
                    (n > 3).then_some("ci"),
                    if n == 5 { "timeout" } else { "ok" },
                )
            })
            .collect();
        store.record_activity(&rows, 0).expect("record");
        let read = |query: ActivityQuery| -> Vec<i64> {
            let rows = store.activity(&query).expect("read");
            rows.iter().map(|a| a.at_ms).collect()
        };
        let page = |offset| ActivityQuery {
            limit: 2,
            offset,
            ..Default::default()
        };
        assert_eq!(
            (read(page(0)), read(page(2)), read(page(4))),
            (vec![6, 5], vec![4, 3], vec![2, 1])
        );
        let failed = ActivityQuery {
            limit: 10,
            status: Some("timeout".into()),
            ..Default::default()
        };
        assert_eq!(read(failed), [5]);
        let operator = ActivityQuery {
            limit: 10,
            token: Some(ActivityQuery::NO_TOKEN.into()),
            ..Default::default()
        };
        assert_eq!(read(operator), [3, 2, 1]);
        let mut counts = store.activity_counts(2).expect("counts");
        counts.sort_by(|a, b| (&a.tool, &a.status).cmp(&(&b.tool, &b.status)));
        let counted: Vec<(&str, &str, i64)> = counts
            .iter()
            .map(|c| (c.tool.as_str(), c.status.as_str(), c.count))
            .collect();
        assert_eq!(
            counted,
            [("a:x", "ok", 3), ("b:y", "ok", 1), ("b:y", "timeout", 1)]
        );
    }
}

#[test]
fn embeddings_survive_a_restart_for_their_model_only() {
    for place in places("embeddings") {
        let (store, _) = place.open();
        let (one, two) = ([1u8; 32], [2u8; 32]);
        store
            .save_embeddings("minilm", &[(&one, &[0.5, -0.25]), (&two, &[1.0, 0.0])])
            .expect("save");
        store
            .save_embeddings("other", &[(&one, &[9.0])])
            .expect("save");
        drop(store);
        let (store, _) = place.open();
        let mut loaded = store.load_embeddings("minilm").expect("load");
        loaded.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            loaded,
            [
                (one.to_vec(), vec![0.5, -0.25]),
                (two.to_vec(), vec![1.0, 0.0])
            ]
        );
        store.retain_embeddings("minilm", &[&two]).expect("retain");
        assert_eq!(
            store.load_embeddings("minilm").expect("load"),
            [(two.to_vec(), vec![1.0, 0.0])]
        );
        assert!(
            store.load_embeddings("other").expect("load").is_empty(),
            "loading minilm forgot the other model's rows"
        );
        assert!(
            store.load_embeddings("minilm").expect("load").is_empty(),
            "and loading the other model forgot minilm's"
        );
    }
}

#[test]
fn a_version_2_database_gains_the_embeddings_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(Store::open(dir.path()).expect("open"));
    let conn = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).expect("raw open");
    conn.execute_batch(
        "DROP TABLE embeddings; ALTER TABLE activity DROP COLUMN replica; ALTER TABLE activity DROP COLUMN method; \
         ALTER TABLE tokens DROP COLUMN limits; DROP TABLE call_usage; DROP TABLE pending_logins; PRAGMA user_version = 2;",
    )
    .expect("back to version 2");
    drop(conn);
    let (store, opened) = Store::open(dir.path()).expect("migrate");
    assert!(!opened.created);
    store
        .save_embeddings("m", &[(&[7u8][..], &[1.0][..])])
        .expect("the table is there");
}

#[test]
fn every_operator_write_moves_the_generation_that_other_handles_see() {
    for place in places("generation") {
        let (gateway, _) = place.open();
        // Another process on the same database: the CLI, or a second gateway.
        let (cli, _) = place.open();
        let mut seen = gateway.generation().expect("generation");

        let mut moved = |what: &str| {
            let now = gateway.generation().expect("generation");
            assert!(now > seen, "{what} moved the generation ({seen} → {now})");
            seen = now;
        };
        cli.create_token(spec("a1")).expect("create");
        moved("a token created by another handle");
        assert!(cli.revoke_token("a1").expect("revoke"));
        moved("a revocation");
        let mut approvals = Approvals::default();
        cli.apply(&approvals.register("s", ServerState::Quarantined))
            .expect("apply");
        moved("an approval change");

        assert!(!cli.revoke_token("a1").expect("revoke again"));
        cli.apply(&[]).expect("nothing to apply");
        assert_eq!(
            gateway.generation().expect("generation"),
            seen,
            "writes that change nothing do not wake every gateway"
        );
    }
}

#[test]
fn running_gateways_register_and_leave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::open(dir.path()).expect("open");
    let first = store.register_instance("127.0.0.1:1").expect("register");
    let second = store.register_instance("127.0.0.1:2").expect("register");
    let live = store.live_instances().expect("list");
    assert_eq!(live.len(), 2);
    assert!(live.iter().all(|i| i.pid == std::process::id()));
    store.deregister_instance(&first).expect("deregister");
    let live = store.live_instances().expect("list");
    assert_eq!(
        live.iter().map(|i| i.address.as_str()).collect::<Vec<_>>(),
        ["127.0.0.1:2"]
    );
    // A heartbeat brings back a row that someone removed.
    store.deregister_instance(&second).expect("deregister");
    store.heartbeat(&second, "127.0.0.1:2").expect("heartbeat");
    assert_eq!(store.live_instances().expect("list").len(), 1);

    // One whose heartbeat stopped is not listed.
    let conn = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).expect("raw open");
    conn.execute(
        "UPDATE instances SET heartbeat_at = heartbeat_at - 3600",
        [],
    )
    .expect("age");
    assert!(store.live_instances().expect("list").is_empty());
}

#[test]
fn approval_pins_only_the_latest_observed_definition() {
    for place in places("reviews") {
        let (store, _) = place.open();
        let observation = |hash: &str| Observation {
            server: "s".into(),
            tool: "t".into(),
            hash: hash.into(),
            definition: format!(r#"{{"name":"t","description":"{hash}"}}"#),
        };
        assert_eq!(
            store.approve_observed("s", "t", "h1").expect("approve"),
            Err(ApproveRefusal::NotObserved)
        );
        store
            .record_observations(&[observation("h1")])
            .expect("record");
        let before = store.generation().expect("generation");
        assert_eq!(
            store.approve_observed("s", "t", "h1").expect("approve"),
            Ok(())
        );
        assert!(store.generation().expect("generation") > before);
        // The tool changes again after the operator looked at h1.
        store
            .record_observations(&[observation("h2")])
            .expect("record");
        assert_eq!(
            store.approve_observed("s", "t", "h1").expect("approve"),
            Err(ApproveRefusal::Changed {
                current: "h2".into()
            })
        );
        let review = store.review("s", "t").expect("review");
        assert_eq!(
            review.pinned,
            Some(("h1".into(), Some(observation("h1").definition)))
        );
        assert_eq!(
            review.observed,
            Some(("h2".into(), observation("h2").definition))
        );
        assert!(!review.blocked);
        assert_eq!(
            store
                .load_approvals()
                .expect("load")
                .tool("s", "t")
                .and_then(|t| t.pinned.clone()),
            Some("h1".into())
        );
    }
}

#[test]
fn the_founding_servers_are_decided_once_by_the_first_process_that_asks() {
    for place in places("founding") {
        let (first, opened) = place.open();
        let (second, reopened) = place.open();
        assert!(opened.created && !reopened.created);
        let a = vec!["a".to_owned()];
        let b = vec!["b".to_owned()];
        // Two replicas start together on a new store, whatever their order: one decides.
        assert_eq!(
            second.founding_servers(&a).expect("decide"),
            ["a".to_owned()].into()
        );
        assert_eq!(
            first.founding_servers(&b).expect("read"),
            ["a".to_owned()].into()
        );
    }
    // A store from before the founding servers were recorded founds nothing now.
    let dir = tempfile::tempdir().expect("tempdir");
    drop(Store::open(dir.path()).expect("open"));
    let conn = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).expect("raw open");
    conn.execute("DELETE FROM meta WHERE key = 'founding'", [])
        .expect("as an old store");
    drop(conn);
    let (store, _) = Store::open(dir.path()).expect("reopen");
    assert!(
        store
            .founding_servers(&["a".to_owned()])
            .expect("read")
            .is_empty()
    );
}
