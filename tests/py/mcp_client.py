"""Drives mcplex with the official MCP Python SDK (mcp==2.3.0) for the Rust integration tests.

Usage: mcp_client.py (--url URL [--token T | --oauth] | --stdio JSON_ARGV) --mode (legacy|2026-07-28)
       [--answer] SCENARIO [ARGS...]
--oauth: the SDK's OAuthClientProvider finds the authorization server from the 401 alone,
registers, and authorizes with PKCE; the "browser" is an HTTP client that takes the redirect
(the test authorization server approves at once).
Prints one JSON object on stdout; the Rust test asserts on it.
"""

import argparse
import json
import sys
import time

import anyio
import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientMetadata
from mcp.shared.exceptions import MCPError


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def error_of(exc):
    err = getattr(exc, "error", None)
    if err is not None:
        return {"code": err.code, "message": err.message, "data": err.data}
    return {"code": None, "message": str(exc)}


async def scenario_list(client, _args):
    result = await client.list_tools()
    return {"tools": [dump(t) for t in result.tools]}


async def scenario_call(client, args):
    try:
        result = await client.call_tool(args[0], json.loads(args[1]) if len(args) > 1 else {})
        return {"result": dump(result)}
    except MCPError as exc:
        return {"error": error_of(exc)}


async def scenario_progress(client, args):
    seen = []

    async def on_progress(progress, total, message):
        seen.append({"progress": progress, "total": total, "message": message})

    result = await client.call_tool(args[0], json.loads(args[1]), progress_callback=on_progress)
    return {"progress": seen, "result": dump(result)}


async def scenario_cancel(client, args):
    started = time.monotonic()
    with anyio.move_on_after(float(args[2])) as scope:
        await client.call_tool(args[0], json.loads(args[1]))
    # Give the cancellation notification time to leave before the session closes.
    await anyio.sleep(0.5)
    return {"cancelled": scope.cancelled_caught, "elapsed": time.monotonic() - started}


async def scenario_calls(client, args):
    """Calls (tool, arguments JSON) pairs one after another; each outcome in order."""
    outcomes = []
    for tool, arguments in zip(args[0::2], args[1::2]):
        outcomes.append(await scenario_call(client, [tool, arguments]))
    return {"outcomes": outcomes}


async def scenario_overlap(client, args):
    """Starts the first call, makes the second while it runs (after 0.5 s), then awaits both."""
    outcomes = {}

    async def first():
        outcomes["first"] = await scenario_call(client, args[0:2])

    async with anyio.create_task_group() as group:
        group.start_soon(first)
        await anyio.sleep(0.5)
        outcomes["second"] = await scenario_call(client, args[2:4])
    return outcomes


async def all_pages(fetch, key):
    """Follows nextCursor to the end; returns (items, pages)."""
    items, pages, cursor = [], 0, None
    while True:
        result = await fetch(cursor)
        pages += 1
        items.extend(dump(item) for item in getattr(result, key))
        cursor = result.next_cursor
        if not cursor:
            return items, pages


async def scenario_offers(client, _args):
    resources, resource_pages = await all_pages(lambda c: client.list_resources(cursor=c), "resources")
    templates, _ = await all_pages(lambda c: client.list_resource_templates(cursor=c), "resource_templates")
    prompts, _ = await all_pages(lambda c: client.list_prompts(cursor=c), "prompts")
    return {
        "resources": resources,
        "resource_pages": resource_pages,
        "templates": templates,
        "prompts": prompts,
    }


async def scenario_read(client, args):
    try:
        return {"result": dump(await client.read_resource(args[0]))}
    except MCPError as exc:
        return {"error": error_of(exc)}


async def scenario_prompt(client, args):
    try:
        arguments = json.loads(args[1]) if len(args) > 1 else None
        return {"result": dump(await client.get_prompt(args[0], arguments))}
    except MCPError as exc:
        return {"error": error_of(exc)}


async def scenario_complete(client, args):
    ref = types.PromptReference(type="ref/prompt", name=args[0])
    try:
        result = await client.complete(ref, {"name": args[1], "value": args[2]})
        return {"result": dump(result)}
    except MCPError as exc:
        return {"error": error_of(exc)}


