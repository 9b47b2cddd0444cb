//! The admin API key in the store: never in a PostgreSQL database, rotated everywhere at once.

use crate::Location;
use crate::tests::places;

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
