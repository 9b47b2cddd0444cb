//! Test servers run as child processes: killed on drop, and waited for until they listen.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process (an HTTP upstream) killed on drop.
pub struct Background(pub Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `harness::listening`, for a server that may take up to `limit` to start (`npx` on a cold
/// cache).
pub fn listening_within(command: Command, port: u16, what: &str, limit: Duration) -> Background {
    try_listening_within(command, port, what, limit).unwrap_or_else(|exited| panic!("{exited}"))
}

/// Starts `command` and waits (at most `limit`) until `port` accepts connections; `Err` saying
/// how it ended and what it wrote on stderr when the process exits first (a port that another
/// test took between `free_port` and the bind, say), so that a caller can retry on another.
pub fn try_listening_within(
    mut command: Command,
    port: u16,
    what: &str,
    limit: Duration,
) -> Result<Background, String> {
    // A file, not a pipe: a long-running server never blocks on a full stderr pipe.
    let stderr = tempfile::tempfile().expect("a file for stderr");
    let child = command
        .stdout(Stdio::null())
        .stderr(stderr.try_clone().expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let mut background = Background(child);
    let deadline = Instant::now() + limit;
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(background);
        }
        if let Ok(Some(status)) = background.0.try_wait() {
            let mut written = String::new();
            let mut stderr = stderr;
            let _ = std::io::Seek::rewind(&mut stderr);
            let _ = std::io::Read::read_to_string(&mut stderr, &mut written);
            return Err(format!(
                "{what} exited ({status}) before it listened: {written}"
            ));
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what} to listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