async def scenario_subscribe(client, args, mode, updates):
    """Subscribes to args[0] and waits up to 10 s for its update."""
    uri = args[0]
    if mode == "legacy":
        try:
            await client.subscribe_resource(uri)
        except MCPError as exc:
            return {"error": error_of(exc)}
        with anyio.move_on_after(10):
            while not updates:
                await anyio.sleep(0.05)
        await client.unsubscribe_resource(uri)
        return {"updated": list(updates)}
    async with client.listen(resource_subscriptions=[uri]) as sub:
        with anyio.move_on_after(10):
            async for event in sub:
                updates.append(getattr(event, "uri", None) or str(event))
                break
        return {"updated": list(updates), "honored": dump(sub.honored) if hasattr(sub, "honored") else None}


async def scenario_offers_changed(client, args, mode, changed):
    """Waits up to args[0] s for both prompts and resources list_changed, then lists prompts.
    Creates the file args[1] once it is listening, so the test knows when to make the change."""
    seconds, ready = float(args[0]), args[1]
    if mode == "legacy":
        await client.list_prompts()
        open(ready, "w").close()
        with anyio.move_on_after(seconds):
            while len(changed) < 2:
                await anyio.sleep(0.05)
    else:
        async with client.listen(prompts_list_changed=True, resources_list_changed=True) as sub:
            open(ready, "w").close()
            with anyio.move_on_after(seconds):
                async for event in sub:
                    changed.add("prompts" if "prompt" in type(event).__name__.lower() else "resources")
                    if len(changed) == 2:
                        break
    prompts, _ = await all_pages(lambda c: client.list_prompts(cursor=c, cache_mode="refresh"), "prompts")
    return {"changed": sorted(changed), "prompts": [p["name"] for p in prompts]}


