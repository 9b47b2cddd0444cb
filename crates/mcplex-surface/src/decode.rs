//! A POSTed body read once into the message it is. A plain `tools/call` (exactly the four
//! members clients send, no `_meta`) is read straight into its id and params ([`PlainCall`]);
//! anything else is read as JSON and then into rmcp's model ([`message`]), which also tells
//! invalid params of a method of the MCP schema (-32602) from a message no MCP client sends
//! (-32600).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// Methods of the MCP schema a client may call; one of them that rmcp's model reads as a custom
/// request had params of the wrong shape.
const SCHEMA_METHODS: &[&str] = &[
    "ping",
    "initialize",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
];

/// `method` if the MCP schema has it, else `_OTHER` (as OpenTelemetry's conventions name a method
/// outside the known set): what a span may be named after, whatever a client sends.
pub(crate) fn schema_method_or_other(method: &str) -> &str {
    if SCHEMA_METHODS.contains(&method) {
        method
    } else {
        "_OTHER"
    }
}

/// Reads a body that is JSON into the client message it is, or the refusal: invalid params
/// (-32602, HTTP 200) for a method of the MCP schema whose params do not have its shape,
/// invalid request (-32600, HTTP 400) for anything else no MCP client sends.
// A refusal is the response to send as it is, once per request (as in `wire.rs`).
#[allow(clippy::result_large_err)]
pub(crate) fn message(message: &Value) -> Result<ClientJsonRpcMessage, Response> {
    let parsed = ClientJsonRpcMessage::deserialize(message);
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let schema_method = method.filter(|m| SCHEMA_METHODS.contains(m) && !id.is_null());
    // The MCP schema's params are by name; positional ones would be read into its fields in order.
    if let Some(method) = schema_method
        && message.get("params").is_some_and(Value::is_array)
    {
        return Err(invalid_params(method, id));
    }
    match (parsed, schema_method) {
        (Ok(JsonRpcMessage::Request(request)), Some(method))
            if matches!(request.request, ClientRequest::CustomRequest(_)) =>
        {
            Err(invalid_params(method, id))
        }
        (Ok(parsed), _) => Ok(parsed),
        (Err(_), Some(method)) => Err(invalid_params(method, id)),
        (Err(e), None) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            &format!("Invalid request: not a JSON-RPC message an MCP client sends ({e})"),
        )),
    }
}

fn invalid_params(method: &str, id: Value) -> Response {
    rpc_error(
        StatusCode::OK,
        id,
        -32602,
        &format!(
            "Invalid params: the params of {method} do not have the shape the MCP schema gives"
        ),
    )
}

/// A JSON-RPC error answered outside any stream.
pub(crate) fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    (
        status,
        axum::Json(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        ),
    )
        .into_response()
}

/// A plain `tools/call` taken apart: its id and params as rmcp's model has them.
pub(crate) struct PlainCall {
    pub id: RequestId,
    pub params: CallToolRequestParams,
}

impl PlainCall {
    /// Reads a request body that is a plain `tools/call` straight into its parts, without
    /// building the message as a JSON value first. `None` for anything else, including a plain
    /// call written in a way this reading does not take (duplicate members, a float id, an
    /// escape in `method`): [`message`] then reads it.
    pub(crate) fn read(body: &[u8]) -> Option<PlainCall> {
        let PlainWire { id, params, .. } = serde_json::from_slice(body).ok()?;
        let mut params_out = CallToolRequestParams::new(params.name);
        params_out.arguments = params.arguments;
        Some(PlainCall {
            id: id.0,
            params: params_out,
        })
    }
}

/// A plain `tools/call` on the wire: exactly these four members.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainWire {
    #[serde(rename = "jsonrpc")]
    _version: Exactly<Version2>,
    id: PlainId,
    #[serde(rename = "method")]
    _method: Exactly<ToolsCall>,
    params: PlainParams,
}

/// `name` and, if present, `arguments` (an object: `null` is not plain).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainParams {
    name: String,
    #[serde(default, deserialize_with = "some_object")]
    arguments: Option<rmcp::model::JsonObject>,
}

fn some_object<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<rmcp::model::JsonObject>, D::Error> {
    rmcp::model::JsonObject::deserialize(deserializer).map(Some)
}

/// A string or an integer that fits `i64`.
struct PlainId(RequestId);

impl<'de> Deserialize<'de> for PlainId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<PlainId, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = PlainId;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an integer id")
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<PlainId, E> {
                Ok(PlainId(RequestId::Number(n)))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<PlainId, E> {
                i64::try_from(n)
                    .map(|n| PlainId(RequestId::Number(n)))
                    .map_err(|_| E::custom("id out of range"))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<PlainId, E> {
                Ok(PlainId(RequestId::String(s.into())))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A string member that must hold exactly `T::TEXT`.
struct Exactly<T>(std::marker::PhantomData<T>);

trait Text {
    const TEXT: &'static str;
}

struct Version2;
impl Text for Version2 {
    const TEXT: &'static str = "2.0";
}

struct ToolsCall;
impl Text for ToolsCall {
    const TEXT: &'static str = "tools/call";
}

impl<'de, T: Text> Deserialize<'de> for Exactly<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Exactly<T>, D::Error> {
        // Borrowed: a text with escapes is refused, and the general path reads it.
        let text = <&'de str>::deserialize(deserializer)?;
        if text == T::TEXT {
            Ok(Exactly(std::marker::PhantomData))
        } else {
            Err(serde::de::Error::custom(format!("not {:?}", T::TEXT)))
        }
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
