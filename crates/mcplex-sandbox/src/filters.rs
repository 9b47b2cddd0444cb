//! The sandbox's seccomp filters, for what Landlock and the namespaces cannot say.
//!
//! - For stdio servers, [`without_multipath_tcp`]: Landlock's TCP rules check sockets of
//!   `IPPROTO_TCP` only, and an MPTCP socket (`socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)`)
//!   falls back to plain TCP against a listener that does not speak it. Without this filter a
//!   server could connect to a port the rules close (the gateway's), and a server without
//!   network but without a network namespace could reach the network.
//! - For a process confined to computing (the code_execution worker), [`compute_only`] and
//!   [`without_clone3`]: no file opened, made, removed, re-stamped or watched, no program
//!   executed, no socket, no other process's memory, signals, limits or scheduling, no
//!   namespace, no io_uring (whose operations seccomp never sees), no SysV IPC, keys, BPF, perf
//!   events or kernel log.
//!
//! Every filter matches x32 system calls too (the x86-64 numbers with bit 30 set, and the x32
//! entries of their own), which a kernel booted with `syscall.x32=y` accepts under the same
//! architecture; a system call of another architecture (the 32-bit entry) ends the process.

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
    let rules = [(libc::SYS_socket, vec![SeccompRule::new(vec![mptcp])?])];
    build(rules, SeccompAction::Errno(libc::EACCES as u32))
}

/// System calls a process that only computes and talks over the pipes it was given never
/// makes, refused unconditionally with `EPERM`.
const NEVER_TO_COMPUTE: &[libc::c_long] = &[
    // Files: opened, made, removed, renamed, linked, re-permissioned (and [`LEGACY_FILES`]).
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_mknodat,
    libc::SYS_mkdirat,
    libc::SYS_unlinkat,
    libc::SYS_renameat2,
    libc::SYS_linkat,
    libc::SYS_symlinkat,
    libc::SYS_truncate,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    // Watching files (inotify and fanotify take paths Landlock does not check).
    libc::SYS_inotify_init1,
    libc::SYS_inotify_add_watch,
    libc::SYS_fanotify_init,
    libc::SYS_fanotify_mark,
    libc::SYS_fchownat,
    // Programs.
    libc::SYS_execve,
    libc::SYS_execveat,
    // Sockets of any family.
    libc::SYS_socket,
    libc::SYS_socketpair,
    // Other processes: their memory, descriptors and signals.
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_getfd,
    libc::SYS_pidfd_send_signal,
    libc::SYS_kill,
    libc::SYS_tkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_process_madvise,
    libc::SYS_process_mrelease,
    libc::SYS_kcmp,
    libc::SYS_get_robust_list,
    libc::SYS_migrate_pages,
    libc::SYS_move_pages,
    // Other processes' scheduling (the gateway's included: same user, no capability needed).
    libc::SYS_setpriority,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setattr,
    libc::SYS_ioprio_set,
    // Namespaces and mounts.
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    // io_uring, whose operations (open, connect) seccomp never sees.
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    // SysV IPC objects shared with every process of the user outside an IPC namespace.
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_msgget,
    libc::SYS_semget,
    // The kernel's wider surfaces.
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_syslog,
];

/// The file system calls x86-64 keeps beside their `…at` forms, and those the libc crate does
/// not name yet.
#[cfg(target_arch = "x86_64")]
const LEGACY_FILES: &[libc::c_long] = &[
    libc::SYS_open,
    libc::SYS_creat,
    libc::SYS_mknod,
    libc::SYS_mkdir,
    libc::SYS_rmdir,
    libc::SYS_unlink,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_link,
    libc::SYS_symlink,
    libc::SYS_chmod,
    libc::SYS_chown,
    libc::SYS_lchown,
    libc::SYS_uselib,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
    libc::SYS_inotify_init,
    SYS_SETXATTRAT,
    SYS_REMOVEXATTRAT,
];

/// `setxattrat` and `removexattrat` (Linux 6.13), which the libc crate does not name yet.
#[cfg(target_arch = "x86_64")]
const SYS_SETXATTRAT: libc::c_long = 463;
#[cfg(target_arch = "x86_64")]
const SYS_REMOVEXATTRAT: libc::c_long = 466;

