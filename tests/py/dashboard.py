"""Drives the dashboard (/ui) in headless Chromium (the distribution's package) with Playwright
for Python, for the Rust integration tests in crates/mcplex/tests/it/dashboard.rs. MCP client
steps run the official SDK client (tests/py/mcp_client.py) as an agent would.

Usage: dashboard.py --base http://127.0.0.1:PORT --key KEY --link URL --shots DIR
                    --store STATE_DB [--chromium /usr/bin/chromium] SCENARIO
Scenarios: review (login link, servers, a changed tool, search, try, config, CSRF, phone width)
           tokens (login with the key, tokens, activity live, revoke, a logout the store
           refuses: the scenario makes the gateway's SQLite store refuse it, then mends it),
           media (Try a tool with an image result), server (a server's page) and add (a server
           added from the page; --entry): both in dashboard_server.py.
Prints one JSON object of what it saw on stdout; the Rust test asserts on it. Waits that have a
deadline (a call in Activity within 2 s) fail here, with the reason on stderr.
"""

import argparse
import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

from dashboard_server import log_in_with_key, scenario_add, scenario_server

HERE = os.path.dirname(os.path.abspath(__file__))
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def agent(base, scenario, *args, token=None):
    """The official MCP client against /mcp: (exit code, parsed stdout or None, stderr)."""
    command = [sys.executable, os.path.join(HERE, "mcp_client.py"), "--url", f"{base}/mcp"]
    if token:
        command += ["--token", token]
    command += [scenario, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    try:
        out = json.loads(done.stdout) if done.returncode == 0 else None
    except json.JSONDecodeError:
        out = None
    return done.returncode, out, done.stderr[-2000:]


def listed(base):
    code, out, err = agent(base, "list")
    assert code == 0, err
    return {t["name"]: t for t in out["tools"]}


def raw(base, method, path, headers, body=None):
    """A plain HTTP request (no browser): (status, body text)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def mcp_status(base, token):
    """The HTTP status and error of an initialize on /mcp presenting `token`."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    status, text = raw(base, "POST", "/mcp", {
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"}, body)
    return {"status": status, "error": json.loads(text).get("error") if status != 200 else None}


class Shots:
    def __init__(self, folder, prefix):
        self.folder, self.prefix, self.taken = folder, prefix, []
        os.makedirs(folder, exist_ok=True)

    def take(self, page, name):
        path = os.path.join(self.folder, f"{self.prefix}-{name}.png")
        page.screenshot(path=path, full_page=True)
        self.taken.append(path)


def goto(page, base, hash_):
    page.goto(f"{base}/ui/#/{hash_}")
    page.wait_for_selector("#page-title")


def overflows(page):
    """Whether the page is wider than the viewport (a horizontal scroll bar on the body)."""
    return page.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1")


def scenario_review(opts, browser, shots):
    base, facts = opts.base, {}
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    # The one-time link logs in, once.
    page.goto(opts.link)
    page.wait_for_selector("h1#page-title")
    expect(page.locator("h1#page-title")).to_have_text("Overview")
    expect(page.locator(".cards")).to_contain_text("Needs you")
    expect(page.locator("#needs-you")).to_be_visible()
    facts["needs_you"] = page.inner_text("#needs-you")
    # The navigation counts them, on every page.
    expect(page.locator("#needs-count")).to_be_visible(timeout=10000)
    facts["needs_count"] = page.inner_text("#needs-count")
    facts["needs_count_label"] = page.get_attribute("#needs-count", "aria-label")
    expect(page.locator("svg#trend-calls")).to_be_visible()
    facts["trend_bars"] = page.locator("svg#trend-calls rect.bar").count()
    facts["trend_words"] = page.inner_text("#trend-words")
    shots.take(page, "overview")
    # The last hour instead of the day: twelve buckets of five minutes.
    page.click("#overview-trend-1h")
    expect(page.locator("#overview-trend-1h")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#trend-title")).to_have_text("Last hour")
    facts["trend_bars_hour"] = page.locator("svg#trend-calls rect.bar").count()
    other = browser.new_context()
    again = other.new_page()
    answer = again.goto(opts.link)
    facts["link_reused_status"] = answer.status
    facts["link_reused_text"] = again.inner_text("body")
    other.close()

    # Approve the quarantined server; its tools appear on the page and for the agent.
    facts["q_tools_before"] = sorted(n for n in listed(base) if n.startswith("q__"))
    goto(page, base, "servers")
    page.click("#stderr-q")
    expect(page.locator("pre.tail")).to_contain_text("starting", timeout=10000)
    facts["stderr_tail"] = page.inner_text("pre.tail")
    # The tail opened in q's own row, under its button.
    facts["tail_in_row"] = page.locator("tbody tr", has_text="Hide stderr").locator("pre.tail").count()
    # How each server's process is isolated: q, quarantined, under the quarantine policy.
    facts["isolation_q_word"] = page.inner_text("#iso-q")
    facts["isolation_q_summary"] = page.get_attribute("#iso-q", "title")
    shots.take(page, "servers")
    # Approving shows the tools it will pin and serve first; a second click approves.
    page.click("#approve-q")
    expect(page.locator("#approve-preview")).to_be_visible()
    facts["approve_preview"] = page.inner_text("#approve-preview")
    facts["approved_before_confirm"] = page.locator("#quarantine-q").count()
    shots.take(page, "approve-preview")
    page.click("#confirm-approve-q")
    expect(page.locator("#quarantine-q")).to_be_visible()
    # After the approval the keyboard stays at the answer.
    facts["focus_after_approve"] = page.evaluate("document.activeElement.id")
    # Quarantine asks first; declined, nothing changes.
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#quarantine-q")
    page.wait_for_timeout(300)
    facts["quarantine_asked"] = asked
    facts["q_still_approved"] = page.locator("#quarantine-q").count()
    # With nothing left to decide, the navigation's count goes away.
    expect(page.locator("#needs-count")).to_be_hidden(timeout=10000)
    # A decision made elsewhere (the CLI goes through the same API) shows without a reload.
    bearer = {"Authorization": f"Bearer {opts.key}"}
    facts["elsewhere_quarantine"] = raw(base, "POST", "/api/v1/servers/fixture/quarantine", bearer)[0]
    started = time.monotonic()
    expect(page.locator("#approve-fixture")).to_be_visible(timeout=5000)
    facts["elsewhere_seconds"] = round(time.monotonic() - started, 2)
    raw(base, "POST", "/api/v1/servers/fixture/approve", bearer)
    expect(page.locator("#quarantine-fixture")).to_be_visible(timeout=5000)
    goto(page, base, "tools")
    page.select_option("#filter-server", "q")
    expect(page.locator("table")).to_contain_text("q:echo")
    facts["q_rows"] = page.locator("tbody tr").count()
    facts["q_tools_after"] = sorted(n for n in listed(base) if n.startswith("q__"))

    # A changed tool: the agent's first call pulls the rug; the page shows the diff.
    code, out, err = agent(base, "call", "fixture__weather", json.dumps({"city": "Paris"}))
    assert code == 0, err
    page.select_option("#filter-server", "")
    page.select_option("#filter-state", "changed")
    expect(page.locator("table")).to_contain_text("fixture:weather", timeout=10000)
    shots.take(page, "tools")
    # The Overview names it, one click from its review.
    goto(page, base, "overview")
    expect(page.locator("#needs-you")).to_contain_text("fixture:weather", timeout=10000)
    page.click("#needs-you a[href='#/tools/fixture%3Aweather']")
    expect(page.locator("ins").first).to_be_visible()
    facts["inserted"] = " ".join(page.locator("ins").all_inner_texts())
    facts["deleted"] = " ".join(page.locator("del").all_inner_texts())
    facts["shown_hash"] = page.inner_text("#shown-hash")
    facts["listed_before_approval"] = "fixture__weather" in listed(base)
    shots.take(page, "review")
    page.click("#approve")
    expect(page.locator("#approved")).to_be_visible()
    facts["approved_message"] = page.inner_text("#approved")
    weather = listed(base).get("fixture__weather")
    facts["agent_description"] = weather["description"] if weather else None

    # Search ranks with scores.
    goto(page, base, "search")
    page.fill("#search-query", "add numbers")
    expect(page.locator("tbody tr").first).to_be_visible()
    facts["search_first"] = page.locator("tbody tr").first.inner_text()
    facts["search_rows"] = page.locator("tbody tr").count()
    shots.take(page, "search")

    # Try a tool from the form built from its schema.
    goto(page, base, "try/fixture%3Aadd")
    # The form is built once the tool's schema arrives: count its marks after that.
    expect(page.locator("#arg-b")).to_be_visible()
    facts["required_marks"] = page.locator("#try-form .req[title='required']").count()
    page.click("#try-call")
    expect(page.locator("#try-result .error")).to_be_visible()
    facts["missing_field_error"] = page.inner_text("#try-result")
    page.fill("#arg-a", "2")
    page.fill("#arg-b", "40")
    page.click("#try-call")
    expect(page.locator("#try-result pre").first).to_be_visible()
    facts["try_result"] = page.inner_text("#try-result")
    facts["try_outcome"] = page.inner_text("#try-outcome")
    shots.take(page, "try")
    # Typing narrows the picker to the tools that hold every word typed.
    page.fill("#try-filter", "fixture slo")
    facts["try_filtered"] = page.locator("#try-tool option").all_inner_texts()
    # Arguments the schema refuses (ms must be an integer): the gateway's refusal, not the tool's
    # error; then a slow call shows a busy state until its answer.
    goto(page, base, "try/fixture%3Aslow")
    expect(page.locator("#arg-ms")).to_be_visible()
    page.fill("#arg-ms", "1.5")
    page.click("#try-call")
    expect(page.locator("#try-outcome")).to_be_visible()
    facts["try_refused"] = page.inner_text("#try-outcome")
    page.fill("#arg-ms", "1500")
    page.click("#try-call")
    expect(page.locator("#try-result[aria-busy='true'] #try-busy")).to_be_visible()
    facts["try_busy"] = page.inner_text("#try-busy")
    facts["try_busy_button_disabled"] = page.locator("#try-call").is_disabled()
    expect(page.locator("#try-outcome")).to_be_visible(timeout=20000)
    facts["try_slow_outcome"] = page.inner_text("#try-outcome")
    facts["try_busy_after"] = page.locator("#try-result[aria-busy]").count()

    goto(page, base, "config")
    expect(page.locator("pre.json")).to_be_visible()
    facts["config_text"] = page.inner_text("pre.json")
    facts["search_status"] = page.inner_text("#search-status")
    shots.take(page, "config")

    goto(page, base, "activity")
    expect(page.locator("table")).to_contain_text("fixture:add")
    shots.take(page, "activity")

    facts["csrf"] = csrf_attempts(opts, browser, context)
    facts["phone_overflow"] = phone(browser, context, base, shots)
    facts["page_errors"] = errors
    context.close()
    return facts


def csrf_attempts(opts, browser, context):
    """A write with the cookie but no CSRF token (from a page of another loopback port: the
    same site, so the SameSite cookie goes along), the right token from a foreign Origin, and no
    Origin at all: each refused, and the server stays approved."""
    base, out = opts.base, {}
    cookie = next(c for c in context.cookies() if c["name"] == "mcplex_ui")
    out["cookie"] = {k: cookie[k] for k in ("httpOnly", "sameSite", "path")}
    page = context.new_page()
    page.goto(f"{base}/ui/#/overview")
    page.wait_for_selector("#page-title")
    # The token lives in the page's storage only; the cookie alone reads nothing, not even it.
    csrf = page.evaluate("localStorage.getItem('mcplex_csrf')")
    out["same_page_without_token"] = page.evaluate(
        "fetch('/api/v1/servers/q/quarantine', {method: 'POST'}).then(r => r.status)")

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = (f"<!doctype html><script>fetch('{base}/api/v1/servers/q/quarantine', "
                    "{method: 'POST', credentials: 'include', mode: 'no-cors'})"
                    ".then(() => document.title = 'sent', () => document.title = 'failed')</script>").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    evil = http.server.HTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    page.goto(f"http://127.0.0.1:{evil.server_port}/")
    page.wait_for_function("document.title === 'sent' || document.title === 'failed'")
    evil.shutdown()
    jar = f"mcplex_ui={cookie['value']}"
    out["foreign_origin"] = raw(base, "POST", "/api/v1/servers/q/quarantine",
                                {"Cookie": jar, "X-CSRF-Token": csrf, "Origin": "http://evil.example"})[0]
    out["no_origin"] = raw(base, "POST", "/api/v1/servers/q/quarantine", {"Cookie": jar, "X-CSRF-Token": csrf})[0]
    # What a page on another port of the host gets with the cookie its browser sends there.
    out["read_with_cookie_only"] = raw(base, "GET", "/api/v1/servers", {"Cookie": jar})[0]
    out["session_with_cookie_only"] = raw(base, "GET", "/ui/session", {"Cookie": jar})[0]
    out["logout_with_cookie_only"] = raw(base, "POST", "/ui/logout", {"Cookie": jar})[0]
    out["read_with_cookie_and_token"] = raw(base, "GET", "/api/v1/servers", {"Cookie": jar, "X-CSRF-Token": csrf})[0]
    status, body = raw(base, "GET", "/api/v1/servers", {"Authorization": f"Bearer {opts.key}"})
    out["q_state_after"] = next(s["state"] for s in json.loads(body)["servers"] if s["name"] == "q")
    page.close()
    return out


def phone(browser, desktop, base, shots):
    """The same session at phone width: each page renders without a horizontal scroll bar."""
    # The session is the cookie and the token the page keeps in its origin's storage.
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True,
                                  storage_state=desktop.storage_state())
    page = context.new_page()
    wide = []
    for name in ["overview", "servers", "tools", "tokens", "activity", "try/fixture%3Aadd", "config"]:
        goto(page, base, name)
        page.wait_for_timeout(300)
        if overflows(page):
            wide.append(name)
        shots.take(page, f"phone-{name.split('/')[0]}")
    context.close()
    return wide


def scenario_tokens(opts, browser, shots):
    base, facts = opts.base, {}
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())

    # Log in by pasting the key; a wrong key is said in words.
    page.goto(f"{base}/ui/")
    page.wait_for_selector("#api-key")
    # Logged out, the page offers nothing but the login: no navigation, no "Log out".
    expect(page.locator("#nav")).to_be_hidden()
    expect(page.get_by_role("button", name="Log out")).to_be_hidden()
    shots.take(page, "login")
    page.fill("#api-key", "not-the-key")
    page.press("#api-key", "Enter")
    expect(page.locator(".login .error")).to_be_visible()
    facts["wrong_key"] = page.inner_text(".login .error")
    page.fill("#api-key", opts.key)
    page.press("#api-key", "Enter")
    expect(page.locator("h1#page-title")).to_have_text("Overview")
    page.reload()
    page.wait_for_selector("h1#page-title")
    facts["keyboard_focus"] = keyboard(page)

    # Create a token with the scope picker; the secret is shown once.
    goto(page, base, "tokens")
    # The name's pattern is a valid one (so the browser checks it), and the form says what a
    # read-only token reaches when tools carry no readOnlyHint.
    page.fill("#token-name", "bad name!")
    facts["name_pattern_mismatch"] = page.evaluate("document.getElementById('token-name').validity.patternMismatch")
    facts["read_hint"] = page.inner_text("#token-perm-hint")
    page.fill("#token-name", "agent-1")
    page.uncheck("#token-all-servers")
    page.check("#token-server-fixture")
    page.check("#token-perm-write")
    page.fill("#token-limit-calls_per_minute", "50")
    page.fill("#token-limit-write-calls_per_minute", "5")
    page.click("#token-create")
    expect(page.locator("#token-secret")).to_be_visible()
    secret = page.input_value("#token-secret")
    facts["limit_after_create"] = page.input_value("#token-limit-calls_per_minute")
    expect(page.locator("table")).to_contain_text("agent-1")
    facts["token_row"] = page.locator("tbody tr", has_text="agent-1").inner_text()
    shots.take(page, "tokens")
    page.reload()
    page.wait_for_selector("#page-title")
    facts["secret_after_reload"] = page.locator("#token-secret").count()

    # A page left before its render finished does not take the next page's live updates: the
    # Tokens page waits on a held answer while Activity opens and draws its table, and finishes
    # after it.
    goto(page, base, "overview")
    expect(page.locator("#page-title")).to_have_text("Overview")
    held, holding = [], [True]

    def hold(route):
        if holding[0]:
            held.append(route)
        else:
            route.continue_()
    page.route("**/api/v1/config", hold)
    page.evaluate("location.hash = '#/tokens'")
    expect(page.locator("#page-title")).to_have_text("Tokens")
    asked_by = time.monotonic() + 5
    while not held and time.monotonic() < asked_by:
        page.wait_for_timeout(50)
    assert held, "the Tokens page asked for no config within 5 s"
    page.evaluate("location.hash = '#/activity'")
    expect(page.locator("#page-title")).to_have_text("Activity")
    expect(page.get_by_text("Live: newest first")).to_be_visible()
    holding[0] = False
    with page.expect_response("**/api/v1/config"):
        for route in held:
            route.continue_()
    page.wait_for_timeout(300)
    page.unroute("**/api/v1/config", hold)

    # A call from an MCP client with the token shows in Activity within 2 s.
    code, out, err = agent(base, "call", "fixture__echo", json.dumps({"hello": "dashboard"}), token=secret)
    assert code == 0, err
    facts["agent_call"] = out
    facts["before_revoke_http"] = mcp_status(base, secret)
    called = time.monotonic()
    row = page.locator("tbody tr", has_text="agent-1").first
    row.wait_for(timeout=15000)
    facts["activity_seconds"] = round(time.monotonic() - called, 2)
    facts["activity_row"] = page.locator("tbody tr", has_text="agent-1").first.inner_text()
    page.fill("#activity-token", "agent-1")
    page.click("form.filters button[type=submit]")
    page.wait_for_timeout(500)
    facts["filtered_rows"] = page.locator("tbody tr").all_inner_texts()
    shots.take(page, "activity-filtered")
    # The export link carries the filters and downloads through the session.
    with page.expect_download() as download:
        page.click("#activity-export-csv")
    facts["export_href"] = page.get_attribute("#activity-export-csv", "data-href")
    with open(download.value.path(), encoding="utf-8") as exported:
        facts["export_csv"] = exported.read()

    # The token's row shows its own limits and the call made with it in the last minute.
    goto(page, base, "tokens")
    expect(page.locator("#usage-agent-1")).to_contain_text("1 call,", timeout=10000)
    facts["token_limits"] = page.inner_text("#limits-agent-1")
    facts["token_usage"] = page.inner_text("#usage-agent-1")
    # A name is one word: its cell does not break it at a hyphen (one box per line it takes).
    facts["token_name_lines"] = page.locator("tbody tr", has_text="agent-1").locator("strong").first.evaluate(
        "el => el.getClientRects().length")

    # Revoke on the page: the agent's next call is refused.
    page.click("#revoke-agent-1")
    expect(page.locator("tbody tr", has_text="agent-1")).to_contain_text("revoked")
    code, out, err = agent(base, "call", "fixture__echo", "{}", token=secret)
    facts["after_revoke"] = {"agent_exit": code, "http": mcp_status(base, secret)}
    shots.take(page, "tokens-revoked")

    # Log out while the store refuses the logout (no row passes the table's CHECK): the page
    # says the session may still hold elsewhere. The table is mended afterwards.
    def logouts_table(check):
        with sqlite3.connect(opts.store, isolation_level=None) as store:
            store.executescript(
                "BEGIN; DROP TABLE dashboard_logouts; CREATE TABLE dashboard_logouts "
                f"(session TEXT PRIMARY KEY, ends_at BIGINT NOT NULL{check}); COMMIT;")
    logouts_table(" CHECK (ends_at < 0)")
    try:
        page.get_by_role("button", name="Log out").click()
        expect(page.locator(".login .error")).to_be_visible()
        facts["refused_logout"] = page.inner_text(".login .error")
        shots.take(page, "logout-refused")
    finally:
        logouts_table("")
    context.close()
    return facts


