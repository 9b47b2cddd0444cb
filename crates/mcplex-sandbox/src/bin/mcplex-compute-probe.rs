//! A probe for this crate's own tests (`tests/compute.rs`): tries each operation a confined
//! process must not make, before and after `confine_to_compute`, and prints one line per try:
//! `stage<TAB>operation<TAB>true|false`. Its arguments: a directory holding `secret` and
//! `doomed`, and a TCP port listening on 127.0.0.1. Single-threaded until it computes, as the
//! code_execution worker is when it confines itself.
#![allow(unsafe_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(dir), Some(port)) = (args.next(), args.next()) else {
        eprintln!("usage: mcplex-compute-probe DIR PORT");
        return ExitCode::from(2);
    };
    let dir = PathBuf::from(dir);
    let Some(port) = port.to_str().and_then(|port| port.parse::<u16>().ok()) else {
        eprintln!("not a port");
        return ExitCode::from(2);
    };
    report("before", &dir, port);
    if let Err(e) = mcplex_sandbox::confine_to_compute() {
        eprintln!("cannot confine: {e}");
        return ExitCode::from(3);
    }
    report("after", &dir, port);
    ExitCode::SUCCESS
}

fn report(stage: &str, dir: &Path, port: u16) {
    let mut out = std::io::stdout().lock();
    for (what, worked) in attempts(dir, port) {
        let _ = writeln!(out, "{stage}\t{what}\t{worked}");
    }
    let _ = out.flush();
    // Undo what worked, so that the second round meets the same state.
    let _ = std::fs::remove_file(dir.join("new"));
    let _ = std::fs::remove_dir(dir.join("made"));
    let _ = std::fs::write(dir.join("doomed"), "x");
}

/// Each operation and whether it worked. Entering a user namespace comes last: it changes the
/// process for what follows.
fn attempts(dir: &Path, port: u16) -> Vec<(&'static str, bool)> {
    vec![
        ("read a file", std::fs::read(dir.join("secret")).is_ok()),
        (
            "create a file",
            std::fs::File::create(dir.join("new")).is_ok(),
        ),
        (
            "remove a file",
            std::fs::remove_file(dir.join("doomed")).is_ok(),
        ),
        (
            "make a directory",
            std::fs::create_dir(dir.join("made")).is_ok(),
        ),
        (
            "connect over TCP",
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        ),
        (
            "make a socket pair",
            std::os::unix::net::UnixStream::pair().is_ok(),
        ),
        (
            "run a program",
            Command::new("/bin/true")
                .status()
                .is_ok_and(|status| status.success()),
        ),
        // SAFETY: signal 0 only asks whether the parent could be signalled.
        ("signal the parent", unsafe {
            libc::kill(libc::getppid(), 0) == 0
        }),
        (
            "learn a file's metadata",
            std::fs::metadata(dir.join("secret")).is_ok(),
        ),
        (
            "read a link in /proc",
            std::fs::read_link("/proc/self/exe").is_ok(),
        ),
        ("start a process", start_process()),
        ("map shared memory", map_shared_memory()),
        // SAFETY: a name and no flags; the descriptor is closed at once.
        ("make a memfd", unsafe {
            let fd = libc::memfd_create(c"probe".as_ptr(), 0);
            fd >= 0 && libc::close(fd) == 0
        }),
        // SAFETY: a private queue, removed at once.
        ("use SysV IPC", unsafe {
            let queue = libc::msgget(libc::IPC_PRIVATE, 0o600);
            queue >= 0 && libc::msgctl(queue, libc::IPC_RMID, std::ptr::null_mut()) == 0
        }),
        // SAFETY: stdout's owner set to the parent (no O_ASYNC: no signal), then to nobody.
        ("make a descriptor signal the parent", unsafe {
            libc::fcntl(1, libc::F_SETOWN, libc::getppid()) == 0
                && libc::fcntl(1, libc::F_SETOWN, 0) == 0
        }),
        ("set the parent's limits", set_parents_limit()),
        ("set the parent's priority", set_parents_priority()),
        // SAFETY: unshare takes a flag; the process has one thread here.
        ("enter a user namespace", unsafe {
            libc::unshare(libc::CLONE_NEWUSER) == 0
        }),
        ("compute in a thread", compute()),
    ]
}

/// Sets the parent's core-size limit to what it is (a process of the same user may, unless
/// confined; the value stays as it was either way).
fn set_parents_limit() -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reads the parent's limit into `limit`, then writes the same values back.
    unsafe {
        libc::prlimit(
            libc::getppid(),
            libc::RLIMIT_CORE,
            std::ptr::null(),
            &mut limit,
        ) == 0
            && libc::prlimit(
                libc::getppid(),
                libc::RLIMIT_CORE,
                &limit,
                std::ptr::null_mut(),
            ) == 0
    }
}

/// Sets the parent's nice value to what it is.
fn set_parents_priority() -> bool {
    // SAFETY: integer arguments only; the value written is the one read.
    unsafe {
        let parent = libc::getppid() as libc::id_t;
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, parent);
        *libc::__errno_location() == 0 && libc::setpriority(libc::PRIO_PROCESS, parent, nice) == 0
    }
}

/// Forks a child that exits at once, and reaps it.
fn start_process() -> bool {
    // SAFETY: the child only calls `_exit`; the parent waits for it.
    unsafe {
        match libc::fork() {
            -1 => false,
            0 => libc::_exit(0),
            child => libc::waitpid(child, std::ptr::null_mut(), 0) == child,
        }
    }
}

/// Maps a page of shared anonymous memory (which a data limit does not count), and unmaps it.
fn map_shared_memory() -> bool {
    // SAFETY: a fresh anonymous mapping, unmapped before it is used.
    unsafe {
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        page != libc::MAP_FAILED && libc::munmap(page, 4096) == 0
    }
}

fn compute() -> bool {
    std::thread::spawn(|| {
        let data: Vec<u64> = (0..8_000_000).collect();
        data.iter().sum::<u64>() == 8_000_000 * 7_999_999 / 2
    })
    .join()
    .unwrap_or(false)
}
