//! The system calls the helper needs that std does not offer, and those the gateway's other
//! children need too (detaching a child from the gateway, signalling its group, bounding its
//! data). The only `unsafe` in the crate; each wrapper turns the kernel's answer into an
//! `io::Result`. The helper is a single-threaded process of its own; the one thing here that
//! runs between a fork and an exec of the (threaded) gateway is [`detach_child`]'s closure,
//! which only makes async-signal-safe system calls.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the ABI version, or 0.
pub(crate) fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer and size 0 the kernel reads no memory; it answers
    // with the ABI version or -1 (ENOSYS, EOPNOTSUPP).
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(abi).unwrap_or(0).max(0)
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other("NUL in a path"))
}

pub(crate) fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare takes flags only.
    check(unsafe { libc::unshare(flags) })
}

/// `mount(2)`; `None` arguments are passed as null.
pub(crate) fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let source = source.map(c_path).transpose()?;
    let target = c_path(target)?;
    let fstype = fstype
        .map(|t| CString::new(t).map_err(|_| io::Error::other("NUL in a type")))
        .transpose()?;
    let data = data
        .map(|d| CString::new(d).map_err(|_| io::Error::other("NUL in options")))
        .transpose()?;
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is null or a NUL-terminated string that outlives the call.
    check(unsafe {
        libc::mount(
            ptr(&source),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    })
}

/// `fork(2)`: `Some(child)` in the parent, `None` in the child.
pub(crate) fn fork() -> io::Result<Option<libc::pid_t>> {
    // SAFETY: the helper is single-threaded, so the child is a complete copy of it.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        child => Ok(Some(child)),
    }
}

/// The exit code a shell would give for a wait status: the code, or 128 + the signal.
fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Reaps every child until `child` has ended (as a PID 1 must), and returns its exit code.
pub(crate) fn reap_until(child: libc::pid_t) -> i32 {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid writes only the status we own.
        let reaped = unsafe { libc::waitpid(-1, &mut status, 0) };
        if reaped == child {
            return exit_code(status);
        }
        if reaped == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1;
        }
    }
}

/// The kernel sends `signal` to this process when its parent ends.
pub(crate) fn die_with_parent(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong) })
}

/// Sets the disposition of `signals` to `handler` (`SIG_IGN` or `SIG_DFL`).
pub(crate) fn set_signals(signals: &[libc::c_int], handler: libc::sighandler_t) {
    for &signal in signals {
        // SAFETY: SIG_IGN and SIG_DFL are not functions; nothing runs in a handler.
        unsafe {
            libc::signal(signal, handler);
        }
    }
}

/// Closes every descriptor: a waiting process must not keep the server's pipes open.
pub(crate) fn close_all_descriptors() {
    // SAFETY: close_range takes integers; later use of a closed descriptor only fails.
    unsafe {
        libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
    }
}

/// Sets the soft and hard limit of `resource` to `value`, or to the hard limit in force when
/// that is lower (raising it would need a capability).
pub(crate) fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the structs we pass.
    unsafe {
        check(libc::getrlimit(resource, &mut current))?;
        let value = value.min(current.rlim_max);
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        check(libc::setrlimit(resource, &limit))
    }
}

/// Gives up every capability for good: empties the bounding and ambient sets, sets and locks
/// the securebits that would give uid 0 capabilities at exec, empties the effective,
/// permitted and inheritable sets, and sets `no_new_privs` (no set-uid or file capabilities
/// at exec).
pub(crate) fn drop_capabilities() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    unsafe {
        for capability in 0..=63 {
            // EINVAL past the last capability this kernel knows: nothing left to drop.
            if libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong) == -1 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                // EPERM: no CAP_SETPCAP (an unprivileged gateway outside a user namespace),
                // which also means there is nothing in the bounding set to gain at exec.
                if error.raw_os_error() != Some(libc::EPERM) {
                    return Err(error);
                }
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        );
        // SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP(_LOCKED) |
        // SECBIT_KEEP_CAPS_LOCKED: uid 0 gains nothing at exec, and this cannot be undone.
        // EPERM without CAP_SETPCAP (an unprivileged gateway outside a user namespace), where
        // uid 0 is not in play.
        const SECUREBITS: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20;
        libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0);
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        clear_capability_sets()
    }
}

/// Empties the effective, permitted and inheritable sets (`capset` with version 3).
fn clear_capability_sets() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: the header and the two data structs are the layout capset(2) reads for version 3.
    let result = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    if result == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Enters the Landlock domain of the ruleset `fd`.
pub(crate) fn landlock_restrict_self(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is a live ruleset; flags 0.
    let result = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) };
    if result == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Makes this process undumpable: its `/proc` entries (environment, memory, descriptors) are
/// then reachable only with `CAP_SYS_PTRACE`, and it writes no core dump holding its secrets.
pub(crate) fn make_undumpable() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) })
}

pub(crate) fn geteuid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() }
}

pub(crate) fn getegid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::getegid() }
}

/// Detaches the child `command` starts from the gateway: the kernel SIGKILLs it when the thread
/// that spawned it dies (the gateway's runtime threads live as long as the gateway), it is a
/// session of its own (no controlling terminal, through which it could type into the operator's
/// shell; its own process group, whose id is its pid), every descriptor above its three
/// standard ones is close-on-exec (none the gateway inherited without the flag reaches it;
/// Linux 5.11 and later, an older kernel leaves the flags as they are), and with
/// `no_new_privs` no set-uid or file capability raises it at exec.
pub fn detach_child(command: &mut std::process::Command, no_new_privs: bool) {
    use std::os::unix::process::CommandExt;
    let gateway = std::process::id();
    // SAFETY: the closure runs between fork and exec and only calls prctl, getppid, setsid and
    // close_range, all async-signal-safe; it allocates nothing and touches no locks (a raw OS
    // error allocates nothing either).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The gateway may have died before prctl took effect.
            if u32::try_from(libc::getppid()).ok() != Some(gateway) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if no_new_privs && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Sends `signal` to every process in group `pgid`. Errors (the group is already gone) are
/// ignored; a group id of 0 or 1 (this group, init) is never signalled.
pub fn signal_group(pgid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale pgid only yields ESRCH.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Bounds this process's data (heap and every private writable mapping) to `bytes`, or to the
/// hard limit in force when that is lower.
pub fn limit_data(bytes: u64) -> io::Result<()> {
    set_limit(libc::RLIMIT_DATA, bytes)
}
