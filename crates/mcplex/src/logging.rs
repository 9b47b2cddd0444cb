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
        .with_writer(std::io::stderr)
        // Colour only for people: a log file or a pipe gets plain text.
        .with_ansi(std::io::stderr().is_terminal());
    let log = if format == "json" {
        log.json().boxed()
    } else {
        log.with_target(false).boxed()
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
