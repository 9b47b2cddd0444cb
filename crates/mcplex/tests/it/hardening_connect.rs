//! A caller's own upstream login (#31) cannot be begun or proven in someone else's browser.
//! An agent-token holder who sends a person its connect link's begin URL gets nothing: a GET
//! begins no login (it leads to the page), and the page's form posts only with the token the
//! page gave this browser, from the gateway's own origin. And the issuer's sign-in (the
//! dashboard's, and a connect link's proof) finishes only in the browser that began it: its
//! callback URL, captured and opened in another browser, signs nobody in and proves nothing,
//! while the browser that began it still finishes (real OpenID Connect provider, npm
//! `oidc-provider`, in the distribution's Chromium; the official Python SDK's auth server as
//! the `per_user` upstream).

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{Gateway, tools};
use crate::http::{Reply, Version, exchange};
use crate::oauth_rig::{connected, get_url, operator_logs_in, python_oauth_server, whoami};

/// One browser's cookies for the gateway (every path), as a test client keeps them.
pub(crate) struct Browser {
    origin: String,
    authority: String,
    cookies: Vec<(String, String)>,
}

impl Browser {
    pub(crate) fn new(gateway: &Gateway) -> Browser {
        Browser {
            origin: format!("http://{}", gateway.authority()),
            authority: gateway.authority().to_owned(),
            cookies: Vec::new(),
        }
    }

    /// The value of this browser's cookie `name`.
    pub(crate) fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// One request to `url` (the gateway's, with this browser's cookies and `headers`, else a
    /// plain GET), keeping the cookies the gateway sets.
    pub(crate) fn send(
        &mut self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let Some(path) = url.strip_prefix(&self.origin) else {
            return get_url(url);
        };
        let cookie = self
            .cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let mut all = headers.to_vec();
        if !cookie.is_empty() {
            all.push(("Cookie", &cookie));
        }
        let reply = exchange(&self.authority, Version::Http11, method, path, &all, body);
        for line in reply.head.lines().skip(1) {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            if !name.trim().eq_ignore_ascii_case("set-cookie") {
                continue;
            }
            let Some((name, value)) = value
                .split(';')
                .next()
                .and_then(|p| p.trim().split_once('='))
            else {
                continue;
            };
            self.cookies.retain(|(n, _)| n != name);
            if !value.is_empty() && !line.contains("Max-Age=0") {
                self.cookies.push((name.to_owned(), value.to_owned()));
            }
        }
        reply
    }

    /// GETs `url` and follows its redirects, as a browser would; the last answer and its URL.
    pub(crate) fn follow(&mut self, url: &str) -> (Reply, String) {
        let mut url = url.to_owned();
        for _ in 0..8 {
            let reply = self.send("GET", &url, &[], "");
            match reply.header("location") {
                Some(next) if (300..400).contains(&reply.status) => {
                    url = url::Url::parse(&url)
                        .and_then(|base| base.join(next))
                        .expect("a redirect URL")
                        .to_string();
                }
                _ => return (reply, url),
            }
        }
        panic!("too many redirects to {url}");
    }

    /// Posts the form of a link's `page` (`token` replaces its token), as the page would from
    /// the gateway's own origin.
    pub(crate) fn submit(&mut self, page: &Reply, token: Option<&str>) -> Reply {
        let (action, shown) = form(&page.body);
        let body = format!("token={}", token.unwrap_or(&shown));
        let origin = self.origin.clone();
        let headers = [
            ("Origin", origin.as_str()),
            ("Sec-Fetch-Site", "same-origin"),
        ];
        self.send("POST", &format!("{origin}{action}"), &headers, &body)
    }
}

