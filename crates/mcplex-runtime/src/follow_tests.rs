//! The follower against a real store in a temporary directory: it registers the gateway, follows
//! a write made by another process (tokens reloaded, the generation handed to the catalog task),
//! and removes the registration when stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mcplex_state::{Location, StateError, Store};
use mcplex_trust::{Change, ServerRecord, ServerState};
use tokio::sync::watch;

use crate::follow::{self, Credentials};

/// Counts the reloads the follower asks for.
#[derive(Default)]
struct CountedTokens(AtomicUsize);

impl Credentials for CountedTokens {
    fn reload_credentials(&self) -> Result<(), StateError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test]
async fn a_write_by_another_process_is_followed_and_the_registration_removed_at_stop() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let location = Location::Directory(dir.path().to_path_buf());
    let (store, _) = Store::open_at(&location).expect("a new store");
    let store = Arc::new(store);
    let tokens = Arc::new(CountedTokens::default());
    let generation = watch::Sender::new(-1);
    let mut seen = generation.subscribe();
    let reachable = Arc::new(AtomicBool::new(false));
    let follower = follow::start(
        store.clone(),
        tokens.clone(),
        generation,
        "127.0.0.1:1".to_owned(),
        reachable.clone(),
    )
    .expect("registered");
    let addresses = |store: &Store| -> Vec<String> {
        let live = store.live_instances().expect("instances");
        live.into_iter().map(|i| i.address).collect()
    };
    assert_eq!(addresses(&store), ["127.0.0.1:1"]);

    // The first read hands over the store's generation and loads the tokens.
    let wait = Duration::from_secs(5);
    tokio::time::timeout(wait, seen.changed())
        .await
        .expect("followed")
        .expect("open");
    let first = *seen.borrow_and_update();
    assert!(reachable.load(Ordering::SeqCst));
    let reloads = tokens.0.load(Ordering::SeqCst);
    assert!(reloads >= 1);

    // Another process writes: the generation moves and the tokens are reloaded.
    let (other, _) = Store::open_at(&location).expect("the same store");
    let approve = Change::Server {
        name: "alpha".into(),
        record: ServerRecord {
            state: ServerState::Approved,
            pin_next_listing: false,
        },
    };
    other.apply(&[approve]).expect("written");
    tokio::time::timeout(wait, seen.changed())
        .await
        .expect("followed")
        .expect("open");
    assert!(*seen.borrow() > first);
    assert!(tokens.0.load(Ordering::SeqCst) > reloads);

    follower.stop().await;
    assert!(addresses(&store).is_empty());
}
