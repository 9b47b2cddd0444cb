//! Tracing to stderr (never stdout: in `--stdio` mode stdout is the JSON-RPC channel), and the
//! OpenTelemetry export of the gateway's spans when the environment asks for it (`traces.rs`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::traces::{self, Exporting, Wanted};

/// `MCPLEX_LOG` or `RUST_LOG` picks levels (default `default_level`); `format` is `text` or `json`.
/// With `export_traces` (the gateway, not one-shot commands) the spans of `mcplex_trace` go to the
/// OTLP endpoint the environment names; the returned guard flushes them at exit. They never
/// reach the log, whatever its levels say.
pub fn init(format: &str, default_level: &str, export_traces: bool) -> Option<Exporting> {
    let filter = std::env::var("MCPLEX_LOG")
        .ok()
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .or_else(|| EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| EnvFilter::new(format!("{default_level},rmcp=warn")));
    let filter = match format!("{}=off", mcplex_trace::TARGET).parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    };
    let log = tracing_subscriber::fmt::layer()
        // Colour only for people: a log file or a pipe gets plain text.
        .with_ansi(std::io::stderr().is_terminal());
    let log = if format == "json" {
        log.with_writer(std::io::stderr).json().boxed()
    } else {
        log.with_writer(|| OneLine(std::io::stderr()))
            .with_target(false)
            .boxed()
    };
    let registry = tracing_subscriber::registry().with(log.with_filter(filter));
    let wanted = if export_traces {
        traces::wanted()
    } else {
        Wanted::Off
    };
    match wanted {
        Wanted::Off => {
            registry.init();
            None
        }
        Wanted::Refused(why) => {
            registry.init();
            tracing::warn!("{why}");
            None
        }
        Wanted::Otlp => match traces::start() {
            Ok((export, exporting)) => {
                registry.with(export).init();
                tracing::info!("exporting traces over OTLP/HTTP");
                Some(exporting)
            }
            Err(why) => {
                registry.init();
                tracing::warn!("{why}");
                None
            }
        },
    }
}

/// The text log's writer: each event is one line, whatever its words hold. An upstream's error or
/// a caller's name may carry a carriage return or a newline, which would otherwise start a
/// forged line of the log (the formatter escapes other control characters; JSON escapes all).
/// The formatter writes an event whole, so every line end but its last is written escaped.
struct OneLine<W>(W);

impl<W: std::io::Write> std::io::Write for OneLine<W> {
    fn write(&mut self, event: &[u8]) -> std::io::Result<usize> {
        let (body, end) = match event.strip_suffix(b"\n") {
            Some(body) => (body, &b"\n"[..]),
            None => (event, &b""[..]),
        };
        if !body.iter().any(|&b| b == b'\n' || b == b'\r') {
            self.0.write_all(event)?;
            return Ok(event.len());
        }
        let mut escaped = Vec::with_capacity(event.len() + 16);
        for &byte in body {
            match byte {
                b'\n' => escaped.extend_from_slice(b"\\n"),
                b'\r' => escaped.extend_from_slice(b"\\r"),
                other => escaped.push(other),
            }
        }
        escaped.extend_from_slice(end);
        self.0.write_all(&escaped)?;
        Ok(event.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    #[test]
    fn an_event_is_one_line_whatever_its_words_hold() {
        let mut out = super::OneLine(Vec::new());
        out.write_all(b"WARN upstream unavailable: boom\r\n2026 INFO forged\n")
            .expect("written");
        out.write_all(b"INFO plain\n").expect("written");
        assert_eq!(
            String::from_utf8_lossy(&out.0),
            "WARN upstream unavailable: boom\\r\\n2026 INFO forged\nINFO plain\n"
        );
    }
}
