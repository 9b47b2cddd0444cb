//! Requests the tests make of a running gateway: raw JSON-RPC on a route (either era, with an
//! optional bearer), a tool call, a listing's names, and the rug pull the trust tests stage.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, eventually, http_send};

/// Tool names of a `list` scenario answer.
pub fn names(listing: &Value) -> Vec<String> {
    listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

pub const MODES: [&str; 2] = ["legacy", "2026-07-28"];

/// A raw 2026-07-28 request on `path` with an optional bearer: (status, the JSON-RPC answer as
/// the wire carried it).
pub fn rpc(
    gateway: &Gateway,
    path: &str,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, String) {
    rpc_with(gateway, path, token, method, params, &[])
}

pub fn rpc_with(
    gateway: &Gateway,
    path: &str,
    token: Option<&str>,
    method: &str,
    mut params: Value,
    extra: &[(&str, &str)],
) -> (u16, String) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let auth = token.map(|t| format!("Bearer {t}"));
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if method == "tools/call" {
        headers.push(("Mcp-Name", &name));
    }
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth));
    }
    headers.extend_from_slice(extra);
    let (status, answer) = http_send(gateway.authority(), "POST", path, &headers, &body);
    let data = answer
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .map(str::to_owned)
        .unwrap_or(answer);
    (status, data)
}

pub fn call_raw(
    gateway: &Gateway,
    path: &str,
    token: Option<&str>,
    name: &str,
    arguments: Value,
) -> String {
    let (status, answer) = rpc(
        gateway,
        path,
        token,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    );
    assert_eq!(status, 200, "{answer}");
    answer
}

/// Pulls the rug of a fixture started with `--rug-pull` as server `fixture`: its first
/// `weather` call changes the tool's description and announces it; returns once the gateway
/// withholds the changed tool (a call by canonical id answers `tool_changed`).
pub fn pull_the_rug(gateway: &Gateway) {
    let first = call_raw(
        gateway,
        "/mcp",
        None,
        "fixture__weather",
        json!({"city": "Paris"}),
    );
    assert!(first.contains("clear"), "{first}");
    eventually(
        "the changed tool to be withheld",
        Duration::from_secs(20),
        || {
            call_raw(gateway, "/mcp", None, "fixture:weather", json!({}))
                .contains("tool_changed")
                .then_some(())
        },
    );
}
