//! mcplex as an OAuth client of its upstreams (#17), against real parts: the official
//! TypeScript SDK's example server with its demo OAuth provider (discovery → registration →
//! PKCE → login → a call through mcplex), and the official Python SDK's auth server with our
//! provider (short-lived tokens, rotating refresh tokens, client credentials). Servers without a
//! login are `needs_login` and the others keep working; a refused refresh is `needs_login`; no
//! token or client secret appears in logs, API answers or `servers list`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Gateway, call_raw, eventually, fixture_server, rpc};
use crate::oauth_rig::{
    Login, api_status, control, failed_login, get_url, log_in, mcplex_on, python_oauth_server,
    stats, tokens_seen, typescript_oauth_server, wait_status,
};

/// A call's first text, or the whole answer.
fn call_text(gateway: &Gateway, tool: &str, arguments: Value) -> String {
    let answer: Value =
        serde_json::from_str(&call_raw(gateway, "/mcp", None, tool, arguments)).expect("JSON");
    answer["result"]["content"][0]["text"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| answer.to_string())
}

/// Every place a secret could leak to: the log, the API's servers and status, `servers list`,
/// `auth status`, `/readyz`.
fn everything_shown(gateway: &Gateway) -> String {
    let (_, servers) = gateway.api("GET", "/api/v1/servers", "");
    let (_, ready) = gateway.get("/readyz");
    let list = mcplex_on(gateway, &["servers", "list"])
        .output()
        .expect("servers list");
    let status = mcplex_on(gateway, &["auth", "status", "--json"])
        .output()
        .expect("auth status");
    format!(
        "{}\n{servers}\n{ready}\n{}\n{}\n{}",
        gateway.log(),
        String::from_utf8_lossy(&list.stdout),
        String::from_utf8_lossy(&status.stdout),
        String::from_utf8_lossy(&status.stderr),
    )
}

fn assert_no_secret(gateway: &Gateway, secrets: &[String]) {
    let shown = everything_shown(gateway);
    for secret in secrets.iter().filter(|s| s.len() >= 8) {
        assert!(
            !shown.contains(secret.as_str()),
            "a secret is shown:\n{shown}"
        );
    }
}

#[test]
fn a_login_through_the_typescript_demo_lets_its_tools_through_and_others_never_wait() {
    let (_server, port) = typescript_oauth_server();
    let gateway = Gateway::start(json!({"mcpServers": {
        "demo": {"url": format!("http://localhost:{port}/mcp"), "oauth": {}},
        "fixture": fixture_server("fixture", &[]),
    }}));
    let status = wait_status(&gateway, "demo", "needs_login");
    assert!(status.contains("mcplex auth login demo"), "{status}");
    // Isolation: the other server is served meanwhile, the OAuth one's tools are not.
    wait_status(&gateway, "fixture", "ready");
    assert!(call_text(&gateway, "fixture__echo", json!({"text": "Paris"})).contains("Paris"));
    let (_, ready) = gateway.get("/readyz");
    assert!(ready.contains("needs_login"), "{ready}");
    let listed = mcplex_on(&gateway, &["servers", "list"])
        .output()
        .expect("servers list");
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("needs_login"),
        "{listed:?}"
    );
    let not_served = call_raw(&gateway, "/mcp", None, "demo__greet", json!({"name": "x"}));
    assert!(!not_served.contains("Hello"), "{not_served}");
    log_in(&gateway, "demo");
    // The running gateway picks the login up from the store and connects.
    wait_status(&gateway, "demo", "ready");
    eventually("the demo's tools", Duration::from_secs(30), || {
        let text = call_text(&gateway, "demo__greet", json!({"name": "mcplex"}));
        text.contains("Hello, mcplex!").then_some(())
    });
    let log = gateway.log();
    assert_eq!(
        log.matches("upstream needs an OAuth login").count(),
        1,
        "one clear line:\n{log}"
    );
    let status = mcplex_on(&gateway, &["auth", "status", "--json"])
        .output()
        .expect("auth status");
    let rows: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(rows[0]["server"], "demo");
    assert_eq!(rows[0]["status"], "logged_in");
    // A logout ends the running connection at once, with no request needed to notice.
    let logout = mcplex_on(&gateway, &["auth", "logout", "demo"])
        .output()
        .expect("logout");
    assert!(logout.status.success(), "{logout:?}");
    wait_status(&gateway, "demo", "needs_login");
    assert!(call_text(&gateway, "fixture__echo", json!({"text": "still"})).contains("still"));
}

fn python_gateway(port: u16, oauth: Value) -> Gateway {
    Gateway::start(json!({"mcpServers": {
        "py": {"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": oauth},
        "fixture": fixture_server("fixture", &[]),
    }}))
}

