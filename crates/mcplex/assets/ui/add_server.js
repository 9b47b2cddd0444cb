// Adding a server from the Servers page: a name and its entry as it would be under
// "mcpServers" in the config file. "Check" asks the gateway to read it (nothing is stored);
// "Add" stores it in the control plane, where every replica picks it up and starts it
// quarantined, and opens its page, where its tools show as they are listed.

import { h, fill, problem } from "./dom.js";

const EXAMPLE = `{
  "command": "npx",
  "args": ["-y", "@modelcontextprotocol/server-everything"],
  "env": {}
}`;

/** The "Add a server" form; `opened(name)` is called once one is added. */
export function addServerSection(cx, opened) {
  // The gateway checks the name (and says what is wrong); the page only asks for one.
  const name = h("input", { id: "add-name", required: true, spellcheck: "false", autocomplete: "off",
    "aria-describedby": "add-name-help" });
  const entry = h("textarea", { id: "add-entry", rows: "7", spellcheck: "false", "aria-describedby": "add-entry-help" }, EXAMPLE);
  const said = h("div", { id: "add-said", "aria-live": "polite" });
  async function send(checkOnly) {
    fill(said);
    if (!name.reportValidity()) return;
    let parsed;
    try {
      parsed = JSON.parse(entry.value);
    } catch (e) {
      fill(said, problem(`The entry is not JSON: ${e.message}`));
      entry.focus();
      return;
    }
    try {
      const answer = await cx.api("POST", "/api/v1/servers", { name: name.value, entry: parsed, check_only: checkOnly });
      const message = h("p", { class: "ok", id: "add-message", tabindex: "-1" }, answer.message);
      fill(said, message,
        h("h3", {}, "As the gateway read it (secrets replaced)"),
        h("pre", { class: "json", id: "add-understood", tabindex: "0" }, JSON.stringify(answer.config, null, 2)));
      message.focus();
      if (!checkOnly) opened(answer.name);
    } catch (e) {
      fill(said, problem(e.message));
    }
  }
  return h("details", { class: "card operator-only", id: "add-server" },
    h("summary", {}, "Add a server"),
    h("p", { class: "muted" }, "Kept in the control plane: every replica runs it, quarantined until you approve it. ",
      "The config file stays authoritative: a name it has cannot be added here."),
    h("label", { for: "add-name" }, "Name"), name,
    h("p", { class: "muted", id: "add-name-help" }, "Up to 64 letters, digits, '_', '-' and '.'; its tools are named after it."),
    h("label", { for: "add-entry" }, "Entry (as under \"mcpServers\" in the config file)"), entry,
    h("p", { class: "muted", id: "add-entry-help" }, "A command with its args and env, or a \"url\" with its headers. Env and header values are stored sealed and never shown again."),
    h("div", { class: "row" },
      h("button", { type: "button", id: "add-check", onclick: () => send(true) }, "Check"),
      h("button", { type: "button", class: "primary", id: "add-submit", onclick: () => send(false) }, "Add")),
    said);
}
