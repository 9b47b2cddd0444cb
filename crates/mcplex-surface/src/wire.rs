//! The checks rmcp's streamable HTTP service (3.11.0) makes on a request's headers and on a
//! POSTed message before it dispatches anything, as pure functions of our own: a readable
//! `Host`, the `Accept` and `Content-Type` media types, the `MCP-Protocol-Version` header and
//! how it must agree with an `initialize` body or a request's `_meta`, the SEP-2243 standard
//! headers (`Mcp-Method`, `Mcp-Name`), and which era (session or stateless) a message belongs to.
//!
//! Each refusal is the response rmcp gives for the same case, to the byte (status, content type,
//! body; the `wire_tests.rs` differential tests hold the two side by side), and the checks run
//! in rmcp's order. Owns nothing else: session ids, body limits and the shape of a message (it
//! parses as one an MCP client sends) are the caller's, before or after these.
//!
//! Not checked: `Mcp-Param-*` headers, which rmcp checks only against a tool schema
//! `ServerHandler::get_tool` returns, and no surface of ours returns one. Where rmcp compares
//! version text (`>= "2026-07-28"`) this asks [`ProtocolEra::of`]. The two differ only for a
//! version that is not a date, sent in both the header and `_meta` (which lets an unknown
//! version through): rmcp sorts such text as text, so `zzz` is stateless there and session
//! era here.

// A refusal is the response to send as it is, on a path taken once per request; boxing it would
// only move the cost to every caller.
#![allow(clippy::result_large_err)]

use axum::body::Body;
use axum::response::Response;
use base64::Engine;
use http::header::{ACCEPT, ALLOW, CONTENT_TYPE, HOST};
use http::{HeaderMap, StatusCode};
use mcplex_protocol::{ProtocolEra, STATELESS_VERSION};
use rmcp::model::{ErrorData, JsonRpcError, ProtocolVersion, RequestId, RequestMetaObject};
use rmcp::transport::common::http_header::{
    BASE64_HEADER_PREFIX, BASE64_HEADER_SUFFIX, EVENT_STREAM_MIME_TYPE, HEADER_MCP_METHOD,
    HEADER_MCP_NAME, HEADER_MCP_PROTOCOL_VERSION, JSON_MIME_TYPE,
};
use serde_json::Value;

/// Host readable (rmcp's parse_host_header even with allowed hosts disabled): 400 otherwise.
/// A request without `Host` may name its authority in the URI instead (HTTP/2).
pub(crate) fn host_readable(parts: &http::request::Parts) -> Result<(), Response> {
    let Some(host) = parts.headers.get(HOST) else {
        return match parts.uri.authority() {
            Some(_) => Ok(()),
            None => Err(host_refusal("Bad Request: missing Host header")),
        };
    };
    let Ok(host) = host.to_str() else {
        return Err(host_refusal("Bad Request: Invalid Host header encoding"));
    };
    match http::uri::Authority::try_from(host) {
        Ok(_) => Ok(()),
        Err(_) => Err(host_refusal("Bad Request: Invalid Host header")),
    }
}

/// POST: Accept lists both application/json and text/event-stream (q-aware; q=0 excludes) → else
/// 406; Content-Type essence application/json → else 415. rmcp's order.
pub(crate) fn post_media_types(headers: &HeaderMap) -> Result<(), Response> {
    let (mut json, mut sse) = (false, false);
    for essence in accepted_essences(headers) {
        json |= essence.eq_ignore_ascii_case(JSON_MIME_TYPE);
        sse |= essence.eq_ignore_ascii_case(EVENT_STREAM_MIME_TYPE);
    }
    if !(json && sse) {
        return Err(text(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ));
    }
    // The essence ends at the first `;`, quoted or not; only the first header counts.
    let content_is_json = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default();
            essence.trim().eq_ignore_ascii_case(JSON_MIME_TYPE)
        });
    if !content_is_json {
        return Err(text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: Content-Type must be application/json",
        ));
    }
    Ok(())
}

/// GET: Accept must allow text/event-stream → else 406.
pub(crate) fn get_media_types(headers: &HeaderMap) -> Result<(), Response> {
    if accepted_essences(headers)
        .any(|essence| essence.eq_ignore_ascii_case(EVENT_STREAM_MIME_TYPE))
    {
        return Ok(());
    }
    Err(text(
        StatusCode::NOT_ACCEPTABLE,
        "Not Acceptable: Client must accept text/event-stream",
    ))
}

/// What a POSTed JSON-RPC message is, once checked (the era decides which path serves it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Classified {
    pub era: ProtocolEra,
    /// The version the message names: an `initialize`'s `params.protocolVersion`; else a
    /// request's `_meta` protocol version; else the `MCP-Protocol-Version` header; else none
    /// (which rmcp reads as 2025-03-26).
    pub version: Option<ProtocolVersion>,
}

