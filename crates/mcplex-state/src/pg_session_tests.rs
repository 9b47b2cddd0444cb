//! PostgreSQL sessions on a real server: the bound of `pg_session.rs`, set where nothing else
//! bounds idle transactions and left alone where the URL or the database does; and a server's
//! error as the store reports it. Needs `MCPLEX_TEST_POSTGRES` (CI has one).

use crate::pg_tls::PgTarget;
use crate::sql::{Mode, Param};
use crate::tests::postgres_database;
use crate::*;

const SETTING: &str = "idle_in_transaction_session_timeout";

fn setting(store: &Store) -> String {
    store
        .db
        .transaction(Mode::Read, |tx| {
            let row = tx.query_first(&format!("SHOW {SETTING}"), &[])?;
            row.map(|row| row.text(0)).transpose()
        })
        .expect("SHOW")
        .expect("a row")
}

fn opened(url: &str) -> Store {
    Store::open_at(&Location::Postgres(url.to_owned()))
        .expect("open")
        .0
}

#[test]
fn idle_transactions_are_bounded_unless_the_url_or_the_database_bounds_them() {
    let name = "mcplex_session_bounds";
    let Some(url) = postgres_database(name) else {
        return;
    };
    assert_eq!(setting(&opened(&url)), "1min");

    let with_option = format!("{url}?options=-c%20{SETTING}%3D5s");
    assert_eq!(setting(&opened(&with_option)), "5s");

    let mut admin = PgTarget::parse(&url)
        .expect("URL")
        .connect()
        .expect("connect");
    admin
        .batch_execute(&format!("ALTER DATABASE {name} SET {SETTING} = '7s'"))
        .expect("a database setting");
    assert_eq!(setting(&opened(&url)), "7s");
}

#[test]
fn a_servers_error_is_reported_in_its_words_without_the_values_it_quotes() {
    let Some(url) = postgres_database("mcplex_server_errors") else {
        return;
    };
    let store = opened(&url);
    let insert = |store: &Store| {
        store.db.transaction(Mode::Write, |tx| {
            tx.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                &[Param::Text("quoted-key-7f3a"), Param::Bytes(b"v")],
            )
        })
    };
    insert(&store).expect("the first row");
    let error = insert(&store).expect_err("the same key twice");
    // As the CLI prints an error (`{:#}`): the whole chain of sources.
    let mut shown = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        shown = format!("{shown}: {cause}");
        source = cause.source();
    }
    assert!(
        shown.contains("duplicate key value violates unique constraint"),
        "{shown}"
    );
    assert!(shown.contains("(23505)"), "{shown}");
    assert!(
        !shown.contains("quoted-key-7f3a"),
        "the DETAIL quotes the key: {shown}"
    );
}
