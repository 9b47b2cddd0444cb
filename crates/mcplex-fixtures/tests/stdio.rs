//! The fixture binary's stdio: served on pipes, opened anew so that the descriptions it was given
//! (which a parent or a sibling may share) stay blocking, and on Unix sockets, as node spawns it.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcplex-fixture");
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stdio-test","version":"1"}}}"#;

/// Whether this process's descriptor `fd` is in non-blocking mode (its open file description's
/// flags, as /proc shows them).
fn non_blocking(fd: i32) -> bool {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).expect("fdinfo");
    let flags = info
        .lines()
        .find_map(|line| line.strip_prefix("flags:"))
        .expect("a flags line");
    let flags = u32::from_str_radix(flags.trim(), 8).expect("octal flags");
    const O_NONBLOCK: u32 = 0o4000;
    flags & O_NONBLOCK != 0
}

/// Sends `initialize` through `input` and returns the first line read from `output`, within
/// ten seconds (a fixture that never answers fails the test instead of hanging it).
fn initialize(mut input: impl Write, output: impl std::io::Read + Send + 'static) -> String {
    writeln!(input, "{INITIALIZE}").expect("write");
    input.flush().expect("flush");
    let (line_tx, line_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(output).read_line(&mut line);
        let _ = line_tx.send(line);
    });
    line_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("an answer within ten seconds")
}

fn spawn(stdin: impl Into<Stdio>, stdout: impl Into<Stdio>) -> Child {
    Command::new(FIXTURE)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the fixture")
}

#[test]
fn on_pipes_it_answers_and_the_descriptions_it_was_given_stay_blocking() {
    let (their_input, our_input) = std::io::pipe().expect("pipe");
    let (our_output, their_output) = std::io::pipe().expect("pipe");
    // Copies of the fixture's own ends stay here: the same open file descriptions it was given.
    let shared_input = their_input.try_clone().expect("dup");
    let shared_output = their_output.try_clone().expect("dup");
    let mut child = spawn(their_input, their_output);
    let answer = initialize(our_input, our_output);
    assert!(answer.contains(r#""id":1,"result""#), "{answer}");
    assert!(!non_blocking(shared_input.as_raw_fd()));
    assert!(!non_blocking(shared_output.as_raw_fd()));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn on_unix_sockets_it_answers() {
    let (our_input, their_input) = UnixStream::pair().expect("socket pair");
    let (our_output, their_output) = UnixStream::pair().expect("socket pair");
    let mut child = spawn(OwnedFd::from(their_input), OwnedFd::from(their_output));
    let answer = initialize(&our_input, our_output);
    assert!(answer.contains(r#""id":1,"result""#), "{answer}");
    let _ = child.kill();
    let _ = child.wait();
}
