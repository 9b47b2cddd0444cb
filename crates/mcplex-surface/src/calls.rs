//! The surface side of a tool call, shared by every surface: forward progress to the caller,
//! tie cancellation to the request, call `Gateway::call`, and shape the result for the caller's
//! protocol era.

use crate::Caller;
use mcplex_dispatch::{CallContext, DispatchError, Gateway, ToolCall};
use mcplex_protocol::{CLIENT_CAPABILITIES_META, ProtocolEra};
use mcplex_upstream::{RawResult, UpstreamError};
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, JsonObject, ProgressNotificationParam};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use serde_json::value::RawValue;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::dispatch::Untouched;
use crate::errors::{to_wire, url_elicitation_required};
use crate::relay::PeerRelay;
use crate::typed::call_response;

/// What a call of a name no tool has gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnUnknown {
    /// The JSON-RPC error every unknown name gets.
    Refuse,
    /// A tool result naming the closest reachable tools (`call_tool`'s answer).
    SuggestClosest,
}

/// Calls `name` through the one dispatch path on behalf of the request in `context`.
pub(crate) async fn call(
    gateway: &Gateway,
    name: String,
    arguments: Option<JsonObject>,
    context: &RequestContext<RoleServer>,
    caller: Caller,
    on_unknown: OnUnknown,
) -> Result<CallToolResponse, ErrorData> {
    let suggestions_scope = (on_unknown == OnUnknown::SuggestClosest).then(|| caller.scope.clone());
    let (progress, forwarded) = progress_forwarder(context).unzip();
    let relay = PeerRelay::for_request(context);
    let cx = CallContext {
        scope: caller.scope,
        token: caller.token,
        credential: caller.credential,
        cancel: context.ct.clone(),
        progress,
        relay: Some(relay.clone()),
    };
    let session_era = !stateless_caller(context);
    let read = move |result: RawResult| read_result(result, session_era);
    let outcome = gateway
        .call_reading(ToolCall { name, arguments }, cx, read)
        .await;
    // Progress and log messages the upstream sent before its answer reach the caller before the
    // answer does: once the call is over every sender is gone, so the forwarders drain and end.
    if let Some(forwarded) = forwarded {
        let _ = tokio::time::timeout(PROGRESS_DRAIN, forwarded).await;
    }
    relay.flush().await;
    let raw = match outcome {
        Ok(Reading::Typed { result, text }) => return Ok(as_written(result, text, context)),
        Ok(Reading::Value(value)) => value,
        Err(DispatchError::UnknownTool { name }) => match suggestions_scope {
            Some(scope) => {
                let snapshot = gateway.snapshot();
                crate::search_tools::unknown_name(gateway, &snapshot, &name, &scope).await
            }
            None => to_wire(DispatchError::UnknownTool { name })?,
        },
        Err(DispatchError::Upstream(UpstreamError::NotConnected {
            server,
            caller,
            link: Some(link),
        })) if declares_url_elicitation(context) => {
            let message = format!("{caller} has not connected its own account to {server}");
            return Err(url_elicitation_required(
                &server,
                &link,
                &message,
                !stateless_caller(context),
            ));
        }
        Err(error) => to_wire(error)?,
    };
    finish(raw, context)
}

/// Whether the client of `context` takes URL elicitations: declared in its handshake (the
/// session era) or in the request's `_meta` (2026-07-28).
fn declares_url_elicitation(context: &RequestContext<RoleServer>) -> bool {
    if stateless_caller(context) {
        return context
            .meta
            .0
            .get(CLIENT_CAPABILITIES_META)
            .and_then(|capabilities| capabilities.get("elicitation"))
            .and_then(|elicitation| elicitation.get("url"))
            .is_some();
    }
    context
        .peer
        .peer_info()
        .and_then(|info| info.capabilities.elicitation.as_ref()?.url.clone())
        .is_some()
}

/// A tool result as rmcp's response. 2026-07-28 results state their type, which an older
/// upstream's result (or one the gateway wrote) does not.
pub(crate) fn finish(
    mut raw: Value,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    mark_complete(&mut raw, context);
    call_response(raw)
}

/// A tool result as the surface answers it, read inside the gateway's call: a result the
/// gateway cannot read fails the call there, and is counted and audited as the failure the
/// caller sees.
enum Reading {
    /// A session-era caller's stdio result: rmcp's typed reading of it, and its text as written.
    Typed {
        result: CallToolResult,
        text: Box<RawValue>,
    },
    /// Any other result (a text rmcp's types do not read included), as a JSON value.
    Value(Value),
}

fn read_result(result: RawResult, session_era: bool) -> Result<Reading, UpstreamError> {
    match result {
        RawResult::Text { text, server } if session_era => {
            match serde_json::from_str::<CallToolResult>(text.get()) {
                Ok(result) => Ok(Reading::Typed { result, text }),
                Err(_) => RawResult::Text { text, server }
                    .into_value()
                    .map(Reading::Value),
            }
        }
        other => other.into_value().map(Reading::Value),
    }
}

/// A session-era caller's result, read by rmcp's types: the typed response, and the text itself
/// for the route's answer (through [`Untouched`]) when the response says the same: a complete tool
/// result whose structured content, if any, is an object (rmcp strips anything else for such a
/// caller).
fn as_written(
    result: CallToolResult,
    text: Box<RawValue>,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    if rmcp_writes_it_as_is(&result)
        && written_as_rmcp_writes(&result, text.get())
        && fits_one_event_line(text.get())
        && let Some(untouched) = context.extensions.get::<Untouched>()
    {
        untouched.offer(text);
    }
    result.into()
}

