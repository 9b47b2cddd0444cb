// A small line and word diff (longest common subsequence) for reviewing a changed tool: the
// pinned and the new definition side by side, removed text marked on the left, added text on
// the right. Marks carry a sign and a label besides their colour.

import { h } from "./dom.js";

/** Past this many cells the LCS table is not built: the texts are shown as wholly replaced. */
const MAX_CELLS = 4_000_000;

/** The edit script from `a` to `b` (arrays of tokens): [{op: "same"|"del"|"add", text}]. */
export function diff(a, b) {
  const n = a.length, m = b.length;
  if (n * m > MAX_CELLS) {
    return [...a.map((text) => ({ op: "del", text })), ...b.map((text) => ({ op: "add", text }))];
  }
  // lengths[i][j]: LCS length of a[i..] and b[j..], in one flat array.
  const width = m + 1;
  const lengths = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lengths[i * width + j] = a[i] === b[j]
        ? lengths[(i + 1) * width + j + 1] + 1
        : Math.max(lengths[(i + 1) * width + j], lengths[i * width + j + 1]);
    }
  }
  const ops = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { ops.push({ op: "same", text: a[i] }); i++; j++; }
    else if (lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) ops.push({ op: "del", text: a[i++] });
    else ops.push({ op: "add", text: b[j++] });
  }
  while (i < n) ops.push({ op: "del", text: a[i++] });
  while (j < m) ops.push({ op: "add", text: b[j++] });
  return ops;
}

/** Words and the spaces between them, so a rejoined side is the original text. */
function words(text) {
  return String(text || "").split(/(\s+)/).filter((t) => t.length);
}

/** Two paragraphs: the old text with removed words marked, the new with added words marked. */
export function wordDiff(before, after) {
  const ops = diff(words(before), words(after));
  const left = h("p", { class: "diff-text" });
  const right = h("p", { class: "diff-text" });
  for (const { op, text } of ops) {
    if (op === "same") { left.append(text); right.append(text); }
    else if (op === "del") left.append(h("del", { title: "removed" }, text));
    else right.append(h("ins", { title: "added" }, text));
  }
  return { left, right, changed: ops.some((o) => o.op !== "same") };
}

/** Rows of a side-by-side line diff: removed lines beside the lines that replaced them. */
export function lineDiff(before, after) {
  const ops = diff(before.split("\n"), after.split("\n"));
  const rows = [];
  let dels = [], adds = [];
  const flush = () => {
    const count = Math.max(dels.length, adds.length);
    for (let k = 0; k < count; k++) rows.push([dels[k], adds[k]]);
    dels = []; adds = [];
  };
  for (const { op, text } of ops) {
    if (op === "same") { flush(); rows.push([{ op, text }, { op, text }]); }
    else if (op === "del") dels.push({ op, text });
    else adds.push({ op, text });
  }
  flush();
  const cell = (line, side) => {
    if (!line) return h("td", { class: "diff-empty" }, "");
    const sign = line.op === "del" ? "−" : line.op === "add" ? "+" : " ";
    const label = line.op === "del" ? "removed: " : line.op === "add" ? "added: " : "";
    return h("td", { class: `diff-${line.op} side-${side}` },
      h("span", { class: "sign", "aria-hidden": "true" }, sign),
      label ? h("span", { class: "sr" }, label) : null, line.text);
  };
  return {
    table: h("table", { class: "diff" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Pinned"), h("th", { scope: "col" }, "New"))),
      h("tbody", {}, rows.map(([l, r]) => h("tr", {}, cell(l, "left"), cell(r, "right"))))),
    changed: ops.some((o) => o.op !== "same"),
  };
}
