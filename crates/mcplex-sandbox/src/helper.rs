//! The helper: the gateway starts its own executable as `<exe> __sandbox <plan> -- <command>
//! <args…>` with the server's environment, working directory and pipes, and the helper carries
//! the plan out before the server runs.
//!
//! With namespaces, three processes: the helper itself (outside, what the gateway waits for)
//! makes the namespaces, covers the hidden paths and builds the Landlock ruleset, then forks
//! the namespace's PID 1, which mounts a fresh `/proc`, forks the server's process and reaps
//! whatever is orphaned until that process ends; when PID 1 exits the kernel kills everything
//! left in the namespace. Both waiting processes close every descriptor, so the gateway sees
//! end of file exactly when the server's processes are gone, and ignore SIGTERM, which the
//! gateway sends to the whole process group for the server to handle. The server's process sets
//! its limits, gives up every capability, enters the Landlock domain and executes the command.
//! Without namespaces the helper does the last part itself (one process).
//!
//! A failure is said on stderr (the server's stderr tail, where the operator looks) as
//! `mcplex sandbox: …`, and the helper exits with 125 (126 or 127 when the command cannot be
//! run, as a shell does).

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use landlock::{
    ABI, Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use crate::grants::beneath_except;
use crate::plan::Plan;
use crate::sys;

/// The hidden subcommand of the gateway's executable that runs the helper.
pub const HELPER_ARG: &str = "__sandbox";
/// The helper's probe mode: make the namespaces, mount `/proc` in them, exit 0.
pub(crate) const PROBE_ARG: &str = "--probe";
/// How the helper's messages begin.
pub(crate) const SAYS: &str = "mcplex sandbox: ";

/// A step that failed: what the helper was doing and the kernel's answer.
struct Failed(String);

fn failed(what: impl std::fmt::Display, error: impl std::fmt::Display) -> Failed {
    Failed(format!("{what}: {error}"))
}

/// Runs the helper on the arguments after [`HELPER_ARG`]; returns only on a failure before the
/// command runs (the exit code to end with), or in probe mode.
pub fn run_helper(args: Vec<OsString>) -> ExitCode {
    let outcome = match args.first().and_then(|a| a.to_str()) {
        Some(PROBE_ARG) => probe().map(|()| 0),
        Some(plan) => match (serde_json::from_str::<Plan>(plan), args.get(1)) {
            (Ok(plan), Some(dash)) if dash == "--" && args.len() > 2 => run(&plan, &args[2..]),
            (Err(e), _) => Err(failed("the plan does not parse", e)),
            _ => Err(Failed(
                "usage: __sandbox <plan> -- <command> [args…]".to_owned(),
            )),
        },
        None => Err(Failed(
            "usage: __sandbox <plan> -- <command> [args…]".to_owned(),
        )),
    };
    match outcome {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(Failed(why)) => {
            eprintln!("{SAYS}{why}");
            ExitCode::from(125)
        }
    }
}

/// Makes every namespace a start makes and mounts `/proc` in them.
fn probe() -> Result<(), Failed> {
    enter_namespaces(true)?;
    match sys::fork().map_err(|e| failed("fork", e))? {
        Some(child) => match sys::reap_until(child) {
            0 => Ok(()),
            _ => Err(Failed("see above".to_owned())),
        },
        None => {
            let code = match mount_proc() {
                Ok(()) => 0,
                Err(Failed(why)) => {
                    eprintln!("{SAYS}{why}");
                    1
                }
            };
            std::process::exit(code)
        }
    }
}

fn run(plan: &Plan, command: &[OsString]) -> Result<i32, Failed> {
    for dir in &plan.create {
        // Best effort: a cache that cannot be made is one the server cannot use either way.
        let _ = std::fs::create_dir_all(dir);
    }
    if plan.namespaces {
        enter_namespaces(!plan.network)?;
        hide(&plan.hidden)?;
        if let Some(bytes) = plan.private_tmpfs_bytes {
            for dir in plan.private.iter().filter(|dir| dir.is_dir()) {
                sys::mount(
                    Some(Path::new("none")),
                    dir,
                    Some("tmpfs"),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    Some(&format!("size={bytes},mode=0700")),
                )
                .map_err(|e| failed(format!("a tmpfs on {}", dir.display()), e))?;
            }
        }
        // A working directory beneath a covered path would still reach what is under the
        // cover: entering it again by its path lands on the cover.
        if let Ok(here) = std::env::current_dir() {
            std::env::set_current_dir(&here)
                .map_err(|e| failed("re-entering the working directory", e))?;
        }
    }
    let ruleset = match plan.landlock_abi {
        0 => None,
        abi => Some(ruleset(plan, abi).map_err(|e| failed("Landlock ruleset", e))?),
    };
    let sockets =
        crate::filters::without_multipath_tcp().map_err(|e| failed("socket filter", e))?;
    if !plan.namespaces {
        // The server is this process (it executes in place) and sees the gateway's processes.
        let others = crate::filters::without_reaching_other_processes(std::process::id())
            .map_err(|e| failed("process filter", e))?;
        return Err(confine_and_exec(plan, ruleset, &[sockets, others], command));
    }
    // Outside the PID namespace: wait for its PID 1 and end as it ends.
    sys::set_signals(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP], libc::SIG_IGN);
    if let Some(init) = sys::fork().map_err(|e| failed("fork", e))? {
        drop(ruleset);
        sys::close_all_descriptors();
        std::process::exit(sys::reap_until(init));
    }
    // PID 1 of the namespace.
    sys::die_with_parent(libc::SIGKILL).map_err(|e| failed("parent-death signal", e))?;
    mount_proc()?;
    // Landlock does not look at a covered mount point: the fresh /proc needs its own rule.
    let ruleset = match ruleset {
        Some(ruleset) => Some(
            ruleset
                .add_rules(path_beneath_rules(
                    ["/proc"],
                    AccessFs::from_read(abi_of(plan.landlock_abi)),
                ))
                .map_err(|e| failed("Landlock rule for /proc", e))?,
        ),
        None => None,
    };
    if let Some(server) = sys::fork().map_err(|e| failed("fork", e))? {
        drop(ruleset);
        sys::close_all_descriptors();
        std::process::exit(sys::reap_until(server));
    }
    sys::die_with_parent(libc::SIGKILL).map_err(|e| failed("parent-death signal", e))?;
    Err(confine_and_exec(plan, ruleset, &[sockets], command))
}

