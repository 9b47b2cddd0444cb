//! The dashboard (`/ui`, issue #18) in a real browser: the distribution's headless Chromium
//! driven by Playwright for Python (`tests/py/dashboard.py`), against a real gateway, with the
//! official MCP client as the agent. One gateway and one browser per group of scenarios; each
//! page's screenshot is written to `target/ui-screenshots/` for review. Without a Chromium
//! (`/usr/bin/chromium`, or `MCPLEX_CHROMIUM`) the browser tests say so and pass; `scripts/test.sh`
//! installs it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::{browse, chromium};
use crate::harness::{Gateway, call_raw, eventually, fixture_server, http_send, tools};

/// The one-time login link `mcplex serve` printed.
fn login_link(gateway: &Gateway) -> String {
    let lines = gateway.stdout();
    let line = lines
        .iter()
        .find(|line| line.contains("/ui/login/"))
        .unwrap_or_else(|| panic!("no login link printed: {lines:?}"));
    let start = line.rfind("http://").expect("a URL");
    line[start..].trim().to_owned()
}

/// `q` writes a line holding its secret to stderr before it starts (the tail must redact it).
fn chatty_quarantined_server() -> Value {
    let script = "echo \"q starting with $SECRET_TOKEN\" >&2; exec \"$0\" --name q";
    json!({
        "command": "sh",
        "args": ["-c", script, tools().fixture],
        "env": {"SECRET_TOKEN": "sk-dash-secret-0042"},
        "quarantined": true
    })
}

