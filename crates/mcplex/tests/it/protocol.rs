//! Protocol fidelity with the official Python SDK client: resources, templates and prompts of
//! several servers (namespaced, paginated both ways), reads, completions, subscriptions, and the
//! requests an upstream sends to the client during a call (sampling, elicitation) and its log
//! messages, with real upstreams (server-everything) and the conformance fixture.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, MODES, conformance_fixture_http, eventually, python_client, tools};

/// The conformance fixture listing 1,100 more resources (upstream pages of 100), and
/// server-everything, both namespaced.
fn two_servers() -> Gateway {
    let gateway = Gateway::start(json!({"mcpServers": {
        "conf": {"command": tools().conformance_fixture, "args": ["--extra-resources", "1100"]},
        "everything": {"command": "node", "args": [tools().everything, "stdio"]}
    }}));
    gateway.wait_ready();
    gateway
}

fn strings<'a>(items: &'a Value, key: &str) -> Vec<&'a str> {
    items
        .as_array()
        .expect("array")
        .iter()
        .map(|item| item[key].as_str().expect(key))
        .collect()
}

/// The Python client at `/mcp/all`, declaring and answering sampling and elicitation.
fn answering_client(gateway: &Gateway, mode: &str, scenario: &str, args: &[&str]) -> Value {
    answering_client_at(gateway, "/all", mode, scenario, args)
}

fn answering_client_at(
    gateway: &Gateway,
    path: &str,
    mode: &str,
    scenario: &str,
    args: &[&str],
) -> Value {
    let url = format!("{}{path}", gateway.url);
    python_client(&["--url", &url, "--answer"], mode, scenario, args)
}

#[test]
fn every_servers_resources_templates_and_prompts_are_listed_namespaced_and_paginated() {
    let gateway = two_servers();
    for mode in MODES {
        let offers = gateway.client_at("/mcp/all", None, mode, "offers", &[]);
        let uris = strings(&offers["resources"], "uri");
        // 3 scenario resources + 1,100 extra ones, read upstream in 12 pages...
        let conf: Vec<&&str> = uris
            .iter()
            .filter(|u| u.starts_with("mcplex://conf/"))
            .collect();
        assert_eq!(conf.len(), 1103, "{mode}");
        assert!(uris.contains(&"mcplex://conf/test://extra/1099"), "{mode}");
        assert!(
            uris.iter()
                .any(|u| u.starts_with("mcplex://everything/demo://resource/")),
            "{mode}: {uris:?}"
        );
        // ...and served in pages of 500 that the client follows.
        let expected_pages = uris.len().div_ceil(500);
        assert_eq!(offers["resource_pages"], expected_pages, "{mode}");
        // Every other field of a resource is the upstream's.
        let text = &offers["resources"][0];
        assert_eq!(text["uri"], "mcplex://conf/test://static-text", "{mode}");
        assert_eq!(text["description"], "A static text resource", "{mode}");

        let templates = strings(&offers["templates"], "uriTemplate");
        assert!(
            templates.contains(&"mcplex://conf/test://template/{id}/data"),
            "{mode}: {templates:?}"
        );
        let prompts = strings(&offers["prompts"], "name");
        for name in [
            "conf__test_simple_prompt",
            "conf__test_prompt_with_arguments",
            "everything__simple-prompt",
        ] {
            assert!(prompts.contains(&name), "{mode}: {prompts:?}");
        }
        let with_arguments = offers["prompts"]
            .as_array()
            .expect("prompts")
            .iter()
            .find(|p| p["name"] == "conf__test_prompt_with_arguments")
            .expect("listed");
        assert_eq!(with_arguments["arguments"][1]["name"], "arg2", "{mode}");
    }
}

