//! Isolation of the processes the gateway starts for stdio servers.
//!
//! Owns: what the kernel here can do ([`Support`], probed once), the decision of how one server
//! is confined ([`plan`]: a [`Policy`] and the gateway's [`Protected`] paths → a [`Plan`] and the
//! [`Report`] the operator sees), and the helper that carries a plan out ([`run_helper`], run as
//! the gateway's own executable with a hidden subcommand): a user, mount, PID and IPC namespace
//! (and a network namespace when the server has no network), the gateway's secrets covered by
//! empty mounts, a fresh `/proc`, a tiny init as PID 1, then in the server's own process resource
//! limits, no capabilities, `no_new_privs` and a Landlock domain (reads everywhere but the
//! secrets, writes only where the plan says, no signals or abstract sockets outside) before it
//! executes the server. `docs/isolation.md` is the threat model.
//!
//! Must not: know MCP, the config file's format or how the server's pipes are read; the
//! upstream crate spawns the helper and owns the child.

mod compute;
mod filters;
mod grants;
mod helper;
mod plan;
mod report;
mod support;
mod sys;

pub use compute::confine_to_compute;
pub use helper::{HELPER_ARG, run_helper};
pub use plan::{Limits, Plan, Policy, Protected, Refused, plan};
pub use report::{Level, Report};
pub use support::{NamespacesError, Support};
pub use sys::{detach_child, limit_data, signal_group};

/// Keeps the gateway's own process out of reach of processes of its user that are not in a
/// sandbox (a server with `"sandbox": false`, or any where the kernel offers no Landlock): its
/// `/proc` entries need `CAP_SYS_PTRACE`, and no core dump is written. A defence in depth; the
/// sandbox does not rely on it.
pub fn protect_this_process() {
    if let Err(e) = sys::make_undumpable() {
        eprintln!("mcplex: cannot make the process undumpable: {e}");
    }
}

/// The user this process acts as (its effective uid): whose files in a shared directory such as
/// `/tmp` are its own.
pub fn effective_uid() -> u32 {
    sys::geteuid()
}
