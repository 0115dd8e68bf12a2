// The page of `llm-codesign serve`: a form, the JSON API (/api/*), the frontier drawn by plot.js (drawFrontier).
// Every name from the data goes in through textContent (never innerHTML). The form's state lives in the URL fragment:
// a link reproduces the view.
"use strict";

const $ = (id) => document.getElementById(id);
const WHAT_IF = ["hbm_tb_s", "memory_gb", "bf16_tflops", "fp8_tflops", "fp4_tflops", "scale_up_gb_s", "scale_up_domain"];
const PLAN = ["tp", "pp", "ep", "attention_dp", "kvp"];
const POOL = ["tp", "ep", "attention_dp", "instances"];
const PRICE = ["p_gpu", "p_mode", "p_weight_dtype", "p_kv_dtype", "p_num_gpus", ...PLAN.map((f) => "p_" + f), "p_concurrency", "p_cuda_graph_max_bs",
               ...POOL.map((f) => "pf_" + f), ...POOL.map((f) => "dc_" + f), "p_concurrencies", "p_decode_cuda_graph_max_bs", "p_decode_graphs", "p_spec", "p_draft_len", "p_acceptance",
               "p_acceptance_rates", "p_draft_model"];
const FIELDS = ["model", "config", "num_gpus", "weight_dtype", "kv_dtype", "engine", "s_spec", "s_acceptance", "s_draft_len", "isl", "osl",
                "min_tps_user", "max_ttft_ms", "arrival", "regime", "params", "d_moe", "active_params", "baseline", "baseline_from", "quality_sigmas", "max_candidates", "d_rank", "wi_base", "wi_id", ...WHAT_IF.map((f) => "wi_" + f), ...PRICE];
// what a result depends on: changing one of these clears every result shown (a frontier of another model stays no longer)
const IDENTITY = ["model", "config", "num_gpus", "wi_on", "wi_base", "wi_id", ...WHAT_IF.map((f) => "wi_" + f)];
const CUSTOM = "custom config (pasted)";
const ARRIVAL_NAMES = {waves: "waves (identical requests kept in step by a closed loop)", closed_loop: "a closed loop (one request per freed slot)",
                       burst: "a burst (every request at once)"};
let last = null;  // the last frontier: {req, series, plot, handle, sel}
let view = {sel: null, priced: false};  // the chosen point and whether a plan was priced, for the permalink
let GPUS = {};  // the catalog by id, for the what-if form's base figures and the engines each runs
let enginePicked = false;  // whether the engine menu was chosen (by hand or a link), else it follows the GPUs' vendor
let bundledModel = "llama-3.1-8b";  // the dropdown's model while a pasted config stands in for it

// a "bound by" row, starred with why where the kernel's rates bind past the GPU's ridge (estimate's bound_why; cli _bound_text)
function boundText(e, phase) {
  const why = (e.bound_why || {})[phase];
  return why ? `${e[phase + '_bound']} (${why})` : e[phase + '_bound'];
}
// memory in GiB, the unit nvidia-smi reports the capacity in, as estimate's table says it (newc5 #10); --json keeps GB (1e9 B)
function memoryText(m) {
  const gib = (gb) => (gb == null ? gb : gb * 1e9 / 2 ** 30);
  return `weights ${fix(gib(m.weights_gb), 1)} GiB, KV ${fix(gib(m.kv_gb), 1)} GiB, free ${fix(gib(m.free_gb), 1)} of ` +
    `${fix(gib(m.capacity_gb), 1)} GiB`;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function table(id, columns, rows, onclick) {
  // columns: [[header, kind]] with kind "t" for text (left) or "n" for numbers; rows: arrays of cells.
  // The table scrolls inside its own box where it is wider than the column.
  const t = el("table");
  t.id = id;
  const head = t.createTHead().insertRow();
  for (const [h, kind] of columns) head.appendChild(el("th", h, kind === "t" ? "t" : ""));
  const body = t.createTBody();
  rows.forEach((r, i) => {
    const tr = body.insertRow();
    r.forEach((c, j) => tr.appendChild(el("td", c, columns[j][1] === "t" ? "t" : "")));
    if (onclick) {  // a row that acts is reached by Tab and acts on Enter or Space, as a button does
      tr.tabIndex = 0;
      tr.addEventListener("click", () => onclick(i));
      tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); onclick(i); } });
    }
  });
  const box = el("div", null, "scroll");
  box.appendChild(t);
  return box;
}

function fix(x, d) { return x === null || x === undefined ? "-" : Number(x).toFixed(d); }

function showError(msg) { $("error").textContent = msg ? String(msg).split("\n")[0] : ""; }

function status(msg, busy) {
  $("status").textContent = msg || "";
  $("status").className = busy ? "busy" : "";
}

async function api(path, body) {
  const r = await fetch(path, body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) throw new Error((data && data.error) || `${path}: HTTP ${r.status}`);
  return data;
}

// a download link over a blob: `make()` gives the file's content when the link is clicked (the figure as drawn then)
function download(id, text, name, type, make) {
  const a = el("a", text);
  a.id = id;
  a.download = name;
  a.href = "#";
  a.addEventListener("click", () => {
    if (a.dataset.url) URL.revokeObjectURL(a.dataset.url);
    a.dataset.url = a.href = URL.createObjectURL(new Blob([make()], {type}));
  });
  return a;
}

// ---- form state <-> URL fragment
function readForm() {
  const s = {};
  for (const f of FIELDS) s[f] = $(f).value;
  s.gpus = [...document.querySelectorAll("#gpus input:checked")].map((c) => c.value);
  s.wi_on = $("wi_on").checked ? "1" : "";
  return s;
}

function writeForm(s) {
  if (s.p_gpu) priceGpu(s.p_gpu);
  for (const f of FIELDS) if (s[f] !== undefined && s[f] !== null && f !== "model" && f !== "engine") $(f).value = s[f];
  if (s.model) bundledModel = s.model;
  if (s.gpus) for (const c of document.querySelectorAll("#gpus input")) c.checked = s.gpus.includes(c.value);
  $("wi_on").checked = s.wi_on === "1";
  enginePicked = Boolean(s.engine);
  syncEngines(s.engine);  // the menu of these GPUs first, then the link's engine where one of them runs it
  if ($("wi_on").checked) $("what-if").open = true;
  syncModel();
  syncMode();
}

function saveHash() {
  const s = readForm(), p = new URLSearchParams();
  for (const f of FIELDS) if (s[f] !== "" && s[f] !== undefined) p.set(f, s[f]);
  p.set("gpus", s.gpus.join(","));
  if (s.wi_on) p.set("wi_on", "1");
  if (view.sel) p.set("sel", view.sel);
  if (view.priced) p.set("priced", "1");
  history.replaceState(null, "", "#" + p.toString());
}

function loadHash() {
  if (location.hash.length < 2) return null;
  const p = new URLSearchParams(location.hash.slice(1));
  const s = {};
  for (const f of FIELDS) if (p.has(f)) s[f] = p.get(f);
  s.gpus = (p.get("gpus") || "").split(",").filter((g) => g);
  s.wi_on = p.get("wi_on") || "";
  s.sel = p.get("sel");
  s.priced = p.get("priced") === "1";
  return s;
}

// a field's text as a number when it reads as one; otherwise as typed, for the server to name it in a 422 (an empty
// num_gpus is sent as "": the server's line then reads "num_gpus: '' is not valid; ..." rather than a null)
function num(v) {
  const t = String(v).trim();
  if (t === "") return null;
  const x = Number(t);
  return Number.isFinite(x) ? x : t;
}

// the fields of `names` given a value, as numbers: {tp: 4, ...}
function sizes(s, prefix, names) {
  const o = {};
  for (const f of names) { const v = num(s[prefix + f]); if (v !== null) o[f] = v; }
  return o;
}

function modelRef(s) {
  if (s.config.trim()) {
    try { return {config: JSON.parse(s.config)}; } catch (e) { throw new Error(`config: not valid JSON (${e.message})`); }
  }
  return {model: s.model};
}

// the dropdown names what is priced: "custom config (pasted)" while a config is pasted, the bundled model otherwise
function syncModel() {
  const sel = $("model"), pasted = $("config").value.trim() !== "";
  let custom = sel.querySelector("option.custom");
  if (pasted && !custom) {
    custom = el("option", CUSTOM, "custom");
    custom.value = "";
    sel.prepend(custom);
  }
  if (pasted) sel.value = "";
  else {
    if (custom) custom.remove();
    sel.value = bundledModel;
  }
}

function syncMode() {
  const disagg = $("p_mode").value === "disaggregated";
  $("p_agg").hidden = disagg;
  $("p_disagg").hidden = !disagg;
}

