// Overview (readiness at a glance), Servers (approve, quarantine, an OAuth login, stderr tail) and Config (the
// effective config redacted, with the current diagnostics). All read /api/v1 only.

import { h, fill, problem, table, paged, badge, busy, isViewer, count } from "./dom.js";
import { trendChart, spanButtons, trendsFetcher, LEGEND } from "./chart.js";
import { addServerSection } from "./add_server.js";

const PAGE = 25;

/** The status word of a server: ready, connecting, unhealthy: reason, needs_login: reason... */
export function statusWord(server) {
  if (server.state === "quarantined") return "quarantined";
  if (crashLooping(server)) return `crash_loop: ${server.failures.recent} failures in 10 min, last: ${server.failures.last || "?"}`;
  return server.status;
}

/** Where a server's own page is. */
export function serverHref(name) {
  return `#/servers/${encodeURIComponent(name)}`;
}

/** A server's name, linking to its page for an operator (a server's page, with its config and
 * stderr, is an operator's to read). */
function serverName(name, attrs = {}, ...inner) {
  const shown = inner.length ? inner : [name];
  return isViewer() ? h("span", attrs, ...shown) : h("a", { href: serverHref(name), ...attrs }, ...shown);
}

/** Up, but failing again and again lately (as the API's CRASH_LOOP_FAILURES says): not green. */
function crashLooping(server) {
  return server.status === "ready" && server.failures && server.failures.recent >= 3;
}

/** How a server's process is isolated: a word, the one-line summary, and a refusal it may have met. */
export function isolationCell(server) {
  const isolation = server.isolation;
  if (!isolation) return h("span", { class: "muted" }, "—");
  const word = { full: "sandboxed", partial: "partly_sandboxed", off: "unconfined" }[isolation.level] || isolation.level;
  return h("div", { class: "isolation" },
    h("span", { class: `badge b-iso-${isolation.level}`, id: `iso-${server.name}`, title: isolation.summary }, word.replaceAll("_", " ")),
    // Said on the page, not only in the badge's tooltip (which touch screens never show).
    isolation.quarantine
      ? h("p", { class: "reason" }, "Quarantine policy until approved: no network, no writes beyond its temp directory.")
      : (!isolation.network ? h("p", { class: "reason" }, "No network.") : null),
    isolation.missing.length ? h("p", { class: "reason" }, `Missing: ${isolation.missing.join("; ")}`) : null,
    isolation.denied
      ? h("p", { class: "reason" }, `Refused? ${isolation.denied} — grant the path in the server's "sandbox": {"write": [...]}.`)
      : null);
}

/** The last hour or day (`hours`): calls (failed in red) and the latency, every replica's. */
function trendSection(trends, hours, choose) {
  const { chart, words } = trendChart(trends, "trend-calls");
  return h("section", { "aria-labelledby": "trend-title" },
    h("h2", { id: "trend-title" }, hours === 1 ? "Last hour" : "Last 24 hours"),
    h("div", { class: "card" }, h("div", { class: "row" }, spanButtons(hours, choose, "overview-trend")),
      chart, h("p", { class: "muted", id: "trend-words" }, words, LEGEND)));
}

/** How many things need the operator now (the navigation's count). */
export async function needsCount(api) {
  const [servers, approvals, gateway] = await Promise.all([
    api("GET", "/api/v1/servers"),
    api("GET", "/api/v1/approvals"),
    api("GET", "/api/v1/config").then(gatewayState).catch(() => null),
  ]);
  return needsYou(servers.servers, approvals, gateway).length;
}

/** What waits for the operator, each one click from where it is decided. */
/** What of the config answer the queue needs: a refused edit, and whether the store answers. */
function gatewayState(config) {
  return { refusedEdit: config.refused_edit, storeReachable: config.store_reachable };
}

/** What waits for the operator, each one click from where it is decided. `gateway` is
 * `gatewayState`'s (null for a viewer, who cannot read the config). */
