// The frontier plot of `llm-codesign serve`'s page: the HTML report's log-log SVG plot (render/report.py), drawn at the
// width of its box with no plotting library: each series' cloud of evaluated deployments, its frontier (with the shaded
// 80% interval of tok/s/GPU where the points carry intervals), its roofline-ideal bound, and the legend inside the SVG,
// so that the downloaded SVG and PNG are the figure whole. Names go in through textContent only.
"use strict";

const PLOT_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const PLOT_DASHES = ["2,3", "8,4", "9,3,2,3", "1,5", "6,2,1,2,1,2"];
const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, parent) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

function logTicks(lo, hi) {  // decades, with 2 and 5 labelled when the axis spans under three decades (the report's)
  const out = [];
  for (let k = Math.floor(lo) - 1; k <= Math.ceil(hi); k++)
    for (const m of [1, 2, 3, 4, 5, 6, 7, 8, 9]) {
      const v = m * Math.pow(10, k), l = Math.log10(v);
      if (l >= lo && l <= hi) out.push({v, major: m === 1, label: m === 1 || (hi - lo < 3 && (m === 2 || m === 5))});
    }
  return out;
}

const tickText = (v) => v >= 1e6 ? v / 1e6 + "M" : v >= 1e3 ? v / 1e3 + "k" : String(+v.toPrecision(3));

// The 80% band of tok/s/GPU about a frontier (measure.intervals, where the points carry `intervals`): upper edge, then lower
function bandPoints(frontier) {
  return frontier.filter((p) => p.intervals && p.intervals.output_tok_s_per_gpu);
}

// `text` in lines of at most `width` px at the plot's 12 px font, broken between words, each line but the last keeping its
// space so the lines' text together is `text` (measured on a canvas: the SVG is not in the page yet). A phone's 390 px
// cut a legend line off at the SVG's edge.
let legendCtx = null;
function wrapLine(text, width) {
  legendCtx = legendCtx || document.createElement("canvas").getContext("2d");
  legendCtx.font = "12px system-ui, sans-serif";
  const lines = [];
  let cur = "";
  for (const w of text.split(" ")) {
    const t = cur ? `${cur} ${w}` : w;
    if (cur && legendCtx.measureText(t).width > width) { lines.push(cur + " "); cur = w; } else cur = t;
  }
  return [...lines, cur];
}

