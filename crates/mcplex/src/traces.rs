//! The OpenTelemetry export of the gateway's spans (`mcplex-trace`): OTLP over HTTP/protobuf,
//! configured by the standard variables, read once at start:
//!
//! - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as given) or `OTEL_EXPORTER_OTLP_ENDPOINT`
//!   (`/v1/traces` appended) turns it on; neither set, nothing is exported and no span is
//!   recorded;
//! - `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off again (any exporter
//!   other than `otlp` is refused with a warning);
//! - `OTEL_SERVICE_NAME` (default `mcplex`), `OTEL_RESOURCE_ATTRIBUTES`,
//!   `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_TRACES_SAMPLER(_ARG)`
//!   and `OTEL_BSP_*` are read by the SDK as the specification says;
//! - `OTEL_EXPORTER_OTLP_PROTOCOL` must be `http/protobuf` (the default): this build has no gRPC
//!   or JSON exporter, and says so rather than export nothing silently.
//!
//! Spans wait in the batch processor's bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048) and are
//! exported from its own thread: a collector that is down or slow costs dropped spans, never a
//! blocked call.

use std::time::Duration;

use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

/// How long the export may take at exit to send what is queued.
const FLUSH_AT_EXIT: Duration = Duration::from_secs(5);

/// The running export; dropped at exit, it sends what is queued (for at most [`FLUSH_AT_EXIT`]).
pub struct Exporting {
    provider: SdkTracerProvider,
}

impl Drop for Exporting {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown_with_timeout(FLUSH_AT_EXIT) {
            eprintln!("mcplex: the trace export did not finish at exit: {e}");
        }
    }
}

/// What the environment asks for.
pub enum Wanted {
    Off,
    Otlp,
    /// Asked for but not possible in this build; the text says why.
    Refused(String),
}

/// Reads the standard variables (see the module's documentation).
pub fn wanted() -> Wanted {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let endpoint =
        var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"));
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
    if endpoint.is_none() || disabled {
        return Wanted::Off;
    }
    if let Some(exporter) = var("OTEL_TRACES_EXPORTER").filter(|v| !v.eq_ignore_ascii_case("otlp"))
    {
        return Wanted::Refused(format!(
            "OTEL_TRACES_EXPORTER {exporter:?} is not supported (only \"otlp\" or \"none\"); no traces are exported"
        ));
    }
    let protocol = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .into_iter()
    .find_map(|name| var(name).map(|value| (name, value)));
    match protocol {
        None => Wanted::Otlp,
        Some((_, value)) if value.eq_ignore_ascii_case("http/protobuf") => Wanted::Otlp,
        Some((name, other)) => Wanted::Refused(format!(
            "{name} {other:?} is not supported (only \"http/protobuf\"); no traces are exported"
        )),
    }
}

/// Starts the export and returns the layer that feeds it the spans of `mcplex_trace::TARGET`
/// (and nothing else), with the guard that flushes it at exit.
pub fn start<S>() -> Result<(impl Layer<S>, Exporting), String>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        // The exporter's error repeats the endpoint as given, credentials and all.
        .map_err(|e| {
            let e = mcplex_config::redact_urls(&e.to_string());
            format!("cannot start the OTLP trace export: {e}")
        })?;
    // The default only where the operator named no service (OTEL_SERVICE_NAME, or service.name
    // among OTEL_RESOURCE_ATTRIBUTES): the SDK reads both and says `unknown_service…` otherwise.
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::new("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let resource = if named {
        detected
    } else {
        Resource::builder().with_service_name("mcplex").build()
    };
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter).build())
        .with_resource(resource)
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("mcplex"))
        .with_location(false)
        .with_threads(false)
        .with_level(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(Targets::new().with_target(mcplex_trace::TARGET, tracing::Level::TRACE));
    mcplex_trace::exporting();
    Ok((layer, Exporting { provider }))
}
