//! The gateway's own environment variables, which no server inherits whatever its
//! `inherit_env` says.

/// The prefixes of the gateway's own variables: its own, and OpenTelemetry's, whose exporter
/// settings carry the collector's credential (`OTEL_EXPORTER_OTLP_HEADERS`).
const GATEWAYS_OWN: &[&str] = &["MCPLEX_", "OTEL_"];

/// Whether `name` is one of the gateway's own variables, which no child inherits whatever
/// `inherit_env` says: they hold its secrets (`MCPLEX_API_KEY`, `MCPLEX_TOKEN_KEY`,
/// `MCPLEX_STORE` with its password, the trace collector's headers) and its settings, which
/// would also steer an mcplex started as a server, or a server's own OpenTelemetry SDK into the
/// gateway's collector with its credential. A server's own `env` may set one.
pub fn gateways_own(name: &str) -> bool {
    GATEWAYS_OWN.iter().any(|prefix| name.starts_with(prefix))
}

/// Whether every name `glob` matches is the gateway's own: an `inherit_env` entry that can
/// never take effect.
pub(crate) fn only_gateways_own(glob: &crate::Glob) -> bool {
    GATEWAYS_OWN
        .iter()
        .any(|prefix| glob.pattern().starts_with(prefix))
}