#[test]
fn reads_prompts_and_completions_reach_the_server_that_owns_the_name() {
    let gateway = two_servers();
    for mode in MODES {
        let read = |uri: &str| gateway.client_at("/mcp/all", None, mode, "read", &[uri]);
        // A template expansion: the URI is given back in the client's terms.
        let data = read("mcplex://conf/test://template/42/data");
        let content = &data["result"]["contents"][0];
        assert_eq!(
            content["uri"], "mcplex://conf/test://template/42/data",
            "{mode}: {data}"
        );
        assert!(
            content["text"]
                .as_str()
                .is_some_and(|t| t.contains("\"42\"")),
            "{mode}: {data}"
        );
        let binary = read("mcplex://conf/test://static-binary");
        assert!(
            binary["result"]["contents"][0]["blob"].is_string(),
            "{mode}: {binary}"
        );
        let real = read("mcplex://everything/demo://resource/dynamic/text/3");
        assert!(
            real["result"]["contents"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("Resource 3")),
            "{mode}: {real}"
        );
        // Resource not found: -32002 in the session era, -32602 from 2026-07-28 on.
        let unknown = read("mcplex://nobody/x");
        let not_found = if mode == "legacy" { -32002 } else { -32602 };
        assert_eq!(unknown["error"]["code"], not_found, "{mode}: {unknown}");

        let prompt = gateway.client_at(
            "/mcp/all",
            None,
            mode,
            "prompt",
            &[
                "conf__test_prompt_with_arguments",
                r#"{"arg1": "hello", "arg2": "world"}"#,
            ],
        );
        assert_eq!(
            prompt["result"]["messages"][0]["content"]["text"],
            "Prompt with arguments: arg1='hello', arg2='world'",
            "{mode}: {prompt}"
        );
        let unknown = gateway.client_at("/mcp/all", None, mode, "prompt", &["conf__nope"]);
        assert_eq!(unknown["error"]["code"], -32602, "{mode}: {unknown}");

        let completion = gateway.client_at(
            "/mcp/all",
            None,
            mode,
            "complete",
            &["everything__completable-prompt", "department", "E"],
        );
        assert_eq!(
            completion["result"]["completion"]["values"],
            json!(["Engineering"]),
            "{mode}: {completion}"
        );
    }
}

#[test]
fn a_resource_update_reaches_its_subscriber_in_both_eras() {
    let gateway = two_servers();
    // The fixture announces an update of a URI 100 ms after it is subscribed to.
    for mode in MODES {
        let uri = "mcplex://conf/test://watched-resource";
        let answer = gateway.client_at("/mcp/all", None, mode, "subscribe", &[uri]);
        assert_eq!(answer["updated"], json!([uri]), "{mode}: {answer}");
    }
    // Each client's subscription reached the upstream under the upstream's own URI, and when the
    // client left (unsubscribe, or the end of its listen stream) the upstream was unsubscribed.
    let count = |what: &str| {
        gateway
            .log()
            .matches(&format!(
                "conformance fixture: {what} test://watched-resource"
            ))
            .count()
    };
    eventually(
        "both upstream unsubscriptions",
        Duration::from_secs(10),
        || (count("unsubscribed") == 2).then_some(()),
    );
    assert_eq!(count("subscribed"), 2, "{}", gateway.log());
}

