//! OAuth logins in the store: sealed at rest under a key that is a file of its own, bound to
//! their server, followed by the generation.

use std::os::unix::fs::PermissionsExt;

use crate::logins::{open, seal};
use crate::*;

const LOGIN: &[u8] =
    br#"{"access_token":"access-token-value","refresh_token":"refresh-token-value"}"#;

#[test]
fn a_login_round_trips_and_each_write_moves_the_generation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::open(dir.path()).expect("open");
    assert_eq!(store.oauth_login("s").expect("read"), None);
    let before = store.generation().expect("generation");
    store.put_oauth_login("s", LOGIN).expect("put");
    assert_eq!(
        store.oauth_login("s").expect("read").as_deref(),
        Some(LOGIN)
    );
    assert_eq!(store.generation().expect("generation"), before + 1);
    let rows = store.oauth_logins().expect("list");
    assert_eq!(
        rows.iter().map(|r| r.server.as_str()).collect::<Vec<_>>(),
        ["s"]
    );
    assert!(store.delete_oauth_login("s").expect("delete"));
    assert!(!store.delete_oauth_login("s").expect("delete again"));
    assert_eq!(store.generation().expect("generation"), before + 2);
    assert_eq!(store.oauth_login("s").expect("read"), None);
}

#[test]
fn tokens_are_not_in_the_database_file_and_the_key_is_a_private_file_beside_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::open(dir.path()).expect("open");
    store.put_oauth_login("s", LOGIN).expect("put");
    drop(store);
    for file in ["state.db", "state.db-wal"] {
        let bytes = std::fs::read(dir.path().join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("token-value"),
            "a token in {file} in the clear"
        );
    }
    let key = dir.path().join(TOKEN_KEY_FILE);
    let mode = std::fs::metadata(&key)
        .expect("key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // A new key (the file replaced) opens nothing: an error, never a login.
    std::fs::write(&key, "11".repeat(32)).expect("replace key");
    let (store, _) = Store::open(dir.path()).expect("reopen");
    let refused = store.oauth_login("s").expect_err("another key");
    assert!(refused.to_string().contains("log in again"), "{refused}");
}

#[test]
fn a_sealed_login_opens_only_for_its_server_and_only_untouched() {
    let key = [7u8; 32];
    let sealed = seal(&key, "a", LOGIN).expect("seal");
    assert_eq!(open(&key, "a", &sealed).expect("open"), LOGIN);
    assert!(open(&key, "b", &sealed).is_err());
    assert!(open(&[8u8; 32], "a", &sealed).is_err());
    let mut tampered = sealed.clone();
    if let Some(last) = tampered.last_mut() {
        *last ^= 1;
    }
    assert!(open(&key, "a", &tampered).is_err());
    assert!(open(&key, "a", &sealed[..5]).is_err());
    assert_ne!(
        seal(&key, "a", LOGIN).expect("seal"),
        sealed,
        "a fresh nonce each time"
    );
}

#[test]
fn each_caller_s_login_is_its_own_and_opens_for_no_other_caller() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::open(dir.path()).expect("open");
    assert_eq!(store.caller_login("s", "alice").expect("read"), None);
    let before = store.generation().expect("generation");
    store.put_caller_login("s", "alice", LOGIN).expect("put");
    assert_eq!(store.generation().expect("generation"), before + 1);
    assert_eq!(
        store.caller_login("s", "alice").expect("read").as_deref(),
        Some(LOGIN)
    );
    assert_eq!(store.caller_login("s", "bob").expect("read"), None);
    assert_eq!(store.oauth_login("s").expect("the gateway's own"), None);
    // A row copied to another caller does not open.
    let key = store.token_key().expect("key");
    let sealed = seal(&key, "s\0alice", LOGIN).expect("seal");
    assert!(open(&key, "s\0bob", &sealed).is_err());
    let rows = store.caller_logins().expect("list");
    assert_eq!(
        rows.iter()
            .map(|r| (r.server.as_str(), r.caller.as_str()))
            .collect::<Vec<_>>(),
        [("s", "alice")]
    );
    store.put_caller_login("t", "bob", LOGIN).expect("put");
    let to_s = store.caller_logins_to("s").expect("one server's");
    assert_eq!(
        to_s.iter()
            .map(|r| (r.server.as_str(), r.caller.as_str()))
            .collect::<Vec<_>>(),
        [("s", "alice")]
    );
    assert!(store.caller_logins_to("u").expect("none").is_empty());
    assert_eq!(store.caller_logins().expect("all").len(), 2);
    assert!(store.delete_caller_login("s", "alice").expect("revoke"));
    assert!(!store.delete_caller_login("s", "alice").expect("again"));
    assert_eq!(store.caller_login("s", "alice").expect("read"), None);
}

#[test]
fn a_refresh_updates_only_a_login_still_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::open(dir.path()).expect("open");
    assert!(
        !store.update_oauth_login("s", LOGIN).expect("update"),
        "nothing to update"
    );
    assert_eq!(
        store.oauth_login("s").expect("read"),
        None,
        "not brought into being"
    );
    store.put_oauth_login("s", b"{}").expect("put");
    assert!(store.update_oauth_login("s", LOGIN).expect("update"));
    assert_eq!(
        store.oauth_login("s").expect("read").as_deref(),
        Some(LOGIN)
    );
    assert!(
        !store
            .update_caller_login("s", "alice", LOGIN)
            .expect("update")
    );
    assert_eq!(store.caller_login("s", "alice").expect("read"), None);
    store.put_caller_login("s", "alice", b"{}").expect("put");
    assert!(
        store
            .update_caller_login("s", "alice", LOGIN)
            .expect("update")
    );
    store.delete_caller_login("s", "alice").expect("revoke");
    assert!(
        !store
            .update_caller_login("s", "alice", LOGIN)
            .expect("update")
    );
    assert_eq!(
        store.caller_login("s", "alice").expect("read"),
        None,
        "a revocation wins"
    );
}
