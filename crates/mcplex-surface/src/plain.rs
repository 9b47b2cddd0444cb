//! What makes a POST a plain `tools/call`, the one request the fast path (`fast.rs`) answers
//! instead of rmcp's session worker: headers rmcp takes without further checks
//! ([`plain_headers`]) and a body of exactly the plain shape, read straight into rmcp's id and
//! params ([`PlainCall`]).

use axum::http::{HeaderMap, header};
use mcplex_protocol::ProtocolEra;
use rmcp::model::{CallToolRequestParams, ProtocolVersion, RequestId};
use serde::Deserialize;
use serde_json::Value;

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// Whether rmcp would take a session-era POST with these headers without further checks: a
/// Host it can read, an Accept of JSON and SSE without parameters, a JSON Content-Type, and no
/// protocol version header or one naming a known version before 2026-07-28 (from which on
/// requests are stateless and SEP-2243 headers are checked).
pub(crate) fn plain_headers(headers: &HeaderMap) -> bool {
    host_ok(headers) && accept_ok(headers) && content_type_ok(headers) && version_ok(headers)
}

fn host_ok(headers: &HeaderMap) -> bool {
    headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .is_some_and(|host| http::uri::Authority::try_from(host).is_ok())
}

/// Both media types, listed plainly (a parameter such as `q=0` is left to rmcp's reading).
fn accept_ok(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        for entry in value.split(',') {
            if entry.contains([';', '"']) {
                return false;
            }
            let essence = entry.trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

fn content_type_ok(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

fn version_ok(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(PROTOCOL_VERSION_HEADER).iter();
    match (values.next(), values.next()) {
        (None, _) => true,
        (Some(value), None) => value.to_str().is_ok_and(|version| {
            ProtocolEra::of(version) == ProtocolEra::Session
                && ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .any(|known| known.as_str() == version)
        }),
        (Some(_), Some(_)) => false,
    }
}

/// A plain `tools/call` taken apart: its id and params as rmcp's model has them.
pub(crate) struct PlainCall {
    pub id: RequestId,
    pub params: CallToolRequestParams,
}

impl PlainCall {
    /// Reads a request body that is a plain `tools/call` (the shape `front::plain_tool_call`
    /// accepts) straight into its parts, without building the message as a JSON value first.
    /// `None` for anything else, including a plain call written in a way this reading does not
    /// take (duplicate members, a float id): the general path then parses it.
    pub(crate) fn read(body: &[u8]) -> Option<PlainCall> {
        let PlainWire { id, params, .. } = serde_json::from_slice(body).ok()?;
        let mut params_out = CallToolRequestParams::new(params.name);
        params_out.arguments = params.arguments;
        Some(PlainCall {
            id: id.0,
            params: params_out,
        })
    }

    /// The id as the JSON value the client sent.
    pub(crate) fn id_value(&self) -> Value {
        match &self.id {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(s.as_ref()),
        }
    }

    /// `None` when rmcp's model does not take the message's id or params (then rmcp answers).
    /// Takes the message apart, so the arguments are moved, not copied.
    pub(crate) fn of(message: Value) -> Option<PlainCall> {
        let Value::Object(mut message) = message else {
            return None;
        };
        let id = RequestId::deserialize(message.remove("id")?).ok()?;
        let params = CallToolRequestParams::deserialize(message.remove("params")?).ok()?;
        Some(PlainCall { id, params })
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

/// A string or an integer that fits `i64`, as `front::plain_tool_call` takes ids.
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
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    const PLAIN: [(&str, &str); 4] = [
        ("host", "127.0.0.1:8080"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2025-06-18"),
    ];

    #[test]
    fn plain_headers_are_exactly_the_ones_rmcp_takes_without_further_checks() {
        assert!(plain_headers(&headers(&PLAIN)));
        assert!(plain_headers(&headers(&PLAIN[..3])), "no version header");
        let with = |name: &'static str, value: &'static str| {
            let mut pairs: Vec<_> = PLAIN.iter().filter(|(n, _)| *n != name).copied().collect();
            pairs.push((name, value));
            plain_headers(&headers(&pairs))
        };
        assert!(with("content-type", "application/json; charset=utf-8"));
        assert!(with("accept", "text/event-stream,application/json"));
        assert!(!with("accept", "application/json"), "no SSE");
        assert!(!with("accept", "application/json, text/event-stream;q=0"));
        assert!(!with("content-type", "text/plain"));
        assert!(!with("mcp-protocol-version", "2026-07-28"), "stateless era");
        assert!(
            !with("mcp-protocol-version", "2025-13-01"),
            "unknown version"
        );
        assert!(!with("host", "bad host"));
        let mut no_host: Vec<_> = PLAIN[1..].to_vec();
        no_host.push(("accept", "text/event-stream"));
        assert!(!plain_headers(&headers(&no_host)));
        let mut twice = PLAIN.to_vec();
        twice.push(("mcp-protocol-version", "2025-06-18"));
        assert!(!plain_headers(&headers(&twice)));
    }

    #[test]
    fn a_plain_call_is_read_into_the_parts_the_general_path_finds_and_nothing_else_is() {
        let read = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__b","arguments":{"x":[1,{"y":null}]}}}"#,
            r#"{"params":{"arguments":{},"name":"t"},"method":"tools/call","id":"s\"1","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"tools/call","params":{"name":"t"}}"#,
        ];
        // Not plain, or plain but left to the general path (a duplicate member, an escape).
        let not_read = [
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"t"}}"#,
        ];
        let cases = read.iter().map(|body| (*body, true));
        let cases = cases.chain(not_read.iter().map(|body| (*body, false)));
        for (body, read) in cases {
            let parsed = PlainCall::read(body.as_bytes());
            assert_eq!(parsed.is_some(), read, "{body}");
            let Some(parsed) = parsed else { continue };
            let message: Value = serde_json::from_str(body).expect("json");
            assert!(crate::front::plain_tool_call(&message), "{body}");
            assert_eq!(Some(&parsed.id_value()), message.get("id"), "{body}");
            let general = PlainCall::of(message).expect("general path");
            assert_eq!(
                (parsed.id, parsed.params),
                (general.id, general.params),
                "{body}"
            );
        }
    }
}
