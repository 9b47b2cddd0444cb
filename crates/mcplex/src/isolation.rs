//! What the gateway's stdio servers are isolated from: the binary knows where its own secrets
//! are (the data directory with the store, the API key and the token key; every config file it
//! read; PostgreSQL's password file) and that its own executable is the sandbox helper.

use std::path::PathBuf;

use mcplex_config::Config;
use mcplex_upstream::{Isolation, Protected};

/// The isolation of the servers `config` names, for a process that read its config through
/// [`crate::load`].
pub fn for_config(config: &Config) -> Isolation {
    let helper = match std::env::current_exe() {
        Ok(helper) => helper,
        Err(e) => {
            tracing::warn!("cannot find this executable ({e}): stdio servers start unconfined");
            return Isolation::unavailable();
        }
    };
    Isolation::sandboxing(helper, Protected::new(secrets(config)))
}

fn secrets(config: &Config) -> Vec<PathBuf> {
    let mut paths = vec![crate::load::data_dir(config)];
    paths.extend(crate::load::files_read());
    // libpq's password file, which a PostgreSQL store's URL may rely on.
    match std::env::var_os("PGPASSFILE") {
        Some(file) => paths.push(file.into()),
        None => {
            paths.extend(std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pgpass")))
        }
    }
    paths
}
