//! Hot reload of the config file. [`watch`] watches the file's directory (editors and
//! ConfigMaps replace files by rename, which a watch on the file itself would miss), debounces
//! bursts, and re-reads the whole file; [`ConfigReloader`] decides what a re-read does. An
//! invalid edit is refused with a log line naming the key and the running config stays; the
//! next valid read says the config is valid again. Of a valid edit, the hot settings apply at
//! once (servers that were added start, removed ones are terminated, unchanged ones keep their
//! connections) and the cold ones that changed are named as needing a restart: which is which
//! is declared once, in `mcplex_config::reload`. An edit that changes nothing hot rebuilds
//! nothing, and a file that reads as it did last time (an editor touching it twice) is not
//! reported again. A server's `trust` applies hot; its `quarantined` only decides the state it
//! is first recorded in. Every valid read is merged with the servers added from the dashboard
//! (`added.rs`) before it is compared with the running config.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mcplex_config::{Config, ConfigError, Overrides, Reloaded, ServerConfig, parse_config};
use mcplex_dispatch::Gateway;
use notify::RecursiveMode;

use crate::added::AddedServers;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::watch;

/// How long the file must be quiet before it is re-read.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// A running watch; dropping it stops watching.
pub struct Reloader {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
}

/// Starts watching `path`; each change is parsed with `overrides` (the flags and variables the
/// gateway started with), merged with `added`, and applied to `configs` (the live catalog's
/// config) and `gateway`'s running servers.
pub fn watch(
    path: PathBuf,
    overrides: Overrides,
    configs: watch::Sender<Arc<Config>>,
    gateway: Arc<Gateway>,
    added: AddedServers,
    search_tools_listed: bool,
) -> Result<Reloader, notify::Error> {
    let directory = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let file_name = path.file_name().map(|n| n.to_owned());
    let (touched_tx, mut touched_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    // The callers' default limits follow every applied edit.
    let mut applied = configs.subscribe();
    let limits = gateway.limits().clone();
    tokio::spawn(async move {
        while applied.changed().await.is_ok() {
            let defaults = applied.borrow_and_update().limits;
            limits.set_defaults(defaults);
        }
    });
    let reporting = gateway.clone();
    let mut reloader = ConfigReloader::new(
        path.clone(),
        overrides,
        configs,
        Box::new(move |config| gateway.reconcile(config)),
        added,
        search_tools_listed,
    );
    // Ends when the debouncer (and with it the sender) is dropped.
    tokio::spawn(async move {
        while touched_rx.recv().await.is_some() {
            while touched_rx.try_recv().is_ok() {}
            let shown = path.display().to_string();
            // The operator sees a refused edit where they look (the API, the dashboard), not
            // only in the log; a valid one clears it.
            match reloader.reread(std::fs::read_to_string(&path)) {
                Reread::Same => {}
                Reread::Unreadable(e) => reporting.set_refused_edit(Some(format!(
                    "{shown} cannot be read ({e}): the gateway runs the config it read last"
                ))),
                Reread::Refused(e) => reporting.set_refused_edit(Some(format!(
                    "{e} (the edit was refused: the gateway runs the config it read last)"
                ))),
                Reread::Valid { .. } => reporting.set_refused_edit(None),
            }
        }
    });
    let mut debouncer = new_debouncer(DEBOUNCE, None, move |events: DebounceEventResult| {
        let touched = match events {
            Ok(events) => events.iter().any(|e| {
                e.paths
                    .iter()
                    .any(|p| p.file_name() == file_name.as_deref())
            }),
            Err(errors) => {
                for error in errors {
                    tracing::warn!("config watch: {error}");
                }
                false
            }
        };
        // The watcher's thread is not a runtime thread: hand the work to the task above.
        if touched {
            let _ = touched_tx.send(());
        }
    })?;
    debouncer.watch(&directory, RecursiveMode::NonRecursive)?;
    Ok(Reloader {
        _debouncer: debouncer,
    })
}

/// Makes the running servers those of a config (the gateway's reconcile).
pub type Reconcile = Box<dyn Fn(&Config) + Send>;

/// What one re-read of the config file did.
#[derive(Debug)]
pub enum Reread {
    /// The same text as the last read: nothing to do.
    Same,
    /// The file could not be read; the running config stays.
    Unreadable(String),
    /// The text is not a valid config; the running config stays.
    Refused(ConfigError),
    /// A valid config: what it applied and what waits for a restart. `valid_again`: the read
    /// before it was refused or failed.
    Valid {
        reloaded: Box<Reloaded>,
        valid_again: bool,
    },
}

/// Turns re-reads of the config file into config changes, and says what each did.
pub struct ConfigReloader {
    path: PathBuf,
    overrides: Overrides,
    configs: watch::Sender<Arc<Config>>,
    reconcile: Reconcile,
    /// The text of the last read, to recognise a read that changes nothing.
    last_text: Option<String>,
    /// The last read was refused or failed: the running config is not the file's.
    refused: bool,
    /// Whether the gateway lists `tool_search` and `call_tool`: decided at start, for good.
    search_tools_listed: bool,
    /// The servers added from the dashboard, merged into every valid read.
    added: AddedServers,
}

impl ConfigReloader {
    /// A reloader of the file at `path`, applying valid edits to `configs` (whose current value
    /// is the running config) and server changes through `reconcile`.
    pub fn new(
        path: PathBuf,
        overrides: Overrides,
        configs: watch::Sender<Arc<Config>>,
        reconcile: Reconcile,
        added: AddedServers,
        search_tools_listed: bool,
    ) -> ConfigReloader {
        ConfigReloader {
            path,
            overrides,
            configs,
            reconcile,
            last_text: None,
            refused: false,
            search_tools_listed,
            added,
        }
    }

    /// Takes in what reading the file gave, applies what a valid edit changes hot, and logs
    /// what happened once.
    pub fn reread(&mut self, read: std::io::Result<String>) -> Reread {
        // Held until the edit is applied: the added servers cannot change in between.
        let added = self.added.clone();
        let added = added.lock();
        let reread = self.classify(read, &added);
        self.report(&reread);
        if let Reread::Valid { reloaded, .. } = &reread
            && !reloaded.applied.is_empty()
        {
            if reloaded.servers_changed() {
                (self.reconcile)(&reloaded.config);
            }
            self.configs.send_replace(Arc::new(reloaded.config.clone()));
        }
        reread
    }

    fn classify(&mut self, read: std::io::Result<String>, added: &[ServerConfig]) -> Reread {
        let text = match read {
            Ok(text) => text,
            Err(e) => {
                self.last_text = None;
                self.refused = true;
                return Reread::Unreadable(e.to_string());
            }
        };
        if self.last_text.as_deref() == Some(text.as_str()) {
            return Reread::Same;
        }
        let parsed = parse_config(&text, &self.path.display().to_string(), &self.overrides);
        self.last_text = Some(text);
        let edited = match parsed {
            Ok(config) => crate::added::merge(&config, added),
            Err(e) => {
                self.refused = true;
                return Reread::Refused(e);
            }
        };
        let valid_again = std::mem::take(&mut self.refused);
        let running = self.configs.borrow().clone();
        Reread::Valid {
            reloaded: Box::new(mcplex_config::reload_listing(
                &running,
                edited,
                self.search_tools_listed,
            )),
            valid_again,
        }
    }

    fn report(&self, reread: &Reread) {
        let path = self.path.display();
        let (reloaded, valid_again) = match reread {
            Reread::Same => return,
            Reread::Unreadable(e) => {
                tracing::warn!("config {path} unreadable ({e}); keeping the running config");
                return;
            }
            Reread::Refused(e) => {
                tracing::error!("config edit refused, keeping the running config: {e}");
                return;
            }
            Reread::Valid {
                reloaded,
                valid_again,
            } => (reloaded, *valid_again),
        };
        if valid_again {
            tracing::info!("config {path} is valid again");
        }
        for warning in &reloaded.config.warnings {
            tracing::warn!("{warning}");
        }
        if !reloaded.needs_restart.is_empty() {
            tracing::warn!(
                "config changes to {} take effect after a restart",
                reloaded.needs_restart.join(", ")
            );
        }
        if reloaded.search_tools_stay {
            tracing::info!(
                "deferral is off: every tool is listed now; tool_search and call_tool stay \
                 listed until a restart"
            );
        }
        if reloaded.deferral_waits {
            tracing::warn!(
                "deferral was off at start: the new defer settings take effect after a restart"
            );
        }
        if reloaded.applied.is_empty() {
            tracing::debug!("config reloaded; nothing that applies hot changed");
        }
    }
}