// every result shown: the inputs they came from changed
function clearResults() {
  last = null;
  view = {sel: null, priced: false};
  for (const id of ["what", "plot", "downloads", "point", "priced", "design", "frontier"]) $(id).replaceChildren();
  $("lint").className = "hint";
  $("lint").textContent = "run a frontier to see them";
  $("tip").style.display = "none";
  status("");
}

// the what-if GPU's request record (fields left empty keep the base's figures), or null when it is off
function whatIf(s) {
  if (!s.wi_on) return null;
  const w = {base: s.wi_base, id: s.wi_id.trim()};
  for (const f of WHAT_IF) { const v = num(s["wi_" + f]); if (v !== null) w[f] = v; }
  return w;
}

// the what-if block only where a GPU of the request names it: the server refuses one no GPU field names (newc10 #8)
function whatIfFor(wi, ...gpus) {
  return wi && gpus.some(g => typeof g === "string" && g.trim().toLowerCase() === wi.id.toLowerCase()) ? {what_if: wi} : {};
}

// the base GPU's figures in the form's units
// The engine menu: the engines that run on every GPU checked (and the what-if GPU's base), as /api/gpus lists them
// (spec.engines.engines_on); until one is picked, the first GPU's vendor's (TensorRT-LLM on NVIDIA's, SGLang on AMD's), or
// where the GPUs' vendors' engines differ, each GPU's own (value "": no engine sent), as `pareto --gpu mi355x,b200` prices
// them: an MI355X beside a B200 ran both on vLLM, the first engine both run, or SGLang.
function syncEngines(want) {
  const ids = [...document.querySelectorAll("#gpus input:checked")].map((c) => c.value);
  if ($("wi_on").checked) ids.push($("wi_base").value);
  const gs = ids.map((id) => GPUS[id]).filter((g) => g);
  if (!gs.length) return;  // no GPU chosen: the menu stays, and the search says to choose one
  const ok = gs[0].engines.filter((e) => gs.every((g) => g.engines.includes(e)));
  const own = [...new Set(gs.map((g) => g.engine))];
  const keep = want || $("engine").value;
  const options = ok.map((e) => el("option", e));
  if (own.length > 1) {
    const each = el("option", `each GPU's own (${own.join(", ")})`);
    each.value = "";
    options.unshift(each);
  }
  $("engine").replaceChildren(...options);
  $("engine").value = enginePicked && ok.includes(keep) ? keep : own.length > 1 ? "" : ok.includes(gs[0].engine) ? gs[0].engine : ok[0];
}

function fillWhatIf(id) {
  const g = GPUS[id];
  if (!g) return;
  const t = g.peak_tflops, r = (x) => String(+Number(x).toPrecision(4));
  const v = {hbm_tb_s: g.hbm_tb_s, memory_gb: g.memory_gib * 2 ** 30 / 1e9, bf16_tflops: t.bf16 || 0, fp8_tflops: t.fp8 || 0,
             fp4_tflops: t.fp4 || 0, scale_up_gb_s: g.scale_up_gb_s, scale_up_domain: g.scale_up_domain};
  for (const f of WHAT_IF) $("wi_" + f).value = r(v[f]);
}

function dtypes(s) {
  const o = {};
  if (s.weight_dtype) o.weight_dtype = s.weight_dtype;
  if (s.kv_dtype) o.kv_dtype = s.kv_dtype;
  return o;
}

function modelName(name) { return name === "custom" && $("config").value.trim() ? CUSTOM : name; }

// ---- the frontier
async function runFrontier(sel) {
  const s = readForm();
  showError("");
  const wi = whatIf(s), gpus = wi ? [...s.gpus, wi.id] : s.gpus;
  if (!gpus.length) { showError("gpus: choose at least one GPU"); return; }
  let req;
  try {
    req = {...modelRef(s), ...dtypes(s), gpus, num_gpus: num(s.num_gpus) ?? "", engine: s.engine || undefined, isl: num(s.isl), osl: num(s.osl),
           min_tps_user: num(s.min_tps_user), max_ttft_ms: num(s.max_ttft_ms), arrival: s.arrival || undefined, plot: true, ...speculation(s, "s_"), ...(wi ? {what_if: wi} : {})};
  } catch (e) { showError(e.message); return; }
  // what is shown is what the form last ran: the previous run's results go (a design, a search of its own, stays)
  for (const id of ["what", "plot", "downloads", "point", "priced", "frontier"]) $(id).replaceChildren();
  last = null;
  view = {sel: null, priced: false};
  saveHash();
  status("searching deployments", true);
  try {
    const r = await api("/api/pareto", req);
    last = {req, series: r.series, plot: r.plot, csv: r.csv, handle: null, sel: null};
    const s0 = r.series[0];
    $("what").textContent = `${modelName(s0.model)} on ${s0.num_gpus}x ${r.series.map((x) => x.gpu).join(", ")}: ISL/OSL ${s0.isl}/${s0.osl}, `
      + `${[...new Set(r.series.map((x) => x.backend))].length > 1 ? r.series.map((x) => `${x.backend} on ${x.gpu}`).join(", ") : s0.backend}, `
      + `weights ${req.weight_dtype || "searched"}, KV ${req.kv_dtype || "default"}`
      + (req.spec ? `, ${req.spec} drafting ${req.draft_len || "1-5"} tokens` : "")
      + `; TTFT with requests arriving in ${ARRIVAL_NAMES[s0.arrival] || s0.arrival}`;  // the answer turns on it (newc4 #1)
    drawPlot();
    downloads();
    frontierTable(r.series);
    const n = r.series.reduce((a, x) => a + x.frontier.length, 0);
    status(`${n} frontier points from ${r.series.reduce((a, x) => a + x.evaluated, 0).toLocaleString()} deployments`);
    runLint(s, req).catch((e) => showError(e.message));
    if (sel) {
      const [si, pi] = sel.split(":").map(Number);
      if (r.series[si] && r.series[si].frontier[pi]) await selectPoint(si, pi);
    }
  } catch (e) {
    status("");
    showError(e.message);
  }
}

function describe(p) {
  const d = p.deployment;
  return [`${d.plan} x${d.replicas}, batch ${d.concurrency_per_instance}`,
          `W ${d.weight_dtype} / A ${d.activation_dtype} / KV ${d.kv_dtype}` + (d.spec ? `, ${d.spec} k=${d.draft_len}` : ""),
          `${fix(p.tok_s_per_user, 1)} tok/s/user, ${fix(p.output_tok_s_per_gpu, 0)} tok/s/GPU`,
          `TTFT ${fix(p.ttft_ms, 0)} ms, TPOT ${fix(p.tpot_ms, 2)} ms`,
          `accuracy ${(p.accuracy && p.accuracy.short) || "none"}`, ...tipIntervals(p)];
}

// a hovered point's 80% (95%) intervals, as the HTML report's hover gives them (render/report.py), at the CLI's precision
function tipIntervals(p) {
  const b = p.intervals;
  if (!b) return [];
  const names = {tok_s_per_user: "tok/s/user", output_tok_s_per_gpu: "tok/s/GPU", ttft_ms: "TTFT ms", tpot_ms: "TPOT ms"};
  return ["80% (95%) interval: " + Object.keys(names).filter((k) => b[k]).map((k) =>
    `${names[k]} ${bound(k, b[k].lo80)}-${bound(k, b[k].hi80)} (${bound(k, b[k].lo95)}-${bound(k, b[k].hi95)})`).join(", ")];
}

// what the caption says of the roofline-ideal bound: the dashed line where one is drawn; else why none is. The API sends
// a series' bound only where it crosses the axes (render/report.py report_data, render/plot.py bound_in_view): at its
// ideal step it runs one to two decades above the best deployment (llama-3.1-70b on 8 H200: 14.2k against 3.0k tok/s/GPU)
function boundNote(series) {
  return series.some((s) => s.bound) ? "; dashed: the roofline-ideal bound"
    : "; the roofline-ideal bound is not drawn: it lies beyond these axes, above every deployment here";
}

// the plot at the column's width (drawn again when the column's width changes)
function drawPlot() {
  if (!last) return;
  const data = {limits: last.plot.limits, series: last.series.map((s, i) => ({...last.plot.series[i], frontier: s.frontier, evaluated: s.evaluated}))};
  $("bound-note").textContent = boundNote(data.series);
  last.handle = drawFrontier($("plot"), data, {onClick: selectPoint, tip: $("tip"), describe});
  last.width = $("plot").clientWidth;
  if (last.sel) last.handle.select(...last.sel);
}

