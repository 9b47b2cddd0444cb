//! The surface side of a tool call, shared by every surface: forward progress to the caller,
//! tie cancellation to the request, call `Gateway::call`, and shape the result for the caller's
//! protocol era: the upstream's own bytes when they hold what the era needs ([`CallAnswer`]),
//! else a result built from their value.

use crate::Caller;
use mcplex_dispatch::{CallContext, DispatchError, Gateway, ToolCall};
use mcplex_protocol::{CLIENT_CAPABILITIES_META, ProtocolEra};
use mcplex_upstream::{MemberKind, RawResult, UpstreamError};
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

/// A tool call's answer: the upstream's result in its own bytes, or a result built from a value.
pub(crate) enum CallAnswer {
    /// The result as the upstream wrote it, which the caller's era takes as it is: it goes out
    /// in the JSON-RPC envelope without being read again.
    Written(Box<RawValue>),
    /// Boxed: rmcp's response is some 200 bytes, moved through the call's futures.
    Built(Box<CallToolResponse>),
}

impl CallAnswer {
    /// The answer as rmcp's `call_tool` returns it. On the route (`untouched` is there) a
    /// written result is left in `untouched` for the writer, and rmcp's handling of the request
    /// (its protocol checks, its shaping for the caller's era, which has nothing to change in
    /// such a result) runs on an empty stand-in that the writer drops. For stdio, whose
    /// transport (rmcp's) writes typed messages, a written result is read here, once.
    pub(crate) fn respond(
        self,
        untouched: Option<&Untouched>,
    ) -> Result<CallToolResponse, ErrorData> {
        match (self, untouched) {
            (CallAnswer::Built(response), _) => Ok(*response),
            (CallAnswer::Written(text), Some(untouched)) => {
                untouched.offer(text);
                Ok(CallToolResult::success(Vec::new()).into())
            }
            (CallAnswer::Written(text), None) => typed(text.get()),
        }
    }
}

/// A result as written, read into rmcp's response: a complete one (every session-era one taken
/// as written) straight into its type, another kind through a value.
fn typed(text: &str) -> Result<CallToolResponse, ErrorData> {
    if let Ok(result) = serde_json::from_str::<CallToolResult>(text)
        && result
            .result_type
            .as_ref()
            .is_none_or(|kind| kind.is_complete())
    {
        return Ok(result.into());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) => call_response(value),
        Err(e) => Err(ErrorData::internal_error(
            format!("the upstream's result is JSON the gateway cannot read as a value: {e}"),
            None,
        )),
    }
}