/// Every check rmcp makes on a POSTed message before dispatching it, in rmcp's order, for both
/// eras: the version header (unknown → 400, unless the request carries its own version in
/// `_meta`), an `initialize`'s header against its body (-32600), the header against `_meta`
/// (-32020, or -32602 when a stateless request lacks the `_meta` keys), the SEP-2243 headers
/// when the header names a stateless-era version (-32020), and a stateless answer (-32600).
/// `message` is the body already parsed as JSON (an object that is a request, notification or
/// response). Session id handling is not here.
pub(crate) fn classify_post(headers: &HeaderMap, message: &Value) -> Result<Classified, Response> {
    let message = Message::of(message);
    let header = version_header(headers)?;
    let meta = message.request_meta();
    let meta_version = meta.as_ref().and_then(RequestMetaObject::protocol_version);
    if let Some(header) = header
        && meta_version.is_none()
        && !is_known(header)
    {
        return Err(unsupported_version(header));
    }
    if message.is_initialize() {
        let asked = message.init_version();
        if let Some(header) = header
            && header != asked
        {
            return Err(rpc_refusal(
                message.id(),
                ErrorData::invalid_request(
                    format!(
                        "Invalid Request: MCP-Protocol-Version header ({header}) does not match initialize params.protocolVersion ({asked})"
                    ),
                    None,
                ),
            ));
        }
    } else if message.kind == Kind::Request {
        meta_agrees(&message, header, meta.as_ref(), meta_version.as_ref())?;
    }
    let era = if message.is_initialize() {
        ProtocolEra::Session
    } else if message.is_discover() {
        // rmcp serves a discover without a session whatever version it names.
        ProtocolEra::Stateless
    } else {
        let named = meta_version
            .as_ref()
            .map(ProtocolVersion::as_str)
            .or(header);
        named.map_or(ProtocolEra::Session, ProtocolEra::of)
    };
    standard_headers(headers, header, &message)?;
    if era.is_stateless() && message.kind == Kind::Answer {
        return Err(rpc_refusal(
            None,
            ErrorData::invalid_request("stateless server does not accept JSON-RPC responses", None),
        ));
    }
    let version = if message.is_initialize() {
        Some(version_of(message.init_version()))
    } else {
        meta_version.or_else(|| header.map(version_of))
    };
    Ok(Classified { era, version })
}

/// Whether a message with these headers and no `_meta` of its own is a session-era one that
/// [`classify_post`] cannot refuse: no version header, or a known version before the stateless
/// revision. A plain `tools/call` with such headers skips the checks.
pub(crate) fn plain_session_headers(headers: &HeaderMap) -> bool {
    match version_header(headers) {
        Ok(None) => true,
        Ok(Some(version)) => is_known(version) && !ProtocolEra::of(version).is_stateless(),
        Err(_) => false,
    }
}

/// GET and DELETE: 405 with `Allow: POST` when the MCP-Protocol-Version header is a
/// stateless-era version; 400 for an unknown version; Ok otherwise.
pub(crate) fn get_or_delete_version(headers: &HeaderMap) -> Result<(), Response> {
    let Some(header) = version_header(headers)? else {
        return Ok(());
    };
    if !is_known(header) {
        return Err(unsupported_version(header));
    }
    if ProtocolEra::of(header).is_stateless() {
        let mut refusal = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        refusal
            .headers_mut()
            .insert(ALLOW, http::HeaderValue::from_static("POST"));
        return Err(refusal);
    }
    Ok(())
}

/// What kind of JSON-RPC message an object is, by its keys (as rmcp tells them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Notification,
    /// A response or an error.
    Answer,
}

/// The parts of a POSTed message the checks read.
struct Message<'a> {
    kind: Kind,
    method: &'a str,
    raw: &'a Value,
}