#[test]
fn client_credentials_need_no_person_and_no_secret_is_shown() {
    let secret = "cc-secret-4c7e9a1b2d";
    let (_server, port) = python_oauth_server(&[
        ("CC_CLIENT_ID", "machine"),
        ("CC_CLIENT_SECRET", secret),
        ("ACCESS_TTL", "3"),
    ]);
    let gateway = python_gateway(
        port,
        json!({"grant": "client_credentials", "client_id": "machine", "client_secret": secret}),
    );
    wait_status(&gateway, "py", "ready");
    assert_eq!(call_text(&gateway, "py__whoami", json!({})), "authorized");
    // The token lives 3 s: a later call gets a fresh one, still without a person.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(call_text(&gateway, "py__whoami", json!({})), "authorized");
    assert!(
        stats(port)["client_credentials"].as_u64() >= Some(2),
        "{}",
        stats(port)
    );
    let mut secrets = tokens_seen(port);
    secrets.push(secret.to_owned());
    assert_no_secret(&gateway, &secrets);
}

#[test]
fn expiry_refreshes_rotated_tokens_and_a_refused_refresh_needs_a_login() {
    let (_server, port) = python_oauth_server(&[("ACCESS_TTL", "4")]);
    let gateway = python_gateway(port, json!({}));
    wait_status(&gateway, "py", "needs_login");
    log_in(&gateway, "py");
    wait_status(&gateway, "py", "ready");
    assert_eq!(call_text(&gateway, "py__whoami", json!({})), "authorized");
    // Two expiries: the second refresh works only with the refresh token the first one rotated.
    for refreshes in 1..=2 {
        std::thread::sleep(Duration::from_secs(4));
        assert_eq!(call_text(&gateway, "py__whoami", json!({})), "authorized");
        assert!(
            stats(port)["refreshes"].as_u64() >= Some(refreshes),
            "{}",
            stats(port)
        );
    }
    // A token the server stops accepting before it expires: one renewal on the 401.
    control(port, "/test/expire");
    assert_eq!(call_text(&gateway, "py__whoami", json!({})), "authorized");
    // Every grant revoked: the refresh is refused (invalid_grant) and a person must log in.
    control(port, "/test/revoke");
    let _ = call_raw(&gateway, "/mcp", None, "py__whoami", json!({}));
    let status = wait_status(&gateway, "py", "needs_login");
    assert!(
        status.contains("invalid_grant") && status.contains("mcplex auth login py"),
        "{status}"
    );
    assert!(call_text(&gateway, "fixture__echo", json!({"text": "Oslo"})).contains("Oslo"));
    assert_no_secret(&gateway, &tokens_seen(port));
}

#[test]
fn the_caller_s_credential_is_never_passed_upstream() {
    let (_server, port) = python_oauth_server(&[]);
    let gateway = python_gateway(port, json!({}));
    log_in(&gateway, "py");
    wait_status(&gateway, "py", "ready");
    let token =
        gateway.create_token(json!({"name": "agent", "permissions": "read,write,destructive"}));
    let (status, answer) = rpc(
        &gateway,
        "/mcp",
        Some(&token),
        "tools/call",
        json!({"name": "py__whoami", "arguments": {}}),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("authorized"), "{answer}");
    // A one-shot command uses the stored login too.
    let called = mcplex_on(&gateway, &["call", "py:whoami"])
        .output()
        .expect("mcplex call");
    assert!(
        String::from_utf8_lossy(&called.stdout).contains("authorized"),
        "{called:?}"
    );
    let seen = tokens_seen(port);
    assert!(!seen.is_empty());
    for bearer in &seen {
        assert_ne!(bearer, &token);
        assert_ne!(bearer, &gateway.api_key());
    }
}

#[test]
fn a_callback_with_another_state_is_refused_and_the_login_goes_on() {
    let (_server, port) = python_oauth_server(&[]);
    let gateway = python_gateway(port, json!({}));
    let login = Login::start(&gateway, "py");
    let forged = format!("{}?code=stolen&state=not-this-login", login.redirect_uri());
    let refused = get_url(&forged);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("state"), "{}", refused.body);
    let (code, stderr) = login.complete();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stats(port)["codes"], 1);
    wait_status(&gateway, "py", "ready");
}

