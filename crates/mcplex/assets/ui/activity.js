// Activity (the audit log, newest first, filters, paging, live: re-read every second while the
// newest page is open; the rows the filters select exported oldest first as CSV or JSON Lines,
// as `mcplex activity export` writes them, for an operator) and Search (the catalog ranked as tool_search and retrieve_tools rank
// it, with the scores).

import { h, fill, problem, table, pager, badge, time, isViewer } from "./dom.js";

const PAGE = 50;
const STATUSES = ["ok", "tool_error", "invalid_arguments", "unknown_tool", "unavailable", "timeout", "cancelled", "upstream_error"];

export async function activity(root, cx) {
  root.append(h("h1", { id: "page-title" }, "Activity"));
  const token = h("input", { id: "activity-token", list: "activity-tokens", placeholder: "any; - for the operator", autocomplete: "off" });
  const tokens = h("datalist", { id: "activity-tokens" });
  const tool = h("input", { id: "activity-tool", placeholder: "server:tool", autocomplete: "off" });
  const outcome = h("select", { id: "activity-status" }, h("option", { value: "" }, "Any outcome"), STATUSES.map((s) => h("option", { value: s }, s)));
  const live = h("p", { class: "muted", "aria-live": "off" });
  const body = h("div", {});
  const paging = { offset: 0 };
  // Downloads through the session, like every other read; a viewer may not export.
  const exports = ["csv", "jsonl"].map((format) => h("button", {
    type: "button", id: `activity-export-${format}`,
    onclick: (e) => cx.download(e.currentTarget.dataset.href, `mcplex-activity.${format}`)
      .catch((error) => cx.say(error.message)),
  }, `Export ${format === "csv" ? "CSV" : "JSON Lines"}`));
  const exporting = isViewer() ? [] : [h("p", { class: "exports" }, exports)];
  root.append(h("form", { class: "filters", role: "search", onsubmit: (e) => { e.preventDefault(); paging.offset = 0; refresh(); } },
    h("label", {}, "Token ", token, tokens), h("label", {}, "Tool ", tool), h("label", {}, "Outcome ", outcome),
    h("button", { type: "submit" }, "Filter")), ...exporting, live, body);
  outcome.addEventListener("change", () => { paging.offset = 0; refresh(); });
  cx.api("GET", "/api/v1/tokens").then((answer) => fill(tokens,
    h("option", { value: "-" }, "the operator (no token)"),
    answer.tokens.map((t) => h("option", { value: t.name })))).catch(() => null);
  let last = "";
  let seen = new Set();

  async function refresh() {
    const query = new URLSearchParams({ offset: String(paging.offset), limit: String(PAGE) });
    if (token.value.trim()) query.set("token", token.value.trim());
    if (tool.value.trim()) query.set("tool", tool.value.trim());
    if (outcome.value) query.set("status", outcome.value);
    for (const link of exports) {
      const selected = new URLSearchParams(query);
      selected.delete("offset");
      selected.delete("limit");
      selected.set("format", link.id.replace("activity-export-", ""));
      link.dataset.href = `/api/v1/activity/export?${selected}`;
    }
    const answer = await cx.api("GET", `/api/v1/activity?${query}`);
    live.textContent = paging.offset === 0
      ? `Live: newest first, updated twice a second (last read ${new Date().toLocaleTimeString()}).`
      : "Older calls: not updated live. Go back to the newest page to follow.";
    const key = JSON.stringify([answer, paging.offset]);
    if (key === last) return;
    last = key;
    const fresh = new Set(answer.entries.map((e) => e.request_id));
    const rows = answer.entries.map((e) => [
      time(e.at_ms),
      e.token || h("span", { class: "muted" }, "operator"),
      h("code", {}, e.tool),
      e.method,
      badge(e.status),
      (e.duration_us / 1000).toFixed(1),
      `${e.request_bytes} / ${e.response_bytes}`,
      e.replica || "—",
      h("code", { class: seen.size && !seen.has(e.request_id) ? "new" : "" }, e.request_id),
    ]);
    seen = fresh;
    const page = Math.floor(paging.offset / PAGE) + 1;
    fill(body, table("Activity", ["Time (UTC)", "Token", "Tool", "Method", "Outcome", "ms", "Bytes in / out", "Replica", "Request"], rows,
      "No call matches (yet)."),
    pager(paging.offset > 0, answer.more, `Page ${page}`, (delta) => {
      paging.offset = Math.max(0, paging.offset + delta * PAGE);
      refresh();
    }, ["Newer", "Older"]));
  }
  await refresh();
  return { refresh: () => (paging.offset === 0 ? refresh() : Promise.resolve()), every: 500 };
}

export async function search(root, cx) {
  root.append(h("h1", { id: "page-title" }, "Search"),
    h("p", { class: "muted" }, "Ranks the served tools exactly as an agent's tool_search or retrieve_tools would, and shows each match's score."));
  const query = h("input", { id: "search-query", type: "search", required: true, autocomplete: "off" });
  const servers = await cx.api("GET", "/api/v1/servers");
  const server = h("select", { id: "search-server" }, h("option", { value: "" }, "All servers"),
    servers.servers.map((s) => h("option", { value: s.name }, s.name)));
  const limit = h("input", { id: "search-limit", type: "number", min: "1", max: "50", value: "10" });
  const body = h("div", { "aria-live": "polite" });
  let timer = null;
  async function run() {
    if (!query.value.trim()) { fill(body); return; }
    try {
      const answer = await cx.api("POST", "/api/v1/search", {
        query: query.value, limit: Number(limit.value) || 10, server: server.value || null,
      });
      const top = answer.tools.length ? answer.tools[0].score || 1 : 1;
      fill(body, h("p", { class: "muted" }, `${answer.total} matched; ranking: ${answer.ranking}.`),
        table("Search results", ["#", "Score", "Tool", "Server", "Description", ""], answer.tools.map((t, i) => [
          String(i + 1),
          h("span", { class: "score" }, h("meter", { min: "0", max: String(top), value: String(t.score), "aria-hidden": "true" }), " ", t.score.toFixed(3)),
          h("span", {}, h("strong", {}, t.name), t.deferred ? " (deferred)" : "", h("br", {}), h("code", { class: "muted" }, t.id)),
          t.server,
          t.description.length > 200 ? `${t.description.slice(0, 200)}…` : t.description,
          h("a", { class: "button quiet", href: `#/try/${encodeURIComponent(t.id)}` }, "Try"),
        ]), "No tool matches."));
    } catch (e) { fill(body, problem(e.message)); }
  }
  query.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 250); });
  root.append(h("form", { class: "filters", role: "search", onsubmit: (e) => { e.preventDefault(); run(); } },
    h("label", {}, "Query ", query), h("label", {}, "Server ", server), h("label", {}, "Matches ", limit),
    h("button", { type: "submit", class: "primary" }, "Search")), body);
  query.focus();
}
