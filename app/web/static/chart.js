// A dependency-free SVG line chart: the detector statistic against its threshold over
// time, fired runs marked in red. Points come from <script id="points" type="application/json">.
(function () {
  const el = document.getElementById("chart");
  const raw = document.getElementById("points");
  if (!el || !raw) return;
  const points = JSON.parse(raw.textContent).filter((p) => p.statistic !== null);
  const NS = "http://www.w3.org/2000/svg";
  const W = 900, H = 280, L = 56, R = 12, T = 12, B = 34;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("preserveAspectRatio", "none");
  el.appendChild(svg);
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.appendChild(n);
    return n;
  };
  if (!points.length) {
    add("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#6b7386" }, "No runs with a statistic yet");
    return;
  }
  const ts = points.map((p) => Date.parse(p.t));
  const vals = points.flatMap((p) => [p.statistic, p.threshold].filter((v) => v !== null));
  let lo = Math.min(...vals), hi = Math.max(...vals);
  if (hi === lo) { hi += 1; lo -= 1; }
  const pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
  const t0 = Math.min(...ts), t1 = Math.max(...ts) === t0 ? t0 + 1 : Math.max(...ts);
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - (v - lo) / (hi - lo)) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = lo + ((hi - lo) * i) / 4;
    add("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e2e5ec" });
    add("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#6b7386" }, v.toPrecision(3));
  }
  const fmt = (t) => new Date(t).toISOString().slice(5, 16).replace("T", " ");
  add("text", { x: L, y: H - 10, "font-size": 11, fill: "#6b7386" }, fmt(t0));
  add("text", { x: W - R, y: H - 10, "text-anchor": "end", "font-size": 11, fill: "#6b7386" }, fmt(t1));
  const path = (key) => points.map((p, i) => (p[key] === null ? null : `${x(ts[i])},${y(p[key])}`)).filter(Boolean);
  const thr = path("threshold");
  if (thr.length) add("polyline", { points: thr.join(" "), fill: "none", stroke: "#c62f2f", "stroke-dasharray": "5 4", "stroke-width": 1.5, class: "threshold" });
  add("polyline", { points: path("statistic").join(" "), fill: "none", stroke: "#2b59c3", "stroke-width": 2, class: "statistic" });
  points.forEach((p, i) => {
    add("circle", {
      cx: x(ts[i]), cy: y(p.statistic), r: p.fired ? 5 : 3,
      fill: p.fired ? "#c62f2f" : "#2b59c3", class: p.fired ? "point fired" : "point",
    }).appendChild(document.createElementNS(NS, "title")).textContent = `${p.t}: ${p.statistic}${p.fired ? " (fired)" : ""}`;
  });
})();
