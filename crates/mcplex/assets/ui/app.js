// The dashboard's shell: login, the API client (cookie + CSRF token), the hash router and the
// polling that keeps the open page current (a change made in the CLI or on another replica
// shows within a couple of seconds, without a reload).

import { h, fill, problem } from "./dom.js";
import { overview, servers, config, needsCount } from "./overview.js";
import { tools, review } from "./tools.js";
import { tokens } from "./tokens.js";
import { activity, search } from "./activity.js";
import { tryTool } from "./form.js";
import { serverPage } from "./server.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const status = document.getElementById("status");
const logoutButton = document.getElementById("logout");
const whoLine = document.getElementById("who");
// The session's CSRF token lives only here, in this origin's storage: browsers send the
// cookie to every port of the host, so the gateway wants the token with every request.
const CSRF_KEY = "mcplex_csrf";
let csrf = localStorage.getItem(CSRF_KEY);
// Set by the logout button until the next login: what the ended session's requests meet then is
// the logout, not a session that ended by itself.
let loggedOut = false;

function keepCsrf(token) {
  csrf = token;
  if (token) localStorage.setItem(CSRF_KEY, token);
  else localStorage.removeItem(CSRF_KEY);
}

const pages = {
  overview: { title: "Overview", render: overview },
  servers: { title: "Servers", render: (root, cx, rest) => (rest ? serverPage(root, cx, rest) : servers(root, cx)) },
  tools: { title: "Tools", render: (root, cx, rest) => (rest ? review(root, cx, rest) : tools(root, cx)) },
  tokens: { title: "Tokens", render: tokens },
  activity: { title: "Activity", render: activity },
  search: { title: "Search", render: search },
  try: { title: "Try a tool", render: tryTool },
  config: { title: "Config", render: config },
};

/** An API failure, with the gateway's own words. */
class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Calls the gateway's API with the session cookie and the CSRF token. */
async function api(method, path, body, retried = false) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (csrf) headers["X-CSRF-Token"] = csrf;
  let response;
  try {
    response = await fetch(path, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, `The gateway did not answer (${e.message}). Is it still running?`);
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  // A tool result the gateway wrote itself (a refusal): Try a tool says so.
  const answeredBy = response.headers.get("X-Mcplex-Answered-By");
  if (answeredBy && data && typeof data === "object") Object.defineProperty(data, "answeredBy", { value: answeredBy });
  // Another tab logged in again: its token is in storage; once, with it.
  if (response.status === 403 && data && /CSRF/.test(data.error || "") && !retried) {
    const stored = localStorage.getItem(CSRF_KEY);
    if (stored && stored !== csrf) {
      csrf = stored;
      return api(method, path, body, true);
    }
  }
  if ((response.status === 401 || (response.status === 403 && data && /CSRF/.test(data.error || ""))) && path.startsWith("/api/")) {
    keepCsrf(null);
    // After a logout, a request still in flight is refused too: the logout's own words stay.
    if (!loggedOut) showLogin("The session ended: log in again.");
    throw new ApiError(401, "Not logged in.");
  }
  if (!response.ok) {
    const why = (data && data.error) || text || response.statusText;
    throw new ApiError(response.status, `${why} (HTTP ${response.status})`);
  }
  return data;
}

// A file from the API saved as `name`: fetched with the session's CSRF header, which a plain
// link cannot send, then handed to the browser as a download.
async function download(path, name) {
  const headers = csrf ? { "X-CSRF-Token": csrf } : {};
  const response = await fetch(path, { headers, credentials: "same-origin" });
  if (!response.ok) throw new ApiError(response.status, `The download failed (HTTP ${response.status}).`);
  const url = URL.createObjectURL(await response.blob());
  const link = h("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function say(message) {
  if (!message) { status.hidden = true; status.textContent = ""; return; }
  status.hidden = false;
  status.textContent = message;
}

window.addEventListener("error", (e) => say(`Something went wrong on this page: ${e.message}`));
window.addEventListener("unhandledrejection", (e) => {
  const reason = e.reason;
  if (reason instanceof ApiError && reason.status === 401) return;
  say(`Something went wrong: ${reason && reason.message ? reason.message : reason}`);
});

// --- login ---------------------------------------------------------------------------------

function showLogin(message) {
  stopPolling();
  nav.hidden = true;
  logoutButton.hidden = true;
  whoLine.hidden = true;
  const key = h("input", { id: "api-key", type: "password", autocomplete: "current-password", required: true, spellcheck: "false" });
  const error = h("div", { "aria-live": "polite" }, message ? problem(message) : null);
  const form = h("form", { class: "card login", onsubmit: async (e) => {
    e.preventDefault();
    fill(error);
    try {
      const answer = await post("/ui/login", { key: key.value });
      keepCsrf(answer.csrf);
      showWho(answer);
      key.value = "";
      loggedOut = false;
      start(true);
    } catch (err) {
      fill(error, problem(err.message));
      key.focus();
    }
  } },
  h("h1", {}, "Log in"),
  h("p", {}, "Paste the gateway's API key. It is in the ", h("code", {}, "api_key"),
    " file of the data directory (", h("code", {}, "~/.mcplex/api_key"), " by default). ",
    "The browser keeps only a session cookie, never the key."),
  h("label", { for: "api-key" }, "API key"), key, error,
  h("button", { type: "submit", class: "primary" }, "Log in"));
  const signIn = h("div", {});
  fill(main, signIn, form);
  // Single sign-on, when the gateway offers it (auth.dashboard): a plain link, the issuer's
  // page does the rest and sends the browser back signed in.
  fetch("/ui/sign-in", { credentials: "same-origin" }).then((r) => (r.ok ? r.json() : null)).then((offer) => {
    if (offer && offer.issuer) {
      fill(signIn, h("div", { class: "card login" },
        h("a", { class: "button primary", id: "sign-in", href: "/ui/oidc/login" }, `Sign in with ${offer.issuer}`),
        h("p", { class: "muted" }, "Or log in with the API key below.")));
    }
  }).catch(() => {});
  document.title = "Log in · mcplex";
  key.focus();
}

/** Says who is signed in: a person signed in at the issuer, or the API key. */
function showWho(session) {
  const viewer = Boolean(session && session.viewer);
  document.body.dataset.viewer = String(viewer);
  whoLine.textContent = session && session.who
    ? `Signed in as ${session.who}${viewer ? " (read-only)" : ""}`
    : "Logged in with the API key";
  whoLine.hidden = false;
}

/** POST outside /api (login), with the same error handling. */
async function post(path, body) {
  const response = await fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new Error((data && data.error) || `HTTP ${response.status}`);
  return data;
}

logoutButton.addEventListener("click", async () => {
  loggedOut = true;
  stopPolling();
  const response = await fetch("/ui/logout", { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf || "" } }).catch(() => null);
  const data = response && !response.ok ? await response.json().catch(() => null) : null;
  keepCsrf(null);
  if (response && response.ok) {
    showLogin("Logged out.");
  } else {
    // The cookie is gone either way; the session may still be accepted elsewhere: say so.
    showLogin(`Logged out here, but: ${(data && data.error) || (response ? `HTTP ${response.status}` : "the gateway did not answer")}`);
  }
});

