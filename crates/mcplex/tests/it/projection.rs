//! Provider projection (`/api/v1/projection/…`, `mcplex export`): the catalog as Anthropic and
//! OpenAI tool definitions, checked by the providers' own Python SDKs (`tests/py/provider_sdks.py`:
//! typed params, and the bodies their clients send to a local recorder); search answers; the
//! round trip from a projected name to a call; stability of the loaded part; token scope.

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{Gateway, call_raw, fixture_server, http_send, tools};

/// `shown` loaded, `hidden` deferred as a server, `mixed` with one tool deferred by name.
fn fleet(extra: &[(&str, Value)]) -> Value {
    let mut hidden = fixture_server("hidden", &[]);
    hidden["defer"] = json!(true);
    let mut mixed = fixture_server("mixed", &[]);
    mixed["tools"] = json!({"defer": ["add"]});
    let mut servers =
        json!({"shown": fixture_server("shown", &[]), "hidden": hidden, "mixed": mixed});
    for (name, server) in extra {
        servers[*name] = server.clone();
    }
    json!({"mcpServers": servers, "profiles": [{"name": "only-shown", "servers": ["shown"]}]})
}

fn as_bearer(gateway: &Gateway, token: Option<&str>) -> String {
    format!(
        "Bearer {}",
        token
            .map(str::to_owned)
            .unwrap_or_else(|| gateway.api_key())
    )
}