impl<'a> Message<'a> {
    fn of(raw: &'a Value) -> Message<'a> {
        let method = raw.get("method").and_then(Value::as_str);
        let kind = match (method, raw.get("id")) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, _) => Kind::Answer,
        };
        Message {
            kind,
            method: method.unwrap_or_default(),
            raw,
        }
    }

    fn is_initialize(&self) -> bool {
        self.kind == Kind::Request && self.method == "initialize"
    }

    fn is_discover(&self) -> bool {
        self.kind == Kind::Request && self.method == "server/discover"
    }

    fn params(&self) -> Option<&'a Value> {
        self.raw.get("params")
    }

    /// A request's id as rmcp reads it (`None` for anything else).
    fn id(&self) -> Option<RequestId> {
        if self.kind != Kind::Request {
            return None;
        }
        serde_json::from_value(self.raw.get("id")?.clone()).ok()
    }

    /// A request's `params._meta`, as the typed map rmcp reads its keys from.
    fn request_meta(&self) -> Option<RequestMetaObject> {
        if self.kind != Kind::Request {
            return None;
        }
        let meta = self.params()?.get("_meta")?.as_object()?;
        Some(RequestMetaObject::from(meta.clone()))
    }

    fn init_version(&self) -> &'a str {
        self.params()
            .and_then(|params| params.get("protocolVersion"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// The `MCP-Protocol-Version` header (its first value), if any; 400 when it is not text.
fn version_header(headers: &HeaderMap) -> Result<Option<&str>, Response> {
    match headers.get(HEADER_MCP_PROTOCOL_VERSION) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| {
            text(
                StatusCode::BAD_REQUEST,
                "Bad Request: Invalid MCP-Protocol-Version header encoding",
            )
        }),
    }
}

fn is_known(version: &str) -> bool {
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .any(|known| known.as_str() == version)
}

/// The stateless revision, as rmcp's model names it.
pub(crate) fn stateless_version() -> ProtocolVersion {
    version_of(STATELESS_VERSION)
}

fn version_of(version: &str) -> ProtocolVersion {
    serde_json::from_value(Value::String(version.to_owned())).unwrap_or_default()
}

fn unsupported_version(version: &str) -> Response {
    text(
        StatusCode::BAD_REQUEST,
        &format!("Bad Request: Unsupported MCP-Protocol-Version: {version}"),
    )
}

/// A request's `_meta` version against the header: a `_meta` version needs the same header
/// (-32020); without one, a discover or a stateless-era header needs the stateless `_meta` keys
/// (-32602 naming the missing ones).
fn meta_agrees(
    message: &Message<'_>,
    header: Option<&str>,
    meta: Option<&RequestMetaObject>,
    meta_version: Option<&ProtocolVersion>,
) -> Result<(), Response> {
    let Some(meta_version) = meta_version else {
        if message.is_discover() || header.is_some_and(|h| ProtocolEra::of(h).is_stateless()) {
            let stateless = version_of(STATELESS_VERSION);
            let missing = meta
                .map(|meta| meta.missing_required_keys(&stateless))
                .unwrap_or_else(|| RequestMetaObject::new().missing_required_keys(&stateless));
            return Err(rpc_refusal(
                message.id(),
                ErrorData::invalid_params(
                    format!(
                        "Invalid params: request _meta is missing or has malformed required fields: {}",
                        missing.join(", ")
                    ),
                    None,
                ),
            ));
        }
        return Ok(());
    };
    let reason = match header {
        None => "request _meta protocolVersion requires MCP-Protocol-Version header".to_owned(),
        Some(header) if header != meta_version.as_str() => format!(
            "MCP-Protocol-Version header ({header}) does not match request _meta protocolVersion ({meta_version})"
        ),
        Some(_) => return Ok(()),
    };
    Err(rpc_refusal(
        message.id(),
        ErrorData::header_mismatch(reason, None),
    ))
}

/// SEP-2243: when the header names a stateless-era version, `Mcp-Method` must be there once and
/// name the body's method, and `Mcp-Name` the body's name, uri or task id (maybe
/// `=?base64?…?=`-wrapped). An `initialize` need not send `Mcp-Method`, but one it sends must be
/// exactly one `initialize`. Answers are not checked.
fn standard_headers(
    headers: &HeaderMap,
    header: Option<&str>,
    message: &Message<'_>,
) -> Result<(), Response> {
    if !header.is_some_and(|h| ProtocolEra::of(h).is_stateless()) || message.kind == Kind::Answer {
        return Ok(());
    }
    let reason = if message.is_initialize() {
        initialize_method(headers)
    } else {
        method_and_name(headers, message)
    };
    match reason {
        Ok(()) => Ok(()),
        Err(Mismatch(reason)) => Err(rpc_refusal(
            message.id(),
            ErrorData::header_mismatch(reason, None),
        )),
    }
}

/// Why the SEP-2243 headers do not agree with the body: the text of the -32020 refusal.
struct Mismatch(String);

fn initialize_method(headers: &HeaderMap) -> Result<(), Mismatch> {
    let mut values = headers.get_all(HEADER_MCP_METHOD).iter();
    let Some(first) = values.next() else {
        return Ok(());
    };
    if values.next().is_some() {
        return Err(Mismatch(
            "multiple Mcp-Method header values supplied; initialize requires exactly one"
                .to_owned(),
        ));
    }
    if first.as_bytes() != b"initialize" {
        return Err(Mismatch(format!(
            "Mcp-Method header `{}` does not match body method `initialize`",
            String::from_utf8_lossy(first.as_bytes())
        )));
    }
    Ok(())
}