/// Whether rmcp answers a session-era caller with `result` as it is: it strips `resultType` and
/// structured content that is not an object for such a caller.
fn rmcp_writes_it_as_is(result: &CallToolResult) -> bool {
    result.result_type.is_none()
        && result
            .structured_content
            .as_ref()
            .is_none_or(Value::is_object)
}

/// Whether rmcp would write the members `text` (read as `result`) has as they are: `content` is
/// there (rmcp writes `[]` where it is missing) and nothing is `null` (rmcp leaves out a `null`
/// it reads as absent, here or in a content block). A `null` inside a string also counts: such a
/// result just takes rmcp's serialization.
fn written_as_rmcp_writes(result: &CallToolResult, text: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Members {
        content: Option<serde::de::IgnoredAny>,
    }
    // A block read means `content` was there; only an empty one needs the text read again.
    !text.contains("null")
        && (!result.content.is_empty()
            || serde_json::from_str::<Members>(text).is_ok_and(|members| members.content.is_some()))
}

/// Whether `text` can be the `data:` line of an SSE event as it is (a slow answer is one): JSON
/// may put carriage returns and line feeds between tokens, and either would end the line.
fn fits_one_event_line(text: &str) -> bool {
    !text.contains(['\r', '\n'])
}

/// Whether the request in `context` came from a 2026-07-28 (stateless) client.
pub(crate) fn stateless_caller(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| ProtocolEra::of(v.as_str()).is_stateless())
}

/// A 2026-07-28 result states its type; one from an older upstream (or written by the gateway)
/// does not, so it is marked `complete` for such a caller.
pub(crate) fn mark_complete(raw: &mut Value, context: &RequestContext<RoleServer>) {
    if stateless_caller(context)
        && let Some(result) = raw.as_object_mut()
    {
        result
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
    }
}

/// How long a finished call waits for its last progress notifications to go out.
const PROGRESS_DRAIN: Duration = Duration::from_secs(2);

/// When the caller asked for progress, a sink whose updates are re-addressed to the caller's
/// own progress token and sent to it, and the task that sends them.
fn progress_forwarder(
    context: &RequestContext<RoleServer>,
) -> Option<(mpsc::UnboundedSender<Value>, JoinHandle<()>)> {
    let token = context.meta.get_progress_token()?;
    let (sender, mut updates) = mpsc::unbounded_channel::<Value>();
    let peer = context.peer.clone();
    let task = tokio::spawn(async move {
        while let Some(mut update) = updates.recv().await {
            update["progressToken"] = serde_json::to_value(&token).unwrap_or(Value::Null);
            match serde_json::from_value::<ProgressNotificationParam>(update) {
                Ok(param) => {
                    if peer.notify_progress(param).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    tracing::debug!("dropped a malformed upstream progress notification: {e}")
                }
            }
        }
    });
    Some((sender, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_result_rmcp_would_write_unchanged_goes_out_as_written() {
        let verdict = |json: &str| {
            rmcp_writes_it_as_is(&serde_json::from_str::<CallToolResult>(json).expect("result"))
        };
        assert!(verdict(
            r#"{"content":[{"type":"text","text":"x"}],"isError":false}"#
        ));
        assert!(verdict(
            r#"{"content":[],"structuredContent":{"a":1},"x-vendor":2}"#
        ));
        assert!(!verdict(r#"{"resultType":"complete","content":[]}"#));
        assert!(!verdict(r#"{"content":[],"structuredContent":[1,2]}"#));
        assert!(!verdict(r#"{"content":[],"structuredContent":null}"#));
    }

    #[test]
    fn a_text_rmcp_would_write_otherwise_is_not_sent_as_written() {
        // As `as_written` asks: a text rmcp cannot read is never sent as written.
        let written_as_rmcp_writes = |text: &str| {
            serde_json::from_str::<CallToolResult>(text)
                .is_ok_and(|result| super::written_as_rmcp_writes(&result, text))
        };
        assert!(written_as_rmcp_writes(
            r#"{"content":[],"isError":true,"x-vendor":1}"#
        ));
        assert!(written_as_rmcp_writes(
            r#"{"x-vendor":1,"content":[{"type":"text","text":"x"}]}"#
        ));
        let normalised = [
            r#"{"isError":true}"#,
            r#"{"structuredContent":{"a":1}}"#,
            r#"{"content":null,"isError":true}"#,
            r#"{"content":[],"isError":null}"#,
            r#"{"content":[],"_meta":null}"#,
            r#"{"content":[{"type":"text","text":"x","annotations":null}]}"#,
        ];
        for text in normalised {
            assert!(!written_as_rmcp_writes(text), "{text}");
        }
    }

    #[test]
    fn a_text_with_a_line_break_between_its_tokens_is_not_sent_as_written() {
        assert!(fits_one_event_line(
            r#"{"content":[{"type":"text","text":"a\r\nb"}]}"#
        ));
        assert!(!fits_one_event_line("{\"content\":[],\r\"isError\":false}"));
        assert!(!fits_one_event_line("{\"content\":\n[]}"));
    }
}