/// A new user namespace with this user mapped to itself, and mount, PID and IPC namespaces
/// (and network, when `no_network`) owned by it; mounts made here stay here.
fn enter_namespaces(no_network: bool) -> Result<(), Failed> {
    let (uid, gid) = (sys::geteuid(), sys::getegid());
    let mut flags =
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    if no_network {
        flags |= libc::CLONE_NEWNET;
    }
    sys::unshare(flags).map_err(|e| failed("unshare (user namespaces refused?)", e))?;
    std::fs::write("/proc/self/setgroups", "deny").map_err(|e| failed("setgroups", e))?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .map_err(|e| failed("uid_map", e))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
        .map_err(|e| failed("gid_map", e))?;
    sys::mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
    .map_err(|e| failed("making mounts private", e))
}

/// Covers each hidden directory with an empty read-only tmpfs and each hidden file with an
/// empty read-only file (`/dev/null` bound over it).
fn hide(hidden: &[PathBuf]) -> Result<(), Failed> {
    let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    for path in hidden {
        let Ok(metadata) = std::fs::metadata(path) else {
            continue;
        };
        let what = || format!("covering {}", path.display());
        if metadata.is_dir() {
            sys::mount(
                Some(Path::new("none")),
                path,
                Some("tmpfs"),
                flags,
                Some("size=4k,nr_inodes=1,mode=000"),
            )
            .map_err(|e| failed(what(), e))?;
        } else {
            sys::mount(
                Some(Path::new("/dev/null")),
                path,
                None,
                libc::MS_BIND,
                None,
            )
            .map_err(|e| failed(what(), e))?;
            sys::mount(
                None,
                path,
                None,
                libc::MS_BIND | libc::MS_REMOUNT | flags,
                None,
            )
            .map_err(|e| failed(what(), e))?;
        }
    }
    Ok(())
}