function downloads() {
  const png = el("button", "PNG");
  png.type = "button";
  png.id = "dl-png";
  png.addEventListener("click", async () => {
    try {
      const a = el("a");
      a.download = "frontier.png";
      a.href = URL.createObjectURL(await pngBlob(last.handle.svg, 2));
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (e) { showError(e.message); }
  });
  const series = last.series;
  $("downloads").replaceChildren(el("span", "download: ", "hint"),
    download("dl-csv", "CSV", "frontier.csv", "text/csv", () => last.csv),
    download("dl-json", "JSON", "frontier.json", "application/json", () => JSON.stringify({series}, null, 1)),
    download("dl-svg", "SVG", "frontier.svg", "image/svg+xml", () => svgText(last.handle.svg)), png);
}

// why a centre is shown (render/intervals.py CENTRE)
const CENTRE = "the intervals are centred on the prediction times the median measured / predicted of the runs they come from, " +
  "which can put the prediction itself outside them";
// why a bound stops short (render/intervals.py CAPPED_TEXT)
const CAPPED_TEXT = "what the GPUs allow at the batch that runs (the weights and the KV cache of each request at its mean context a step reads over HBM bandwidth, or its FLOPs at peak; for TTFT, one prefill of the prompt so, mostly its FLOPs)";

// an interval's bound at the CLI's precision (render/intervals.py _fmt): TPOT to 0.01 ms, the rest to 0.1 below 100, else whole
function bound(k, x) { return k === "tpot_ms" ? fix(x, 2) : fix(x, Math.abs(x) < 100 ? 1 : 0); }
// a time bound in the CLI's units (render/intervals.py _duration): ms below 10 s, seconds below an hour, hours above
const dur = (k, ms) => (ms < 10000 ? [bound(k, ms), "ms"] : ms < 3600000 ? [fix(ms / 1e3, ms < 1e5 ? 1 : 0), "s"]
  : [fix(ms / 3.6e6, ms < 3.6e8 ? 1 : 0), "h"]);
// a bound pair as render/intervals.py _range writes it: "95-160 ms", each bound its unit where they differ ("739 s-59.8 h")
const span = (k, lo, hi) => {
  if (k !== "ttft_ms" && k !== "tpot_ms") return `${bound(k, lo)}-${bound(k, hi)}`;
  const [a, ua] = dur(k, lo), [c, uc] = dur(k, hi);
  return ua === uc ? `${a}-${c} ${uc}` : `${a} ${ua}-${c} ${uc}`; };
// a time in a table whose header says ms (render/intervals.py table_time, disagg's table): the bare figure to `d` below 10 s,
// else in s or h as durValue writes it
const tableTime = (ms, d = 1) => (ms < 10000 ? fix(ms, d) : dur("ttft_ms", ms).join(" "));

// ---- estimate's rows as the CLI prints them (cli/commands.py estimate; tests/test_app.py runs these in node against it)
// a prediction's time (render/intervals.py duration): ms to 0.1 (TPOT 0.01) below 10 s, then seconds and hours
const durValue = (k, ms) => (ms < 10000 ? `${fix(ms, k === "tpot_ms" ? 2 : 1)} ms` : dur(k, ms).join(" "));
// render/intervals.py interval_text: "80%: 95-160 ms, 95%: 80-210 ms", centred where the prediction lies outside its 80%
// render/intervals.py _capped_range: a bound at the ideal step reads "(floor)" below, "(ceiling)" above
const capSpan = (k, b, l) => { const lo = b["lo" + l], hi = b["hi" + l], c = b.capped, t = span(k, lo, hi);
  if (c === undefined || c === null || (c !== lo && c !== hi)) return t;
  if (c !== lo) return `${t} (ceiling)`;
  return k === "ttft_ms" || k === "tpot_ms" ? `${dur(k, lo).join(" ")} (floor)-${dur(k, hi).join(" ")}` : `${bound(k, lo)} (floor)-${bound(k, hi)}`; };
// render/intervals.py no_interval: past x20 the value alone, its 95% span (the rule's), its 80% range and each reason
const noInterval = (b, k, below = false) => { const x = b.lo95 > 0 ? b.hi95 / b.lo95 : Infinity;
  const out = `no interval: the runs like it are too few or too spread (95% spans x${spanText(x)}; 80%: ${capSpan(k, b, "80")})`;
  const why = [...new Set((b.widened || []).map((w) => String(w).replace(FACTORS, "")))];
  return why.length ? `${out}; beyond its runs: ${why.join("; ")}` : out + (below ? "; its runs: the basis below" : ""); };
// `below`: the runs the band is drawn from are listed beneath (disagg's view, reasons_below)
function intervalText(b, k, v, below = false) {
  if (b.lo95 > 0 && b.hi95 / b.lo95 > 20) return noInterval(b, k, below);
  const timed = k === "ttft_ms" || k === "tpot_ms";
  const centre = v !== undefined && !(b.lo80 <= v && v <= b.hi80) ? `, centred on ${timed ? dur(k, b.centre).join(" ") : bound(k, b.centre)}` : "";
  return `80%: ${capSpan(k, b, "80")}, 95%: ${capSpan(k, b, "95")}${centre}`;
}
// TTFT, the arrival it turns on, TPOT and the rates, each with its intervals; n/a for TPOT and tok/s/user at one output token
function metricRows(e) {
  const iv = (k) => (e.intervals && e.intervals[k] ? `; ${intervalText(e.intervals[k], k, e[k])}` : "");
  const one = e.osl <= 1, na = "n/a (one output token)";
  // the slot wait's share of TTFT where requests queue (the CLI's render/intervals.py queue_text, serve/estimate.py _queue)
  const q = e.queue ? ` (${durValue("ttft_ms", e.queue.ttft_ms)} of it queue: ${+e.queue.cohorts.toPrecision(3)} cohort`
    + `${e.queue.cohorts === 1 ? "" : "s"} of ${durValue("ttft_ms", e.queue.cycle_ms)}, which the bands include)` : "";
  return [["TTFT", durValue("ttft_ms", e.ttft_ms) + q + iv("ttft_ms")], ...(e.arrival_text ? [["arrival", e.arrival_text]] : []),
    ["TPOT", one ? na : durValue("tpot_ms", e.tpot_ms) + iv("tpot_ms")],
    ["tokens/s per user", one ? na : fix(e.tok_s_per_user, 1) + iv("tok_s_per_user")],
    ["output tokens/s per GPU", fix(e.output_tok_s_per_gpu, 1) + iv("output_tok_s_per_gpu")]];
}
// render/intervals.py said_once: each reason once by its words (_plain), its factors labelled by metric where they differ
const FACTORS = / \(x[0-9.]+(\/x[0-9.]+)* at [0-9/]+%(: (?:[^()]|\([^()]*\))*)?\)$/;  // QUADRATURE's note holds a parenthesis
function saidOnce(b) {
  const names = {ttft_ms: "TTFT", tpot_ms: "TPOT", tok_s_per_user: "tok/s/user", output_tok_s_per_gpu: "tok/s/GPU"};
  const groups = new Map();
  Object.keys(names).filter((k) => b[k]).forEach((k) => (b[k].widened || []).forEach((w) => {
    const s = String(w), plain = s.replace(FACTORS, ""), tail = s.slice(plain.length);
    if (!groups.has(plain)) groups.set(plain, new Map());
    const g = groups.get(plain);
    if (!g.has(tail)) g.set(tail, []);
    g.get(tail).push(names[k]); }));
  return [...groups].map(([plain, g]) => plain + (g.size === 1 ? [...g.keys()][0]
    : ` (${[...g].map(([t, ms]) => `${ms.join(", ")} ${t.trim().slice(1, -1)}`).join("; ")})`));
}
// render/intervals.py said_across: reasons several rows gave, each once; lines differing only in what the band took of
// a reason said once with MIXED_NOTE's words
function saidAcross(reasons, where) {
  const groups = new Map();
  reasons.forEach((s) => {
    const plain = s.replace(FACTORS, ""), m = s.slice(plain.length).match(/^ \((x[0-9.]+(?:\/x[0-9.]+)* at [0-9/]+%)(?:: (?:[^()]|\([^()]*\))*)?\)$/);
    const key = m ? `${plain} (${m[1]}` : s;
    if (!groups.has(key)) groups.set(key, new Set());
    groups.get(key).add(s); });
  return [...groups].map(([key, ss]) => ss.size === 1 ? [...ss][0] : `${key}: ${acrossNote([...ss].map((x) => x.slice(key.length + 2, -1)), where)})`);
}
// render/intervals.py _across_note: the band's at every load, in quadrature at some, where each row's note says the band took it
function acrossNote(notes, where) {
  const quad = [...new Set(notes.filter((n) => n.startsWith("in quadrature")))];
  if (quad.length === 1 && notes.every((n) => n.endsWith("the band's")))
    return `the band's term at every ${where.replace(/s$/, "")}, ${quad[0].slice(0, -", the band's".length)} at some`;
  return `the band's term at some ${where}, within another reason's at others`;
}
// render/intervals.py basis_rows: the runs, why centred, the bounds the hardware stops, each reason once
function basisRows(b, e) {
  if (!b) return [];
  const names = {ttft_ms: "TTFT", tpot_ms: "TPOT", tok_s_per_user: "tok/s/user", output_tok_s_per_gpu: "tok/s/GPU"};
  const ks = Object.keys(names).filter((k) => b[k]);
  const sources = new Map();
  ks.forEach((k) => { const s = `from ${b[k].source}`; if (!sources.has(s)) sources.set(s, []); sources.get(s).push(names[k]); });
  const caps = ks.filter((k) => b[k].capped !== undefined && b[k].capped !== null)
    .map((k) => `${names[k]} ${k === "tpot_ms" || k === "ttft_ms" ? "from" : "at"} ${bound(k, b[k].capped)}${k.endsWith("_ms") ? " ms" : ""}`);
  const reasons = saidOnce(b);
  return [...[...sources].map(([s, ms]) => [sources.size === 1 ? "interval basis" : `basis: ${ms.join(", ")}`, s]),
    ...(ks.some((k) => e && !(b[k].lo80 <= e[k] && e[k] <= b[k].hi80)) ? [["centred on", CENTRE]] : []),
    ...(caps.length ? [["bounds capped", `${caps.join(", ")}: ${CAPPED_TEXT}`]] : []),
    ...reasons.map((w) => ["beyond the runs", w])];
}

// where a decode batch misses the CUDA graphs and runs eagerly: why TPOT jumps and the capture that avoids it (serve/estimate.py
// EagerDecode; the CLI's "CUDA graphs" row)
function eagerRows(e) {
  return e.eager_decode ? [["CUDA graphs", e.eager_decode.note]] : [];
}

// where an engine's fitted per-request cost (SGLang's) is a tenth of TTFT or more, the line estimate's "fitted request cost"
// row prints (serve/estimate.py request_cost_note)
// and TensorRT-LLM's fitted rank skew where it is (serve/estimate.py rank_skew_note; the CLI's "fitted rank skew" row);
// around them the CLI's other notes in its order (frev #5): the GPUs read off tp x attention_dp (plan_note, its stderr
// "note:"), each "precision as run" (MXFP4 emulated, FP4 as W4A16) and the head size's "shape as run" (attention_note)
function costRows(e) {
  return [...(e.plan_note ? [["GPUs", e.plan_note]] : []),
    ...(e.precision_notes || []).map((n) => ["precision as run", n]),
    ...(e.request_cost_note ? [["fitted request cost", e.request_cost_note]] : []),
    ...(e.rank_skew_note ? [["fitted rank skew", e.rank_skew_note]] : []),
    ...(e.adp_hold_note ? [["fitted attention-DP wait", e.adp_hold_note]] : []),
    ...(e.attention_note ? [["shape as run", e.attention_note]] : [])];
}

// the requests in flight, offline with the knee priced, in estimate's words (cli/commands.py _knee_text,
// serve/estimate.py offline_knee): the smallest batch within 3% of the most tok/s/GPU, and what the maximum would give
function kneeText(e) {
  const k = e.offline_knee;
  if (!k) return String(e.concurrency);
  if (k.max_batch === k.batch) return `batch ${k.batch} (the most tok/s/GPU)`;
  const where = k.at_max_batch ? `the largest batch is ${k.max_batch}` : `the most tok/s/GPU at ${k.max_batch}`;
  const ratio = e.tpot_ms !== null && e.tpot_ms !== undefined ? `${k.tpot_ratio.toFixed(1)}x the TPOT` : `${k.ttft_ratio.toFixed(1)}x the TTFT`;
  return `batch ${k.batch} (${where}; ${k.max_batch} gives +${(100 * k.gain).toFixed(0)}% at ${ratio}; `
    + `the smallest batch within ${(100 * k.fraction).toFixed(0)}% of the most tok/s/GPU)`;
}

// the loads at which speculation does not pay, after its first (cli/commands.py spec_losing_text)
function specLosingText(runs) {
  if (!runs.length) return "";
  const shown = runs.slice(0, 4).map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`));
  return ` (loses at ${shown.join(", ")}${runs.length > 4 ? ", ..." : ""})`;
}

// the "largest batch" row (cli/commands.py _largest_batch_text): what sets it, and what happens to the requests past it
function largestBatchText(e) {
  if (e.in_step) return `${e.max_batch_text}; ${e.in_step}`;  // requests in step past the full context: preempted (cli twin)
  if (!e.over_capacity) return e.max_batch_text;
  return e.max_batch_by === "step budget" ? `${e.max_batch_text}; the rest wait for whole requests to finish (longer TTFT)`
    : `${e.max_batch_text}: ${e.over_capacity}`;
}

// render/intervals.py unpredictable and unpredictable_footnote: a value whose 95% interval spans more than PREDICTABLE_SPAN
// (its band's predictable false) marked "?", and the line beneath saying per metric at how many rows and over what spans
const PREDICTABLE_SPAN = 20;
// render/intervals.py span_text: a 95% span to 0.1 below 10, whole above, never reading as the x20 it was tested against
function spanText(x) {
  let d = x < 10 ? 1 : 0;
  while (d < 3 && x > PREDICTABLE_SPAN && PREDICTABLE_SPAN >= +x.toFixed(d)) d += 1;
  return Number.isFinite(x) ? x.toFixed(d) : "inf";
}
const LABELS = {tok_s_per_user: "tok/s/user", output_tok_s_per_gpu: "tok/s/GPU", ttft_ms: "TTFT", tpot_ms: "TPOT"};
const unpredictable = (b) => (b && b.predictable === false ? "?" : "");
function unpredictableFootnote(bands, metrics, what = "points shown") {
  const said = [];
  for (const m of metrics) {
    const spans = bands.filter((b) => b && unpredictable(b[m])).map((b) => b[m].span95);
    if (!spans.length) continue;
    const lo = spanText(Math.min(...spans)), hi = spanText(Math.max(...spans));
    said.push(`${LABELS[m]} at ${spans.length} of ${bands.length} ${what}, x${lo}` + (hi !== lo ? `-x${hi}` : ""));
  }
  return said.length ? `?: not predictable here: its 95% interval spans more than x${PREDICTABLE_SPAN.toFixed(0)} (${said.join("; ")}); `
    + "span95 and predictable of each in the JSON" : "";
}
// the lines given (an empty one left out) as hints
const hints = (lines, cls = "hint") => lines.filter((x) => x).map((x) => el("div", x, cls));

function frontierTable(series) {
  const rows = [], index = [];
  series.forEach((s, i) => s.frontier.forEach((p, j) => {
    const d = p.deployment;
    const g = p.intervals && p.intervals.output_tok_s_per_gpu;
    // render/intervals.py unpredictable: a value whose 95% interval spans more than x20 marked "?", the hint beneath says it
    const q = (k, n) => fix(p[k], n) + unpredictable(p.intervals && p.intervals[k]);
    rows.push([s.gpu, q("tok_s_per_user", 1), q("output_tok_s_per_gpu", 0), q("ttft_ms", 0), q("tpot_ms", 2), d.plan,
               d.replicas, d.concurrency_per_instance, `${d.weight_dtype}/${d.kv_dtype}`, d.spec ? `${d.spec} k=${d.draft_len}` : "-",
               (p.accuracy && p.accuracy.short) || "none", g ? `${fix(g.lo80, 0)}-${fix(g.hi80, 0)}${g.hi80 === g.capped || g.lo80 === g.capped ? "*" : ""}` : "-"]);
    index.push([i, j]);
  }));
  const box = $("frontier");
  if (!rows.length) {
    box.replaceChildren(el("div", "no deployment on the frontier: none fits these GPUs, or none meets the SLOs", "hint"));
    return;
  }
  box.replaceChildren(el("div", "click a row for its operators and estimate", "hint"),
    table("frontier-table", [["GPU", "t"], ["tok/s/user", "n"], ["tok/s/GPU", "n"], ["TTFT ms", "n"], ["TPOT ms", "n"], ["plan", "t"],
                             ["x", "n"], ["batch", "n"], ["W/KV", "t"], ["spec", "t"], ["accuracy", "t"], ["tok/s/GPU 80%", "n"]],
          rows, (k) => selectPoint(...index[k])),
    // render/intervals.py capped_footnote: a printed bound stopped at the ideal step says so, as the CLI's tables do
    ...(rows.some((r) => r[11].endsWith("*")) ? [el("div", `bounds capped: tok/s/GPU 80% marked *: ${CAPPED_TEXT}.`, "hint")] : []),
    ...hints([unpredictableFootnote(series.flatMap((s) => s.frontier.map((p) => p.intervals)), Object.keys(LABELS))]),
    // a default format left out (its accuracy unmeasured: explore/search.py not_searched), as the CLI's "note:" line says it
    ...hints([...new Set(series.flatMap((s) => s.not_searched || []))].map((x) => `note: ${x}`)));
  const trs = box.querySelectorAll("tbody tr");
  index.forEach(([i, j], k) => { trs[k].dataset.sel = `${i}:${j}`; });
}

// a frontier point's deployment in the pricing form: Price then prices that plan at any other batch or speculation
function fillPrice(d, gpu) {
  priceGpu(gpu);
  $("p_mode").value = "aggregated";
  $("p_num_gpus").value = d.instance_gpus;
  for (const f of PLAN) $("p_" + f).value = d[f];
  $("p_concurrency").value = d.concurrency_per_instance;
  $("p_cuda_graph_max_bs").value = d.cuda_graph_max_bs ?? "";  // the capture the search priced the point with
  $("p_weight_dtype").value = d.weight_dtype;
  $("p_kv_dtype").value = d.kv_dtype;
  $("p_spec").value = d.spec || "";
  $("p_draft_len").value = d.spec ? d.draft_len : "";
  $("p_acceptance").value = d.spec && d.acceptance ? d.acceptance : "";
  $("p_acceptance_rates").value = d.spec && d.acceptance_rates ? d.acceptance_rates.join(",") : "";
  syncMode();
}

async function selectPoint(si, pi) {
  if (!last) return;
  const s = last.series[si], p = s.frontier[pi];
  const ref = last.req.config ? {config: last.req.config} : {model: last.req.model};
  status("pricing the point", true);
  try {
    const e = await api("/api/estimate", {...ref, gpu: s.gpu, deployment: p.deployment, isl: last.req.isl, osl: last.req.osl, arrival: last.req.arrival,
                                          ...whatIfFor(last.req.what_if, s.gpu)});
    last.sel = [si, pi];
    view.sel = `${si}:${pi}`;
    last.handle.select(si, pi);
    for (const tr of document.querySelectorAll("#frontier-table tbody tr")) tr.classList.toggle("chosen", tr.dataset.sel === view.sel);
    fillPrice(p.deployment, s.gpu);
    saveHash();
    const m = e.memory || {};
    const summary = [["deployment", `${e.plan}, ${e.precision_as_run}, ${e.backend}, ${p.deployment.instance_gpus}x ${s.gpu} per instance`],
      ["concurrency", e.concurrency], ...metricRows(e),
      ["memory per GPU", memoryText(m)],
      ["decode bound by", boundText(e, 'decode')], ["prefill bound by", boundText(e, 'prefill')], ...eagerRows(e), ...costRows(e), ...basisRows(e.intervals, e)];
    // the rows' shares of TPOT sum to it, in estimate --breakdown's order (serve/estimate.py decode_rows: the operators slowest
    // first, the host's step and per-sequence costs, the prompts' stalls per token); a row's share of TPOT is its share here
    const total = e.point_breakdown.reduce((a, o) => a + o.tpot_ms, 0);
    $("point").replaceChildren(
      el("h2", `Point ${pi + 1} of ${modelName(s.model)} on ${s.gpu}: estimate`),
      table("estimate-table", [["metric", "t"], ["value", "t"]], summary),
      el("h2", "Its decode step and TPOT, part by part"),
      table("breakdown-table", [["part", "t"], ["kind", "t"], ["ms a step", "n"], ["ms of TPOT", "n"], ["share", "n"]],
            e.point_breakdown.map((o) => [o.name, o.kind, fix(o.time_ms, 3), fix(o.tpot_ms, 3), `${fix(100 * o.tpot_ms / total, 1)}%`])),
      ...e.point_breakdown.filter((o) => o.what).map((o) => el("div", `${o.name}: ${o.what}.`, "hint")),
      ...exportBox(e.export, "export"));
    status("");
  } catch (err) {
    status("");
    showError(err.message);
  }
}

function exportBox(x, id) {
  // the engine's launch configuration, as `llm-codesign export-point` writes it, with a download link
  if (!x) return [];
  const head = el("h2", `Launch configuration (${x.engine})`);
  if (x.error) return [head, el("div", x.error, "hint")];
  const pre = el("pre", x.text);
  pre.id = `${id}-text`;
  // the file's capture where it is not the answer's (its header priced with it, as CLI export says: crev10 #2)
  const cap = x.capture ? [el("div", x.capture, "hint")] : [];
  return [head, ...cap, download(`${id}-download`, `download ${x.file_name}`, x.file_name, "text/plain", () => x.text), pre];
}

async function runLint(s, req) {
  const r = await api("/api/lint", {...modelRef(s), ...dtypes(s), gpu: req.gpus[0], regime: s.regime, engine: req.engine,
                                    ...whatIfFor(req.what_if, req.gpus[0])});
  const box = $("lint");
  box.className = "";
  if (!r.findings.length) { box.replaceChildren(el("div", `no findings for ${modelName(r.model)} on ${r.gpu}`, "hint")); return; }
  // whose findings: the first GPU's only, where several are checked (a B200's beside an MI355X's frontier read as both's)
  const which = req.gpus.length > 1 ? ", the first GPU checked" : "";
  // where R2, R3 and R6 were priced and on which engine: the caption the CLI's table prints (explore.lint.Lint)
  box.replaceChildren(el("div", `findings for ${modelName(r.model)} on ${r.gpu}${which}, ${s.regime} regime`, "hint"),
    el("div", `${r.caption}.`, "hint"), table("lint-table", [["rule", "t"], ["severity", "t"], ["where", "t"], ["cost %", "n"], ["cost measured as", "t"],
                                           ["finding", "t"], ["fix", "t"]],
    r.findings.map((f) => [`${f.rule} ${f.rule_name}`, f.severity, f.where, lintCost(f), f.measure, f.message, f.fix])));
}

// the pricing form's GPU: a catalog GPU, or the what-if GPU's name (added to the menu when first chosen)
function priceGpu(id) {
  const sel = $("p_gpu");
  if (id && ![...sel.options].some((o) => o.value === id)) sel.appendChild(el("option", id));
  sel.value = id || "";
}

// a finding's cost in its rule's own measure, and where R2 or R6 priced it in the regime's objective, the rate lost
// (explore.lint Finding.objective_cost), as the CLI's lint table gives it
function lintCost(f) {
  const oc = f.objective_cost;
  return fix(f.cost_pct, 1) + (oc ? ` (-${Number(oc.lost).toFixed(1)} ${oc.unit})` : "");
}

// ---- one deployment priced: a plan x requests in flight x speculation, aggregated or disaggregated
// the speculation fields of the search (prefix "s_") or of the pricing form ("p_")
// A figure of speculation with none chosen is refused here, named by its label: the server's line names the CLI's flags
// ("spec: None is not valid; --spec mtp|eagle3|draft|ngram when --acceptance ...").
const SPEC_FIELDS = ["acceptance", "acceptance_rates", "draft_len", "draft_model"];
const labelOf = (id) => $(id).parentElement.firstChild.textContent.trim().replace(/^or /, "");  // "or acceptance per ..."
function speculation(s, prefix) {
  const o = {}, v = (f) => s[prefix + f] || "";
  const given = SPEC_FIELDS.filter((f) => v(f).trim()).map((f) => labelOf(prefix + f));
  if (!v("spec") && given.length) {
    const methods = [...$(prefix + "spec").options].map((x) => x.value).filter((x) => x);
    throw new Error(`speculation: none is not valid with ${given.join(" and ")} given; ${methods.join(", ")}, or ${given.join(" and ")} left empty`);
  }
  if (v("spec")) o.spec = v("spec");
  const k = num(v("draft_len")), a = num(v("acceptance"));
  if (k !== null) o.draft_len = k;
  if (a !== null) o.acceptance = a;
  if (v("acceptance_rates").trim()) o.acceptance_rates = v("acceptance_rates").split(",").map(num);
  if (v("draft_model").trim()) o.draft_model = v("draft_model").trim();
  return o;
}

async function runPrice() {
  const s = readForm();
  showError("");
  const wi = whatIf(s), gpu = s.p_gpu || s.gpus[0] || (wi ? wi.id : null);
  if (!gpu) { showError("gpus: choose at least one GPU"); return; }
  const prec = {...dtypes(s), ...(s.p_weight_dtype ? {weight_dtype: s.p_weight_dtype} : {}), ...(s.p_kv_dtype ? {kv_dtype: s.p_kv_dtype} : {})};
  let common;
  try {
    common = {...modelRef(s), ...prec, gpu, engine: s.engine || undefined, isl: num(s.isl), osl: num(s.osl), arrival: s.arrival || undefined, ...speculation(s, "p_"), ...whatIfFor(wi, gpu)};
  } catch (e) { showError(e.message); return; }
  const disagg = s.p_mode === "disaggregated";
  $("priced").replaceChildren();
  status("pricing the deployment", true);
  try {
    if (disagg) {
      const conc = s.p_concurrencies.split(",").filter((x) => x.trim()).map(num);
      const r = await api("/api/disagg", {...common, prefill: sizes(s, "pf_", POOL), decode: sizes(s, "dc_", POOL), concurrency: conc,
                                           decode_cuda_graph_max_bs: num(s.p_decode_cuda_graph_max_bs),
                                           ...(s.p_decode_graphs === "piecewise" ? {decode_piecewise_graphs: true} : {})});
      showDisagg(r);
    } else {
      const e = await api("/api/estimate", {...common, num_gpus: num(s.p_num_gpus), ...sizes(s, "p_", PLAN), concurrency: num(s.p_concurrency),
                                            cuda_graph_max_bs: num(s.p_cuda_graph_max_bs), export: true});
      showPriced(e);
    }
    view.priced = true;
    saveHash();
    status("");
  } catch (e) {
    status("");
    showError(e.message);
  }
}

function showPriced(e) {
  const m = e.memory || {}, sp = e.spec;
  // the engine with the releases whose defaults it prices (engine_release), as the CLI's estimate title says it
  const rows = [["deployment", `${e.plan} on ${e.num_gpus}x ${e.gpu}, ${e.precision_as_run}, ${e.backend} (defaults as ${e.engine_release})`],
    ["requests in flight", kneeText(e)],
    ...metricRows(e), ["output tokens/J (GPU)", fix(e.tokens_per_joule, 2)],
    // what sets it (max_batch_text: serve/estimate.py batch_limit, the CLI's row), over_capacity where requests wait or
    // share slots (`fits` is the memory's alone: serve/estimate.py Estimate.fits)
    ["largest batch", largestBatchText(e)],
    ["memory per GPU", memoryText(m)],
    ["decode bound by", boundText(e, 'decode')], ["prefill bound by", boundText(e, 'prefill')], ...eagerRows(e), ...costRows(e), ...basisRows(e.intervals, e)];
  if (sp) {
    rows.push(["speculation", `${sp.method} k=${sp.draft_len}, ${fix(e.accepted_per_step, 2)} tokens/step, speed-up ${fix(sp.speedup_at_concurrency, 2)}x `
               + `here, ${fix(sp.speedup_at_1, 2)}x at batch 1`],
              ["speculation stops paying at", (sp.stops_paying_at_concurrency || "never within the batch that fits")
               + specLosingText(sp.losing_loads || [])]);
  }
  $("priced").replaceChildren(el("h2", `Priced: ${modelName(e.model)}, ${e.plan} on ${e.gpu}`),
    table("priced-table", [["metric", "t"], ["value", "t"]], rows), ...exportBox(e.export, "priced-export"));
}

function showDisagg(r) {
  const p = r.prefill, d = r.decode;
  const where = r.decode_gpu === r.gpu ? `${r.num_gpus}x ${r.gpu}` : `${r.num_gpus} GPUs (prefill on ${r.gpu}, decode on ${r.decode_gpu})`;
  $("priced").replaceChildren(
    el("h2", `Priced, disaggregated: ${modelName(r.model)} on ${where}, ${r.precision}, ${r.backend}`),
    el("div", `prefill ${p.instances}x ${p.plan} (${fix(p.capacity_req_s, 2)} req/s), decode ${d.instances}x ${d.plan} `
       + `(holds ${d.max_concurrency.toLocaleString()} requests). Times in ms (from 10 s in s or h): TTFT = queue + prefill + KV hand-off `
       + "+ slot wait (past what the decode pool holds) + front end (the engine's request overhead). "
       + `req/s: ${p.capacity_note}.`, "hint"),
    table("disagg-table", [["requests", "n"], ["TTFT", "n"], ["prefill", "n"], ["KV move", "n"], ["queue", "n"], ["slot wait", "n"],
                           ["front end", "n"], ["TPOT", "n"], ["tok/s/user", "n"], ["tok/s/GPU", "n"], ["fits", "t"]],
          r.rows.map((x) => [x.concurrency, tableTime(x.ttft_ms), tableTime(x.prefill_ms), tableTime(x.kv_transfer_ms, 2),
                             tableTime(x.prefill_wait_ms), tableTime(x.decode_slot_wait_ms), tableTime(x.front_end_ms), tableTime(x.tpot_ms, 2),
                             fix(x.tok_s_per_user, 1), fix(x.output_tok_s_per_gpu, 1), x.fits ? "yes" : "no"])),
    // one output token: TPOT and tok/s/user null, a dash (render/intervals.py NO_DECODE, disagg's caption)
    ...(r.osl <= 1 ? [el("div", "TPOT, tok/s/user: - at OSL 1 (the one output token comes from the prefill: no decode step runs).", "hint")] : []),
    // the lines disagg prints under its table (serve/disagg.py: "fits no at ...", "CUDA graphs: ..." where a load decodes without
    // the graphs, the engine both pools run, what changed nothing)
    ...r.notes.map((n) => el("div", n, "hint disagg-note")),
    // how far the disaggregated model has been off, the line ending disagg's caption (measure/accuracy.py disagg_measured)
    ...(r.measured ? [el("div", r.measured, "hint disagg-measured")] : []),
    ...disaggIntervals(r.rows));
}

// each row's TTFT and TPOT intervals, as `disagg` prints them under its table (cli/disagg.py), in the cells the estimate's take:
// why centred where a prediction lies outside its 80% one, each basis once (with its rows where the rows' differ), each reason once
function disaggIntervals(rows) {
  // at one output token a row has no TPOT interval (serve/metrics.py without_decode): its cell a dash
  const banded = rows.filter((x) => x.intervals && x.intervals.ttft_ms);
  if (!banded.length) return [];
  const off = (x, k) => x.intervals[k] && !(x.intervals[k].lo80 <= x[k] && x[k] <= x.intervals[k].hi80);
  const cell = (x, k) => { const b = x.intervals[k];
    if (!b) return "-";
    // as disagg's line (render/intervals.py interval_text, reasons_below): "80% / 95%", or past x20 no interval
    return intervalText(b, k, x[k], true).replace("80%: ", "").replace(", 95%: ", " / "); };
  const bases = new Map(), each = [];
  for (const x of banded) {
    for (const b of Object.values(x.intervals)) {
      if (!bases.has(b.source)) bases.set(b.source, new Set());
      bases.get(b.source).add(x.concurrency);
    }
    each.push(...saidOnce(x.intervals));
  }
  const reasons = saidAcross(each, "loads");
  const split = new Set([...bases.values()].map((c) => [...c].join(","))).size > 1;
  const notes = [...(banded.some((x) => off(x, "ttft_ms") || off(x, "tpot_ms")) ? [["centred on", CENTRE]] : []),
    ...[...bases].map(([src, c]) => [split ? `interval basis (${[...c].join(", ")} request${[...c].join() === "1" ? "" : "s"})` : "interval basis", `from ${src}`]),
    ...reasons.map((w) => ["beyond the runs", w])];
  return [table("disagg-intervals", [["requests", "n"], ["TTFT: 80% / 95% interval", "t"], ["TPOT: 80% / 95% interval", "t"]],
                banded.map((x) => [x.concurrency, cell(x, "ttft_ms"), cell(x, "tpot_ms")])),
          ...notes.map(([k, v]) => el("div", `${k}: ${v}`, "hint"))];
}

// ---- design
// POST /api/design as NDJSON: progress lines, then the result (or one error line)
async function designStream(req, onProgress) {
  const r = await fetch("/api/design", {method: "POST", body: JSON.stringify(req),
                                        headers: {"Content-Type": "application/json", "Accept": "application/x-ndjson"}});
  if (!r.ok) {
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    throw new Error((data && data.error) || `/api/design: HTTP ${r.status}`);
  }
  const reader = r.body.getReader(), dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const {done, value} = await reader.read();
    if (value) buf += dec.decode(value, {stream: true});
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const item = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      if (item.progress) onProgress(...item.progress);
      else if (item.error) throw new Error(item.error);
      else return item.result;
    }
    if (done) throw new Error("/api/design: the answer ended early");
  }
}

async function runDesign() {
  const s = readForm();
  showError("");
  const wi = whatIf(s);
  // the page's SLO floor (it read "the SLO's floor: 20 tok/s/user" with 50 set, newc4 #6), MoE with its active budget, and the
  // baseline as the model forms take it: a name, or the pasted config.json
  let baseline = s.baseline.trim() || undefined;
  if (s.baseline_from === "config") {
    if (!s.config.trim()) { showError("baseline: paste a config.json above, or take the baseline from the name"); return; }
    try { baseline = JSON.parse(s.config); } catch (e) { showError(`config: not valid JSON (${e.message})`); return; }
  }
  // no GPU checked: none sent, so the server's default is design's own (explore.DESIGN_GPU, the CLI's and the API's)
  const gpu = s.gpus[0] || (wi ? wi.id : undefined);
  const req = {params: num(s.params), ...(gpu ? {gpu} : {}), num_gpus: num(s.num_gpus) ?? "", max_candidates: num(s.max_candidates),
               ...(s.quality_sigmas.trim() ? {quality_sigmas: num(s.quality_sigmas)} : {}),
               ...(s.min_tps_user.trim() ? {min_tps_user: num(s.min_tps_user)} : {}),
               ...(s.d_moe ? {moe: true, ...(s.active_params.trim() ? {active_params: num(s.active_params)} : {})} : {}),
               regime: s.regime, engine: s.engine || undefined, ...(s.weight_dtype ? {weight_dtype: s.weight_dtype} : {}), ...whatIfFor(wi, gpu),
               ...(baseline !== undefined ? {baseline} : {}), ...(s.d_rank === "all" ? {rank_all: true} : {})};
  saveHash();
  $("design").replaceChildren();
  status("searching shapes (seconds to a minute)", true);
  try {
    const r = await designStream(req, (done, total) => status(`searching shapes: ${done} of ${total} priced`, true));
    $("design").replaceChildren(...designView(r, Boolean(req.rank_all)));
    if (r.side_by_side) showSideBySide(r.side_by_side, r.reference);
    status("");
  } catch (e) {
    status("");
    showError(e.message);
  }
}

// design's table as the CLI prints it (cli/design.py): "?" beside a loss whose quality the proxy does not resolve and after an
// objective not predictable here, each said beneath, and the count of resolved shapes where some are not
function designView(r, rankAll) {
  const rows = r.designs.map((d, i) => {
    const sh = d.shape;
    // the query width where it is not hidden's, as the CLI's shape label (render.design_lines.shape_label: "q1.6")
    const qw = sh.q_ratio !== undefined && Math.abs(sh.q_ratio - 1) > 1e-6 ? `q${Number(sh.q_ratio.toPrecision(3))} ` : "";
    const shape = `h${sh.hidden} L${sh.layers} H${sh.heads}/${sh.kv_heads} ${qw}` +
      (sh.experts ? `E${sh.experts} k${sh.top_k} w${sh.expert_inter}` : `ffn${sh.inter}`);
    const q = d.quality, e = d.envelope;
    return [i + 1, shape, `${fix(d.total_params / 1e9, 1)}B`, fix(d.quality_proxy, 4),
            `${q.delta_pct >= 0 ? "+" : ""}${fix(q.delta_pct, 2)}±${q.test_band_na ? "n/a" : fix(q.sigma_delta_pct, 2)}${q.flat.length ? " ~" : ""}`,
            `±${fix(q.uncertainty_pct, 2)}${q.extrapolated.length ? " x" : ""}${q.resolved === false ? " ?" : ""}`,
            e.inside ? "in" : `out: ${e.outside[0].bound}`, fix(d.objective, 1) + unpredictable((d.intervals || {})[r.objective]),
            // the capture it was priced with, as the CLI's row states it (render.design_lines.graphs_said)
            `${d.deployment.plan} B=${d.deployment.concurrency_per_instance}` +
              (d.deployment.cuda_graph_max_bs != null ? ` graphs ≤${d.deployment.cuda_graph_max_bs}` : "")];
  });
  // the CLI's own lines of what the rows are measured against (render/design_lines.py baseline_lines, sent by /api/design):
  // none beating the baseline first (a warning), the baseline's row and its MoE hint, else the reference's; a thinned grid in
  // the heading, and design 1 against the baseline beneath the table (versus_line)
  const sc = r.screened || {}, thinned = sc.priced < sc.admitted ? `, thinned to ${sc.priced.toLocaleString()} of ${sc.admitted.toLocaleString()} admitted` : "";
  const none = r.designs.length > 0 && r.beats_reference === false;
  const said = (r.baseline_lines || []).map((x, i) => el("div", x, i === 0 && none ? "warn design-baseline" : "said design-baseline"));
  // the CLI's legend sentence for ±n/a (cli/design.py na_said)
  const why = [...new Set(r.designs.map((d) => d.quality.test_band_na).filter((x) => x))].sort();
  const na = why.length ? `±n/a: no test band (${why.join("; ")}): the row differs from the reference only in active parameters, a term the test takes as exact, or on axes the proxy is flat on; model error % is its band` : "";
  const unresolved = r.designs.some((d) => d.quality.resolved === false)
    ? "?: quality not resolved (err ± wider than |loss| + ±test: the proxy cannot tell the row from the reference" + (rankAll ? ")" : "; ranked after the resolved rows)") : "";
  return [...said, el("h2", `Designs (${r.candidates.toLocaleString()} shapes${thinned}, ${r.evaluated.toLocaleString()} deployments; ${r.objective})`),
    el("div", `loss % against ${r.reference.name} (${r.reference.basis}), ± sigma_delta, the band the equal-quality test uses; model error %: the model's error of the delta (flat axes and extrapolation included), the band to read as evidence; x beside it: a term extrapolated beyond its studied range or the model sizes it was measured at; ~: the shapes differ on an axis the proxy is flat on`, "hint"),
    table("design-table", [["#", "n"], ["shape", "t"], ["params", "n"], ["quality proxy", "n"], ["loss % ±test", "n"], ["model error %", "n"], ["envelope", "t"],
                           [r.objective, "n"], ["deployment", "t"]], rows),
    ...hints([unresolved, na, unpredictableFootnote(r.designs.map((d) => d.intervals), [r.objective], "rows"), r.graphs_line, r.quality_line, r.resolved_line], "hint design-note"),
    ...hints([r.versus_line], "said design-versus")];
}

