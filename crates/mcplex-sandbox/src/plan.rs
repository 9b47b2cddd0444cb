//! How one server is confined: its configured [`Sandbox`], whether it is quarantined and where
//! it runs, the gateway's secrets and what the kernel supports → the helper's [`Plan`] and the
//! operator's [`Report`]. Pure but for resolving paths (canonical paths are what Landlock and
//! mounts act on).

use std::fmt;
use std::path::{Path, PathBuf};

use mcplex_config::Sandbox;
use serde::{Deserialize, Serialize};

use crate::report::{Level, Report};
use crate::support::Support;

/// Read by every program: the system's own directories, always readable when `read` narrows.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/dev", "/proc", "/sys", "/run",
    "/opt",
];

/// Devices a process may open for writing (its output discarded, randomness). Not `/dev/tty`:
/// a server has no terminal of its own (it starts in a session of its own), and the operator's
/// would let it type commands into the operator's shell (`TIOCSTI`).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Where POSIX shared memory lives.
pub(crate) const SHARED_MEMORY: &str = "/dev/shm";

/// The size of a private temp tmpfs when memory is unlimited.
const DEFAULT_TMPFS_BYTES: u64 = 1 << 30;

/// The package runners' caches under `$HOME`: npx and uvx fetch into them and fail without
/// them. Created when missing, so that they exist when the rules are made.
const HOME_CACHES: &[&str] = &[".npm", ".cache"];

/// Cache directories written when present (uv's tools and interpreters).
const HOME_CACHES_IF_PRESENT: &[&str] = &[".local/share/uv"];

/// The gateway's own secrets: its data directory, store files, config files, key files. No
/// sandboxed server can read or write beneath them. Kept as given and resolved at each start:
/// a path behind a symlink that is later pointed elsewhere (a Kubernetes ConfigMap's) is hidden
/// where it points then. And the gateway's open doors: the TCP ports where it serves callers
/// without a credential (a loopback listener without `require_auth`), which would let a server
/// call every other server's tools as the operator; no sandboxed server may connect to them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    paths: Vec<PathBuf>,
    ports: Vec<u16>,
}

impl Protected {
    pub fn new(paths: impl IntoIterator<Item = PathBuf>) -> Protected {
        let mut paths: Vec<PathBuf> = paths.into_iter().collect();
        paths.sort();
        paths.dedup();
        Protected {
            paths,
            ports: Vec::new(),
        }
    }

    /// These, and `ports` closed to every sandboxed server.
    pub fn closing(mut self, ports: impl IntoIterator<Item = u16>) -> Protected {
        self.ports.extend(ports);
        self.ports.sort_unstable();
        self.ports.dedup();
        self
    }

    /// The ports closed to sandboxed servers.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The existing ones, canonical (a symlink's target is what must be hidden), now.
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self
            .paths
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }
}

/// What is being started and under which configuration.
pub struct Policy<'a> {
    pub sandbox: &'a Sandbox,
    /// The server is quarantined: the strictest policy applies until it is approved.
    pub quarantined: bool,
    /// The command as configured (its installation is readable when `read` narrows).
    pub command: &'a str,
    pub args: &'a [String],
    /// The configured working directory, which it may write.
    pub working_dir: Option<&'a Path>,
    /// `HOME` as the server will see it: where the package runners' caches are.
    pub home: Option<&'a Path>,
    /// `XDG_CACHE_HOME` as the server will see it.
    pub cache_home: Option<&'a Path>,
    /// Its private temporary directory (the caller made it, empty, `TMPDIR` names it), in a
    /// directory that holds every server's.
    pub temp_dir: &'a Path,
}

/// Resource limits, as the helper sets them (0: unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub memory_bytes: u64,
    pub processes: u64,
    pub open_files: u64,
}

/// What the helper does, every path absolute. Travels to the helper as JSON on its command line
/// (paths only: no secret is ever in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Make user, mount, PID and IPC namespaces (and a network namespace when `!network`).
    pub namespaces: bool,
    pub network: bool,
    /// Landlock ABI to build the domain for (0: no Landlock).
    pub landlock_abi: i32,
    /// Trees it may read (and execute from), but for `hidden`.
    pub read: Vec<PathBuf>,
    /// Trees it may write, but for `hidden`.
    pub write: Vec<PathBuf>,
    /// Its own directories (the temp directory), read and written even beneath `hidden`.
    pub private: Vec<PathBuf>,
    /// With namespaces, each private directory is a tmpfs of its own (of at most this many
    /// bytes), which no other process sees and which ends with the namespace.
    pub private_tmpfs_bytes: Option<u64>,
    /// Device files it may read and write.
    pub devices: Vec<PathBuf>,
    /// Never readable nor writable: covered by empty mounts, left out of every Landlock rule.
    pub hidden: Vec<PathBuf>,
    /// With network: TCP ports it may not connect to, on any address (Landlock ABI 4 allows
    /// every other port; without it nothing refuses them).
    pub closed_ports: Vec<u16>,
    /// Directories created (as the gateway's user) before the rules are made.
    pub create: Vec<PathBuf>,
    pub limits: Limits,
}

