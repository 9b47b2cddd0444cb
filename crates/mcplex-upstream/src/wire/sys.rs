//! The one process-wide system call std does not offer: raising the open-files limit. The only
//! `unsafe` in the crate (detaching children and signalling their groups is
//! `mcplex-sandbox`'s, where the sandbox's own system calls are).
#![allow(unsafe_code)]

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