#[test]
fn logins_that_cannot_start_say_why() {
    let (_broken, broken) = python_oauth_server(&[("BROKEN_METADATA", "1")]);
    let (_closed, closed) = python_oauth_server(&[("REFUSE_REGISTRATION", "1")]);
    let (_plain, plain) = crate::harness::conformance_fixture_http();
    let down = crate::harness::free_port();
    let gateway = Gateway::start(json!({"mcpServers": {
        "broken": {"url": format!("http://127.0.0.1:{broken}/mcp"), "oauth": {}},
        "closed": {"url": format!("http://127.0.0.1:{closed}/mcp"), "oauth": {}},
        "plain": {"url": format!("http://127.0.0.1:{plain}/mcp"), "oauth": {}},
        "down": {"url": format!("http://127.0.0.1:{down}/mcp"), "oauth": {}},
    }}));
    let cases = [
        ("broken", "malformed"),
        ("closed", "client registration refused"),
        ("plain", "no protected resource metadata"),
        ("down", "unreachable"),
    ];
    for (server, reason) in cases {
        let stderr = failed_login(&gateway, server);
        assert!(stderr.contains(reason), "{server}: {stderr}");
    }
    // The gateway itself keeps serving: none of them crashed anything.
    let (status, _) = gateway.get("/healthz");
    assert_eq!(status, 200);
}

#[test]
fn a_server_that_asks_for_oauth_needs_a_login_with_no_configuration() {
    // The TypeScript example with no "oauth" key, as in every client's config.
    let (_server, port) = typescript_oauth_server();
    let gateway = Gateway::start(json!({"mcpServers": {
        "demo": {"url": format!("http://localhost:{port}/mcp")},
        "fixture": fixture_server("fixture", &[]),
    }}));
    let status = wait_status(&gateway, "demo", "needs_login");
    assert!(status.contains("mcplex auth login demo"), "{status}");
    wait_status(&gateway, "fixture", "ready");
    assert!(call_text(&gateway, "fixture__echo", json!({"text": "Paris"})).contains("Paris"));
    // Not retried in a loop: it waits for a login, saying so once.
    std::thread::sleep(Duration::from_secs(3));
    let log = gateway.log();
    assert_eq!(
        log.matches("upstream needs an OAuth login").count(),
        1,
        "one clear line:\n{log}"
    );
    assert!(
        !log.lines()
            .any(|l| l.contains("demo") && l.contains("retrying in")),
        "never retried with backoff:\n{log}"
    );
    assert!(api_status(&gateway, "demo").starts_with("needs_login"));
    // `mcplex auth login` discovers what the config does not say, and the gateway connects.
    log_in(&gateway, "demo");
    wait_status(&gateway, "demo", "ready");
    eventually("the demo's tools", Duration::from_secs(30), || {
        let text = call_text(&gateway, "demo__greet", json!({"name": "mcplex"}));
        text.contains("Hello, mcplex!").then_some(())
    });
    let status = mcplex_on(&gateway, &["auth", "status", "--json"])
        .output()
        .expect("auth status");
    let rows: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(rows[0]["server"], "demo", "{rows}");
    assert_eq!(rows[0]["status"], "logged_in", "{rows}");
}

#[test]
fn an_operator_logs_a_server_in_from_the_dashboard_and_the_callback_is_single_use() {
    let (_server, port) = typescript_oauth_server();
    let gateway = Gateway::start(json!({"mcpServers": {
        "demo": {"url": format!("http://localhost:{port}/mcp")},
    }}));
    wait_status(&gateway, "demo", "needs_login");
    // What the dashboard's "Log in" button sends: the browser's origin comes back in the
    // redirect URI, the answer is the URL to open.
    let origin = format!("http://{}", gateway.authority());
    let auth = format!("Bearer {}", gateway.api_key());
    let (status, body) = crate::http::http_send(
        gateway.authority(),
        "POST",
        "/api/v1/servers/demo/login",
        &[("Authorization", &auth), ("Origin", &origin)],
        "",
    );
    assert_eq!(status, 200, "{body}");
    let started: Value = serde_json::from_str(&body).expect("JSON");
    let url = started["url"].as_str().expect("url").to_owned();
    let callback_prefix = format!("{origin}/ui/oauth/callback");
    assert!(
        url::Url::parse(&url)
            .expect("URL")
            .query_pairs()
            .any(|(k, v)| k == "redirect_uri" && v == callback_prefix),
        "{url}"
    );
    // The browser: through the authorization server's redirects to the gateway's callback,
    // which stores the login and sends it back to the dashboard.
    let mut next = url;
    let mut callback = None;
    for _ in 0..6 {
        let reply = get_url(&next);
        let Some(location) = reply
            .header("location")
            .filter(|_| (300..400).contains(&reply.status))
        else {
            assert_eq!(reply.status, 200, "{}", reply.body);
            break;
        };
        next = url::Url::parse(&next)
            .and_then(|base| base.join(location))
            .expect("a redirect URL")
            .to_string();
        if next.starts_with(&callback_prefix) {
            callback = Some(next.clone());
        }
    }
    let callback = callback.expect("the browser reached the gateway's callback");
    wait_status(&gateway, "demo", "ready");
    eventually("the demo's tools", Duration::from_secs(30), || {
        let text = call_text(&gateway, "demo__greet", json!({"name": "dashboard"}));
        text.contains("Hello, dashboard!").then_some(())
    });
    // The same answer again finds no login waiting: a callback is good for one login.
    let replayed = get_url(&callback);
    assert_eq!(replayed.status, 400, "{}", replayed.body);
    assert!(
        replayed.body.contains("No login is waiting"),
        "{}",
        replayed.body
    );
    // A server that is not a URL server has no login to begin.
    let (status, _) = crate::http::http_send(
        gateway.authority(),
        "POST",
        "/api/v1/servers/nope/login",
        &[("Authorization", &auth), ("Origin", &origin)],
        "",
    );
    assert_eq!(status, 404);
}

