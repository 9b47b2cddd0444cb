//! The one seccomp filter of the sandbox: no Multipath TCP socket. Landlock's TCP rules check
//! sockets of `IPPROTO_TCP` only, and an MPTCP socket (`socket(AF_INET, SOCK_STREAM,
//! IPPROTO_MPTCP)`) falls back to plain TCP against a listener that does not speak it: without
//! this filter a server could connect to a port the rules close (the gateway's), and a server
//! without network but without a network namespace could reach the network. Everything else
//! Landlock and the namespaces decide; a syscall of another architecture (the 32-bit entry, and
//! its `socketcall`) ends the process.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `IPPROTO_MPTCP` (linux/in.h); the libc crate does not name it on every target.
const IPPROTO_MPTCP: u64 = 262;

/// The filter refusing an MPTCP socket with `EACCES`, as Landlock refuses a closed port.
pub(crate) fn without_multipath_tcp() -> Result<BpfProgram, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mptcp = SeccompCondition::new(2, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, IPPROTO_MPTCP)?;
    let filter = SeccompFilter::new(
        [(libc::SYS_socket, vec![SeccompRule::new(vec![mptcp])?])]
            .into_iter()
            .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

/// Enters `filter` (the caller has set `no_new_privs`).
pub(crate) fn apply(filter: &BpfProgram) -> Result<(), seccompiler::Error> {
    seccompiler::apply_filter(filter)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_builds_for_this_architecture() {
        let filter = super::without_multipath_tcp().expect("a filter");
        assert!(!filter.is_empty());
    }
}