// The top designs beside the reference (explore.design_report.side_by_side), as `design --report` shows them: their
// frontiers on one plot (each shape's best deployment at the SLO ringed), the three dimensions in one table, the lint findings
const METRIC = {tok_s_per_user: "tok/s/user", output_tok_s_per_gpu: "tok/s/GPU", ttft_ms: "TTFT ms", tpot_ms: "TPOT ms"};
const rate = (x) => Math.abs(x) >= 1000 ? Math.round(x).toLocaleString() : Number(x).toFixed(Math.abs(x) >= 10 ? 1 : 2);
const sideLabel = (c) => c.role === "design" ? c.name : `${c.name} (${c.role})`;

function sideRows(sbs) {
  const cols = sbs.columns, obj = sbs.objective, rows = [];
  const add = (label, f) => rows.push([label, ...cols.map(f)]);
  const keys = [["layers", "layers"], ["hidden", "hidden size"], ["heads", "query heads"], ["kv_heads", "KV heads"], ["head_dim", "head size"],
                ["q_ratio", "query width / hidden"],
                ["inter", "FFN width"], ["experts", "experts"], ["top_k", "top-k"], ["expert_inter", "expert width"],
                ["shared_inter", "shared expert width"], ["vocab", "vocabulary"]];
  // the query width only where a column's is not 1, as design.html shows it
  for (const [k, label] of keys) if (cols.some((c) => k in c.shape && (k !== "q_ratio" || c.shape[k] !== 1))) add(label, (c) => k in c.shape ? c.shape[k].toLocaleString() : "-");
  add("total / active params", (c) => `${fix(c.total_params / 1e9, 1)}B / ${fix(c.active_params / 1e9, 1)}B`);
  const at = (c, k) => c.at_slo ? rate(c.at_slo[k]) : "none meets the SLO";
  add(`${METRIC[obj]} at the SLO, 80%`, (c) => c.at_slo ? `${rate(c.at_slo[obj])} (${rate(c.at_slo.intervals[obj].lo80)}-${rate(c.at_slo.intervals[obj].hi80)})` : at(c, obj));
  add("gain over the reference", (c) => c.gain_pct === null ? "-" : `${c.gain_pct >= 0 ? "+" : ""}${fix(c.gain_pct, 1)}%`);
  for (const k of Object.keys(METRIC)) if (k !== obj) add(`${METRIC[k]} there`, (c) => at(c, k));
  add("best deployment", (c) => c.at_slo ? `${c.at_slo.deployment.plan}, batch ${c.at_slo.deployment.concurrency_per_instance}` +
    (c.at_slo.deployment.cuda_graph_max_bs != null ? `, graphs ≤${c.at_slo.deployment.cuda_graph_max_bs}` : "") : "-");
  add("proxy loss", (c) => fix(c.quality.loss, 4));
  add("loss vs reference ± sigma_delta", (c) => {
    const q = c.quality, sg = (x) => `${x >= 0 ? "+" : ""}${fix(x, 2)}%`;
    if (c.role !== "design") return "0 (the reference)";
    // no test band (explore.design.nil_band_why): "± n/a" and why, as design.html says it, never "± 0.00%"
    return q.test_band_na ? `${sg(q.delta_pct)} ± n/a (${q.test_band_na})`
      : `${sg(q.delta_pct)} ± ${fix(q.sigma_delta_pct, 2)}% (${sg(q.delta_band_pct[0])} to ${sg(q.delta_band_pct[1])})`;
  });
  add("loss by term", (c) => c.role !== "design" ? "-" : (c.quality.terms.map((t) => `${t.term} ${t.delta_pct >= 0 ? "+" : ""}${fix(t.delta_pct, 2)}%`).join(", ") || "no term differs")
    + (c.quality.flat.length ? "; flat (the proxy cannot tell): " + c.quality.flat.map((f) => `${f.term} ${fix(f.value, 0)} vs ${fix(f.reference, 0)}`).join(", ") : ""));
  add("extrapolated terms", (c) => c.quality.extrapolated.join(", ") || "none");
  add("envelope", (c) => c.envelope.inside ? `inside (nearest ${c.envelope.closest.bound}, x${fix(c.envelope.closest.headroom, 2)})`
    : "outside: " + c.envelope.outside.map((v) => `${v.bound} x${fix(v.by, 2)}`).join("; "));
  add("lint: errors / warnings / info", (c) => ["error", "warning", "info"].map((s) => c.lint.filter((f) => f.severity === s).length).join(" / "));
  return rows;
}

