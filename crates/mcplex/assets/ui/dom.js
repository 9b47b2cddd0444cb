// Small DOM helpers: every element is built with createElement and text nodes (never
// innerHTML), so no text from an upstream, a token name or an argument can become markup.

/** `n` and the word for that many: "1 call", "2 calls", "0 calls". */
export function count(n, singular, plural = `${singular}s`) {
  return `${n} ${n === 1 ? singular : plural}`;
}

/** h("button", {class: "x", onclick: f, type: "button"}, "text", child, ...) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      el.className = value;
    } else if (name === "value") {
      el.value = value;
    } else if (name === "checked" || name === "selected" || name === "disabled") {
      el[name] = Boolean(value);
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces everything inside `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** An error said in words, inside the page (role=alert so screen readers hear it). */
export function problem(message) {
  return h("p", { class: "error", role: "alert" }, message);
}

/** A scrollable table: headers and rows of cells (strings or nodes). */
export function table(caption, headers, rows, empty) {
  if (!rows.length) return h("p", { class: "muted" }, empty || "Nothing to show.");
  return h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": caption },
    h("table", { class: "list" },
      h("caption", { class: "sr" }, caption),
      h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((cells) => h("tr", {},
        cells.map((c, i) => h("td", { "data-label": headers[i] || null }, c)))))));
}

/** Client-side paging of `items`: the page's slice and its controls. */
export function paged(items, state, size, rerender) {
  const pages = Math.max(1, Math.ceil(items.length / size));
  state.page = Math.min(state.page || 0, pages - 1);
  const slice = items.slice(state.page * size, (state.page + 1) * size);
  const controls = pages === 1 ? null : pager(state.page > 0, state.page < pages - 1,
    `Page ${state.page + 1} of ${pages} (${items.length} in all)`,
    (delta) => { state.page += delta; rerender(); });
  return { slice, controls };
}

/** "Newer / Older" style controls. */
export function pager(hasPrevious, hasNext, label, move, words = ["Previous", "Next"]) {
  return h("div", { class: "pager" },
    h("button", { type: "button", disabled: !hasPrevious, onclick: () => move(-1) }, words[0]),
    h("span", {}, label),
    h("button", { type: "button", disabled: !hasNext, onclick: () => move(1) }, words[1]));
}

export function time(ms) {
  if (!ms && ms !== 0) return "—";
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function short(hash) {
  return hash ? hash.replace(/^sha256:/, "").slice(0, 12) : "—";
}

/** A status word as a badge whose class follows the word. */
export function badge(word) {
  const [head, ...reason] = String(word).split(": ");
  const kind = head.replace(/[^a-z_]/g, "");
  const shown = h("span", { class: `badge b-${kind}` }, head.replaceAll("_", " "));
  return reason.length ? h("span", {}, shown, " ", h("span", { class: "reason" }, reason.join(": "))) : shown;
}

/** Whether the person signed in reads only (a viewer): the pages leave out what only operators
 * may read or do, rather than ask for it and be refused. */
export function isViewer() {
  return document.body.dataset.viewer === "true";
}

/** The element whose content should not be rebuilt while the user is typing in it. */
export function busy(root) {
  const active = document.activeElement;
  return active && root.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName);
}