#[test]
fn an_operator_reviews_servers_and_a_changed_tool_in_the_browser() {
    let Some(browser) = chromium() else { return };
    let gateway = Gateway::start(json!({"mcpServers": {
        "fixture": fixture_server("fixture", &["--rug-pull"]),
        "q": chatty_quarantined_server()
    }}));
    gateway.wait_ready();
    let seen = browse(&gateway, &browser, "review", &login_link(&gateway));
    // The login link works once.
    assert_eq!(seen["link_reused_status"], 403, "{seen}");
    // What needs the operator, each with its action.
    let needs = seen["needs_you"].as_str().unwrap_or_default();
    assert!(
        needs.contains("Server q waits for approval.") && needs.contains("Review q"),
        "{needs}"
    );
    // The last 24 hours as a chart, in words too.
    assert_eq!(seen["trend_bars"], 48, "{seen}");
    assert_eq!(seen["trend_bars_hour"], 12, "{seen}");
    assert!(
        seen["trend_words"]
            .as_str()
            .unwrap_or_default()
            .contains("calls,"),
        "{seen}"
    );
    // Approving a server shows the tools it pins first; nothing is approved until confirmed.
    let preview = seen["approve_preview"].as_str().unwrap_or_default();
    assert!(
        preview.contains("q:echo") && preview.contains("Approve q and its"),
        "{preview}"
    );
    assert_eq!(seen["approved_before_confirm"], 0, "{seen}");
    assert_eq!(seen["tail_in_row"], 1, "{seen}");
    assert_eq!(seen["focus_after_approve"], "server-done", "{seen}");
    assert_eq!(seen["needs_count"], "1", "{seen}");
    assert_eq!(seen["needs_count_label"], "1 thing needs you", "{seen}");
    let asked = seen["quarantine_asked"][0].as_str().unwrap_or_default();
    assert!(asked.starts_with("Quarantine q?"), "{seen}");
    assert_eq!(seen["q_still_approved"], 1, "{seen}");
    // Approving the quarantined server serves its tools to the agent.
    assert_eq!(seen["q_tools_before"], json!([]));
    let after = seen["q_tools_after"].as_array().expect("names");
    assert!(
        after.contains(&json!("q__echo")) && seen["q_rows"].as_u64() >= Some(9),
        "{seen}"
    );
    // A quarantine made outside the page (as the CLI makes it) shows there without a reload.
    assert_eq!(seen["elsewhere_quarantine"], 200, "{seen}");
    assert!(seen["elsewhere_seconds"].as_f64() < Some(5.0), "{seen}");
    // How its process is isolated: sandboxed, under the quarantine policy until approved.
    assert_eq!(seen["isolation_q_word"], "sandboxed", "{seen}");
    let summary = seen["isolation_q_summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("quarantine policy") && summary.contains("no network"),
        "{summary}"
    );
    // Its stderr tail, with the secret redacted.
    let tail = seen["stderr_tail"].as_str().unwrap_or_default();
    assert!(
        tail.contains("q starting with [redacted]") && !tail.contains("sk-dash-secret"),
        "{tail}"
    );
    // The changed tool: withheld, the added text marked, approved by the hash shown, and then
    // the agent's listing carries the new description.
    assert_eq!(seen["listed_before_approval"], false);
    assert!(
        seen["inserted"]
            .as_str()
            .unwrap_or_default()
            .contains("id_rsa"),
        "{seen}"
    );
    let shown = seen["shown_hash"].as_str().unwrap_or_default();
    assert!(
        seen["approved_message"]
            .as_str()
            .unwrap_or_default()
            .contains(shown),
        "{seen}"
    );
    assert!(
        seen["agent_description"]
            .as_str()
            .unwrap_or_default()
            .contains("id_rsa"),
        "{seen}"
    );
    // Search ranks with scores; the best match for "add numbers" is the adder.
    let first = seen["search_first"].as_str().unwrap_or_default();
    assert!(first.contains("fixture__add"), "{first}");
    // The form marks both required fields, says a missing one in words, and calls the tool.
    assert_eq!(seen["required_marks"], 2);
    assert_eq!(seen["missing_field_error"], "a is required.");
    assert!(
        seen["try_result"]
            .as_str()
            .unwrap_or_default()
            .contains("\"sum\": 42"),
        "{seen}"
    );
    assert_eq!(seen["try_outcome"], "Result");
    // The picker narrows as one types; the gateway's refusal is told apart from the tool's
    // error; a slow call is busy (button off, said in words) until it answers.
    assert_eq!(
        seen["try_filtered"],
        json!(["Choose a tool… (1 of 19)", "fixture:slow (fixture__slow)"]),
        "{seen}"
    );
    assert_eq!(
        seen["try_refused"],
        "The gateway refused the call (the tool was not called)"
    );
    assert_eq!(seen["try_busy"], "Calling fixture__slow…");
    assert_eq!(seen["try_busy_button_disabled"], true);
    assert_eq!(seen["try_slow_outcome"], "Result");
    assert_eq!(seen["try_busy_after"], 0);
    // The operator's call is audited without a token.
    let (_, activity) = gateway.api("GET", "/api/v1/activity?tool=fixture:add", "");
    assert_eq!(activity["entries"][0]["token"], Value::Null, "{activity}");
    // The config page shows no secret.
    let config = seen["config_text"].as_str().unwrap_or_default();
    assert!(
        config.contains("SECRET_TOKEN") && !config.contains("sk-dash-secret"),
        "{config}"
    );
    // It says how searches rank, and why without the model.
    assert_eq!(
        seen["search_status"],
        "BM25F alone, without a sentence model: the config turns it off (search_model: false).",
        "{seen}"
    );
    // CSRF: the cookie is HttpOnly and Strict; without the token, from a foreign Origin or with
    // no Origin, a write is refused and changes nothing.
    let csrf = &seen["csrf"];
    assert_eq!(
        csrf["cookie"],
        json!({"httpOnly": true, "sameSite": "Strict", "path": "/"})
    );
    for attempt in ["same_page_without_token", "foreign_origin", "no_origin"] {
        assert_eq!(csrf[attempt], 403, "{attempt}: {csrf}");
    }
    assert_eq!(csrf["q_state_after"], "approved", "{csrf}");
    // The cookie goes to every port of the host: alone it reads nothing, learns no token and
    // ends no session; with the token the page keeps it reads.
    for attempt in ["read_with_cookie_only", "logout_with_cookie_only"] {
        assert_eq!(csrf[attempt], 403, "{attempt}: {csrf}");
    }
    assert_eq!(csrf["session_with_cookie_only"], 401, "{csrf}");
    assert_eq!(csrf["read_with_cookie_and_token"], 200, "{csrf}");
    // Phone width: no page is wider than the screen; no script error on any page.
    assert_eq!(seen["phone_overflow"], json!([]), "{seen}");
    assert_eq!(seen["page_errors"], json!([]), "{seen}");
    assert!(seen["screenshots"].as_array().map(Vec::len) >= Some(15));
}

