"""Single sign-on to the dashboard in headless Chromium (Playwright for Python), against a real
gateway whose `auth.dashboard` names a real OpenID Connect provider (tests/node/oidc_provider.mjs),
for crates/mcplex/tests/it/sign_in.rs. alice (an operator by group) signs in on the provider's
own page, the page says who she is, and she approves a quarantined server; mallory (staff, whom
the rules let read one server) gets a read-only view of that server alone and every change is
refused; a guest whom the rules grant nothing is refused; the API key still logs in.

Usage: dashboard_sign_in.py --base http://127.0.0.1:PORT --key KEY --server NAME --shots DIR
                            [--chromium /usr/bin/chromium]
Prints one JSON object of what it saw on stdout; the Rust test asserts on it.
"""

import argparse
import json

from playwright.sync_api import expect, sync_playwright

from dashboard import DESKTOP, Shots


def sign_in_at_the_provider(page, who):
    """On the provider's login page: any name and password, then its consent page."""
    page.wait_for_selector("input[name=login]")
    page.fill("input[name=login]", who)
    page.fill("input[name=password]", "any password")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--server", required=True, help="a quarantined server alice approves")
    parser.add_argument("--shots", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    opts = parser.parse_args()
    base, facts = opts.base, {}
    shots = Shots(opts.shots, "sign-in")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=opts.chromium, args=["--no-sandbox"])
        try:
            # alice: the login page offers the issuer; she signs in there and comes back an
            # operator, named on the page.
            context = browser.new_context(viewport=DESKTOP)
            page = context.new_page()
            page.goto(f"{base}/ui/")
            expect(page.locator("#sign-in")).to_be_visible()
            facts["offer"] = page.inner_text("#sign-in")
            shots.take(page, "offer")
            page.click("#sign-in")
            sign_in_at_the_provider(page, "alice")
            expect(page.locator("h1#page-title")).to_have_text("Overview", timeout=15000)
            facts["who"] = page.inner_text("#who")
            page.goto(f"{base}/ui/#/servers")
            page.click(f"#approve-{opts.server}")
            page.click(f"#confirm-approve-{opts.server}")
            expect(page.locator("p.ok")).to_be_visible()
            facts["approved"] = page.inner_text("p.ok")
            shots.take(page, "alice-approved")
            page.get_by_role("button", name="Log out").click()
            expect(page.locator("#sign-in")).to_be_visible()
            context.close()

            # mallory is not an operator: a read-only view of what the rules let her reach.
            context = browser.new_context(viewport=DESKTOP)
            page = context.new_page()
            # Her pages ask for nothing she may not read.
            refused = []
            page.on("response", lambda r: refused.append(f"{r.request.method} {r.url[len(base):]}")
                    if r.status == 403 and r.url.startswith(f"{base}/api/") else None)
            page.goto(f"{base}/ui/")
            page.click("#sign-in")
            sign_in_at_the_provider(page, "mallory")
            expect(page.locator("h1#page-title")).to_have_text("Overview", timeout=15000)
            expect(page.locator("table").first).to_be_visible()
            facts["mallory_cards"] = [t.strip() for t in page.locator(".card.stat h2").all_text_contents()]
            facts["mallory_who"] = page.inner_text("#who")
            facts["mallory_nav"] = [a.inner_text() for a in page.locator("#nav a").all() if a.is_visible()]
            page.goto(f"{base}/ui/#/servers")
            expect(page.locator("tbody tr").first).to_be_visible()
            facts["mallory_servers"] = page.locator("tbody tr td:first-child").all_inner_texts()
            facts["mallory_buttons"] = [b.inner_text() for b in page.locator("tbody button").all() if b.is_visible()]
            facts["mallory_columns"] = page.locator("thead th").all_inner_texts()
            facts["mallory_server_links"] = page.locator('a[href^="#/servers/"]').count()
            shots.take(page, "mallory-read-only")
            facts["mallory_refused_reads"] = list(refused)
            # Her session cannot change anything, nor read what only operators read.
            facts["mallory_attempts"] = page.evaluate("""async (server) => {
                const csrf = localStorage.getItem("mcplex_csrf");
                const send = async (method, path) => {
                    const r = await fetch(path, { method, credentials: "same-origin", headers: { "X-CSRF-Token": csrf || "" } });
                    return { status: r.status, body: await r.text() };
                };
                return {
                    approve: await send("POST", `/api/v1/servers/${server}/approve`),
                    tokens: await send("GET", "/api/v1/tokens"),
                    servers: await send("GET", "/api/v1/servers"),
                    // A tool of her server she may read, and one whose permission her rule
                    // leaves out: the tools list hides it, and so does its review.
                    review_read: await send("GET", "/api/v1/tools/fixture:echo/review"),
                    review_beyond: await send("GET", "/api/v1/tools/fixture:crash/review"),
                };
            }""", opts.server)
            context.close()

            # A guest whom the rules grant nothing is refused, with who and why.
            context = browser.new_context(viewport=DESKTOP)
            page = context.new_page()
            page.goto(f"{base}/ui/")
            page.click("#sign-in")
            sign_in_at_the_provider(page, "guest-1")
            page.wait_for_url(f"{base}/ui/oidc/callback*")
            facts["guest"] = page.inner_text("body")
            shots.take(page, "guest-refused")
            page.goto(f"{base}/ui/")
            expect(page.locator("#api-key")).to_be_visible()
            facts["guest_nav_hidden"] = page.locator("#nav").is_hidden()

            # The API key still logs in (break-glass), and the page says so.
            page.fill("#api-key", opts.key)
            page.press("#api-key", "Enter")
            expect(page.locator("h1#page-title")).to_have_text("Overview")
            facts["key_who"] = page.inner_text("#who")
            context.close()
        finally:
            browser.close()
    facts["screenshots"] = shots.taken
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
