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

/// Writes one row of a table, like [`line`], with every control character escaped (`\u{1b}`):
/// a row holds what callers and upstreams named (tool names, errors, statuses), and a newline
/// there would forge a row of its own, an escape sequence would drive the operator's terminal.
pub fn row(text: fmt::Arguments<'_>) -> anyhow::Result<()> {
    let text = text.to_string();
    line(format_args!("{}", printable(&text)))
}

/// `text` with its control characters (C0, DEL, C1) written as Rust escapes.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            escaped.extend(c.escape_unicode());
        } else {
            escaped.push(c);
        }
    }
    std::borrow::Cow::Owned(escaped)
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

/// [`outln!`] for a table row: control characters escaped ([`row`]).
macro_rules! rowln {
    ($($arg:tt)*) => {
        $crate::output::row(format_args!($($arg)*))
    };
}
pub(crate) use rowln;

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_escaped_and_other_text_kept() {
        assert_eq!(
            super::printable("github__create_issue ü"),
            "github__create_issue ü"
        );
        assert_eq!(
            super::printable("a\u{1b}[2J\nb\r\u{9b}c\u{7f}"),
            "a\\u{1b}[2J\\u{a}b\\u{d}\\u{9b}c\\u{7f}"
        );
    }
}
