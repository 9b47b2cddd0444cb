//! `DispatchError` → JSON-RPC error: the one place that decides what a caller sees.

use mcplex_dispatch::DispatchError;
use mcplex_upstream::UpstreamError;
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::json;

/// The code the TypeScript SDK and most clients use for "request timed out".
const REQUEST_TIMEOUT: i32 = -32001;
/// Implementation-defined server error: the upstream is unreachable or broke.
const UPSTREAM_UNAVAILABLE: i32 = -32002;
/// Implementation-defined server error: one of the caller's limits refused the call (429's
/// JSON-RPC cousin); `data.retry_after_seconds` says when to try again.
pub const RATE_LIMITED: i32 = -32029;
/// The protocol's "URL elicitation required" (2025-11-25 on): the request can go on once the
/// user has completed the URL elicitations in `data.elicitations`.
const URL_ELICITATION_REQUIRED: i32 = -32042;

/// A call to a `per_user` server by a caller that has not connected its account, for a client
/// that declared URL elicitation: the link as a URL elicitation its client shows its user
/// (`with_id`: the session era's `elicitationId`, which 2026-07-28 dropped).
pub(crate) fn url_elicitation_required(
    server: &str,
    link: &str,
    message: &str,
    with_id: bool,
) -> ErrorData {
    let mut elicitation = json!({
        "mode": "url",
        "message": format!("Connect your account on {server}: {message}"),
        "url": link,
    });
    if with_id {
        // Unique per link: the link's own mac ends it.
        let id: String = link.chars().rev().take(16).collect();
        elicitation["elicitationId"] = json!(format!("mcplex-connect-{id}"));
    }
    ErrorData::new(
        ErrorCode(URL_ELICITATION_REQUIRED),
        format!("{server} needs your own account: open the URL to connect it, then call again"),
        Some(json!({"elicitations": [elicitation]})),
    )
}

/// A failed call as the caller sees it: a tool result the model can act on (`Ok`), or a
/// JSON-RPC error (`Err`).
pub(crate) fn to_wire(error: DispatchError) -> Result<serde_json::Value, ErrorData> {
    Err(match error {
        DispatchError::InvalidArguments {
            name,
            problems,
            input_schema,
        } => {
            return Ok(crate::results::invalid_arguments(
                &name,
                &problems.to_string(),
                input_schema,
            ));
        }
        DispatchError::Unavailable { name, reason } => ErrorData::invalid_params(
            format!("tool {name} is unavailable: {reason}"),
            Some(json!({"tool": name, "reason": reason})),
        ),
        DispatchError::UnknownTool { name } => {
            ErrorData::invalid_params(format!("unknown tool: {name}"), Some(json!({"tool": name})))
        }
        DispatchError::Limited(limited) => ErrorData::new(
            ErrorCode(RATE_LIMITED),
            limited.to_string(),
            Some(json!({
                "caller": &*limited.caller,
                "limit": limited.kind.as_str(),
                "class": limited.class.as_str(),
                "allowed": limited.allowed,
                "retry_after_seconds": limited.retry_after.as_secs().max(1),
            })),
        ),
        DispatchError::Upstream(UpstreamError::NotConnected {
            server,
            caller,
            link,
        }) => {
            let message = UpstreamError::NotConnected {
                server: server.clone(),
                caller: caller.clone(),
                link: link.clone(),
            }
            .to_string();
            return Ok(crate::results::not_connected(
                &server,
                &caller,
                link.as_deref(),
                &message,
            ));
        }
        DispatchError::Upstream(upstream) => {
            let message = upstream.to_string();
            let server = upstream.server().to_owned();
            match upstream {
                // The upstream's own error: its code and message reach the client.
                UpstreamError::Rpc { code, data, .. } => {
                    let code = i32::try_from(code).unwrap_or(ErrorCode::INTERNAL_ERROR.0);
                    ErrorData::new(
                        ErrorCode(code),
                        message,
                        Some(json!({"server": server, "upstream_data": data})),
                    )
                }
                UpstreamError::Timeout { after, .. } => ErrorData::new(
                    ErrorCode(REQUEST_TIMEOUT),
                    message,
                    Some(json!({"server": server, "timeout_ms": after.as_millis()})),
                ),
                UpstreamError::Cancelled { .. } => ErrorData::new(
                    ErrorCode(REQUEST_TIMEOUT),
                    message,
                    Some(json!({"server": server})),
                ),
                UpstreamError::Closed { .. }
                | UpstreamError::Unavailable { .. }
                | UpstreamError::NotRunning { .. }
                | UpstreamError::Transport { .. }
                | UpstreamError::ListingTooLarge { .. }
                | UpstreamError::NotConnected { .. } => ErrorData::new(
                    ErrorCode(UPSTREAM_UNAVAILABLE),
                    message,
                    Some(json!({"server": server})),
                ),
            }
        }
    })
}