function showSideBySide(sbs, ref) {
  const cols = sbs.columns, [cons, value] = Object.entries(sbs.constraint)[0];
  const pts = cols.flatMap((c) => [...c.frontier, ...(c.at_slo ? [c.at_slo] : [])]);
  const lim = (k) => { const v = pts.map((p) => p[k]).filter((x) => x > 0); return v.length ? [Math.min(...v) / 1.5, Math.max(...v) * 1.15] : [1, 10]; };
  const data = {limits: {x: lim("tok_s_per_user"), y: lim("output_tok_s_per_gpu")}, floor: value > 0 ? {axis: cons === "min_tps_user" ? "x" : "y", value,
                label: `the SLO's floor: ${value} ${cons === "min_tps_user" ? "tok/s/user" : "tok/s/GPU"}`} : null,
                series: cols.map((c) => ({label: sideLabel(c), empty: c.frontier.length ? "" : "no deployment fits", frontier: c.frontier, bound: null,
                                          evaluated: c.evaluated, cloud: {tok_s_per_user: [], output_tok_s_per_gpu: []},
                                          at: c.at_slo ? {tok_s_per_user: c.at_slo.tok_s_per_user, output_tok_s_per_gpu: c.at_slo.output_tok_s_per_gpu} : null}))};
  const plot = el("div");
  plot.id = "design-plot";
  const findings = cols.flatMap((c) => c.lint.map((f) => [sideLabel(c), `${f.rule} ${f.rule_name}`, f.severity, lintCost(f), f.measure, f.message]));
  $("design").append(el("h3", `Side by side: ${ref.name} and the top ${cols.length - 1} designs`),
    el("div", `rings: each shape's best deployment at the SLO; shaded: the 80% interval of tok/s/GPU. Equal quality: ${sbs.rule}.`, "hint"), plot,
    table("design-compare", [["", "t"], ...cols.map((c) => [sideLabel(c), "n"])], sideRows(sbs)),
    el("h3", "Lint findings, each with its predicted cost"),
    findings.length ? table("design-lint", [["shape", "t"], ["rule", "t"], ["severity", "t"], ["cost %", "n"], ["cost measured as", "t"],
                                            ["finding", "t"]], findings)
      : el("div", "no finding on any shape", "hint"));
  drawFrontier(plot, data, {tip: $("tip"), describe: (p) => [`${p.deployment.plan}, batch ${p.deployment.concurrency_per_instance}`,
    `${rate(p.tok_s_per_user)} tok/s/user, ${rate(p.output_tok_s_per_gpu)} tok/s/GPU`, `TTFT ${fix(p.ttft_ms, 0)} ms, TPOT ${fix(p.tpot_ms, 2)} ms`]});
}

