// One server's page (#/servers/<name>): what runs (command or URL, secrets replaced), how it is
// isolated, the tools it offers (served or withheld, and why), its history on this replica as a
// timeline, its calls, errors and latency over the last hour or day (all its tools or one), a
// live stderr tail for a process the gateway started, Restart, and Remove for a server added
// from the dashboard. All read /api/v1 only.

import { h, fill, problem, badge, time, table, busy, count } from "./dom.js";
import { trendChart, spanButtons, trendsFetcher, LEGEND } from "./chart.js";
import { statusWord, isolationCell, stderrBlock } from "./overview.js";

/** What an event of the history says. */
const EVENT_WORDS = {
  connecting: "Starting",
  ready: "Ready",
  failed: "Failed to start",
  lost: "Lost (exited or disconnected)",
  restarted: "Restarted by an operator",
};

/** The command line or URL a server runs as, from its config entry (already redacted). */
function sourceList(config) {
  const t = (config && config.transport) || {};
  const rows = [["Transport", t.type || "—"]];
  if (t.type === "stdio") {
    rows.push(["Command", h("code", { id: "server-command" }, [t.command, ...(t.args || [])].join(" "))]);
    if (t.working_dir) rows.push(["Working directory", h("code", {}, t.working_dir)]);
    const env = Object.keys(t.env || {});
    if (env.length) rows.push(["Environment", h("code", {}, env.map((k) => `${k}=[redacted]`).join(" "))]);
  } else if (t.url) {
    rows.push(["URL", h("code", { id: "server-command" }, t.url)]);
    const headers = Object.keys(t.headers || {});
    if (headers.length) rows.push(["Headers", h("code", {}, headers.map((k) => `${k}: [redacted]`).join(", "))]);
  } else if (t.kind) {
    rows.push(["Built in", h("code", { id: "server-command" }, t.kind)]);
  }
  rows.push(["Trust", config.trust === "auto" ? "new tools approved on sight" : "every new or changed tool waits for approval"]);
  return h("dl", { class: "source" }, ...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

/** The tools it offers, as the catalog has them: served, or withheld and why. */
function toolsTable(name, tools) {
  return table(`The tools of ${name}`, ["Tool", "Status", "May", "Description"], tools.map((t) => [
    h("code", {}, t.id),
    badge(t.reason ? `${t.status}: ${t.reason.replaceAll("_", " ")}` : t.status),
    badge(t.permission),
    t.description == null ? "—" : String(t.description),
  ]), "It offers no tools (yet: a server that is starting lists them once it is ready).");
}

/** The history, newest first. */
function timeline(events) {
  if (!events.length) return h("p", { class: "muted" }, "Nothing happened to it on this replica yet.");
  return h("ol", { class: "timeline", id: "server-timeline", "aria-label": "What happened, newest first" },
    ...events.slice().reverse().map((e) => h("li", { class: `event-${e.kind}` },
      h("time", { datetime: new Date(e.at_ms).toISOString() }, time(e.at_ms)),
      badge(e.kind),
      h("span", {}, EVENT_WORDS[e.kind] || e.kind, e.detail ? `: ${e.detail}` : ""))));
}

export async function serverPage(root, cx, name) {
  const title = h("h1", { id: "page-title" }, `Server ${name}`);
  const feedback = h("div", { "aria-live": "polite" });
  const body = h("div", {});
  const span = { hours: 1, tool: "" };
  const loading = h("div", {});
  // The stderr tail is drawn apart from the rest, so a chatty server's new lines do not rebuild
  // the page (nor close the tool picker or move the tail's scroll); the rest waits while the
  // picker has focus, unless the operator just changed it (`chosen`).
  const tailBox = h("div", {});
  root.append(h("p", {}, h("a", { href: "#/servers" }, "← All servers")), title, loading, feedback, body, tailBox);
  let last = "";
  // An action's outcome, said where the pressed button was; keyboard focus moves to it at once
  // (the refresh after it keeps focus there: the message is outside what it rebuilds).
  function said(message) {
    const done = h("p", { class: "ok", id: "server-done", tabindex: "-1" }, message);
    fill(feedback, done);
    done.focus();
  }
  async function restart() {
    if (!window.confirm(`Restart ${name} on this replica? Its process is stopped (calls in flight fail) and started again.`)) return;
    fill(feedback);
    try {
      const done = await cx.api("POST", `/api/v1/servers/${encodeURIComponent(name)}/restart`);
      said(done.message);
      last = "";
      await refresh();
    } catch (e) {
      fill(feedback, problem(e.message));
    }
  }
  // Approving pins and serves exactly the tools the table on this page shows.
  async function decide(action, listed) {
    const question = action === "approve"
      ? `Approve ${name}? ${listed === 1 ? "Its 1 tool listed on this page is pinned as it is now" : `Its ${listed} tools listed on this page are pinned as they are now`} and served.`
      : `Quarantine ${name}? Its tools stop being served to every caller at once, on every replica.`;
    if (!window.confirm(question)) return;
    fill(feedback);
    try {
      const done = await cx.api("POST", `/api/v1/servers/${encodeURIComponent(name)}/${action}`);
      said(done.message);
      last = "";
      await refresh();
    } catch (e) {
      fill(feedback, problem(e.message));
    }
  }
  async function remove() {
    if (!window.confirm(`Remove ${name}? Every replica stops it and its tools are no longer served.`)) return;
    fill(feedback);
    try {
      await cx.api("DELETE", `/api/v1/servers/${encodeURIComponent(name)}`);
      cx.navigate("#/servers");
    } catch (e) {
      fill(feedback, problem(e.message));
    }
  }
  function choose(change) {
    Object.assign(span, change);
    last = "";
    refresh(true).catch((e) => fill(loading, problem(e.message)));
  }
  const trendsOf = trendsFetcher(cx.api);
  // Each refresh is numbered: an answer that arrives after a newer refresh started (the span
  // changed meanwhile, say) is dropped, never drawn over the newer one.
  let asked = 0;
  let lastTail = "";
  async function refresh(chosen = false) {
    const mine = ++asked;
    const path = encodeURIComponent(name);
    const trendQuery = span.tool ? `tool=${encodeURIComponent(span.tool)}` : `server=${path}`;
    const [detail, trends, tools] = await Promise.all([
      cx.api("GET", `/api/v1/servers/${path}`),
      trendsOf(`/api/v1/trends?hours=${span.hours}&${trendQuery}`),
      cx.api("GET", "/api/v1/tools"),
    ]);
    const stdio = detail.config && detail.config.transport && detail.config.transport.type === "stdio";
    const tail = stdio ? await cx.api("GET", `/api/v1/servers/${path}/stderr`).catch((e) => ({ error: e.message })) : null;
    if (mine !== asked) return;
    fill(loading);
    const tailKey = JSON.stringify(tail);
    if (tailKey !== lastTail) {
      lastTail = tailKey;
      fill(tailBox, stdio ? stderrBlock(name, tail) : null);
    }
    const key = JSON.stringify([detail, trends, tools, span]);
    if (key === last || (!chosen && busy(body))) return;
    last = key;
    const focused = document.activeElement && document.activeElement.id;
    const server = detail.server;
    const offered = tools.tools.filter((t) => t.id.startsWith(`${name}:`));
    const own = offered.map((t) => t.id);
    const { chart, words } = trendChart(trends, "server-trend");
    const picker = h("select", { id: "trend-tool", "aria-label": "Whose calls", onchange: (e) => choose({ tool: e.target.value }) },
      h("option", { value: "" }, `All tools of ${name}`),
      ...own.map((id) => h("option", { value: id, selected: id === span.tool }, id)));
    const spans = spanButtons(span.hours, (hours) => choose({ hours }), "trend");
    fill(body,
      h("div", { class: "row" }, badge(statusWord(server)), " ",
        h("span", { class: "muted" }, `${count(server.tools ?? 0, "tool")} served, ${server.withheld ?? 0} withheld`),
        server.state === "quarantined"
          ? h("button", { type: "button", class: "primary operator-only", id: "approve-server", onclick: () => decide("approve", offered.length) },
            `Approve ${name} and its ${count(offered.length, "tool")}`)
          : h("button", { type: "button", class: "danger operator-only", id: "quarantine-server", onclick: () => decide("quarantine", 0) }, `Quarantine ${name}`),
        h("button", { type: "button", class: "operator-only", id: "restart-server", onclick: restart }, `Restart ${name}`),
        detail.added
          ? h("button", { type: "button", class: "danger operator-only", id: "remove-server", onclick: remove }, `Remove ${name}`)
          : null),
      h("h2", {}, "What runs"),
      h("div", { class: "card" }, sourceList(detail.config),
        h("p", { class: "muted", id: "server-origin" }, detail.added
          ? "Added from the dashboard: kept in the control plane, run by every replica."
          : "From the config file: edit it there."),
        h("h3", {}, "Isolation"), isolationCell(server)),
      h("h2", {}, "Tools"),
      toolsTable(name, offered),
      h("h2", {}, "Calls, errors and latency"),
      h("div", { class: "card" }, h("div", { class: "row" }, ...spans, picker), chart,
        h("p", { class: "muted", id: "server-trend-words" }, words, LEGEND)),
      h("h2", {}, "History on this replica"),
      timeline(detail.history));
    if (focused) document.getElementById(focused)?.focus();
  }
  try {
    await refresh();
  } catch (e) {
    // A server just added may not be in this replica's catalog yet: said, and tried again.
    fill(loading, problem(e.message));
  }
  return { refresh, every: 2000 };
}