#[test]
fn tokens_made_on_the_page_work_for_agents_until_revoked_and_calls_show_live() {
    let Some(browser) = chromium() else { return };
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    gateway.wait_ready();
    let seen = browse(&gateway, &browser, "tokens", "");
    assert!(
        seen["wrong_key"]
            .as_str()
            .unwrap_or_default()
            .contains("not this gateway's API key")
    );
    // Keyboard: the skip link first, then the navigation, with a visible outline.
    assert_eq!(seen["keyboard_focus"]["first"], "Skip to content", "{seen}");
    assert_eq!(seen["keyboard_focus"]["outline"], "solid", "{seen}");
    let row = seen["token_row"].as_str().unwrap_or_default();
    assert!(
        row.contains("fixture") && row.contains("read,write") && row.contains("active"),
        "{row}"
    );
    assert_eq!(seen["secret_after_reload"], 0, "the secret is shown once");
    assert_eq!(seen["name_pattern_mismatch"], true, "{seen}");
    let hint = seen["read_hint"].as_str().unwrap_or_default();
    assert!(
        hint.contains("reach 1 of the 9 tools") && hint.contains("count as write"),
        "{hint}"
    );
    // Its own limits, chosen on the form, and its use of them.
    assert_eq!(
        seen["token_limits"], "own: 50 a minute; write: 5 a minute",
        "{seen}"
    );
    assert_eq!(seen["token_usage"], "1 call, 0 in flight", "{seen}");
    assert_eq!(seen["token_name_lines"], 1, "{seen}");
    assert_eq!(
        seen["limit_after_create"], "",
        "the next token starts without limits"
    );
    assert_eq!(seen["agent_call"]["result"]["isError"], false, "{seen}");
    assert_eq!(seen["before_revoke_http"]["status"], 200, "{seen}");
    assert!(seen["activity_seconds"].as_f64() < Some(2.0), "{seen}");
    let filtered = seen["filtered_rows"].as_array().expect("rows");
    assert!(
        !filtered.is_empty()
            && filtered
                .iter()
                .all(|r| r.as_str().unwrap_or_default().contains("agent-1"))
    );
    // The export downloads what the filters select, oldest first, as the CLI writes it.
    assert_eq!(
        seen["export_href"], "/api/v1/activity/export?token=agent-1&format=csv",
        "{seen}"
    );
    let exported = seen["export_csv"].as_str().unwrap_or_default();
    let lines: Vec<&str> = exported.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        lines.len() >= 2
            && lines[0].starts_with("at,at_ms,request_id,token,")
            && lines[1..].iter().all(|l| l.contains(",agent-1,")),
        "{exported}"
    );
    assert_ne!(seen["after_revoke"]["agent_exit"], 0, "{seen}");
    assert_eq!(seen["after_revoke"]["http"]["status"], 401, "{seen}");
    // A logout the store refused: the page says where the session may still hold.
    let refused = seen["refused_logout"].as_str().unwrap_or_default();
    assert!(
        refused.starts_with("Logged out here, but: ")
            && refused.contains("other gateways of the store may until it ends"),
        "{refused}"
    );
}

