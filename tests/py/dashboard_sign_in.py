"""Single sign-on to the dashboard in headless Chromium (Playwright for Python), against a real
gateway whose `auth.dashboard` names a real OpenID Connect provider (tests/node/oidc_provider.mjs),
for crates/mcplex/tests/it/sign_in.rs. alice (an operator by group) signs in on the provider's
own page, the page says who she is, and she approves a quarantined server; mallory signs in and
is refused; the API key still logs in.

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
            expect(page.locator("p.ok")).to_be_visible()
            facts["approved"] = page.inner_text("p.ok")
            shots.take(page, "alice-approved")
            page.get_by_role("button", name="Log out").click()
            expect(page.locator("#sign-in")).to_be_visible()
            context.close()

            # mallory signs in at the same provider and is refused, with who and why.
            context = browser.new_context(viewport=DESKTOP)
            page = context.new_page()
            page.goto(f"{base}/ui/")
            page.click("#sign-in")
            sign_in_at_the_provider(page, "mallory")
            page.wait_for_url(f"{base}/ui/oidc/callback*")
            facts["mallory"] = page.inner_text("body")
            shots.take(page, "mallory-refused")
            page.goto(f"{base}/ui/")
            expect(page.locator("#api-key")).to_be_visible()
            facts["mallory_nav_hidden"] = page.locator("#nav").is_hidden()

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
