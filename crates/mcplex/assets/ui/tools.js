// Tools: the catalog with filters (server, state, text), block and approve; a tool's review
// page shows the pinned and the new definition side by side with the differences marked, and
// "Approve" pins exactly the hash shown (the gateway refuses it if the tool changed since).

import { h, fill, problem, table, paged, badge, short, busy } from "./dom.js";
import { lineDiff, wordDiff } from "./diff.js";

const PAGE = 50;
const STATES = ["approved", "pending", "changed", "blocked"];

export async function tools(root, cx) {
  root.append(h("h1", { id: "page-title" }, "Tools"));
  const server = h("select", { id: "filter-server" }, h("option", { value: "" }, "All servers"));
  const state = h("select", { id: "filter-state" }, h("option", { value: "" }, "Any state"),
    STATES.map((s) => h("option", { value: s }, s)));
  const text = h("input", { id: "filter-text", type: "search", placeholder: "name, id or description" });
  const feedback = h("div", { "aria-live": "polite" });
  const body = h("div", {});
  const paging = { page: 0 };
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  state.value = params.get("state") || "";
  for (const control of [server, state, text]) {
    control.addEventListener("input", () => { paging.page = 0; last = ""; draw(); });
  }
  root.append(h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() },
    h("label", {}, "Server ", server), h("label", {}, "State ", state), h("label", {}, "Text ", text)),
  feedback, body);
  let answer = { tools: [] };
  let last = "";

  async function block(id) {
    fill(feedback);
    try {
      if (!window.confirm(`Block ${id}? It stops being served to every caller at once, whatever its definition.`)) return;
      const done = await cx.api("POST", `/api/v1/tools/${encodeURIComponent(id)}/block`);
      fill(feedback, h("p", { class: "ok" }, done.message));
      await refresh();
    } catch (e) { fill(feedback, problem(e.message)); }
  }

  function draw() {
    const names = [...new Set(answer.tools.map((t) => t.id.split(":")[0]))].sort();
    if (server.options.length - 1 !== names.length) {
      const chosen = server.value;
      fill(server, h("option", { value: "" }, "All servers"), names.map((n) => h("option", { value: n }, n)));
      server.value = chosen;
    }
    const needle = text.value.trim().toLowerCase();
    const shown = answer.tools.filter((t) =>
      (!server.value || t.id.startsWith(`${server.value}:`)) &&
      (!state.value || t.status === state.value) &&
      (!needle || `${t.id} ${t.name || ""} ${typeof t.description === "string" ? t.description : ""}`.toLowerCase().includes(needle)));
    const key = JSON.stringify([shown, paging.page]);
    if (key === last) return;
    last = key;
    const { slice, controls } = paged(shown, paging, PAGE, draw);
    fill(body, h("p", { class: "muted" }, `${shown.length} of ${answer.tools.length} tools`),
      table("Tools", ["Tool", "Name", "State", "Permission", "Pin", "Actions"], slice.map((t) => [
        h("a", { href: `#/tools/${encodeURIComponent(t.id)}` }, t.id),
        t.name || h("span", { class: "muted" }, t.reason ? t.reason.replaceAll("_", " ") : "—"),
        h("span", {}, badge(t.status), t.deferred ? " deferred" : ""),
        t.permission,
        h("code", {}, short(t.pin)),
        h("div", { class: "actions" },
          t.status === "approved"
            ? h("button", { type: "button", class: "operator-only", onclick: () => block(t.id) }, "Block")
            : h("a", { class: "button primary", href: `#/tools/${encodeURIComponent(t.id)}` }, "Review"),
          t.status === "approved" && t.name ? h("a", { class: "button quiet", href: `#/try/${encodeURIComponent(t.id)}` }, "Try") : null),
      ]), "No tool matches."), controls);
  }

  async function refresh() {
    answer = await cx.api("GET", "/api/v1/tools");
    if (!busy(body)) draw();
  }
  await refresh();
  return { refresh, every: 2000 };
}