/// Calls `name` through the one dispatch path on behalf of the request in `context`.
pub(crate) async fn call(
    gateway: &Gateway,
    name: String,
    arguments: Option<JsonObject>,
    context: &RequestContext<RoleServer>,
    caller: Caller,
    on_unknown: OnUnknown,
) -> Result<CallAnswer, ErrorData> {
    let suggestions_scope = (on_unknown == OnUnknown::SuggestClosest).then(|| caller.scope.clone());
    let (progress, forwarded) = progress_forwarder(context).unzip();
    let relay = PeerRelay::for_request(context);
    let cx = CallContext {
        scope: caller.scope,
        token: caller.token,
        credential: caller.credential,
        cancel: context.ct.clone(),
        progress,
        relay: relay.clone(),
    };
    let stateless = stateless_caller(context);
    let read = move |result: RawResult| read_result(result, stateless);
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
        Ok(Reading::Written(text)) => return Ok(CallAnswer::Written(text)),
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

/// A tool result built from its value for the caller's era. 2026-07-28 results state their
/// type, which an older upstream's result (or one the gateway wrote) does not.
pub(crate) fn finish(
    mut raw: Value,
    context: &RequestContext<RoleServer>,
) -> Result<CallAnswer, ErrorData> {
    mark_complete(&mut raw, context);
    call_response(raw).map(|response| CallAnswer::Built(Box::new(response)))
}

/// A tool result as the surface answers it, read inside the gateway's call: a result the
/// gateway cannot read fails the call there, and is counted and audited as the failure the
/// caller sees.
enum Reading {
    /// A stdio upstream's result that the caller's era takes as written.
    Written(Box<RawValue>),
    /// Any other result, as a JSON value.
    Value(Value),
}

fn read_result(result: RawResult, stateless: bool) -> Result<Reading, UpstreamError> {
    let as_written = taken_as_written(&result, stateless);
    match result {
        RawResult::Text { text, .. } if as_written => Ok(Reading::Written(text)),
        other => other.into_value().map(Reading::Value),
    }
}

/// Whether a caller of its era (2026-07-28 when `stateless`) takes the tool result `text` as it
/// is: an object that holds what the era requires and nothing the era lacks. Every era needs a
/// `content` list; a 2026-07-28 result states its `resultType`; an older caller knows no
/// `resultType`, and no `structuredContent` but an object. A `null` anywhere (an optional
/// member written as `null`, which the SDKs' schemas refuse) also sends it the other way: any
/// such result is read as a value and built for the era ([`finish`]), which leaves such members
/// out. A `null` inside a string costs only that reading.
fn taken_as_written(result: &RawResult, stateless: bool) -> bool {
    let Some(text) = result.text() else {
        return false;
    };
    if text.get().contains("null") {
        return false;
    }
    // Read once for the whole call: the audit log's `isError` came from the same reading.
    let Some(members) = result.members() else {
        return false;
    };
    if members.content != MemberKind::List {
        return false;
    }
    if stateless {
        members.result_type == MemberKind::String
    } else {
        members.result_type == MemberKind::Absent
            && matches!(
                members.structured_content,
                MemberKind::Absent | MemberKind::Object
            )
    }
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

/// Progress updates waiting for a slow client; the upstream's further ones are dropped until it
/// catches up.
const PROGRESS_BACKLOG: usize = 64;

/// When the caller asked for progress, a sink whose updates are re-addressed to the caller's
/// own progress token and sent to it, and the task that sends them.
fn progress_forwarder(
    context: &RequestContext<RoleServer>,
) -> Option<(mpsc::Sender<Value>, JoinHandle<()>)> {
    let token = context.meta.get_progress_token()?;
    let (sender, mut updates) = mpsc::channel::<Value>(PROGRESS_BACKLOG);
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
    fn a_result_goes_out_as_written_only_where_its_era_needs_nothing_changed() {
        let kept = |text: &str| {
            RawResult::written(
                RawValue::from_string(text.to_owned()).expect("json"),
                "s".into(),
            )
        };
        let session = |text: &str| taken_as_written(&kept(text), false);
        let stateless = |text: &str| taken_as_written(&kept(text), true);
        for text in [
            r#"{"content":[{"type":"text","text":"x"}],"isError":false}"#,
            r#"{"x-vendor":2,"content":[],"structuredContent":{"a":1}}"#,
            "{\"content\":\r\n[]}",
        ] {
            assert!(session(text), "{text}");
            assert!(!stateless(text), "states no resultType: {text}");
        }
        for text in [
            r#"{"resultType":"complete","content":[]}"#,
            r#"{"content":[],"structuredContent":[1,2]}"#,
            r#"{"content":[],"structuredContent":null}"#,
            r#"{"isError":true}"#,
            r#"{"content":null}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"content":[],"isError":null}"#,
            r#"[[]]"#,
            r#"[[{"type":"text","text":"x"}]]"#,
        ] {
            assert!(!session(text), "{text}");
        }
        assert!(stateless(
            r#"{"resultType":"complete","content":[],"structuredContent":[1]}"#
        ));
        assert!(!stateless(r#"{"resultType":null,"content":[]}"#));
        assert!(!stateless(r#"[[],"complete"]"#));
        assert!(!stateless(
            r#"{"resultType":"input_required","inputRequests":{}}"#
        ));
    }

    #[test]
    fn a_written_result_is_read_for_a_typed_transport() {
        let written = |text: &str| {
            CallAnswer::Written(RawValue::from_string(text.to_owned()).expect("json")).respond(None)
        };
        let response = written(r#"{"content":[{"type":"text","text":"x"}],"x-vendor":1}"#);
        assert!(response.is_ok());
        assert!(
            written(r#"{"content":[],"n":1e400}"#).is_ok(),
            "a member the type does not have is skipped, whatever it holds"
        );
        let refused = written(r#"{"content":[],"structuredContent":{"n":1e400}}"#)
            .expect_err("no value holds it");
        assert!(
            refused.message.contains("cannot read as a value"),
            "{refused:?}"
        );
    }
}
