"""A caller's own upstream login, proven at the issuer (#31), in headless Chromium (Playwright for
Python), for crates/mcplex/tests/it/connect_sign_in.rs. alice's agent application gets a JWT
for the gateway on her behalf from a real OpenID Connect provider (tests/node/oidc_provider.mjs,
the code flow with PKCE and a `resource`); its call to a `per_user` server is refused with the
link that connects her account. mallory opens that link and signs in at the issuer as herself:
refused, nothing begins. alice opens it, signs in as alice, is back on the link's page and
continues from its form to the upstream's authorization server and back: connected, and her
agent's call now answers. The login's start without the page's form or the issuer's proof is
refused.

Usage: connect_sign_in.py --base http://127.0.0.1:PORT --issuer ISSUER --agent-redirect URI
                          --tool NAME --shots DIR [--chromium /usr/bin/chromium]
Prints one JSON object of what it saw on stdout; the Rust test asserts on it.
"""

import argparse
import base64
import hashlib
import json
import secrets
import urllib.error
import urllib.parse
import urllib.request

from playwright.sync_api import sync_playwright

from dashboard import DESKTOP, Shots
from dashboard_sign_in import sign_in_at_the_provider


def http(method, url, body=None, headers=None):
    """(status, parsed JSON or text) of one request."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, text = answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        status, text = refused.code, refused.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def agent_token(browser, issuer, redirect, resource):
    """alice's JWT for the gateway, as her agent's application gets it: the code flow."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    _, metadata = http("GET", f"{issuer}/.well-known/openid-configuration")
    query = urllib.parse.urlencode({
        "response_type": "code", "client_id": "agent-app", "redirect_uri": redirect,
        "scope": "openid mcp", "resource": resource, "state": secrets.token_urlsafe(16),
        "code_challenge": challenge, "code_challenge_method": "S256",
    })
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    # The application's redirect URI: the code is read from it, nothing listens there.
    page.route(f"{redirect}**", lambda route: route.fulfill(status=200, body="ok"))
    page.goto(f"{metadata['authorization_endpoint']}?{query}")
    sign_in_at_the_provider(page, "alice")
    page.wait_for_url(f"{redirect}**")
    code = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)["code"][0]
    context.close()
    basic = base64.b64encode(b"agent-app:agent-app-secret").decode()
    form = urllib.parse.urlencode({
        "grant_type": "authorization_code", "code": code, "redirect_uri": redirect,
        "code_verifier": verifier, "resource": resource,
    }).encode()
    status, answer = http("POST", metadata["token_endpoint"], form, {
        "Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded",
    })
    assert status == 200, answer
    return answer["access_token"]


def call(base, token, tool):
    body = json.dumps({"name": tool, "arguments": {}}).encode()
    return http("POST", f"{base}/api/v1/call", body, {
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
    })


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--agent-redirect", required=True)
    parser.add_argument("--tool", required=True)
    parser.add_argument("--shots", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    opts = parser.parse_args()
    base, facts = opts.base, {}
    shots = Shots(opts.shots, "connect")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=opts.chromium, args=["--no-sandbox"])
        try:
            token = agent_token(browser, opts.issuer, opts.agent_redirect, f"{base}/mcp")
            facts["refused_status"], facts["refused"] = call(base, token, opts.tool)
            link = facts["refused"]["structuredContent"]["connect_url"]

            # Without the page's form (and the issuer's proof), the login does not begin.
            facts["no_proof_status"], _ = http("POST", f"{link}/begin", b"token=")

            # mallory follows alice's link: the issuer says she is mallory; refused.
            context = browser.new_context(viewport=DESKTOP)
            page = context.new_page()
            page.goto(link)
            facts["page"] = page.inner_text("body")
            shots.take(page, "page")
            page.click("#continue")
            sign_in_at_the_provider(page, "mallory")
            page.wait_for_url(f"{base}/ui/oidc/callback*")
            facts["mallory"] = page.inner_text("body")
            shots.take(page, "mallory-refused")
            context.close()

            # alice follows it: proven, on to the upstream's authorization server and back.
            context = browser.new_context(viewport=DESKTOP)
            page = context.new_page()
            page.goto(link)
            page.click("#continue")
            sign_in_at_the_provider(page, "alice")
            page.wait_for_url(link)
            facts["proven_page"] = page.inner_text("body")
            shots.take(page, "proven-page")
            page.click("#continue")
            page.wait_for_url(f"{base}/ui/oauth/callback*", timeout=30000)
            facts["alice"] = page.inner_text("body")
            shots.take(page, "alice-connected")
            context.close()

            facts["after_status"], facts["after"] = call(base, token, opts.tool)
        finally:
            browser.close()
    facts["screenshots"] = shots.taken
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