function needsYou(servers, approvals, gateway) {
  const needs = [];
  for (const name of approvals.servers) {
    needs.push({ kind: "quarantined", text: `Server ${name} waits for approval.`, href: "#/servers", action: `Review ${name}` });
  }
  for (const t of approvals.tools.filter((t) => t.reason !== "server_quarantined")) {
    needs.push({ kind: t.status, text: `Tool ${t.id} is ${t.reason.replaceAll("_", " ")}.`, href: `#/tools/${encodeURIComponent(t.id)}`, action: `Review ${t.id}` });
  }
  for (const s of servers) {
    if (String(s.status).startsWith("needs_login")) {
      needs.push({ kind: "needs_login", text: `Server ${s.name} needs a login.`, href: "#/servers", action: `Log in to ${s.name}` });
    } else if (crashLooping(s)) {
      needs.push({ kind: "crash_loop", text: `Server ${s.name} failed ${s.failures.recent} times in 10 min (last: ${s.failures.last || "?"}).`, href: serverHref(s.name), action: `See ${s.name}` });
    } else if (String(s.status).startsWith("unhealthy")) {
      needs.push({ kind: "unhealthy", text: `Server ${s.name} is not answering: ${String(s.status).slice("unhealthy: ".length)}`, href: serverHref(s.name), action: `See ${s.name}` });
    }
  }
  if (gateway && gateway.storeReachable === false) {
    needs.push({ kind: "unhealthy", text: "The store does not answer: every change is refused until it does, and this replica serves from what it last read.", href: "#/config", action: "See the config" });
  }
  if (gateway && gateway.refusedEdit) {
    needs.push({ kind: "unhealthy", text: `A config edit was refused: ${gateway.refusedEdit}`, href: "#/config", action: "See the config" });
  }
  return needs;
}

export async function overview(root, cx) {
  root.append(h("h1", { id: "page-title" }, "Overview"));
  const body = h("div", {});
  root.append(body);
  let last = "";
  let hours = 24;
  const trendsOf = trendsFetcher(cx.api);
  let asked = 0;
  const choose = (span) => {
    hours = span;
    last = "";
    refresh().then(() => document.getElementById(`overview-trend-${span}h`)?.focus(), (e) => cx.say(e.message));
  };
  async function refresh() {
    const mine = ++asked;
    const [servers, stats, approvals, gateway, trends] = await Promise.all([
      cx.api("GET", "/api/v1/servers"),
      cx.api("GET", "/api/v1/stats"),
      cx.api("GET", "/api/v1/approvals"),
      // The config and the trends are an operator's to read: a viewer's page goes without,
      // and does not ask.
      isViewer() ? null : cx.api("GET", "/api/v1/config").then(gatewayState).catch(() => null),
      isViewer() ? null : trendsOf(`/api/v1/trends?hours=${hours}`).catch(() => null),
    ]);
    // A newer refresh started meanwhile (the span changed): its answer is the one to draw.
    if (mine !== asked) return;
    const key = JSON.stringify([servers, stats, approvals, gateway, trends]);
    if (key === last) return;
    last = key;
    const counts = Object.fromEntries(stats.servers.map((s) => [s.server, s]));
    const list = servers.servers;
    const enabled = list.filter((s) => s.status !== "disabled");
    const connected = enabled.filter((s) => s.status === "ready" && !crashLooping(s)).length;
    const quarantined = list.filter((s) => s.state === "quarantined").length;
    const served = list.reduce((n, s) => n + (s.tools || 0), 0);
    const calls = stats.servers.reduce((n, s) => n + s.calls, 0);
    const errors = stats.servers.reduce((n, s) => n + s.errors, 0);
    // What needs an operator, each a click from where it is decided: not a viewer's list.
    const needs = isViewer() ? null : needsYou(list, approvals, gateway);
    const allReady = connected === enabled.length;
    fill(body,
      h("div", { class: "cards" },
        card("Readiness", allReady ? `All ${enabled.length} servers connected` : `${connected} of ${enabled.length} servers connected`,
          allReady ? "good" : "warn", quarantined ? h("p", { class: "muted" }, `${quarantined} quarantined`) : null),
        card("Tools served", String(served)),
        needs ? card("Needs you", needs.length ? count(needs.length, "item") : "Nothing needs you", needs.length ? "warn" : "good") : null,
        card("Calls, last hour", `${calls} (${errors} failed)`, errors ? "warn" : null)),
      needs && needs.length
        ? h("section", { id: "needs-you", "aria-labelledby": "needs-title" }, h("h2", { id: "needs-title" }, "Needs you"),
          h("ul", { class: "needs" }, needs.map((n) => h("li", {}, badge(n.kind), " ", n.text, " ", h("a", { href: n.href }, n.action)))))
        : null,
      trends ? trendSection(trends, hours, choose) : null,
      h("h2", {}, "Servers"),
      table("Servers", ["Server", "State", "Tools served", "Withheld", "Restarts", "Calls (1 h)", "Errors (1 h)"],
        list.map((s) => {
          const c = counts[s.name] || { calls: 0, errors: 0, restarts: 0 };
          return [serverName(s.name), badge(statusWord(s)), String(s.tools ?? "—"),
            String(s.withheld ?? "—"), String(c.restarts), String(c.calls), String(c.errors)];
        }), "No server is configured."));
  }
  await refresh();
  return { refresh };
}

function card(title, value, tone, extra) {
  return h("div", { class: `card stat ${tone ? `t-${tone}` : ""}` },
    h("h2", {}, title), h("p", { class: "value" }, value), extra);
}

