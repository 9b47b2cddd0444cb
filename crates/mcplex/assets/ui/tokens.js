// Tokens: create one with a scope picker (servers, permissions, profile, expiry, limits), its
// secret shown once; the list with each token's limits and last minute's use; revoke. Through
// /api/v1/tokens and /api/v1/limits, like `mcplex token`.

import { h, fill, problem, table, paged, badge, time, busy, count } from "./dom.js";

const PAGE = 25;
const PERMISSIONS = [
  ["read", "read: tools that only read"],
  ["write", "write: tools that change things"],
  ["destructive", "destructive: tools that delete or overwrite"],
];
const EXPIRIES = [["", "Never"], ["1h", "1 hour"], ["24h", "1 day"], ["7d", "7 days"], ["30d", "30 days"], ["90d", "90 days"]];

export async function tokens(root, cx) {
  root.append(h("h1", { id: "page-title" }, "Tokens"),
    h("p", { class: "muted" }, "An agent token reaches the servers and permissions chosen here. Its secret is shown once, when it is created; the gateway keeps only a keyed hash."));
  const [servers, config, tools] = await Promise.all([cx.api("GET", "/api/v1/servers"), cx.api("GET", "/api/v1/config"), cx.api("GET", "/api/v1/tools")]);
  const created = h("div", { "aria-live": "polite" });
  const list = h("div", {});
  root.append(createForm(cx, servers.servers.map((s) => s.name), config.config.profiles || [], tools.tools, created, () => refresh()),
    created, h("h2", {}, "Tokens"), list);
  const paging = { page: 0 };
  let last = "";
  const feedback = h("div", { "aria-live": "polite" });
  list.before(feedback);

  async function revoke(name) {
    if (!window.confirm(`Revoke the token ${name}? Agents using it are refused from the next call on.`)) return;
    fill(feedback);
    try {
      const done = await cx.api("DELETE", `/api/v1/tokens/${encodeURIComponent(name)}`);
      fill(feedback, h("p", { class: "ok" }, done.message));
      last = "";
      await refresh();
    } catch (e) { fill(feedback, problem(e.message)); }
  }

  async function refresh() {
    const [answer, limits] = await Promise.all([cx.api("GET", "/api/v1/tokens"), cx.api("GET", "/api/v1/limits")]);
    const key = JSON.stringify([answer, limits, paging.page]);
    if (key === last || busy(list)) return;
    last = key;
    const sorted = [...answer.tokens].sort((a, b) => b.created_at - a.created_at);
    const { slice, controls } = paged(sorted, paging, PAGE, () => { last = ""; refresh(); });
    const names = new Set(answer.tokens.map((t) => t.name));
    const others = limits.callers.filter((c) => !names.has(c.caller));
    fill(list,
      h("p", { class: "muted", id: "limits-defaults" }, `Every caller's limits (the config's "limits"): ${describeLimits(limits.defaults)}.`),
      table("Tokens", ["Name", "Servers", "Permissions", "Profile", "Created", "Expires", "Limits", "Last minute", "State", ""], slice.map((t) => [
        h("strong", { class: "nowrap" }, t.name),
        t.servers ? t.servers.join(", ") || "none" : "all",
        t.permissions,
        t.profile || "—",
        time(t.created_at * 1000),
        t.expires_at ? time(t.expires_at * 1000) : "never",
        h("span", { id: `limits-${t.name}` }, t.limits ? `own: ${describeLimits(t.limits)}` : "the config's"),
        h("span", { id: `usage-${t.name}` }, describeUsage(t.usage)),
        badge(t.status),
        t.status === "active" ? h("button", { type: "button", id: `revoke-${t.name}`, onclick: () => revoke(t.name) }, `Revoke ${t.name}`) : "",
      ]), "No token yet."),
      others.length ? table("Other limited callers (OAuth subjects)", ["Caller", "Limits", "Last minute"], others.map((c) => [
        h("strong", {}, c.caller), describeLimits(c.limits), describeUsage(c),
      ])) : "",
      controls);
  }
  await refresh();
  return { refresh, every: 2000 };
}