// ---- the validation report (GET /api/accuracy: data/calibration/accuracy.toml)
function errCell(c) {
  if (!c) return "-";
  const f = (x) => Number(x).toFixed(1), sg = c.signed >= 0 ? `+${f(c.signed)}` : f(c.signed);
  return `${f(c.median)}% / ${f(c.p90)}% (${sg})`;
}

async function showValidation() {
  const r = await api("/api/accuracy");
  const t = r.table, box = $("validation"), parts = [];
  box.className = "";
  for (const n of r.notes) parts.push(el("div", n, "hint"));
  const serving = [];
  for (const [engine, bands] of Object.entries(t.serving || {}))
    for (const [band, c] of Object.entries(bands)) serving.push([engine, band, errCell(c.ttft_ms), errCell(c.tpot_ms), c.ttft_ms.n]);
  parts.push(el("h2", `Serving (${(t.serving_gpus || []).join(", ")}): by engine and requests in flight`),
             table("validation-serving", [["engine", "t"], ["requests", "t"], ["TTFT", "n"], ["TPOT", "n"], ["runs", "n"]], serving));
  const models = Object.entries(t.models || {}).map(([m, c]) => [m, errCell(c.ttft_ms), errCell(c.tpot_ms), c.ttft_ms.n]);
  parts.push(el("h2", "Serving: by model"),
             table("validation-models", [["model", "t"], ["TTFT", "n"], ["TPOT", "n"], ["runs", "n"]], models));
  const offline = Object.entries(t.offline || {}).map(([f, c]) => [f, errCell(c.output_tok_s_per_gpu), c.output_tok_s_per_gpu.n]);
  parts.push(el("h2", "Offline throughput (held out): by GPU family"),
             table("validation-offline", [["GPU family", "t"], ["tok/s/GPU", "n"], ["runs", "n"]], offline));
  const sp = (t.speculative || {}).output_tok_s_per_user;
  if (sp) parts.push(el("h2", "Speculative decoding (held out)"),
                     table("validation-spec", [["metric", "t"], ["error", "n"], ["runs", "n"]], [["tok/s/user", errCell(sp), sp.n]]));
  box.replaceChildren(...parts);
}