/// The x32 entries of their own among [`NEVER_TO_COMPUTE`] (arch/x86/entry/syscalls/
/// syscall_64.tbl, 512 and up), marked.
#[cfg(target_arch = "x86_64")]
const NEVER_TO_COMPUTE_X32: &[i64] = &[
    520, // execve
    521, // ptrace
    524, // rt_sigqueueinfo
    531, // get_robust_list
    533, // move_pages
    539, // process_vm_readv
    540, // process_vm_writev
    545, // execveat
];

/// The namespace flags of `clone`: a thread or a process, never a new namespace.
const NEW_NAMESPACES: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// The filter of a process confined to computing: [`NEVER_TO_COMPUTE`], `clone` with a
/// namespace flag, and `prlimit64`, `tgkill` and `rt_tgsigqueueinfo` aimed at another process
/// than `own_pid`, refused with `EPERM`.
pub(crate) fn compute_only(own_pid: u32) -> Result<BpfProgram, seccompiler::Error> {
    let mut rules: Vec<(i64, Vec<SeccompRule>)> = NEVER_TO_COMPUTE
        .iter()
        .map(|&call| (call, Vec::new()))
        .collect();
    #[cfg(target_arch = "x86_64")]
    rules.extend(LEGACY_FILES.iter().map(|&call| (call, Vec::new())));
    #[cfg(target_arch = "x86_64")]
    rules.extend(
        NEVER_TO_COMPUTE_X32
            .iter()
            .map(|&call| (call | X32_BIT, Vec::new())),
    );
    let namespace_flags = NEW_NAMESPACES
        .iter()
        .map(|&flag| {
            let flag = u64::from(flag.unsigned_abs());
            let set = SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?;
            SeccompRule::new(vec![set])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.push((libc::SYS_clone, namespace_flags));
    let elsewhere = || -> Result<Vec<SeccompRule>, seccompiler::Error> {
        let other = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            u64::from(own_pid),
        )?;
        Ok(vec![SeccompRule::new(vec![other])?])
    };
    // Resource limits: its own (pid 0 or its pid), never another process's.
    let others_limits = [
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, 0)?,
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            u64::from(own_pid),
        )?,
    ];
    rules.push((
        libc::SYS_prlimit64,
        vec![SeccompRule::new(others_limits.to_vec())?],
    ));
    rules.push((libc::SYS_tgkill, elsewhere()?));
    rules.push((libc::SYS_rt_tgsigqueueinfo, elsewhere()?));
    #[cfg(target_arch = "x86_64")]
    rules.push((536 | X32_BIT, elsewhere()?)); // rt_tgsigqueueinfo, x32
    build(rules, SeccompAction::Errno(libc::EPERM as u32))
}

/// `clone3` answered with `ENOSYS`: its flags are behind a pointer no filter can read, and the
/// C library then starts threads with `clone`, whose flags [`compute_only`] checks.
pub(crate) fn without_clone3() -> Result<BpfProgram, seccompiler::Error> {
    build(
        [(libc::SYS_clone3, Vec::new())],
        SeccompAction::Errno(libc::ENOSYS as u32),
    )
}

/// A filter for this architecture taking `refusal` on `rules` (each also under its x32 number)
/// and allowing everything else.
fn build(
    rules: impl IntoIterator<Item = (i64, Vec<SeccompRule>)>,
    refusal: SeccompAction,
) -> Result<BpfProgram, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mut by_call = BTreeMap::new();
    for (call, chain) in rules {
        #[cfg(target_arch = "x86_64")]
        if call & X32_BIT == 0 {
            by_call.insert(call | X32_BIT, chain.clone());
        }
        by_call.insert(call, chain);
    }
    let filter = SeccompFilter::new(by_call, SeccompAction::Allow, refusal, arch)?;
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
            super::compute_only(std::process::id()),
            super::without_clone3(),
        ] {
            assert!(!filter.expect("a filter").is_empty());
        }
    }
}
