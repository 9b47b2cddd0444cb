#!/usr/bin/env python3
"""scripts/bench-retrieve.py: the whole `retrieve_tools` answer as an agent sees it (issue #34's
"p50 <= 15 ms at 527 tools"), for one or more mcplex builds side by side in one run.

Each build serves a tool corpus (shared/corpora/*.tools.json) as the real fleet would be served:
one `mcplex-fixture --no-kit --corpus F --corpus-server S` process per server (the corpus's tools only) of the corpus, behind
`mcplex serve` with the built-in model; once every server is ready and the catalog is embedded
(hybrid ranking), one session on `/mcp/call` calls `retrieve_tools` once for each query of each
set (every query text is new to the gateway: uncached). Builds alternate within each round, so a
noisy machine hurts them alike. Prints p50/p99 per build, set and round, and recall@5 and steps@5
of the answers as the agent got them (issue #34 measures "through `retrieve_tools`": a figure of
`bench retrieval`'s that this one does not repeat is a difference between the benchmark's ranking
and the gateway's), and writes JSON.

Usage: bench-retrieve.py --mcplex BIN [--mcplex BIN2] --corpus F --queries Q [--queries Q2]
                         [--fixture BIN] [--model DIR] [--rounds N] [--out FILE]

`--model DIR` serves with `search_model: DIR` (e.g. a freshly trained f32 directory) instead of
the built-in model.
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HOST = {"Host": "localhost"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("GET", path, headers={**HOST, **(headers or {})})
    answer = connection.getresponse()
    return answer.status, answer.read()


def wait_until(what, check, seconds=300):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.5)
    sys.exit(f"bench-retrieve: timed out waiting for {what}")


def serve(mcplex, fixture, corpus, workdir, model):
    """Starts `mcplex serve` over the corpus' servers; (process, port) once it ranks by meaning."""
    rows = json.load(open(corpus))["tools"]
    servers = sorted({row["server"] for row in rows})
    port = free_port()
    config = {"listen": f"127.0.0.1:{port}", "mcpServers": {
        name: {"command": fixture, "args": ["--no-kit", "--corpus", corpus, "--corpus-server", name]}
        for name in servers}}
    if model:
        config["search_model"] = model
    config_path = os.path.join(workdir, f"config-{port}.json")
    with open(config_path, "w") as out:
        json.dump(config, out)
    data = os.path.join(workdir, f"data-{port}")
    log = open(os.path.join(workdir, f"gateway-{port}.log"), "w")
    process = subprocess.Popen([mcplex, "serve", "--config", config_path, "--data-dir", data],
                               stdout=subprocess.DEVNULL, stderr=log)
    wait_until("every server", lambda: get(port, "/readyz?all")[0] == 200)
    key_file = os.path.join(data, "api_key")
    wait_until("the API key", lambda: os.path.exists(key_file))
    key = open(key_file).read().strip()
    auth = {"Authorization": f"Bearer {key}"}
    wait_until("the catalog's embeddings",
               lambda: json.loads(get(port, "/api/v1/config", auth)[1])["search"]["ranking"] == "hybrid")
    return process, port


