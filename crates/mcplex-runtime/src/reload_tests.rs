//! Re-reads of the config file, given as text: a hot edit is applied, a cold edit is kept as it
//! runs and named alone, an invalid edit keeps the running config, and the next valid read says
//! so; servers are reconciled only when the server list changed.

use std::sync::{Arc, Mutex};

use mcplex_config::{Config, DirectToolResponseMode, Overrides, parse_config};
use tokio::sync::watch;

use crate::reload::{ConfigReloader, Reread};

const RUNNING: &str = r#"{"listen": "127.0.0.1:9", "mcpServers": {"alpha": {"command": "alpha"}}}"#;

struct Rig {
    reloader: ConfigReloader,
    configs: watch::Receiver<Arc<Config>>,
    /// The server names of each reconcile.
    reconciled: Arc<Mutex<Vec<Vec<String>>>>,
}

fn rig() -> Rig {
    let running = parse_config(RUNNING, "cfg.json", &Overrides::default()).expect("valid");
    let search_tools_listed = running.defers_anything();
    let (sender, configs) = watch::channel(Arc::new(running));
    let reconciled = Arc::new(Mutex::new(Vec::new()));
    let seen = reconciled.clone();
    let reconcile = Box::new(move |config: &Config| {
        let names = config.servers.iter().map(|s| s.name.clone()).collect();
        seen.lock().expect("not poisoned").push(names);
    });
    let reloader = ConfigReloader::new(
        "cfg.json".into(),
        Overrides::default(),
        sender,
        reconcile,
        crate::AddedServers::default(),
        search_tools_listed,
    );
    Rig {
        reloader,
        configs,
        reconciled,
    }
}

impl Rig {
    fn edit(&mut self, text: &str) -> Reread {
        self.reloader.reread(Ok(text.to_owned()))
    }

    fn reconciles(&self) -> Vec<Vec<String>> {
        self.reconciled.lock().expect("not poisoned").clone()
    }
}

#[test]
fn a_hot_edit_is_applied_without_touching_the_servers() {
    let mut rig = rig();
    let reread = rig.edit(
        r#"{"listen": "127.0.0.1:9", "direct_tool_response_mode": "deferred", "mcpServers": {"alpha": {"command": "alpha"}}}"#,
    );
    let Reread::Valid { reloaded, .. } = reread else {
        panic!("expected a valid edit, got {reread:?}");
    };
    assert_eq!(reloaded.applied, ["direct_tool_response_mode"]);
    assert!(reloaded.needs_restart.is_empty());
    assert!(rig.configs.has_changed().expect("open"));
    assert_eq!(
        rig.configs.borrow_and_update().direct_tool_response_mode,
        DirectToolResponseMode::Deferred
    );
    assert!(rig.reconciles().is_empty());
}

#[test]
fn a_server_edit_reconciles_the_running_servers() {
    let mut rig = rig();
    rig.edit(
        r#"{"listen": "127.0.0.1:9", "mcpServers": {"alpha": {"command": "alpha"}, "beta": {"command": "beta"}}}"#,
    );
    assert_eq!(rig.reconciles(), [vec!["alpha", "beta"]]);
    assert_eq!(rig.configs.borrow_and_update().servers.len(), 2);
}

#[test]
fn a_cold_edit_is_named_alone_and_changes_nothing_that_runs() {
    let mut rig = rig();
    let reread =
        rig.edit(r#"{"listen": "127.0.0.1:10", "mcpServers": {"alpha": {"command": "alpha"}}}"#);
    let Reread::Valid { reloaded, .. } = reread else {
        panic!("expected a valid edit, got {reread:?}");
    };
    assert_eq!(reloaded.needs_restart, ["listen"]);
    assert!(reloaded.applied.is_empty());
    assert!(!rig.configs.has_changed().expect("open"), "nothing rebuilt");
    assert_eq!(rig.configs.borrow().listen, "127.0.0.1:9");
    assert!(rig.reconciles().is_empty());
}

#[test]
fn an_invalid_edit_keeps_the_running_config_and_the_next_valid_one_says_so() {
    let mut rig = rig();
    let invalid = r#"{"direct_tool_response_mode": "sideways"}"#;
    let reread = rig.edit(invalid);
    let Reread::Refused(error) = reread else {
        panic!("expected a refusal, got {reread:?}");
    };
    assert_eq!(error.key(), Some("direct_tool_response_mode"));
    assert!(!rig.configs.has_changed().expect("open"));
    // The same text read again (an editor touching the file twice) is not refused twice.
    assert!(matches!(rig.edit(invalid), Reread::Same));

    let reread = rig.edit(RUNNING);
    assert!(
        matches!(reread, Reread::Valid { valid_again: true, ref reloaded } if reloaded.applied.is_empty()),
        "{reread:?}"
    );
    // Valid from then on: the next edit is not "valid again".
    let reread = rig.edit(
        r#"{"listen": "127.0.0.1:9", "tool_response_mode": "compact", "mcpServers": {"alpha": {"command": "alpha"}}}"#,
    );
    assert!(
        matches!(
            reread,
            Reread::Valid {
                valid_again: false,
                ..
            }
        ),
        "{reread:?}"
    );
}

#[test]
fn a_file_that_cannot_be_read_keeps_the_running_config() {
    let mut rig = rig();
    let gone = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
    assert!(matches!(
        rig.reloader.reread(Err(gone)),
        Reread::Unreadable(_)
    ));
    assert!(!rig.configs.has_changed().expect("open"));
    assert!(matches!(
        rig.edit(RUNNING),
        Reread::Valid {
            valid_again: true,
            ..
        }
    ));
}