class MemoryTokens:
    """Token storage for one run."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def oauth_client(url):
    """An HTTP client whose auth is the SDK's OAuth flow, with a headless browser step."""
    redirect = {}
    callback = "http://127.0.0.1:9/callback"

    async def follow(authorization_url):
        async with httpx2.AsyncClient() as browser:
            answer = await browser.get(authorization_url)
        location = httpx2.URL(answer.headers["location"])
        redirect["code"] = location.params.get("code")
        redirect["state"] = location.params.get("state")

    async def come_back():
        return AuthorizationCodeResult(code=redirect["code"], state=redirect["state"])

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="mcplex integration test",
            redirect_uris=[callback],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=MemoryTokens(),
        redirect_handler=follow,
        callback_handler=come_back,
    )
    return create_mcp_http_client(auth=provider)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("--stdio")
    parser.add_argument("--token", help="sent as Authorization: Bearer on every HTTP request")
    parser.add_argument("--oauth", action="store_true", help="log in with the SDK's OAuth client")
    parser.add_argument("--mode", default="legacy")
    parser.add_argument("--answer", action="store_true", help="declare sampling and elicitation")
    parser.add_argument("--log-level", help="2026-07-28: opt in to log messages at this level")
    parser.add_argument("scenario")
    parser.add_argument("args", nargs="*")
    opts = parser.parse_args()

    holder = {}
    updates = []
    changed = set()
    asked = []
    logs = []

    async def on_message(message):
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method == "notifications/tools/list_changed":
            event = holder.get("event")
            if event is not None:
                event.set()
        if method == "notifications/resources/updated":
            updates.append(root.params.uri)
        if method in ("notifications/prompts/list_changed", "notifications/resources/list_changed"):
            changed.add(method.split("/")[1])

    async def on_sampling(_context, params):
        asked.append({"method": "sampling/createMessage", "params": dump(params)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by the test client"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_elicitation(_context, params):
        asked.append({"method": "elicitation/create", "params": dump(params)})
        return types.ElicitResult(action="accept", content={"username": "tester", "email": "t@example.com"})

    async def on_log(params):
        logs.append(dump(params))

    target = opts.url
    if opts.url and opts.token:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {opts.token}"})
        target = streamable_http_client(opts.url, http_client=http)
    if opts.url and opts.oauth:
        target = streamable_http_client(opts.url, http_client=oauth_client(opts.url))
    if opts.stdio:
        argv = json.loads(opts.stdio)
        target = StdioServerParameters(command=argv[0], args=argv[1:])
    kwargs = {"mode": opts.mode, "message_handler": on_message, "logging_callback": on_log}
    # --answer: declare sampling and elicitation and answer them (the default declares neither).
    if opts.log_level:
        kwargs["log_level"] = opts.log_level
    if opts.answer:
        kwargs["sampling_callback"] = on_sampling
        kwargs["elicitation_callback"] = on_elicitation
    async with Client(target, **kwargs) as client:
        if opts.scenario == "list":
            out = await scenario_list(client, opts.args)
        elif opts.scenario == "call":
            out = await scenario_call(client, opts.args)
        elif opts.scenario == "calls":
            out = await scenario_calls(client, opts.args)
        elif opts.scenario == "overlap":
            out = await scenario_overlap(client, opts.args)
        elif opts.scenario == "progress":
            out = await scenario_progress(client, opts.args)
        elif opts.scenario == "cancel":
            out = await scenario_cancel(client, opts.args)
        elif opts.scenario == "offers":
            out = await scenario_offers(client, opts.args)
        elif opts.scenario == "read":
            out = await scenario_read(client, opts.args)
        elif opts.scenario == "prompt":
            out = await scenario_prompt(client, opts.args)
        elif opts.scenario == "complete":
            out = await scenario_complete(client, opts.args)
        elif opts.scenario == "subscribe":
            out = await scenario_subscribe(client, opts.args, opts.mode, updates)
        elif opts.scenario == "offers_changed":
            out = await scenario_offers_changed(client, opts.args, opts.mode, changed)
        elif opts.scenario == "relay":
            # A call during which the upstream asks the client something and logs.
            if opts.mode == "legacy":
                await client.set_logging_level("debug")
            out = await scenario_call(client, opts.args)
            out["asked"] = asked
            out["logs"] = logs
        elif opts.scenario == "initialize":
            out = {"instructions": client.instructions}
        elif opts.scenario == "edit_and_wait":
            event = anyio.Event()
            holder["event"] = event
            out = await edit_and_wait(client, opts.args, opts.mode, event)
        elif opts.scenario == "list_changed":
            event = anyio.Event()
            holder["event"] = event
            out = await list_changed(client, opts.args, opts.mode, event)
        else:
            raise SystemExit(f"unknown scenario {opts.scenario}")
    print(json.dumps(out))


async def list_changed(client, args, mode, event):
    if mode == "legacy":
        await client.call_tool(args[0], json.loads(args[1]))
        with anyio.move_on_after(15):
            await event.wait()
        notified = event.is_set()
    else:
        notified = False
        async with client.listen(tools_list_changed=True) as sub:
            await client.call_tool(args[0], json.loads(args[1]))
            with anyio.move_on_after(15):
                async for _event in sub:
                    notified = True
                    break
    tools = await client.list_tools(cache_mode="refresh")
    return {"notified": notified, "tools": [t.name for t in tools.tools]}


async def edit_and_wait(client, args, mode, event):
    """Lists, rewrites the config file args[0] with args[1], waits up to args[2] s for list_changed."""
    path, content, seconds = args[0], args[1], float(args[2])
    before = await client.list_tools()
    notified = False
    if mode == "legacy":
        with open(path, "w") as f:
            f.write(content)
        with anyio.move_on_after(seconds):
            await event.wait()
        notified = event.is_set()
    else:
        async with client.listen(tools_list_changed=True) as sub:
            with open(path, "w") as f:
                f.write(content)
            with anyio.move_on_after(seconds):
                async for _event in sub:
                    notified = True
                    break
    after = await client.list_tools(cache_mode="refresh")
    return {
        "notified": notified,
        "before": [dump(t) for t in before.tools],
        "after": [dump(t) for t in after.tools],
    }


if __name__ == "__main__":
    anyio.run(main)
