//! What the gateway's stdio servers are isolated from: the binary knows where its own secrets
//! are (the data directory with the store, the API key and the token key; every config file it
//! read; PostgreSQL's password file), which daemons' sockets would act for a server outside
//! its sandbox, and that its own executable is the sandbox helper.

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

/// Sockets of daemons that would act for the server outside its sandbox (Landlock before ABI 9
/// cannot refuse a connect to a socket file; an empty mount over them can): the user's and the
/// system's message buses (`systemd-run`), container engines, PostgreSQL's peer-authenticated
/// socket, the X server, terminal multiplexers.
const DAEMON_SOCKETS: &[&str] = &[
    "/run/user",
    "/run/dbus",
    "/var/run/dbus",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/postgresql",
    "/var/run/postgresql",
    "/tmp/.X11-unix",
];

fn secrets(config: &Config) -> Vec<PathBuf> {
    let mut paths = vec![crate::load::data_dir(config)];
    paths.extend(DAEMON_SOCKETS.iter().map(PathBuf::from));
    paths.extend(std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from));
    if let Ok(entries) = std::fs::read_dir("/tmp") {
        paths.extend(
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("tmux-"))
                .map(|e| e.path()),
        );
    }
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
