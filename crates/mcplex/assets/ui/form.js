// Try a tool: a form built from the tool's input schema (required fields marked, enums as
// choices, numbers and booleans typed, nested objects and arrays as JSON), sent through
// POST /api/v1/call: the same path as any agent's call (validated against the schema, audited
// as the operator), and the result shown.

import { h, fill, problem } from "./dom.js";

export async function tryTool(root, cx, id) {
  root.append(h("h1", { id: "page-title" }, "Try a tool"));
  const answer = await cx.api("GET", "/api/v1/tools");
  const served = answer.tools.filter((t) => t.status === "approved" && t.name);
  const option = (t) => h("option", { value: t.id, selected: t.id === id }, `${t.id} (${t.name})`);
  const picker = h("select", { id: "try-tool" }, h("option", { value: "" }, "Choose a tool…"), served.map(option));
  picker.addEventListener("change", () => cx.navigate(`#/try/${encodeURIComponent(picker.value)}`));
  // A fleet has hundreds of tools: typing narrows the list to those whose id or name holds
  // every word typed.
  const filter = h("input", { id: "try-filter", type: "search", placeholder: "Type to narrow the list", autocomplete: "off",
    "aria-controls": "try-tool", oninput: () => {
      const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      const kept = served.filter((t) => words.every((w) => `${t.id} ${t.name}`.toLowerCase().includes(w)));
      fill(picker, h("option", { value: "" }, `Choose a tool… (${kept.length} of ${served.length})`), kept.map(option));
    } });
  root.append(h("div", { class: "field" }, h("label", { for: "try-filter" }, "Find a tool"), filter),
    h("div", { class: "field" }, h("label", { for: "try-tool" }, "Tool"), picker));
  if (!id) return;
  const tool = served.find((t) => t.id === id);
  if (!tool) { root.append(problem(`${id} is not a served tool: it is unknown, withheld or blocked.`)); return; }
  const review = await cx.api("GET", `/api/v1/tools/${encodeURIComponent(id)}/review`);
  const definition = (review.observed && review.observed.definition) || {};
  const schema = definition.inputSchema || { type: "object" };
  const result = h("div", { "aria-live": "polite", id: "try-result" });
  const fields = fieldsOf(schema);
  root.append(h("p", {}, definition.description || ""),
    h("form", { class: "card", id: "try-form", novalidate: true, onsubmit: async (e) => {
      e.preventDefault();
      fill(result);
      let args;
      try { args = collect(fields); } catch (err) { fill(result, problem(err.message)); return; }
      // Busy until the answer: one call at a time, and said to screen readers too.
      const button = e.target.querySelector("#try-call");
      button.disabled = true;
      result.setAttribute("aria-busy", "true");
      fill(result, h("p", { class: "muted", id: "try-busy" }, `Calling ${tool.name}…`));
      try {
        const answer = await cx.api("POST", "/api/v1/call", { name: tool.name, arguments: args });
        fill(result, showResult(answer));
      } catch (err) {
        fill(result, problem(`The gateway did not make the call: ${err.message}`));
      } finally {
        button.disabled = false;
        result.removeAttribute("aria-busy");
      }
    } },
    fields.length ? fields.map((f) => f.element) : h("p", { class: "muted" }, "This tool takes no arguments."),
    fields.some((f) => f.required)
      ? h("p", { class: "muted", id: "try-required-legend" }, h("span", { class: "req", "aria-hidden": "true" }, "*"), " required")
      : null,
    h("button", { type: "submit", class: "primary", id: "try-call" }, `Call ${tool.name}`)),
    result);
}

/** One field per top-level property: its input and how to read it back. */
function fieldsOf(schema) {
  const properties = schema.properties || {};
  const required = new Set(schema.required || []);
  return Object.entries(properties).map(([name, property]) => field(name, property || {}, required.has(name)));
}

function field(name, property, required) {
  const id = `arg-${name}`;
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== "null") : property.type;
  let input, read;
  if (Array.isArray(property.enum)) {
    input = h("select", { id, required }, h("option", { value: "" }, required ? "Choose…" : "(not set)"),
      property.enum.map((v, i) => h("option", { value: String(i) }, JSON.stringify(v))));
    read = () => (input.value === "" ? undefined : property.enum[Number(input.value)]);
  } else if (type === "boolean") {
    input = h("select", { id, required }, h("option", { value: "" }, "(not set)"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
    read = () => (input.value === "" ? undefined : input.value === "true");
  } else if (type === "integer" || type === "number") {
    input = h("input", { id, type: "number", step: type === "integer" ? "1" : "any", required,
      min: property.minimum, max: property.maximum, value: property.default });
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else if (type === "string") {
    const long = (property.maxLength || 0) > 200 || /text|body|content|code|query/i.test(name);
    input = long ? h("textarea", { id, rows: "3", required }) : h("input", { id, required, value: property.default });
    read = () => (input.value === "" ? undefined : input.value);
  } else {
    input = h("textarea", { id, rows: "4", class: "code", required, placeholder: type === "array" ? "[ ]" : "{ }" });
    if (property.default !== undefined) input.value = JSON.stringify(property.default, null, 2);
    read = () => {
      if (input.value.trim() === "") return undefined;
      try { return JSON.parse(input.value); } catch (e) { throw new Error(`${name}: not valid JSON (${e.message})`); }
    };
  }
  const help = property.description ? h("small", { id: `${id}-help` }, property.description) : null;
  if (help) input.setAttribute("aria-describedby", `${id}-help`);
  const element = h("div", { class: "field" },
    h("label", { for: id }, name, required ? h("span", { class: "req", title: "required" }, " *") : null,
      h("span", { class: "muted" }, ` ${type || "JSON"}`)),
    input, help);
  return { name, required, read, element };
}

/** The arguments object; a required field left empty is said in words. */
function collect(fields) {
  const args = {};
  for (const f of fields) {
    const value = f.read();
    if (value === undefined) {
      if (f.required) throw new Error(`${f.name} is required.`);
      continue;
    }
    args[f.name] = value;
  }
  return args;
}

/** A call's answer: the gateway's own refusal (it says so in X-Mcplex-Answered-By) apart from
 * the tool's error, images and audio shown as such, other content as JSON. */
function showResult(answer) {
  const refused = answer.answeredBy === "gateway";
  const title = refused ? "The gateway refused the call (the tool was not called)"
    : answer.isError ? "The tool answered with an error" : "Result";
  return h("section", { class: `card ${answer.isError ? "failed" : "succeeded"}` },
    h("h2", { id: "try-outcome" }, title),
    (answer.content || []).map(block),
    answer.structuredContent !== undefined
      ? [h("h3", {}, "Structured content"), h("pre", { class: "result", tabindex: "0" }, JSON.stringify(answer.structuredContent, null, 2))]
      : null);
}

/** One content block: text as text, an image or audio as one (the page's policy allows data:
 * URLs for media), anything else as its JSON. */
function block(c) {
  const media = typeof c.data === "string" && /^[\w.+-]+\/[\w.+-]+$/.test(c.mimeType || "");
  if (c.type === "text") return h("pre", { class: "result", tabindex: "0" }, c.text);
  if (c.type === "image" && media) {
    return h("img", { class: "result-image", src: `data:${c.mimeType};base64,${c.data}`, alt: `An image the tool returned (${c.mimeType})` });
  }
  if (c.type === "audio" && media) {
    return h("audio", { controls: true, src: `data:${c.mimeType};base64,${c.data}`, "aria-label": `Audio the tool returned (${c.mimeType})` });
  }
  return h("pre", { class: "result", tabindex: "0" }, JSON.stringify(c, null, 2));
}
