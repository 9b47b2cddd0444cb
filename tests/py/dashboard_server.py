"""The dashboard's server page (#/servers/<name>) in Chromium, for tests/py/dashboard.py's
`server` scenario: the Overview's queue (a crash loop, a refused config edit), the server page
reached from it by keyboard alone, what runs (the command,
secrets replaced), the timeline of a crash loop, the trend narrowed to one tool, the live stderr
tail, Restart (confirmed) and the timeline after it, at desktop and phone width."""

from playwright.sync_api import expect

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def log_in_with_key(page, base, key):
    """Logs the page in with the API key, as an operator pastes it; on the Overview after."""
    page.goto(f"{base}/ui/")
    page.wait_for_selector("#api-key")
    page.fill("#api-key", key)
    page.press("#api-key", "Enter")
    expect(page.locator("h1#page-title")).to_have_text("Overview")


def scenario_server(opts, browser, shots, goto, overflows):
    base, facts = opts.base, {}
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors, refused = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # Every API answer the page got that was not a success, once logged in.
    page.on("response", lambda r: refused.append(f"{r.status} {r.url}")
            if r.status >= 400 and "/api/" in r.url else None)
    log_in_with_key(page, base, opts.key)
    expect(page.locator("#needs-you")).to_contain_text("failed", timeout=10000)
    expect(page.locator("#needs-you")).to_contain_text("A config edit was refused", timeout=10000)
    facts["needs_you"] = page.inner_text("#needs-you")
    refused.clear()

    # Keyboard only: Tab from the top of the page to the crash loop's "See fixture" and Enter.
    page.locator("body").focus()
    reached = None
    for _ in range(40):
        page.keyboard.press("Tab")
        text = page.evaluate("document.activeElement.textContent")
        if text == "See fixture":
            reached = page.evaluate("document.activeElement.getAttribute('href')")
            break
    facts["queue_link"] = reached
    if reached:
        page.keyboard.press("Enter")
    else:
        goto(page, base, "servers/fixture")
    expect(page.locator("h1#page-title")).to_have_text("Server fixture")
    facts["url_after_queue"] = page.url.split("/ui/")[-1]
    expect(page.locator("#server-timeline")).to_be_visible(timeout=10000)
    facts["command"] = page.inner_text("#server-command")
    facts["page_text"] = page.inner_text("main")
    facts["timeline"] = page.locator("#server-timeline li").all_inner_texts()
    facts["trend_words_hour"] = page.inner_text("#server-trend-words")
    facts["trend_bars_hour"] = page.locator("svg#server-trend rect.bar").count()
    facts["trend_median_points_hour"] = len(
        (page.get_attribute("svg#server-trend polyline.latency", "points") or "").split())
    page.click("#trend-24h")
    expect(page.locator("#trend-24h")).to_have_attribute("aria-pressed", "true")
    facts["trend_bars_day"] = page.locator("svg#server-trend rect.bar").count()
    day_words = page.inner_text("#server-trend-words")
    page.select_option("#trend-tool", "fixture:echo")
    expect(page.locator("#server-trend-words")).not_to_have_text(day_words)
    facts["trend_words_echo"] = page.inner_text("#server-trend-words")
    facts["tool_chosen"] = page.eval_on_selector("#trend-tool", "s => s.value")
    expect(page.locator("pre.tail")).to_be_visible(timeout=10000)
    facts["stderr_tail"] = page.inner_text("pre.tail")
    shots.take(page, "server")

    # Restart asks first; dismissed, nothing happens.
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#restart-server")
    page.wait_for_timeout(300)
    facts["done_after_dismiss"] = page.locator("#server-done").count()
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#restart-server")
    expect(page.locator("#server-done")).to_be_visible(timeout=15000)
    facts["restart_said"] = page.inner_text("#server-done")
    # Focus moves to the outcome and stays there through the refresh after it.
    expect(page.locator("#server-done")).to_be_focused()
    expect(page.locator("#server-timeline")).to_contain_text("Restarted by an operator", timeout=20000)
    expect(page.locator("#server-timeline li").first).to_contain_text("Ready", timeout=20000)
    facts["focus_after_restart"] = page.evaluate("document.activeElement.id")
    facts["timeline_after"] = page.locator("#server-timeline li").all_inner_texts()
    shots.take(page, "server-restarted")

    # The refused edit, where the queue's entry leads: the file and the reason.
    goto(page, base, "config")
    expect(page.locator("#refused-edit")).to_be_visible()
    facts["refused_edit"] = page.inner_text("#refused-edit")

    phone = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True,
                                storage_state=context.storage_state())
    small = phone.new_page()
    goto(small, base, "servers/fixture")
    expect(small.locator("#server-timeline")).to_be_visible()
    small.wait_for_timeout(300)
    facts["phone_overflows"] = overflows(small)
    shots.take(small, "phone-server")
    phone.close()
    facts["errors"] = errors
    facts["refused"] = refused
    context.close()
    return facts


def scenario_add(opts, browser, shots, goto):
    """Adds a server on the Servers page: a wrong entry is refused with the gateway's words,
    Check shows how it was read, Add opens its page, where its tools show as withheld until it
    is approved. The entry to add is opts.entry (JSON)."""
    base, facts = opts.base, {}
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    log_in_with_key(page, base, opts.key)
    goto(page, base, "servers")
    page.click("#add-server summary")
    page.fill("#add-name", "extra")
    page.fill("#add-entry", '{"command": "x", "argz": []}')
    page.click("#add-check")
    expect(page.locator("#add-said .error")).to_be_visible(timeout=10000)
    facts["refused"] = page.inner_text("#add-said")
    page.fill("#add-entry", opts.entry)
    page.click("#add-check")
    expect(page.locator("#add-understood")).to_be_visible(timeout=10000)
    facts["checked"] = page.inner_text("#add-message")
    facts["understood"] = page.inner_text("#add-understood")
    shots.take(page, "add-checked")
    page.click("#add-submit")
    expect(page.locator("h1#page-title")).to_have_text("Server extra", timeout=10000)
    facts["url"] = page.url.split("/ui/")[-1]
    tools = page.locator("table", has_text="extra:echo")
    expect(tools).to_be_visible(timeout=20000)
    facts["tools_table"] = tools.inner_text()
    facts["origin"] = page.inner_text("#server-origin")
    facts["remove_button"] = page.locator("#remove-server").count()
    shots.take(page, "add-server-page")
    # Approved from its page, after the tools it pins were shown there; asked first.
    facts["approve_label"] = page.inner_text("#approve-server")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#approve-server")
    expect(page.locator("#server-done")).to_be_visible(timeout=15000)
    facts["approved_said"] = page.inner_text("#server-done")
    expect(page.locator("table", has_text="extra:echo")).to_contain_text("approved", timeout=10000)
    facts["errors"] = errors
    context.close()
    return facts
