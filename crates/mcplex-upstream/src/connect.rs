//! Opening one connection to a server over its configured transport (a child process, streamable
//! HTTP with the legacy SSE fallback, legacy SSE, or a built-in server), up to its first
//! listing: the handshake, the tools and what else it offers.

use std::sync::{Arc, PoisonError};

use mcplex_config::{Redactor, ServerConfig, Transport};
use mcplex_oauth::Secret;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::lifecycle::{self, OfferParts};
use crate::rpc::{NotificationSender, RpcConnection};
use crate::supervisor::{BuiltinConnector, ServerSlot};
use crate::wire::{Wire, http, lines::lines_wire, sse, stdio};
use crate::{ConnectError, UpstreamError};
use mcplex_protocol::Offer;

/// Shuts a half-opened connection down if the opener fails, times out or is dropped.
pub(crate) struct ShutdownOnDrop(Option<Arc<RpcConnection>>);

impl ShutdownOnDrop {
    pub(crate) fn new(connection: Arc<RpcConnection>) -> ShutdownOnDrop {
        ShutdownOnDrop(Some(connection))
    }

    pub(crate) fn defuse(mut self) -> Arc<RpcConnection> {
        self.0.take().expect("defused once")
    }
}

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        if let Some(connection) = self.0.take() {
            tokio::spawn(async move { connection.shutdown().await });
        }
    }
}

pub(crate) type Opened = (Arc<RpcConnection>, lifecycle::Handshake, Vec<Value>, Offer);

/// Opens a connection to `slot`'s server over its configured transport, up to its first
/// listing.
pub(crate) async fn open(
    slot: &ServerSlot,
    builtin: Option<&BuiltinConnector>,
    bearer: Option<&Secret>,
    notifications: NotificationSender,
) -> Result<Opened, ConnectError> {
    let config = &slot.config;
    let redactor = &slot.redactor;
    let server: Arc<str> = config.name.as_str().into();
    match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            working_dir,
            inherit_env,
            sandbox,
        } => {
            let spec = stdio::StdioSpec {
                command,
                args,
                env,
                working_dir: working_dir.as_ref(),
                inherit_env,
                sandbox,
            };
            *slot.denied.lock().unwrap_or_else(PoisonError::into_inner) = None;
            let (wire, report) = stdio::spawn(
                server.clone(),
                &spec,
                redactor.clone(),
                &slot.isolation,
                slot.denied.clone(),
            )
            .await?;
            *slot.report.lock().unwrap_or_else(PoisonError::into_inner) = Some(report);
            open_on(server, redactor, wire, config, notifications).await
        }
        Transport::Http {
            url,
            headers,
            fallback_to_sse,
        } => {
            let fallback = *fallback_to_sse;
            open_http(slot, url, headers, fallback, bearer, notifications).await
        }
        Transport::Sse { url, headers } => {
            let wire = sse::connect(server.clone(), redactor.clone(), url, headers, bearer).await?;
            open_on(server, redactor, wire, config, notifications).await
        }
        Transport::Builtin { kind } => {
            let (reader, writer) = builtin
                .and_then(|connect| connect(kind))
                .ok_or_else(|| ConnectError::NoBuiltin(kind.clone()))?;
            let closed = CancellationToken::new();
            let (sender, incoming) = lines_wire(
                server.clone(),
                redactor.clone(),
                reader,
                writer,
                closed.clone(),
            );
            open_on(
                server,
                redactor,
                Wire {
                    sender,
                    incoming,
                    closed,
                    transport: mcplex_trace::Transport::Stdio,
                },
                config,
                notifications,
            )
            .await
        }
    }
}

/// Opens a streamable HTTP connection; when it fails and the server may fall back, a legacy SSE
/// one (failing with both errors when that fails too).
async fn open_http(
    slot: &ServerSlot,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    fallback_to_sse: bool,
    bearer: Option<&Secret>,
    notifications: NotificationSender,
) -> Result<Opened, ConnectError> {
    let (config, redactor) = (&slot.config, &slot.redactor);
    let server: Arc<str> = config.name.as_str().into();
    let wire = http::open(
        server.clone(),
        redactor.clone(),
        url,
        headers,
        slot.login().into(),
        slot.challenged.clone(),
    )?;
    let streamable = match open_on(
        server.clone(),
        redactor,
        wire,
        config,
        notifications.clone(),
    )
    .await
    {
        Err(streamable) if fallback_to_sse => streamable,
        opened => return opened,
    };
    match sse::connect(server.clone(), redactor.clone(), url, headers, bearer).await {
        Ok(wire) => open_on(server, redactor, wire, config, notifications).await,
        Err(legacy) => Err(ConnectError::BothFailed {
            streamable: Box::new(streamable),
            legacy: Box::new(legacy),
        }),
    }
}

/// `error`, and how the server's process exited when it did: one that exits during the
/// handshake is reported with its exit status, not only as a closed connection or a write to a
/// broken pipe. A transport error keeps its own text beside the status (a result the gateway
/// could not read says so even if the server then exited).
async fn why_lost(connection: &RpcConnection, error: UpstreamError) -> UpstreamError {
    if !matches!(
        error,
        UpstreamError::Closed { .. } | UpstreamError::Transport { .. }
    ) {
        return error;
    }
    let Some(exit) = connection.exit_reason().await else {
        return error;
    };
    match error {
        UpstreamError::Transport { server, reason } => UpstreamError::Transport {
            server,
            reason: format!("{reason}; {exit}"),
        },
        other => UpstreamError::Closed {
            server: other.server().to_owned(),
            reason: exit,
        },
    }
}

async fn open_on(
    server: Arc<str>,
    redactor: &Arc<Redactor>,
    wire: Wire,
    config: &ServerConfig,
    notifications: NotificationSender,
) -> Result<Opened, ConnectError> {
    let connection = RpcConnection::start(server, redactor.clone(), wire, notifications);
    if config.trace_context {
        connection.pass_trace_context_in_meta();
    }
    let guard = ShutdownOnDrop(Some(connection.clone()));
    let handshake = match lifecycle::open(&connection, config.lifecycle).await {
        Ok(handshake) => handshake,
        Err(error) => return Err(why_lost(&connection, error).await.into()),
    };
    let tools = match lifecycle::list_tools(&connection, config.init_timeout).await {
        Ok(tools) => tools,
        Err(error) => return Err(why_lost(&connection, error).await.into()),
    };
    let mut offer = Offer {
        capabilities: handshake.capabilities.clone(),
        ..Offer::default()
    };
    let parts = OfferParts::of(config);
    lifecycle::read_offer(&connection, &mut offer, parts, config.init_timeout).await;
    Ok((guard.defuse(), handshake, tools, offer))
}
