//! The admin API key in the store: never in a PostgreSQL database, rotated everywhere at once.

use crate::tests::places;
use crate::{GivenKey, Location};

/// A PostgreSQL store holds no API key, only its verifier: the key is shown once, when it is
/// created or rotated, and a key an earlier release stored in clear becomes a verifier.
#[test]
fn the_api_key_is_never_in_the_database() {
    for place in places("api_key") {
        let (store, _) = place.open();
        let first = store.admin_key().expect("api key");
        let key = match (&place.location, &first.created) {
            (Location::Postgres(_), Some(key)) => key.clone(),
            (Location::Postgres(_), None) => panic!("a new PostgreSQL store shows its key once"),
            (Location::Directory(_), created) => {
                assert_eq!(*created, None, "the file is where the key is");
                store.known_admin_key().expect("file").expect("a key")
            }
        };
        assert!(store.is_admin_key(&key, &first.verifier));
        assert!(!store.is_admin_key("mcplex_admin_guess", &first.verifier));
        let rotated = store.rotate_admin_key().expect("rotate");
        let now = store.admin_key().expect("api key");
        assert!(store.is_admin_key(&rotated, &now.verifier));
        assert!(
            !store.is_admin_key(&key, &now.verifier),
            "the old key stops working"
        );
        if let Location::Postgres(url) = &place.location {
            let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
            let rows = client
                .query("SELECT key, value FROM meta", &[])
                .expect("meta");
            for row in rows {
                let value: Vec<u8> = row.get(1);
                let value = String::from_utf8_lossy(&value);
                assert!(
                    !value.contains(&rotated) && !value.contains(&key),
                    "the key is in meta.{}",
                    row.get::<_, String>(0)
                );
            }
            // A store an earlier release made holds its key in clear: it keeps only a verifier.
            let old = "mcplex_admin_from_an_earlier_release";
            client
                .batch_execute(&format!(
                    "DELETE FROM meta WHERE key = 'api_key_verifier'; \
                     INSERT INTO meta (key, value) VALUES ('api_key', '{old}'::bytea)"
                ))
                .expect("an earlier release's row");
            let upgraded = store.admin_key().expect("api key");
            assert_eq!(upgraded.created, None);
            assert!(store.is_admin_key(old, &upgraded.verifier));
            let clear = client
                .query("SELECT 1 FROM meta WHERE key = 'api_key'", &[])
                .expect("meta");
            assert!(clear.is_empty(), "the clear key is gone");
        }
    }
}

/// A key the operator gives becomes the store's key, kept as a key the store made is (the
/// data directory's file, a PostgreSQL store's verifier, never the key), and replaces another.
#[test]
fn a_given_key_is_the_stores_key_and_replaces_another() {
    for place in places("given_api_key") {
        let (store, _) = place.open();
        let given = "mcplex_given_0123456789abcdef0123456789abcdef";
        let (first, taken) = store.give_admin_key(given).expect("given");
        assert_eq!((taken, first.created.clone()), (GivenKey::First, None));
        assert!(store.is_admin_key(given, &first.verifier));
        assert_eq!(
            store.current_admin_verifier().expect("verifier"),
            Some(first.verifier.clone())
        );
        let (again, taken) = store.give_admin_key(given).expect("given again");
        assert_eq!((taken, again.verifier), (GivenKey::Same, first.verifier));
        let generation = store.generation().expect("generation");
        let (_, taken) = store.give_admin_key(given).expect("given again");
        assert_eq!(taken, GivenKey::Same);
        assert_eq!(
            store.generation().expect("generation"),
            generation,
            "the same key moves nothing"
        );

        // Another key (a Secret changed, or a rotation by hand): the given one wins.
        let rotated = store.rotate_admin_key().expect("rotate");
        let (now, taken) = store.give_admin_key(given).expect("given after a rotation");
        assert_eq!(taken, GivenKey::Replaced);
        assert!(
            !store.is_admin_key(&rotated, &now.verifier),
            "the rotated key stops"
        );
        assert!(store.is_admin_key(given, &now.verifier));
        assert!(
            store.generation().expect("generation") > generation,
            "the gateways of the store are told"
        );
        assert_eq!(store.admin_key().expect("api key").verifier, now.verifier);
        match &place.location {
            Location::Directory(_) => assert_eq!(
                store.known_admin_key().expect("file").as_deref(),
                Some(given),
                "the CLI finds the key where it always does"
            ),
            Location::Postgres(url) => {
                let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
                for row in client.query("SELECT value FROM meta", &[]).expect("meta") {
                    let value: Vec<u8> = row.get(0);
                    assert!(!String::from_utf8_lossy(&value).contains(given));
                }
                // A key in clear an earlier release left goes, even beside the given key.
                client
                    .batch_execute(
                        "INSERT INTO meta (key, value) VALUES ('api_key', 'mcplex_admin_old'::bytea)",
                    )
                    .expect("an earlier release's row");
                let (_, taken) = store.give_admin_key(given).expect("given");
                assert_eq!(taken, GivenKey::Same);
                let clear = client
                    .query("SELECT 1 FROM meta WHERE key = 'api_key'", &[])
                    .expect("meta");
                assert!(clear.is_empty(), "the clear key is gone");
                // Only a key in clear: the given one replaces it.
                client
                    .batch_execute(
                        "DELETE FROM meta WHERE key = 'api_key_verifier'; \
                         INSERT INTO meta (key, value) VALUES ('api_key', 'mcplex_admin_old'::bytea)",
                    )
                    .expect("an earlier release's store");
                let (now, taken) = store.give_admin_key(given).expect("given");
                assert_eq!(taken, GivenKey::Replaced);
                assert!(!store.is_admin_key("mcplex_admin_old", &now.verifier));
                assert_eq!(
                    store.current_admin_verifier().expect("verifier"),
                    Some(now.verifier)
                );
            }
        }
    }
}

/// A blank `api_key` file is reported, not taken for a key nor replaced behind the operator's
/// back; a key given replaces it.
#[test]
fn a_blank_key_file_is_reported_and_a_given_key_replaces_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (store, _) = crate::Store::open(&data).expect("open");
    std::fs::write(data.join(crate::API_KEY_FILE), "\n").expect("blank it");
    let why = store.admin_key().expect_err("a blank file").to_string();
    assert!(why.contains("the file is blank"), "{why}");
    let given = "mcplex_given_0123456789abcdef0123456789abcdef";
    let (_, taken) = store.give_admin_key(given).expect("given");
    assert_eq!(taken, GivenKey::First);
    assert_eq!(
        store.known_admin_key().expect("file").as_deref(),
        Some(given)
    );
}

/// A key or token just made is shown where it is meant to be, never in a `Debug` (a log line
/// or an error chain that prints one).
#[test]
fn a_new_key_or_token_is_never_in_its_debug() {
    for place in places("debug_secrets") {
        let (store, _) = place.open();
        let created = store.admin_key().expect("api key");
        if let Some(key) = &created.created {
            assert!(!format!("{created:?}").contains(key.as_str()));
        }
        let token = store
            .create_token(crate::tests::spec("debugged"))
            .expect("token");
        assert!(!format!("{token:?}").contains(token.token.as_str()));
    }
}