#[test]
fn the_dashboard_answers_with_a_strict_policy_and_its_api_needs_a_login() {
    let gateway =
        Gateway::start(json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}}));
    let (status, page) = http_send(gateway.authority(), "GET", "/ui/", &[], "");
    assert_eq!(status, 200);
    assert!(
        page.contains("<script type=\"module\" src=\"/ui/app.js\">") && !page.contains("<script>")
    );
    let head = crate::http::exchange(
        gateway.authority(),
        crate::http::Version::Http11,
        "GET",
        "/ui/app.js",
        &[],
        "",
    );
    let header = |name: &str| head.header(name).unwrap_or_default().to_owned();
    assert!(header("content-security-policy").contains("script-src 'self'"));
    assert!(!header("content-security-policy").contains("unsafe-inline"));
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(header("referrer-policy"), "no-referrer");
    // Without a session the page's API answers 401, a made-up cookie included; a foreign Host is
    // refused before anything else.
    let (status, _) = http_send(gateway.authority(), "GET", "/ui/session", &[], "");
    assert_eq!(status, 401);
    let (status, _) = http_send(
        gateway.authority(),
        "GET",
        "/api/v1/servers",
        &[("Cookie", "mcplex_ui=made-up")],
        "",
    );
    assert_eq!(status, 401);
    let (status, _) = http_send(
        gateway.authority(),
        "GET",
        "/ui/",
        &[("Host", "evil.example")],
        "",
    );
    assert_eq!(status, 403);
    // A login with the key from a page, and one without an Origin.
    let body = json!({"key": gateway.api_key()}).to_string();
    let origin = format!("http://{}", gateway.authority());
    let (status, _) = http_send(
        gateway.authority(),
        "POST",
        "/ui/login",
        &[("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(status, 403, "a login needs an Origin");
    let (status, _) = http_send(
        gateway.authority(),
        "POST",
        "/ui/login",
        &[
            ("Content-Type", "application/json"),
            ("Origin", "http://evil.example"),
        ],
        &body,
    );
    assert_eq!(status, 403, "a foreign Origin is refused");
    let (status, answer) = http_send(
        gateway.authority(),
        "POST",
        "/ui/login",
        &[("Content-Type", "application/json"), ("Origin", &origin)],
        &body,
    );
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.contains(&gateway.api_key()));
}

/// Logs in to the dashboard with the API key, from the gateway's own page, with `headers` added:
/// the session cookie's `Set-Cookie`, and the CSRF token the page keeps.
fn log_in(gateway: &Gateway, headers: &[(&str, &str)]) -> (String, String) {
    let origin = format!("http://{}", gateway.authority());
    let mut sent = vec![
        ("Content-Type", "application/json"),
        ("Origin", origin.as_str()),
    ];
    sent.extend_from_slice(headers);
    let login = crate::http::exchange(
        gateway.authority(),
        crate::http::Version::Http11,
        "POST",
        "/ui/login",
        &sent,
        &json!({"key": gateway.api_key()}).to_string(),
    );
    let answer: Value = serde_json::from_str(&login.body).unwrap_or_default();
    (
        login.header("set-cookie").unwrap_or_default().to_owned(),
        answer["csrf"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The status of `GET /api/v1/servers` with the session `cookie` (`name=value`) and its token.
fn servers_status(gateway: &Gateway, cookie: &str, csrf: &str) -> u16 {
    http_send(
        gateway.authority(),
        "GET",
        "/api/v1/servers",
        &[("Cookie", cookie), ("X-CSRF-Token", csrf)],
        "",
    )
    .0
}

/// A dashboard session opened on one gateway holds on every gateway of the same store (behind a
/// load balancer the page's requests reach any replica) and after a restart; logging out ends it.
#[test]
fn a_session_holds_on_every_replica_of_the_store_until_a_logout_on_any() {
    let config = json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}});
    let mut first = Gateway::start(config.clone());
    let data_dir = first.data_dir().display().to_string();
    let mut replica = Gateway::start_with(config, &["--data-dir", &data_dir]);
    let (set_cookie, csrf) = log_in(&first, &[]);
    let cookie = set_cookie.split(';').next().unwrap_or_default().to_owned();
    assert!(cookie.starts_with("mcplex_ui="), "{set_cookie}");
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"));
    assert!(!set_cookie.contains("Secure"), "plain HTTP: {set_cookie}");
    let (secure, _) = log_in(&first, &[("X-Forwarded-Proto", "https")]);
    assert!(
        secure.contains("; Max-Age=28800") && secure.ends_with("; Secure"),
        "behind a proxy that ends TLS: {secure}"
    );
    let servers = |gateway: &Gateway| servers_status(gateway, &cookie, &csrf);
    assert_eq!(servers(&first), 200);
    assert_eq!(servers(&replica), 200, "the replica takes the session");
    first.restart();
    assert_eq!(servers(&first), 200, "a restart keeps it");
    let (status, _) = http_send(
        first.authority(),
        "POST",
        "/ui/logout",
        &[
            ("Cookie", &cookie),
            ("Origin", &format!("http://{}", first.authority())),
            ("X-CSRF-Token", &csrf),
        ],
        "",
    );
    assert_eq!(status, 204);
    assert_eq!(servers(&first), 401, "logged out");
    // The control plane's promise: a write is in force on every replica within a second.
    eventually(
        "the replica to refuse the logged-out session",
        Duration::from_secs(1),
        || (servers(&replica) == 401).then_some(()),
    );
    replica.restart();
    assert_eq!(
        servers(&replica),
        401,
        "a restart reads the logout from the store"
    );
}

#[test]
fn the_pages_search_ranks_and_scores_exactly_as_retrieve_tools() {
    let gateway = Gateway::start(json!({"mcpServers": {
        "a": fixture_server("a", &[]),
        "b": fixture_server("b", &[])
    }}));
    gateway.wait_ready();
    for query in ["add numbers", "process id", "tool list changed", "weather"] {
        let body = json!({"query": query, "limit": 6}).to_string();
        let (status, page) = gateway.api("POST", "/api/v1/search", &body);
        assert_eq!(status, 200, "{page}");
        let answer = call_raw(
            &gateway,
            "/mcp/call",
            None,
            "retrieve_tools",
            json!({"query": query, "limit": 6}),
        );
        let answer: Value = serde_json::from_str(&answer).expect("json");
        let agent = &answer["result"]["structuredContent"];
        let ranked = |tools: &Value| -> Vec<(String, f64)> {
            tools
                .as_array()
                .map(|all| {
                    all.iter()
                        .map(|t| {
                            (
                                t["id"].as_str().unwrap_or_default().to_owned(),
                                t["score"].as_f64().unwrap_or(-1.0),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        assert_eq!(
            ranked(&page["tools"]),
            ranked(&agent["tools"]),
            "{query}: {page} vs {agent}"
        );
        assert_eq!(page["total"], agent["total"], "{query}");
    }
}

/// A logout the store refuses still ends the session on the gateway that took it, answers 503
/// saying that other gateways may still take the session, and is written once the store takes
/// writes again: then a gateway that starts afresh refuses the session too.
#[test]
fn a_logout_the_store_refuses_ends_the_session_here_and_is_saved_once_the_store_takes_it() {
    let config = json!({"mcpServers": {"fixture": fixture_server("fixture", &[])}});
    let mut gateway = Gateway::start(config);
    let origin = format!("http://{}", gateway.authority());
    let (set_cookie, csrf) = log_in(&gateway, &[]);
    let cookie = set_cookie.split(';').next().unwrap_or_default().to_owned();
    assert!(cookie.starts_with("mcplex_ui="), "{set_cookie}");
    let servers = |gateway: &Gateway| servers_status(gateway, &cookie, &csrf);
    assert_eq!(servers(&gateway), 200);

    // The store keeps reading but refuses every logout: no row passes the table's CHECK.
    let store = rusqlite::Connection::open(gateway.data_dir().join("state.db")).expect("store");
    let schema = |refusing: bool| {
        let check = if refusing { " CHECK (ends_at < 0)" } else { "" };
        store
            .execute_batch(&format!(
                "BEGIN; DROP TABLE dashboard_logouts; \
                 CREATE TABLE dashboard_logouts (session TEXT PRIMARY KEY, ends_at BIGINT NOT NULL{check}); \
                 COMMIT;"
            ))
            .expect("the logouts table rebuilt");
    };
    schema(true);
    let (status, body) = http_send(
        gateway.authority(),
        "POST",
        "/ui/logout",
        &[
            ("Cookie", &cookie),
            ("Origin", &origin),
            ("X-CSRF-Token", &csrf),
        ],
        "",
    );
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("other gateways of the store may"),
        "the answer says where the session still holds: {body}"
    );
    assert_eq!(servers(&gateway), 401, "this gateway refuses it at once");

    // The store takes writes again; the next change it announces makes the gateway write the
    // logout it kept.
    schema(false);
    gateway.create_token(json!({"name": "nudge", "permissions": "read"}));
    eventually(
        "the kept logout to reach the store",
        Duration::from_secs(20),
        || {
            let saved: i64 = store
                .query_row("SELECT count(*) FROM dashboard_logouts", [], |row| {
                    row.get(0)
                })
                .ok()?;
            (saved == 1).then_some(())
        },
    );
    gateway.restart();
    assert_eq!(
        servers(&gateway),
        401,
        "a restart reads the logout from the store"
    );
}