/// `GET /api/v1/projection/{provider}{query}` with `token` (the API key when `None`).
fn projection(gateway: &Gateway, provider: &str, query: &str, token: Option<&str>) -> (u16, Value) {
    let auth = as_bearer(gateway, token);
    let path = format!("/api/v1/projection/{provider}{query}");
    let (status, body) = http_send(
        gateway.authority(),
        "GET",
        &path,
        &[("Authorization", &auth)],
        "",
    );
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

fn tools_of(gateway: &Gateway, provider: &str, query: &str, token: Option<&str>) -> Vec<Value> {
    let (status, body) = projection(gateway, provider, query, token);
    assert_eq!(status, 200, "{body}");
    body["tools"].as_array().expect("tools").clone()
}

fn post(gateway: &Gateway, path: &str, body: Value, token: Option<&str>) -> (u16, Value) {
    let auth = as_bearer(gateway, token);
    let (status, answer) = http_send(
        gateway.authority(),
        "POST",
        path,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        &body.to_string(),
    );
    (
        status,
        serde_json::from_str(&answer).unwrap_or(Value::String(answer)),
    )
}

fn search(gateway: &Gateway, provider: &str, query: &str, token: Option<&str>) -> Value {
    let (status, answer) = post(
        gateway,
        &format!("/api/v1/projection/{provider}/search"),
        json!({"query": query, "call_id": "call_1"}),
        token,
    );
    assert_eq!(status, 200, "{answer}");
    answer
}

/// Every function name of a projection, with whether it is deferred (OpenAI: inside namespaces).
fn functions(tools: &[Value]) -> Vec<(String, bool)> {
    let one = |t: &Value| {
        (
            t["name"].as_str().unwrap_or_default().to_owned(),
            t["defer_loading"] == json!(true),
        )
    };
    tools
        .iter()
        .flat_map(|t| match t["type"].as_str() {
            Some("namespace") => t["tools"]
                .as_array()
                .expect("functions")
                .iter()
                .map(one)
                .collect(),
            Some(_) => Vec::new(),
            None => vec![one(t)],
        })
        .collect()
}

fn anthropic_references(answer: &Value) -> Vec<&str> {
    answer["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|r| r["tool_name"].as_str().expect("tool_name"))
        .collect()
}

fn openai_found(answer: &Value) -> Vec<String> {
    functions(answer["tools"].as_array().expect("tools"))
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// A server whose one tool has a root `oneOf`, which both APIs refuse.
fn odd_server(dir: &std::path::Path) -> Value {
    let path = dir.join("odd.json");
    let pick = json!([{"name": "pick", "description": "Picks a or b.", "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]
    }}]);
    std::fs::write(&path, pick.to_string()).expect("write");
    let path = path.to_str().expect("utf-8 path");
    fixture_server("odd", &["--no-kit", "--raw-tools", path])
}

#[test]
fn projections_are_what_the_providers_sdks_send() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let gateway = Gateway::start(fleet(&[("odd", odd_server(scratch.path()))]));
    gateway.wait_ready();
    let anthropic = tools_of(&gateway, "anthropic", "", None);
    let openai = tools_of(&gateway, "openai", "", None);

    for (name, deferred) in functions(&anthropic).into_iter().chain(functions(&openai)) {
        let expected = name.starts_with("hidden__") || name == "mixed__add";
        assert_eq!(deferred, expected, "{name}: defer_loading as configured");
    }
    let anthropic_names: Vec<_> = functions(&anthropic).into_iter().map(|(n, _)| n).collect();
    assert!(
        anthropic_names.contains(&"shown__echo".to_owned()),
        "{anthropic_names:?}"
    );
    assert_eq!(
        anthropic
            .iter()
            .filter(|t| t["type"] == "tool_search_tool_bm25_20251119")
            .count(),
        1
    );
    assert_eq!(
        openai.iter().filter(|t| t["type"] == "tool_search").count(),
        1
    );
    let namespaces: Vec<&str> = openai.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        namespaces,
        ["odd", "shown", "hidden", "mixed"],
        "loaded servers first"
    );

    // The root `oneOf` is dropped for both APIs, and still enforced by mcplex on a call.
    let pick = anthropic
        .iter()
        .find(|t| t["name"] == "odd__pick")
        .expect("odd__pick");
    assert_eq!(pick["input_schema"].get("oneOf"), None, "{pick}");
    assert_eq!(
        openai[0]["tools"][0]["parameters"].get("oneOf"),
        None,
        "{}",
        openai[0]
    );
    let (status, refused) = post(
        &gateway,
        "/api/v1/call",
        json!({"name": "odd__pick", "arguments": {}}),
        None,
    );
    assert_eq!(
        (status, &refused["isError"]),
        (200, &json!(true)),
        "{refused}"
    );

    let anthropic_answer = search(&gateway, "anthropic", "add two numbers", None);
    let openai_answer = search(&gateway, "openai", "add two numbers", None);
    let referenced = anthropic_references(&anthropic_answer);
    assert!(
        referenced.contains(&"hidden__add") && referenced.contains(&"mixed__add"),
        "{anthropic_answer}"
    );
    assert!(
        !referenced.contains(&"shown__add"),
        "loaded tools are not searched: {anthropic_answer}"
    );
    // One ranking for both shapes; OpenAI's groups the matches by server (namespace).
    let mut grouped = openai_found(&openai_answer);
    let mut ranked: Vec<String> = referenced.iter().map(|n| n.to_string()).collect();
    assert_eq!(grouped[0], ranked[0], "the best match first");
    grouped.sort();
    ranked.sort();
    assert_eq!(grouped, ranked);

    let dir = gateway.dir.path();
    let files: Vec<_> = [
        ("anthropic.json", Value::Array(anthropic.clone())),
        ("openai.json", Value::Array(openai.clone())),
        ("anthropic_search.json", anthropic_answer.clone()),
        ("openai_search.json", openai_answer.clone()),
    ]
    .into_iter()
    .map(|(file, value)| {
        let path = dir.join(file);
        std::fs::write(&path, value.to_string()).expect("write");
        path
    })
    .collect();
    let output = Command::new(&tools().python)
        .arg(tools().repo.join("tests/py/provider_sdks.py"))
        .args(&files)
        .output()
        .expect("run provider_sdks.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the SDKs refused the projection: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sent: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("json");
    let requests = sent["requests"].as_array().expect("requests");
    assert_eq!(requests.len(), 4, "{sent}");
    assert!(
        requests[0]["path"]
            .as_str()
            .unwrap_or_default()
            .ends_with("/v1/messages")
    );
    assert_eq!(
        requests[0]["body"]["tools"],
        Value::Array(anthropic.clone())
    );
    assert_eq!(
        requests[1]["body"]["messages"][2]["content"][0],
        anthropic_answer
    );
    assert!(
        requests[2]["path"]
            .as_str()
            .unwrap_or_default()
            .ends_with("/v1/responses")
    );
    assert_eq!(requests[2]["body"]["tools"], Value::Array(openai.clone()));
    assert_eq!(requests[3]["body"]["input"][2], openai_answer);
}

#[test]
fn a_projected_name_calls_the_same_tool_on_the_api_and_on_mcp() {
    let gateway = Gateway::start(fleet(&[]));
    gateway.wait_ready();
    let token = gateway.create_token(
        json!({"name": "shown-only", "servers": ["shown"], "permissions": "read,write"}),
    );
    for name in ["hidden__add", "mixed__add", "shown__add"] {
        let (status, result) = post(
            &gateway,
            "/api/v1/call",
            json!({"name": name, "arguments": {"a": 2, "b": 3}}),
            None,
        );
        assert_eq!(status, 200, "{result}");
        assert_eq!(
            result["structuredContent"]["sum"],
            json!(5.0),
            "{name}: {result}"
        );
        let mcp: Value = serde_json::from_str(&call_raw(
            &gateway,
            "/mcp",
            None,
            name,
            json!({"a": 2, "b": 3}),
        ))
        .expect("json");
        assert_eq!(
            mcp["result"]["structuredContent"], result["structuredContent"],
            "{name}"
        );
    }
    // The same checks as any call: arguments validated, scope enforced.
    let (status, result) = post(
        &gateway,
        "/api/v1/call",
        json!({"name": "hidden__add", "arguments": {"a": "two"}}),
        None,
    );
    assert_eq!(
        (status, &result["isError"]),
        (200, &json!(true)),
        "{result}"
    );
    let (status, refused) = post(
        &gateway,
        "/api/v1/call",
        json!({"name": "hidden__add", "arguments": {"a": 2, "b": 3}}),
        Some(&token),
    );
    assert_eq!(status, 404, "out of scope is unknown: {refused}");
    let (status, ok) = post(
        &gateway,
        "/api/v1/call",
        json!({"name": "shown__add", "arguments": {"a": 2, "b": 3}}),
        Some(&token),
    );
    assert_eq!(status, 200, "{ok}");
    let (status, _) = post(
        &gateway,
        "/api/v1/call",
        json!({"name": "shown__add"}),
        Some("not-a-token"),
    );
    assert_eq!(status, 401);
    // An agent token opens only the agent routes of /api, never the management ones.
    let auth = format!("Bearer {token}");
    let (status, _) = http_send(
        gateway.authority(),
        "GET",
        "/api/v1/tools",
        &[("Authorization", &auth)],
        "",
    );
    assert_eq!(status, 401);
}

#[test]
fn a_token_sees_only_its_tools_in_every_projection_and_search() {
    let gateway = Gateway::start(fleet(&[]));
    gateway.wait_ready();
    let shown = gateway
        .create_token(json!({"name": "shown", "servers": ["shown"], "permissions": "read,write"}));
    let hidden = gateway.create_token(
        json!({"name": "hidden", "servers": ["hidden"], "permissions": "read,write"}),
    );
    for provider in ["anthropic", "openai"] {
        let only_shown = tools_of(&gateway, provider, "", Some(&shown));
        let names = functions(&only_shown);
        assert!(
            !names.is_empty() && names.iter().all(|(n, d)| n.starts_with("shown__") && !d),
            "{provider}: {names:?}"
        );
        assert_eq!(
            only_shown.len(),
            if provider == "openai" { 1 } else { names.len() },
            "no search tool: nothing deferred"
        );
        assert_eq!(
            tools_of(&gateway, provider, "?profile=only-shown", None),
            only_shown,
            "{provider}: the profile"
        );
        let answer = search(&gateway, provider, "add two numbers", Some(&shown));
        let found = if provider == "anthropic" {
            anthropic_references(&answer).len()
        } else {
            openai_found(&answer).len()
        };
        assert_eq!(found, 0, "{provider}: nothing deferred in scope: {answer}");

        let only_hidden = functions(&tools_of(&gateway, provider, "", Some(&hidden)));
        assert!(
            !only_hidden.is_empty()
                && only_hidden
                    .iter()
                    .all(|(n, d)| n.starts_with("hidden__") && *d),
            "{provider}: {only_hidden:?}"
        );
        let answer = search(&gateway, provider, "add two numbers", Some(&hidden));
        let found = if provider == "anthropic" {
            anthropic_references(&answer)
                .into_iter()
                .map(str::to_owned)
                .collect()
        } else {
            openai_found(&answer)
        };
        assert_eq!(
            found.first().map(String::as_str),
            Some("hidden__add"),
            "{provider}: {answer}"
        );
        assert!(
            found.iter().all(|n| n.starts_with("hidden__")),
            "{provider}: {found:?}"
        );

        let (status, _) = projection(&gateway, provider, "", Some("not-a-token"));
        assert_eq!(status, 401, "{provider}");
        let (status, _) = projection(&gateway, provider, "?profile=nope", None);
        assert_eq!(status, 404, "{provider}");
    }
    let (status, _) = projection(&gateway, "gemini", "", None);
    assert_eq!(status, 404);
}

/// The projection up to its first deferred entry (the search tool comes right before it).
fn loaded_prefix(tools: &[Value]) -> String {
    let search = tools
        .iter()
        .position(|t| {
            matches!(
                t["type"].as_str(),
                Some("tool_search" | "tool_search_tool_bm25_20251119")
            )
        })
        .expect("a search tool");
    serde_json::to_string(&tools[..search]).expect("json")
}

#[test]
fn deferred_servers_joining_change_no_byte_of_the_loaded_part() {
    let without = Gateway::start(fleet(&[]));
    let mut late = fixture_server("late", &[]);
    late["defer"] = json!(true);
    let with = Gateway::start(fleet(&[("late", late), ("zz", fixture_server("zz", &[]))]));
    let alone = Gateway::start(fleet(&[("zz", fixture_server("zz", &[]))]));
    for gateway in [&without, &with, &alone] {
        gateway.wait_ready();
    }
    for provider in ["anthropic", "openai"] {
        let joined = tools_of(&with, provider, "", None);
        let before = tools_of(&alone, provider, "", None);
        assert_eq!(loaded_prefix(&joined), loaded_prefix(&before), "{provider}");
        assert_ne!(
            joined, before,
            "{provider}: the deferred server is in the projection"
        );
        assert!(
            loaded_prefix(&joined).len() > 1000,
            "{provider}: a real prefix"
        );
        // The same catalog gives the same bytes.
        assert_eq!(
            tools_of(&without, provider, "", None),
            tools_of(&without, provider, "", None)
        );
    }
}

#[test]
fn export_prints_the_projection_through_the_gateway_or_offline() {
    let gateway = Gateway::start(fleet(&[]));
    gateway.wait_ready();
    let config = gateway.dir.path().join("config.json");
    for provider in ["anthropic", "openai"] {
        let served = tools_of(&gateway, provider, "?search=client", None);
        assert!(
            served
                .iter()
                .any(|t| t["name"] == "tool_search" || t["execution"] == "client"),
            "{provider}"
        );
        for via in ["api", "store"] {
            let output = Command::new(&tools().mcplex)
                .args([
                    "export", "--format", provider, "--search", "client", "--config",
                ])
                .arg(&config)
                .env("MCPLEX_VIA", via)
                .env("MCPLEX_DATA_DIR", gateway.dir.path().join("data"))
                .output()
                .expect("run mcplex export");
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            let printed: Value = serde_json::from_slice(&output.stdout).expect("json");
            assert_eq!(
                printed["tools"],
                Value::Array(served.clone()),
                "{provider} via {via}"
            );
        }
    }
}