def scenario_media(opts, browser, shots):
    """Try a tool whose result is an image: shown as one, decoded under the page's policy."""
    base, facts = opts.base, {}
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors = []
    page.on("console", lambda message: errors.append(message.text)
            if "Content Security Policy" in message.text else None)
    log_in_with_key(page, base, opts.key)
    goto(page, base, "try/pics%3Apicture")
    expect(page.locator("#try-call")).to_be_visible()
    page.click("#try-call")
    image = page.locator("#try-result img.result-image")
    expect(image).to_be_visible()
    # Decoded, not only placed: the policy let the data: URL load and the data was an image.
    page.wait_for_function("document.querySelector('#try-result img.result-image').complete")
    facts["image_size"] = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
    facts["image_alt"] = image.get_attribute("alt")
    facts["outcome"] = page.inner_text("#try-outcome")
    # No field, no "* required" legend.
    facts["required_legend"] = page.locator("#try-required-legend").count()
    facts["policy_violations"] = errors
    shots.take(page, "try-image")
    context.close()
    return facts


def keyboard(page):
    """Tab from the top: the skip link first, then the navigation, each with a visible outline."""
    page.keyboard.press("Tab")
    first = page.evaluate("document.activeElement.textContent")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    name = page.evaluate("document.activeElement.textContent")
    return {"first": first, "third": name, "outline": outline}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--link", default="")
    parser.add_argument("--shots", required=True)
    parser.add_argument("--store", required=True, help="the gateway's SQLite state.db")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--entry", default="", help="add: the server entry to add (JSON)")
    parser.add_argument("scenario", choices=["review", "tokens", "media", "server", "add"])
    opts = parser.parse_args()
    shots = Shots(opts.shots, opts.scenario)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=opts.chromium, args=["--no-sandbox"])
        try:
            run = {"review": scenario_review, "tokens": scenario_tokens, "media": scenario_media,
                   "server": lambda o, b, s: scenario_server(o, b, s, goto, overflows),
                   "add": lambda o, b, s: scenario_add(o, b, s, goto)}[opts.scenario]
            facts = run(opts, browser, shots)
        finally:
            browser.close()
    facts["screenshots"] = shots.taken
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
