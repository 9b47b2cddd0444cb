//! Trust and access end to end: quarantine, tool pinning (a real rug pull), agent tokens with
//! not_found parity, profiles, and the HTTP guard (DNS rebinding, authentication off loopback,
//! body limits).

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    Gateway, call_raw, eventually, fixture_server, http_send, mcplex, names, pull_the_rug, rpc,
    rpc_with,
};

fn listed(gateway: &Gateway, path: &str, token: Option<&str>) -> Vec<String> {
    let (status, answer) = rpc(gateway, path, token, "tools/list", json!({}));
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("json");
    names(&answer["result"])
}

#[test]
fn a_rug_pull_is_withheld_everywhere_until_approved() {
    let gateway = Gateway::start(json!({
        "defer_tools": false,
        "mcpServers": {"fixture": fixture_server("fixture", &["--rug-pull"])}
    }));
    gateway.wait_ready();
    assert!(listed(&gateway, "/mcp", None).contains(&"fixture__weather".to_owned()));
    // The first call pulls the rug: the upstream changes the description and says list_changed.
    pull_the_rug(&gateway);
    assert!(!listed(&gateway, "/mcp", None).contains(&"fixture__weather".to_owned()));
    // Never listed, searched or described with the new text, on any surface.
    for path in ["/mcp", "/mcp/all", "/mcp/call"] {
        let (_, listing) = rpc(&gateway, path, None, "tools/list", json!({}));
        assert!(!listing.contains("id_rsa"), "{path}: {listing}");
    }
    let search = call_raw(
        &gateway,
        "/mcp/call",
        None,
        "retrieve_tools",
        json!({"query": "weather city"}),
    );
    assert!(!search.contains("fixture:weather"), "{search}");
    let described = call_raw(
        &gateway,
        "/mcp",
        None,
        "describe_tool",
        json!({"tool_ids": ["fixture:weather"]}),
    );
    assert!(
        described.contains("tool_changed") && !described.contains("id_rsa"),
        "{described}"
    );
    let checked = call_raw(
        &gateway,
        "/mcp",
        None,
        "describe_tool",
        json!({"tool_ids": ["fixture:weather"], "check": true}),
    );
    assert!(
        checked.contains(r#"\"reason\":\"tool_changed\""#),
        "{checked}"
    );
    let refused = call_raw(
        &gateway,
        "/mcp",
        None,
        "fixture:weather",
        json!({"city": "Paris"}),
    );
    assert!(
        refused.contains("tool_changed") && refused.contains("error"),
        "{refused}"
    );
    // The operator sees it, with the new description, and approves it.
    let (_, pending) = gateway.api("GET", "/api/v1/approvals", "");
    let tool = &pending["tools"][0];
    assert_eq!(tool["id"], "fixture:weather", "{pending}");
    assert_eq!(tool["status"], "changed");
    assert!(
        tool["description"]
            .as_str()
            .unwrap_or_default()
            .contains("id_rsa")
    );
    let (status, body) = gateway.api("POST", "/api/v1/tools/fixture:weather/approve", "");
    assert_eq!(status, 200, "{body}");
    assert!(listed(&gateway, "/mcp", None).contains(&"fixture__weather".to_owned()));
    // A blocked tool is withheld whatever its definition, until approved again.
    let (status, body) = gateway.api("POST", "/api/v1/tools/fixture:weather/block", "");
    assert_eq!(status, 200, "{body}");
    assert!(!listed(&gateway, "/mcp", None).contains(&"fixture__weather".to_owned()));
    let blocked = call_raw(
        &gateway,
        "/mcp",
        None,
        "fixture:weather",
        json!({"city": "Oslo"}),
    );
    assert!(blocked.contains("tool_blocked"), "{blocked}");
    let (status, _) = gateway.api("POST", "/api/v1/tools/fixture:weather/approve", "");
    assert_eq!(status, 200);
    assert!(listed(&gateway, "/mcp", None).contains(&"fixture__weather".to_owned()));
}

#[test]
fn a_server_added_while_running_is_quarantined_until_approved() {
    // `q` is in the founding config but marked quarantined: it starts quarantined all the same.
    let mut q = fixture_server("q", &[]);
    q["quarantined"] = json!(true);
    let gateway = Gateway::start(json!({"mcpServers": {"a": fixture_server("a", &[]), "q": q}}));
    gateway.wait_ready();
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    let state = |name: &str| {
        servers["servers"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["name"] == name))
            .map(|s| s["state"].clone())
    };
    assert_eq!(
        (state("a"), state("q")),
        (Some(json!("approved")), Some(json!("quarantined"))),
        "{servers}"
    );
    assert!(
        !listed(&gateway, "/mcp", None)
            .iter()
            .any(|n| n.starts_with("q__"))
    );
    let config = json!({"mcpServers": {"a": fixture_server("a", &[]), "q": q, "b": fixture_server("b", &[])}});
    std::fs::write(gateway.dir.path().join("config.json"), config.to_string()).expect("write");
    eventually(
        "b to be connected and quarantined",
        Duration::from_secs(20),
        || {
            let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
            let b = servers["servers"]
                .as_array()?
                .iter()
                .find(|s| s["name"] == "b")?
                .clone();
            (b["state"] == "quarantined" && b["status"] == "ready").then_some(())
        },
    );
    assert!(
        !listed(&gateway, "/mcp", None)
            .iter()
            .any(|n| n.starts_with("b__"))
    );
    let search = call_raw(
        &gateway,
        "/mcp/call",
        None,
        "retrieve_tools",
        json!({"query": "", "server": "b"}),
    );
    assert!(search.contains(r#"\"total\":0"#), "{search}");
    let refused = call_raw(&gateway, "/mcp", None, "b:echo", json!({}));
    assert!(refused.contains("server_quarantined"), "{refused}");
    // Agents can never approve anything through MCP: the API key is the only way.
    let (status, _) = http_send(
        gateway.authority(),
        "POST",
        "/api/v1/servers/b/approve",
        &[],
        "",
    );
    assert_eq!(status, 401);
    gateway.approve_server("b");
    assert!(listed(&gateway, "/mcp", None).contains(&"b__echo".to_owned()));
}

#[test]
fn tokens_scope_every_surface_and_hide_the_rest_byte_for_byte() {
    let gateway = Gateway::start(json!({
        "mcpServers": {"a": fixture_server("a", &[]), "b": fixture_server("b", &[])}
    }));
    gateway.wait_ready();
    // read on a: a's readOnly tools only (echo); add is un-annotated, so write.
    let token =
        gateway.create_token(json!({"name": "reader", "servers": ["a"], "permissions": "read"}));
    let visible = listed(&gateway, "/mcp", Some(&token));
    assert_eq!(visible, ["describe_tool", "a__echo"], "{visible:?}");
    // The official client presents the token the same way.
    let client = gateway.client_at("/mcp/all", Some(&token), "legacy", "list", &[]);
    assert_eq!(names(&client), ["describe_tool", "a__echo"]);
    let allowed = call_raw(&gateway, "/mcp", Some(&token), "a__echo", json!({"x": 1}));
    assert!(allowed.contains("structuredContent"), "{allowed}");

    // An id outside the scope answers exactly like one that never existed.
    let same = |hidden: &str, ghost: &str, answer: &dyn Fn(&str) -> String| {
        let (h, g) = (answer(hidden), answer(ghost));
        assert_eq!(
            h.replace(hidden, "ID"),
            g.replace(ghost, "ID"),
            "{hidden} vs {ghost}"
        );
    };
    for (hidden, ghost) in [
        // The ghost names a server that does not exist and the same words, so that search
        // suggestions (which only ever name visible tools) are asked the same question.
        ("a:add", "z:add"),
        ("b:echo", "z:echo"),
        ("b__echo", "z__echo"),
        ("a__add", "z__add"),
    ] {
        same(hidden, ghost, &|id| {
            call_raw(
                &gateway,
                "/mcp",
                Some(&token),
                "describe_tool",
                json!({"tool_ids": [id]}),
            )
        });
        same(hidden, ghost, &|id| {
            call_raw(
                &gateway,
                "/mcp",
                Some(&token),
                "describe_tool",
                json!({"tool_ids": [id], "check": true}),
            )
        });
        same(hidden, ghost, &|id| {
            call_raw(&gateway, "/mcp", Some(&token), id, json!({}))
        });
        same(hidden, ghost, &|id| {
            call_raw(
                &gateway,
                "/mcp/call",
                Some(&token),
                "call_tool",
                json!({"name": id, "arguments": {}}),
            )
        });
    }
    // Search only ever sees what the caller may call.
    let search = call_raw(
        &gateway,
        "/mcp/call",
        Some(&token),
        "retrieve_tools",
        json!({"query": ""}),
    );
    assert!(
        search.contains("a:echo") && !search.contains("a:add") && !search.contains("b:"),
        "{search}"
    );
    assert!(search.contains(r#"\"total\":1"#), "{search}");
    // Without a token, on loopback, the local user sees everything.
    assert!(listed(&gateway, "/mcp", None).contains(&"b__add".to_owned()));
}

#[test]
fn expired_revoked_and_wrong_tokens_are_refused() {
    let gateway = Gateway::start(json!({"mcpServers": {"a": fixture_server("a", &[])}}));
    gateway.wait_ready();
    let short =
        gateway.create_token(json!({"name": "short", "permissions": "read", "expires": "2s"}));
    let revoked = gateway.create_token(json!({"name": "gone", "permissions": "read"}));
    assert_eq!(
        rpc(&gateway, "/mcp", Some(&short), "tools/list", json!({})).0,
        200
    );
    assert_eq!(
        rpc(&gateway, "/mcp", Some(&revoked), "tools/list", json!({})).0,
        200
    );
    let (status, body) = gateway.api("DELETE", "/api/v1/tokens/gone", "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        rpc(&gateway, "/mcp", Some(&revoked), "tools/list", json!({})).0,
        401
    );
    std::thread::sleep(Duration::from_millis(2100));
    assert_eq!(
        rpc(&gateway, "/mcp", Some(&short), "tools/list", json!({})).0,
        401
    );
    // A wrong credential is never quietly treated as anonymous.
    assert_eq!(
        rpc(
            &gateway,
            "/mcp",
            Some("mcplex_guess"),
            "tools/list",
            json!({})
        )
        .0,
        401
    );
    let (_, tokens) = gateway.api("GET", "/api/v1/tokens", "");
    let text = tokens.to_string();
    assert!(
        !text.contains(&short) && !text.contains(&revoked),
        "secrets in the API: {text}"
    );
    assert!(
        text.contains(r#""status":"expired""#) && text.contains(r#""status":"revoked""#),
        "{text}"
    );
    assert!(!gateway.log().contains(&short), "a token reached the log");
}

#[test]
fn profiles_narrow_the_surface_and_pin_tokens() {
    let gateway = Gateway::start(json!({
        "mcpServers": {"a": fixture_server("a", &[]), "b": fixture_server("b", &[])},
        "profiles": [{"name": "only-b", "servers": ["b"]}]
    }));
    gateway.wait_ready();
    let profile = listed(&gateway, "/mcp/p/only-b", None);
    assert!(
        profile.contains(&"b__echo".to_owned()) && !profile.iter().any(|n| n.starts_with("a__")),
        "{profile:?}"
    );
    let pinned = gateway
        .create_token(json!({"name": "pinned", "permissions": "read,write", "profile": "only-b"}));
    let everywhere = listed(&gateway, "/mcp/all", Some(&pinned));
    assert!(
        !everywhere.iter().any(|n| n.starts_with("a__")),
        "{everywhere:?}"
    );
    let refused = call_raw(&gateway, "/mcp/all", Some(&pinned), "a__echo", json!({}));
    assert!(refused.contains("unknown tool"), "{refused}");
    let (status, _) = rpc(&gateway, "/mcp/p/nope", None, "tools/list", json!({}));
    assert_eq!(status, 404);
    // Paths beneath a route are not that route without its profile's narrowing.
    for path in ["/mcp//p/only-b", "/mcp/x", "/mcp/all/p/only-b"] {
        let (status, _) = rpc(&gateway, path, None, "tools/list", json!({}));
        assert_eq!(status, 404, "{path}");
    }
    assert!(
        listed(&gateway, "/mcp/", None).contains(&"a__echo".to_owned()),
        "a trailing slash is the route itself"
    );
}

#[test]
fn host_and_origin_are_checked_and_big_bodies_refused() {
    let gateway = Gateway::start(json!({
        "mcpServers": {"a": fixture_server("a", &[])},
        "trusted_hosts": ["gateway.example"],
        "max_body_bytes": 2048
    }));
    gateway.wait_ready();
    let list =
        |extra: &[(&str, &str)]| rpc_with(&gateway, "/mcp", None, "tools/list", json!({}), extra).0;
    assert_eq!(list(&[("Host", "evil.example:8080")]), 403, "DNS rebinding");
    assert_eq!(list(&[("Origin", "http://evil.example")]), 403);
    assert_eq!(list(&[("Origin", "null")]), 403);
    assert_eq!(list(&[("Origin", "http://localhost:3000")]), 200);
    assert_eq!(list(&[("Host", "gateway.example")]), 200);
    assert_eq!(list(&[("Host", "localhost:1234")]), 200);
    assert_eq!(
        list(&[("Host", "10.1.2.3:8080")]),
        200,
        "an address cannot be rebound (how Prometheus reaches a pod)"
    );
    assert_eq!(
        list(&[("Origin", "http://10.1.2.3:8080")]),
        403,
        "a page served from an address is another site"
    );
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x".repeat(4096)}}).to_string();
    let (status, _) = http_send(gateway.authority(), "POST", "/mcp", &[], &big);
    assert_eq!(status, 413);
    assert_eq!(gateway.get("/healthz").0, 200);
}

#[test]
fn off_loopback_mcp_needs_a_credential_unless_configured_otherwise() {
    let config = json!({"mcpServers": {"a": fixture_server("a", &[])}});
    let gateway = Gateway::start_bound(config.clone(), "0.0.0.0", &[]);
    gateway.wait_ready();
    assert_eq!(rpc(&gateway, "/mcp", None, "tools/list", json!({})).0, 401);
    let token = gateway.create_token(json!({"name": "remote", "permissions": "read"}));
    assert_eq!(
        rpc(&gateway, "/mcp", Some(&token), "tools/list", json!({})).0,
        200
    );
    let key = gateway.api_key();
    assert_eq!(
        rpc(&gateway, "/mcp", Some(&key), "tools/list", json!({})).0,
        200
    );
    // Metrics name every tool: off loopback they take the API key too.
    assert_eq!(gateway.get("/metrics").0, 401);
    let auth = format!("Bearer {key}");
    let (status, _) = http_send(
        gateway.authority(),
        "GET",
        "/metrics",
        &[("Authorization", &auth)],
        "",
    );
    assert_eq!(status, 200);
    drop(gateway);
    let mut open = config;
    open["require_auth"] = json!(false);
    let gateway = Gateway::start_bound(open, "0.0.0.0", &[]);
    gateway.wait_ready();
    assert_eq!(rpc(&gateway, "/mcp", None, "tools/list", json!({})).0, 200);
    assert!(gateway.log().contains("require_auth: false"));
}

#[test]
fn the_cli_manages_a_running_gateway_and_the_database_when_none_runs() {
    let servers = json!({"a": fixture_server("a", &[])});
    // No gateway: the CLI works on the state database directly.
    let offline = tempfile::tempdir().expect("tempdir");
    let config = offline.path().join("c.json");
    let free = format!("127.0.0.1:{}", crate::harness::free_port());
    let data = offline.path().join("data");
    std::fs::write(
        &config,
        json!({"listen": free, "data_dir": data, "mcpServers": servers}).to_string(),
    )
    .expect("write");
    let config = config.display().to_string();
    let (code, token, err) = mcplex(&[
        "token",
        "create",
        "--config",
        &config,
        "--name",
        "ci",
        "--permissions",
        "read",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        token.trim().starts_with("mcplex_") && err.contains("shown once"),
        "{token} {err}"
    );
    let (code, out, err) = mcplex(&["servers", "list", "--config", &config, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(r#""state": "approved""#),
        "the founding config is approved: {out}"
    );
    let (code, out, _) = mcplex(&["servers", "quarantine", "--config", &config, "a"]);
    assert!(code == 0 && out.contains("no gateway running"), "{out}");
    let (code, _, err) = mcplex(&[
        "token",
        "create",
        "--config",
        &config,
        "--name",
        "ci",
        "--permissions",
        "read",
    ]);
    assert!(code != 0 && err.contains("already exists"), "{err}");

    // A running gateway: the CLI goes through its API, and the change applies at once.
    let gateway = Gateway::start(json!({"mcpServers": servers}));
    gateway.wait_ready();
    let cli = gateway.dir.path().join("cli.json");
    std::fs::write(
        &cli,
        json!({"listen": gateway.authority(), "data_dir": gateway.dir.path().join("data"), "mcpServers": servers}).to_string(),
    )
    .expect("write");
    let cli = cli.display().to_string();
    let (code, out, err) = mcplex(&["servers", "quarantine", "--config", &cli, "a"]);
    assert_eq!((code, out.trim()), (0, "server a quarantined"), "{err}");
    assert!(!listed(&gateway, "/mcp", None).contains(&"a__echo".to_owned()));
    let (code, out, _) = mcplex(&["servers", "approve", "--config", &cli, "a"]);
    assert_eq!((code, out.trim()), (0, "server a approved"));
    assert!(listed(&gateway, "/mcp", None).contains(&"a__echo".to_owned()));
    let (code, token, err) = mcplex(&[
        "token",
        "create",
        "--config",
        &cli,
        "--name",
        "live",
        "--permissions",
        "read",
        "--servers",
        "a",
        "--expires",
        "1d",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        listed(&gateway, "/mcp", Some(token.trim())),
        ["describe_tool", "a__echo"]
    );
    let (code, out, _) = mcplex(&["token", "list", "--config", &cli]);
    assert!(
        code == 0 && out.contains("live") && !out.contains(token.trim()),
        "{out}"
    );
    let (code, _, _) = mcplex(&["token", "revoke", "--config", &cli, "live"]);
    assert_eq!(code, 0);
    assert_eq!(
        rpc(
            &gateway,
            "/mcp",
            Some(token.trim()),
            "tools/list",
            json!({})
        )
        .0,
        401
    );
}