export async function servers(root, cx) {
  root.append(h("h1", { id: "page-title" }, "Servers"),
    h("p", { class: "muted" }, "A quarantined server's tools are served to no one. Approving it serves the tools approval covers; quarantining withdraws them at once, on every replica."));
  const feedback = h("div", { "aria-live": "polite" });
  const body = h("div", {});
  root.append(addServerSection(cx, (name) => cx.navigate(serverHref(name))), feedback, body);
  const open = new Set();
  const paging = { page: 0 };
  let last = "";
  // One operator's change: its message is said where the pressed button was (the row now offers
  // something else), and keyboard focus stays there.
  async function perform(method, path) {
    fill(feedback);
    try {
      const done = await cx.api(method, path);
      const said = h("p", { class: "ok", id: "server-done", tabindex: "-1" }, done.message);
      fill(feedback, said);
      last = "";
      await refresh();
      said.focus();
    } catch (e) {
      fill(feedback, problem(e.message));
    }
  }
  async function act(name, action) {
    if (action === "quarantine"
      && !window.confirm(`Quarantine ${name}? Its tools stop being served to every caller at once, on every replica.`)) return;
    await perform("POST", `/api/v1/servers/${encodeURIComponent(name)}/${action}`);
  }
  // One caller's own login to a per_user server, revoked: its next call asks it to connect again.
  async function revoke(name, caller) {
    if (!window.confirm(`Revoke ${caller}'s login to ${name}? Its next call asks it to connect its account again.`)) return;
    await perform("DELETE", `/api/v1/servers/${encodeURIComponent(name)}/logins/${encodeURIComponent(caller)}`);
  }
  // The server's OAuth login, begun by the gateway: the authorization server sends the browser
  // back to the gateway, which stores the login and returns here.
  async function logIn(name) {
    fill(feedback);
    try {
      const started = await cx.api("POST", `/api/v1/servers/${encodeURIComponent(name)}/login`);
      window.location.assign(started.url);
    } catch (e) {
      fill(feedback, problem(e.message));
    }
  }
  // Approving a server pins and serves every tool it offers: they are shown first, with what
  // each may do, and approved only on a second, explicit click.
  async function preview(name) {
    fill(feedback);
    try {
      const answer = await cx.api("GET", "/api/v1/tools");
      const offered = answer.tools.filter((t) => t.id.startsWith(`${name}:`));
      const cancel = () => fill(feedback);
      fill(feedback, h("div", { class: "card", id: "approve-preview", role: "region", "aria-label": `Approve ${name}` },
        h("h2", {}, `Approve ${name}?`),
        h("p", {}, `${offered.length === 1 ? "Its 1 tool will be pinned as it is now" : `Its ${offered.length} tools will be pinned as they are now`} and served to every caller whose scope reaches ${name}:`),
        table(`The tools of ${name}`, ["Tool", "May", "Description"], offered.map((t) => [
          h("code", {}, t.id), badge(t.permission), t.description == null ? "—" : String(t.description),
        ]), "It offers no tools yet."),
        h("div", { class: "row" },
          h("button", { type: "button", class: "primary", id: `confirm-approve-${name}`, onclick: () => act(name, "approve") }, `Approve ${name} and its ${count(offered.length, "tool")}`),
          h("button", { type: "button", onclick: cancel }, "Cancel"))));
      document.getElementById(`confirm-approve-${name}`)?.focus();
    } catch (e) {
      fill(feedback, problem(e.message));
    }
  }
  async function refresh() {
    const answer = await cx.api("GET", "/api/v1/servers");
    const tails = {};
    for (const name of open) {
      tails[name] = await cx.api("GET", `/api/v1/servers/${encodeURIComponent(name)}/stderr`).catch((e) => ({ error: e.message }));
    }
    const key = JSON.stringify([answer, tails, paging.page]);
    if (key === last || busy(body)) return;
    last = key;
    const focused = document.activeElement && document.activeElement.id;
    const { slice, controls } = paged(answer.servers, paging, PAGE, () => { last = ""; refresh(); });
    // A viewer has no actions: no column for them.
    const viewer = isViewer();
    const headers = ["Server", "State", "Tools served", "Withheld", "Isolation", ...(viewer ? [] : ["Actions"])];
    fill(body, table("Servers", headers, slice.map((s) => [
      serverName(s.name, { id: `page-${s.name}` }, h("strong", {}, s.name)),
      badge(statusWord(s)),
      String(s.tools ?? "—"),
      String(s.withheld ?? "—"),
      isolationCell(s),
      ...(viewer ? [] : [actions(s, tails[s.name])]),
    ]), "No server is configured."), controls);
    if (focused) document.getElementById(focused)?.focus();
  }
  /** An operator's buttons for server `s`, and what they open under it (`tail`, its stderr's
   * when that is open). */
  function actions(s, tail) {
    return h("div", { class: "actions" },
      String(s.status).startsWith("needs_login")
        ? h("button", { type: "button", class: "primary operator-only", id: `login-${s.name}`, onclick: () => logIn(s.name) }, `Log in to ${s.name}`)
        : null,
      s.state === "quarantined"
        ? h("button", { type: "button", class: "primary operator-only", id: `approve-${s.name}`, onclick: () => preview(s.name) }, `Approve ${s.name}`)
        : h("button", { type: "button", class: "operator-only", id: `quarantine-${s.name}`, onclick: () => act(s.name, "quarantine") }, `Quarantine ${s.name}`),
      // Only a process the gateway started has a stderr; its tail opens right under the button.
      s.isolation
        ? h("button", { type: "button", class: "quiet operator-only", id: `stderr-${s.name}`, "aria-expanded": String(open.has(s.name)),
          onclick: () => { open.has(s.name) ? open.delete(s.name) : open.add(s.name); last = ""; refresh(); } },
          open.has(s.name) ? "Hide stderr" : "Show stderr")
        : null,
      open.has(s.name) ? stderrBlock(s.name, tail) : null,
      s.connected ? connectedBlock(s, revoke) : null);
  }
  await refresh();
  return { refresh, every: 2000 };
}

