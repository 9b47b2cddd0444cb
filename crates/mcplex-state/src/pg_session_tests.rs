//! The bounds of a PostgreSQL session (`pg_session.rs`) on a real server: what a session runs
//! under, a write that cannot get the write lock failing in time, and a migration waiting past
//! that bound. Needs `MCPLEX_TEST_POSTGRES` (CI has one).

use std::time::{Duration, Instant};

use crate::pg_tls::PgTarget;
use crate::sql::{Mode, WRITE_LOCK};
use crate::tests::postgres_database;
use crate::*;

fn setting(store: &Store, name: &str) -> String {
    store
        .db
        .transaction(Mode::Read, |tx| {
            let row = tx.query_first(&format!("SHOW {name}"), &[])?;
            row.map(|row| row.text(0)).transpose()
        })
        .expect("SHOW")
        .expect("a row")
}

/// `url` with `options` added to its query.
fn with_options(url: &str, options: &str) -> String {
    let joiner = if url.contains('?') { '&' } else { '?' };
    format!(
        "{url}{joiner}options={}",
        options.replace(' ', "%20").replace('=', "%3D")
    )
}

#[test]
fn a_store_session_runs_under_the_bounds_and_the_urls_own_options_win() {
    let Some(url) = postgres_database("mcplex_session_bounds") else {
        return;
    };
    let (store, _) = Store::open_at(&Location::Postgres(url.clone())).expect("open");
    assert_eq!(setting(&store, "statement_timeout"), "30s");
    assert_eq!(setting(&store, "lock_timeout"), "20s");
    assert_eq!(
        setting(&store, "idle_in_transaction_session_timeout"),
        "1min"
    );
    drop(store);

    let url = with_options(&url, "-c statement_timeout=5s");
    let (store, _) = Store::open_at(&Location::Postgres(url)).expect("open");
    assert_eq!(setting(&store, "statement_timeout"), "5s");
    assert_eq!(setting(&store, "lock_timeout"), "20s");
}

#[test]
fn a_write_behind_a_stuck_writer_fails_in_time_and_a_migration_waits_for_it() {
    let Some(url) = postgres_database("mcplex_session_lock") else {
        return;
    };
    let url = with_options(&url, "-c lock_timeout=1s");
    let (store, _) = Store::open_at(&Location::Postgres(url.clone())).expect("open");

    // Another session takes the write lock and sits on it, as a frozen replica would.
    let target = PgTarget::parse(&url).expect("URL");
    let (release, holding) = std::sync::mpsc::channel::<()>();
    let (taken, lock_taken) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let mut client = target.connect().expect("connect");
        let mut tx = client.transaction().expect("begin");
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
            .expect("lock");
        taken.send(()).expect("taken");
        holding.recv().expect("released");
        tx.commit().expect("commit");
    });
    lock_taken
        .recv_timeout(Duration::from_secs(20))
        .expect("the lock is taken");

    let started = Instant::now();
    let refused = store.db.transaction(Mode::Write, |_| Ok(()));
    let waited = started.elapsed();
    let error = refused.expect_err("the write lock is held").to_string();
    assert!(error.contains("lock timeout"), "{error}");
    assert!(waited < Duration::from_secs(10), "waited {waited:?}");

    // A gateway starting now migrates: it waits for the lock past the session's bound.
    let release_after = Duration::from_millis(2500);
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(release_after);
        release.send(()).expect("release");
    });
    let started = Instant::now();
    let reopened = Store::open_at(&Location::Postgres(url));
    assert!(
        reopened.is_ok(),
        "the migration waited: {:?}",
        reopened.err()
    );
    assert!(started.elapsed() >= Duration::from_secs(2));
    releaser.join().expect("releaser");
    holder.join().expect("holder");
}
