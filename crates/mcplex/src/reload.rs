//! Hot reload of the config file. Watches the file's directory (editors and ConfigMaps replace
//! files by rename, which a watch on the file itself would miss), debounces bursts, and re-reads
//! the whole file. An invalid edit is refused with a log line naming the key and the running
//! config stays. Of a valid edit, `direct_tool_response_mode` and `tool_response_mode` apply at
//! once (and only if their effective values changed); other changes are reported as needing a
//! restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use mcplex_config::{Config, HotSettings, Overrides, parse_config};
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
    running: Arc<Config>,
    mode: watch::Sender<HotSettings>,
) -> Result<Reloader> {
    let directory = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let file_name = path.file_name().map(|n| n.to_owned());
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
        if touched {
            reload(&path, &overrides, &running, &mode);
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

fn reload(path: &Path, overrides: &Overrides, running: &Config, mode: &watch::Sender<HotSettings>) {
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
    let new_mode = config.hot();
    let changed = mode.send_if_modified(|current| {
        let differs = *current != new_mode;
        *current = new_mode;
        differs
    });
    if !changed {
        tracing::debug!("config reloaded; hot settings unchanged ({new_mode:?})");
    }
    let needs_restart = config.servers != running.servers
        || config.listen != running.listen
        || config.routing_mode != running.routing_mode
        || config.instructions != running.instructions
        || config.call_timeout != running.call_timeout
        || config.defer_tools != running.defer_tools
        || config.max_matches != running.max_matches;
    if needs_restart {
        tracing::warn!(
            "config changes other than direct_tool_response_mode and tool_response_mode take effect after a restart"
        );
    }
}
