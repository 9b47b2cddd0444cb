//! The few process-control system calls std does not offer: signalling a whole process group,
//! asking the kernel to kill a child when the gateway dies, and detaching a child from the
//! gateway's terminal and inherited descriptors. The only `unsafe` in the crate.
#![allow(unsafe_code)]

/// Sends `signal` to every process in group `pgid`. Errors (the group is already gone) are ignored.
pub(crate) fn signal_group(pgid: u32, signal: i32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return; // never signal "every process" or init
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale pgid only yields ESRCH.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// The gateway's effective user id.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: no arguments, no memory.
    unsafe { libc::geteuid() }
}

pub(crate) const SIGTERM: i32 = libc::SIGTERM;
pub(crate) const SIGKILL: i32 = libc::SIGKILL;

/// Makes the child receive SIGKILL when the thread that spawned it dies (the gateway's runtime
/// worker threads live as long as the gateway), so a SIGKILLed gateway leaves no direct children.
pub(crate) fn kill_child_with_parent(command: &mut tokio::process::Command) {
    let gateway = std::process::id();
    // SAFETY: the closure runs between fork and exec and only calls prctl and getppid, both
    // async-signal-safe; it allocates nothing and touches no locks.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if u32::try_from(libc::getppid()).ok() != Some(gateway) {
                // No allocation after a fork of a threaded process: a raw error.
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Starts the child in a session of its own, so that it has no controlling terminal (a server
/// started from the operator's shell could otherwise type into it with `TIOCSTI`, or read
/// from it), in a process group of its own (its id is the child's: the group is signalled as
/// one), and marks every descriptor above the three pipes close-on-exec, so that none the
/// gateway inherited without the flag (`--api-key-file /dev/fd/3 3<key`) reaches the server.
pub(crate) fn detach_child(command: &mut tokio::process::Command) {
    // SAFETY: the closure runs between fork and exec and only calls setsid and close_range,
    // both async-signal-safe system calls; it allocates nothing and touches no locks.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Linux 5.11 and later; an older kernel leaves the flags as they are (and has no
            // Landlock to confine the server either).
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        });
    }
}

/// Raises the soft limit of open files to the hard limit: a gateway holds a socket per session
/// and pipes per upstream, and the common default of 1,024 is reached long before memory is.
/// Returns the limit now in force.
pub fn raise_open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(limit.rlim_cur)
}