/** Everything of a definition but its description, pretty-printed with sorted keys. */
function schemaText(definition) {
  if (!definition || typeof definition !== "object") return "";
  const { description, ...rest } = definition;
  return JSON.stringify(sorted(rest), null, 2);
}

function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sorted(value[k])]));
  }
  return value;
}

export async function review(root, cx, id) {
  root.append(h("p", {}, h("a", { href: "#/tools" }, "← All tools")),
    h("h1", { id: "page-title" }, `Review ${id}`));
  const feedback = h("div", { "aria-live": "polite" });
  const body = h("div", {});
  root.append(feedback, body);
  let shown = null;

  async function load() {
    const answer = await cx.api("GET", `/api/v1/tools/${encodeURIComponent(id)}/review`);
    const key = JSON.stringify(answer);
    if (shown && key === shown.key) return;
    shown = { key, answer };
    draw(answer);
  }

  async function approve(hash) {
    fill(feedback);
    try {
      const path = `/api/v1/tools/${encodeURIComponent(id)}/approve?hash=${encodeURIComponent(hash)}`;
      const done = await cx.api("POST", path);
      fill(feedback, h("p", { class: "ok", id: "approved" }, done.message));
      await load();
    } catch (e) {
      fill(feedback, problem(`Not approved: ${e.message}`));
      shown = null;
      await load();
    }
  }

  async function block() {
    fill(feedback);
    try {
      if (!window.confirm(`Block ${id}? It stops being served to every caller at once, whatever its definition.`)) return;
      const done = await cx.api("POST", `/api/v1/tools/${encodeURIComponent(id)}/block`);
      fill(feedback, h("p", { class: "ok" }, done.message));
      await load();
    } catch (e) { fill(feedback, problem(e.message)); }
  }

  function draw(answer) {
    const pinned = answer.pinned, observed = answer.observed;
    const before = pinned && pinned.definition ? pinned.definition : null;
    const after = observed ? observed.definition : null;
    const parts = [h("p", {}, "State: ", badge(answer.state.split(":")[0]), answer.blocked ? " (blocked)" : "")];
    if (pinned && !before) parts.push(h("p", { class: "muted" }, `The pinned definition (${short(pinned.hash)}) was not recorded; only its hash is known.`));
    if (!after) parts.push(problem("No gateway has observed this tool yet: there is nothing to approve. Is its server connected and approved?"));
    if (after) {
      const description = wordDiff(before ? before.description : "", after.description);
      const schema = lineDiff(before ? schemaText(before) : "", schemaText(after));
      const same = pinned && observed && pinned.hash === observed.hash;
      parts.push(
        h("div", { class: "side-by-side" },
          h("section", { class: "card", "aria-label": "Pinned definition" },
            h("h2", {}, "Pinned ", h("code", {}, pinned ? short(pinned.hash) : "nothing yet")),
            h("h3", {}, "Description"), description.left),
          h("section", { class: "card", "aria-label": "New definition" },
            h("h2", {}, same ? "Observed (same) " : "New ", h("code", { id: "shown-hash" }, short(observed.hash))),
            h("h3", {}, "Description"), description.right)),
        h("h3", {}, schema.changed ? "Name and schema" : "Name and schema (unchanged)"),
        h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "Schema differences" }, schema.table),
        h("p", { class: "muted" }, description.changed || schema.changed
          ? "Removed text is struck through on the left, added text underlined on the right."
          : "No difference between the pinned and the observed definition."),
        h("div", { class: "actions" },
          // Neither decision is the default: blocking is marked as the safe one, approving the
          // exact hash read above is a plain, deliberate click.
          answer.blocked ? null : h("button", { type: "button", class: "danger operator-only", id: "block", onclick: block }, "Block"),
          same && !answer.blocked ? null : h("button", { type: "button", class: "operator-only", id: "approve", onclick: () => approve(observed.hash) },
            `Approve exactly ${short(observed.hash)}`)));
    }
    fill(body, parts);
  }

  await load();
  return { refresh: load, every: 2000 };
}