// --- pages and polling ---------------------------------------------------------------------

let current = null;
let timer = null;
let polling = false;
// Counts the times the polling stopped (a route, a login form): a page whose render finishes
// after that is stale and must not take the polling over (it would leave the page on screen
// without its live updates, or poll behind the login form).
let pollingStops = 0;

function stopPolling() {
  if (timer) clearInterval(timer);
  timer = null;
  current = null;
  pollingStops += 1;
}

async function route() {
  if (!csrf) return;
  stopPolling();
  const generation = pollingStops;
  say(null);
  const path = location.hash.replace(/^#\/?/, "").split("?")[0];
  const [name, ...rest] = (path || "overview").split("/");
  const page = pages[name] || pages.overview;
  const key = pages[name] ? name : "overview";
  for (const link of nav.querySelectorAll("a")) {
    if (link.getAttribute("href") === `#/${key}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${page.title} · mcplex`;
  const root = h("section", { "aria-labelledby": "page-title" });
  fill(main, root);
  const cx = { api, say, download, navigate: (hash) => { location.hash = hash; } };
  const argument = rest.length ? decodeURIComponent(rest.join("/")) : null;
  try {
    const handle = (await page.render(root, cx, argument)) || {};
    if (generation !== pollingStops) return;
    current = handle;
    if (handle.refresh) {
      timer = setInterval(async () => {
        if (polling || document.hidden || current !== handle) return;
        polling = true;
        try { await handle.refresh(); say(null); } catch (e) { if (e.status !== 401) say(e.message); } finally { polling = false; }
      }, handle.every || 1500);
    }
  } catch (e) {
    if (generation === pollingStops && e.status !== 401) root.append(problem(e.message));
  }
}

// The navigation says how many things need the operator, whatever page is open.
const needsBadge = h("span", { class: "count", id: "needs-count", hidden: true });
nav.querySelector('a[href="#/overview"]').append(" ", needsBadge);
let needsTimer = null;
async function showNeeds() {
  if (!csrf || document.body.dataset.viewer === "true") { needsBadge.hidden = true; return; }
  try {
    const count = await needsCount(api);
    needsBadge.textContent = String(count);
    const said = count === 1 ? "1 thing needs you" : `${count} things need you`;
    needsBadge.title = said;
    needsBadge.setAttribute("aria-label", said);
    needsBadge.hidden = count === 0;
  } catch { /* the page says what failed; the count waits for the next round */ }
}

/** Shows the pages; after a login the focus moves to the page (at boot it stays at the top). */
function start(focusPage) {
  nav.hidden = false;
  logoutButton.hidden = false;
  if (!needsTimer) needsTimer = setInterval(showNeeds, 5000);
  showNeeds();
  if (!location.hash) history.replaceState(null, "", "#/overview");
  route();
  if (focusPage) main.focus();
}

window.addEventListener("hashchange", () => { route(); main.focus(); });

(async function boot() {
  // A login link hands the token over in the fragment, which no server sees.
  const handed = location.hash.match(/^#login=([0-9a-f]+)$/);
  if (handed) {
    keepCsrf(handed[1]);
    history.replaceState(null, "", "#/overview");
  }
  const response = await fetch("/ui/session", { credentials: "same-origin", headers: { "X-CSRF-Token": csrf || "" } }).catch(() => null);
  if (response && response.ok) {
    showWho(await response.json().catch(() => null));
    start(false);
  } else if (response) {
    keepCsrf(null);
    showLogin(null);
  } else {
    fill(main, problem("The gateway did not answer. Is it still running?"));
  }
})();
