// Trends as plain SVG drawn here (no library, nothing inline the page's policy forbids): calls
// per bucket as bars with the failed part in red, and the median and 95th-percentile latency as
// two lines over them on their own scale, with the numbers in words for a screen reader.

import { h, count } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 720;
const HEIGHT = 140;
const PAD = 4;

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) if (child) el.append(child);
  return el;
}

/** The spans a trend is drawn over, each a toggle button; `hours` is the one shown. Ids are
 * `${prefix}-1h` and `${prefix}-24h`. */
export function spanButtons(hours, choose, prefix) {
  return [[1, "Last hour"], [24, "Last day"]].map(([span, label]) => h("button", {
    type: "button", id: `${prefix}-${span}h`, "aria-pressed": String(hours === span),
    class: hours === span ? "primary" : null, onclick: () => choose(span),
  }, label));
}

/** How often a page asks for a trend again with the same span: its buckets are minutes long,
 * and the database ranks every call of the span to answer. */
const TREND_EVERY_MS = 30000;

/** Fetches trends through `api`, asking again for the same `path` only every 30 s. */
export function trendsFetcher(api) {
  let cached = { path: null, at: 0, answer: null };
  return async (path) => {
    const now = Date.now();
    if (cached.path === path && now - cached.at < TREND_EVERY_MS) return cached.answer;
    const answer = await api("GET", path);
    cached = { path, at: now, answer };
    return answer;
  };
}

/** Microseconds in words: "0.4 ms", "12 ms", "1.5 s". */
export function duration(us) {
  if (us >= 1e6) return `${(us / 1e6).toFixed(1)} s`;
  if (us >= 1e4) return `${Math.round(us / 1000)} ms`;
  return `${(us / 1000).toFixed(1)} ms`;
}

/** The chart of a /api/v1/trends answer, `id` on its root. */
export function trendChart(answer, id) {
  const points = answer.buckets;
  const calls = points.reduce((n, p) => n + p.calls, 0);
  const errors = points.reduce((n, p) => n + p.errors, 0);
  const slowest = points.reduce((n, p) => Math.max(n, p.max_us), 0);
  const worstP95 = points.reduce((n, p) => Math.max(n, p.p95_us), 0);
  const most = Math.max(1, ...points.map((p) => p.calls));
  const latencyMost = Math.max(1, worstP95);
  const step = (WIDTH - 2 * PAD) / Math.max(1, points.length);
  const height = (n, of) => ((HEIGHT - 2 * PAD) * n) / of;
  const minutes = Math.round(answer.bucket_ms / 60000);
  const words = calls
    ? `${count(calls, "call")}, ${errors} failed, in buckets of ${minutes} min; `
      + `the worst 95th percentile was ${duration(worstP95)}, the slowest call took ${duration(slowest)}.`
    : `0 calls, 0 failed, in buckets of ${minutes} min.`;
  const bars = points.flatMap((p, i) => {
    const x = PAD + i * step;
    const total = height(p.calls, most);
    const failed = height(p.errors, most);
    const when = new Date(p.start_ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    const title = svg("title", {});
    title.textContent = p.calls
      ? `${when}: ${count(p.calls, "call")}, ${p.errors} failed; p50 ${duration(p.p50_us)}, p95 ${duration(p.p95_us)}, slowest ${duration(p.max_us)}`
      : `${when}: no calls`;
    return [
      svg("rect", { class: "bar", x, y: HEIGHT - PAD - total, width: Math.max(1, step - 1), height: total }, title),
      p.errors ? svg("rect", { class: "bar-failed", x, y: HEIGHT - PAD - failed, width: Math.max(1, step - 1), height: failed }) : null,
    ];
  });
  // A latency line joins the buckets that had calls; an empty bucket has no latency to draw. A
  // line of one bucket is drawn across that bucket's width: a single point draws nothing.
  const line = (field, cls) => {
    const at = (x, p) => `${x.toFixed(1)},${(HEIGHT - PAD - height(p[field], latencyMost)).toFixed(1)}`;
    const busy = points.map((p, i) => [p, i]).filter(([p]) => p.calls);
    const coords = busy.length === 1
      ? [at(PAD + busy[0][1] * step, busy[0][0]), at(PAD + (busy[0][1] + 1) * step, busy[0][0])]
      : busy.map(([p, i]) => at(PAD + i * step + step / 2, p));
    return svg("polyline", { class: cls, fill: "none", points: coords.join(" ") });
  };
  const label = svg("title", {});
  label.textContent = words;
  const chart = svg("svg", { id, class: "trend", viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": words, preserveAspectRatio: "none" },
    label, ...bars.filter(Boolean), line("p95_us", "latency-p95"), line("p50_us", "latency"));
  return { chart, words };
}

/** The legend under a trend chart. */
export const LEGEND = " Bars: calls (failed in red); lines: median (solid) and 95th percentile (dashed) latency.";