#[test]
fn sampling_elicitation_and_logs_during_a_call_reach_the_calling_client() {
    let gateway = two_servers();
    // A real upstream: server-everything asks the client's model.
    let sampled = answering_client(
        &gateway,
        "legacy",
        "relay",
        &[
            "everything__trigger-sampling-request",
            r#"{"prompt": "hello", "maxTokens": 20}"#,
        ],
    );
    assert_eq!(
        sampled["asked"][0]["method"], "sampling/createMessage",
        "{sampled}"
    );
    assert!(
        sampled["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("sampled by the test client")),
        "the client's answer went back to the upstream: {sampled}"
    );

    let elicited = answering_client(
        &gateway,
        "legacy",
        "relay",
        &["everything__trigger-elicitation-request", "{}"],
    );
    assert_eq!(
        elicited["asked"][0]["method"], "elicitation/create",
        "{elicited}"
    );
    assert!(
        elicited["result"]["content"]
            .to_string()
            .contains("t@example.com"),
        "{elicited}"
    );

    // A client that did not declare sampling is never asked; the upstream gets -32601.
    let refused = gateway.client_at(
        "/mcp/all",
        None,
        "legacy",
        "relay",
        &["conf__test_sampling", r#"{"prompt": "hi"}"#],
    );
    assert_eq!(refused["asked"], json!([]), "{refused}");
    let text = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("-32601") && text.contains("did not declare the sampling capability"),
        "{refused}"
    );

    // Log messages the upstream sends during the call reach that call's client, in order: a
    // session-era client (which set its level), and a 2026-07-28 client that opted in on the
    // request; one that did not opt in, or only for errors, gets none.
    let url = format!("{}/all", gateway.url);
    let logging = ["conf__test_tool_with_logging", "{}"];
    for (mode, opt_in, expected) in [
        ("legacy", None, 3),
        ("2026-07-28", Some("info"), 3),
        ("2026-07-28", Some("error"), 0),
        ("2026-07-28", None, 0),
    ] {
        let mut target = vec!["--url", url.as_str()];
        if let Some(level) = opt_in {
            target.extend(["--log-level", level]);
        }
        let logged = python_client(&target, mode, "relay", &logging);
        let messages: Vec<&Value> = logged["logs"]
            .as_array()
            .expect("logs")
            .iter()
            .map(|l| &l["data"])
            .collect();
        let all = [
            &json!("Tool execution started"),
            &json!("Tool processing data"),
            &json!("Tool execution completed"),
        ];
        assert_eq!(messages, all[..expected], "{mode} {opt_in:?}: {logged}");
    }
}

#[test]
fn an_http_upstreams_request_reaches_the_client_of_the_call_it_belongs_to() {
    let (_fixture, port) = conformance_fixture_http();
    let gateway = Gateway::start(json!({"mcpServers": {
        "remote": {"url": format!("http://127.0.0.1:{port}/mcp")}
    }}));
    gateway.wait_ready();
    // Two clients at once: each one's sampling request comes back to it (the upstream's request
    // arrives on the answer stream of that client's call).
    let (first, second) = std::thread::scope(|scope| {
        let calls = ["one", "two"].map(|prompt| {
            let gateway = &gateway;
            scope.spawn(move || {
                let arguments = json!({"prompt": prompt}).to_string();
                answering_client(
                    gateway,
                    "legacy",
                    "relay",
                    &["remote__test_sampling", &arguments],
                )
            })
        });
        let [a, b] = calls.map(|c| c.join().expect("client thread"));
        (a, b)
    });
    for (answer, prompt) in [(&first, "one"), (&second, "two")] {
        let asked = &answer["asked"];
        assert_eq!(asked.as_array().map(Vec::len), Some(1), "{answer}");
        assert_eq!(
            asked[0]["params"]["messages"][0]["content"]["text"], prompt,
            "{answer}"
        );
        assert_eq!(
            answer["result"]["content"][0]["text"], "LLM response: sampled by the test client",
            "{answer}"
        );
    }
}

#[test]
fn a_transparent_server_keeps_its_own_names() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "conf": {"command": tools().conformance_fixture, "namespace": false},
        "everything": {"command": "node", "args": [tools().everything, "stdio"]}
    }}));
    gateway.wait_ready();
    for mode in MODES {
        let offers = gateway.client_at("/mcp/all", None, mode, "offers", &[]);
        let uris = strings(&offers["resources"], "uri");
        assert!(uris.contains(&"test://static-text"), "{mode}: {uris:?}");
        assert!(
            uris.iter().any(|u| u.starts_with("mcplex://everything/")),
            "the other server stays namespaced: {uris:?}"
        );
        let prompts = strings(&offers["prompts"], "name");
        assert!(
            prompts.contains(&"test_simple_prompt"),
            "{mode}: {prompts:?}"
        );
        assert!(
            prompts.contains(&"everything__simple-prompt"),
            "{mode}: {prompts:?}"
        );
        let listing = gateway.client_at("/mcp/all", None, mode, "list", &[]);
        let tools = crate::harness::names(&listing);
        assert!(
            tools.iter().any(|t| t == "test_simple_text"),
            "{mode}: {tools:?}"
        );
        assert!(
            tools.iter().any(|t| t == "everything__echo"),
            "{mode}: {tools:?}"
        );
        let called = gateway.client_at("/mcp/all", None, mode, "call", &["test_simple_text", "{}"]);
        assert_eq!(
            called["result"]["content"][0]["text"], "This is a simple text response for testing.",
            "{mode}: {called}"
        );
        // A template URI of the transparent server is read by its own name.
        let read = gateway.client_at("/mcp/all", None, mode, "read", &["test://template/7/data"]);
        assert_eq!(
            read["result"]["contents"][0]["uri"], "test://template/7/data",
            "{mode}: {read}"
        );
    }
}

#[test]
fn a_tokens_scope_applies_to_prompts_and_resources() {
    let gateway = two_servers();
    let token = gateway.create_token(
        json!({"name": "everything-reader", "servers": ["everything"], "permissions": "read"}),
    );
    let offers = gateway.client_at("/mcp/all", Some(&token), "legacy", "offers", &[]);
    let uris = strings(&offers["resources"], "uri");
    assert!(
        !uris.is_empty() && uris.iter().all(|u| u.starts_with("mcplex://everything/")),
        "{uris:?}"
    );
    let prompts = strings(&offers["prompts"], "name");
    assert!(
        prompts.iter().all(|p| p.starts_with("everything__")),
        "{prompts:?}"
    );
    // Out of scope reads exactly like nonexistent.
    let hidden = gateway.client_at(
        "/mcp/all",
        Some(&token),
        "legacy",
        "read",
        &["mcplex://conf/test://static-text"],
    );
    let missing = gateway.client_at(
        "/mcp/all",
        Some(&token),
        "legacy",
        "read",
        &["mcplex://conf/test://no-such"],
    );
    assert_eq!(hidden["error"]["code"], -32002, "{hidden}");
    assert_eq!(
        hidden["error"]["message"]
            .as_str()
            .map(|m| m.replace("static-text", "X")),
        missing["error"]["message"]
            .as_str()
            .map(|m| m.replace("no-such", "X")),
    );
    let prompt = gateway.client_at(
        "/mcp/all",
        Some(&token),
        "legacy",
        "prompt",
        &["conf__test_simple_prompt"],
    );
    assert_eq!(prompt["error"]["code"], -32602, "{prompt}");
}

