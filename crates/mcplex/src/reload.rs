//! Hot reload of the config file. Watches the file's directory (editors and ConfigMaps replace
//! files by rename, which a watch on the file itself would miss), debounces bursts, and re-reads
//! the whole file. An invalid edit is refused with a log line naming the key and the running
//! config stays. Of a valid edit, `direct_tool_response_mode`, `tool_response_mode` and
//! `mcpServers` apply at once (servers that were added start, removed ones are terminated,
//! unchanged ones keep their connections); an edit that changes none of them rebuilds nothing.
//! Other changes are reported as needing a restart. A server's `trust` applies hot; its
//! `quarantined` only decides the state it is first recorded in.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use mcplex_config::{Config, Overrides, parse_config};
use mcplex_dispatch::Gateway;
use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::watch;

/// How long the file must be quiet before it is re-read.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// A running watch; dropping it stops watching.
pub struct Reloader {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
}

/// Starts watching `path`. `running` is the config the gateway started with.
pub fn watch(
    path: PathBuf,
    overrides: Overrides,
    configs: watch::Sender<Arc<Config>>,
    gateway: Arc<Gateway>,
) -> Result<Reloader> {
    let directory = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let file_name = path.file_name().map(|n| n.to_owned());
    let (touched_tx, mut touched_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    // Ends when the debouncer (and with it the sender) is dropped.
    tokio::spawn(async move {
        while touched_rx.recv().await.is_some() {
            while touched_rx.try_recv().is_ok() {}
            reload(&path, &overrides, &configs, &gateway);
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
        // The watcher's thread is not a runtime thread: hand the work to the task below.
        if touched {
            let _ = touched_tx.send(());
        }
    })
    .context("cannot start watching the config file")?;
    debouncer
        .watch(&directory, RecursiveMode::NonRecursive)
        .with_context(|| format!("cannot watch {}", directory.display()))?;
    Ok(Reloader {
        _debouncer: debouncer,
    })
}

fn reload(
    path: &Path,
    overrides: &Overrides,
    configs: &watch::Sender<Arc<Config>>,
    gateway: &Gateway,
) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            tracing::warn!(
                "config {} unreadable ({e}); keeping the running config",
                path.display()
            );
            return;
        }
    };
    let config = match parse_config(&text, &path.display().to_string(), overrides) {
        Ok(config) => config,
        Err(e) => {
            tracing::error!("config edit refused, keeping the running config: {e}");
            return;
        }
    };
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let running = configs.borrow().clone();
    let needs_restart = config.listen != running.listen
        || config.routing_mode != running.routing_mode
        || config.instructions != running.instructions
        || config.call_timeout != running.call_timeout
        || config.defers_anything() != running.defers_anything()
        || config.max_matches != running.max_matches
        || config.search_model != running.search_model
        || config.data_dir != running.data_dir
        || config.http != running.http
        || config.profiles != running.profiles
        || config.code != running.code;
    if needs_restart {
        tracing::warn!(
            "config changes to listen, routing_mode, instructions, call_timeout, tool_search, search_model, data_dir, trusted_hosts, require_auth, max_body_bytes, profiles or code_execution limits take effect after a restart"
        );
    }
    let applies = config.hot() != running.hot()
        || config.servers != running.servers
        || config.defer_tools != running.defer_tools;
    if !applies {
        tracing::debug!("config reloaded; nothing that applies hot changed");
        return;
    }
    if config.servers != running.servers {
        gateway.reconcile(&config);
    }
    // Values that need a restart stay as they were; the rest is the new config.
    let mut applied = config;
    applied.listen = running.listen.clone();
    applied.routing_mode = running.routing_mode;
    applied.instructions = running.instructions.clone();
    applied.call_timeout = running.call_timeout;
    applied.max_matches = running.max_matches;
    applied.search_model = running.search_model.clone();
    applied.data_dir = running.data_dir.clone();
    applied.http = running.http.clone();
    applied.profiles = running.profiles.clone();
    applied.code = running.code;
    // tool_search and call_tool are listed or not from the start. Deferring tools on a gateway
    // that started without them would make those tools unreachable, so that waits for a restart.
    if applied.defers_anything() && !running.defers_anything() {
        tracing::warn!(
            "deferral was off at start: the new defer settings take effect after a restart"
        );
        applied.defer_tools = false;
        for server in &mut applied.servers {
            server.defer = None;
            server.tools.defer.clear();
        }
    }
    configs.send_replace(Arc::new(applied));
}
