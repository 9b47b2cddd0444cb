// Tokens: create one with a scope picker (servers, permissions, profile, expiry), its secret
// shown once; the list; revoke. Through /api/v1/tokens, like `mcplex token`.

import { h, fill, problem, table, paged, badge, time, busy } from "./dom.js";

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
  const [servers, config] = await Promise.all([cx.api("GET", "/api/v1/servers"), cx.api("GET", "/api/v1/config")]);
  const created = h("div", { "aria-live": "polite" });
  const list = h("div", {});
  root.append(createForm(cx, servers.servers.map((s) => s.name), config.config.profiles || [], created, () => refresh()),
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
    const answer = await cx.api("GET", "/api/v1/tokens");
    const key = JSON.stringify([answer, paging.page]);
    if (key === last || busy(list)) return;
    last = key;
    const sorted = [...answer.tokens].sort((a, b) => b.created_at - a.created_at);
    const { slice, controls } = paged(sorted, paging, PAGE, () => { last = ""; refresh(); });
    fill(list, table("Tokens", ["Name", "Servers", "Permissions", "Profile", "Created", "Expires", "State", ""], slice.map((t) => [
      h("strong", {}, t.name),
      t.servers ? t.servers.join(", ") || "none" : "all",
      t.permissions,
      t.profile || "—",
      time(t.created_at * 1000),
      t.expires_at ? time(t.expires_at * 1000) : "never",
      badge(t.status),
      t.status === "active" ? h("button", { type: "button", id: `revoke-${t.name}`, onclick: () => revoke(t.name) }, `Revoke ${t.name}`) : "",
    ]), "No token yet."), controls);
  }
  await refresh();
  return { refresh, every: 2000 };
}

function createForm(cx, serverNames, profiles, created, done) {
  const name = h("input", { id: "token-name", required: true, autocomplete: "off", pattern: "[A-Za-z0-9._-]+", title: "letters, digits, . _ -" });
  const all = h("input", { type: "checkbox", id: "token-all-servers", checked: true });
  const boxes = serverNames.map((s) => h("input", { type: "checkbox", value: s, id: `token-server-${s}`, disabled: true }));
  all.addEventListener("change", () => boxes.forEach((b) => { b.disabled = all.checked; }));
  const permissions = PERMISSIONS.map(([value]) => h("input", { type: "checkbox", value, id: `token-perm-${value}`, checked: value === "read" }));
  const profile = h("select", { id: "token-profile" }, h("option", { value: "" }, "No profile"),
    profiles.map((p) => h("option", { value: p.name }, `${p.name} (${p.servers.join(", ")})`)));
  const expires = h("select", { id: "token-expires" }, EXPIRIES.map(([v, label]) => h("option", { value: v, selected: v === "30d" }, label)));
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
    };
    try {
      const answer = await cx.api("POST", "/api/v1/tokens", request);
      name.value = "";
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
    permissions.map((p, i) => h("label", { class: "check" }, p, PERMISSIONS[i][1]))),
  h("div", { class: "row" },
    h("label", {}, "Profile ", profile),
    h("label", {}, "Expires ", expires)),
  error,
  h("button", { type: "submit", class: "primary", id: "token-create" }, "Create token"));
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
