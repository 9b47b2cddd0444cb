//! The few process-control system calls std does not offer, for the worker processes: detaching
//! a worker from the gateway (its own session, no inherited descriptors, killed with the
//! gateway, no new privileges), signalling its whole process group, and bounding its memory.
//! The only `unsafe` in the crate.
#![allow(unsafe_code)]

use std::io;

/// Makes the child a session of its own (no controlling terminal; its own process group, whose
/// id is its pid), marks every descriptor above the three pipes close-on-exec (none the gateway
/// inherited without the flag reaches it), has the kernel SIGKILL it when the thread that
/// spawned it dies (the gateway's runtime threads live as long as the gateway), and sets
/// `no_new_privs` (no set-uid or file capabilities through an `execve`).
pub(crate) fn detach_worker(command: &mut tokio::process::Command) {
    let gateway = std::process::id();
    // SAFETY: the closure runs between fork and exec and only calls setsid, close_range, prctl
    // and getppid, all async-signal-safe system calls; it allocates nothing and touches no locks.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            // Linux 5.11 and later; an older kernel leaves the flags as they are.
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The gateway may have died before prctl took effect.
            if u32::try_from(libc::getppid()).ok() != Some(gateway) {
                // No allocation after a fork of a threaded process: a raw error.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// SIGKILLs every process in group `pgid` (a worker's, whose id is its pid). Errors (the group
/// is already gone) are ignored.
pub(crate) fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return; // never signal "every process" or init
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale pgid only yields ESRCH.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// Bounds this process's data (heap and every private writable mapping) to `bytes`: past it an
/// allocation fails and the worker dies, instead of taking the machine's memory.
pub(crate) fn limit_data(bytes: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit only reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_DATA, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