/// On PostgreSQL the key is never in the database: replicas share logins under the one key
/// `MCPLEX_TOKEN_KEY` gives them, the rows hold no token, and a gateway without the key says
/// what it needs instead of serving the server.
#[test]
fn on_a_postgresql_store_logins_are_sealed_under_the_variable_every_replica_is_given() {
    let Some(store) = crate::store_postgres::postgres_database("mcplex_it_oauth_logins") else {
        return;
    };
    let secret = "cc-secret-pg-5e1d";
    let (_server, port) =
        python_oauth_server(&[("CC_CLIENT_ID", "machine"), ("CC_CLIENT_SECRET", secret)]);
    let config = json!({"mcpServers": {"py": {
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "oauth": {"grant": "client_credentials", "client_id": "machine", "client_secret": secret},
    }}});
    let key = [("MCPLEX_TOKEN_KEY", "5f".repeat(32))];
    let key: Vec<(&str, &str)> = key.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let replicas = [
        Gateway::start_with_env(config.clone(), &["--store", &store], &key),
        Gateway::start_with_env(config.clone(), &["--store", &store], &key),
    ];
    // The API key of a PostgreSQL store is in the store, so the status comes from /readyz.
    let status = |gateway: &Gateway| {
        let (_, body) = gateway.get("/readyz");
        let readiness: Value = serde_json::from_str(&body).expect("readyz JSON");
        readiness["servers"]["py"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for replica in &replicas {
        eventually("py ready", Duration::from_secs(60), || {
            (status(replica) == "ready").then_some(())
        });
        assert_eq!(call_text(replica, "py__whoami", json!({})), "authorized");
    }
    let mut database =
        postgres::Client::connect(&store, postgres::NoTls).expect("the store answers");
    let rows = database
        .query("SELECT sealed FROM oauth_logins WHERE server = 'py'", &[])
        .expect("the logins table");
    assert_eq!(
        rows.len(),
        1,
        "one login per server, whichever replica wrote it"
    );
    let sealed: Vec<u8> = rows[0].get(0);
    let sealed = String::from_utf8_lossy(&sealed);
    for token in tokens_seen(port).iter().chain([&secret.to_owned()]) {
        assert!(!sealed.contains(token.as_str()), "a token in the database");
    }
    let keyless = Gateway::start_with(config, &["--store", &store]);
    eventually("the missing key named", Duration::from_secs(30), || {
        keyless
            .log()
            .contains("need MCPLEX_TOKEN_KEY")
            .then_some(())
    });
    assert_ne!(status(&keyless), "ready");
}

/// A server (or a proxy before it) that echoes the request's Authorization header in an error
/// shows the token nowhere: not in the call's answer, the log, the API or `servers list`.
#[test]
fn an_oauth_token_echoed_in_an_upstream_error_is_redacted() {
    let secret = "cc-secret-echo-93b1";
    let (_server, port) =
        python_oauth_server(&[("CC_CLIENT_ID", "machine"), ("CC_CLIENT_SECRET", secret)]);
    let gateway = python_gateway(
        port,
        json!({"grant": "client_credentials", "client_id": "machine", "client_secret": secret}),
    );
    wait_status(&gateway, "py", "ready");
    assert_eq!(call_text(&gateway, "py__whoami", json!({})), "authorized");
    control(port, "/test/echo");
    let answer = call_raw(&gateway, "/mcp", None, "py__whoami", json!({}));
    assert!(
        answer.contains("502"),
        "the upstream's error reaches the caller: {answer}"
    );
    let tokens = tokens_seen(port);
    assert!(!tokens.is_empty(), "the server saw the bearer tokens");
    for token in &tokens {
        assert!(
            !answer.contains(token.as_str()),
            "a token in the answer: {answer}"
        );
    }
    assert_no_secret(&gateway, &tokens);
}