/// A `/proc` of this PID namespace only.
fn mount_proc() -> Result<(), Failed> {
    sys::mount(
        Some(Path::new("proc")),
        Path::new("/proc"),
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )
    .map_err(|e| failed("mounting /proc", e))
}

/// The Landlock domain of `plan`: reading (and executing) beneath its read roots, writing beneath
/// its write roots and private directories, neither beneath a hidden path; with ABI 6, no
/// signals and no abstract Unix sockets outside the domain; without a network namespace and no
/// network, no TCP; with network, no TCP connection to a closed port.
fn ruleset(plan: &Plan, abi: i32) -> Result<RulesetCreated, landlock::RulesetError> {
    let abi = abi_of(abi);
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default().handle_access(all)?;
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    }
    let closing = plan.network && !plan.closed_ports.is_empty() && abi >= ABI::V4;
    if !plan.network && !plan.namespaces && abi >= ABI::V4 {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    } else if closing {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp)?;
    }
    let reads = beneath_except(&plan.read, &plan.hidden);
    let writes = beneath_except(&plan.write, &plan.hidden);
    let existing = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths.iter().filter(|p| p.exists()).cloned().collect()
    };
    ruleset
        .create()?
        .add_rules(path_beneath_rules(&reads.full, read))?
        .add_rules(path_beneath_rules(&reads.listing, AccessFs::ReadDir))?
        .add_rules(path_beneath_rules(&writes.full, all))?
        .add_rules(path_beneath_rules(existing(&plan.private), all))?
        .add_rules(path_beneath_rules(
            existing(&plan.devices),
            AccessFs::from_file(abi),
        ))?
        .add_rules(open_ports(closing.then_some(&plan.closed_ports[..])))
}

/// A rule allowing connections to each TCP port but `closed` (none without): Landlock only
/// grants, so closing one port is granting the 65,535 others.
fn open_ports(
    closed: Option<&[u16]>,
) -> impl Iterator<Item = Result<NetPort, landlock::RulesetError>> + '_ {
    closed
        .into_iter()
        .flat_map(|closed| (0..=u16::MAX).filter(move |port| !closed.contains(port)))
        .map(|port| Ok(NetPort::new(port, AccessNet::ConnectTcp)))
}

pub(crate) fn abi_of(version: i32) -> ABI {
    match version {
        ..=0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        _ => ABI::V7,
    }
}

/// In the server's own process: limits, no capabilities, no Multipath TCP, the Landlock domain,
/// then the command.
/// Returns only on a failure.
fn confine_and_exec(
    plan: &Plan,
    ruleset: Option<RulesetCreated>,
    filters: &[seccompiler::BpfProgram],
    command: &[OsString],
) -> Failed {
    sys::set_signals(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP], libc::SIG_DFL);
    let limits = [
        (libc::RLIMIT_DATA, plan.limits.memory_bytes),
        (libc::RLIMIT_NOFILE, plan.limits.open_files),
        // Counted per user namespace: without one it would count every process of the user.
        (
            libc::RLIMIT_NPROC,
            if plan.namespaces {
                plan.limits.processes
            } else {
                0
            },
        ),
    ];
    for (resource, value) in limits {
        if value != 0
            && let Err(e) = sys::set_limit(resource, value)
        {
            return failed(format!("limit {resource}"), e);
        }
    }
    if let Err(e) = sys::drop_capabilities() {
        return failed("dropping capabilities", e);
    }
    // After `no_new_privs` (set with the capabilities dropped), which the filter needs.
    for filter in filters {
        if let Err(e) = crate::filters::apply(filter) {
            return failed("entering a seccomp filter", e);
        }
    }
    if let Some(ruleset) = ruleset {
        let fd: Option<std::os::fd::OwnedFd> = ruleset.into();
        if let Some(fd) = fd
            && let Err(e) = sys::landlock_restrict_self(fd.as_fd())
        {
            return failed("entering the Landlock domain", e);
        }
    }
    let Some((program, args)) = command.split_first() else {
        return Failed("no command".to_owned());
    };
    let error = std::process::Command::new(program).args(args).exec();
    let code = if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    eprintln!("{SAYS}cannot run {}: {error}", Path::new(program).display());
    std::process::exit(code)
}
