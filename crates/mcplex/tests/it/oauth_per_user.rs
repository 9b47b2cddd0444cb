//! Each caller's own upstream login (`"oauth": {"per_user": true}`, #31), against the official
//! Python SDK's auth server with our provider and the official Python SDK as the agents'
//! client: the operator's login lists the tools; an agent without a login of its own gets a
//! tool error carrying the link that connects it (a URL elicitation, for a client that declared
//! them); following the link (the provider approves
//! without a person) after its page says whom it connects and its form is posted, connects that agent only, whose calls then carry its own token, never the
//! gateway's nor another agent's; a second agent still gets a link; its token is refreshed when
//! it expires; the operator revokes one agent's login and its next call asks again; a link
//! signed for one agent opens for no other.

use std::time::Duration;

use serde_json::{Value, json};

use crate::hardening_connect::{Browser, onward};
use crate::harness::{Gateway, python_client};
use crate::http::Reply;
use crate::oauth_rig::{
    connected, get_url, mcplex_on, operator_logs_in, python_oauth_server, stats, tokens_seen,
    whoami,
};

/// The link a refused call carries, checked to be the not-connected tool error.
fn connect_url(result: &Value, caller: &str) -> String {
    assert_eq!(result["isError"], json!(true), "{result}");
    let body = &result["structuredContent"];
    assert_eq!(body["error_type"], "not_connected", "{result}");
    assert_eq!(body["caller"], caller, "{result}");
    body["connect_url"]
        .as_str()
        .expect("a connect_url")
        .to_owned()
}