/// Why a server is not started: it requires isolation the kernel cannot give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The plan for one start (`None`: run it unconfined, as `"sandbox": false` says, once it is
/// approved: a quarantined server is confined whatever its config says) and what the operator
/// is told; refused when `required` and the kernel lacks a mechanism the policy needs.
pub fn plan(
    policy: &Policy<'_>,
    protected: &Protected,
    support: &Support,
) -> Result<(Option<Plan>, Report), Refused> {
    let sandbox = policy.sandbox;
    if !sandbox.enabled && !policy.quarantined {
        let report = Report {
            level: Level::Off,
            quarantine: false,
            network: true,
            mechanisms: Vec::new(),
            missing: vec![
                "everything (\"sandbox\": false): it runs with the gateway's authority".to_owned(),
            ],
        };
        return Ok((None, report));
    }
    let network = sandbox.network && !policy.quarantined;
    let closed_ports = if network {
        protected.ports().to_vec()
    } else {
        Vec::new()
    };
    let (mechanisms, missing) = mechanisms(support, network, &closed_ports);
    let level = if missing.is_empty() {
        Level::Full
    } else if support.landlock_abi >= 1 || support.namespaces.is_ok() {
        Level::Partial
    } else {
        Level::Off
    };
    if sandbox.required && !missing.is_empty() {
        return Err(Refused(format!(
            "not started: \"sandbox\" is required and this kernel cannot give {}",
            missing.join("; ")
        )));
    }
    if policy.quarantined && !quarantine_holds(support) {
        return Err(Refused(format!(
            "not started while quarantined: the quarantine policy needs Landlock (writes and \
             secrets) and a network namespace (no network at all), and this kernel cannot give \
             {}; approve it to start it as its config says",
            missing.join("; ")
        )));
    }
    let report = Report {
        level,
        quarantine: policy.quarantined,
        network,
        mechanisms,
        missing,
    };
    let namespaces = support.namespaces.is_ok();
    // Without namespaces the temp directories are plain directories side by side: the others'
    // are hidden. With them, each is a tmpfs in its own mount namespace, so nothing is there to
    // hide (and /tmp stays readable in full).
    let mut hidden = protected.paths();
    if !namespaces && let Some(base) = policy.temp_dir.parent() {
        hidden.extend(base.canonicalize().ok());
    }
    let plan = Plan {
        namespaces,
        network,
        landlock_abi: support.landlock_abi,
        read: read_roots(policy),
        write: write_roots(policy),
        // With namespaces `/dev/shm` is a private tmpfs too (Chromium and Python's
        // multiprocessing need it); without, the host's is not writable.
        private: if namespaces {
            vec![policy.temp_dir.to_owned(), PathBuf::from(SHARED_MEMORY)]
        } else {
            vec![policy.temp_dir.to_owned()]
        },
        private_tmpfs_bytes: namespaces.then(|| match sandbox.limits.memory_mb {
            0 => DEFAULT_TMPFS_BYTES,
            mb => mb.saturating_mul(1 << 20),
        }),
        devices: DEVICES.iter().map(PathBuf::from).collect(),
        hidden,
        closed_ports,
        create: if policy.quarantined {
            Vec::new()
        } else {
            let mut create = home_paths(policy.home, HOME_CACHES);
            // uv keeps its interpreters and tools there, and cannot make it inside the sandbox.
            let runner = Path::new(policy.command).file_name();
            if runner.is_some_and(|name| name == "uv" || name == "uvx") {
                create.extend(home_paths(policy.home, HOME_CACHES_IF_PRESENT));
            }
            create
        },
        limits: Limits {
            memory_bytes: sandbox.limits.memory_mb.saturating_mul(1 << 20),
            processes: sandbox.limits.processes,
            open_files: sandbox.limits.open_files,
        },
    };
    Ok((Some(plan), report))
}

/// Whether the kernel can hold a server to the quarantine policy: no write outside its temp
/// directory and no secret (Landlock), and no network at all (a network namespace: Landlock's
/// TCP rules leave UDP and Unix sockets open). Without them a server nobody approved could
/// write into the gateway's files or reach the network, so it is not started at all.
fn quarantine_holds(support: &Support) -> bool {
    support.landlock_abi >= 1 && support.namespaces.is_ok()
}

