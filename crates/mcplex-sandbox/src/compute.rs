//! Confining a process to computing: the code_execution worker runs an agent's script in
//! QuickJS, and an escape from the engine must find nothing to act on. After
//! [`confine_to_compute`] the process keeps the descriptors it holds (its pipes) and may
//! allocate, start threads and read the clock; it cannot open, make or execute a file, make a
//! socket, reach another process (its memory, descriptors or signals) or enter a namespace.
//!
//! Two layers: the seccomp filters of [`crate::filters`], which refuse every one of these and
//! hold on kernels without Landlock too, and beneath them a Landlock domain handling every file
//! and TCP access with no rule granting any (from ABI 6 also no signals or abstract Unix sockets
//! outside it), so that a system call the filters do not name still finds no file. Capabilities
//! are given up first, with `no_new_privs`.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use landlock::{ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, Scope};

use crate::{filters, sys};

/// Confines the calling process for good. Call it while the process has one thread: Landlock
/// and seccomp bind the calling thread and the threads it starts later, not those already
/// running. A kernel without Landlock leaves the seccomp layer alone; one without seccomp
/// filters is an error (the process must not go on unconfined).
pub fn confine_to_compute() -> io::Result<()> {
    sys::drop_capabilities()?;
    // No core file of its memory, wherever it runs; its `/proc` entries for no other process.
    sys::set_limit(libc::RLIMIT_CORE, 0)?;
    sys::make_undumpable()?;
    let abi = sys::landlock_abi();
    if abi >= 1 {
        let domain = empty_domain(crate::helper::abi_of(abi))
            .map_err(|e| io::Error::other(format!("the Landlock domain: {e}")))?;
        if let Some(domain) = domain {
            sys::landlock_restrict_self(domain.as_fd())?;
        }
    }
    let seccomp = |e: seccompiler::Error| io::Error::other(format!("the seccomp filter: {e}"));
    // The allowlist last: it refuses `seccomp` and `prctl(PR_SET_NO_NEW_PRIVS)` after it.
    let filters = [
        filters::without_clone3().map_err(seccomp)?,
        filters::compute_only(std::process::id()).map_err(seccomp)?,
    ];
    for filter in &filters {
        filters::apply(filter).map_err(seccomp)?;
    }
    Ok(())
}

/// A ruleset handling every access `abi` knows, granting none (`None` where the landlock crate
/// finds nothing of it supported).
fn empty_domain(abi: ABI) -> Result<Option<OwnedFd>, landlock::RulesetError> {
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(abi))?;
    if abi >= ABI::V4 {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    Ok(ruleset.create()?.into())
}