/// Follows a connect link as a browser would: its page (what it does, for whom), its form
/// (posted from the page, with the page's token), then the page after it on through the
/// authorization server to the gateway's callback, in the same browser (`same_browser`) or in
/// another one (a URL of the flow passed on: no cookie of the begin).
fn connect(gateway: &Gateway, link: &str, caller: &str, same_browser: bool) -> Reply {
    let mut browser = Browser::new(gateway);
    let page = browser.send("GET", link, &[], "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains(caller) && page.body.contains("Continue only if"),
        "{}",
        page.body
    );
    let begun = browser.submit(&page, None);
    assert_eq!(begun.status, 200, "{}", begun.body);
    assert!(browser.cookie("mcplex_connect").is_some(), "{}", begun.head);
    let next = onward(&begun.body);
    let mut finishing = if same_browser {
        browser
    } else {
        Browser::new(gateway)
    };
    finishing.follow(&next).0
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn each_agent_connects_its_own_account_and_never_gets_another_s() {
    let (_server, port) = python_oauth_server(&[("ACCESS_TTL", "4")]);
    let gateway = Gateway::start(json!({"mcpServers": {
        "py": {"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": {"per_user": true}},
    }}));
    // The operator's login is the gateway's own: it lists the tools (and serves the operator).
    operator_logs_in(&gateway, "py");
    let operator_tokens = tokens_seen(port);
    let permissions = "read,write,destructive";
    let a = gateway.create_token(json!({"name": "agent-a", "permissions": permissions}));
    let b = gateway.create_token(json!({"name": "agent-b", "permissions": permissions}));

    // Agent A has no login of its own: a tool error with the link, nothing sent upstream.
    let refused = whoami(&gateway, &a);
    let link = connect_url(&refused, "agent-a");
    assert!(
        link.starts_with(&format!("http://{}/ui/connect/", gateway.authority())),
        "{link}"
    );
    assert!(text(&refused).contains("open http://"), "{refused}");
    assert_eq!(tokens_seen(port), operator_tokens, "nothing went upstream");
    // A client that declared URL elicitation gets the link as one (the protocol's -32042), in
    // both eras; the session era's carries an elicitationId.
    for (mode, with_id) in [("legacy", true), ("2026-07-28", false)] {
        let out = python_client(
            &["--url", &gateway.url, "--token", &a, "--answer"],
            mode,
            "call",
            &["py__whoami", "{}"],
        );
        let error = &out["error"];
        assert_eq!(error["code"], -32042, "{mode}: {out}");
        let elicitation = &error["data"]["elicitations"][0];
        assert_eq!(elicitation["mode"], "url", "{mode}: {out}");
        assert!(
            elicitation["url"]
                .as_str()
                .is_some_and(|url| url.contains("/ui/connect/")),
            "{mode}: {out}"
        );
        assert_eq!(
            elicitation["elicitationId"].is_string(),
            with_id,
            "{mode}: {out}"
        );
    }

    // Following it as a browser: the authorization server, then the gateway's callback.
    // The flow's URLs opened in another browser (no cookie of the begin): refused at the end.
    let elsewhere = connect(&gateway, &link, "agent-a", false);
    assert_eq!(elsewhere.status, 403, "{}", elsewhere.body);
    assert!(
        elsewhere.body.contains("begun in another browser"),
        "{}",
        elsewhere.body
    );
    let page = connect(&gateway, &link, "agent-a", true);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Connected: agent-a"), "{}", page.body);
    let answered = whoami(&gateway, &a);
    assert_eq!(text(&answered), "authorized", "{answered}");
    let a_tokens: Vec<String> = tokens_seen(port)
        .into_iter()
        .filter(|t| !operator_tokens.contains(t))
        .collect();
    assert!(!a_tokens.is_empty(), "agent A's own token went upstream");
    assert_eq!(connected(&gateway, "py"), ["agent-a"]);
    // Connected: the link cannot put another account in place of A's.
    let again = connect(&gateway, &link, "agent-a", true);
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(
        again.body.contains("connected to py already"),
        "{}",
        again.body
    );

    // Agent B still gets a link of its own, and nothing of A's goes out for it.
    let seen_before_b = tokens_seen(port).len();
    let b_link = connect_url(&whoami(&gateway, &b), "agent-b");
    assert_ne!(b_link, link);
    assert_eq!(
        tokens_seen(port).len(),
        seen_before_b,
        "B's call never left"
    );
    // A's link names A, whoever follows it: B cannot use it to reach A's login, and a link
    // with B's name under A's signature does not open.
    let (payload, mac) = link
        .rsplit('/')
        .next()
        .and_then(|l| l.split_once('.'))
        .expect("payload.mac");
    let (b_payload, _) = b_link
        .rsplit('/')
        .next()
        .and_then(|l| l.split_once('.'))
        .expect("payload.mac");
    assert_ne!(payload, b_payload);
    let forged = format!(
        "http://{}/ui/connect/{b_payload}.{mac}",
        gateway.authority()
    );
    let refused_link = get_url(&forged);
    assert_eq!(refused_link.status, 400, "{}", refused_link.body);

    // B connects its own account: its calls carry a token that is neither A's nor the
    // operator's.
    let page = connect(&gateway, &b_link, "agent-b", true);
    assert!(page.body.contains("Connected: agent-b"), "{}", page.body);
    let before_b = tokens_seen(port);
    assert_eq!(text(&whoami(&gateway, &b)), "authorized");
    let b_tokens: Vec<String> = tokens_seen(port)
        .into_iter()
        .filter(|t| !before_b.contains(t))
        .collect();
    assert!(!b_tokens.is_empty(), "B's own token went upstream");
    for token in &b_tokens {
        assert!(!a_tokens.contains(token) && !operator_tokens.contains(token));
    }
    // The operator sees who is connected.
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    let callers: Vec<&str> = servers["servers"][0]["connected"]
        .as_array()
        .expect("connected callers")
        .iter()
        .filter_map(|c| c["caller"].as_str())
        .collect();
    assert_eq!(callers, ["agent-a", "agent-b"], "{servers:#}");
    // So does the server's page, which asks the store for that server's logins alone.
    let (_, page) = gateway.api("GET", "/api/v1/servers/py", "");
    assert_eq!(
        page["server"]["connected"], servers["servers"][0]["connected"],
        "{page:#}"
    );
    // B disconnects itself with its own token; its next call asks again.
    let (status, body) = crate::http::http_send(
        gateway.authority(),
        "DELETE",
        "/api/v1/connections/py",
        &[("Authorization", &format!("Bearer {b}"))],
        "",
    );
    assert_eq!(status, 200, "{body}");
    crate::harness::eventually("B's login gone", Duration::from_secs(10), || {
        let result = whoami(&gateway, &b);
        (result["structuredContent"]["error_type"] == "not_connected").then_some(())
    });
    // A change like any other: a row of the audit log, in B's name.
    let rows = crate::harness::eventually(
        "B's disconnection in the audit log",
        Duration::from_secs(10),
        || {
            let (_, answer) = gateway.api("GET", "/api/v1/activity?token=agent-b", "");
            answer["entries"].as_array().cloned().filter(|rows| {
                rows.iter()
                    .any(|row| row["tool"] == "/api/v1/connections/py")
            })
        },
    );
    let row = rows
        .iter()
        .find(|row| row["tool"] == "/api/v1/connections/py")
        .expect("the row");
    assert_eq!(row["method"], "api DELETE", "{row}");
    assert_eq!(row["status"], "ok", "{row}");

    // A's token expires (4 s): the next call refreshes A's own login.
    let refreshes = stats(port)["refreshes"].as_u64().unwrap_or(0);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(text(&whoami(&gateway, &a)), "authorized");
    assert!(
        stats(port)["refreshes"].as_u64().unwrap_or(0) > refreshes,
        "{}",
        stats(port)
    );

    // The operator revokes A's login: A's next call asks it to connect again.
    let revoked = mcplex_on(&gateway, &["auth", "logout", "py", "--caller", "agent-a"])
        .output()
        .expect("auth logout --caller");
    assert!(revoked.status.success(), "{revoked:?}");
    assert!(connected(&gateway, "py").is_empty());
    let (status, _) = gateway.api("DELETE", "/api/v1/servers/py/logins/agent-a", "");
    assert_eq!(status, 404, "already revoked");
    crate::harness::eventually("A's login gone", Duration::from_secs(10), || {
        let result = whoami(&gateway, &a);
        (result["structuredContent"]["error_type"] == "not_connected").then_some(())
    });
    // The operator's own login was never touched.
    assert!(
        crate::harness::call_raw(&gateway, "/mcp", None, "py__whoami", json!({}))
            .contains("authorized")
    );
}