/// The action and the token of the form on a link's page.
pub(crate) fn form(page: &str) -> (String, String) {
    let attribute = |name: &str| {
        page.split(&format!("{name}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
    };
    let action = attribute("action").expect("the page's form");
    let token = page
        .split("name=\"token\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the form's token");
    (action.to_owned(), token.to_owned())
}

/// Where the page after the form sends the browser on (its "continue" link).
pub(crate) fn onward(page: &str) -> String {
    page.split("id=\"continue\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the continue link")
        .replace("&amp;", "&")
}

#[test]
fn a_begin_url_or_a_form_from_another_browser_starts_no_login() {
    let (_upstream, port) = python_oauth_server(&[]);
    let gateway = Gateway::start(json!({"mcpServers": {
        "py": {"url": format!("http://127.0.0.1:{port}/mcp"), "oauth": {"per_user": true}},
    }}));
    operator_logs_in(&gateway, "py");
    let agent =
        gateway.create_token(json!({"name": "agent-a", "permissions": "read,write,destructive"}));
    let refused = whoami(&gateway, &agent);
    let link = refused["structuredContent"]["connect_url"]
        .as_str()
        .expect("a connect_url")
        .to_owned();

    // The agent's holder sends a person the begin URL: their browser follows it to the end
    // and is shown the page, nothing begun (no login cookie, no authorization server).
    let mut victim = Browser::new(&gateway);
    let (landed, at) = victim.follow(&format!("{link}/begin"));
    assert_eq!(at, link, "{}", landed.body);
    assert_eq!(landed.status, 200, "{}", landed.body);
    assert!(
        landed.body.contains("Continue only if agent-a is yours"),
        "{}",
        landed.body
    );
    assert!(victim.cookie("mcplex_connect").is_none(), "no login began");

    // The form posts only with the token the page gave this browser.
    let mut holder = Browser::new(&gateway);
    let holders_page = holder.send("GET", &link, &[], "");
    let (_, holders_token) = form(&holders_page.body);
    for (what, reply) in [
        (
            "another browser's token",
            victim.submit(&landed, Some(&holders_token)),
        ),
        ("no token", victim.submit(&landed, Some(""))),
        (
            "no page cookie",
            Browser::new(&gateway).submit(&holders_page, None),
        ),
    ] {
        assert_eq!(reply.status, 403, "{what}: {}", reply.body);
        assert!(
            reply.body.contains("only from the link's own page"),
            "{what}: {}",
            reply.body
        );
        assert!(
            reply.header("set-cookie").is_none(),
            "{what}: {}",
            reply.head
        );
    }
    // Nor from another site, with the right token and cookie.
    let (action, token) = form(&holders_page.body);
    let url = format!("http://{}{action}", gateway.authority());
    let body = format!("token={token}");
    for headers in [
        [
            ("Origin", "http://attacker.example"),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        [("Origin", "null"), ("Sec-Fetch-Site", "cross-site")],
        [
            ("Referer", "http://127.0.0.1:1/"),
            ("Sec-Fetch-Site", "same-site"),
        ],
        // A page on another loopback port is the same site (cookies ignore ports), and the
        // edge admits a loopback origin; a browser that sends no Sec-Fetch-Site leaves only the
        // exact origin to refuse it.
        [("Origin", "http://127.0.0.1:1"), ("Accept", "text/html")],
    ] {
        let reply = holder.send("POST", &url, &headers, &body);
        assert_eq!(reply.status, 403, "{headers:?}: {}", reply.body);
        assert!(holder.cookie("mcplex_connect").is_none(), "{headers:?}");
    }
    // Nothing was stored: the agent is not connected.
    assert!(connected(&gateway, "py").is_empty());
    assert_eq!(
        whoami(&gateway, &agent)["structuredContent"]["error_type"],
        "not_connected"
    );
    assert!(
        gateway
            .log()
            .contains("begin from elsewhere than its page in this browser; refused"),
        "{}",
        gateway.log()
    );
}

/// What the browser scenario does (Playwright for Python, the helpers of `tests/py`): a
/// sign-in's callback URL is captured in the browser that began it and opened in a fresh one,
/// for the dashboard and for a connect link's proof; then the first browser finishes each.
const SCENARIO: &str = r##"
import json, sys, urllib.error, urllib.request
from urllib.parse import urljoin
from playwright.sync_api import sync_playwright
from dashboard import DESKTOP
from connect_sign_in import agent_token, call

base, issuer, agent_redirect, tool, chromium = sys.argv[1:6]
callback = f"{base}/ui/oidc/callback"
facts = {}

def captured(browser, start, who):
    """Begins a sign-in at `start` in a browser of its own and signs in as `who`; the provider's
    last answer is taken by that browser's request client, so the callback URL it sends back is
    never loaded. That URL, and the browser's page."""
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(start)
    page.wait_for_selector("input[name=login]")
    page.fill("input[name=login]", who)
    page.fill("input[name=password]", "any password")
    page.get_by_role("button", name="Sign-in").click()
    button = page.get_by_role("button", name="Continue")
    button.wait_for()
    form = page.locator("form", has=button)
    fields = {i.get_attribute("name"): i.get_attribute("value") or ""
              for i in form.locator("input[type=hidden]").all()}
    url = urljoin(page.url, form.get_attribute("action"))
    answer = page.context.request.post(url, form=fields, max_redirects=0)
    for _ in range(5):
        url = urljoin(url, answer.headers["location"])
        if url.startswith(callback):
            return url, page
        answer = page.context.request.get(url, max_redirects=0)
    raise AssertionError(f"the provider never sent {who} back")

def opened(page, url):
    answer = page.goto(url)
    return {"status": answer.status if answer else 0, "url": page.url,
            "body": page.inner_text("body"),
            "cookies": sorted(c["name"] for c in page.context.cookies())}

with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
    try:
        # The dashboard: a sign-in's callback URL opened in another browser signs it in as nobody.
        url, own = captured(browser, f"{base}/ui/oidc/login", "alice")
        facts["dashboard_elsewhere"] = opened(browser.new_context(viewport=DESKTOP).new_page(), url)
        facts["dashboard_own"] = opened(own, url)

        # A connect link's proof: alice's link, its proof's callback opened in another browser.
        token = agent_token(browser, issuer, agent_redirect, f"{base}/mcp")
        _, refused = call(base, token, tool)
        link = refused["structuredContent"]["connect_url"]
        url, own = captured(browser, f"{base}/ui/oidc/prove/{link.rsplit('/', 1)[1]}", "alice")
        facts["proof_elsewhere"] = opened(browser.new_context(viewport=DESKTOP).new_page(), url)
        facts["after_elsewhere"] = call(base, token, tool)[1]

        # The browser that began it is proven, and lands on the link's page, not on a login.
        facts["proven"] = opened(own, url)
        # Its form without the proof (only the page's cookie) begins nothing.
        form = {c["name"]: c["value"] for c in own.context.cookies()}
        shown = own.get_attribute("input[name=token]", "value")
        request = urllib.request.Request(
            f"{link}/begin", data=f"token={shown}".encode(), method="POST",
            headers={"Cookie": f"mcplex_connect_form={form.get('mcplex_connect_form', '')}",
                     "Origin": base,
                     "Content-Type": "application/x-www-form-urlencoded"})
        try:
            answer = urllib.request.urlopen(request, timeout=30)
            facts["unproven_post"] = [answer.status, answer.read().decode()]
        except urllib.error.HTTPError as refusal:
            facts["unproven_post"] = [refusal.code, refusal.read().decode()]
        # The deliberate click connects alice's account.
        own.click("#continue")
        own.wait_for_url(f"{base}/ui/oauth/callback**", timeout=30000)
        facts["connected"] = own.inner_text("body")
        facts["after"] = call(base, token, tool)[1]
    except Exception as failure:  # what was seen so far still goes to the test
        facts["error"] = repr(failure)
    finally:
        browser.close()
print(json.dumps(facts))
"##;

#[test]
fn a_sign_in_s_callback_opened_in_another_browser_signs_in_and_proves_nothing() {
    let Some(browser) = crate::browser::chromium() else {
        return;
    };
    let rig = crate::connect_sign_in::subject_rig();
    let crate::connect_sign_in::SubjectRig {
        gateway,
        issuer,
        agent_redirect,
        ..
    } = &rig;
    let base = format!("http://{}", gateway.authority());
    let output = Command::new(&tools().python)
        .arg("-c")
        .arg(SCENARIO)
        .args([
            base.as_str(),
            issuer.as_str(),
            agent_redirect.as_str(),
            "py__whoami",
        ])
        .arg(&browser)
        .env("PYTHONPATH", tools().repo.join("tests/py"))
        .output()
        .expect("run the browser scenario");
    let Ok(seen) = serde_json::from_slice::<Value>(&output.stdout) else {
        panic!(
            "the scenario failed:\n{}\n--- gateway log ---\n{}",
            String::from_utf8_lossy(&output.stderr),
            gateway.log()
        );
    };
    // The dashboard: refused elsewhere, no session; the browser that began it signs in.
    let elsewhere = refused_elsewhere(&seen, "dashboard_elsewhere");
    assert_eq!(elsewhere["cookies"], json!([]), "{seen:#}");
    let own = &seen["dashboard_own"];
    assert_eq!(own["status"], 200, "{seen:#}");
    assert!(
        own["cookies"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("mcplex_ui"))),
        "{seen:#}"
    );
    // The proof: refused elsewhere, no proof, no login, the caller still not connected.
    let elsewhere = refused_elsewhere(&seen, "proof_elsewhere");
    assert!(
        !elsewhere["cookies"].to_string().contains("mcplex_connect"),
        "{seen:#}"
    );
    assert_eq!(
        seen["after_elsewhere"]["structuredContent"]["error_type"], "not_connected",
        "{seen:#}"
    );
    assert!(seen["error"].is_null(), "{seen:#}\n{}", gateway.log());
    // The browser that began it lands on the link's page, and only its click goes on.
    let proven = &seen["proven"];
    assert_eq!(proven["status"], 200, "{seen:#}");
    assert!(
        !proven["url"]
            .as_str()
            .unwrap_or_default()
            .ends_with("/begin"),
        "{seen:#}"
    );
    let body = proven["body"].as_str().unwrap_or_default();
    assert!(
        body.contains("The issuer says you are alice") && body.contains("Log in to py"),
        "{seen:#}"
    );
    // Refused by the proof, past the form and the origin: the page's own request but for it.
    assert_eq!(seen["unproven_post"][0], 403, "{seen:#}");
    assert!(
        seen["unproven_post"][1]
            .as_str()
            .unwrap_or_default()
            .contains("Only oauth:alice can follow this link"),
        "{seen:#}"
    );
    assert!(
        seen["connected"]
            .as_str()
            .unwrap_or_default()
            .contains("Connected: oauth:alice"),
        "{seen:#}"
    );
    assert_eq!(
        seen["after"]["content"][0]["text"], "authorized",
        "{seen:#}"
    );
    assert!(
        gateway
            .log()
            .contains("another browser than the one that began it; refused")
    );
}

/// The scenario's step `step`, checked to be refused as begun in another browser.
fn refused_elsewhere<'a>(seen: &'a Value, step: &str) -> &'a Value {
    let answer = &seen[step];
    assert_eq!(answer["status"], 403, "{step}: {seen:#}");
    assert!(
        answer["body"]
            .as_str()
            .unwrap_or_default()
            .contains("begun in another browser"),
        "{step}: {seen:#}"
    );
    answer
}