async function init() {
  try {
    const [models, gpus] = await Promise.all([api("/api/models"), api("/api/gpus")]);
    for (const m of models) {
      if (m.error) continue;
      const o = el("option", m.name);
      o.value = m.name;
      $("model").appendChild(o);
      const d = el("option");
      d.value = m.name;
      $("models").appendChild(d);
    }
    for (const g of gpus) {
      const lab = el("label"), c = el("input");
      c.type = "checkbox";
      c.value = g.id;
      c.name = "gpu";
      c.checked = g.id === "h200";
      lab.append(c, " " + g.id);
      lab.title = g.name;
      $("gpus").appendChild(lab);
    }
    $("model").value = bundledModel;
    for (const g of gpus) {
      GPUS[g.id] = g;
      const o = el("option", g.id);
      o.value = g.id;
      $("wi_base").appendChild(o);
    }
    $("wi_base").value = "h200";
    for (const g of gpus) $("p_gpu").appendChild(el("option", g.id));
    fillWhatIf("h200");
    syncEngines();
  } catch (e) { showError(e.message); return; }
  $("form").addEventListener("submit", (ev) => { ev.preventDefault(); runFrontier(null); });
  $("run-design").addEventListener("click", runDesign);
  $("run-price").addEventListener("click", runPrice);
  $("p_mode").addEventListener("change", syncMode);
  $("wi_base").addEventListener("change", () => fillWhatIf($("wi_base").value));
  $("engine").addEventListener("change", () => { enginePicked = true; });
  $("form").addEventListener("change", (ev) => { if (ev.target.name === "gpu" || ev.target.id === "wi_on" || ev.target.id === "wi_base") syncEngines(); });
  $("model").addEventListener("change", () => {
    if ($("model").value) { bundledModel = $("model").value; $("config").value = ""; }  // a bundled model chosen: the pasted config goes
    syncModel();
  });
  $("config").addEventListener("input", syncModel);
  // a result of another model or GPU is no result of this one
  $("form").addEventListener("input", (ev) => { if (IDENTITY.includes(ev.target.id) || ev.target.name === "gpu") clearResults(); });
  $("form").addEventListener("change", (ev) => { if (IDENTITY.includes(ev.target.id) || ev.target.name === "gpu") clearResults(); });
  new ResizeObserver(() => { if (last && last.handle && $("plot").clientWidth !== last.width) drawPlot(); }).observe($("results"));
  showValidation().catch((e) => { $("validation").textContent = `validation report: ${e.message}`; });
  const s = loadHash();
  if (s) await fromHash(s);
  // a first visit: the button that starts is below a laptop's fold (1280x800), and the results column was blank
  else status("Choose a model and its GPUs in the form, then Run frontier (under Workload and SLOs), or press Enter in any box");
  document.body.dataset.ready = "1";
}

async function fromHash(s) {
  writeForm(s);
  await runFrontier(s.sel);
  if (s.priced) await runPrice();
}

// a fragment typed or pasted into this tab (saveHash's replaceState fires no hashchange)
window.addEventListener("hashchange", () => { const s = loadHash(); if (s) fromHash(s); });
init();
