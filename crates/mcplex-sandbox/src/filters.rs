//! The sandbox's seccomp filters, for what Landlock and the namespaces cannot say.
//!
//! - For stdio servers, [`without_multipath_tcp`]: Landlock's TCP rules check sockets of
//!   `IPPROTO_TCP` only, and an MPTCP socket (`socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)`)
//!   falls back to plain TCP against a listener that does not speak it. Without this filter a
//!   server could connect to a port the rules close (the gateway's), and a server without
//!   network but without a network namespace could reach the network. It also matches the x32
//!   `socket` (the x86-64 number with bit 30 set), which a kernel booted with `syscall.x32=y`
//!   accepts under the same architecture.
//! - For a stdio server without a PID namespace, [`without_reaching_other_processes`]: no other
//!   process's resource limits, priority or scheduling (the gateway's among them).
//! - For a process confined to computing (the code_execution worker), [`compute_only`]: an
//!   allowlist of what the worker does after it confines itself (memory, threads, the clock,
//!   its own pipes and signals), everything else refused; and [`without_clone3`], so that the C
//!   library starts threads with `clone`, whose flags the allowlist checks. A list of refused
//!   calls would miss every call a later kernel adds; this one refuses them.
//!
//! A system call of another architecture (the 32-bit entry) ends the process.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `IPPROTO_MPTCP` (linux/in.h); the libc crate does not name it on every target.
const IPPROTO_MPTCP: u64 = 262;

/// The x32 ABI's mark on a system call number (`__X32_SYSCALL_BIT`).
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// The filter refusing an MPTCP socket with `EACCES`, as Landlock refuses a closed port.
pub(crate) fn without_multipath_tcp() -> Result<BpfProgram, seccompiler::Error> {
    let mptcp = SeccompCondition::new(2, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, IPPROTO_MPTCP)?;
    let rule = vec![SeccompRule::new(vec![mptcp])?];
    let mut rules = BTreeMap::new();
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_socket | X32_BIT, rule.clone());
    rules.insert(libc::SYS_socket, rule);
    filter(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
    )
}

/// For a server without a PID namespace, which sees the gateway's processes (the gateway among
/// them): refuses with `EPERM` what a process of the same user may do to another without any
/// capability and Landlock does not check: set its resource limits (`prlimit64`, a
/// `RLIMIT_NOFILE` of 0 would stop the gateway), its priority, scheduling or I/O priority. Its
/// own (`own_pid`, or 0) and reading another's stay allowed; a process group's or the whole
/// user's priority is refused.
pub(crate) fn without_reaching_other_processes(
    own_pid: u32,
) -> Result<BpfProgram, seccompiler::Error> {
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
    };
    let own = u64::from(own_pid);
    let another = |index: u8| -> Result<Vec<SeccompCondition>, seccompiler::Error> {
        Ok(vec![
            arg(index, SeccompCmpOp::Ne, 0)?,
            arg(index, SeccompCmpOp::Ne, own)?,
        ])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // prlimit64(pid, resource, new_limit, old_limit): setting, not reading.
    let mut setting_another = another(0)?;
    setting_another.push(SeccompCondition::new(
        2,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::Ne,
        0,
    )?);
    rules.insert(
        libc::SYS_prlimit64,
        vec![SeccompRule::new(setting_another)?],
    );
    for call in [
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
    ] {
        rules.insert(call, vec![SeccompRule::new(another(0)?)?]);
    }
    // setpriority(which, who, …) and ioprio_set(which, who, …): another process, or any group.
    let by_process = |which: u64| -> Result<Vec<SeccompRule>, seccompiler::Error> {
        let mut process = vec![arg(0, SeccompCmpOp::Eq, which)?];
        process.extend(another(1)?);
        Ok(vec![
            SeccompRule::new(process)?,
            SeccompRule::new(vec![arg(0, SeccompCmpOp::Ne, which)?])?,
        ])
    };
    rules.insert(
        libc::SYS_setpriority,
        by_process(libc::PRIO_PROCESS as u64)?,
    );
    // IOPRIO_WHO_PROCESS (linux/ioprio.h).
    rules.insert(libc::SYS_ioprio_set, by_process(1)?);
    #[cfg(target_arch = "x86_64")]
    for (call, chain) in rules.clone() {
        rules.insert(call | X32_BIT, chain);
    }
    filter(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
    )
}