fn method_and_name(headers: &HeaderMap, message: &Message<'_>) -> Result<(), Mismatch> {
    let method = message.method;
    match single_header(headers, HEADER_MCP_METHOD)? {
        None => return Err(Mismatch("missing required Mcp-Method header".to_owned())),
        Some(sent) if sent != method => {
            return Err(Mismatch(format!(
                "Mcp-Method header `{sent}` does not match body method `{method}`"
            )));
        }
        Some(_) => {}
    }
    let Some(expected) = name_of(method, message.params()) else {
        return Ok(());
    };
    let Some(sent) = single_header(headers, HEADER_MCP_NAME)? else {
        return Err(Mismatch(format!(
            "missing required Mcp-Name header for `{method}`"
        )));
    };
    let decoded = unwrap_base64(sent)
        .ok_or_else(|| Mismatch("Mcp-Name header is not valid Base64".to_owned()))?;
    if decoded != expected {
        return Err(Mismatch(format!(
            "Mcp-Name header `{decoded}` does not match body value `{expected}`"
        )));
    }
    Ok(())
}

/// The one value of header `name` as text, if sent; two values, or one that is not text, are
/// refused.
fn single_header<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, Mismatch> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Mismatch(format!("duplicate {name} header")));
    }
    match value.to_str() {
        Ok(value) => Ok(Some(value)),
        Err(_) => Err(Mismatch(format!(
            "{name} header contains invalid characters"
        ))),
    }
}

/// The body value `Mcp-Name` must carry for `method`, if it names one (and it is text).
fn name_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params?.get(key)?.as_str()
}

/// A header value as sent, or the text inside `=?base64?…?=` (standard alphabet, padded);
/// `None` when that is not Base64 of UTF-8.
fn unwrap_base64(sent: &str) -> Option<String> {
    let Some(inner) = sent
        .strip_prefix(BASE64_HEADER_PREFIX)
        .and_then(|rest| rest.strip_suffix(BASE64_HEADER_SUFFIX))
    else {
        return Some(sent.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(inner)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// The media-type essences `Accept` admits, across all its headers, in order: a range whose `q`
/// is an explicit zero is left out; a malformed `q` does not exclude it.
fn accepted_essences(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| outside_quotes(value, ','))
        .filter_map(|range| {
            let mut pieces = outside_quotes(range, ';');
            let essence = pieces.next()?.trim();
            let admitted = pieces.all(|parameter| match parameter.split_once('=') {
                Some((name, weight)) if name.trim().eq_ignore_ascii_case("q") => {
                    weight_admits(weight.trim())
                }
                _ => true,
            });
            admitted.then_some(essence)
        })
}

/// `text` split at `delimiter` where it is not inside a quoted string (in which `\` escapes the
/// next character).
fn outside_quotes(text: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let (mut quoted, mut escaping) = (false, false);
    text.split(move |c: char| {
        let cut = !quoted && !escaping && c == delimiter;
        if escaping {
            escaping = false;
        } else if quoted && c == '\\' {
            escaping = true;
        } else if c == '"' {
            quoted = !quoted;
        }
        cut
    })
}

/// Whether a `q` weight admits its range: only a well-formed zero (`0`, `0.`, `0.0`…, up to
/// three decimals) excludes it; anything RFC 9110 does not allow is ignored.
fn weight_admits(weight: &str) -> bool {
    let (whole, decimals) = weight.split_once('.').unwrap_or((weight, ""));
    let well_formed = decimals.len() <= 3 && decimals.bytes().all(|b| b.is_ascii_digit());
    !well_formed || whole != "0" || decimals.bytes().any(|b| b != b'0')
}

/// A refusal with a text body and no content type, as rmcp answers the media-type and version
/// checks.
fn text(status: StatusCode, body: &str) -> Response {
    let mut response = Response::new(Body::from(body.to_owned()));
    *response.status_mut() = status;
    response
}

/// The Host refusal, the one text answer rmcp labels `text/plain; charset=utf-8`.
fn host_refusal(body: &str) -> Response {
    let mut response = text(StatusCode::BAD_REQUEST, body);
    response.headers_mut().insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A 400 with a JSON-RPC error body, serialized by rmcp's own model as rmcp does.
fn rpc_refusal(id: Option<RequestId>, error: ErrorData) -> Response {
    let body = serde_json::to_vec(&JsonRpcError::new(id, error)).unwrap_or_default();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, http::HeaderValue::from_static(JSON_MIME_TYPE));
    response
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