/// The mechanisms in force and, for what is missing, what it leaves open.
fn mechanisms(
    support: &Support,
    network: bool,
    closed_ports: &[u16],
) -> (Vec<String>, Vec<String>) {
    let (mut on, mut missing) = (Vec::new(), Vec::new());
    let abi = support.landlock_abi;
    if !closed_ports.is_empty() {
        let ports: Vec<String> = closed_ports.iter().map(u16::to_string).collect();
        if abi >= 4 {
            on.push(format!(
                "the gateway's port without a credential ({}) refused by Landlock",
                ports.join(", ")
            ));
        } else {
            missing.push(format!(
                "Landlock's TCP rules (ABI 4): the gateway's port without a credential ({}) \
                 stays reachable, and through it every tool; set \"require_auth\": true",
                ports.join(", ")
            ));
        }
    }
    if abi >= 1 {
        on.push(format!("landlock (ABI {abi})"));
    } else {
        missing.push(
            "Landlock (not in this kernel): writes are not confined, and secrets are hidden only by mounts"
                .to_owned(),
        );
    }
    match &support.namespaces {
        Ok(()) => {
            on.push("user, mount, PID and IPC namespaces".to_owned());
            if !network {
                on.push("network namespace".to_owned());
            }
        }
        Err(why) => {
            missing.push(format!(
                "namespaces ({why}): the gateway's processes stay visible in /proc (Landlock still refuses their environment and memory{}, seccomp their limits and priority), and a process the server starts in a session of its own outlives its stop",
                if abi >= 6 { " and signals" } else { "" }
            ));
            if !network {
                if abi >= 4 {
                    on.push("TCP refused by Landlock".to_owned());
                    missing.push(
                        "a network namespace: UDP and Unix sockets stay reachable".to_owned(),
                    );
                } else {
                    missing.push("network isolation: the network stays reachable".to_owned());
                }
            }
        }
    }
    if (1..6).contains(&abi) && support.namespaces.is_err() {
        missing.push(
            "Landlock scopes (ABI 6): it can signal processes of the gateway's user".to_owned(),
        );
    }
    if (1..6).contains(&abi) && network {
        missing.push(
            "Landlock scopes (ABI 6): abstract Unix sockets outside stay reachable".to_owned(),
        );
    }
    if (1..3).contains(&abi) {
        missing.push(
            "Landlock truncation rights (ABI 3): it can truncate files of the gateway's user"
                .to_owned(),
        );
    }
    on.push("no capabilities".to_owned());
    on.push("resource limits".to_owned());
    (on, missing)
}

fn read_roots(policy: &Policy<'_>) -> Vec<PathBuf> {
    let Some(read) = &policy.sandbox.read else {
        return vec![PathBuf::from("/")];
    };
    let mut roots: Vec<PathBuf> = read.clone();
    roots.extend(SYSTEM_READ.iter().map(PathBuf::from));
    // The command's installation: `…/bin/node` → `…`, `.venv/bin/python` → `.venv`.
    if let Some(installed) = installation(policy.command) {
        roots.push(installed);
    }
    // The paths it was given (server-filesystem's directories, a repository).
    roots.extend(
        policy
            .args
            .iter()
            .map(Path::new)
            .filter(|p| p.is_absolute() && p.exists())
            .map(Path::to_path_buf),
    );
    roots.extend(policy.working_dir.map(Path::to_path_buf));
    roots.extend(home_paths(policy.home, HOME_CACHES));
    roots.extend(policy.cache_home.map(Path::to_path_buf));
    roots.extend(write_roots(policy));
    existing(roots)
}

fn write_roots(policy: &Policy<'_>) -> Vec<PathBuf> {
    if policy.quarantined {
        return Vec::new();
    }
    let mut roots: Vec<PathBuf> = policy
        .working_dir
        .into_iter()
        .map(Path::to_path_buf)
        .collect();
    roots.extend(home_paths(policy.home, HOME_CACHES));
    roots.extend(home_paths(policy.home, HOME_CACHES_IF_PRESENT));
    roots.extend(policy.cache_home.map(Path::to_path_buf));
    roots.extend(policy.sandbox.write.iter().cloned());
    // Made by the helper before the rules: listed even when missing now.
    roots
}

fn home_paths(home: Option<&Path>, names: &[&str]) -> Vec<PathBuf> {
    home.filter(|h| h.is_absolute())
        .map(|home| names.iter().map(|name| home.join(name)).collect())
        .unwrap_or_default()
}

/// The directory two levels above the command as found on the `PATH` (`/opt/node/bin/node` →
/// `/opt/node`), when it can be found.
fn installation(command: &str) -> Option<PathBuf> {
    let found = if command.contains('/') {
        PathBuf::from(command)
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(command))
            .find(|candidate| candidate.is_file())?
    };
    let real = found.canonicalize().ok()?;
    Some(real.parent()?.parent()?.to_path_buf())
}

fn existing(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = paths.into_iter().filter(|p| p.exists()).collect();
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
