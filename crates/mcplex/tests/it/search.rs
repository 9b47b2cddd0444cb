//! Tool search: deferral by search (tool_search + call_tool), the retrieve_tools surface, and
//! include/exclude filters, observed by real clients.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, MODES, eventually, fixture_server, names, python_client};

fn deferred_fleet() -> Value {
    let mut deferred = fixture_server("hidden", &[]);
    deferred["defer"] = json!(true);
    json!({"mcpServers": {"shown": fixture_server("shown", &[]), "hidden": deferred}})
}

#[test]
fn deferred_tools_are_searchable_and_callable_but_not_listed() {
    let gateway = Gateway::start(deferred_fleet());
    gateway.wait_ready();
    for mode in MODES {
        let listed = names(&gateway.client(mode, "list", &[]));
        assert_eq!(
            &listed[..3],
            ["describe_tool", "tool_search", "call_tool"],
            "{mode}"
        );
        assert!(listed.iter().any(|n| n == "shown__echo"));
        assert!(
            !listed.iter().any(|n| n.starts_with("hidden__")),
            "{mode}: deferred tools are not listed: {listed:?}"
        );

        let search = gateway.client(
            mode,
            "call",
            &["tool_search", r#"{"query": "add two numbers"}"#],
        );
        let body = &search["result"]["structuredContent"];
        let found: Vec<&str> = body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(found.contains(&"hidden__add"), "{mode}: {search}");
        let add = body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == "hidden__add")
            .expect("hidden__add");
        assert_eq!(
            add["inputSchema"]["required"],
            json!(["a", "b"]),
            "one search is the whole distance to a call"
        );

        let call = gateway.client(
            mode,
            "call",
            &[
                "call_tool",
                r#"{"name": "hidden__add", "arguments": {"a": 4, "b": 5}}"#,
            ],
        );
        assert_eq!(
            call["result"]["structuredContent"],
            json!({"sum": 9.0}),
            "{mode}: {call}"
        );
        let healed = gateway.client(
            mode,
            "call",
            &[
                "call_tool",
                r#"{"name": "hidden__add", "arguments": {"a": 4}}"#,
            ],
        );
        assert_eq!(
            healed["result"]["structuredContent"]["error_type"], "invalid_params",
            "same validation: {healed}"
        );
        let unknown = gateway.client(
            mode,
            "call",
            &["call_tool", r#"{"name": "hidden__addd", "arguments": {}}"#],
        );
        let closest = &unknown["result"]["structuredContent"]["closest"];
        assert_eq!(unknown["result"]["isError"], true);
        assert!(
            closest
                .as_array()
                .is_some_and(|c| c.contains(&json!("hidden__add"))),
            "{unknown}"
        );
    }
}

#[test]
fn tool_search_caps_matches_and_says_how_many_it_left_out() {
    let mut config = deferred_fleet();
    config["tool_search"] = json!({"max_matches": 3});
    let gateway = Gateway::start(config);
    gateway.wait_ready();
    let everything = gateway.client("legacy", "call", &["tool_search", r#"{"query": ""}"#]);
    let body = &everything["result"]["structuredContent"];
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(3));
    // Two fixtures of 9 tools each: an empty query matches all 18, deferred or not.
    assert_eq!(body["left_out"], 15, "{everything}");
}

#[test]
fn the_two_tools_are_there_before_any_server_connects() {
    let mut hung = json!({"command": "sleep", "args": ["60"]});
    hung["defer"] = json!(true);
    let gateway = Gateway::start(json!({"mcpServers": {"hung": hung}}));
    let listed = names(&gateway.client("legacy", "list", &[]));
    assert_eq!(listed, ["describe_tool", "tool_search", "call_tool"]);
}

#[test]
fn adding_a_deferred_server_changes_no_byte_of_the_listing() {
    let gateway = Gateway::start(deferred_fleet());
    gateway.wait_ready();
    let before = gateway.raw_tools_list("/mcp");
    let mut config = deferred_fleet();
    let mut more = fixture_server("more", &[]);
    more["defer"] = json!(true);
    config["mcpServers"]["more"] = more;
    std::fs::write(gateway.dir.path().join("config.json"), config.to_string()).expect("write");
    // A server added while running is quarantined until the operator approves it.
    gateway.approve_server("more");
    // The new server joins: its tools become searchable...
    eventually(
        "the new deferred server to be searchable",
        Duration::from_secs(20),
        || {
            let search = gateway.client(
                "legacy",
                "call",
                &["tool_search", r#"{"query": "more__echo"}"#],
            );
            (search["result"]["structuredContent"]["tools"][0]["name"] == "more__echo")
                .then_some(())
        },
    );
    // ...and the listing a client caches is the same, byte for byte.
    assert_eq!(gateway.raw_tools_list("/mcp"), before);
    // Removing it again stops it and still changes nothing listed.
    std::fs::write(
        gateway.dir.path().join("config.json"),
        deferred_fleet().to_string(),
    )
    .expect("write");
    eventually(
        "the removed server to be gone",
        Duration::from_secs(20),
        || {
            let search = gateway.client(
                "legacy",
                "call",
                &["call_tool", r#"{"name": "more__echo", "arguments": {}}"#],
            );
            (search["result"]["structuredContent"]["error_type"] == "not_found").then_some(())
        },
    );
    assert_eq!(gateway.raw_tools_list("/mcp"), before);
}

#[test]
fn adding_a_listed_server_is_announced() {
    let gateway = Gateway::start(json!({"mcpServers": {"a": fixture_server("a", &[])}}));
    gateway.wait_ready();
    let path = gateway.dir.path().join("config.json").display().to_string();
    let content =
        json!({"mcpServers": {"a": fixture_server("a", &[]), "b": fixture_server("b", &[])}})
            .to_string();
    // The added server is quarantined: the client hears of it once the operator approves it.
    let answer = std::thread::scope(|scope| {
        let waiting =
            scope.spawn(|| gateway.client("legacy", "edit_and_wait", &[&path, &content, "20"]));
        gateway.approve_server("b");
        waiting.join().expect("client thread")
    });
    assert_eq!(answer["notified"], true, "{answer}");
}

#[test]
fn filtered_out_tools_are_invisible_everywhere() {
    let mut server = fixture_server("fixture", &[]);
    server["tools"] = json!({"exclude": ["crash", "spawn_*"]});
    let gateway = Gateway::start(json!({"mcpServers": {"fixture": server}}));
    gateway.wait_ready();
    let listed = names(&gateway.client("legacy", "list", &[]));
    assert!(listed.contains(&"fixture__echo".to_owned()));
    assert!(
        !listed
            .iter()
            .any(|n| n == "fixture__crash" || n.starts_with("fixture__spawn")),
        "{listed:?}"
    );
    let describe = gateway.client(
        "legacy",
        "call",
        &[
            "describe_tool",
            r#"{"tool_ids": ["fixture__crash", "fixture:spawn_grandchild"], "check": true}"#,
        ],
    );
    for verdict in describe["result"]["structuredContent"]["tools"]
        .as_array()
        .expect("tools")
    {
        assert_eq!(verdict["reason"], "not_found", "{describe}");
    }
    let call = gateway.client("legacy", "call", &["fixture__crash", "{}"]);
    assert_eq!(call["error"]["message"], "unknown tool: fixture__crash");
    let retrieve = python_client(
        &["--url", &format!("{}/call", gateway.url)],
        "legacy",
        "call",
        &[
            "retrieve_tools",
            r#"{"query": "crash exits the server process"}"#,
        ],
    );
    let ids: Vec<&str> = retrieve["result"]["structuredContent"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert!(!ids.contains(&"fixture:crash"), "{ids:?}");
}

#[test]
fn the_retrieve_surface_ranks_scopes_and_renders_both_modes() {
    let corpus = crate::harness::tools()
        .repo
        .join("crates/mcplex-fixtures/data/ref45.tools.json")
        .display()
        .to_string();
    let fleet = |mode: &str| {
        json!({"tool_response_mode": mode, "mcpServers": {
            "git": fixture_server("git", &["--no-kit", "--corpus", &corpus, "--corpus-server", "git"]),
            "filesystem": fixture_server("filesystem", &["--no-kit", "--corpus", &corpus, "--corpus-server", "filesystem"]),
        }})
    };
    let gateway = Gateway::start(fleet("full"));
    gateway.wait_ready();
    let url = format!("{}/call", gateway.url);
    let target = ["--url", url.as_str()];
    for mode in MODES {
        assert_eq!(
            names(&python_client(&target, mode, "list", &[])),
            ["retrieve_tools", "call_tool", "describe_tool"]
        );
        let answer = python_client(
            &target,
            mode,
            "call",
            &[
                "retrieve_tools",
                r#"{"query": "read the commit logs", "limit": 3}"#,
            ],
        );
        let body = &answer["result"]["structuredContent"];
        assert_eq!(body["tools"][0]["id"], "git:git_log", "{answer}");
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(3));
        assert!(body["total"].as_u64().unwrap_or(0) >= 3);
        assert!(
            body["tools"][0]["inputSchema"]["properties"].is_object(),
            "full mode carries the schema"
        );
        let call = python_client(
            &target,
            mode,
            "call",
            &[
                "call_tool",
                r#"{"name": "git__git_log", "arguments": {"repo_path": "/r"}}"#,
            ],
        );
        assert_eq!(
            call["result"]["structuredContent"]["arguments"],
            json!({"repo_path": "/r"}),
            "{call}"
        );
    }
    let scoped = python_client(
        &target,
        "legacy",
        "call",
        &[
            "retrieve_tools",
            r#"{"query": "", "server": "filesystem", "limit": 100}"#,
        ],
    );
    let ids: Vec<&str> = scoped["result"]["structuredContent"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 14);
    assert!(ids.iter().all(|id| id.starts_with("filesystem:")));
    assert_eq!(scoped["result"]["structuredContent"]["total"], 14);
    let bad = python_client(
        &target,
        "legacy",
        "call",
        &["retrieve_tools", r#"{"query": "x", "limit": 500}"#],
    );
    assert_eq!(bad["result"]["isError"], true);

    // tool_response_mode is hot: compact rendering after an edit.
    std::fs::write(
        gateway.dir.path().join("config.json"),
        fleet("compact").to_string(),
    )
    .expect("write");
    let compact = eventually("compact rendering", Duration::from_secs(15), || {
        let answer = python_client(
            &target,
            "legacy",
            "call",
            &["retrieve_tools", r#"{"query": "git log", "limit": 1}"#],
        );
        let first = answer["result"]["structuredContent"]["tools"][0].clone();
        first.get("signature").is_some().then_some(first)
    });
    assert_eq!(compact["id"], "git:git_log");
    assert_eq!(compact["lossy"], false);
    assert!(
        compact["signature"]
            .as_str()
            .unwrap_or_default()
            .starts_with("git_log(repo_path*:str"),
        "{compact}"
    );
    assert!(compact.get("inputSchema").is_none());
}

#[test]
fn routing_mode_retrieve_tools_serves_the_retrieve_surface_on_mcp() {
    let gateway = Gateway::start(
        json!({"routing_mode": "retrieve_tools", "mcpServers": {"fixture": fixture_server("fixture", &[])}}),
    );
    gateway.wait_ready();
    assert_eq!(
        names(&gateway.client("legacy", "list", &[])),
        ["retrieve_tools", "call_tool", "describe_tool"]
    );
    let all = python_client(
        &["--url", &format!("{}/all", gateway.url)],
        "legacy",
        "list",
        &[],
    );
    assert!(names(&all).contains(&"fixture__echo".to_owned()));
}

#[test]
fn deferral_switched_on_while_running_waits_for_a_restart() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let mut server = fixture_server("fixture", &[]);
    server["defer"] = json!(true);
    std::fs::write(
        gateway.dir.path().join("config.json"),
        json!({"mcpServers": {"fixture": server}}).to_string(),
    )
    .expect("write");
    eventually("the restart warning", Duration::from_secs(15), || {
        gateway
            .log()
            .contains("the new defer settings take effect after a restart")
            .then_some(())
    });
    // Without tool_search and call_tool, hiding the tools would leave them unreachable.
    let listed = names(&gateway.client("legacy", "list", &[]));
    assert!(
        listed.contains(&"fixture__echo".to_owned()) && !listed.contains(&"tool_search".to_owned()),
        "{listed:?}"
    );
}

#[test]
fn a_request_in_parts_says_which_part_found_each_tool() {
    let corpus = crate::harness::tools()
        .repo
        .join("crates/mcplex-fixtures/data/ref45.tools.json")
        .display()
        .to_string();
    // filesystem deferred, so the direct surface has tool_search too.
    let mut filesystem = fixture_server(
        "filesystem",
        &[
            "--no-kit",
            "--corpus",
            &corpus,
            "--corpus-server",
            "filesystem",
        ],
    );
    filesystem["defer"] = json!(true);
    let gateway = Gateway::start(json!({"mcpServers": {
        "git": fixture_server("git", &["--no-kit", "--corpus", &corpus, "--corpus-server", "git"]),
        "filesystem": filesystem,
    }}));
    gateway.wait_ready();
    let url = format!("{}/call", gateway.url);
    // A guess at the kind of server, then two steps joined by `+`.
    let answer = python_client(
        &["--url", url.as_str()],
        "legacy",
        "call",
        &[
            "retrieve_tools",
            r#"{"query": "version control; show the commit log + read a text file", "limit": 5}"#,
        ],
    );
    let tools = answer["result"]["structuredContent"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // The parts once, at the top; a match a part placed names it by index.
    let parts = &answer["result"]["structuredContent"]["parts"];
    assert_eq!(
        parts,
        &json!(["show the commit log", "read a text file"]),
        "the steps without the guess: {answer}"
    );
    let placed: Vec<(&str, Option<&str>)> = tools
        .iter()
        .map(|t| {
            let part = t["part"].as_u64().map(|i| parts[i as usize].as_str());
            (t["id"].as_str().unwrap_or(""), part.flatten())
        })
        .collect();
    assert_eq!(
        placed.first().map(|p| p.1),
        Some(None),
        "the whole request's best: {answer}"
    );
    assert!(
        placed.iter().any(
            |(id, part)| id.starts_with("filesystem:read") && *part == Some("read a text file")
        ),
        "the second step's tool, marked with its part: {placed:?}"
    );
    assert!(
        placed.iter().any(|(id, _)| *id == "git:git_log"),
        "the first step's tool: {placed:?}"
    );
    assert!(
        placed
            .iter()
            .all(|(_, part)| part.is_none_or(|p| !p.contains("version control"))),
        "the guess is never a part: {placed:?}"
    );

    // tool_search answers in the same shape: the parts once, a match names its part by index.
    let search = gateway.client(
        "legacy",
        "call",
        &[
            "tool_search",
            r#"{"query": "version control; show the commit log + read a text file"}"#,
        ],
    );
    let body = &search["result"]["structuredContent"];
    assert_eq!(body["parts"], *parts, "{search}");
    let read = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| {
            t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("filesystem__read"))
        })
        .unwrap_or_else(|| panic!("a reading tool: {search}"));
    assert_eq!(
        read["part"],
        json!(1),
        "placed by the second part: {search}"
    );
}