function createForm(cx, serverNames, profiles, tools, created, done) {
  // Escaped for the `v` flag browsers now compile `pattern` with (an unescaped `-` there makes
  // the whole pattern invalid, and the check silently off).
  const name = h("input", { id: "token-name", required: true, autocomplete: "off", pattern: "[A-Za-z0-9._\\-]+", title: "letters, digits, . _ -" });
  const all = h("input", { type: "checkbox", id: "token-all-servers", checked: true });
  const boxes = serverNames.map((s) => h("input", { type: "checkbox", value: s, id: `token-server-${s}`, disabled: true }));
  all.addEventListener("change", () => boxes.forEach((b) => { b.disabled = all.checked; }));
  const permissions = PERMISSIONS.map(([value]) => h("input", { type: "checkbox", value, id: `token-perm-${value}`, checked: value === "read" }));
  const hint = h("p", { class: "muted", id: "token-perm-hint", "aria-live": "polite" });
  const chosenServers = () => (all.checked ? null : new Set(boxes.filter((b) => b.checked).map((b) => b.value)));
  // How many tools the chosen permissions reach: a tool without readOnlyHint needs write.
  const explain = () => {
    const servers = chosenServers();
    const inScope = tools.filter((t) => !servers || servers.has(t.id.split(":")[0]));
    const granted = new Set(permissions.filter((p) => p.checked).map((p) => p.value));
    const reached = inScope.filter((t) => granted.has(t.permission)).length;
    const unannotated = inScope.filter((t) => t.permission === "write").length;
    let text = `These permissions reach ${reached} of the ${inScope.length} tools of the chosen servers.`;
    if (granted.has("read") && !granted.has("write") && unannotated) {
      text += ` ${unannotated} of them are not marked read-only (no readOnlyHint) and count as write: add write to reach them.`;
    }
    hint.textContent = text;
  };
  [all, ...boxes, ...permissions].forEach((input) => input.addEventListener("change", explain));
  explain();
  const profile = h("select", { id: "token-profile" }, h("option", { value: "" }, "No profile"),
    profiles.map((p) => h("option", { value: p.name }, `${p.name} (${p.servers.join(", ")})`)));
  const expires = h("select", { id: "token-expires" }, EXPIRIES.map(([v, label]) => h("option", { value: v, selected: v === "30d" }, label)));
  const limitInputs = LIMIT_FIELDS.map(([key]) => h("input", { type: "number", min: "1", max: "1000000", step: "1", id: `token-limit-${key.replace(".", "-")}`, inputmode: "numeric" }));
  const error = h("div", { "aria-live": "polite" });
  return h("form", { class: "card", id: "token-form", onsubmit: async (e) => {
    e.preventDefault();
    fill(error);
    fill(created);
    const chosen = permissions.filter((p) => p.checked).map((p) => p.value);
    if (!chosen.length) { fill(error, problem("Choose at least one permission.")); return; }
    const request = {
      name: name.value.trim(),
      servers: all.checked ? null : boxes.filter((b) => b.checked).map((b) => b.value),
      permissions: chosen.join(","),
      profile: profile.value || null,
      expires: expires.value || null,
      limits: limitsOf(limitInputs),
    };
    try {
      const answer = await cx.api("POST", "/api/v1/tokens", request);
      // The next token starts from nothing: its limits are not the last one's.
      name.value = "";
      limitInputs.forEach((input) => { input.value = ""; });
      fill(created, secretBox(answer));
      done();
    } catch (err) { fill(error, problem(err.message)); }
  } },
  h("h2", {}, "New token"),
  h("label", { for: "token-name" }, "Name"), name,
  h("fieldset", {}, h("legend", {}, "Servers"),
    h("label", { class: "check" }, all, "Every server (also those added later)"),
    boxes.map((b) => h("label", { class: "check" }, b, b.value))),
  h("fieldset", {}, h("legend", {}, "Permissions"),
    permissions.map((p, i) => h("label", { class: "check" }, p, PERMISSIONS[i][1])), hint),
  h("div", { class: "row" },
    h("label", {}, "Profile ", profile),
    h("label", {}, "Expires ", expires)),
  h("fieldset", {}, h("legend", {}, "Limits (optional; empty: the config's)"),
    h("div", { class: "row" }, limitInputs.map((input, i) => h("label", { for: input.id }, `${LIMIT_FIELDS[i][1]} `, input)))),
  error,
  h("button", { type: "submit", class: "primary", id: "token-create" }, "Create token"));
}

const LIMIT_FIELDS = [
  ["calls_per_minute", "Calls a minute"],
  ["concurrent_calls", "At once"],
  ["write.calls_per_minute", "Write calls a minute"],
  ["destructive.calls_per_minute", "Destructive calls a minute"],
];

// The limits object the form's filled fields make, or null when none is filled.
function limitsOf(inputs) {
  const limits = {};
  inputs.forEach((input, i) => {
    if (input.value === "") return;
    const [first, second] = LIMIT_FIELDS[i][0].split(".");
    const value = Number(input.value);
    if (second) (limits[first] ||= {})[second] = value; else limits[first] = value;
  });
  return Object.keys(limits).length ? limits : null;
}

// "60 a minute, 4 at once; write: 10 a minute" or "none".
function describeLimits(limits) {
  const rate = (r) => [r.calls_per_minute && `${r.calls_per_minute} a minute`, r.concurrent_calls && `${r.concurrent_calls} at once`].filter(Boolean).join(", ");
  const parts = [rate(limits || {})];
  for (const kind of ["write", "destructive"]) {
    const text = limits && limits[kind] ? rate(limits[kind]) : "";
    if (text) parts.push(`${kind}: ${text}`);
  }
  const text = parts.filter(Boolean).join("; ");
  return text || "none";
}

function describeUsage(usage) {
  if (!usage) return "—";
  const refused = usage.refused_last_minute ? `, ${usage.refused_last_minute} refused` : "";
  return `${count(usage.calls_last_minute, "call")}, ${usage.in_flight} in flight${refused}`;
}

function secretBox(answer) {
  const secret = h("input", { id: "token-secret", readonly: true, value: answer.token, "aria-label": "The new token's secret" });
  const copied = h("span", { "aria-live": "polite" });
  return h("div", { class: "card secret", role: "status" },
    h("h2", {}, `Token ${answer.name} created`),
    h("p", {}, h("strong", {}, "Copy it now: "), "this is the only time the secret is shown."),
    h("div", { class: "row" }, secret,
      h("button", { type: "button", onclick: async () => {
        secret.select();
        try { await navigator.clipboard.writeText(answer.token); copied.textContent = "Copied."; } catch { copied.textContent = "Selected: press Ctrl+C to copy."; }
      } }, "Copy")), copied);
}
