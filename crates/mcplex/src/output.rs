//! What the command line prints on stdout, written so that a closed reader (`mcplex tools list
//! | head -1`) ends the command quietly, as it ends any Unix tool, instead of a panic.

use std::fmt;
use std::io::Write;

/// Stdout was closed by its reader: not a failure of the command, nothing left to say.
#[derive(Debug)]
pub struct StdoutClosed;

impl fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stdout is closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes one line to stdout; a closed pipe is [`StdoutClosed`], other failures say so.
pub fn line(text: fmt::Arguments<'_>) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(text)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    outcome(written)
}

/// Writes `text` to stdout as it is (its own line ends included), like [`line`].
pub fn chunk(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    outcome(written)
}

fn outcome(written: std::io::Result<()>) -> anyhow::Result<()> {
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// Whether `error` is only that stdout was closed (the command ends quietly, with success).
pub fn is_stdout_closed(error: &anyhow::Error) -> bool {
    error.downcast_ref::<StdoutClosed>().is_some()
}

/// `println!` for command output: `outln!("{x}")?` returns [`StdoutClosed`] on a closed pipe.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;
