//! Tracing to stderr (never stdout: in `--stdio` mode stdout is the JSON-RPC channel).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// `MCPLEX_LOG` or `RUST_LOG` picks levels (default `default_level`); `format` is `text` or `json`.
pub fn init(format: &str, default_level: &str) {
    let filter = std::env::var("MCPLEX_LOG")
        .ok()
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .or_else(|| EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| EnvFilter::new(format!("{default_level},rmcp=warn")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only for people: a log file or a pipe gets plain text.
        .with_ansi(std::io::stderr().is_terminal());
    if format == "json" {
        builder.json().init();
    } else {
        builder.with_target(false).init();
    }
}