#[test]
fn prompts_and_resources_list_changed_reach_clients_of_both_eras() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "conf": {"command": tools().conformance_fixture},
        "everything": {"command": "node", "args": [tools().everything, "stdio"], "quarantined": true}
    }}));
    gateway.wait_ready();
    // Approving the quarantined server serves its prompts and resources; quarantining it again
    // withdraws them. Either is a change of both lists.
    for (mode, action, served) in [
        ("legacy", "approve", true),
        ("2026-07-28", "quarantine", false),
    ] {
        let ready = gateway.dir.path().join(format!("listening-{action}"));
        let ready_arg = ready.display().to_string();
        let answer = std::thread::scope(|scope| {
            let waiting = scope.spawn(|| {
                gateway.client_at(
                    "/mcp/all",
                    None,
                    mode,
                    "offers_changed",
                    &["30", &ready_arg],
                )
            });
            eventually("the client to listen", Duration::from_secs(30), || {
                ready.exists().then_some(())
            });
            let (status, body) =
                gateway.api("POST", &format!("/api/v1/servers/everything/{action}"), "");
            assert_eq!(status, 200, "{body}");
            waiting.join().expect("client thread")
        });
        assert_eq!(
            answer["changed"],
            json!(["prompts", "resources"]),
            "{mode}: {answer}"
        );
        let listed = answer["prompts"]
            .as_array()
            .is_some_and(|p| p.contains(&json!("everything__simple-prompt")));
        assert_eq!(listed, served, "{mode}: {answer}");
    }
}

#[test]
fn every_surface_serves_prompts_and_resources_and_relays_to_its_client() {
    let gateway = two_servers();
    for path in ["/call", "/code"] {
        let offers = gateway.client_at(&format!("/mcp{path}"), None, "legacy", "offers", &[]);
        assert!(
            offers["prompts"]
                .to_string()
                .contains("conf__test_simple_prompt"),
            "{path}: {offers}"
        );
        let read = gateway.client_at(
            &format!("/mcp{path}"),
            None,
            "2026-07-28",
            "read",
            &["mcplex://conf/test://static-text"],
        );
        assert!(
            read["result"]["contents"][0]["text"].is_string(),
            "{path}: {read}"
        );
    }
    // A script's tool call that asks for sampling reaches the client of the code_execution call.
    let code = json!({"code": "const r = await call_tool('conf__test_sampling', {prompt: 'from a script'}); return r;"});
    let answer = answering_client_at(
        &gateway,
        "/code",
        "legacy",
        "relay",
        &["code_execution", &code.to_string()],
    );
    assert_eq!(
        answer["asked"][0]["params"]["messages"][0]["content"]["text"], "from a script",
        "{answer}"
    );
    assert!(
        answer["result"]
            .to_string()
            .contains("sampled by the test client"),
        "{answer}"
    );
}

#[test]
fn a_prompt_is_blocked_and_approved_like_a_tool() {
    let gateway = two_servers();
    let prompts = |gateway: &Gateway| {
        let offers = gateway.client_at("/mcp/all", None, "legacy", "offers", &[]);
        strings(&offers["prompts"], "name")
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert!(prompts(&gateway).contains(&"conf__test_simple_prompt".to_owned()));
    let (status, body) = gateway.api(
        "POST",
        "/api/v1/tools/conf:prompt:test_simple_prompt/block",
        "",
    );
    assert_eq!(status, 200, "{body}");
    eventually("the prompt to be withheld", Duration::from_secs(10), || {
        (!prompts(&gateway).contains(&"conf__test_simple_prompt".to_owned())).then_some(())
    });
    let refused = gateway.client_at(
        "/mcp/all",
        None,
        "legacy",
        "prompt",
        &["conf__test_simple_prompt"],
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let (_, approvals) = gateway.api("GET", "/api/v1/approvals", "");
    assert_eq!(
        approvals["tools"][0]["id"], "conf:prompt:test_simple_prompt",
        "{approvals}"
    );
    assert_eq!(approvals["tools"][0]["status"], "blocked", "{approvals}");
    let (status, body) = gateway.api(
        "POST",
        "/api/v1/tools/conf:prompt:test_simple_prompt/approve",
        "",
    );
    assert_eq!(status, 200, "{body}");
    eventually(
        "the prompt to be served again",
        Duration::from_secs(10),
        || {
            prompts(&gateway)
                .contains(&"conf__test_simple_prompt".to_owned())
                .then_some(())
        },
    );
}