/** A per_user server's callers that connected their own account, each revocable. */
function connectedBlock(server, revoke) {
  const callers = server.connected;
  return h("div", { class: "connected", id: `connected-${server.name}` },
    h("p", { class: "reason" }, callers.length
      ? `Each caller uses its own account; connected: ${callers.length}.`
      : "Each caller uses its own account; none has connected yet."),
    callers.length
      ? h("ul", {}, ...callers.map((c) => h("li", {},
        h("code", {}, c.caller), " ",
        h("button", { type: "button", class: "quiet operator-only", id: `revoke-${server.name}-${c.caller}`, onclick: () => revoke(server.name, c.caller) },
          `Revoke ${c.caller}`))))
      : null);
}

export function stderrBlock(name, tail) {
  if (!tail) return null;
  if (tail.error) return problem(`stderr of ${name}: ${tail.error}`);
  return h("section", { class: "card" },
    h("h2", {}, `stderr of ${name} (last ${tail.lines.length} lines, secrets redacted)`),
    tail.lines.length
      ? h("pre", { class: "tail", tabindex: "0" }, tail.lines.join("\n"))
      : h("p", { class: "muted" }, "Nothing written to stderr (or not a local process)."));
}

/** How searches rank: hybrid with the model, BM25F while it embeds, or BM25F alone and why. */
function searchStatus(search) {
  if (search.ranking === "hybrid") {
    const on = search.instructions ? `, computed with ${search.instructions} instructions` : "";
    return h("p", { class: "ok", id: "search-status" }, `Hybrid: BM25F with the sentence model ${search.model}${on}.`);
  }
  if (search.model && search.embedding_failed) {
    return h("p", { class: "error", id: "search-status" },
      `BM25F: ${search.model} could not embed the tools: ${search.embedding_failed}.`);
  }
  if (search.model) {
    return h("p", { class: "muted", id: "search-status" }, `BM25F while ${search.model} embeds the tools.`);
  }
  const { because, message } = search.without_model || { because: "failed", message: "the gateway did not say why" };
  return h("p", { class: because === "failed" ? "error" : "muted", id: "search-status" },
    `BM25F alone, without a sentence model: ${message}.`);
}

export async function config(root, cx) {
  root.append(h("h1", { id: "page-title" }, "Config"),
    h("p", { class: "muted" }, "The configuration this gateway runs with: env and header values, credential-named arguments, URL secrets and passwords are replaced by [redacted]."));
  const body = h("div", {});
  root.append(body);
  let last = "";
  async function refresh() {
    const answer = await cx.api("GET", "/api/v1/config");
    const key = JSON.stringify(answer);
    if (key === last) return;
    last = key;
    fill(body,
      h("h2", {}, "Search"),
      searchStatus(answer.search),
      h("h2", {}, "Diagnostics"),
      answer.refused_edit
        ? h("div", { class: "error", id: "refused-edit", role: "alert" }, h("strong", {}, "A config edit was refused: "), answer.refused_edit)
        : null,
      answer.diagnostics.length || answer.warnings.length || answer.refused_edit
        ? h("ul", { class: "diagnostics" },
          answer.diagnostics.map((d) => h("li", {}, h("strong", {}, d.server), ": ", d.message)),
          answer.warnings.map((w) => h("li", {}, h("strong", {}, "config"), ": ", w)))
        : h("p", { class: "ok" }, "No diagnostics: every server's tools were taken in."),
      h("h2", {}, "Effective config"),
      h("pre", { class: "json", tabindex: "0" }, JSON.stringify(answer.config, null, 2)));
  }
  await refresh();
  return { refresh, every: 3000 };
}
