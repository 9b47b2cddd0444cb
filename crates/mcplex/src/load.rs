//! Reading the config file: the one place that touches the disk and the environment for config.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use anyhow::{Context, Result};
use mcplex_config::{Config, Overrides, parse_config};

use crate::cli::ConfigArgs;

/// Every config file this process read (hot reloads included): the sandbox hides them from
/// stdio servers, whose `env` secrets they hold.
static FILES_READ: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The config files this process read so far, and the files of secrets it was given
/// ([`note_secret_file`]): what the sandbox hides from stdio servers.
pub fn files_read() -> Vec<PathBuf> {
    FILES_READ
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Notes a file holding a secret this process read (the API key file), to be hidden from stdio
/// servers as the config files are.
pub fn note_secret_file(path: &std::path::Path) {
    note_read(path);
}

fn note_read(path: &std::path::Path) {
    let mut files = FILES_READ.lock().unwrap_or_else(PoisonError::into_inner);
    // As given (absolute), not resolved: the sandbox resolves it at each start, so a config
    // behind a symlink that is pointed elsewhere later (a Kubernetes ConfigMap's) stays hidden.
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    if !files.contains(&path) {
        files.push(path);
    }
}

/// A password in `--store` is in this process's command line, which every local user can read
/// (`/proc/<pid>/cmdline`): say so, and where it belongs. `MCPLEX_STORE` (the environment is
/// readable by the same user only) or the config file (0600) keep it private.
fn warn_of_a_password_on_the_command_line(store: Option<&str>) {
    let Some(store) = store else { return };
    let from_environment = std::env::var("MCPLEX_STORE").is_ok_and(|env| env == store);
    let has_password = url::Url::parse(store).is_ok_and(|url| url.password().is_some());
    if has_password && !from_environment {
        tracing::warn!(
            "--store carries a password, which every local user can read in this process's command line: give the URL in MCPLEX_STORE or the config's \"store\" instead"
        );
    }
}

/// `~/.mcplex/mcp_config.json`.
pub fn default_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".mcplex").join("mcp_config.json"))
}

/// Loads and validates the config. A missing default file is an empty config (with a warning);
/// a missing explicit file is an error.
pub fn load(args: &ConfigArgs, overrides: Overrides) -> Result<Config> {
    load_with_source(args, overrides).map(|loaded| loaded.config)
}

/// A loaded config and where it came from, for hot reload.
pub struct Loaded {
    pub config: Config,
    /// The file, when it exists (a missing default file is not watched).
    pub path: Option<PathBuf>,
    /// The flag/env values applied on top of the file; a reload applies them again.
    pub overrides: Overrides,
}

/// [`read`], with the config's warnings logged.
pub fn load_with_source(args: &ConfigArgs, overrides: Overrides) -> Result<Loaded> {
    let loaded = read(args, overrides)?;
    for warning in &loaded.config.warnings {
        tracing::warn!("{warning}");
    }
    Ok(loaded)
}

/// Reads and validates the config without logging its warnings (for a command that shows
/// them itself, such as `config check`).
pub fn read(args: &ConfigArgs, mut overrides: Overrides) -> Result<Loaded> {
    overrides.data_dir = args.data_dir.clone();
    overrides.store = args.store.clone();
    warn_of_a_password_on_the_command_line(args.store.as_deref());
    let (path, explicit) = match &args.config {
        Some(path) => (path.clone(), true),
        None => (
            default_path().context("no --config given and $HOME is not set")?,
            false,
        ),
    };
    let (text, exists) = match std::fs::read_to_string(&path) {
        Ok(text) => {
            note_read(&path);
            (text, true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            tracing::warn!(
                "no config at {}; starting with no servers (see --config, --demo)",
                path.display()
            );
            ("{}".to_owned(), false)
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read config {}", path.display())),
    };
    let config = parse_config(&text, &path.display().to_string(), &overrides)?;
    Ok(Loaded {
        config,
        path: exists.then_some(path),
        overrides,
    })
}

/// Where the store of `config` is: its PostgreSQL database, else SQLite in its data directory.
pub fn store_location(config: &Config) -> mcplex_state::Location {
    match &config.store {
        Some(url) => mcplex_state::Location::Postgres(url.expose().to_owned()),
        None => mcplex_state::Location::Directory(data_dir(config)),
    }
}

/// Opens the store of `config`, with the location in the error.
pub fn open_store(config: &Config) -> Result<(mcplex_state::Store, mcplex_state::Opened)> {
    let location = store_location(config);
    mcplex_state::Store::open_at(&location)
        .with_context(|| format!("cannot open the store at {location}"))
}

/// The data directory `config` uses.
pub fn data_dir(config: &Config) -> PathBuf {
    config
        .data_dir
        .clone()
        .unwrap_or_else(mcplex_state::default_data_dir)
}
