"""Checks mcplex's provider projection with the providers' own SDKs (no network).

Given the projections (`GET /api/v1/projection/{anthropic,openai}`) and search answers
(`POST .../search`) as JSON files, this script
  1. validates every projected tool and every search answer against the SDK's typed params
     (pydantic over the SDK's TypedDicts; keys outside the TypedDict are refused too),
  2. sends a request with the official `anthropic` and `openai` clients, with `base_url` at a
     local HTTP endpoint that records the body, once with the tools and once with the search
     answer in the conversation,
and prints one JSON line: what each request body carried. The Rust test compares those bodies
with the projection byte for byte (as JSON values).

usage: provider_sdks.py ANTHROPIC.json OPENAI.json ANTHROPIC_SEARCH.json OPENAI_SEARCH.json
"""

import json
import sys
import threading
import typing
from http.server import BaseHTTPRequestHandler, HTTPServer

import anthropic
import openai
import pydantic
from anthropic.types import ToolParam, ToolResultBlockParam, ToolSearchToolBm25_20251119Param, ToolUnionParam
from openai.types.responses import NamespaceToolParam, ToolParam as OpenAIToolParam, ToolSearchToolParam
from openai.types.responses.namespace_tool_param import ToolFunction
from openai.types.responses.response_tool_search_output_item_param_param import (
    ResponseToolSearchOutputItemParamParam,
)
from openai.types.responses.tool_search_output_namespace_tool_param import (
    ToolFunction as LoadedFunction,
    ToolSearchOutputNamespaceToolParam,
)

ANTHROPIC_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
OPENAI_REPLY = {
    "id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-5.4", "status": "completed",
    "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
}


class Recorder(BaseHTTPRequestHandler):
    bodies: list = []

    def do_POST(self):  # noqa: N802 (the stdlib's name)
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        Recorder.bodies.append({"path": self.path, "body": body})
        reply = ANTHROPIC_REPLY if self.path.endswith("/messages") else OPENAI_REPLY
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def typed(kind, value, what):
    """`value` is a valid `kind` (a TypedDict of the SDK) and has no key `kind` lacks."""
    pydantic.TypeAdapter(kind).validate_python(value, strict=True)
    known = set(typing.get_type_hints(kind).keys())
    extra = set(value) - known
    if extra:
        raise SystemExit(f"{what}: keys {sorted(extra)} are not in {kind.__name__}")


def check_anthropic(tools, answer):
    for i, tool in enumerate(tools):
        pydantic.TypeAdapter(ToolUnionParam).validate_python(tool)
        if tool.get("type") == "tool_search_tool_bm25_20251119":
            typed(ToolSearchToolBm25_20251119Param, tool, f"anthropic tools[{i}]")
        else:
            typed(ToolParam, tool, f"anthropic tools[{i}]")
    typed(ToolResultBlockParam, answer, "anthropic search answer")


def check_openai(tools, answer):
    for i, tool in enumerate(tools):
        pydantic.TypeAdapter(OpenAIToolParam).validate_python(tool)
        if tool["type"] == "tool_search":
            typed(ToolSearchToolParam, tool, f"openai tools[{i}]")
            continue
        typed(NamespaceToolParam, tool, f"openai tools[{i}]")
        for j, function in enumerate(tool["tools"]):
            typed(ToolFunction, function, f"openai tools[{i}].tools[{j}]")
    typed(ResponseToolSearchOutputItemParamParam, answer, "openai search answer")
    for i, namespace in enumerate(answer["tools"]):
        typed(ToolSearchOutputNamespaceToolParam, namespace, f"openai answer tools[{i}]")
        for j, function in enumerate(namespace["tools"]):
            typed(LoadedFunction, function, f"openai answer tools[{i}].tools[{j}]")


def main():
    paths = sys.argv[1:5]
    anthropic_tools, openai_tools, anthropic_answer, openai_answer = (
        json.load(open(p)) for p in paths
    )
    check_anthropic(anthropic_tools, anthropic_answer)
    check_openai(openai_tools, openai_answer)

    server = HTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    claude = anthropic.Anthropic(api_key="test", base_url=base, max_retries=0)
    claude.messages.create(
        model="claude-sonnet-4-5", max_tokens=64,
        messages=[{"role": "user", "content": "add 2 and 3"}], tools=anthropic_tools,
    )
    search_use = {"type": "tool_use", "id": anthropic_answer["tool_use_id"], "name": "tool_search",
                  "input": {"query": "add"}}
    claude.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, tools=anthropic_tools,
        messages=[
            {"role": "user", "content": "add 2 and 3"},
            {"role": "assistant", "content": [search_use]},
            {"role": "user", "content": [anthropic_answer]},
        ],
    )

    gpt = openai.OpenAI(api_key="test", base_url=f"{base}/v1", max_retries=0)
    gpt.responses.create(model="gpt-5.4", input="add 2 and 3", tools=openai_tools)
    search_call = {"type": "tool_search_call", "id": "tsc_1", "call_id": openai_answer["call_id"],
                   "execution": "client", "status": "completed", "arguments": {"query": "add"}}
    gpt.responses.create(
        model="gpt-5.4", tools=openai_tools,
        input=[{"role": "user", "content": "add 2 and 3"}, search_call, openai_answer],
    )
    server.shutdown()
    print(json.dumps({"requests": Recorder.bodies}))


if __name__ == "__main__":
    main()
