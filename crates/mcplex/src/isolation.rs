//! What the gateway's stdio servers are isolated from: the binary knows where its own secrets
//! are (the data directory with the store, the API key and the token key; every config file it
//! read and the API key file it was given; PostgreSQL's password file), which daemons' sockets
//! would act for a server outside its sandbox, and that its own executable is the sandbox
//! helper.

use std::net::SocketAddr;
use std::path::PathBuf;

use mcplex_config::Config;
use mcplex_upstream::{Isolation, Protected};

/// The isolation of the servers `config` names, for a process that read its config through
/// [`crate::load`].
pub fn for_config(config: &Config) -> Isolation {
    serving(config, None)
}

/// [`for_config`], for a gateway whose HTTP listener is bound to `bound`: its port is closed to
/// the servers when it serves callers without a credential (a loopback listener without
/// `require_auth` takes every caller for the operator). Serving stdio, or a one-shot command,
/// has no port to close.
pub fn serving(config: &Config, bound: Option<SocketAddr>) -> Isolation {
    let helper = match std::env::current_exe() {
        Ok(helper) => helper,
        Err(e) => {
            tracing::warn!("cannot find this executable ({e}): stdio servers start unconfined");
            return Isolation::unavailable();
        }
    };
    let unauthenticated = bound
        .filter(|address| !crate::commands::auth_required(config, *address))
        .map(|address| address.port());
    Isolation::sandboxing(
        helper,
        Protected::new(secrets(config)).closing(unauthenticated),
    )
}

/// The isolation of a command that starts the servers itself (`tools list`, `call`, `export`,
/// an offline approval): as in a gateway, a server the store has not approved runs under the
/// quarantine policy (no network, no writes), whatever its config says. A store that cannot be
/// read leaves every server under it.
pub fn for_command(config: &Config) -> Isolation {
    let approved = match crate::commands::open_offline(config) {
        Ok((_, trust)) => trust.approved_servers(),
        Err(e) => {
            tracing::warn!(
                "cannot read the approvals ({e:#}): every stdio server starts under the quarantine policy"
            );
            std::collections::HashSet::new()
        }
    };
    for_config(config).approving(Some(approved))
}

/// Sockets of daemons that would act for the server outside its sandbox (Landlock before ABI 9
/// cannot refuse a connect to a socket file; an empty mount over them can): the user's and the
/// system's message buses (`systemd-run`), container engines, PostgreSQL's peer-authenticated
/// socket. Only root can make entries there.
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
    // GNU screen's sessions (`screen -X stuff` types into them, as tmux's would).
    "/run/screen",
    "/var/run/screen",
];

fn secrets(config: &Config) -> Vec<PathBuf> {
    let mut paths = vec![crate::load::data_dir(config)];
    paths.extend(DAEMON_SOCKETS.iter().map(PathBuf::from));
    paths.extend(std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from));
    paths.extend(shared_temp_sockets());
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

/// The daemons' socket directories in the shared temp directory: the X server's and this
/// user's tmux server's. Anyone can make entries in `/tmp`, and a hidden path is covered where
/// it points: only a real directory owned by root or by this user counts, so that no other
/// user can have a tree such as `/usr` hidden from every server (a symlink named like one).
fn shared_temp_sockets() -> Vec<PathBuf> {
    let uid = mcplex_sandbox::effective_uid();
    let tmux_base =
        std::env::var_os("TMUX_TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    [
        PathBuf::from("/tmp/.X11-unix"),
        tmux_base.join(format!("tmux-{uid}")),
    ]
    .into_iter()
    .filter(|path| owned_directory(path, uid))
    .collect()
}

/// Whether `path` itself (not a symlink's target) is a directory owned by root or `uid`.
fn owned_directory(path: &std::path::Path, uid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir() && (m.uid() == 0 || m.uid() == uid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_or_another_users_directory_in_tmp_is_never_hidden() {
        let dir = tempfile::tempdir().expect("temp dir");
        let uid = mcplex_sandbox::effective_uid();
        let real = dir.path().join("tmux-real");
        std::fs::create_dir(&real).expect("dir");
        assert!(owned_directory(&real, uid));
        let link = dir.path().join("tmux-link");
        std::os::unix::fs::symlink("/usr", &link).expect("symlink");
        assert!(
            !owned_directory(&link, uid),
            "a symlink is not a daemon's directory"
        );
        let file = dir.path().join("tmux-file");
        std::fs::write(&file, "").expect("file");
        assert!(!owned_directory(&file, uid));
        // Another user's directory: as root, make one; otherwise ours is another's to uid + 1.
        if uid == 0 {
            let theirs = dir.path().join("tmux-65534");
            std::fs::create_dir(&theirs).expect("dir");
            std::os::unix::fs::chown(&theirs, Some(65534), None).expect("chown");
            assert!(!owned_directory(&theirs, uid));
        } else {
            assert!(!owned_directory(&real, uid + 1));
        }
    }
}
