// Trends as plain SVG (no library, nothing inline the page's policy forbids): calls per bucket
// as bars with the failed part in red, and the mean latency as a line over them, with the
// numbers in words for a screen reader.

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

/** The chart of a /api/v1/trends answer, `id` on its root. */
export function trendChart(answer, id) {
  const points = answer.buckets;
  const calls = points.reduce((n, p) => n + p.calls, 0);
  const errors = points.reduce((n, p) => n + p.errors, 0);
  const slowest = points.reduce((n, p) => Math.max(n, p.max_ms), 0);
  const most = Math.max(1, ...points.map((p) => p.calls));
  const meanMost = Math.max(1, ...points.map((p) => p.avg_ms));
  const step = (WIDTH - 2 * PAD) / Math.max(1, points.length);
  const height = (n, of) => ((HEIGHT - 2 * PAD) * n) / of;
  const minutes = Math.round(answer.bucket_ms / 60000);
  const words = `${calls} calls, ${errors} failed, in buckets of ${minutes} min; the slowest took ${slowest} ms.`;
  const bars = points.flatMap((p, i) => {
    const x = PAD + i * step;
    const total = height(p.calls, most);
    const failed = height(p.errors, most);
    const when = new Date(p.start_ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    const title = svg("title", {});
    title.textContent = `${when}: ${p.calls} calls, ${p.errors} failed, mean ${p.avg_ms} ms, slowest ${p.max_ms} ms`;
    return [
      svg("rect", { class: "bar", x, y: HEIGHT - PAD - total, width: Math.max(1, step - 1), height: total }, title),
      p.errors ? svg("rect", { class: "bar-failed", x, y: HEIGHT - PAD - failed, width: Math.max(1, step - 1), height: failed }) : null,
    ];
  });
  const line = points
    .map((p, i) => `${(PAD + i * step + step / 2).toFixed(1)},${(HEIGHT - PAD - height(p.avg_ms, meanMost)).toFixed(1)}`)
    .join(" ");
  const label = svg("title", {});
  label.textContent = words;
  const chart = svg("svg", { id, class: "trend", viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": words, preserveAspectRatio: "none" },
    label, ...bars.filter(Boolean), svg("polyline", { class: "latency", points: line, fill: "none" }));
  return { chart, words };
}