/// What a process confined to computing may call whatever the arguments: reading and writing
/// the descriptors it holds, private memory, waiting, signals to itself, the clock, randomness,
/// its name, and ending. Nothing here names a path, a socket or another process.
const TO_COMPUTE: &[libc::c_long] = &[
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_close,
    libc::SYS_brk,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_futex,
    libc::SYS_set_robust_list,
    libc::SYS_rseq,
    libc::SYS_sched_yield,
    libc::SYS_sched_getaffinity,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_sigaltstack,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_gettimeofday,
    libc::SYS_nanosleep,
    libc::SYS_clock_nanosleep,
    libc::SYS_getrandom,
    libc::SYS_uname,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_restart_syscall,
    // Answered `ENOSYS` by [`without_clone3`], installed first: of an allow and a refusal, the
    // refusal stands.
    libc::SYS_clone3,
];

/// The namespace flags `clone` must not carry.
const NEW_NAMESPACES: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// The allowlist of a process confined to computing, everything else refused with `EPERM`:
/// [`TO_COMPUTE`], and with their arguments checked
/// - `mmap` of private memory only (a shared mapping or a memfd would escape its data limit),
/// - `clone` of a thread only (no process, which could leave its process group and outlive it,
///   or be made the gateway's child), without a namespace flag,
/// - `tgkill` of its own threads, `prlimit64` of its own limits (`own_pid` or 0),
/// - `fcntl` to read or set a descriptor's flags (not its owner, through which `SIGIO` would
///   signal any process of the user),
/// - `prctl` to name a thread or its own memory (the allocator names its mappings).
pub(crate) fn compute_only(own_pid: u32) -> Result<BpfProgram, seccompiler::Error> {
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
    };
    let one_of = |index: u8, values: &[u64]| -> Result<Vec<SeccompRule>, seccompiler::Error> {
        values
            .iter()
            .map(|&value| {
                Ok(SeccompRule::new(vec![arg(
                    index,
                    SeccompCmpOp::Eq,
                    value,
                )?])?)
            })
            .collect()
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        TO_COMPUTE.iter().map(|&call| (call, Vec::new())).collect();
    let shared = libc::MAP_SHARED as u64;
    rules.insert(
        libc::SYS_mmap,
        vec![SeccompRule::new(vec![arg(
            3,
            SeccompCmpOp::MaskedEq(shared),
            0,
        )?])?],
    );
    let namespaces = NEW_NAMESPACES
        .iter()
        .fold(0u64, |all, &flag| all | u64::from(flag.unsigned_abs()));
    let thread = libc::CLONE_THREAD as u64;
    rules.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![
            arg(0, SeccompCmpOp::MaskedEq(thread), thread)?,
            arg(0, SeccompCmpOp::MaskedEq(namespaces), 0)?,
        ])?],
    );
    rules.insert(libc::SYS_tgkill, one_of(0, &[u64::from(own_pid)])?);
    rules.insert(libc::SYS_prlimit64, one_of(0, &[0, u64::from(own_pid)])?);
    let flags = [libc::F_GETFD, libc::F_SETFD, libc::F_GETFL].map(|op| op as u64);
    rules.insert(libc::SYS_fcntl, one_of(1, &flags)?);
    let naming = [libc::PR_SET_NAME, libc::PR_GET_NAME, libc::PR_SET_VMA].map(|op| op as u64);
    rules.insert(libc::SYS_prctl, one_of(0, &naming)?);
    filter(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
    )
}

/// `clone3` answered with `ENOSYS`: its flags are behind a pointer no filter can read, and the
/// C library then starts threads with `clone`, whose flags [`compute_only`] checks. Installed
/// before it (which refuses `seccomp` itself), which lets `clone3` through to this refusal.
pub(crate) fn without_clone3() -> Result<BpfProgram, seccompiler::Error> {
    filter(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
    )
}

/// A filter for this architecture taking `on_match` on `rules` and `otherwise` on every other
/// call.
fn filter(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    otherwise: SeccompAction,
    on_match: SeccompAction,
) -> Result<BpfProgram, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(rules, otherwise, on_match, arch)?;
    Ok(filter.try_into()?)
}

/// Enters `filter` in the calling thread (the caller has set `no_new_privs`; threads started
/// after this inherit it).
pub(crate) fn apply(filter: &BpfProgram) -> Result<(), seccompiler::Error> {
    seccompiler::apply_filter(filter)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filters_build_for_this_architecture() {
        for filter in [
            super::without_multipath_tcp(),
            super::without_reaching_other_processes(std::process::id()),
            super::compute_only(std::process::id()),
            super::without_clone3(),
        ] {
            assert!(!filter.expect("a filter").is_empty());
        }
    }
}