def session(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {**HOST, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    connection.request("POST", "/mcp/call", json.dumps(initialize), headers)
    answer = connection.getresponse()
    answer.read()
    headers["Mcp-Session-Id"] = answer.getheader("Mcp-Session-Id")
    headers["MCP-Protocol-Version"] = "2025-06-18"
    connection.request("POST", "/mcp/call", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), headers)
    connection.getresponse().read()
    return connection, headers


def percentile(sorted_ms, p):
    return sorted_ms[max(0, min(len(sorted_ms) - 1, int(round(p * len(sorted_ms))) - 1))]


def message(body):
    """The JSON-RPC answer of a POST, whether it came as JSON or as an SSE stream."""
    if body.lstrip().startswith(b"{"):
        return json.loads(body)
    for line in body.splitlines():
        if line.startswith(b"data:") and b'"result"' in line:
            return json.loads(line[5:])
    sys.exit(f"bench-retrieve: no answer in {body[:300]!r}")


def recall(queries, answers, k=5):
    """recall@k (the share of a query's labels in its top k, averaged over the queries) and, for
    sets whose labels name steps, steps@k (the share of a query's steps with a label in its top k,
    averaged over the queries), as `mcplex bench retrieval` computes them."""
    shares, step_shares = [], []
    for query, ids in zip(queries, answers):
        top = set(ids[:k])
        labels = {label["tool_id"] for label in query["labels"] if label.get("relevance", 0) >= 1}
        if not labels:
            continue
        shares.append(len(labels & top) / len(labels))
        by_step = {}
        for label in query["labels"]:
            if "step" in label and label["tool_id"] in labels:
                by_step.setdefault(label["step"], []).append(label["tool_id"] in top)
        if by_step:
            step_shares.append(sum(any(hits) for hits in by_step.values()) / len(by_step))
    figures = {"recall@5": round(sum(shares) / max(1, len(shares)), 3)}
    if step_shares:
        figures["steps@5"] = round(sum(step_shares) / len(step_shares), 3)
    return figures


def measure(port, queries, first_id):
    connection, headers = session(port)
    times, answers = [], []
    for offset, query in enumerate(q["query"] for q in queries):
        body = {"jsonrpc": "2.0", "id": first_id + offset, "method": "tools/call",
                "params": {"name": "retrieve_tools", "arguments": {"query": query}}}
        started = time.perf_counter()
        connection.request("POST", "/mcp/call", json.dumps(body), headers)
        answer = connection.getresponse()
        text = answer.read()
        times.append((time.perf_counter() - started) * 1000)
        if answer.status != 200 or b'"result"' not in text:
            sys.exit(f"bench-retrieve: a call failed: {answer.status} {text[:300]!r}")
        answers.append([tool["id"] for tool in message(text)["result"]["structuredContent"]["tools"]])
    times.sort()
    return {"queries": len(times), "p50_ms": round(percentile(times, 0.5), 2),
            "p99_ms": round(percentile(times, 0.99), 2), **recall(queries, answers),
            "answers": {q["query"]: ids[:5] for q, ids in zip(queries, answers)}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mcplex", action="append", required=True)
    parser.add_argument("--fixture", default=None)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--queries", action="append", required=True)
    parser.add_argument("--model", default=None)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", default="target/bench/retrieve.json")
    opts = parser.parse_args()
    fixture = opts.fixture or os.path.join(os.path.dirname(os.path.abspath(opts.mcplex[0])), "mcplex-fixture")
    corpus = os.path.abspath(opts.corpus)
    sets = {os.path.basename(path): json.load(open(path))["queries"] for path in opts.queries}
    model = os.path.abspath(opts.model) if opts.model else None
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for round_ in range(1, opts.rounds + 1):
            for mcplex in opts.mcplex:
                process, port = serve(os.path.abspath(mcplex), fixture, corpus, workdir, model)
                try:
                    first_id = 1
                    for name, queries in sets.items():
                        figures = measure(port, queries, first_id)
                        first_id += len(queries)
                        answers = figures.pop("answers")
                        rows.append({"round": round_, "mcplex": mcplex, "set": name, **figures,
                                     "top5": answers})
                        print(f"round {round_}  {mcplex:<32} {name:<40} {figures['queries']:>4} queries  "
                              f"p50 {figures['p50_ms']:>6.2f} ms  p99 {figures['p99_ms']:>6.2f} ms  "
                              f"recall@5 {figures['recall@5']:.3f}"
                              + (f"  steps@5 {figures['steps@5']:.3f}" if "steps@5" in figures else ""), flush=True)
                finally:
                    process.terminate()
                    process.wait()
    os.makedirs(os.path.dirname(os.path.abspath(opts.out)), exist_ok=True)
    with open(opts.out, "w") as out:
        json.dump({"benchmark": "retrieve", "corpus": opts.corpus, "rows": rows}, out, indent=2)


if __name__ == "__main__":
    main()