// drawFrontier(box, data, opts): the plot of `data` ({limits: {x, y}, series: [{label, empty, frontier, cloud, bound,
// evaluated, at}], floor}: /api/pareto's `plot` beside each series' frontier; a design's `at`, its best deployment at the
// SLO, ringed, and `floor` {axis: "x" or "y", value, label}, the SLO's line) in `box`, at its width. opts.onClick(i, j) on a point,
// opts.tip: the element that shows a hovered point's lines (opts.describe(p)). Returns {svg, select(i, j)}.
function drawFrontier(box, data, opts) {
  const W = Math.max(box.clientWidth, 280), PH = Math.round(Math.min(Math.max(W * 0.55, 260), 520));
  const M = {l: 64, r: 12, t: 12, b: 46}, ROW = 18;
  const legend = [];  // [attrs of the swatch's line, text, class]
  data.series.forEach((r, i) => {
    const c = PLOT_COLOURS[i % PLOT_COLOURS.length], dash = PLOT_DASHES[i % PLOT_DASHES.length];
    const n = r.cloud.tok_s_per_user.length;
    legend.push([{stroke: c}, `${r.label} (${r.frontier.length} frontier points` + (n ? `; dots: ${n.toLocaleString()} of` : " of")
                 + ` ${r.evaluated.toLocaleString()} deployments evaluated)`, "series"]);
    if (bandPoints(r.frontier).length) legend.push([{stroke: c, "stroke-width": 8, opacity: 0.15}, `${r.label}: 80% interval of tok/s/GPU`, "band"]);
    if (r.bound) legend.push([{stroke: c, "stroke-dasharray": dash}, r.bound.label, "bound"]);
    if (r.empty) legend.push([null, `${r.label}: no deployment on the frontier: ${r.empty}`, "empty"]);
  });
  if (data.floor) legend.push([{stroke: "#a00", "stroke-dasharray": "6,4"}, data.floor.label, "floor"]);
  const wrapped = legend.map(([, text]) => wrapLine(text, W - M.l - 32 - M.r));
  const H = PH + 8 + wrapped.reduce((a, ls) => a + ls.length, 0) * ROW;
  // a screen reader's name for the figure (role img): what it plots, of which series
  const svg = svgEl("svg", {viewBox: `0 0 ${W} ${H}`, width: W, height: H, id: "frontier-svg", role: "img",
                            "aria-label": "Pareto frontier, log-log: output tokens/s per GPU against output tokens/s per user, of "
                              + data.series.map((r) => r.gpu ? `${r.model} on ${r.gpu}` : r.label).join(", "),
                            "font-family": "system-ui, sans-serif", "font-size": 12, "data-scale": "log"});
  svgEl("rect", {x: 0, y: 0, width: W, height: H, fill: "#fff"}, svg);  // an opaque PNG
  const lx = data.limits.x.map(Math.log10), ly = data.limits.y.map(Math.log10);
  const sx = (v) => M.l + (Math.log10(v) - lx[0]) / (lx[1] - lx[0]) * (W - M.l - M.r);
  const sy = (v) => PH - M.b - (Math.log10(v) - ly[0]) / (ly[1] - ly[0]) * (PH - M.t - M.b);
  const clip = `plot-area-${Math.random().toString(36).slice(2)}`;
  svgEl("clipPath", {id: clip}, svgEl("defs", {}, svg)).appendChild(svgEl("rect", {x: M.l, y: M.t, width: W - M.l - M.r, height: PH - M.t - M.b}));
  const grid = svgEl("g", {class: "grid"}, svg);
  for (const t of logTicks(lx[0], lx[1])) {
    const x = sx(t.v);
    svgEl("line", {x1: x, x2: x, y1: M.t, y2: PH - M.b, stroke: t.major ? "#ccc" : "#eee", class: t.major ? "xtick major" : "xtick", "data-v": t.v}, grid);
    if (t.label) svgEl("text", {x, y: PH - M.b + 16, "text-anchor": "middle", class: "xlabel"}, grid).textContent = tickText(t.v);
  }
  for (const t of logTicks(ly[0], ly[1])) {
    const y = sy(t.v);
    svgEl("line", {x1: M.l, x2: W - M.r, y1: y, y2: y, stroke: t.major ? "#ccc" : "#eee", class: t.major ? "ytick major" : "ytick", "data-v": t.v}, grid);
    if (t.label) svgEl("text", {x: M.l - 6, y: y + 4, "text-anchor": "end", class: "ylabel"}, grid).textContent = tickText(t.v);
  }
  svgEl("rect", {x: M.l, y: M.t, width: W - M.l - M.r, height: PH - M.t - M.b, fill: "none", stroke: "#888"}, svg);
  svgEl("text", {x: (M.l + W - M.r) / 2, y: PH - 10, "text-anchor": "middle"}, svg).textContent = "interactivity: output tokens/s per user";
  const mid = (M.t + PH - M.b) / 2;
  svgEl("text", {x: 16, y: mid, "text-anchor": "middle", transform: `rotate(-90 16 ${mid})`}, svg).textContent = "throughput: output tokens/s per GPU";
  const area = svgEl("g", {"clip-path": `url(#${clip})`}, svg);
  const xy = (x, y) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`;
  const dots = {};
  data.series.forEach((r, i) => {
    const c = PLOT_COLOURS[i % PLOT_COLOURS.length], xs = r.cloud.tok_s_per_user, ys = r.cloud.output_tok_s_per_gpu;
    // the cloud: one path of zero-length round-capped segments, a dot each
    svgEl("path", {d: xs.map((x, k) => `M${xy(x, ys[k])}h0`).join(""), stroke: c, "stroke-width": 3, "stroke-linecap": "round",
                   opacity: 0.3, class: "cloud", "data-i": i}, area);
    const banded = bandPoints(r.frontier);
    if (banded.length) {
      const edge = (k) => (p) => xy(p.tok_s_per_user, p.intervals.output_tok_s_per_gpu[k]);
      svgEl("polygon", {points: [...banded.map(edge("hi80")), ...banded.slice().reverse().map(edge("lo80"))].join(" "), fill: c,
                        opacity: 0.15, stroke: "none", class: "band", "data-i": i}, area);
    }
    if (r.bound) svgEl("polyline", {points: r.bound.tok_s_per_user.map((x, k) => xy(x, r.bound.output_tok_s_per_gpu[k])).join(" "), fill: "none",
                                    stroke: c, "stroke-width": 1.5, "stroke-dasharray": PLOT_DASHES[i % PLOT_DASHES.length], class: "bound", "data-i": i}, area);
    svgEl("polyline", {points: r.frontier.map((p) => xy(p.tok_s_per_user, p.output_tok_s_per_gpu)).join(" "), fill: "none", stroke: c,
                       "stroke-width": 2.5, class: "frontier", "data-i": i}, area);
    r.frontier.forEach((p, j) => {
      const pt = svgEl("circle", {cx: sx(p.tok_s_per_user).toFixed(2), cy: sy(p.output_tok_s_per_gpu).toFixed(2), r: 4, fill: c, stroke: "#222",
                                  "stroke-width": 0.6, class: "pt", "data-i": i, "data-j": j}, area);
      dots[`${i}:${j}`] = pt;
      if (opts.tip) {
        pt.addEventListener("mouseenter", (ev) => showTip(opts.tip, ev, [r.label, ...(opts.describe ? opts.describe(p) : [])]));
        pt.addEventListener("mouseleave", () => { opts.tip.style.display = "none"; });
      }
      if (opts.onClick) pt.addEventListener("click", () => opts.onClick(i, j));
    });
    // a design's side by side: the shape's best deployment at the SLO, ringed
    if (r.at) svgEl("circle", {cx: sx(r.at.tok_s_per_user).toFixed(2), cy: sy(r.at.output_tok_s_per_gpu).toFixed(2), r: 9, fill: "none",
                               stroke: c, "stroke-width": 2.5, "pointer-events": "none", class: "at-slo", "data-i": i}, area);
  });
  if (data.floor) {  // the SLO's floor: a line of tok/s/user (x) or tok/s/GPU (y)
    const f = data.floor, v = f.axis === "x" ? sx(f.value) : sy(f.value);
    svgEl("line", {...(f.axis === "x" ? {x1: v, x2: v, y1: M.t, y2: PH - M.b} : {x1: M.l, x2: W - M.r, y1: v, y2: v}), stroke: "#a00",
                   "stroke-dasharray": "6,4", "pointer-events": "none", class: "floor"}, area);
  }
  const lg = svgEl("g", {class: "legend"}, svg);
  let row = 0;
  legend.forEach(([line, , cls], k) => {
    const y = PH + 8 + row * ROW + ROW / 2;
    if (line) svgEl("line", {x1: M.l, x2: M.l + 26, y1: y, y2: y, "stroke-width": 2, ...line}, lg);
    const t = svgEl("text", {x: M.l + 32, y: y + 4, class: cls, fill: cls === "empty" ? "#a00" : "#222"}, lg);
    if (wrapped[k].length === 1) t.textContent = wrapped[k][0];
    else wrapped[k].forEach((l, n) => { svgEl("tspan", {x: M.l + 32, dy: n ? ROW : 0}, t).textContent = l; });
    row += wrapped[k].length;
  });
  box.replaceChildren(svg);
  let chosen = null;
  return {
    svg,
    select(i, j) {  // the chosen point stands out
      if (chosen) chosen.setAttribute("r", 4);
      chosen = dots[`${i}:${j}`] || null;
      if (chosen) chosen.setAttribute("r", 7);
    },
  };
}

// a tooltip kept inside the window: it never widens the page
function showTip(tip, ev, lines) {
  tip.replaceChildren(...lines.map((t, k) => { const e = document.createElement(k ? "div" : "b"); e.textContent = t; return e; }));
  tip.style.display = "block";
  const w = tip.offsetWidth, h = tip.offsetHeight;
  tip.style.left = Math.max(4, Math.min(ev.clientX + 12, window.innerWidth - w - 4)) + "px";
  tip.style.top = Math.max(4, ev.clientY + 12 + h > window.innerHeight ? ev.clientY - h - 12 : ev.clientY + 12) + "px";
}

// The figure as a standalone SVG file's text, and as a PNG (drawn on a canvas at `scale`), for the downloads
function svgText(svg) {
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(svg);
}

function pngBlob(svg, scale) {
  return new Promise((resolve, reject) => {
    const img = new Image(), w = +svg.getAttribute("width"), h = +svg.getAttribute("height");
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = Math.round(w * scale);
      c.height = Math.round(h * scale);
      const ctx = c.getContext("2d");
      ctx.scale(scale, scale);
      ctx.drawImage(img, 0, 0, w, h);
      c.toBlob((b) => (b ? resolve(b) : reject(new Error("png: the canvas gave no image"))), "image/png");
    };
    img.onerror = () => reject(new Error("png: the SVG did not load as an image"));
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svgText(svg));
  });
}
